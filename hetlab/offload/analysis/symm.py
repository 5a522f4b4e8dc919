"""A symmetric product written row by row with a scattered update (the reference ``symm``):
``C = β C + α S B``, S symmetric and stored in A's lower triangle, as one matrix product.

The nest::

    for i in range(m):                        # or range(0, m)
        for j in range(n):                    # or range(0, n)
            t = 0.0
            for k in range(i):                # or range(0, i)
                C[k, j] += α * B[i, j] * A[i, k]     # or C[k, j] = C[k, j] + …
                t += B[k, j] * A[i, k]               # or t = t + …  (either order)
            C[i, j] = β * C[i, j] + α * B[i, j] * A[i, i] + α * t

(factors of each product in any order, terms of the sum in any order, α and β any invariant
value — a name, a number, a pure call of them — and α the same in the three places; ``α *``
may be absent from all three). Row ``i`` first sets ``C[i, j]`` from its own old value, the
diagonal and the rows above (``t``), then adds its contribution to every row above it; no
row's old value is read after another row has added to it, so the whole nest is

    C[:m, :n] = β C[:m, :n] + α (S @ B[:m, :n]),  S[i, k] = S[k, i] = A[i, k] (k <= i < m)

up to the summation order of the product (which the search's verification checks, like every
block's). ``S`` is built in one pass over exactly the elements of A the loops read; the product
is BLAS; the epilogue is the loops' own final statement with the product in place of the sums.
Refused: C sharing storage with A or B (or being one of them), a loop variable or ``t`` read
after the nest, a bound that reads a name the nest writes, any other statement or shape.

>>> import ast
>>> src = '''
... for i in range(m):
...     for j in range(n):
...         temp2 = 0.0
...         for k in range(i):
...             C[k, j] += alpha * B[i, j] * A[i, k]
...             temp2 += B[k, j] * A[i, k]
...         C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2
... '''
>>> print(match_symm(ast.parse(src).body[0])[1])
_hsm = max(m, 0)
_hs = np.empty((_hsm, _hsm), dtype=A.dtype)
for _hi in range(_hsm):
    for _hk in range(_hi + 1):
        _hs[_hi, _hk] = A[_hi, _hk]
        _hs[_hk, _hi] = A[_hi, _hk]
_hp = _hs @ np.ascontiguousarray(B[:_hsm, :max(n, 0)])
for i in range(_hsm):
    for j in range(max(n, 0)):
        C[i, j] = beta * C[i, j] + alpha * _hp[i, j]
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .gram import _len, _names, _No, _plain_value, _range

__all__ = ["match_symm"]


def _factors(node: ast.expr) -> list[ast.expr]:
    """The factors of a product ``a * b * c`` (any nesting of ``*``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _terms(node: ast.expr) -> list[ast.expr]:
    """The terms of a sum ``a + b + c`` (any nesting of ``+``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _terms(node.left) + _terms(node.right)
    return [node]


def _ref(node: ast.expr) -> tuple[str, tuple[str, str]] | None:
    """``(array, (u, v))`` for ``X[u, v]`` with plain-name subscripts."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
            and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2 \
            and all(isinstance(e, ast.Name) for e in node.slice.elts):
        u, v = node.slice.elts
        return node.value.id, (u.id, v.id)  # type: ignore[attr-defined]
    return None


def _split(product: ast.expr, refs: int, local: set[str]) -> tuple[list, str]:
    """The product's ``refs`` array references (``_ref`` forms, or the bare name of a local
    scalar as ``(name, ())``) and the text of its invariant coefficient ("" when none)."""
    found, coef = [], []
    for f in _factors(product):
        r = _ref(f)
        if r is not None:
            found.append(r)
        elif isinstance(f, ast.Name) and f.id in local:
            found.append((f.id, ()))
        elif _plain_value(f) and not _names(f) & local:
            coef.append(ast.unparse(f))
        else:
            raise _No("factor")
    if len(found) != refs:
        raise _No("references")
    return found, " * ".join(sorted(coef))


def _value_names(node: ast.AST) -> set[str]:
    """Names whose values ``node`` reads: ``C.shape[0]`` reads C's shape, which writing C's
    elements does not change."""
    shapes = {id(n.value) for n in ast.walk(node)
              if isinstance(n, ast.Attribute) and n.attr in ("shape", "ndim", "size")}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in shapes}


