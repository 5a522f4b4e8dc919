"""Mirrored Gram products: ``C[a, b] = C[b, a] = s · Σ_i X[i, a] Y[i, b]`` over ``b ≥ a`` as
one matrix product and row-wise copies.

The nest (the shape a covariance or a correlation matrix is written in)::

    for a in range(a0, m):                 # or range(a0, m - 1)
        [C[a, a] = v]                      # optional, v invariant
        for b in range(a + d, m):          # d = 0 or 1
            c = 0.0                        # or C[a, b] = 0.0
            for i in range(i0, n):
                c += X[i, a] * Y[i, b]     # or C[a, b] += …, or c = c + …
            [c = c / q]                    # optional: / q, * q, /= q, *= q (q invariant;
                                           # float(n - 1), math.sqrt(n): pure calls; also
                                           # C[a, b] /= q on an array accumulator)
            C[a, b] = c
            C[b, a] = c                    # or C[b, a] = C[a, b]

becomes ``G = X[i0:n, a0:m].T @ Y[i0:n, a0:m]`` (BLAS), then per row ``a`` the upper part
``r = G[a - a0, a + d - a0:]`` (scaled as written) copied to ``C[a, a + d:m]`` and
``C[a + d:m, a]``: every element the loops write gets the value they give it (up to the
summation order of the product, which the search's verification checks like every block's),
in the same order per row, and the mirror is exact (both halves are copies of one row). What
is refused: ``X`` or ``Y`` written in the nest or possibly sharing storage with ``C``, ``C``
read other than as the accumulator, a scale that reads a loop variable or an array, a live
loop variable or temporary, any other statement.

>>> import ast
>>> src = '''
... for a in range(X.shape[1]):
...     for b in range(a, X.shape[1]):
...         c = 0.0
...         for i in range(X.shape[0]):
...             c += X[i, a] * X[i, b]
...         c = c / (n - 1.0)
...         cov[a, b] = c
...         cov[b, a] = c
... '''
>>> print(match_gram(ast.parse(src).body[0])[1])
_hg = X.T @ X
for a in range(0, X.shape[1]):
    _hr = _hg[a - 0, a + 0 - 0:] / (n - 1.0)
    cov[a, a + 0:X.shape[1]] = _hr
    cov[a + 0:X.shape[1], a] = _hr
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

__all__ = ["match_gram"]

_EXTENT = re.compile(r"^(\w+\.shape\[\d+\]|len\(\w+\)|\d+)$")
_SIMPLE = re.compile(r"^[\w.]+(\[\d+\])?$")


class _No(Exception):
    pass


def _range(node: ast.AST) -> tuple[str, str]:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "range" and not node.keywords and 1 <= len(node.args) <= 2):
        raise _No("range")
    if len(node.args) == 1:
        return "0", ast.unparse(node.args[0])
    return ast.unparse(node.args[0]), ast.unparse(node.args[1])


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _sub(node: ast.AST, name: str | None = None) -> tuple[str, tuple[str, ...]] | None:
    """``(array, (v1, v2))`` for ``A[v1, v2]`` with name subscripts."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2
            and all(isinstance(e, ast.Name) for e in node.slice.elts)):
        return None
    if name is not None and node.value.id != name:
        return None
    return node.value.id, tuple(e.id for e in node.slice.elts)  # type: ignore[attr-defined]


#: calls a scale may make: pure numeric conversions and functions of numbers
_PURE_CALLS = frozenset({"float", "int", "abs", "min", "max"})
_PURE_MODULES = frozenset({"math", "np", "numpy"})


def _plain_value(node: ast.AST) -> bool:
    """Whether ``node`` reads no array element and calls only pure numeric functions
    (``float(n - 1)``, ``math.sqrt(n)``): its value is the same wherever the nest computes
    it."""
    for n_ in ast.walk(node):
        if isinstance(n_, ast.Subscript):
            return False
        if isinstance(n_, ast.Call):
            f = n_.func
            pure = (isinstance(f, ast.Name) and f.id in _PURE_CALLS) or (
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id in _PURE_MODULES)
            if not pure or n_.keywords:
                return False
    return True


def _nonneg_start(start: str) -> bool:
    return start.isdigit() or bool(_EXTENT.match(start))


def _len(stop: str) -> str:
    return stop if _EXTENT.match(stop) else f"max({stop}, 0)"


