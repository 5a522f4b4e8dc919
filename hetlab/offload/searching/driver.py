"""``offload.search``: which loops to offload, chosen by a GA on measured, verified times."""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import numba
import numpy as np

from ...errors import HetlabError, InvalidInputError
from ..analysis.report import Report, analyze
from ..front.source import FunctionSource, read_function
from ..runtime.guard import array_leaves, overlap
from ..runtime.measure import Measurement, confirm_times, copy_args, outputs_of
from ..runtime.measure import measure as _measure
from ..runtime.results import ResultTypes
from ..targets.base import Target, Variant, alias_guard
from ..targets.generate import transform
from ..targets.registry import describe_names, get_target, target_names
from . import remote
from .cost import Cost, among_work_figures, search_cost
from .fallback import as_written_plan, codegen_failure, why_serial_failed
from .fpga_step import fpga_plan
from .ga import exhaustive_search, genetic_search
from .load import load_record, logger, watch
from .model import StaticModel
from .numeric import keep_numeric_reductions
from .options import FpgaOptions, GAOptions, MeasureOptions, choose_plan, split_legacy
from .outline import Outlining
from .outline import outline as outline_loops
from .plan import Plan

__all__ = ["Plan", "search", "GAOptions", "MeasureOptions", "FpgaOptions"]

#: a candidate must beat the baseline by more than this fraction in the confirmation round
#: to be kept: closer than that, the two are the same within the timing noise of a small
#: machine, and the simpler baseline is kept (a plan is never kept for a gain noise can give)
NOISE = 0.03

#: set while an outlined loop is searched (:mod:`.outline`): a loop that stays Python is
#: not timed as written (it runs inside the function, which is)
_OUTLINED_LOOP: ContextVar[bool] = ContextVar("hetlab_offload_outlined_loop", default=False)


def _check_args(report: Report, args: Sequence[Any]) -> tuple:
    """``args`` as a full positional tuple (defaults filled in), refused when ``fn`` cannot
    be called with them or when two of their arrays share memory and one is written."""
    if not isinstance(args, (tuple, list)):
        raise InvalidInputError(f"offload.search: args must be a tuple of {report.name}'s "
                                f"arguments; got {type(args).__name__}.")
    try:
        bound = inspect.signature(report.source.call).bind(*args)
    except TypeError as exc:
        raise InvalidInputError(
            f"offload.search: {report.name} takes {len(report.params)} arguments "
            f"({', '.join(report.params)}); got {len(args)} ({exc}). Pass one value per "
            "parameter (a parameter with a default may be left out).") from None
    bound.apply_defaults()
    full = tuple(bound.args)
    names = [*report.params, *(f"argument {k}" for k in range(len(report.params), len(full)))]
    arrays: list[tuple[str, np.ndarray]] = []
    for n, a in zip(names, full, strict=True):
        array_leaves(a, n, arrays)
    written = report.aliases.written_params()

    def writes(path: str) -> bool:  # "pair[0]" is written when pair is; extra args may be
        root = path.split("[", 1)[0]
        return root in written or root not in report.params

    for k, (na, a) in enumerate(arrays):
        for nb, b in arrays[k + 1:]:
            # arrays only read may share memory (``sq_dist(x, x)``): nothing assumed about them
            if overlap(a, b) and (writes(na) or writes(nb)):
                raise InvalidInputError(f"offload.search: arguments {na} and {nb} share memory; "
                                        "the analysis assumes arrays do not alias (pass "
                                        f"distinct arrays, e.g. {nb}.copy()).")
    return full


def _reference(report: Report, args: tuple, how: str, serial_v: Variant) -> tuple:
    if how not in ("python", "njit"):
        raise InvalidInputError(f"offload.search: reference must be 'python' or 'njit'; "
                                f"got {how!r}.")
    fn = report.source.call if how == "python" else serial_v.compile()  # compiled once
    work = copy_args(args)
    try:
        out = fn(*work)
    except Exception as exc:
        raise HetlabError(f"offload.search: {report.name} raised {type(exc).__name__}: {exc} "
                          "on the given arguments; fix the function or its arguments.") from exc
    return outputs_of(out, work)


