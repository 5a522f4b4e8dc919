"""The transformations applied to a copy of the function's AST (the numba variant's source).

:func:`tag_loops` marks each ``for`` with its loop id (on the loop's header, so the id moves
with the header when loops are interchanged); :func:`apply_transforms` then distributes and
permutes the bands of :class:`~.plan.Interchange`, runs the chosen privatized loops over chunks
(``prange`` over one chunk per thread, a private copy of each array per chunk, the copies summed
or the last one copied back after), and replaces repeated or loop-invariant array reads in
innermost loops by scalars (the element the previous iteration wrote, too: :mod:`.carry`).
It returns one line per transformation made, which the generated
source carries as comments.

Why chunks for array reductions: a ``(chunks, *y.shape)`` buffer indexed by the chunk id keeps
the loop body as written (the inner ``j`` loop stays unit-stride and vectorizable) and numba
compiles the ``prange`` over chunks as a plain parallel loop with no atomics; moving the
reduction loop inside instead (``for j: for i``) would make the inner loop walk ``A`` by
columns.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...front.walk import range_call_args
from .carry import carry_previous
from .peel import peel
from .plan import Interchange, Transforms
from .privatize import Privatization
from .statements import Rename, container, splice
from .tiling import _ID, apply_tiling
from .unsigned import unsigned_indices, unsigned_subscripts

if TYPE_CHECKING:
    from ..aliases import AliasInfo

__all__ = ["tag_loops", "apply_transforms", "loop_id"]


def _fors(stmts: list[ast.stmt]) -> Iterator[ast.For]:
    for s in stmts:
        if isinstance(s, ast.For):
            yield s
            yield from _fors(s.body)
        elif isinstance(s, ast.While):
            yield from _fors(s.body)
        elif isinstance(s, ast.If):
            yield from _fors(s.body)
            yield from _fors(s.orelse)


def tag_loops(func: ast.FunctionDef, ids: list[str]) -> dict[str, ast.For]:
    """Mark each ``for`` of ``func`` (pre-order, as the analysis numbers them) with its id."""
    out = {}
    for key, node in zip(ids, _fors(func.body), strict=True):
        setattr(node.iter, _ID, key)
        out[key] = node
    return out


def loop_id(node: ast.For) -> str | None:
    """The id :func:`tag_loops` gave the header now on ``node`` (None: a generated loop)."""
    return getattr(node.iter, _ID, None)


def _splice(func: ast.FunctionDef, node: ast.stmt, new: list[ast.stmt]) -> None:
    if not splice(func.body, node, new):  # pragma: no cover - nodes come from the same tree
        raise AssertionError("statement not found")


def _live(func: ast.FunctionDef) -> dict[str, ast.For]:
    return {k: n for n in _fors(func.body) if (k := loop_id(n)) is not None}


# -- interchange ----------------------------------------------------------------------------
def _interchange(func: ast.FunctionDef, x: Interchange, nodes: dict[str, ast.For]) -> bool:
    band = [nodes.get(k) for k in x.loops]
    if any(n is None for n in band):
        return False  # a function block replaced part of the band
    chain: list[ast.For] = [n for n in band if n is not None]
    for p in range(len(chain) - 2, -1, -1):
        if x.loops[p] not in x.distributed:
            continue
        node, child = chain[p], chain[p + 1]
        k = next(i for i, s in enumerate(node.body) if s is child)
        parts = []
        for group in (node.body[:k], node.body[k + 1:]):
            parts.append(ast.For(copy.deepcopy(node.target), copy.deepcopy(node.iter), group,
                                 [], None) if group else None)
        node.body = [child]
        _splice(func, node, [n for n in (parts[0], node, parts[1]) if n is not None])
    heads = [(n.target, n.iter) for n in chain]
    for n, o in zip(chain, x.order, strict=True):
        n.target, n.iter = heads[o]
    return True


def _hands_over(x: Interchange, parallel: tuple[str, ...], collapsible: frozenset[str]) -> bool:
    """Whether the interchange ``x``, which would move the chosen parallel loop inward, may
    run with the loop it brings outermost in parallel instead: the chosen loop is the band's
    outermost and the only chosen one, no loop of the band is distributed, and every loop of
    the band carries nothing (``collapsible``: verdict parallel) — then every dependence is
    ``=`` on every loop of the band, so any order is legal and each loop may run in parallel
    in it."""
    return not x.distributed and x.order[0] != 0 \
        and [k for k in x.loops if k in parallel] == [x.loops[0]] \
        and all(k in collapsible for k in x.loops)


def _prange_outermost(x: Interchange, nodes: dict[str, ast.For]) -> str:
    """After :func:`_interchange` of a band handed over (:func:`_hands_over`): the ``prange``
    moves from the chosen loop's header (now inside) to the band's outermost header."""
    chain = [nodes[k] for k in x.loops]  # the nodes keep their depth; the headers moved
    for n in chain:
        assert isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Name)
        n.iter.func = ast.Name("prange" if n is chain[0] else "range", ast.Load())
    return (f"{x.loops[0]}/{x.loops[x.order[0]]}: parallel loop handed from "
            f"{x.vars[0]} to {x.vars[x.order[0]]}, the band's outermost after the interchange "
            "(every loop of the band carries nothing)")


# -- privatization --------------------------------------------------------------------------
class _Swap(ast.NodeTransformer):
    """Replaces the element reads with the given ids by a scalar name."""

    def __init__(self, by_id: dict[int, str]) -> None:
        self.by_id = by_id

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        name = self.by_id.get(id(node))
        if name is not None:
            return ast.copy_location(ast.Name(name, ast.Load()), node)
        return self.generic_visit(node)


def _chunked(node: ast.For, privs: list[Privatization]) -> list[ast.stmt]:
    """``node`` as a ``prange`` over chunks with private copies (see the module docstring)."""
    assert isinstance(node.iter, ast.Call) and isinstance(node.target, ast.Name)
    args = [ast.unparse(a) for a in node.iter.args]
    lower, step = ("0", "1") if len(args) == 1 else (args[0], args[2] if len(args) == 3 else "1")
    tag = loop_id(node) or "L"
    T, nc, c, k = f"_hl_T{tag}", f"_hl_nc{tag}", f"_hl_c{tag}", f"_hl_k{tag}"
    pre = [f"{T} = len(range({', '.join(args)}))",
           f"{nc} = max(1, min(_hl_threads(), {T}))"]
    bind, after, names = [], [], {}
    for p in privs:
        buf, loc = f"_hl_{p.array}_{tag}", f"_hl_{p.array}_{tag}_c"
        names[p.array] = loc
        shape = f"({nc},) + {p.array}.shape"
        if p.kind == "reduction":
            pre.append(f"{buf} = _hl_np.zeros({shape}, {p.array}.dtype)")
            after.append(f"for {c} in range({nc}):\n    {p.array} += {buf}[{c}]")
        else:
            pre.append(f"{buf} = _hl_np.empty({shape}, {p.array}.dtype)")
            if p.copy_out:
                pre.append(f"for {c} in range({nc}):\n    {buf}[{c}] = {p.array}")
                after.append(f"if {T} > 0:\n    {p.array}[:] = {buf}[{nc} - 1]")
        bind.append(f"{loc} = {buf}[{c}]")
    body = [Rename(names).visit(s) for s in node.body]
    loop = ast.parse(
        f"for {c} in prange({nc}):\n" + "".join(f"    {b}\n" for b in bind)
        + f"    for {k} in range({c} * {T} // {nc}, ({c} + 1) * {T} // {nc}):\n"
        f"        {node.target.id} = {lower} + {k} * {step}\n").body[0]
    assert isinstance(loop, ast.For) and isinstance(loop.body[-1], ast.For)
    loop.body[-1].body.extend(body)
    return [*ast.parse("\n".join(pre)).body, loop, *ast.parse("\n".join(after)).body]


# -- collapse ---------------------------------------------------------------------------------
def _range_parts(it: ast.expr) -> tuple[str, str, str] | None:
    """``(lower, args text, step)`` of ``range(...)``/``prange(...)`` with a constant step."""
    found = range_call_args(it, positive_step=False)
    if found is None:
        return None
    a = [ast.unparse(x) for x in found]
    return ("0" if len(a) == 1 else a[0]), ", ".join(a), (a[2] if len(a) == 3 else "1")


#: the collapsed form runs only when the outer loop has fewer iterations than this many per
#: thread; otherwise the nest as written (rows in parallel, the inner loop vectorizable)
ROWS_PER_THREAD = 4


def _collapse(func: ast.FunctionDef, outer: ast.For, parallel_ok: set[str]) -> str | None:
    """``for i in prange: for j in range: <loops>`` → one ``prange`` over the ``(i, j)`` pairs
    when both loops carry nothing, ``j``'s bounds do not read ``i`` and the body holds a loop
    (the div/mod per pair is then paid outside the innermost loop) — chosen at run time only
    when ``i`` has fewer than :data:`ROWS_PER_THREAD` iterations per thread: with more, the
    collapsed form loses the inner loop's vectorization, so the nest as written runs (the
    fifth probe's 3×3 convolutions over 600 rows: 1.06× and 0.79× serial collapsed, 2.42× and
    1.49× with their rows in parallel, ``benchmarks/offload_collapse_ab.py``, results in
    ``benchmarks/results/quiet-2026-12-02-s10/offload_collapse_ab.txt``)."""
    if getattr(outer, "_hl_kept", False) or len(outer.body) != 1 \
            or not isinstance(outer.body[0], ast.For):
        return None
    inner = outer.body[0]
    ko, ki = loop_id(outer), loop_id(inner)
    if ko not in parallel_ok or ki not in parallel_ok:
        return None
    if not any(isinstance(n, ast.For) for s in inner.body for n in ast.walk(s)):
        return None
    if not (isinstance(outer.target, ast.Name) and isinstance(inner.target, ast.Name)):
        return None
    po, pi = _range_parts(outer.iter), _range_parts(inner.iter)
    if po is None or pi is None or any(
            isinstance(n, ast.Name) and n.id == outer.target.id for n in ast.walk(inner.iter)):
        return None
    n_o, n_i, ij = f"_hl_n{ko}", f"_hl_n{ki}", f"_hl_{ko}{ki}"
    text = (f"{n_o} = len(range({po[1]}))\n{n_i} = len(range({pi[1]}))\n"
            f"if {n_o} < {ROWS_PER_THREAD} * _hl_threads():\n"
            f"    for {ij} in prange({n_o} * {n_i}):\n"
            f"        {outer.target.id} = {po[0]} + {ij} // {n_i} * {po[2]}\n"
            f"        {inner.target.id} = {pi[0]} + {ij} % {n_i} * {pi[2]}\n"
            "else:\n    pass\n")
    new = ast.parse(text).body
    branch = new[-1]
    assert isinstance(branch, ast.If) and isinstance(branch.body[0], ast.For)
    branch.body[0].body.extend(copy.deepcopy(inner.body))
    _splice(func, outer, new)
    branch.orelse = [outer]  # the nest as written, never collapsed again
    outer._hl_kept = inner._hl_kept = True  # type: ignore[attr-defined]
    return (f"{ko}/{ki}: collapsed {outer.target.id}, {inner.target.id} into one parallel "
            f"loop over their pairs when {outer.target.id} has fewer than {ROWS_PER_THREAD} "
            "iterations per thread")


# -- scalar replacement -----------------------------------------------------------------------
def _stores(stmts: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """Plain names stored, and arrays whose elements are stored, anywhere in ``stmts``."""
    names, arrays = set(), set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    arrays.add(base.id)
            if isinstance(n, ast.Call):  # an argument a call may write: not replaced
                arrays |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return names, arrays


def _plain_reads(stmt: ast.stmt) -> Iterator[ast.Subscript]:
    """Element reads ``X[...]`` that run whenever ``stmt`` runs (not under a branch)."""
    todo: list[ast.AST] = [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.stmt)) and n is not stmt:
            continue
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) \
                and isinstance(n.value, ast.Name) \
                and not any(isinstance(m, ast.Slice) for m in ast.walk(n.slice)):
            yield n
            continue
        todo.extend(ast.iter_child_nodes(n))


def _nonempty(node: ast.For) -> str | None:
    it = node.iter
    if not isinstance(it, ast.Call) or not 1 <= len(it.args) <= 3:
        return None
    a = [ast.unparse(x) for x in it.args]
    if len(a) == 1:
        return f"0 < {a[0]}"
    if len(a) == 2:
        return f"{a[0]} < {a[1]}"
    st = it.args[2]
    if isinstance(st, ast.Constant) and isinstance(st.value, int) and st.value:
        return f"{a[0]} < {a[1]}" if st.value > 0 else f"{a[0]} > {a[1]}"
    return None


def _scalar_replace(func: ast.FunctionDef, node: ast.For, aliases: AliasInfo,
                    counter: list[int]) -> str | None:
    if any(isinstance(n, (ast.For, ast.While, ast.Break, ast.Continue, ast.Return))
           for s in node.body for n in ast.walk(s)) or not isinstance(node.target, ast.Name):
        return None
    var = node.target.id
    names, arrays = _stores(node.body)
    names.add(var)
    arrays |= names
    groups: dict[str, list[ast.Subscript]] = {}
    for s in node.body:
        for r in _plain_reads(s):
            x = r.value.id  # type: ignore[attr-defined]
            used = {m.id for m in ast.walk(r.slice) if isinstance(m, ast.Name)}
            if x in arrays or used & (names - {var}) or any(
                    aliases.may_alias(x, w) for w in arrays):
                continue
            groups.setdefault(ast.unparse(r), []).append(r)
    hoist, once = [], []
    for text, reads in groups.items():
        used = {m.id for m in ast.walk(reads[0].slice) if isinstance(m, ast.Name)}
        if var not in used:
            hoist.append((text, reads))
        elif len(reads) > 1:
            once.append((text, reads))
    cond = _nonempty(node)
    if cond is None:
        hoist = []
    if not hoist and not once:
        return None
    made, by_id = [], {}
    for text, reads in hoist + once:
        name = f"_hl_r{counter[0]}"
        counter[0] += 1
        by_id.update({id(r): name for r in reads})
        made.append((name, text))
    node.body = [_Swap(by_id).visit(s) for s in node.body]
    n_h = len(hoist)
    node.body[:0] = [ast.parse(f"{nm} = {t}").body[0] for nm, t in made[n_h:]]
    if n_h:
        guard = ast.parse(f"if {cond}:\n" + "".join(
            f"    {nm} = {t}\n" for nm, t in made[:n_h]) + "    pass").body[0]
        assert isinstance(guard, ast.If)
        guard.body[-1:] = [node]
        _splice(func, node, [guard])
    parts = []
    if n_h:
        parts.append(f"{', '.join(t for _, t in made[:n_h])} read once before the loop")
    if len(made) > n_h:
        parts.append(f"{', '.join(t for _, t in made[n_h:])} read once per iteration")
    return f"{loop_id(node)} ({var}): scalar replacement, " + "; ".join(parts)


def apply_transforms(func: ast.FunctionDef, xf: Transforms, aliases: AliasInfo, *,
                     chunked: tuple[str, ...] = (), fixed: bool = True,
                     skip: frozenset[str] = frozenset(),
                     parallel: tuple[str, ...] = (),
                     collapsible: frozenset[str] = frozenset(),
                     tiles: dict[str, int] | None = None,
                     peeled: tuple[str, ...] = ()) -> list[str]:
    """Apply ``xf`` to ``func`` (tagged by :func:`tag_loops`, modified in place).

    ``chunked``: ids of loops that run in parallel with their privatizations; ``fixed``:
    also the fixed passes (interchange, scalar replacement); ``skip``: ids of loops whose
    bodies must not be touched (unsupported ones); ``parallel``: the loops chosen for
    ``prange`` — an interchange that would move one of them deeper (one parallel region per
    iteration of the loop put outside it) is left out; ``collapsible``: loops that carry no
    dependence and no reduction (a chosen one and its parallel inner loop are collapsed into
    one ``prange``); ``tiles``: band root id → tile size of the bands of ``xf.tilings`` to
    tile (the search's gene, :mod:`.tiling`; applied after the interchange); ``peeled``: ids
    of chosen loops run in parallel but for their last iteration (``xf.lastprivate``,
    :mod:`.peel`). Returns one line per change.
    """
    notes: list[str] = []
    nodes = _live(func)
    rebuilt = (*chunked, *peeled)  # loops rewritten whole: never interchanged, tiled or collapsed
    if fixed:
        for x in xf.interchanges:
            if set(x.loops) & (set(rebuilt) | skip):
                continue
            handed = False
            if any(x.loops[o] in parallel and p > o for p, o in enumerate(x.order)):
                handed = _hands_over(x, parallel, collapsible)
                if not handed:
                    notes.append(f"{'/'.join(x.loops)}: interchange left out (it would move "
                                 "a parallel loop inward)")
                    continue
            if _interchange(func, x, nodes):
                notes.append(str(x))
                if handed:
                    notes.append(_prange_outermost(x, nodes))
    for t in xf.tilings:
        size = (tiles or {}).get(t.loops[0])
        if size is None:
            continue
        if set(t.loops) & (set(rebuilt) | skip):
            notes.append(f"{'/'.join(t.loops)}: tiling left out (a loop of the band runs "
                         "over chunks or is not supported)")
            continue
        line = apply_tiling(func, t, size, _live(func))
        notes.append(line if line is not None else
                     f"{'/'.join(t.loops)}: tiling left out (the band is no longer a perfect "
                     "nest here, or a parallel loop's tile loop would carry a dependence)")
    if fixed:
        ok = set(collapsible) - set(rebuilt)
        for node in list(_fors(func.body)):
            it = node.iter
            if container(func.body, node) is None:
                continue  # the inner loop of a pair collapsed already
            if loop_id(node) in parallel and isinstance(it, ast.Call) and isinstance(
                    it.func, ast.Name) and it.func.id == "prange":
                line = _collapse(func, node, ok)
                if line is not None:
                    notes.append(line)
    for key in rebuilt:
        node = _live(func).get(key)
        if node is None:
            continue
        if key in peeled:
            _splice(func, node, peel(node, xf.lastprivate[key], key))
            notes.append(f"{key}: last iteration run after the others (its "
                         f"{', '.join(xf.lastprivate[key])} read after the loop)")
        else:
            _splice(func, node, _chunked(node, xf.private[key]))
            notes += [str(p) for p in xf.private[key]]
    if fixed:
        counter, carried = [0], [0]
        for node in list(_fors(func.body)):
            key = loop_id(node)
            if key is None or key in skip or any(isinstance(s, ast.For) for s in node.body):
                continue
            holder = container(func.body, node)
            if holder is not None:
                line = carry_previous(func, node, holder, carried, key)
                if line is not None:
                    notes.append(line)
            line = _scalar_replace(func, node, aliases, counter)
            if line is not None:
                notes.append(line)
        notes += unsigned_indices(func)
        notes += unsigned_subscripts(func)
    return notes
