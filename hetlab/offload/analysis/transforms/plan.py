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

Privatization: a sequential loop whose every reason is a dependence on arrays that are each
an array reduction (only ``y[s] += e`` / ``y[s] -= e`` / ``y[s] = y[s] + e`` with ``e`` not
reading ``y``) or a temporary (every element read in an iteration was written earlier in the
same iteration, :class:`_Cover`) becomes parallel over chunks with one private copy each.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...front.loops import Loop, LoopTree
from ..scalars import live_after, written_names

if TYPE_CHECKING:  # the report builds these plans; imported for types only
    from ..aliases import AliasInfo
    from ..report import LoopReport

__all__ = ["Interchange", "Privatization", "Transforms", "plan_transforms"]

_MAX_BAND = 4


@dataclass(frozen=True)
class Interchange:
    """A permutation of a band of loops (fixed pass of the numba variant)."""

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


@dataclass(frozen=True)
class Privatization:
    """An array made private per chunk of a parallel loop."""

    loop: str
    array: str
    kind: str  #: "reduction" (private zeros, summed after) or "temporary"
    copy_out: bool = False  #: temporary: the last chunk's copy is written back

    def __str__(self) -> str:
        if self.kind == "reduction":
            return f"{self.loop}: {self.array} privatized (array reduction, +)"
        out = "; last iteration's values copied back" if self.copy_out else ""
        return (f"{self.loop}: {self.array} privatized per thread (temporary written before "
                f"it is read in each iteration){out}")


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

    def lines(self) -> list[str]:
        out = [str(x) for x in self.interchanges]
        out += [f"{p}; {p.loop} parallel with it" for ps in self.private.values() for p in ps]
        return out + self.rewrite_notes

    def privatizable(self) -> list[str]:
        """Loop ids that are parallel once their arrays are privatized."""
        return list(self.private)


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


def _stride_score(var: str, accs: list[Any]) -> int:
    """+1 per access whose last subscript walks ``var`` with unit step, −1 per access where
    ``var`` moves an earlier subscript (a strided walk); writes count double."""
    score = 0
    for a in accs:
        if not a.subs or any(s is None for s in a.subs):
            continue
        weight = 2 if a.write else 1
        last = a.subs[-1].coefs.get(var, 0)
        early = any(var in s.coefs for s in a.subs[:-1])
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
                      reps: list[LoopReport], refused: list[str]) -> Interchange | None:
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
    scores = [_stride_score(lp.var, accs) for lp in band]
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
        if rep.verdict != "parallel" or rep.dependences or _groups_share_scalars(lp, child):
            refused.append(f"{'/'.join(ids)}: interchange refused ({lp.id} ({lp.var}) has "
                           "other statements and cannot be distributed over them)")
            return None
        split.append(lp.id)
    return Interchange(tuple(ids), tuple(lp.var for lp in band), best, tuple(split))


# -- privatization --------------------------------------------------------------------------
def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _is_elem(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
        and node.value.id == name and not _mentions(node.slice, name)


def _reduction_stmt(s: ast.stmt, name: str) -> bool:
    if isinstance(s, ast.AugAssign):
        return _is_elem(s.target, name) and isinstance(s.op, (ast.Add, ast.Sub)) \
            and not _mentions(s.value, name)
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_elem(s.targets[0], name):
        v, t = s.value, ast.unparse(s.targets[0])
        if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub)):
            if _is_elem(v.left, name) and ast.unparse(v.left) == t:
                return not _mentions(v.right, name)
            if isinstance(v.op, ast.Add) and _is_elem(v.right, name) \
                    and ast.unparse(v.right) == t:
                return not _mentions(v.left, name)
    return False


def array_reduction(body: list[ast.stmt], name: str) -> str | None:
    """None when every use of array ``name`` in ``body`` is a ``+``/``-`` element update not
    reading it otherwise; else why not."""
    for s in body:
        if isinstance(s, (ast.For, ast.While, ast.If)):
            head = s.iter if isinstance(s, ast.For) else s.test
            if _mentions(head, name):
                return f"{name} is read in a loop or branch condition"
            why = array_reduction(s.body, name) or array_reduction(s.orelse, name)
            if why:
                return why
        elif _mentions(s, name) and not _reduction_stmt(s, name):
            return (f"{name} is read or written other than by '{name}[…] += …' "
                    f"(line: {ast.unparse(s)[:60]})")
    return None