def search(fn: Callable[..., Any], args: Sequence[Any], *, targets: Sequence[str] = ("numba",),
           budget: int = 64, seed: int = 0, reference: str = "python",
           resume: Plan | None = None, progress: bool = True, client: Any = None,
           function_blocks: bool = True, ga: GAOptions | None = None,
           measure: MeasureOptions | None = None, fpga: FpgaOptions | None = None,
           objective: Any = None, outline: bool = True, **deprecated: Any) -> Plan:
    """Search which loops of ``fn`` to offload, by GA on measured and verified run times.

    Parameters
    ----------
    fn : function
        A plain Python loop function (see :func:`analyze`).
    args : tuple
        Arguments to call ``fn`` with; never modified, whatever their type (every run — the
        reference, each candidate, verification, confirmation, remote and FPGA/GPU runs —
        gets its own deep copy: arrays, lists, dicts, arrays inside tuples). Arrays among
        them (also nested) must not share memory when the function may write one of them.
    targets : sequence of str
        Destinations among ``"numba"`` (many-core CPU: ``prange``), ``"cupy"`` (the GPU;
        aliases ``"cuda"``, ``"gpu"``; numba.cuda kernels and CuPy calls; needs a GPU, or
        ``NUMBA_ENABLE_CUDASIM=1`` to exercise the logic; its plan is recorded as ``"cuda"``)
        and ``"fpga"`` (HLS C++ kernels
        for the nests of high arithmetic intensity, run through the emulator's C-simulation,
        time **modeled**: :mod:`hetlab.offload.targets.fpga.variant`), searched in the 2020 paper's
        order: CPU first, then GPU, then FPGA (on top of the CPU plan). One search per target; the
        fastest plan wins (an FPGA plan's time is modeled and says so) and the others are
        kept in ``plan.alternatives``. A target that cannot run here is skipped with a note
        in ``plan.notes``; ``plan.destinations()`` tells per nest what was tried and why
        the rest was skipped.
    budget : int
        Most distinct candidates the GA measures per target (cached by gene).
    seed : int
        Seed of the GA's random choices.
    reference : {"python", "njit"}
        Ground truth: the original function in Python, or its serial ``njit`` (for sizes
        where Python is too slow). ``"njit"`` trusts numba's semantics: where they differ
        from Python's (an ``np.int32`` accumulator widened to int64 instead of wrapping, a
        returned ``np.float32`` given as a Python float) the plan follows numba; only
        ``"python"`` detects that and runs the function as written.
    resume : Plan, optional
        A previous plan of the same function and arguments: its measurements are reused.
    progress : bool
        Show a tqdm progress bar.
    client : dask.distributed.Client, optional
        Measure each GA generation's new candidates (and the exhaustive check) as tasks on
        this cluster (:mod:`hetlab.offload.searching.remote`); a candidate lost with a dead worker
        is rescheduled by Dask or scores zero. The confirmation round and the thread sweep run
        in this process.
    function_blocks : bool
        numba: first try replacing the function blocks ``analyze`` found (matmul, dot, …) by
        their NumPy call, one candidate per block set; the fastest verified set is kept when
        it beats the serial njit, and the GA then searches the loops outside it
        (``plan.blocks``, ``plan.block_trials``). False: loops only.

    ga : GAOptions, optional
        The genetic algorithm: ``population``, ``generations``, ``elite``, ``selection``
        (``"tournament"`` or ``"roulette"``), ``crossover_rate``, ``mutation_rate`` (default
        1 / number of genes), ``exhaustive`` (also measure every gene to check the GA;
        default: when there are at most 4 genes).
    measure : MeasureOptions, optional
        ``repeats`` timed calls per candidate (median kept) after ``warmup`` untimed ones;
        ``timeout_factor``: a candidate whose call takes longer than this × the serial time
        (+1 s) is stopped after that call (zero fitness); ``confirm``: after the search, the
        ``confirm`` fittest genes, the serial and the automatic njit are measured again back
        to back (5 interleaved rounds; each figure the serial median × the median ratio to
        the serial of the same round) and the plan is chosen on those, since a shared
        machine's load changes between the search's measurements (0: off); a candidate is
        kept only when it beats the baseline there by more than :data:`NOISE` (3%), and the
        reassociated twin (numba's ``"fp:reassoc"`` gene) of each of those genes is measured
        first when the GA left it out;
        ``thread_tolerance``: resource amount (numba), the smallest thread count within this
        fraction of the best.
    fpga : FpgaOptions, optional
        The ``"fpga"`` target: ``threshold``, the arithmetic intensity (flop per byte of
        distinct array traffic, :mod:`hetlab.offload.targets.fpga.nests`) from which a nest
        is an FPGA candidate; ``board``, the modeled board (``"pynq-z2"`` or ``"kv260"``;
        default ``$HETLAB_FPGA_BOARD`` or pynq-z2).
    objective : "time", "energy", mapping or hetlab.auto.Objective, optional
        What the returned plan minimizes across targets and thread counts: time, energy
        (modeled for CPU plans: busy threads × the per-thread power of :mod:`hetlab.energy`;
        GPU/board plans have none) or a price per second of each resource
        (``{"thread": 0.01, "gpu": 1.0, "board": 0.2}``); among the candidates within
        ``measure.thread_tolerance`` of the best value, the one holding the fewest resources
        (GPUs, then boards, then threads) wins, and ``plan.thread_choice`` is its thread
        count. Default (None): the fastest plan, its thread count by ``thread_tolerance``.
    outline : bool
        When the function cannot be compiled as a whole (a formatted ``print``, a dict, a
        ``try`` statement or a call numba lacks outside its loops), cut its loops out into
        functions of their own, search each, and keep the function rewritten to call their
        plans (the rest of it in Python) when that is verified and faster than the function
        as written (``plan.outlined``; :mod:`hetlab.offload.searching.outline`). False: run
        such a function as written.
    **deprecated
        The keywords ``population``, ``generations``, ``elite``, ``selection``,
        ``crossover_rate``, ``mutation_rate``, ``exhaustive``, ``repeats``, ``warmup``,
        ``timeout_factor``, ``confirm``, ``thread_tolerance``, ``fpga_threshold`` and
        ``board`` of earlier releases still work for one release (a
        :class:`DeprecationWarning` names the new spelling) and are applied on top of the
        option objects.

    Returns
    -------
    Plan
        Fitness of a candidate is serial-njit time / its time; wrong or timed-out candidates
        score 0. ``plan.compile()`` gives the fast callable; ``plan.source()`` its code.
    """
    ga, measure, fpga = split_legacy(deprecated, ga, measure, fpga)
    probe = watch(measure.load_probe)
    load_before, started = probe(), time.perf_counter()
    if objective is not None:
        from ...auto.objective import Objective

        objective = Objective.of(objective, tolerance=measure.thread_tolerance)
    src = fn if isinstance(fn, FunctionSource) else read_function(fn)
    # element stores into array arguments copy values: the analysis is told which they are
    known = {p: a.ndim if a.dtype.kind in "biufc" else -1
             for p, a in zip(src.params, args, strict=False)
             if isinstance(a, np.ndarray)} if isinstance(args, (tuple, list)) else {}
    column_major = [p for p, a in zip(src.params, args, strict=False)
                    if isinstance(a, np.ndarray) and a.ndim > 1 and a.flags.f_contiguous
                    and not a.flags.c_contiguous] if isinstance(args, (tuple, list)) else []
    report = analyze(src, arrays=known, fortran=column_major)
    report.float_arrays = frozenset(p for p, a in zip(src.params, args, strict=False)
                                    if isinstance(a, np.ndarray) and a.dtype.kind in "fc")
    report.double_arrays = frozenset(p for p, a in zip(src.params, args, strict=False)
                                     if isinstance(a, np.ndarray) and a.dtype == np.float64)
    report.scalar_params = frozenset(p for p, a in zip(src.params, args, strict=False)
                                     if _is_number(a))
    args = _check_args(report, args)
    if isinstance(targets, str) or not targets:
        raise InvalidInputError(f"offload.search: targets must be among {describe_names()}; "
                                f"got {targets!r}.")
    chosen = {id(t): t for t in (get_target(n, where="offload.search",
                                            what="targets must be among") for n in targets)}
    order = [get_target(n) for n in target_names()]
    wanted = [t for t in order if id(t) in chosen]
    if not isinstance(budget, int) or budget < 1:
        raise InvalidInputError(f"offload.search: budget must be a positive int; got {budget!r}.")
    if not isinstance(outline, bool):
        raise InvalidInputError(f"offload.search: outline must be True or False; got "
                                f"{outline!r}.")
    repeats, warmup, exhaustive = measure.repeats, measure.warmup, ga.exhaustive

    def one_loop(source: FunctionSource, loop_args: tuple) -> Plan:  # an outlined loop
        token = _OUTLINED_LOOP.set(True)
        try:
            return search(source, loop_args, targets=targets, budget=budget, seed=seed,
                          reference=reference, progress=False, client=client,
                          function_blocks=function_blocks, ga=ga, measure=measure, fpga=fpga,
                          objective=objective, outline=False)
        finally:
            _OUTLINED_LOOP.reset(token)

    def left_alone(reason: str) -> Plan:  # the function runs as written (.fallback)
        expected = _reference(report, args, "python", None)  # type: ignore[arg-type]
        plan = as_written_plan(report, args, expected, reason, repeats=repeats,
                               warmup=warmup, target=wanted[0].name,
                               timed=not _OUTLINED_LOOP.get())
        if outline:
            try:
                tried = outline_loops(report, args, expected, reason, plan.time_s,
                                      search_loop=one_loop, repeats=repeats, warmup=warmup,
                                      noise=NOISE, target=wanted[0].name)
            except Exception as exc:  # an optimization: the function still runs as written
                logger.warning("offload.search(%s): outlining failed (%s)", report.name,
                               codegen_failure(exc))
                tried = Outlining(None, [f"outlining failed: {codegen_failure(exc)}"])
            plan = tried.plan or plan
            if tried.plan is None:
                plan.notes.extend(tried.notes)
        plan.alternatives, plan.search_s = {plan.target: plan}, time.perf_counter() - started
        return plan

    if report.refusals:
        return left_alone("; ".join(report.refusals))
    try:
        serial_v = transform(report)
    except Exception as exc:  # a construct code generation does not handle: reported
        return left_alone(f"unsupported: the serial njit variant of {report.name} could not "
                          f"be generated ({codegen_failure(exc)})")
    try:
        expected = _reference(report, args, reference, serial_v)
    except HetlabError as exc:
        if reference != "njit":
            raise
        return left_alone(f"the serial njit of {report.name} does not run ({exc.__cause__!r})")
    opts = dict(budget=budget, seed=seed, **ga.ga_kwargs())
    prior = resume.alternatives if resume is not None else {}
    with warnings.catch_warnings():  # numba's warnings on code it falls back on
        warnings.simplefilter("ignore")
        serial = _measure(serial_v.compile(), args, expected, repeats=repeats, warmup=warmup)
    if not serial.times_s:
        return left_alone(why_serial_failed(report.name, serial))
    type_notes = keep_numeric_reductions(report, serial_v._build())  # str/list accumulators
    with warnings.catch_warnings():  # "no transformation for parallel execution was possible"
        warnings.simplefilter("ignore")
        # numba's own parallel=True is a reference, not a candidate: timed until a call takes
        # AUTO_CUT × the serial njit (array expressions in a loop nest can make it minutes)
        built_auto, auto = _built_and_measured(report, lambda: transform(report, parallel=True),
                                               args, expected, repeats=repeats, warmup=warmup,
                                               cut_s=AUTO_CUT * serial.time_s)
    auto_v = built_auto or serial_v
    plans: dict[str, Plan] = {}
    notes: list[str] = list(type_notes)
    for tgt in (t for t in wanted if t.stage == "loops"):
        why = tgt.ready()
        if why is not None:
            notes.append(f"{tgt.name}: skipped ({why})")
            continue
        notes.extend(tgt.notes(report, function_blocks))
        blocks, trials, built = (), {}, {}
        no_blocks = tgt.blocks_ready()
        if function_blocks and no_blocks is None:
            blocks, trials = _try_blocks(report, args, expected, serial, repeats, warmup,
                                         resume.alternatives.get(tgt.name) if resume else None,
                                         target=tgt, built=built)
        elif function_blocks and report.blocks:
            notes.append(f"{tgt.name}: function blocks not tried ({no_blocks})")
        common = dict(exhaustive=exhaustive, repeats=repeats, warmup=warmup,
                      confirm=measure.confirm,
                      timeout_s=serial.time_s * measure.timeout_factor + 1.0, progress=progress,
                      thread_tolerance=measure.thread_tolerance, resume=prior.get(tgt.name),
                      client=client, block_trials=trials)
        plan = _search_target(report, args, expected, tgt, serial, serial_v,
                              (auto_v, auto.time_s), opts, blocks=blocks,
                              base_v=built.get(blocks),
                              cost=search_cost(tgt, measure, report, args, started), **common)
        if blocks and plan.speedup < numba.get_num_threads():
            # the blocks gained less than the threads could: the loops they replace, run in
            # parallel without them, may do better (searched too; the faster plan is kept)
            loops = _search_target(report, args, expected, tgt, serial, serial_v,
                                   (auto_v, auto.time_s), opts, blocks=(), base_v=None,
                                   cost=search_cost(tgt, measure, report, args, started),
                                   **common)
            if loops.speedup > plan.speedup:
                plan = loops
        plans[tgt.name] = plan
    trial = None
    for tgt in (t for t in wanted if t.stage == "nests"):
        fp, trial = fpga_plan(tgt, report, args, expected, serial, serial_v, auto.time_s,
                              plans.get(tgt.host), threshold=fpga.threshold, board=fpga.board,
                              repeats=repeats, warmup=warmup, opts=opts,
                              exhaustive=exhaustive, notes=notes)
        if fp is not None:
            plans[tgt.name] = fp
    if not plans:
        raise HetlabError(f"offload.search: no target can run here ({'; '.join(notes)}).")
    best = max(plans.values(), key=lambda p: p.speedup)
    if objective is not None:
        name, threads, note = choose_plan(plans, objective, numba.config.NUMBA_NUM_THREADS)
        best = plans[name]
        if threads is not None:
            best.thread_choice = threads
        notes.append(note)
    if measure.among_work and not best.modeled:
        among_work_figures(best, serial_v, args, measure.among_work)
    load = load_record(load_before, probe(), numba.get_num_threads(), measure.busy_fraction)
    if load.busy:
        logger.warning("offload.search(%s): %s", report.name, load.describe())
    types = ResultTypes.of(expected[0], args) if reference == "python" else None
    kinds = {p: (a.ndim, a.dtype.kind in "fc") for p, a in zip(report.params, args, strict=False)
             if isinstance(a, np.ndarray)}
    kinds.update({p: (0, isinstance(a, (float, complex, np.inexact)))
                  for p, a in zip(report.params, args, strict=False) if _is_number(a)})
    for p in plans.values():
        p.alternatives, p.notes, p.fpga, p.load = plans, notes, trial, load
        p.result_types = types
        p.arg_kinds = kinds
        p.search_s = time.perf_counter() - started
    return best


