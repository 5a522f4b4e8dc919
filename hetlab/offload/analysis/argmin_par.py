"""The numba form of an argmin/argmax nest (:mod:`.argmin`): its rows under ``prange``.

The NumPy form (:func:`.argmin.match_argmin`, kept for CuPy) computes chunks of ``(rows,
candidates)`` distances as array temporaries and runs serially in numba: at the suite size it
was no faster than the loop (18.7 ms vs 18.7 ms serial njit; the hand-written ``prange`` over
rows took 9.9 ms, benchmarks/results/quiet-2026-12-01/offload_suite.txt). The numba form is
the nest as written with ``prange`` on its row loop, in a parallel helper (:mod:`.parhelp`):
each row runs exactly the loop's operations (the direct distance, the strict comparison, so the
same index, the same distance bits and the loop's NaN behaviour: a NaN distance never compares
smaller), with no temporary array. The guards of the NumPy form (an ``IndexError`` where a
bound exceeds an operand, as Python would raise) run first, at the top level.

The rows must be independent: every scalar the row body assigns (other than the candidate,
feature, distance and temporaries of the match) is assigned with ``=`` in the statements
before the candidate loop before it is read and is dead after the nest; every array element
written has the row variable as one of its subscripts, the other subscripts names that the nest
does not assign or constants; no array written is read in the nest, and none may share storage
with another array the nest uses. Otherwise no numba form (the search keeps the loops).

>>> import ast
>>> from hetlab.offload.analysis.argmin import match_argmin
>>> from hetlab.offload.analysis.parhelp import readable
>>> src = '''
... for i in range(n):
...     best = 0
...     bd = np.inf
...     for c in range(k):
...         d = 0.0
...         for f in range(m):
...             t = X[i, f] - C[c, f]
...             d += t * t
...         if d < bd:
...             bd = d
...             best = c
...     lab[i] = best
... '''
>>> kind, code = match_argmin(ast.parse(src).body[0], numba=True, live=lambda v: False)
>>> print(readable(code).split("def ")[1].split(":")[0])  # doctest: +ELLIPSIS
_hlp_...(n, k, lab, m, X, C)
>>> "_hl_numba.prange(n)" in code
True
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .parhelp import free_names, helper

__all__ = ["parallel_rows"]


def _stores(node: ast.AST) -> tuple[set[str], list[ast.Subscript]]:
    names, subs = set(), []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)):
            subs.append(n)
    return names, subs


def parallel_rows(root: ast.For, guards: list[str],
                  may_alias: Callable[[str, str], bool] | None,
                  live: Callable[[str], bool] | None) -> str | None:
    """The helper form of the argmin nest ``root`` (already matched), or None.

    Parameters
    ----------
    root : ast.For
        The row loop ``for i in range(i0, i1)`` (not modified).
    guards : list of str
        The bound checks of the match, over the whole row range.
    may_alias, live : callable or None
        As for :func:`.argmin.match_argmin`; ``live`` is required (unknown liveness: None).
    """
    if live is None or not isinstance(root.target, ast.Name):
        return None
    i = root.target.id
    k = next(n for n, st in enumerate(root.body) if isinstance(st, ast.For))
    cand: ast.For = root.body[k]  # type: ignore[assignment]
    pre = root.body[:k]
    names, subs = _stores(root)
    names.discard(i)
    # per candidate, fresh: the candidate and feature loops, the distance, the temporaries
    fresh = {cand.target.id} | _stores(cand.body[0])[0] | _stores(cand.body[1])[0]
    if fresh & _stores(cand.body[2])[0]:
        return None
    # every other scalar (best, its index): `=` before the candidate loop, not read before
    assigned: set[str] = set()
    for st in pre:
        reads = {n.id for n in ast.walk(st) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)}
        if reads & (names - assigned):
            return None
        if isinstance(st, ast.Assign):
            assigned |= {t.id for t in st.targets if isinstance(t, ast.Name)}
    for name in names - fresh:
        if name not in assigned or live(name) or any(
                isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
                and n.target.id == name for n in ast.walk(root)):
            return None
    if any(live(name) for name in fresh):
        return None
    # array writes: one element per row (the row variable a subscript), never read here
    written = set()
    for sub in subs:
        if not isinstance(sub.value, ast.Name):
            return None
        parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if not any(isinstance(p, ast.Name) and p.id == i for p in parts):
            return None
        for p in parts:
            if not ((isinstance(p, ast.Constant) and type(p.value) is int)
                    or (isinstance(p, ast.Name) and (p.id == i or p.id not in names))):
                return None
        written.add(sub.value.id)
    read = {n.value.id for n in ast.walk(root) if isinstance(n, ast.Subscript)
            and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)}
    if read & written or not written:
        return None
    if callable(may_alias) and any(may_alias(w, x) for w in written for x in read | written
                                   if w != x):
        return None
    row = copy_for(root)
    body = ast.unparse(row).splitlines()
    _, lines = helper(free_names([root], {i}), body)
    top = []
    fl: ast.For = cand.body[1]  # type: ignore[assignment]
    bounds = [_bounds(x) for x in (root, cand, fl)]
    if any(b is None for b in bounds):
        return None
    (i0, i1), (c0, c1), (f0, f1) = bounds  # type: ignore[misc]
    f = fl.target.id  # type: ignore[attr-defined]
    seen = set()
    for n in ast.walk(fl):  # the feature axis too: the loop would raise IndexError there
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
            parts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            for d, q in enumerate(parts):
                if isinstance(q, ast.Name) and q.id == f and (n.value.id, d) not in seen \
                        and f1 != f"{n.value.id}.shape[{d}]":
                    seen.add((n.value.id, d))
                    guards = [*guards,
                              f"if {i1} > {i0} and {c1} > {c0} and {f1} > {f0} and "
                              f"{f1} > {n.value.id}.shape[{d}]:\n    raise IndexError("
                              f"'{n.value.id}: index out of range in the argmin nest')"]
    for g in guards:
        cond, raise_ = (ln.strip() for ln in g.splitlines())
        top += [cond, "    " + raise_]
    return "\n".join(top + lines)


def _bounds(loop: ast.For) -> tuple[str, str] | None:
    it = loop.iter
    if not (isinstance(it, ast.Call) and 1 <= len(it.args) <= 2):
        return None
    return (ast.unparse(it.args[0]) if len(it.args) == 2 else "0"), ast.unparse(it.args[-1])


def copy_for(root: ast.For) -> ast.For:
    """``root`` with ``prange`` on its row loop (a copy)."""
    import copy

    new = copy.deepcopy(root)
    new.iter.func = ast.Name("prange", ast.Load())  # type: ignore[attr-defined]
    return ast.fix_missing_locations(new)
