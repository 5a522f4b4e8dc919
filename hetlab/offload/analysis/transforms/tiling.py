"""Rectangular tiling of the reuse loops (strip-mine + interchange), a **gene** of the search.

A *band* is a chain of perfectly nested loops (each band loop's body is exactly the next band
loop; the innermost one's body is free) of depth 2 to 4, with step 1 and bounds that read no
loop of the band and nothing the band writes (rectangular). Tiling it by ``T`` runs
``for i_t in range(lo, hi, T)`` tile loops outside and ``for i in range(i_t, min(i_t + T,
hi))`` point loops inside, in the band's order, so the last partial tile is handled exactly.

Legality, from the dependence vectors of the analysis (:mod:`..deps`): tiling is legal iff
the band is *fully permutable*: every dependence carried by a band loop has, over the band,
only components ``0`` or ``+`` (normalized so the carrying loop's component is positive; an
unknown ``*`` after the carrying loop refuses), e.g. ``C[i, j] +=`` over ``k`` is ``(0, 0, +)``
and tiles, a Gauss-Seidel-like ``(1, -1)`` does not. Then every pair of dependent iterations
keeps its order, so ``+=`` updates of one element are summed in the same order as written
(scalar reductions of a ``reduction`` band loop are summed in tile order, as a ``prange``
would). Also refused: a step other than 1, bounds that read another band loop (triangular),
loops kept sequential by anything but array dependences, and a band writing an array that
may share storage with another array it reads (a view: the dependences between the two are
not known).

Why a gene and not a fixed pass: whether tiling pays and which size is best depends on the
cache sizes and on the argument shapes (a 32-tile of a short row only adds loop overhead),
so the search measures ``T`` ∈ {none, 32, 64, 128} per band (two bits, ``"L1:t1"`` and
``"L1:t2"``: size index ``b1 + 2·b2`` into :data:`TILE_SIZES`). It is offered only for bands
with reuse (an array read again across a band loop: an access that does not move with it, a
neighbour read of a stencil, or a transpose-like strided access) and whose working set at the
search's arguments exceeds the L2 cache (:func:`working_set`) while one iteration of its outer
loop touches more than L1 (:func:`reuse_span`), and only the band of largest reuse span per
function, so small nests cost the search nothing and a large one two bits. A band loop chosen
for ``prange`` keeps it on its tile loop (its point loop runs serially inside), which is
parallel when every dependence of the band has component 0 there.
"""

from __future__ import annotations

import ast
import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...front.loops import Access, Loop, LoopTree
from .plan import _rectangular
from .statements import splice

if TYPE_CHECKING:
    from ..aliases import AliasInfo
    from ..report import LoopReport

__all__ = ["TILE_SIZES", "Tiling", "plan_tiling", "tile_size", "tile_genes", "working_set",
           "reuse_span", "cache_bytes", "l2_bytes", "apply_tiling"]

#: tile sizes the gene chooses among (index 0: no tiling)
TILE_SIZES: tuple[int | None, ...] = (None, 32, 64, 128)
_MAX_BAND = 4
_ID = "_hl_id"  # the loop-id tag of :mod:`.rewrite` (on a loop header's ``iter``)


@dataclass(frozen=True)
class Tiling:
    """A band of loops that may be tiled (legal; the size is the search's gene).

    Examples
    --------
    >>> t = Tiling(("L1", "L2"), ("i", "j"), (True, True), "A[i, j] strided in i")
    >>> t.genes()
    ['L1:t1', 'L1:t2']
    >>> print(t.describe(64))
    L1/L2: tiled i, j by 64 (strip-mine + interchange; remainders exact with min())
    """

    loops: tuple[str, ...]  #: band loop ids, outermost first (source order)
    vars: tuple[str, ...]  #: their variables
    #: per band loop: its tile loop may run in parallel (every dependence component 0 there)
    parallel_tile: tuple[bool, ...]
    reuse: str  #: the reuse that makes tiling worth trying (for the report)
    #: (array, band variables one of its accesses moves with), for :func:`working_set`
    footprint: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (array, band variables it moves with, those moving its last subscript), per access
    footprint_lines: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = ()

    def genes(self) -> list[str]:
        """The two gene bits of this band's tile size."""
        return [f"{self.loops[0]}:t1", f"{self.loops[0]}:t2"]

    def describe(self, size: int) -> str:
        return (f"{'/'.join(self.loops)}: tiled {', '.join(self.vars)} by {size} "
                "(strip-mine + interchange; remainders exact with min())")


def tile_size(root: str, on: set[str] | frozenset[str]) -> int | None:
    """The tile size the gene bits in ``on`` choose for the band rooted at ``root``.

    >>> tile_size("L1", {"L1:t2"}), tile_size("L1", {"L1:t1", "L1:t2"}), tile_size("L1", set())
    (64, 128, None)
    """
    return TILE_SIZES[int(f"{root}:t1" in on) + 2 * int(f"{root}:t2" in on)]


