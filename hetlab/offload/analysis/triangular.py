"""Triangular nests (inner bounds ``range(i + 1)``, ``range(i)``, ``range(i, n)``,
``range(i + 1, n)``) as exact row-wise library calls.

A nest whose root loop ``for i in range(a, b)`` has invariant bounds, and whose inner loops
have bounds that are invariant or ``i``/``i + c`` (``c`` a non-negative int; never another
loop variable, never a step other than 1), keeps its loop over ``i`` in its order and runs
each iteration's body as library calls on the row's slices: ``C[i, j] += A[i, k] * A[j, k]``
for ``j <= i`` becomes ``C[i, :i + 1] += A[:i + 1, :] @ A[i, :]`` inside ``for i``. Every
statement of the row is then a statement of a rectangular nest with ``i`` held fixed
(:class:`~.contraction.Ref` ``fixed``), checked by :func:`~.legality.legal` and emitted by
:mod:`.catalogue`. Because the row loop keeps its order, the only question is whether one
row's statements may run one after the other over their whole (triangular) index sets: the
untouched triangle is never read or written, and a statement reading its own output array
(``B[i, j] += A[k, i] * B[k, j]`` for ``k > i``, in place) is accepted only where the rows it
reads are provably not the row it writes — a read at row ``k`` with ``k``'s range starting at
``i + 1`` or more, or stopping at ``i`` or less. Reads of rows written by earlier iterations
see their new values, as in the loop.

The code emitted is not one library call per row: :func:`.panels.panel_form` hoists the row's
products into one GEMM per panel of rows (the row's own remainder and its elementwise
statements stay in the row loop); a nest whose products cannot be hoisted keeps the per-row
form (``for i`` around the row's calls).

>>> import ast
>>> src = '''
... for i in range(C.shape[0]):
...     for j in range(i + 1):
...         C[i, j] *= beta
...         for k in range(A.shape[1]):
...             C[i, j] += alpha * A[i, k] * A[j, k]
... '''
>>> print(match_triangular(ast.parse(src).body[0])[1])  # doctest: +NORMALIZE_WHITESPACE
for _hbr0 in range(0, C.shape[0], 64):
    _hbr1 = min(_hbr0 + 64, C.shape[0])
    _hbq1 = (np.ascontiguousarray(A[_hbr0:_hbr1, :]) @ np.ascontiguousarray(A[:_hbr1, :]).T)
    _hbq1 *= alpha
    for i in range(_hbr0, _hbr1):
        C[i, :i + 1] *= beta
        C[i, :i + 1] += _hbq1[i - _hbr0, 0:max(i + 1, 0)]
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .catalogue import emit
from .contraction import Ref, Stmt, TensorNest, Term, normalize
from .legality import legal
from .panels import panel_form, positions

__all__ = ["match_triangular", "row_nest"]

#: suffix of a read of the output array at rows the row never writes (for :func:`legal`)
_OTHER_ROWS = "__hb_rows"


def _strip(r: Ref, row: str, temps: set[str]) -> Ref:
    if row not in r.idx:
        return r
    if r.name in temps:  # a temporary of the row: one per iteration
        return Ref(r.name, tuple(v for v in r.idx if v != row))
    pos = r.idx.index(row)
    return Ref(r.name, tuple(v for v in r.idx if v != row), ((pos, row),))


def row_nest(nest: TensorNest, row: str) -> TensorNest | None:
    """The statements of one iteration of the root loop over ``row`` (``row`` held fixed in
    every subscript), or None when a statement is outside the root loop's body."""
    temps = set(nest.temps.values())
    stmts = []
    for s in nest.stmts:
        if not s.vars or s.vars[0] != row:
            return None
        terms = None if s.terms is None else [
            Term(t.coef, tuple(_strip(r, row, temps) for r in t.refs), t.div) for t in s.terms]
        stmts.append(Stmt(s.loops[1:], s.vars[1:], _strip(s.out, row, temps), s.op, terms,
                          s.node, s.scale, tuple(_strip(r, row, temps) for r in s.reads),
                          s.value))
    bounds = {v: b for v, b in nest.bounds.items() if v != row}
    return TensorNest(bounds, stmts, nest.fors[1:], nest.temps, nest.private, nest.written,
                      frozenset({row}))