#: numba's ``parallel=True`` of the whole function (the plan's "auto" reference) is timed
#: again only while a call takes at most this many times the serial njit
AUTO_CUT = 10.0


def _is_number(a: Any) -> bool:
    """A Python or NumPy number (``bool`` and ``np.bool_`` excluded)."""
    return isinstance(a, (int, float, complex, np.number)) and not isinstance(a, bool)


def _search_target(report: Report, args: tuple, expected: tuple, target: Target,
                   serial: Measurement, serial_v: Variant, auto: tuple[Variant, float],
                   opts: dict[str, Any], *, exhaustive: bool | None, repeats: int, warmup: int,
                   confirm: int,
                   timeout_s: float, progress: bool, thread_tolerance: float,
                   resume: Plan | None, client: Any = None, blocks: tuple[str, ...] = (),
                   block_trials: dict[tuple[str, ...], Measurement] | None = None,
                   base_v: Variant | None = None, cost: Cost | None = None) -> Plan:
    inside = {k for b in blocks for k in report.block(b).loops}
    genes = [k for k in target.genes(report) if k not in inside]
    n_loops = len(genes)  # then option bits ("L1:t1": tile sizes), off in the seed
    if hasattr(target, "option_genes"):
        genes += target.option_genes(report, args, blocks,
                                     trips=StaticModel(report, args, 1).trips)
    n = len(genes)
    zero = (0,) * n
    cost = cost or Cost(MeasureOptions(prune=None, cut=None), None, time.perf_counter())
    base_v, base_m = (serial_v, serial) if not blocks else \
        (base_v or transform(report, blocks=blocks, target=target.name),
         (block_trials or {})[blocks])
    fixed_v, m = _built_and_measured(report, lambda: target.fixed_serial(report, blocks),
                                     args, expected, repeats=repeats, warmup=warmup,
                                     timeout_s=timeout_s, sync=target.synchronize)
    if fixed_v is not None:  # the fixed passes alone: a serial candidate of its own
        if m.verified and m.times_s and m.time_s < base_m.time_s:
            base_v, base_m = fixed_v, m
    variants: dict[tuple[int, ...], Variant] = {zero: base_v}
    measured: dict[tuple[int, ...], Measurement] = {zero: base_m}
    if resume is not None:
        variants.update(resume.variants)
        measured.update(resume.measurements)
    sync = target.synchronize

    def variant(gene: tuple[int, ...]) -> Variant:
        if gene not in variants:
            chosen = [g for g, b in zip(genes, gene, strict=True) if b]
            variants[gene] = transform(report, chosen, target=target.name, blocks=blocks)
        return variants[gene]

    def built(gene: tuple[int, ...]) -> Callable[..., Any] | Measurement:
        """The candidate's callable, or a failed measurement when it cannot be built."""
        try:
            return variant(gene).compile()
        except Exception as exc:  # a candidate the codegen cannot build
            return Measurement(status=f"failed: code generation: {codegen_failure(exc)}")

    def best_s() -> float:
        return min((m.time_s for m in measured.values() if m.verified and m.times_s),
                   default=math.inf)

    def loops_of(gene: tuple[int, ...]) -> list[str]:
        return [g for g, b in zip(genes, gene, strict=True) if b and ":" not in g]

    def run(gene: tuple[int, ...]) -> Measurement:
        same = cost.canonical(report, genes, gene)
        if gene not in measured and same != gene:  # same code as a gene without nested bits
            m = run(same)
            was = "+".join(loops_of(same)) or "the baseline"
            measured[gene] = replace(m, source=f"{m.source}, as {was} (nested prange: serial)")
        if gene not in measured:
            if cost.skip(loops_of(gene), base_m.time_s, best_s()):
                measured[gene] = Measurement(status="pruned")
            elif isinstance(fn := built(gene), Measurement):
                measured[gene] = fn
            else:
                measured[gene] = _measure(fn, args, expected,
                                         repeats=repeats, warmup=warmup, timeout_s=timeout_s,
                                         sync=sync, cut_s=cost.cut_s(best_s()))
                cost.done(gene)
        return measured[gene]

    def fitness(gene: tuple[int, ...]) -> float:
        m = run(gene)
        return serial.time_s / m.time_s if m.verified and m.times_s else 0.0

    many = None
    if client is not None:
        def many(batch: list[tuple[int, ...]]) -> list[float]:
            # a cluster measures a generation's candidates side by side: no pruning or
            # folding there (they save in-process time), every candidate measured
            results = remote.measure_variants(client, [variant(g) for g in batch], args,
                                              expected, repeats=repeats, warmup=warmup,
                                              timeout_s=timeout_s)
            measured.update(zip(batch, results, strict=True))
            for g in batch:
                cost.done(g)
            return [fitness(g) for g in batch]

    do_all = n <= 4 if exhaustive is None else exhaustive
    total = min(opts["budget"], 2 ** n) + (2 ** n if do_all else 0)
    bar = _progress(progress, total, f"{report.name} → {target.name}")
    tick = bar.update if bar is not None else None
    prior = {g: fitness(g) for g in measured}
    try:
        ga = genetic_search(n, fitness, cache=prior, on_evaluation=tick, evaluate_many=many,
                            seeds=[report.outermost(genes[:n_loops]) + zero[n_loops:]],
                            **opts)
        ex = exhaustive_search(n, fitness, cache=ga.cache, on_evaluation=tick,
                               evaluate_many=many) if do_all else None
    finally:
        if bar is not None:
            bar.close()
    final = ex or ga
    fits = _with_twins(final.cache, fitness, genes, getattr(target, "twin_genes", ()),
                       max(confirm, 1))

    def fold(g: tuple[int, ...]) -> tuple[int, ...]:  # the measured, verified same code
        same = cost.canonical(report, genes, g)
        return same if same in measured and measured[same].verified else g

    fittest = max(fits, key=lambda g: (fits[g], g == final.best))
    best, serial_s, auto_s, confirmed = fold(fittest), serial.time_s, auto[1], {}
    if confirm > 0:
        # the fittest distinct codes, those within ``cut`` of the best (clearly slower ones
        # are not timed again)
        ranked = sorted(fits, key=lambda g: fits[g], reverse=True)
        floor = fits[fittest] / (cost.cut or math.inf)
        top = list(dict.fromkeys(fold(g) for g in ranked
                                 if fits[g] > 0 and fits[g] >= floor))
        top = [g for g in top if g != zero][:confirm]
        contenders: dict[Any, tuple[Callable[..., Any], Any]] = {}
        changed = bool(blocks) or base_v is not serial_v
        if changed:  # the baseline stays the original's serial njit
            contenders["serial"] = (serial_v.compile(), None)
        contenders.update({g: (variants[g].compile(), sync) for g in [zero, *top]})
        if not math.isfinite(auto[1]) or auto[1] <= AUTO_CUT * serial.time_s:
            # (a far slower one keeps its first figure)
            contenders["auto"] = (auto[0].compile(), None)
        confirmed = confirm_times(contenders, args, repeats)
        confirmed.setdefault("auto", auto[1])
        best = min([zero, *top], key=lambda g: confirmed.get(g, math.inf))
        if best != zero and confirmed[best] > confirmed[zero] * (1 - NOISE):
            best = zero  # not faster than the baseline beyond noise: keep the simpler code
        serial_s, auto_s = confirmed.get("serial", confirmed[zero]), confirmed["auto"]
        if changed and serial_s <= confirmed.get(best, math.inf):
            # the function blocks or fixed passes (and loops on top) measured no faster than
            # the serial
            # njit of the original when timed back to back: keep the serial njit
            full = target.genes(report)
            none = (0,) * len(full)
            plan = Plan(report, target.name, full, none, {none: serial}, serial_s, auto_s,
                        ga, ex, variants={none: serial_v},
                        confirmed={none: serial_s, "auto": auto_s},
                        block_trials=dict(block_trials or {}), pruned=cost.pruned,
                        evaluations=len(cost.order))
            return plan
    plan = Plan(report, target.name, genes, best, measured, serial_s, auto_s, ga, ex,
                variants=variants, confirmed=confirmed, blocks=blocks,
                block_trials=dict(block_trials or {}), pruned=cost.pruned,
                evaluations=len(cost.order))
    index, seconds = cost.order.get(best, (-1, math.nan))
    plan.evaluations_to_best, plan.seconds_to_best = index + 1, seconds
    target.refine(plan, args, expected, repeats=repeats, thread_tolerance=thread_tolerance)
    return plan


