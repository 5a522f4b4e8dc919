"""The numba form of a block's elementwise and axis-reduction statements: explicit loops in
storage order.

numba compiles ``np.sum(E, axis=0)`` of an array expression ``E`` into a temporary for ``E``
and a strided reduction, and runs it on one thread; a C-ordered reduction over rows
(``s[j] += X[i, j]``) is fastest as a loop over rows adding each row, unit stride. So, for the
numba variant only (the CuPy variant keeps the NumPy form of :mod:`.catalogue`), a statement
over two or more loops that sums over an index without being a contraction (a product of
factors over different indices, summed, stays a BLAS call), or that broadcasts a lower-rank operand
(``Z[i, j] = (X[i, j] - mu[j]) / sd[j]``, which the NumPy form evaluates into a temporary
first), becomes a loop nest. The loop order is the subscript order of the widest array the
statement writes or reads (the innermost loop runs along the last axis: unit stride). Every
output element is still summed over the summed indices in increasing order, as the loop nest
written in any order sums it: the result is bit-identical to the serial loops. The loops run
in a parallel helper (:mod:`.parhelp`, :func:`parallel_loops`): ``prange`` over the first loop
that is not summed, or over one chunk of it per thread when a summed loop runs outside it (a
column sum: each thread adds whole rows of its own columns, unit stride). A plan that keeps
only blocks is compiled without ``parallel=True``; the helper is parallel all the same.
(Before: serial loops, 6.8 ms on column_zscore at the suite size against the hand-written
prange version's 1.8 ms, benchmarks/results/quiet-2026-12-01/offload_suite.txt.)

Refused (the NumPy form is kept): a statement reading its own output at another element (its
order would matter), triangular rows, a temporary created by the statement with an integer
initial value (its dtype is not known here) or with a non-zero loop start, an update that is
not ``+=``.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> src = '''
... for j in range(m):
...     s = 0.0
...     for i in range(n):
...         s += X[i, j]
...     mu[j] = s / n
... '''
>>> from hetlab.offload.analysis.catalogue import emit
>>> from hetlab.offload.analysis.parhelp import readable
>>> print(readable(emit(normalize(ast.parse(src).body[0]), numba=True)[1]))  # doctest: +ELLIPSIS
_hb0 = np.zeros(max(m, 0))
# hetlab.offload parallel helper
import numba as _hl_numba
from numba import uint64 as _hl_u64
<BLANKLINE>
<BLANKLINE>
@_hl_numba.njit(parallel=True, cache=False)
def _hlp_...(_hb0, X, n, m):
    _hlt = _hl_numba.get_num_threads()
    _hlw = max((m - 0 + _hlt - 1) // _hlt, 0)
    for _hlc in _hl_numba.prange(_hlt):
        for i in range(0, n):
            for j in range(_hl_u64(0 + _hlc * _hlw), _hl_u64(max(...))):
                _hb0[j] += X[i, j]
_hlp_...(_hb0, X, n, m)
mu[:max(m, 0)] = _hb0 / n
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from .parhelp import free_names, helper
from .tensor import Stmt

__all__ = ["loop_form", "storage_order"]


def storage_order(s: Stmt) -> tuple[str, ...]:
    """``s``'s loop variables in the subscript order of the widest array it writes or reads
    (its output first, then its reads in order); the loops' order when none spans them all."""
    want = set(s.vars)
    for r in (s.out, *s.reads):
        if set(r.idx) == want and len(r.idx) == len(want):
            return r.idx
    return s.vars


def _extent(stop: str, nonneg: frozenset[str]) -> str:
    """The length of ``range(0, stop)``: ``stop`` itself when it is a size or a non-negative
    name, else ``max(stop, 0)``."""
    if re.match(r"^(\w+\.shape\[\d+\]|len\(\w+\)|\d+)$", stop) or stop in nonneg:
        return stop
    return f"max({stop}, 0)"


def _is_sum_update(node: ast.stmt, target: str) -> bool:
    """``t += e`` or ``t = t + e`` (the form :mod:`.contraction` reads as ``+=``)."""
    if isinstance(node, ast.AugAssign):
        return isinstance(node.op, ast.Add)
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        v = node.value
        return isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add) \
            and ast.unparse(v.left) == ast.unparse(node.targets[0]) == target
    return False