def _whole(arr: str, i0: str, n: str, a0: str, stop: str) -> list[str] | None:
    """Run-time conditions under which ``arr[i0:n, a0:stop]`` is all of ``arr`` (``[]``: as
    written; None: never, a literal non-zero start)."""
    conds = []
    for d, (start, end) in enumerate(((i0, n), (a0, stop))):
        if (start, end) == ("0", f"{arr}.shape[{d}]"):
            continue
        if start != "0":
            if start.isdigit():
                return None
            conds.append(f"{start} == 0" if start.isidentifier() else f"({start}) == 0")
        if not _SIMPLE.match(end):
            end = f"({end})"
        conds.append(f"{end} == {arr}.shape[{d}]")
    return conds


def match_gram(root: ast.For, may_alias: Callable[[str, str], bool] | None = None,
               live: Callable[[str], bool] | None = None,
               numba: bool = False) -> tuple[str, str] | None:
    """``("gram (mirrored)", replacement source)`` for a mirrored Gram nest, or None.

    Parameters
    ----------
    root : ast.For
        The loop over ``a`` (see the module docstring for the shape).
    may_alias : callable, optional
        ``may_alias(x, y)``: whether two names may share storage.
    live : callable, optional
        ``live(name)``: whether a name's value after the nest may be read.
    numba : bool, default False
        The numba form: operands whole at run time are not copied (:mod:`.nocopy`); the
        product is bound in both branches of the check.
    """
    try:
        return "gram (mirrored)", _match(root, may_alias, live, numba)
    except _No:
        return None