# -- legality -------------------------------------------------------------------------------
def _band(loop: Loop, loops: list[Loop]) -> list[Loop]:
    band = [loop]
    while len(band) < _MAX_BAND:
        body = band[-1].node.body
        if len(body) != 1 or not isinstance(body[0], ast.For):
            break
        child = next((loops[c] for c in band[-1].children if loops[c].node is body[0]), None)
        if child is None:
            break
        band.append(child)
    return band


def _sign(v: int | str) -> str:
    return "*" if v == "*" else "+" if int(v) > 0 else "-" if int(v) < 0 else "0"


def _vectors(band: list[Loop], reps: list[LoopReport]) -> list[tuple[tuple[str, ...], str]]:
    """Direction vector over the band of every dependence a band loop carries (normalized to
    a positive component at the carrying loop), with the dependence's text."""
    out = []
    base = band[0].depth
    for p, lp in enumerate(band):
        for d in reps[lp.index].dependences:
            dist = [d.distance[base + q] if base + q < len(d.distance) else "*"
                    for q in range(len(band))]
            flip = 1 if dist[p] == "*" or int(dist[p]) > 0 else -1
            vec = ["0"] * p + ["+"]
            for v in dist[p + 1:]:
                if v != "*" and int(v) != 0 and dist[p] == "*":
                    vec.append("*")  # the order of the pair is not known: neither sign
                else:
                    vec.append(_sign(v if v == "*" else int(v) * flip))
            out.append((tuple(vec), str(d)))
    return out


def _reuse(band: list[Loop], accesses: list[Access]) -> str | None:
    """Why the band reuses data across its loops (None: no reuse to gain): an access that
    does not move with a band loop that moves others, two accesses whose last subscripts
    move with different band loops (a transpose: no loop order walks both with unit
    stride), or neighbour reads of a stencil."""
    vars_ = [lp.var for lp in band]
    inner = band[-1].index
    accs = [a for a in accesses if inner in a.loops and a.subs
            and all(s is not None for s in a.subs)]

    def moved(a: Access) -> set[str]:
        return {v for s in a.subs if s is not None for v in s.coefs if v in vars_}

    for a in accs:
        m = moved(a)
        rest = [v for v in vars_ if v not in m]
        if m and rest:
            return f"{a.text} does not move with {rest[0]}"
    lasts = {}
    for a in accs:
        last = a.subs[-1]
        mv = tuple(sorted(v for v in (last.coefs if last is not None else {}) if v in vars_))
        if mv:
            lasts.setdefault(mv, a.text)
    if len(lasts) > 1:
        texts = list(lasts.values())
        return f"{texts[0]} and {texts[1]} walk their rows along different loops"
    for a, b in itertools.combinations(accs, 2):
        if a.array == b.array and len(a.subs) == len(b.subs) and a.subs != b.subs and all(
                x is not None and y is not None and x.coefs == y.coefs
                for x, y in zip(a.subs, b.subs, strict=True)):
            return f"{a.text} and {b.text} read neighbours"
    return None


def _plan_band(band: list[Loop], tree: LoopTree, reps: list[LoopReport], aliases: AliasInfo,
               refused: list[str]) -> Tiling | None:
    ids = "/".join(lp.id for lp in band)
    if any(lp.unsupported or reps[lp.index].verdict == "unsupported" for lp in band):
        return None
    reuse = _reuse(band, tree.accesses)
    if reuse is None:
        return None  # nothing to gain: not a candidate, not a refusal
    odd = [lp for lp in band if lp.step != 1]
    if odd:
        refused.append(f"{ids}: tiling refused ({odd[0].var} has step "
                       f"{odd[0].step if odd[0].step is not None else 'not constant'}, not 1)")
        return None
    if not _rectangular(band):
        refused.append(f"{ids}: tiling refused (bounds not rectangular: a bound reads a loop "
                       "of the band or a name it writes)")
        return None
    for lp in band:
        rep = reps[lp.index]
        if len(rep.reasons) != len(rep.dependences):
            refused.append(f"{ids}: tiling refused ({lp.var} is {rep.verdict}: "
                           f"{rep.why})")
            return None
    inner = band[-1].index
    names = {a.array for a in tree.accesses if inner in a.loops}
    written = {a.array for a in tree.accesses if inner in a.loops and a.write}
    for w in sorted(written):
        for x in sorted(names - {w}):
            if aliases.may_alias(w, x):
                refused.append(f"{ids}: tiling refused ({w} and {x} may share storage)")
                return None
    vectors = _vectors(band, reps)
    for vec, text in vectors:
        if any(c in ("-", "*") for c in vec):
            refused.append(f"{ids}: tiling refused (not fully permutable: {text}, direction "
                           f"({', '.join(vec)}) over ({', '.join(lp.var for lp in band)}))")
            return None
    par = tuple(reps[lp.index].parallelizable and all(v[p] == "0" for v, _ in vectors)
                for p, lp in enumerate(band))
    vars_ = {lp.var for lp in band}
    foot = sorted({(a.array, tuple(sorted({v for s in a.subs if s is not None
                                             for v in s.coefs if v in vars_})))
                   for a in tree.accesses if inner in a.loops})
    lines = sorted({(a.array, tuple(sorted({v for s in a.subs if s is not None
                                            for v in s.coefs if v in vars_})),
                     tuple(sorted(v for v in (a.subs[-1].coefs if a.subs and a.subs[-1]
                                              is not None else {}) if v in vars_)))
                    for a in tree.accesses if inner in a.loops})
    return Tiling(tuple(lp.id for lp in band), tuple(lp.var for lp in band), par, reuse,
                  tuple(foot), tuple(lines))


