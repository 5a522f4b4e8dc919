"""Arrays used as a shared temporary inside a nest, privatized per iteration.

Split from :mod:`.contraction`: :func:`privatize` rewrites a normalized
:class:`~.tensor.TensorNest` in place.
"""

from __future__ import annotations

from .tensor import TEMP_PREFIX, Ref, TensorNest, Term

__all__ = ["privatize"]


def privatize(nest: TensorNest) -> None:
    """Arrays used as a shared temporary → a private copy per iteration (``nest.private``).

    An array ``T`` all of whose accesses in the nest are ``T[I]`` (one subscript tuple), first
    written by ``=`` (not reading ``T``) in every iteration of the loops around all its uses,
    whose variables ``P`` are not in ``I``: each such iteration writes every element it later
    reads, so ``T[I]`` becomes ``_hb<k>[P + I]`` and the nest may run per statement; the
    element values ``T`` holds afterwards are the last iteration's (:mod:`.catalogue` copies
    them back).
    """
    temps = set(nest.temps.values())
    for name in sorted({s.out.name for s in nest.stmts if s.out.idx} - temps):
        users = [s for s in nest.stmts if s.out.name == name
                 or any(r.name == name for r in s.reads)]
        accs = {r for s in users for r in (s.out, *s.reads) if r.name == name}
        if len(accs) != 1 or any(s.terms is None for s in users):
            continue
        (acc,) = accs
        first = users[0]
        if first.out != acc or first.op != "=" or acc in first.reads:
            continue
        depth = 0
        while all(len(s.loops) > depth and s.loops[depth] == first.loops[depth]
                  for s in users):
            depth += 1
        shared = tuple(v for v in first.vars[:depth] if v not in acc.idx)
        if not shared:
            continue
        temp = f"{TEMP_PREFIX}{len(nest.temps) + len(nest.private)}"
        new = Ref(temp, shared + acc.idx)
        for s in users:
            s.out = new if s.out == acc else s.out
            s.reads = tuple(new if r == acc else r for r in s.reads)
            s.terms = [Term(t.coef, tuple(new if r == acc else r for r in t.refs), t.div)
                       for t in s.terms or ()] if s.terms is not None else None
        nest.private[name] = (temp, shared)