def loop_form(em: Any, s: Stmt, op: str, init: str | None,
              rewrite: Callable[[Stmt], ast.stmt]) -> str | None:
    """Append ``s`` to ``em.lines`` as ordered (and parallel) loops; its entry or None.

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter (``nest``, ``temps``, ``lines``, ``defined``, ``target``).
    s : Stmt
        The statement; ``op`` is ``"="`` when a zero initialization was merged into it.
    op : str
        ``"="`` (output zeroed first, when ``s`` sums) or ``s.op``.
    init : str or None
        The merged zero initialization's constant (``"0.0"``), None when none was merged.
    rewrite : callable (Stmt) -> ast.stmt
        ``s.node`` with scalar temporaries read as their elements.

    Returns
    -------
    str or None
        ``"sum"`` or ``"map"``; None (nothing appended) when the form does not apply.
    """
    nest = em.nest
    if len(s.vars) < 2 or nest.nonneg or s.scale is not None or not s.out.array:
        return None
    if any(r.fixed for r in (s.out, *s.reads)):
        return None
    if s.terms is not None and s.summed and any(
            len({frozenset(r.idx) for r in t.refs}) >= 2 for t in s.terms):
        return None  # a contraction (factors over different indices): BLAS
    if any(r.name == s.out.name and r.idx != s.out.idx for r in s.reads):
        return None
    summed = s.summed
    if not summed and all(len(r.idx) == len(s.vars) for r in s.reads if r.array):
        return None  # a same-shape map or transpose: numba's slice assignment is a loop already
    if summed:
        if any(r.name == s.out.name for r in s.reads) or op not in ("=", "+=") \
                or not _is_sum_update(s.node, ast.unparse(getattr(s.node, "target", None)
                                                          or s.node.targets[0])):
            return None
    new_temp = s.out.name in em.temps and not em.defined(s)
    if new_temp and (not summed or op != "=" or init not in ("0.0", "0.")):
        return None
    temps_read = {r.name for r in (s.out, *s.reads)} & em.temps
    if temps_read and any(nest.bounds[v][0] != "0" for v in s.vars):
        return None
    order = storage_order(s)
    node = rewrite(s)
    if new_temp:
        dims = ", ".join(_extent(nest.bounds[v][1], em.nonneg) for v in s.out.idx)
        em.lines.append(f"{s.out.name} = np.zeros({dims if len(s.out.idx) == 1 else f'({dims})'})")
    elif summed and op == "=":
        em.lines.append(f"{em.target(s.out)} = 0.0")
    em.lines += parallel_loops(order, nest.bounds, ast.fix_missing_locations(node), summed)
    return "sum" if summed else "map"


def parallel_loops(order: tuple[str, ...], bounds: dict[str, tuple[str, str]], node: ast.stmt,
                   summed: tuple[str, ...]) -> list[str]:
    """``node`` inside loops over ``order`` (outer first) as a call of a parallel helper
    (:mod:`.parhelp`): ``prange`` over the first loop whose variable is not summed, split into
    one contiguous chunk per thread when summed loops run outside it (a column sum: rows
    outer, each thread its own columns). Each output element is written by one thread and
    summed over the summed loops in their order, so the result is bit-identical to the loops.
    """
    p = next(k for k, v in enumerate(order) if v not in summed)
    body, pad = [], ""
    if p > 0:
        start, stop = bounds[order[p]]
        body += ["_hlt = _hl_numba.get_num_threads()",
                 # an empty or negative extent gives _hlw = 0: every chunk's range is empty
                 # (never negative: the chunk loops' starts stay provably ≥ start, .unsigned)
                 f"_hlw = max((({stop}) - ({start}) + _hlt - 1) // _hlt, 0)",
                 "for _hlc in prange(_hlt):"]
        pad = "    "
    for k, v in enumerate(order):
        start, stop = bounds[v]
        if k == p and p > 0:
            rng = f"range({start} + _hlc * _hlw, min({start} + (_hlc + 1) * _hlw, {stop}))"
        else:
            rng = f"{'prange' if k == p else 'range'}({start}, {stop})"
        body.append(f"{pad}for {v} in {rng}:")
        pad += "    "
    body.append(pad + ast.unparse(node))
    exprs = [node, *(ast.parse(b, mode="eval") for v in order for b in bounds[v])]
    _, lines = helper(free_names(exprs, order), body)
    return lines
