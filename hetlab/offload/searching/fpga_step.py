"""The FPGA step of ``offload.search``: last in the 2020 paper's order, high-intensity nests only.

Genes: per candidate nest one bit (run it as an FPGA kernel) and, when its innermost loop is
parallel, two bits for the ``UNROLL`` factor (1, 2, 4, 8). A gene's functional run (cached by
the set of nests) is the FPGA variant on top of the CPU plan's loops outside those nests,
verified against the original; its fitness is serial-njit time / **modeled** time (host part
measured + kernels modeled, :mod:`hetlab.offload.targets.fpga.variant`). A kernel that does not fit
the board (BRAM, DSP estimates) or fails verification scores 0. Small gene counts are searched
exhaustively, larger ones by the GA.
"""

from __future__ import annotations

import ast
import dataclasses
import statistics
import traceback
from dataclasses import dataclass, field
from typing import Any

from ...bench import _timed
from ..analysis.report import Report
from ..runtime.measure import Measurement, copy_args, outputs_of, verify
from ..targets.base import Target
from ..targets.fpga.hls import NotTranslatable, kernel_source
from ..targets.fpga.nests import Nest, find_nests
from ..targets.fpga.variant import (
    FpgaVariant,
    _ids,
    _leaves,
    _verdicts,
    fits,
    fpga_variant,
    model_nest,
)
from .ga import GAResult, exhaustive_search, genetic_search
from .plan import Plan

__all__ = ["FpgaTrial", "fpga_step", "UNROLLS"]

UNROLLS = (1, 2, 4, 8)


@dataclass
class FpgaTrial:
    """The FPGA step's outcome: nests with their verdicts, genes, measurements, best."""

    nests: list[Nest]
    genes: list[str] = field(default_factory=list)
    measurements: dict[tuple[int, ...], Measurement] = field(default_factory=dict)
    variants: dict[tuple[int, ...], FpgaVariant] = field(default_factory=dict)
    best: tuple[int, ...] = ()
    ga: GAResult | None = None
    exhaustive: GAResult | None = None
    #: modeled kernel time per call (``ModeledTime``) of the best gene's nests
    models: dict[str, Any] = field(default_factory=dict)
    #: nest root → "fpga kernel, unroll U" or why it was not run
    outcome: dict[str, str] = field(default_factory=dict)
    #: the HLS C++ of every candidate nest tried (its best unroll factor), chosen or not
    kernels: str = ""
    #: nest root → modeled time of one kernel call at its best unroll factor (ModeledTime)
    tried_models: dict[str, Any] = field(default_factory=dict)


def _decode(gene: tuple[int, ...], layout: list[tuple[Nest, int]]) -> dict[str, int]:
    """Gene → {nest root: unroll factor} of the nests switched on."""
    out, k = {}, 0
    for nest, nbits in layout:
        on = gene[k]
        u = 1
        if nbits == 3:
            u = UNROLLS[gene[k + 1] * 2 + gene[k + 2]]
        if on:
            out[nest.root] = u
        k += nbits
    return out