def _other_rows(nest: TensorNest, row: str) -> dict[str, set[int]] | None:
    """Arrays written in the row, each with the positions its reads are renamed at: a read
    of a written array at another row (a variable whose range excludes ``row``) is disjoint
    from every write of the iteration when all writes are at ``row`` in one position."""
    renames: dict[str, set[int]] = {}
    for s in nest.stmts:
        if not s.out.array or s.out.name in nest.temps.values():
            continue
        writes = {x.out.fixed for x in nest.stmts if x.out.name == s.out.name}
        if len(writes) != 1 or not s.out.fixed:
            continue
        ((pos, _),) = s.out.fixed
        for x in nest.stmts:
            for r in x.reads:
                if r.name != s.out.name or r.fixed == s.out.fixed:
                    continue
                free = [v for d, v in enumerate(positions(r)) if d == pos]
                if r.fixed or not free or not _excludes(nest.bounds[free[0]], row):
                    return None  # a read that may be the written row: left to legal()
                renames.setdefault(s.out.name, set()).add(id(r))
    return renames


def _excludes(bounds: tuple[str, str], row: str) -> bool:
    """A range ``[start, stop)`` that never holds ``row``: starting at ``row + c`` (c >= 1)
    or stopping at ``row``."""
    start, stop = (ast.parse(b, mode="eval").body for b in bounds)
    after = isinstance(start, ast.BinOp) and isinstance(start.op, ast.Add) \
        and ast.unparse(start.left) == row and isinstance(start.right, ast.Constant) \
        and start.right.value >= 1
    before = isinstance(stop, ast.Name) and stop.id == row
    return after or before


def _renamed(nest: TensorNest, ids: set[int]) -> TensorNest:
    def ren(r: Ref) -> Ref:
        return Ref(r.name + _OTHER_ROWS, r.idx, r.fixed) if id(r) in ids else r

    stmts = [Stmt(s.loops, s.vars, s.out, s.op, s.terms, s.node, s.scale,
                  tuple(ren(r) for r in s.reads), s.value) for s in nest.stmts]
    return TensorNest(nest.bounds, stmts, nest.fors, nest.temps, nest.private, nest.written,
                      nest.nonneg)


def match_triangular(root: ast.For, may_alias: Callable[[str, str], bool] | None = None,
                     live: Callable[[str], bool] | None = None,
                     numba: bool = False) -> tuple[str, str] | None:
    """(catalogue entry, replacement source) for a triangular nest rooted at ``root``, or None.

    Parameters
    ----------
    root : ast.For
        Outermost loop of the nest; its variable is the row variable.
    may_alias : callable, optional
        ``may_alias(x, y)``: whether two names may share storage.
    live : callable, optional
        ``live(name)``: whether a name's value after the nest may be read.
    numba : bool, default False
        The numba form (:func:`.panels.panel_form`).

    Returns
    -------
    tuple of str or None
        ``("<entry> (triangular rows)", source)``: the loop over the rows around the row's
        statements. None when the nest is rectangular (the plain catalogue's case), has a bound
        that reads another loop variable or a step, is not a catalogue entry, or is not legal.
    """
    nest = normalize(root, row=True)
    if nest is None or nest.private or not isinstance(root.target, ast.Name):
        return None
    row = root.target.id
    if not any(row in {n.id for n in ast.walk(ast.parse(f"({a}, {b})"))
                       if isinstance(n, ast.Name)} for a, b in nest.bounds.values()):
        return None  # rectangular: not this module's case
    if live is not None and any(live(v) for v in (*nest.bounds, *nest.temps)):
        return None
    rows = row_nest(nest, row)
    if rows is None:
        return None
    others = _other_rows(rows, row)
    if others is None:
        return None
    ids = set().union(*others.values()) if others else set()
    check = _renamed(rows, ids)

    def alias(x: str, y: str) -> bool:
        bx, by = x.removesuffix(_OTHER_ROWS), y.removesuffix(_OTHER_ROWS)
        if bx == by:
            return False  # the same array at rows the row never writes
        return bool(may_alias(bx, by)) if callable(may_alias) else False

    if legal(check, alias) is not None:
        return None
    got = emit(rows)
    if got is None:
        return None
    kind, code = got
    start, stop = nest.bounds[row]
    fast = panel_form(rows, row, start, stop, ids, numba)
    if fast is not None:
        return f"{kind} (triangular rows)", fast[1]
    body = "\n".join("    " + line for line in code.splitlines())
    return f"{kind} (triangular rows)", f"for {row} in range({start}, {stop}):\n{body}"
