"""Outlining: compile the loops of a function that cannot be compiled as a whole.

A function with a formatted ``print``, a dict, a ``try`` statement or a call numba lacks
outside its loops runs as written (:mod:`.fallback`). Its loops, cut out into functions of
their own (:mod:`hetlab.offload.front.outline` finds them), often compile; each is searched
like any function, and the function is rewritten to call their plans where the loops were,
the rest of it running in Python as written:

1. the function runs once on copies of the search's arguments, rewritten to record, when
   each loop is reached, the values of the names the loop reads (copies: the loop may
   change them): those are the outlined function's arguments, and the names the function
   reads after the loop its results;
2. each loop's function is searched on those arguments (verified against its own Python
   run; a loop whose search keeps it in Python, or whose arguments alias, is not outlined);
3. the rewritten function is verified against the search's expected outputs and timed
   against the function as written (interleaved rounds, :func:`confirm_times`); it is kept
   when it is faster by more than the noise margin.

A call of the outlined plan whose arguments an outlined loop's plan refuses (another rank,
numba cannot type them, arrays that alias) runs that loop's Python function instead, with a
RuntimeWarning naming the loop. Module-level names are read live by the rewritten function;
the loops' plans read them as their searches found them (numba freezes what it compiles),
except arrays, which plans pass per call.
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import math
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import HetlabError, InvalidInputError
from ..analysis.report import Report
from ..front.outline import (
    Segment,
    block_at,
    find_segments,
    progress_bars,
    segment_def,
    with_calls,
    with_records,
)
from ..front.source import FunctionSource, parse_def, source_of_text
from ..runtime.guard import array_leaves, overlap
from ..runtime.measure import confirm_times, copy_args, measure
from ..targets.base import Variant
from .ga import GAResult
from .plan import OutlinedLoop, Plan

__all__ = ["Outlining", "outline"]

_RECORDER = "__hl_record__"
#: a rewritten function this many times faster than the function as written is kept on the
#: first measurements (the interleaved rounds, 5 × repeats calls of a function that may run
#: for seconds in Python, decide only closer cases)
_CLEAR = 1.5
#: how deep in loops not outlined (each a run of the function) inner loops are looked for
_DEPTH = 3


@dataclass
class Outlining:
    """What outlining did: the plan (None when nothing was kept) and why, per loop."""

    plan: Plan | None
    notes: list[str] = field(default_factory=list)


def _unsupported(tree: ast.FunctionDef) -> str:
    """Why no loop of ``tree`` may be outlined ("" when they may)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.AsyncFunctionDef)):
            return "a generator or async function"
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return f"a {type(node).__name__.lower()} statement"
    return ""


def _define(tree: ast.FunctionDef, src: FunctionSource, extra: dict[str, Any],
            tag: str) -> Callable[..., Any]:
    """``tree`` defined as a function of the original's module (module names read live),
    seeing ``extra`` and the original's closure values as enclosing variables; defaults,
    keyword defaults and a bound method's ``self`` as the original's."""
    fn = src.fn
    tree = copy.deepcopy(tree)
    a = tree.args
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)  # set from fn below
    try:
        closure = dict(inspect.getclosurevars(fn).nonlocals)
    except (ValueError, TypeError):
        closure = {}
    outer = {**closure, **extra}
    factory = ast.FunctionDef(
        name="__hl_factory__", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(n) for n in outer], kwonlyargs=[], kw_defaults=[],
            defaults=[]), body=[tree, ast.Return(ast.Name(tree.name, ast.Load()))],
        decorator_list=[], returns=None)
    text = ast.unparse(ast.fix_missing_locations(ast.Module([factory], type_ignores=[])))
    filename = f"<hetlab.offload {tag} {src.name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scratch: dict[str, Any] = {}
    exec(compile(text, filename, "exec"), fn.__globals__, scratch)
    made = scratch["__hl_factory__"](*outer.values())
    made.__defaults__, made.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    made.__doc__ = fn.__doc__
    if isinstance(src.original, types.MethodType):
        return types.MethodType(made, src.original.__self__)
    return made