def fpga_step(report: Report, args: tuple, expected: tuple, serial: Measurement,
              nests: list[Nest], *, cpu_loops: tuple[str, ...], blocks: tuple[str, ...],
              board: str, repeats: int, warmup: int, opts: dict[str, Any],
              exhaustive: bool | None) -> FpgaTrial:
    """Search which candidate nests to run as FPGA kernels, and their unroll factors."""
    trial = FpgaTrial(nests)
    cands = []
    for n in nests:
        if not n.candidate:
            trial.outcome[n.root] = n.why
            continue
        inside_blocks = {k for b in blocks for k in report.block(b).loops} & set(n.loops)
        if inside_blocks:
            trial.outcome[n.root] = "not tried: replaced by a function block on the CPU"
            continue
        try:
            _translatable(report, n)
        except NotTranslatable as exc:
            n.candidate, n.why = False, f"not an FPGA candidate: {exc}"
            trial.outcome[n.root] = n.why
            continue
        cands.append(n)
    if not cands:
        return trial
    verdicts = {lp.id: lp.verdict for lp in report.loops}
    layout = [(n, 3 if _parallel_leaf(n, report, verdicts) else 1) for n in cands]
    trial.genes = [g for n, b in layout for g in ([n.root] if b == 1 else
                                                   [n.root, f"{n.root}:u2", f"{n.root}:u4"])]
    functional: dict[frozenset[str], tuple[FpgaVariant, Measurement, list[float],
                                           list[list[int]]]] = {}

    def run(on: dict[str, int]) -> tuple[FpgaVariant, Measurement, list[float],
                                         list[list[int]]]:
        key = frozenset(on)
        if key not in functional:
            chosen = [n for n in cands if n.root in on]
            drop = {k for n in chosen for k in n.loops} | _enclosing(report, chosen)
            v = fpga_variant(report, chosen, {r: 1 for r in on},
                             cpu_loops=tuple(k for k in cpu_loops if k not in drop),
                             blocks=blocks, board=board)
            functional[key] = _measure(v, args, expected, repeats, warmup)
        return functional[key]

    def evaluate(gene: tuple[int, ...]) -> Measurement:
        on = _decode(gene, layout)
        canon = _encode(on, layout)
        if canon in trial.measurements:
            return trial.measurements[canon]
        if not on:
            trial.measurements[canon] = serial
            return serial
        v, m, host_s, calls = run(on)
        out = Measurement(m.status, [], m.first_call_s, m.error, m.verified, source="modeled")
        chosen = [n for n in cands if n.root in on]
        why = [f"{n.root}: {w}" for n in chosen if (w := fits(report, n, on[n.root], board))]
        if why:
            out.status, out.verified = "over resources: " + "; ".join(why), False
        elif m.verified and host_s:
            ids, verdicts = _ids(report), _verdicts(report)
            src = "\n".join(kernel_source(report.name, n, ids, verdicts, on[n.root])
                            for n in chosen)
            v2 = dataclasses.replace(v, source=src, unroll=dict(on))
            per = [model_nest(report, n, on[n.root], board).total_s for n in chosen]
            out.times_s = [h + sum(c * t for c, t in zip(cs, per, strict=True))
                           for h, cs in zip(host_s, calls, strict=True)]
            trial.variants[canon] = v2
        trial.measurements[canon] = out
        return out

    def fitness(gene: tuple[int, ...]) -> float:
        m = evaluate(gene)
        return serial.time_s / m.time_s if m.verified and m.times_s else 0.0

    n_bits = len(trial.genes)
    trial.ga = genetic_search(n_bits, fitness, **opts)
    do_all = n_bits <= 6 if exhaustive is None else exhaustive
    if do_all:
        trial.exhaustive = exhaustive_search(n_bits, fitness, cache=trial.ga.cache)
    final = trial.exhaustive or trial.ga
    trial.best = _encode(_decode(final.best, layout), layout)
    best_on = _decode(trial.best, layout)
    if trial.best in trial.variants:
        trial.models = trial.variants[trial.best].models()
    ids, verdicts = _ids(report), _verdicts(report)
    texts = []
    for n in cands:
        ok = {g: m for g, m in trial.measurements.items()
              if _decode(g, layout).get(n.root) and m.verified and m.times_s}
        g = min(ok, key=lambda g: ok[g].time_s) if ok else None
        u = _decode(g, layout)[n.root] if g is not None else 1
        texts.append(kernel_source(report.name, n, ids, verdicts, u))
        trial.tried_models[n.root] = model_nest(report, n, u, board)
    trial.kernels = "\n".join(texts)
    for n in cands:
        if n.root in best_on:
            trial.outcome[n.root] = f"fpga kernel, unroll {best_on[n.root]} (modeled)"
        else:
            tried = [m for g, m in trial.measurements.items() if _decode(g, layout).get(n.root)]
            bad = [m.status for m in tried if m.status != "ok"]
            trial.outcome[n.root] = ("tried on the FPGA (modeled), not faster" if not bad
                                     else f"tried on the FPGA: {bad[0]}")
    return trial