def plan_tiling(tree: LoopTree, reps: list[LoopReport], aliases: AliasInfo,
                refused: list[str]) -> list[Tiling]:
    """The bands of ``tree`` that may be tiled (outermost bands first; a loop is in at most
    one band); why a band with reuse was refused goes to ``refused``."""
    out: list[Tiling] = []
    taken: set[int] = set()
    for lp in tree.loops:
        if lp.index in taken:
            continue
        band = _band(lp, tree.loops)
        if len(band) < 2:
            continue
        t = _plan_band(band, tree, reps, aliases, refused)
        if t is not None:
            out.append(t)
            taken |= {b.index for b in band}
    return out


# -- which bands the search is offered ------------------------------------------------------
def cache_bytes(level: int = 2) -> int:
    """This machine's data cache of ``level`` (1 or 2) per core in bytes (Linux sysfs; 32 KiB
    / 1 MiB when unknown, or ``$HETLAB_L1_BYTES`` / ``$HETLAB_L2_BYTES``)."""
    for k in range(6):
        base = f"/sys/devices/system/cpu/cpu0/cache/index{k}"
        try:
            with open(f"{base}/level") as fh:
                lvl = fh.read().strip()
            with open(f"{base}/type") as fh:
                kind = fh.read().strip()
            with open(f"{base}/size") as fh:
                text = fh.read().strip().upper()
        except OSError:
            continue
        if lvl != str(level) or kind == "Instruction":
            continue
        mult = {"K": 1024, "M": 1024 ** 2}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * mult
    return int(os.environ.get(f"HETLAB_L{level}_BYTES", 32768 if level == 1 else 1 << 20))


def l2_bytes() -> int:
    """:func:`cache_bytes` of L2."""
    return cache_bytes(2)


def reuse_span(t: Tiling, trips: Mapping[str, int], itemsize: Mapping[str, int]) -> int:
    """Bytes one iteration of the band's outermost loop touches (what lies between two uses
    of data that loop reuses): per array the trip counts of the inner band loops it moves
    with, × its item size, or × a 64-byte cache line when none of them moves its last
    subscript (a strided walk)."""
    inner = dict(zip(t.vars[1:], t.loops[1:], strict=True))
    per: dict[str, int] = {}
    for array, moved, last in t.footprint_lines:
        m = [v for v in moved if v in inner]
        n = 64 if m and not set(last) & set(m) else itemsize.get(array, 8)
        for v in m:
            n *= max(int(trips.get(inner[v], 1)), 1)
        per[array] = max(per.get(array, 0), n)
    return sum(per.values())


def working_set(t: Tiling, trips: Mapping[str, int], itemsize: Mapping[str, int]) -> int:
    """Bytes the band touches: per array, the product of the trip counts (``trips``: loop id
    → count) of the band loops its subscripts move with (the largest over its accesses) ×
    its item size (8 when not given); summed over the arrays.

    >>> t = Tiling(("L1", "L2"), ("i", "j"), (True, True), "", (("A", ("i", "j")),
    ...            ("x", ("j",))))
    >>> working_set(t, {"L1": 1000, "L2": 500}, {"A": 8})
    4004000
    """
    var_trip = {v: max(int(trips.get(k, 1)), 1) for k, v in zip(t.loops, t.vars, strict=True)}
    per: dict[str, int] = {}
    for array, moved in t.footprint:
        n = itemsize.get(array, 8)
        for v in moved:
            n *= var_trip.get(v, 1)
        per[array] = max(per.get(array, 0), n)
    return sum(per.values())