class _Cover:
    """Whether every element of array ``name`` read in one iteration of a loop was written
    earlier in the same iteration (elements as loop variables, invariants, whole ranges)."""

    def __init__(self, name: str, varying: set[str]) -> None:
        self.name, self.varying = name, varying
        self.covered: set[tuple[tuple[str, str], ...]] = set()
        self.open: dict[str, str | None] = {}
        self.why: str | None = None

    def desc(self, node: ast.Subscript) -> tuple[tuple[str, str], ...] | None:
        sl = node.slice
        idx = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        out = []
        for i in idx:
            names = {n.id for n in ast.walk(i) if isinstance(n, ast.Name)}
            if isinstance(i, ast.Name) and i.id in self.open:
                out.append(("var", i.id))
            elif isinstance(i, ast.Slice) or names & (self.varying | set(self.open)):
                return None
            else:
                out.append(("inv", ast.unparse(i)))
        return tuple(out)

    def _forms(self, d: tuple[tuple[str, str], ...]) -> list[tuple[tuple[str, str], ...]]:
        opts = []
        for kind, text in d:
            alt = [(kind, text)]
            if kind == "var" and self.open.get(text) is not None:
                alt.append(("range", self.open[text] or ""))
            opts.append(alt)
        return [tuple(x) for x in itertools.product(*opts)]

    def reads(self, node: ast.AST, skip: ast.AST | None = None) -> None:
        for n in ast.walk(node):
            if n is skip:
                continue
            if isinstance(n, ast.Name) and n.id == self.name:
                parent_ok = any(
                    isinstance(m, (ast.Subscript, ast.Attribute)) and m.value is n
                    for m in ast.walk(node))
                if not parent_ok:
                    self.fail(f"{self.name} is used as a whole")
            if isinstance(n, ast.Subscript) and _is_elem(n, self.name) and n is not skip:
                d = self.desc(n)
                if d is None or not any(f in self.covered for f in self._forms(d)):
                    self.fail(f"{ast.unparse(n)} may be read before it is written")

    def fail(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def write(self, target: ast.AST, cond: bool) -> None:
        if _is_elem(target, self.name) and not cond:
            d = self.desc(target)  # type: ignore[arg-type]
            if d is not None:
                self.covered.add(d)

    def walk(self, stmts: list[ast.stmt], cond: bool = False) -> None:
        for s in stmts:
            if isinstance(s, ast.For):
                self.reads(s.iter)
                var = s.target.id if isinstance(s.target, ast.Name) else None
                names = {n.id for n in ast.walk(s.iter) if isinstance(n, ast.Name)}
                key = ast.unparse(s.iter) if not names & (self.varying | set(self.open)) \
                    else None
                before = set(self.covered)
                if var is not None:
                    self.open[var] = key
                self.walk(s.body, cond)
                if var is not None:
                    del self.open[var]
                new = {tuple(("range", key) if x == ("var", var) else x for x in e)
                       for e in self.covered - before
                       if key is not None and ("var", var) in e}
                self.covered = before | new
            elif isinstance(s, ast.If):
                self.reads(s.test)
                before = set(self.covered)
                self.walk(s.body, True)
                self.covered = set(before)
                self.walk(s.orelse, True)
                self.covered = before
            elif isinstance(s, ast.While):
                self.fail("while loop")
            elif isinstance(s, ast.Assign):
                self.reads(s.value)
                for t in s.targets:
                    self.reads(t, skip=t)
                for t in s.targets:
                    self.write(t, cond)
            elif isinstance(s, ast.AugAssign):
                self.reads(s.value)
                self.reads(s.target)
                self.write(s.target, cond)
            else:
                self.reads(s)


def _regular_writes(loop: Loop, name: str) -> bool:
    """Every iteration of ``loop`` writes the same elements of ``name``: no write under an
    ``if``, loops on the way with bounds and subscripts that do not change with the loop."""
    varying = written_names(loop.node.body) | {loop.var}

    def ok(stmts: list[ast.stmt], inner: set[str]) -> bool:
        for s in stmts:
            if isinstance(s, ast.For):
                names = {n.id for n in ast.walk(s.iter) if isinstance(n, ast.Name)}
                if names & ((varying - inner) | {loop.var}) and _mentions(s, name):
                    return False
                tgt = s.target.id if isinstance(s.target, ast.Name) else ""
                if not ok(s.body, inner | {tgt}):
                    return False
            elif isinstance(s, (ast.If, ast.While)):
                if any(isinstance(n, ast.Subscript) and _is_elem(n, name)
                       and isinstance(n.ctx, ast.Store) for n in ast.walk(s)):
                    return False
            else:
                for n in ast.walk(s):
                    if isinstance(n, ast.Subscript) and _is_elem(n, name) and isinstance(
                            n.ctx, ast.Store):
                        used = {m.id for m in ast.walk(n.slice) if isinstance(m, ast.Name)}
                        if used & (varying - inner):
                            return False
        return True

    return ok(loop.node.body, set())


def _plan_private(loop: Loop, rep: LoopReport, aliases: AliasInfo,
                  refused: list[str]) -> list[Privatization] | None:
    if rep.verdict != "sequential" or not rep.dependences or not _dep_reasons_only(rep) \
            or loop.step is None:
        return None
    out = []
    for name in sorted({d.array for d in rep.dependences}):
        if aliases.roots_of(name) != frozenset({name}) or name in aliases.containers:
            refused.append(f"{loop.id}: {name} not privatized (it may be a view of other "
                           "storage)")
            return None
        why_red = array_reduction(loop.node.body, name)
        if why_red is None:
            out.append(Privatization(loop.id, name, "reduction"))
            continue
        cover = _Cover(name, written_names(loop.node.body) - {loop.var})
        cover.walk(loop.node.body)
        if cover.why is not None:
            refused.append(f"{loop.id}: {name} not privatized ({why_red}; as a temporary: "
                           f"{cover.why})")
            return None
        copy_out = not aliases.is_fresh(name) or live_after(loop.path, name)
        if copy_out and not _regular_writes(loop, name):
            refused.append(f"{loop.id}: {name} not privatized (its value after the loop is "
                           "needed and iterations do not all write the same elements)")
            return None
        out.append(Privatization(loop.id, name, "temporary", copy_out))
    return out


def plan_transforms(tree: LoopTree, reps: list[LoopReport], aliases: AliasInfo) -> Transforms:
    """The legal transformations of a function's loops (see the module docstring)."""
    loops = tree.loops
    xf = Transforms()
    in_band: set[int] = set()
    for lp in loops:
        if lp.index in in_band:
            continue
        x = _plan_interchange(lp, loops, tree, reps, xf.refused)
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
        priv = _plan_private(lp, reps[lp.index], aliases, xf.refused)
        if priv:
            xf.private[lp.id] = priv
    return xf