def _encode(on: dict[str, int], layout: list[tuple[Nest, int]]) -> tuple[int, ...]:
    bits: list[int] = []
    for nest, nbits in layout:
        u = on.get(nest.root)
        bits.append(int(u is not None))
        if nbits == 3:
            k = UNROLLS.index(u) if u else 0
            bits += [k // 2, k % 2]
    return tuple(bits)


def _translatable(report: Report, nest: Nest) -> None:
    kernel_source(report.name, nest, _ids(report), _verdicts(report), 1)


def _parallel_leaf(nest: Nest, report: Report, verdicts: dict[str, str]) -> bool:
    ids = _ids(report)
    return any(isinstance(n, ast.For) and _leaves(n) and verdicts[ids[id(n)]] == "parallel"
               for n in ast.walk(nest.node))


def _enclosing(report: Report, nests: list[Nest]) -> set[str]:
    out = set()
    for n in nests:
        p = report.loop(n.root).parent
        while p is not None:
            out.add(report.loops[p].id)
            p = report.loops[p].parent
    return out


def _measure(v: FpgaVariant, args: tuple, expected: tuple, repeats: int, warmup: int
             ) -> tuple[FpgaVariant, Measurement, list[float], list[list[int]]]:
    """Functional check, then ``repeats`` timed calls: host seconds (wall − C-simulation) and
    kernel calls per nest of each."""
    m = Measurement(source="modeled")
    host, calls = [], []
    try:
        fn = v.compile()
        work = copy_args(args)
        out, m.first_call_s = _timed(lambda: fn(*work), lambda: None)
        m.verified, m.error = verify(outputs_of(out, work), expected)
        if not m.verified:
            m.status = "wrong"
            return v, m, host, calls
        for k in range(max(warmup - 1, 0) + repeats):
            work = copy_args(args)
            v.reset()
            _, t = _timed(lambda: fn(*work), lambda: None)  # noqa: B023
            csim_s, n_calls = v.stats()
            if k >= max(warmup - 1, 0):
                host.append(max(t - csim_s, 0.0))
                calls.append(n_calls)
    except Exception as exc:
        m.status = "failed: " + traceback.format_exception_only(type(exc), exc)[-1].strip()
        m.verified = False
    m.times_s = [statistics.median(host)] if host else []
    return v, m, host, calls


def fpga_plan(target: Target, report: Report, args: tuple, expected: tuple,
              serial: Measurement, serial_v: Any, auto_s: float, cpu_plan: Any, *,
              threshold: float, board: str | None, repeats: int, warmup: int,
              opts: dict[str, Any], exhaustive: bool | None,
              notes: list[str]) -> tuple[Any, FpgaTrial | None]:
    """Run the FPGA step after the CPU (and GPU) searches; the FPGA :class:`Plan` (None when
    no nest was tried) and the trial. Appends the reasons to ``notes``."""
    from ...fpga.device import default_board

    board = board or default_board()
    nests = find_nests(report, args, threshold)
    why = target.ready()
    if why is not None:
        notes.append(f"{target.name}: skipped ({why})")
        trial = FpgaTrial(nests, outcome={n.root: "fpga skipped: no C++ compiler"
                                          for n in nests})
        return None, trial
    cpu_loops = tuple(cpu_plan.loops) if cpu_plan is not None else ()
    blocks = tuple(cpu_plan.blocks) if cpu_plan is not None else ()
    trial = fpga_step(report, args, expected, serial, nests, cpu_loops=cpu_loops,
                      blocks=blocks, board=board, repeats=repeats, warmup=warmup, opts=opts,
                      exhaustive=exhaustive)
    if not trial.genes:
        notes.append(f"{target.name}: no nest tried (" + (
            "; ".join(f"{r}: {w}" for r, w in trial.outcome.items()) or "no parallel nest")
            + ")")
        return None, trial
    notes.append(f"{target.name}: times are MODELED (host part measured, kernels by "
                 f"hetlab.fpga.timing for {board}; no board here); FPGA tried last, on nests of "
                 f"intensity >= {threshold:g} flop/B only")
    zero = (0,) * len(trial.genes)
    trial.measurements.setdefault(zero, serial)
    variants = {zero: serial_v, **trial.variants}
    plan = Plan(report, target.name, trial.genes, trial.best, trial.measurements, serial.time_s,
                auto_s,
                trial.ga, trial.exhaustive, variants=variants)  # type: ignore[arg-type]
    plan.board = board
    return plan, trial