def tile_genes(tilings: list[Tiling], trips: Mapping[str, int], itemsize: Mapping[str, int],
               excluded: set[str], caches: tuple[int, int] | None = None) -> list[str]:
    """Gene bits of the bands worth searching: none of their loops in ``excluded`` (replaced
    by a function block), a working set above L2 and a reuse span (:func:`reuse_span`) above
    L1 (``caches``: (L1, L2) bytes; default this machine's); of those, the band of largest reuse
    span only (two bits per search). Below that, the data an outer
    iteration reuses is still in cache and tiling only adds loop overhead: not offered, so it
    costs the search nothing."""
    l1, l2 = (cache_bytes(1), cache_bytes(2)) if caches is None else caches
    spans = [(reuse_span(t, trips, itemsize), -k) for k, t in enumerate(tilings)
             if not set(t.loops) & excluded and working_set(t, trips, itemsize) > l2]
    best = max(spans, default=(0, 0))
    return tilings[-best[1]].genes() if best[0] > l1 else []


# -- the rewrite ----------------------------------------------------------------------------
def _bounds(node: ast.For) -> tuple[str, str] | None:
    it = node.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id in ("range", "prange") and 1 <= len(it.args) <= 3
            and not it.keywords and isinstance(node.target, ast.Name)):
        return None
    if len(it.args) == 3 and not (isinstance(it.args[2], ast.Constant)
                                  and it.args[2].value == 1):
        return None
    a = [ast.unparse(x) for x in it.args]
    return ("0", a[0]) if len(a) == 1 else (a[0], a[1])


def apply_tiling(func: ast.FunctionDef, t: Tiling, size: int,
                 nodes: Mapping[str, ast.For]) -> str | None:
    """Tile the band ``t`` of ``func`` (loops found by id in ``nodes``, possibly interchanged
    already) by ``size`` in place; the line for the source's comments, or None when the band
    is no longer a perfect chain (a block, a collapse or a chunked loop took part of it) or a
    band loop chosen for ``prange`` has a tile loop that would not be parallel."""
    band = [nodes.get(k) for k in t.loops]
    if any(n is None for n in band):
        return None
    chain_set = {id(n) for n in band}
    heads = [n for n in band if n is not None and not any(
        o is not n and o is not None and n in o.body for o in band)]
    if len(heads) != 1:
        return None
    chain = [heads[0]]
    while len(chain) < len(band):
        body = chain[-1].body
        if len(body) != 1 or id(body[0]) not in chain_set:
            return None
        chain.append(body[0])  # type: ignore[arg-type]
    par_of = {k: p for k, p in zip(t.loops, t.parallel_tile, strict=True)}
    parts = []
    for node in chain:
        b = _bounds(node)
        if b is None:
            return None
        key = getattr(node.iter, _ID, "")
        is_prange = node.iter.func.id == "prange"  # type: ignore[attr-defined]
        if is_prange and not par_of.get(key, False):
            return None
        parts.append((node, key, node.target.id, b, is_prange))  # type: ignore[attr-defined]
    pre, heads_src = [], []
    for depth, (_node, key, _var, (lo, hi), is_prange) in enumerate(parts):
        t_var, hi_var = f"_hl_t{key}", f"_hl_hi{key}"
        pre.append(f"{hi_var} = {hi}")
        ind = "    " * depth
        if is_prange:  # prange over tile numbers (a step of 1)
            heads_src.append(f"{ind}for _hl_b{key} in prange(({hi_var} - ({lo}) + {size - 1})"
                             f" // {size}):\n{ind}    {t_var} = {lo} + _hl_b{key} * {size}")
        else:
            heads_src.append(f"{ind}for {t_var} in range({lo}, {hi_var}, {size}):")
    text = "\n".join(pre + heads_src) + "\n"
    depth = len(parts)
    for k, (_node, key, var, (_lo, _hi), _p) in enumerate(parts):
        ind = "    " * (depth + k)
        text += (f"{ind}for {var} in range(_hl_t{key}, min(_hl_t{key} + {size}, "
                 f"_hl_hi{key})):\n")
    text += "    " * (2 * depth) + "pass\n"
    new = ast.parse(text).body
    loop: ast.stmt = new[-1]
    points = []
    while isinstance(loop, ast.For):
        points.append(loop)
        loop = loop.body[-1]
    points = points[-depth:]
    for (_node, key, *_), pt in zip(parts, points, strict=True):
        setattr(pt.iter, _ID, key)  # the point loop keeps the id (scalar replacement, skip)
    points[-1].body = chain[-1].body
    if not splice(func.body, chain[0], new):  # pragma: no cover - nodes of the same tree
        raise AssertionError("statement not found")
    par = [v for (_n, _k, v, _b, p) in parts if p]
    tail = f"; tile loop of {', '.join(par)} in parallel" if par else ""
    return t.describe(size) + tail