def _match(root: ast.For, may_alias: Callable[[str, str], bool] | None,
           live: Callable[[str], bool] | None, numba: bool = False) -> str:
    if not isinstance(root.target, ast.Name) or root.orelse:
        raise _No("target")
    a = root.target.id
    a0, m = _range(root.iter)
    if not _nonneg_start(a0) or a in _names(root.iter):
        raise _No("a bounds")
    body = list(root.body)
    diag = None
    if len(body) == 2:
        diag = body.pop(0)
    if len(body) != 1 or not isinstance(body[0], ast.For):
        raise _No("a body")
    bl = body[0]
    if not isinstance(bl.target, ast.Name) or bl.orelse:
        raise _No("b target")
    b = bl.target.id
    bstart, bstop = _range(bl.iter)
    d = {a: "0", f"{a} + 1": "1"}.get(bstart)
    if d is None or m not in (bstop, f"{bstop} - 1"):
        raise _No("b bounds")  # a up to m or m - 1, b up to m: columns a0 … m - 1
    st = list(bl.body)
    if len(st) < 3:
        raise _No("b body")
    init, il = st[0], st[1]
    if not (isinstance(init, ast.Assign) and len(init.targets) == 1
            and isinstance(init.value, ast.Constant) and init.value.value == 0.0
            and type(init.value.value) is float):
        raise _No("init")
    acc = init.targets[0]
    if isinstance(acc, ast.Name):
        acc_text = acc.id
    elif _sub(acc) is not None and _sub(acc)[1] == (a, b):  # type: ignore[index]
        acc_text = ast.unparse(acc)
    else:
        raise _No("accumulator")
    if not isinstance(il, ast.For) or il.orelse or len(il.body) != 1 \
            or not isinstance(il.target, ast.Name):
        raise _No("i loop")
    i = il.target.id
    i0, n = _range(il.iter)
    if not _nonneg_start(i0) or {a, b, i} & _names(il.iter) or {b, i} & _names(bl.iter):
        raise _No("i bounds")
    upd = il.body[0]
    if isinstance(upd, ast.AugAssign) and isinstance(upd.op, ast.Add):
        tgt, prod = upd.target, upd.value
    elif isinstance(upd, ast.Assign) and len(upd.targets) == 1 \
            and isinstance(upd.value, ast.BinOp) and isinstance(upd.value.op, ast.Add) \
            and ast.unparse(upd.value.left) == ast.unparse(upd.targets[0]):
        tgt, prod = upd.targets[0], upd.value.right
    else:
        raise _No("update")
    if ast.unparse(tgt) != acc_text or not (isinstance(prod, ast.BinOp)
                                            and isinstance(prod.op, ast.Mult)):
        raise _No("product")
    x, y = _sub(prod.left), _sub(prod.right)
    if x is None or y is None or x[1] != (i, a) or y[1] != (i, b):
        raise _No("operands")
    rest = st[2:]
    scale = ""
    if len(rest) == 3 or (isinstance(acc, ast.Subscript) and len(rest) == 2):
        s = rest.pop(0)  # c = c / q, c = c * q, c /= q, c *= q (c a name or C[a, b])
        if isinstance(s, ast.AugAssign) and ast.unparse(s.target) == acc_text \
                and isinstance(s.op, (ast.Div, ast.Mult)):
            op, q = s.op, s.value
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and ast.unparse(s.targets[0]) == acc_text and isinstance(s.value, ast.BinOp) \
                and isinstance(s.value.op, (ast.Div, ast.Mult)) \
                and ast.unparse(s.value.left) == acc_text:
            op, q = s.value.op, s.value.right
        else:
            raise _No("scale")
        if not _plain_value(q) or _names(q) & {a, b, i, acc_text}:
            raise _No("scale reads")
        scale = f" {'/' if isinstance(op, ast.Div) else '*'} ({ast.unparse(q)})"
    if isinstance(acc, ast.Subscript):  # C[a, b] accumulated, then C[b, a] = C[a, b]
        c_name = acc.value.id  # type: ignore[attr-defined]
        if len(rest) != 1 or not (isinstance(rest[0], ast.Assign) and len(rest[0].targets) == 1
                                  and _sub(rest[0].targets[0], c_name) is not None
                                  and _sub(rest[0].targets[0])[1] == (b, a)  # type: ignore[index]
                                  and ast.unparse(rest[0].value) == acc_text):
            raise _No("mirror")
    else:  # C[a, b] = c and C[b, a] = c, either order
        if len(rest) != 2:
            raise _No("writes")
        got = []
        for w in rest:
            tw = _sub(w.targets[0]) if isinstance(w, ast.Assign) and len(w.targets) == 1 \
                else None
            if tw is None or ast.unparse(w.value) != acc_text:  # type: ignore[attr-defined]
                raise _No("write")
            got.append(tw)
        if got[0][0] != got[1][0] or {got[0][1], got[1][1]} != {(a, b), (b, a)}:
            raise _No("write targets")
        c_name = got[0][0]
    if diag is not None:
        if not (isinstance(diag, ast.Assign) and len(diag.targets) == 1
                and _sub(diag.targets[0], c_name) is not None
                and _sub(diag.targets[0])[1] == (a, a)):  # type: ignore[index]
            raise _No("diagonal")
        if not _plain_value(diag.value) or _names(diag.value) & {a, b, i}:
            raise _No("diagonal value")
    arrays = {x[0], y[0]}
    if c_name in arrays or (may_alias is not None and any(may_alias(c_name, v) for v in arrays)):
        raise _No("aliasing")
    scalars = {a, b, i} | ({acc_text} if isinstance(acc, ast.Name) else set())
    bound_names = _names(root.iter) | _names(bl.iter) | _names(il.iter)
    if bound_names & ({c_name} | scalars - {a}) or (scale and c_name in scale):
        raise _No("bounds")
    if live is not None and any(live(v) for v in scalars):
        raise _No("live")
    def operand(arr: str) -> str:
        rows = "" if (i0, n) == ("0", f"{arr}.shape[0]") else f"{'' if i0 == '0' else i0}:{_len(n)}"
        cols = "" if (a0, bstop) == ("0", f"{arr}.shape[1]") \
            else f"{'' if a0 == '0' else a0}:{_len(bstop)}"
        if not rows and not cols:
            return arr
        return f"np.ascontiguousarray({arr}[{rows or ':'}, {cols or ':'}])"

    xs, ys = operand(x[0]), operand(y[0])
    pre = []
    if x[0] == y[0] and xs != x[0]:
        pre, xs, ys = [f"_hx = {xs}"], "_hx", "_hx"
    lines = [*pre, f"_hg = {xs}.T @ {ys}"]
    checks = {arr: _whole(arr, i0, n, a0, bstop) for arr in dict.fromkeys((x[0], y[0]))}
    conds = [c for cs in checks.values() for c in cs or ()]
    if numba and conds:  # whole at run time: the arrays themselves, no copies (.nocopy)
        bare = [arr if checks[arr] else text for arr, text in ((x[0], xs), (y[0], ys))]
        lines = [f"if {' and '.join(dict.fromkeys(conds))}:",
                 f"    _hg = {bare[0]}.T @ {bare[1]}", "else:",
                 *("    " + ln for ln in lines)]
    lines.append(f"for {a} in range({a0}, {m}):")
    if diag is not None:
        lines.append("    " + ast.unparse(diag))
    lines += [f"    _hr = _hg[{a} - {a0}, {a} + {d} - {a0}:]{scale}",
              f"    {c_name}[{a}, {a} + {d}:{bstop}] = _hr",
              f"    {c_name}[{a} + {d}:{bstop}, {a}] = _hr"]
    return "\n".join(lines)