def _update(stmt: ast.stmt) -> tuple[ast.expr, ast.expr]:
    """``(target, added)`` of ``x += e`` or ``x = x + e``."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
        return stmt.target, stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.value, ast.BinOp) and isinstance(stmt.value.op, ast.Add) \
            and ast.unparse(stmt.value.left) == ast.unparse(stmt.targets[0]):
        return stmt.targets[0], stmt.value.right
    raise _No("update")


def match_symm(root: ast.For, may_alias: Callable[[str, str], bool] | None = None,
               live: Callable[[str], bool] | None = None,
               numba: bool = False) -> tuple[str, str] | None:
    """``("symm (scattered rows)", replacement source)`` for the nest above, or None.

    ``may_alias(x, y)``: whether two names may share storage; ``live(name)``: whether a name's
    value after the nest may be read. ``numba`` is accepted for the matchers' common call (the
    replacement is the same for NumPy and numba)."""
    del numba
    try:
        return "symm (scattered rows)", _match(root, may_alias, live)
    except _No:
        return None


def _loop(node: ast.stmt, n_body: int) -> tuple[str, str, str]:
    """``(variable, start, stop)`` of a plain ``for v in range(…)`` with ``n_body``
    statements."""
    if not (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and not node.orelse
            and len(node.body) == n_body):
        raise _No("loop")
    start, stop = _range(node.iter)
    if start != "0":
        raise _No("start")
    return node.target.id, start, stop


def _match(root: ast.For, may_alias: Callable[[str, str], bool] | None,
           live: Callable[[str], bool] | None) -> str:
    i, _, m = _loop(root, 1)
    jl = root.body[0]
    j, _, n = _loop(jl, 3)
    init, kl, final = jl.body  # type: ignore[attr-defined]
    if not (isinstance(init, ast.Assign) and len(init.targets) == 1
            and isinstance(init.targets[0], ast.Name) and isinstance(init.value, ast.Constant)
            and init.value.value == 0 and not isinstance(init.value.value, bool)):
        raise _No("init")
    t = init.targets[0].id
    k, _, kstop = _loop(kl, 2)
    if kstop != i:
        raise _No("k bound")
    local = {i, j, k, t}
    # the scattered update and the row sum, in either order
    scatter = total = None
    for s in kl.body:  # type: ignore[attr-defined]
        target, added = _update(s)
        if isinstance(target, ast.Name) and target.id == t:
            total = added
        elif _ref(target) is not None:
            scatter = (_ref(target), added)
    if scatter is None or total is None:
        raise _No("k body")
    sum_refs, sum_coef = _split(total, 2, local)
    if sum_coef:
        raise _No("coefficient of the row sum")
    by_idx = {idx: name for name, idx in sum_refs}
    if set(by_idx) != {(k, j), (i, k)}:
        raise _No("row sum operands")
    b_name, a_name = by_idx[(k, j)], by_idx[(i, k)]
    (c_name, c_idx), added = scatter
    if c_idx != (k, j):
        raise _No("scatter target")
    refs, alpha = _split(added, 2, local)
    if sorted(refs) != sorted([(b_name, (i, j)), (a_name, (i, k))]):
        raise _No("scatter operands")
    # C[i, j] = β C[i, j] + α B[i, j] A[i, i] + α t
    if not (isinstance(final, ast.Assign) and len(final.targets) == 1
            and _ref(final.targets[0]) == (c_name, (i, j))):
        raise _No("final target")
    beta_term = diag = tail = None
    beta = ""
    for term in _terms(final.value):
        names = {r for f in _factors(term) if (r := _ref(f)) is not None}
        if (c_name, (i, j)) in names:
            got, beta = _split(term, 1, local)
            if beta_term is not None or got != [(c_name, (i, j))]:
                raise _No("beta term")
            beta_term = term
        elif any(isinstance(f, ast.Name) and f.id == t for f in _factors(term)):
            got, coef = _split(term, 1, local)
            if tail is not None or got != [(t, ())] or coef != alpha:
                raise _No("row-sum term")
            tail = term
        else:
            got, coef = _split(term, 2, local)
            if diag is not None or coef != alpha \
                    or sorted(got) != sorted([(b_name, (i, j)), (a_name, (i, i))]):
                raise _No("diagonal term")
            diag = term
    if beta_term is None or diag is None or tail is None:
        raise _No("final terms")
    if len({c_name, a_name, b_name}) != 3 or (may_alias is not None and any(
            may_alias(c_name, x) for x in (a_name, b_name))):
        raise _No("aliasing")
    written = {c_name, t, i, j, k}
    if (_value_names(root.iter) | _value_names(jl.iter)) & written:
        raise _No("bounds")
    coefs = _names(ast.parse(f"{alpha or 0}, {beta or 0}", mode="eval"))
    if coefs & (written | {a_name, b_name}):
        raise _No("coefficients")
    if live is not None and any(live(v) for v in (i, j, k, t)):
        raise _No("live")
    rows, cols = _len(m), _len(n)
    scaled = f"{alpha} * _hp[{i}, {j}]" if alpha else f"_hp[{i}, {j}]"
    return "\n".join([
        f"_hsm = {rows}",
        f"_hs = np.empty((_hsm, _hsm), dtype={a_name}.dtype)",
        "for _hi in range(_hsm):",
        "    for _hk in range(_hi + 1):",
        f"        _hs[_hi, _hk] = {a_name}[_hi, _hk]",
        f"        _hs[_hk, _hi] = {a_name}[_hi, _hk]",
        f"_hp = _hs @ np.ascontiguousarray({b_name}[:_hsm, :{cols}])",
        f"for {i} in range(_hsm):",
        f"    for {j} in range({cols}):",
        f"        {c_name}[{i}, {j}] = {ast.unparse(beta_term)} + {scaled}",
    ])
