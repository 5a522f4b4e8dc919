"""Argmin / argmax reductions (the k-means assignment) as exact array code.

The nest::

    for i in range(n):                      # rows
        best = np.inf                       # any statements (not using c, f, d, t)
        for c in range(k):                  # candidates
            d = 0.0
            for f in range(m):
                t = X[i, f] - C[c, f]       # scalar temporaries, then one sum
                d += t * t
            if d < best:                    # strict: the first minimum is kept
                best = d
                lab[i] = c                  # or a scalar name
        out[i] = math.sqrt(best)            # any statements (not using c, f, d, t)

becomes chunks of rows: the distances of a chunk to every candidate as a ``(rows, k)`` array,
accumulated over ``f`` in the loop's order (``0.0 + e_0 + e_1 + …`` per element: the same
floating-point operations, so bit-identical distances — never the expansion
``‖x‖² − 2x·c + ‖c‖²``, which rounds differently and can change the index on near-ties), then
per row the loop's statements around one ``np.argmin``. NaN behaves as in the loop: a NaN
distance never compares smaller, so NaN is replaced by ``inf`` before ``np.argmin`` (which would
return the NaN's index), and the row's best is updated only when the minimum is strictly
smaller than its value before the candidates (as the loop's first comparison does). ``>``
gives ``np.argmax`` with ``-inf``. Only arithmetic, ``abs`` and ``sqrt`` (correctly rounded in
NumPy and libm alike) are vectorized; anything else, a non-strict comparison, an ``else``, an
array read by the distance that the nest writes, or a bound that is not invariant: no match.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from .argmin_par import parallel_rows

__all__ = ["match_argmin", "CHUNK"]

#: rows per chunk: a (CHUNK, k) float64 block of distances stays in L2 for small k
CHUNK = 256
_FUNCS = {"math.sqrt": "np.sqrt", "np.sqrt": "np.sqrt", "numpy.sqrt": "np.sqrt",
          "abs": "np.abs", "np.abs": "np.abs", "math.fabs": "np.abs"}


class _No(Exception):
    pass


def _range(node: ast.For) -> tuple[str, str, str]:
    """(variable, start, stop) of ``for v in range([a,] b)`` with a non-negative start."""
    it = node.iter
    if not (isinstance(node.target, ast.Name) and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name) and it.func.id == "range" and not it.keywords
            and 1 <= len(it.args) <= 2 and not node.orelse):
        raise _No("not a range loop of step 1")
    start = it.args[0] if len(it.args) == 2 else ast.Constant(0)
    if not (isinstance(start, ast.Constant) and type(start.value) is int and start.value >= 0):
        raise _No("start")
    return node.target.id, ast.unparse(start), ast.unparse(it.args[-1])


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Vec(ast.NodeTransformer):
    """A scalar expression of the (i, c) element as a (rows, candidates) array expression."""

    def __init__(self, i: str, c: str, f: str, temps: set[str], rows: str, cands: str) -> None:
        self.i, self.c, self.f, self.temps = i, c, f, temps
        self.rows, self.cands = rows, cands
        self.reads: list[tuple[str, int, str]] = []  # (array, position, "i" or "c")

    def generic_visit(self, node: ast.AST) -> ast.AST:
        ok = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.expr_context, ast.Add, ast.Sub,
              ast.Mult, ast.Div, ast.USub, ast.UAdd)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            if not (isinstance(node.right, ast.Constant) and node.right.value == 2):
                raise _No("power")
            base = self.visit(node.left)
            return ast.BinOp(base, ast.Mult(), copy.deepcopy(base))  # x ** 2 is x * x
        if not isinstance(node, ok):
            raise _No(type(node).__name__)
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in (self.i, self.c, self.f):
            raise _No("a loop variable used as a value")
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = ast.unparse(node.func)
        if name not in _FUNCS or len(node.args) != 1 or node.keywords:
            raise _No(f"call {name}")
        return ast.Call(ast.parse(_FUNCS[name], mode="eval").body, [self.visit(node.args[0])],
                        [])

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(node.value, ast.Name) or not all(isinstance(p, ast.Name)
                                                           for p in parts):
            raise _No("subscript")
        ids = [p.id for p in parts]  # type: ignore[union-attr]
        if ids.count(self.i) > 1 or ids.count(self.c) > 1:
            raise _No("a repeated subscript")
        out, axes = [], []
        for d, v in enumerate(ids):
            if v in (self.i, self.c):
                out.append(self.rows if v == self.i else self.cands)
                axes.append(v)
                self.reads.append((node.value.id, d, v))
            else:
                out.append(v)
        text = f"{node.value.id}[{', '.join(out)}]"
        if axes == [self.c, self.i]:
            text += ".T"
        elif axes == [self.i]:
            text += "[:, None]"
        elif axes == [self.c]:
            text += "[None, :]"
        return ast.parse(text, mode="eval").body


def match_argmin(root: ast.For, may_alias: Callable[[str, str], bool] | None = None,
                 live: Callable[[str], bool] | None = None,
                 numba: bool = False) -> tuple[str, str] | None:
    """(``"argmin"`` or ``"argmax"``, replacement source) for the nest at ``root``, or None.

    Parameters
    ----------
    root : ast.For
        The loop over rows.
    may_alias : callable, optional
        ``may_alias(x, y)``: whether two names may share storage.
    live : callable, optional
        ``live(name)``: whether a name's value after the nest may be read.
    numba : bool, default False
        The numba form (:func:`.argmin_par.parallel_rows`): the rows in a parallel helper, each
        row the loop as written; None when the rows are not independent.
    """
    try:
        kind, src, guards = _match(copy.deepcopy(root), may_alias, live)  # edits in place
    except _No:
        return None
    if not numba:
        return kind, src
    par = parallel_rows(root, guards, may_alias, live)
    return None if par is None else (kind, par)


def _match(root: ast.For, may_alias: Callable[[str, str], bool] | None,
           live: Callable[[str], bool] | None) -> tuple[str, str, list[str]]:
    i, i0, i1 = _range(root)
    loops = [k for k, s in enumerate(root.body) if isinstance(s, ast.For)]
    if len(loops) != 1:
        raise _No("one candidate loop")
    cl: ast.For = root.body[loops[0]]  # type: ignore[assignment]
    pre, post = root.body[:loops[0]], root.body[loops[0] + 1:]
    c, c0, c1 = _range(cl)
    if len(cl.body) != 3 or not isinstance(cl.body[0], ast.Assign) \
            or not isinstance(cl.body[1], ast.For) or not isinstance(cl.body[2], ast.If):
        raise _No("candidate body")
    init, fl, test = cl.body
    if len(init.targets) != 1 or not isinstance(init.targets[0], ast.Name) \
            or not isinstance(init.value, ast.Constant) or type(init.value.value) is not float:
        raise _No("distance init")
    d = init.targets[0].id
    f, f0, f1 = _range(fl)
    *assigns, acc = fl.body
    if not (isinstance(acc, ast.AugAssign) and isinstance(acc.op, ast.Add)
            and isinstance(acc.target, ast.Name) and acc.target.id == d):
        raise _No("distance sum")
    temps: list[str] = []
    for a in assigns:
        if not (isinstance(a, ast.Assign) and len(a.targets) == 1
                and isinstance(a.targets[0], ast.Name)):
            raise _No("temporary")
        temps.append(a.targets[0].id)
    private = {i, c, f, d, *temps}
    if len(private) != 4 + len(temps):
        raise _No("names")
    # the comparison: d < best / best > d (argmin), d > best / best < d (argmax)
    cmp = test.test
    if test.orelse or not isinstance(cmp, ast.Compare) or len(cmp.ops) != 1:
        raise _No("comparison")
    left, op, right = cmp.left, cmp.ops[0], cmp.comparators[0]
    if isinstance(right, ast.Name) and right.id == d:
        left, right = right, left
        op = ast.Gt() if isinstance(op, ast.Lt) else ast.Lt() if isinstance(op, ast.Gt) else op
    if not (isinstance(left, ast.Name) and left.id == d and isinstance(right, ast.Name)
            and isinstance(op, (ast.Lt, ast.Gt))):
        raise _No("comparison")
    best, kind = right.id, ("argmin" if isinstance(op, ast.Lt) else "argmax")
    if len(test.body) != 2 or not all(isinstance(s, ast.Assign) and len(s.targets) == 1
                                      for s in test.body):
        raise _No("update")
    upd = {ast.unparse(s.value): s.targets[0] for s in test.body}  # type: ignore[attr-defined]
    if set(upd) != {d, c} or not (isinstance(upd[d], ast.Name) and upd[d].id == best):
        raise _No("update")
    idx_target = upd[c]
    if isinstance(idx_target, ast.Subscript):
        parts = idx_target.slice.elts if isinstance(idx_target.slice, ast.Tuple) \
            else [idx_target.slice]
        if not isinstance(idx_target.value, ast.Name) or _names(idx_target.slice) - {i} \
                or not all(isinstance(p, ast.Name) for p in parts):
            raise _No("index target")
    elif not isinstance(idx_target, ast.Name) or idx_target.id in private | {best}:
        raise _No("index target")
    # statements around the candidates: no private name; the bounds: invariant
    for s in (*pre, *post):
        if _names(s) & (private - {i}) or any(isinstance(n, (ast.For, ast.While, ast.If))
                                             for n in ast.walk(s)):
            raise _No("a statement around the candidates uses the loop's names")
    stored = {n.id for n in ast.walk(root) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    for b in (i1, c1, f1):
        if _names(ast.parse(b)) & stored:
            raise _No("bound written in the nest")
    if live is not None and any(live(v) for v in private):
        raise _No("a loop name is read after the nest")
    # the distance as (rows, candidates) arrays
    rows, cands = "_hbi0:_hbi1", f"{c0}:{c1}"
    vec = _Vec(i, c, f, set(temps), rows, cands)
    lines = []
    for k, a in enumerate(assigns):
        if _names(a.value) & set(temps[k:]):
            raise _No("a temporary read before it is set")
        lines.append(f"        _hb_{a.targets[0].id} = "  # type: ignore[attr-defined]
                     f"{ast.unparse(_Rename(temps).visit(vec.visit(a.value)))}")
    lines.append(f"        _hbd += {ast.unparse(_Rename(temps).visit(vec.visit(acc.value)))}")
    read = {a for a, _, _ in vec.reads}
    if not vec.reads or best in private:
        raise _No("no array read")
    used = set().union(*(_names(a.value) for a in assigns), _names(acc.value))
    written = {n.value.id for n in ast.walk(root) if isinstance(n, ast.Subscript)
               and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)}
    if (used - private - read) & stored or read & written or read & stored:
        raise _No("the distance reads what the nest writes")
    if callable(may_alias) and any(may_alias(w, r) for w in written for r in read):
        raise _No("aliasing")
    # loop bounds the loop would have checked element by element
    checks = sorted({(a, p, "_hbi1" if v == i else c1) for a, p, v in vec.reads})
    guard = [f"if _hbi1 > _hbi0 and {c1} > {c0} and {f1} > {f0} and {stop} > {a}.shape[{p}]:"
             f"\n        raise IndexError('{a}: index out of range in the {kind} nest')"
             for a, p, stop in checks if stop != f"{a}.shape[{p}]"]
    ncand = f"max({c1}, 0)" if c0 == "0" else f"max({c1} - {c0}, 0)"
    nan, red = ("np.inf", "np.argmin") if kind == "argmin" else ("-np.inf", "np.argmax")
    rel = "<" if kind == "argmin" else ">"
    body = "\n".join("        " + ast.unparse(s) for s in pre)
    after = "\n".join("        " + ast.unparse(s) for s in post)
    src = [f"for _hbi0 in range({i0}, {i1}, {CHUNK}):",
           f"    _hbi1 = min(_hbi0 + {CHUNK}, {i1})",
           *(f"    {g}" for g in guard),
           f"    _hbd = np.full((_hbi1 - _hbi0, {ncand}), {init.value.value!r})",
           f"    for {f} in range({f0}, {f1}):",
           *lines,
           f"    _hbm = np.where(np.isnan(_hbd), {nan}, _hbd)  # NaN never compares {rel}",
           f"    for {i} in range(_hbi0, _hbi1):",
           *([body] if body else []),
           "        if _hbm.shape[1] > 0:",
           f"            _hbj = {red}(_hbm[{i} - _hbi0])",
           f"            if _hbm[{i} - _hbi0, _hbj] {rel} {best}:",
           f"                {best} = _hbd[{i} - _hbi0, _hbj]",
           f"                {ast.unparse(idx_target)} = {c0} + _hbj",
           *([after] if after else [])]
    whole = [g.replace("_hbi0", f"({i0})").replace("_hbi1", f"({i1})") for g in guard]
    return kind, "\n".join(src), whole


class _Rename(ast.NodeTransformer):
    def __init__(self, temps: list[str]) -> None:
        self.temps = set(temps)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name(f"_hb_{node.id}", node.ctx) if node.id in self.temps else node
