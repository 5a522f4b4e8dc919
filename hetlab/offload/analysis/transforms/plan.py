"""Which loop transformations are legal, decided from the dependence vectors of the analysis.

Interchange: a *band* is a chain of loops each holding exactly one inner loop, with constant
steps and bounds that read no loop of the band (rectangular). For every dependence carried by
a band loop (``report.loop(k).dependences``, distances from :mod:`..deps`) the direction
vector over the band is ``0`` before the carrying loop, ``+`` at it and the sign of the
distance (``*`` when unknown) after it. A permutation is legal when every permuted vector
still starts, after its zeros, with ``+``; it is also refused when a loop that was parallel
would carry a dependence after it. A band loop with statements beside its inner loop is
distributed over them first, which is legal when it carries no dependence and the statement
groups share no scalar.

Privatization (:mod:`.privatize`) is looked at for the outermost loops only: a copy per
chunk of every run of an inner loop costs more than it frees.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...front.loops import Loop, LoopTree
from ..scalars import written_names
from .privatize import Privatization, plan_private

if TYPE_CHECKING:  # the report builds these plans; imported for types only
    from ..aliases import AliasInfo
    from ..report import LoopReport

__all__ = ["Interchange", "Privatization", "Transforms", "plan_transforms"]

_MAX_BAND = 4


@dataclass(frozen=True)
class Interchange:
    """A permutation of a band of loops (fixed pass of the numba variant).

    Examples
    --------
    >>> print(Interchange(("L1", "L2", "L3"), ("i", "j", "k"), (0, 2, 1)))
    L1/L2/L3: interchanged j↔k for unit stride (i-j-k → i-k-j)
    """

    loops: tuple[str, ...]  #: band loop ids, outermost first, in source order
    vars: tuple[str, ...]  #: their variables
    order: tuple[int, ...]  #: ``order[p]``: which band loop runs at depth ``p`` afterwards
    distributed: tuple[str, ...] = ()  #: band loops split over their statements first

    def __str__(self) -> str:
        moved = [p for p, o in enumerate(self.order) if o != p]
        pair = "↔".join(self.vars[p] for p in moved) if len(moved) == 2 else \
            ",".join(self.vars[p] for p in moved)
        old = "-".join(self.vars)
        new = "-".join(self.vars[o] for o in self.order)
        dist = (f"; {', '.join(self.distributed)} distributed over its statements first"
                if self.distributed else "")
        return (f"{'/'.join(self.loops)}: interchanged {pair} for unit stride "
                f"({old} → {new}){dist}")


@dataclass
class Transforms:
    """The transformations :func:`~hetlab.offload.analyze` found legal and useful."""

    interchanges: list[Interchange] = field(default_factory=list)
    #: loop id → the arrays privatized when that loop runs in parallel
    private: dict[str, list[Privatization]] = field(default_factory=dict)
    #: why a transformation that was looked at was not made (negative cases, for the report)
    refused: list[str] = field(default_factory=list)
    #: lines of the fixed passes only visible in the rewrite (scalar replacement)
    rewrite_notes: list[str] = field(default_factory=list)
    #: bands that may be tiled (:class:`~.tiling.Tiling`; the tile size is a search gene)
    tilings: list[Any] = field(default_factory=list)
    #: loop id → scalars read after it whose last value the numba target keeps by running
    #: the loop's last iteration after the parallel others (:mod:`.peel`)
    lastprivate: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [str(x) for x in self.interchanges]
        out += [f"{p}; {p.loop} parallel with it" for ps in self.private.values() for p in ps]
        out += [f"{k}: last iteration run after the others for {', '.join(v)} (read after the "
                f"loop); {k} parallel with it" for k, v in self.lastprivate.items()]
        return out + self.rewrite_notes

    def privatizable(self) -> list[str]:
        """Loop ids that are parallel once their arrays are privatized, or once their last
        iteration runs after the others (scalars read after the loop)."""
        return [*self.private, *(k for k in self.lastprivate if k not in self.private)]


def _dep_reasons_only(rep: LoopReport) -> bool:
    return len(rep.reasons) == len(rep.dependences)


# -- interchange --------------------------------------------------------------------------
def _band_from(loop: Loop, loops: list[Loop]) -> list[Loop]:
    band = [loop]
    cur = loop
    while len(cur.children) == 1 and len(band) < _MAX_BAND:
        child = loops[cur.children[0]]
        if not any(s is child.node for s in cur.node.body):
            break  # the inner loop sits under an if or a while
        band.append(child)
        cur = child
    return band


def _rectangular(band: list[Loop]) -> bool:
    vars_ = {lp.var for lp in band}
    for lp in band:
        if lp.step is None or lp.lower is None or lp.upper is None or lp.unsupported:
            return False
        names = set(lp.lower.coefs) | set(lp.upper.coefs)
        for key in list(names):
            names |= set(lp.lower.opaque.get(key, ())) | set(lp.upper.opaque.get(key, ()))
        if names & vars_:
            return False
        if names & written_names(band[0].node.body):
            return False
    return True


def _stride_score(var: str, accs: list[Any], fortran: frozenset[str] = frozenset()) -> int:
    """+1 per access whose unit-stride subscript (the last; the first of an array in
    ``fortran``, column-major) walks ``var`` with unit step, −1 per access where ``var`` moves
    another subscript (a strided walk); writes count double."""
    score = 0
    for a in accs:
        if not a.subs or any(s is None for s in a.subs):
            continue
        weight = 2 if a.write else 1
        subs = a.subs[::-1] if a.array in fortran else a.subs
        last = subs[-1].coefs.get(var, 0)
        early = any(var in s.coefs for s in subs[:-1])
        if early:
            score -= weight
        elif abs(last) == 1:
            score += weight
    return score


def _vectors(band: list[Loop], reps: list[LoopReport]) -> list[tuple[str, ...]]:
    """Direction vectors over the band of every dependence a band loop carries."""
    out = []
    base = band[0].depth
    for p, lp in enumerate(band):
        for d in reps[lp.index].dependences:
            vec = []
            for q in range(len(band)):
                if q < p:
                    vec.append("0")
                elif q == p:
                    vec.append("+")
                else:
                    k = base + q
                    v = d.distance[k] if k < len(d.distance) else "*"
                    vec.append("*" if v == "*" else "+" if v > 0 else "-" if v < 0 else "0")
            out.append(tuple(vec))
    return out


def _legal(order: tuple[int, ...], vectors: list[tuple[str, ...]],
           parallel: set[int]) -> bool:
    for vec in vectors:
        perm = [vec[o] for o in order]
        for pos, x in enumerate(perm):
            if x == "0":
                continue
            if x != "+" or order[pos] in parallel:
                return False
            break
    return True


def _groups_share_scalars(loop: Loop, child: Loop) -> bool:
    """Whether statement groups of ``loop``'s body (before, the inner loop, after) share a
    scalar one of them assigns (distribution would cut that flow)."""
    body = loop.node.body
    k = next(i for i, s in enumerate(body) if s is child.node)
    groups = [body[:k], [body[k]], body[k + 1:]]
    targets = {n.target.id for s in body for n in ast.walk(s)
               if isinstance(n, ast.For) and isinstance(n.target, ast.Name)}
    names = [{n.id for s in g for n in ast.walk(s) if isinstance(n, ast.Name)} for g in groups]
    stored = [written_names(g) - targets for g in groups]
    for a, b in itertools.permutations(range(3), 2):
        if stored[a] & names[b]:
            return True
    return False


def _plan_interchange(loop: Loop, loops: list[Loop], tree: LoopTree,
                      reps: list[LoopReport], refused: list[str],
                      fortran: frozenset[str] = frozenset()) -> Interchange | None:
    band = _band_from(loop, loops)
    if len(band) < 2 or not _rectangular(band):
        return None
    ids = [lp.id for lp in band]
    if any(reps[lp.index].reductions or not _dep_reasons_only(reps[lp.index]) for lp in band):
        return None
    inner = band[-1].index
    accs = [a for a in tree.accesses if inner in a.loops]
    if not accs:
        return None
    scores = [_stride_score(lp.var, accs, fortran) for lp in band]
    vectors = _vectors(band, reps)
    parallel = {p for p, lp in enumerate(band) if reps[lp.index].parallelizable}
    best: tuple[int, ...] | None = None
    for order in itertools.permutations(range(len(band))):
        if order[-1] == len(band) - 1 or scores[order[-1]] <= scores[-1]:
            continue
        if not _legal(order, vectors, parallel):
            refused.append(f"{'/'.join(ids)}: interchange "
                           f"{'-'.join(band[o].var for o in order)} refused (a dependence "
                           "would run backwards or a parallel loop would carry one)")
            continue
        if best is None or scores[order[-1]] > scores[best[-1]] or (
                scores[order[-1]] == scores[best[-1]] and order[0] == 0 and best[0] != 0):
            best = order
    if best is None:
        return None
    first = next(p for p, o in enumerate(best) if o != p)
    extra = [p for p in range(first, len(band) - 1)
             if not (len(band[p].node.body) == 1 and band[p].node.body[0] is band[p + 1].node)]
    split = []
    for p in range(first, max(extra) + 1 if extra else first):
        lp, child = band[p], band[p + 1]
        rep = reps[lp.index]
        jumps = any(isinstance(n, ast.Continue) for s in lp.node.body for n in ast.walk(s))
        if rep.verdict != "parallel" or rep.dependences or jumps \
                or _groups_share_scalars(lp, child):
            refused.append(f"{'/'.join(ids)}: interchange refused ({lp.id} ({lp.var}) has "
                           "other statements and cannot be distributed over them)")
            return None
        split.append(lp.id)
    return Interchange(tuple(ids), tuple(lp.var for lp in band), best, tuple(split))


def plan_transforms(tree: LoopTree, reps: list[LoopReport], aliases: AliasInfo,
                    fortran: frozenset[str] = frozenset()) -> Transforms:
    """The legal transformations of a function's loops (see the module docstring)."""
    loops = tree.loops
    xf = Transforms()
    in_band: set[int] = set()
    for lp in loops:
        if lp.index in in_band:
            continue
        x = _plan_interchange(lp, loops, tree, reps, xf.refused, fortran)
        if x is not None:
            xf.interchanges.append(x)
            in_band |= {loops[k].index for k in range(len(loops)) if loops[k].id in x.loops}
    for lp in loops:
        outer = lp.parent
        while outer is not None and not (reps[outer].parallelizable
                                         or loops[outer].id in xf.private):
            outer = loops[outer].parent
        if outer is not None:
            continue  # a copy per chunk of every run of an inner loop costs more than it frees
        priv = plan_private(lp, reps[lp.index], aliases, xf.refused)
        if priv:
            xf.private[lp.id] = priv
    for lp in loops:
        rep = reps[lp.index]
        if rep.verdict == "sequential" and rep.lastprivate and lp.step is not None \
                and len(rep.reasons) == len(rep.lastprivate):
            xf.lastprivate[lp.id] = list(rep.lastprivate)
    return xf