def _with_twins(cache: dict[tuple[int, ...], float], fitness: Callable[[tuple[int, ...]], float],
                genes: list[str], twins: tuple[str, ...], most: int,
                ) -> dict[tuple[int, ...], float]:
    """The GA's fitness cache plus, for each option gene of ``twins`` among ``genes`` (numba's
    ``"fp:reassoc"``), the twin with that bit set of each of the ``most`` fittest candidates
    (measured now when the GA left it out): an option that speeds up any code is tried on the
    codes the search would keep, whatever the GA's budget reached."""
    out = dict(cache)
    for name in (t for t in twins if t in genes):
        at = genes.index(name)
        for g in sorted(cache, key=lambda g: cache[g], reverse=True)[:most]:
            twin = (*g[:at], 1, *g[at + 1:])
            if twin not in out and cache[g] > 0:
                out[twin] = fitness(twin)
    return out


def _block_sets(report: Report, most: int = 8) -> list[tuple[str, ...]]:
    """Candidate block sets: all blocks together, then each block alone (when several)."""
    ids = tuple(b.id for b in report.blocks)
    sets = [ids] if ids else []
    if len(ids) > 1:
        sets += [(b,) for b in ids]
    return sets[:most]


def _try_blocks(report: Report, args: tuple, expected: tuple, serial: Measurement,
                repeats: int, warmup: int, resume: Plan | None, target: Target,
                built: dict[tuple[str, ...], Variant] | None = None,
                ) -> tuple[tuple[str, ...], dict[tuple[str, ...], Measurement]]:
    """Function blocks first (Yamato 2020/2024): measure the variant of each candidate block
    set (numba: NumPy/BLAS in the serial njit; cuda: CuPy/cuBLAS calls on device arrays) —
    all blocks, each alone, then the blocks that each beat the serial njit alone, together —
    and keep the fastest verified one when it beats the serial njit."""
    if resume is not None and resume.block_trials:
        return resume.blocks, dict(resume.block_trials)
    trials: dict[tuple[str, ...], Measurement] = {}
    built = {} if built is None else built  # the variants, compiled once for the search
    for bs in _block_sets(report):
        v, trials[bs] = _built_and_measured(
            report, lambda bs=bs: transform(report, blocks=bs, target=target.name), args,
            expected, repeats=repeats, warmup=warmup, sync=target.synchronize)
        if v is not None:
            built[bs] = v
    # the blocks that each beat the serial njit alone, together (all the blocks together may
    # include one whose library form is slower than its loops: a rank-1 update's temporaries)
    ids = [b.id for b in report.blocks]
    gained = tuple(b for b in ids if _beats(trials.get((b,)), serial))
    if len(gained) > 1 and gained not in trials:
        v, trials[gained] = _built_and_measured(
            report, lambda: transform(report, blocks=gained, target=target.name), args,
            expected, repeats=repeats, warmup=warmup, sync=target.synchronize)
        if v is not None:
            built[gained] = v
    good = [bs for bs, m in trials.items() if m.verified and m.times_s]
    best = min(good, key=lambda bs: trials[bs].time_s, default=())
    if best and trials[best].time_s < serial.time_s:
        return best, trials
    return (), trials


def _beats(m: Measurement | None, serial: Measurement) -> bool:
    """Whether a verified measurement ``m`` is faster than the serial njit's."""
    return m is not None and m.verified and bool(m.times_s) and m.time_s < serial.time_s


def _built_and_measured(report: Report, build: Callable[[], Variant | None], args: tuple,
                        expected: tuple, **options: Any) -> tuple[Variant | None, Measurement]:
    """Build a variant (guarded like every candidate) and measure it; a variant that cannot
    be generated is a failed measurement with the reason, never an exception. ``build``
    returning None (nothing to try) gives ``(None, a "failed: nothing to build" one)``."""
    try:
        v = build()
        if v is None:
            return None, Measurement(status="failed: nothing to build")
        if v.guard is None:
            v.guard = alias_guard(report)
        fn = v.compile()
    except Exception as exc:  # reported as the candidate's status
        return None, Measurement(status=f"failed: code generation: {codegen_failure(exc)}")
    return v, _measure(fn, args, expected, **options)


def _progress(show: bool, total: int, name: str) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"offload.search({name})", unit="variant", leave=False)