def _progress_kind(namespace: dict[str, Any]) -> Callable[[ast.expr], str]:
    """What a called name is among tqdm's progress bars (``"tqdm"``: a class iterating its
    first argument; ``"trange"``: ``tqdm(range(…))``; ``""``: something else), resolved in
    ``namespace``."""
    def resolve(node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            return namespace.get(node.id)
        if isinstance(node, ast.Attribute):
            return getattr(resolve(node.value), node.attr, None)
        return None

    def kind(func: ast.expr) -> str:
        value = resolve(func)
        if not (getattr(value, "__module__", None) or "").startswith("tqdm"):
            return ""
        if getattr(value, "__name__", "") == "trange":
            return "trange"
        return "tqdm" if isinstance(value, type) else ""

    return kind


def _is_code(value: Any) -> bool:
    """A module, class or callable (an outlined loop sees it as a name, not an argument)."""
    return isinstance(value, types.ModuleType) or (callable(value)
                                                   and not hasattr(value, "__array__"))


@dataclass
class _Recording:
    """Per segment index: the values its loop reads when first reached (copied then), why
    they could not be recorded, and the seconds that first run of the loop took in Python."""

    entries: dict[int, dict[str, Any]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    python_s: dict[int, float] = field(default_factory=dict)


def _record(src: FunctionSource, tree: ast.FunctionDef, segments: list[Segment],
            args: tuple) -> _Recording:
    """Run the function once on copies of ``args``, recording per segment the values of
    the names it reads when its loop is first reached, and how long that loop then ran."""
    wanted = {s.index: tuple(dict.fromkeys([*s.reads, *(s.bare.reads if s.bare else ())]))
              for s in segments}
    rec = _Recording()
    started: dict[int, float] = {}

    def record(index: int, frame: dict[str, Any] | None) -> None:
        if frame is None:  # the loop is done
            if index in started and index not in rec.python_s:
                rec.python_s[index] = time.perf_counter() - started[index]
            return
        if index in rec.entries or index in rec.failed:
            return
        values = {n: frame[n] for n in wanted[index] if n in frame}
        arrays: list[tuple[str, np.ndarray]] = []
        for n, v in values.items():
            array_leaves(v, n, arrays)
        shared = next(((a, b) for k, (a, x) in enumerate(arrays) for b, y in arrays[k + 1:]
                       if overlap(x, y)), None)
        if shared is not None:  # copies would not share it: the search would not see it
            rec.failed[index] = (f"its inputs {shared[0]} and {shared[1]} share memory (the "
                                 "compiled loop assumes arrays do not alias)")
            return
        try:
            rec.entries[index] = {n: v if _is_code(v) else copy.deepcopy(v)
                                  for n, v in values.items()}
        except Exception as exc:  # an object deepcopy refuses
            rec.failed[index] = f"its inputs cannot be copied ({type(exc).__name__}: {exc})"
            return
        started[index] = time.perf_counter()

    recording = _define(with_records(tree, segments, _RECORDER), src, {_RECORDER: record},
                        "recording")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recording(*copy_args(args))
    return rec


def _falls_back(compiled: Callable[..., Any], python: Callable[..., Any],
                name: str) -> Callable[..., Any]:
    """``compiled``, running ``python`` (with a RuntimeWarning) on arguments its plan
    refuses (another rank or kind than searched)."""
    def call(*args: Any) -> Any:
        try:
            return compiled(*args)
        except InvalidInputError as exc:
            warnings.warn(f"offload: the outlined loop {name} ran in Python ({exc})",
                          RuntimeWarning, stacklevel=2)
            return python(*args)

    return call


def outline(report: Report, args: tuple, expected: tuple, reason: str, as_written_s: float,
            *, search_loop: Callable[[FunctionSource, tuple], Plan], repeats: int,
            warmup: int, noise: float, target: str) -> Outlining:
    """Try to run ``report``'s function with its loops compiled alone (module docstring).

    Parameters
    ----------
    report : Report
        The analysis of a function :func:`~hetlab.offload.search` runs as written.
    args, expected : tuple
        The search's full positional arguments and the function's outputs on them.
    reason : str
        Why the function as a whole runs as written (kept as ``plan.fallback``).
    as_written_s : float
        Median time of the function as written (s).
    search_loop : callable
        ``search_loop(source, args) -> Plan``: the search of one outlined loop's function.
    repeats, warmup : int
        Timed and untimed calls per measurement.
    noise : float
        Fraction by which the rewritten function must beat the original to be kept.
    target : str
        The target recorded as ``plan.target``.

    Returns
    -------
    Outlining
        ``plan`` (None when no loop was outlined or the rewritten function was not faster)
        and one note per loop or decision.
    """
    src = report.source
    tree = parse_def(src.text, src.name)
    why = _unsupported(tree)
    segments = find_segments(tree)
    if why or not segments:
        return Outlining(None, [f"loops not outlined: {why}"] if why and segments else [])
    notes: list[str] = []
    calls: dict[int, tuple[Segment, str, list[str]]] = {}
    extra: dict[str, Any] = {}
    loops: list[OutlinedLoop] = []
    index = len(segments) + 1  # of the next segment found
    for _ in range(_DEPTH):  # the loops in a loop not outlined are tried next
        usable = [seg for seg in segments if not seg.refusal]
        rec = _record(src, tree, usable, args) if usable else _Recording()
        entries, failed = rec.entries, rec.failed
        inner: list[Segment] = []
        for seg in segments:
            python_s = rec.python_s.get(seg.index, math.inf)
            done = (_outline_one(src, tree, seg, entries.get(seg.index), python_s, noise,
                                 search_loop) if not seg.refusal else seg.refusal)
            if isinstance(done, str) and seg.bare is not None and seg.index in entries:
                alone = _outline_one(src, tree, seg.bare, entries[seg.index], python_s, noise,
                                     search_loop)
                if not isinstance(alone, str):  # its assignments were what numba refused
                    seg, done = seg.bare, alone
            if isinstance(done, str):
                notes.append(f"loop at line {src.first_line + seg.line - 1} not outlined: "
                             f"{failed.get(seg.index, done)}")
                if seg.index in entries or seg.index in failed or seg.refusal:  # reachable
                    found = find_segments(tree, (*seg.path, (seg.loop, "body")), first=index)
                    inner, index = inner + found, index + len(found)
                continue
            callee = f"__hl_loop{seg.index}__"
            calls[seg.index] = (seg, callee, done[1])
            extra[callee], loop = done[0], done[2]
            loops.append(loop)
        segments = inner
        if not segments:
            break
    loops.sort(key=lambda o: o.line)
    if not calls:
        return Outlining(None, notes)
    rewritten = with_calls(tree, calls)
    fn = _define(rewritten, src, extra, "outlined")
    m = measure(fn, args, expected, repeats=repeats, warmup=warmup)
    if not m.verified:
        notes.append(f"outlined loops not kept: {m.status} (error {m.error:.3g})")
        return Outlining(None, notes)
    before, after = as_written_s, m.time_s
    if not after * _CLEAR < before:  # close: measured again back to back
        times = confirm_times({"as written": (src.call, None), "outlined": (fn, None)}, args,
                              repeats)
        before, after = times.get("as written", math.nan), times.get("outlined", math.inf)
    if not after < before * (1 - noise):
        notes.append(f"outlined loops not kept: {after * 1e3:.3g} ms vs {before * 1e3:.3g} ms "
                     "as written")
        return Outlining(None, notes)
    source = (f"# hetlab.offload: {src.name} runs as written ({reason}) but for its loops "
              f"at lines {', '.join(str(o.line) for o in loops)}, compiled alone\n"
              + ast.unparse(rewritten) + "\n"
              + "".join(f"\n# {o.name}: {o.label()}\n{o.plan.source()}" for o in loops))
    variant = Variant(src.name, "python", (), source, {}, _compiled=fn)
    plan = Plan(report, target, [], (), {(): m}, before, math.nan,
                GAResult(best=(), fitness=before / after, evaluations=0), None,
                variants={(): variant}, fallback=reason, outlined=loops)
    plan.confirmed = {(): after}
    plan.notes = [f"runs as written: {reason}",
                  *(f"loop at line {o.line} outlined into {o.name}: {o.plan.summary()}"
                    .splitlines()[0] for o in loops),
                  *(f"loop at line {o.line} outlined without its progress bar at line "
                    f"{', '.join(map(str, o.progress_dropped))} (the compiled loop iterates "
                    "what the bar wrapped)" for o in loops if o.progress_dropped), *notes]
    return Outlining(plan, notes)


def _outline_one(src: FunctionSource, tree: ast.FunctionDef, seg: Segment,
                 entry: dict[str, Any] | None, python_s: float, noise: float,
                 search_loop: Callable[[FunctionSource, tuple], Plan]
                 ) -> str | tuple[Callable[..., Any], list[str], OutlinedLoop]:
    """The callable standing for ``seg``, its inputs and its record; or why it stays Python.

    ``entry``: the values recorded when the function reached the loop (None: never);
    ``python_s``: how long the loop ran there in Python (s). A loop whose compiled call,
    overheads included, is not faster than that (a short loop inside a long one) stays
    Python."""
    if entry is None:
        return "the search's arguments never reach it"
    unbound = [n for n in seg.live_out if n not in entry and n not in seg.bound_first]
    if unbound:
        return f"{', '.join(unbound)} may be unbound after it (bound in the loop only)"
    at = src.first_line + seg.line - 1
    inputs = [n for n in seg.reads if n in entry and not _is_code(entry[n])]
    values = tuple(entry[n] for n in inputs)
    seen = {**src.namespace, **{n: v for n, v in entry.items() if _is_code(v)}}
    name = f"{src.name}_loop{at}"
    bars = _progress_kind(seen)
    text = segment_def(tree, seg, name, inputs, progress=bars)
    python: dict[str, Any] = dict(seen)
    exec(compile(text, f"<hetlab.offload outlined {name}>", "exec"), python)
    block = block_at(tree, seg.path)
    start = src.first_line + block[seg.members[0]].lineno - 1  # the def one line above
    try:
        plan = search_loop(source_of_text(python[name], text, seen, start - 1), values)
    except (InvalidInputError, HetlabError) as exc:
        return str(exc).splitlines()[0][:200]
    if plan.fallback:
        return plan.fallback
    call = _falls_back(plan.compile(on_alias="serial"), python[name], name)
    timed = measure(call, values, None, repeats=5, warmup=1)
    if not timed.time_s < python_s * (1 - noise):
        return (f"its compiled call takes {timed.time_s * 1e6:.3g} µs with its overheads, the "
                f"loop {python_s * 1e6:.3g} µs in Python")
    node = block[seg.loop]
    dropped = [src.first_line + b.lineno - 1
               for b in progress_bars([block[m] for m in seg.members], bars)]
    return (call, inputs,
            OutlinedLoop(at, src.first_line + (node.end_lineno or node.lineno) - 1, name, plan,
                         tuple(dropped)))
