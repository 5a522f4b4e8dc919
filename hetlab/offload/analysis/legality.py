"""Whether a normalized nest (:mod:`.contraction`) may run one statement after the other.

Split from :mod:`.contraction`: :func:`legal` says why distributing a
:class:`~.contraction.TensorNest` into whole-index-set statements would change its result.
"""

from __future__ import annotations

from .contraction import TensorNest

__all__ = ["legal"]


def legal(nest: TensorNest, may_alias: object = None) -> str | None:
    """Why distributing ``nest`` into whole-index-set statements would change its result
    (None: it would not).

    Parameters
    ----------
    nest : TensorNest
    may_alias : callable (str, str) -> bool, optional
        Whether two names may share storage (:meth:`.aliases.AliasInfo.may_alias`).
    """
    temps = set(nest.temps.values()) | {t for t, _ in nest.private.values()}
    for s in nest.stmts:
        names = {r.name for r in s.reads}
        if s.summed and s.op not in ("+=",):
            return f"{s.out.name}: overwritten inside a loop it does not depend on"
        if s.out.name in names:
            same = all(r == s.out for r in s.reads if r.name == s.out.name)
            if s.summed or not same:
                return f"{s.out.name}: read at another element by its own update"
    arrays = {r.name for s in nest.stmts for r in (s.out, *s.reads) if r.array} - temps
    outs = ({s.out.name for s in nest.stmts if s.out.array} - temps) | set(nest.private)
    if callable(may_alias):
        for w in outs:
            for x in arrays:
                if x != w and may_alias(w, x):
                    return f"{w} and {x} may share storage"
    # two statements touching one array: each loop around both must be a subscript of both
    for a_i, a in enumerate(nest.stmts):
        for b in nest.stmts[a_i + 1:]:
            common = [v for v, la, lb in zip(a.vars, a.loops, b.loops, strict=False)
                      if la == lb]
            acc_a = [(a.out, True), *((r, False) for r in a.reads)]
            acc_b = [(b.out, True), *((r, False) for r in b.reads)]
            for ra, wa in acc_a:
                for rb, wb in acc_b:
                    if ra.name != rb.name or not (wa or wb):
                        continue
                    if not ra.array and not rb.array and ra.name not in temps:
                        if ra.name in nest.scalar_outputs:
                            continue  # sums into one scalar: order-free
                        return f"{ra.name}: a scalar shared by two statements"
                    if ra.fixed != rb.fixed:
                        return f"{ra.name}: two rows of a triangular nest"
                    for v in common:
                        if not any(p == q == v for p, q in zip(ra.idx, rb.idx, strict=False)):
                            return f"{ra.name}: reached in another iteration of {v}"
    return None

