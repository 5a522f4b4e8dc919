"""``offload.search``: which loops to offload, chosen by a GA on measured, verified times."""

from __future__ import annotations

import math
import os
import statistics
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import HetlabError, InvalidInputError
from ..analysis.report import Report, analyze
from ..runtime.guard import array_leaves, overlap
from ..runtime.measure import Measurement, copy_args, measure, outputs_of
from ..targets.base import TARGETS, Variant, transform
from .ga import exhaustive_search, genetic_search
from .plan import Plan

__all__ = ["Plan", "search"]


def _check_args(report: Report, args: Sequence[Any]) -> tuple:
    if not isinstance(args, (tuple, list)):
        raise InvalidInputError(f"offload.search: args must be a tuple of {report.name}'s "
                                f"arguments; got {type(args).__name__}.")
    if len(args) != len(report.params):
        raise InvalidInputError(
            f"offload.search: {report.name} takes {len(report.params)} arguments "
            f"({', '.join(report.params)}); got {len(args)}.")
    arrays: list[tuple[str, np.ndarray]] = []
    for n, a in zip(report.params, args, strict=True):
        array_leaves(a, n, arrays)
    for k, (na, a) in enumerate(arrays):
        for nb, b in arrays[k + 1:]:
            if overlap(a, b):
                raise InvalidInputError(f"offload.search: arguments {na} and {nb} share memory; "
                                        "the analysis assumes arrays do not alias (pass "
                                        f"distinct arrays, e.g. {nb}.copy()).")
    return tuple(args)


def _reference(report: Report, args: tuple, how: str) -> tuple:
    if how not in ("python", "njit"):
        raise InvalidInputError(f"offload.search: reference must be 'python' or 'njit'; "
                                f"got {how!r}.")
    fn = report.source.fn if how == "python" else transform(report).compile()
    work = copy_args(args)
    try:
        out = fn(*work)
    except Exception as exc:
        raise HetlabError(f"offload.search: {report.name} raised {type(exc).__name__}: {exc} "
                          "on the given arguments; fix the function or its arguments.") from exc
    return outputs_of(out, work)


def _thread_sweep(variant: Variant, args: tuple, expected: tuple, repeats: int,
                  tolerance: float, rounds: int = 3) -> tuple[dict[int, float], int | None]:
    """Resource amount (Yamato 2020): time per thread count, and the smallest count within
    ``tolerance`` of the best. Counts are measured in interleaved rounds and compared as
    ratios to the all-threads time of the same round (load drifts cancel)."""
    import numba

    fn = variant.compile()
    before = numba.get_num_threads()
    counts = list(range(numba.config.NUMBA_NUM_THREADS, 0, -1))  # all threads first: baseline
    per_round: dict[int, list[float]] = {n: [] for n in counts}
    try:
        numba.set_num_threads(counts[0])
        if not measure(fn, args, expected, repeats=1).verified:
            return {}, None
        for _ in range(rounds):
            for n in counts:
                numba.set_num_threads(n)
                per_round[n].append(measure(fn, args, None, repeats=repeats).time_s)
    finally:
        numba.set_num_threads(before)
    base = per_round[counts[0]]
    base_s = statistics.median(base)
    times = {n: base_s * statistics.median(t / b for t, b in zip(v, base, strict=True))
             for n, v in sorted(per_round.items())}
    best = min(times.values())
    return times, min(n for n, t in times.items() if t <= best * (1 + tolerance))


#: destinations in the order the 2020 paper tries them: many-core CPU, then GPU
ORDER = ("numba", "cuda", "fpga")
#: other names accepted for a target: "cupy" is the GPU target (numba.cuda kernels and CuPy
#: calls on CuPy arrays)
ALIASES = {"cupy": "cuda"}


def search(fn: Callable[..., Any], args: Sequence[Any], *, targets: Sequence[str] = ("numba",),
           budget: int = 64, population: int = 8, generations: int = 30, elite: int = 1,
           selection: str = "tournament", crossover_rate: float = 0.9,
           mutation_rate: float | None = None, repeats: int = 3, warmup: int = 1,
           timeout_factor: float = 20.0, exhaustive: bool | None = None, seed: int = 0,
           reference: str = "python", thread_tolerance: float = 0.1, confirm: int = 3,
           resume: Plan | None = None, progress: bool = True, client: Any = None,
           function_blocks: bool = True, fpga_threshold: float = 2.0,
           board: str | None = None) -> Plan:
    """Search which loops of ``fn`` to offload, by GA on measured and verified run times.

    Parameters
    ----------
    fn : function
        A plain Python loop function (see :func:`analyze`).
    args : tuple
        Arguments to call ``fn`` with; never modified, whatever their type (every run — the
        reference, each candidate, verification, confirmation, remote and FPGA/GPU runs —
        gets its own deep copy: arrays, lists, dicts, arrays inside tuples). Arrays among
        them (also nested) must not share memory.
    targets : sequence of str
        Destinations among ``"numba"`` (many-core CPU: ``prange``), ``"cuda"`` or its alias
        ``"cupy"`` (numba.cuda kernels and CuPy calls; needs a GPU, or
        ``NUMBA_ENABLE_CUDASIM=1`` to exercise the logic) and ``"fpga"`` (HLS C++ kernels
        for the nests of high arithmetic intensity, run through the emulator's C-simulation,
        time **modeled**: :mod:`hetlab.offload.fpga`), searched in the 2020 paper's order:
        CPU first, then GPU, then FPGA (on top of the CPU plan). One search per target; the
        fastest plan wins (an FPGA plan's time is modeled and says so) and the others are
        kept in ``plan.alternatives``. A target that cannot run here is skipped with a note
        in ``plan.notes``; ``plan.destinations()`` tells per nest what was tried and why
        the rest was skipped.
    budget : int
        Most distinct candidates the GA measures per target (cached by gene).
    population, generations, elite, selection, crossover_rate, mutation_rate, seed
        GA parameters; ``selection`` is ``"tournament"`` or ``"roulette"``; mutation rate
        defaults to 1 / number of genes.
    repeats, warmup : int
        Timed calls per candidate (median kept) and untimed calls before them.
    timeout_factor : float
        A candidate whose call takes longer than this × the serial time (+1 s) is stopped
        after that call (zero fitness).
    exhaustive : bool, optional
        Also measure every gene (default: when there are at most 4 genes) to check the GA.
    reference : {"python", "njit"}
        Ground truth: the original function in Python, or its serial ``njit`` (for sizes
        where Python is too slow).
    thread_tolerance : float
        Resource amount (numba): the smallest thread count within this fraction of the best.
    confirm : int
        After the search, the ``confirm`` fittest genes, the serial and the automatic njit are
        measured again back to back (5 interleaved rounds; each figure the serial median ×
        the median ratio to the serial of the same round) and the plan is chosen on those: a
        shared machine's load changes between the search's measurements. 0: off.
    resume : Plan, optional
        A previous plan of the same function and arguments: its measurements are reused.
    progress : bool
        Show a tqdm progress bar.
    client : dask.distributed.Client, optional
        Measure each GA generation's new candidates (and the exhaustive check) as tasks on
        this cluster (:mod:`hetlab.offload.remote`); a candidate lost with a dead worker is
        rescheduled by Dask or scores zero. The confirmation round and the thread sweep run
        in this process.
    fpga_threshold : float
        ``"fpga"`` target: the arithmetic intensity (flop per byte of distinct array traffic,
        :mod:`hetlab.offload.fpga_nests`) from which a nest is an FPGA candidate.
    board : str, optional
        ``"fpga"`` target: the modeled board (``"pynq-z2"`` or ``"kv260"``; default
        ``$HETLAB_FPGA_BOARD`` or pynq-z2).
    function_blocks : bool
        numba: first try replacing the function blocks ``analyze`` found (matmul, dot, …) by
        their NumPy call, one candidate per block set; the fastest verified set is kept when
        it beats the serial njit, and the GA then searches the loops outside it
        (``plan.blocks``, ``plan.block_trials``). False: loops only.

    Returns
    -------
    Plan
        Fitness of a candidate is serial-njit time / its time; wrong or timed-out candidates
        score 0. ``plan.compile()`` gives the fast callable; ``plan.source()`` its code.
    """
    report = analyze(fn)
    args = _check_args(report, args)
    targets = [ALIASES.get(t, t) for t in targets]
    bad = [t for t in targets if t not in TARGETS]
    if bad or not targets:
        raise InvalidInputError(f"offload.search: targets must be among {TARGETS}; "
                                f"got {list(targets)!r}.")
    if not isinstance(budget, int) or budget < 1:
        raise InvalidInputError(f"offload.search: budget must be a positive int; got {budget!r}.")
    expected = _reference(report, args, reference)
    opts = dict(budget=budget, population=population, generations=generations, elite=elite,
                selection=selection, crossover_rate=crossover_rate,
                mutation_rate=mutation_rate, seed=seed)
    prior = resume.alternatives if resume is not None else {}
    serial_v = transform(report)
    serial = measure(serial_v.compile(), args, expected, repeats=repeats, warmup=warmup)
    if not serial.times_s:
        raise HetlabError(f"offload.search: the serial njit variant of {report.name} did not "
                          f"run ({serial.status}); numba must compile the function as written.")
    auto_v = transform(report, parallel=True)
    with warnings.catch_warnings():  # "no transformation for parallel execution was possible"
        warnings.simplefilter("ignore")
        auto = measure(auto_v.compile(), args, expected, repeats=repeats, warmup=warmup)
    plans: dict[str, Plan] = {}
    notes: list[str] = []
    blocks, trials = _try_blocks(report, args, expected, serial, repeats, warmup,
                                 resume.alternatives.get("numba") if resume else None) \
        if "numba" in targets and function_blocks else ((), {})
    for target in sorted(dict.fromkeys(targets), key=ORDER.index):
        if target == "fpga":
            continue  # last, below: it builds on the CPU plan
        t_blocks, t_trials = blocks, trials
        if target == "cuda":
            from ..targets.cuda.kernels import cuda_ready

            why = cuda_ready()
            if why is not None:
                notes.append(f"cuda: skipped ({why})")
                continue
            t_blocks, t_trials = (), {}
            if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
                notes.append("cuda: times measured in numba's CUDA simulator, not on a GPU")
                if function_blocks and report.blocks:
                    notes.append("cuda: function blocks not tried (the simulator has no "
                                 "cuBLAS; CuPy needs a GPU)")
            elif function_blocks and report.blocks:
                t_blocks, t_trials = _try_blocks(
                    report, args, expected, serial, repeats, warmup,
                    resume.alternatives.get("cuda") if resume else None, target="cuda")
        plans[target] = _search_target(
            report, args, expected, target, serial, serial_v, (auto_v, auto.time_s), opts,
            exhaustive=exhaustive, repeats=repeats, warmup=warmup, confirm=confirm,
            timeout_s=serial.time_s * timeout_factor + 1.0, progress=progress,
            thread_tolerance=thread_tolerance, resume=prior.get(target), client=client,
            blocks=t_blocks, block_trials=t_trials)
    trial = None
    if "fpga" in targets:
        from .fpga_step import fpga_plan

        fp, trial = fpga_plan(report, args, expected, serial, serial_v, auto.time_s,
                              plans.get("numba"), threshold=fpga_threshold, board=board,
                              repeats=repeats, warmup=warmup, opts=opts,
                              exhaustive=exhaustive, notes=notes)
        if fp is not None:
            plans["fpga"] = fp
    if not plans:
        raise HetlabError(f"offload.search: no target can run here ({'; '.join(notes)}).")
    best = max(plans.values(), key=lambda p: p.speedup)
    for p in plans.values():
        p.alternatives, p.notes, p.fpga = plans, notes, trial
    return best


def _search_target(report: Report, args: tuple, expected: tuple, target: str,
                   serial: Measurement, serial_v: Variant, auto: tuple[Variant, float],
                   opts: dict[str, Any], *, exhaustive: bool | None, repeats: int, warmup: int,
                   confirm: int,
                   timeout_s: float, progress: bool, thread_tolerance: float,
                   resume: Plan | None, client: Any = None, blocks: tuple[str, ...] = (),
                   block_trials: dict[tuple[str, ...], Measurement] | None = None) -> Plan:
    inside = {k for b in blocks for k in report.block(b).loops}
    if target == "cuda":
        from ..targets.cuda.kernels import gpu_loops

        genes = [k for k in gpu_loops(report) if k not in inside]
    else:
        genes = [lp.id for lp in report.parallelizable if lp.id not in inside]
    n = len(genes)
    zero = (0,) * n
    base_v, base_m = (serial_v, serial) if not blocks else \
        (transform(report, blocks=blocks, target=target), (block_trials or {})[blocks])
    variants: dict[tuple[int, ...], Variant] = {zero: base_v}
    measured: dict[tuple[int, ...], Measurement] = {zero: base_m}
    if resume is not None:
        variants.update(resume.variants)
        measured.update(resume.measurements)
    sync = _cuda_sync if target == "cuda" else None

    def variant(gene: tuple[int, ...]) -> Variant:
        if gene not in variants:
            chosen = [g for g, b in zip(genes, gene, strict=True) if b]
            variants[gene] = transform(report, chosen, target=target, blocks=blocks)
        return variants[gene]

    def run(gene: tuple[int, ...]) -> Measurement:
        if gene not in measured:
            measured[gene] = measure(variant(gene).compile(), args, expected,
                                     repeats=repeats, warmup=warmup, timeout_s=timeout_s,
                                     sync=sync)
        return measured[gene]

    def fitness(gene: tuple[int, ...]) -> float:
        m = run(gene)
        return serial.time_s / m.time_s if m.verified and m.times_s else 0.0

    many = None
    if client is not None:
        from .remote import measure_variants

        def many(batch: list[tuple[int, ...]]) -> list[float]:
            results = measure_variants(client, [variant(g) for g in batch], args, expected,
                                       repeats=repeats, warmup=warmup, timeout_s=timeout_s)
            measured.update(zip(batch, results, strict=True))
            return [fitness(g) for g in batch]

    do_all = n <= 4 if exhaustive is None else exhaustive
    total = min(opts["budget"], 2 ** n) + (2 ** n if do_all else 0)
    bar = _progress(progress, total, f"{report.name} → {target}")
    tick = bar.update if bar is not None else None
    prior = {g: fitness(g) for g in measured}
    try:
        ga = genetic_search(n, fitness, cache=prior, on_evaluation=tick, evaluate_many=many,
                            seeds=[report.outermost(genes)], **opts)
        ex = exhaustive_search(n, fitness, cache=ga.cache, on_evaluation=tick,
                               evaluate_many=many) if do_all else None
    finally:
        if bar is not None:
            bar.close()
    final = ex or ga
    best, serial_s, auto_s, confirmed = final.best, serial.time_s, auto[1], {}
    if confirm > 0:
        top = sorted((g for g, f in final.cache.items() if f > 0 and g != zero),
                     key=lambda g: final.cache[g], reverse=True)[:confirm]
        contenders: dict[Any, tuple[Callable[..., Any], Any]] = {}
        if blocks:  # the baseline stays the original's serial njit
            contenders["serial"] = (serial_v.compile(), None)
        contenders.update({g: (variants[g].compile(), sync) for g in [zero, *top]})
        contenders["auto"] = (auto[0].compile(), None)
        confirmed = _confirm(contenders, args, repeats)
        best = min([zero, *top], key=lambda g: confirmed.get(g, math.inf))
        serial_s, auto_s = confirmed.get("serial", confirmed[zero]), confirmed["auto"]
    plan = Plan(report, target, genes, best, measured, serial_s, auto_s, ga, ex,
                variants=variants, confirmed=confirmed, blocks=blocks,
                block_trials=dict(block_trials or {}))
    if any(best) and target == "numba":
        plan.threads, plan.thread_choice = _thread_sweep(variants[best], args, expected,
                                                         repeats, thread_tolerance)
    if any(best) and target == "cuda":
        plan.transfers = _count_transfers(report, plan.loops, args)
    return plan


def _block_sets(report: Report, most: int = 8) -> list[tuple[str, ...]]:
    """Candidate block sets: all blocks together, then each block alone (when several)."""
    ids = tuple(b.id for b in report.blocks)
    sets = [ids] if ids else []
    if len(ids) > 1:
        sets += [(b,) for b in ids]
    return sets[:most]


def _try_blocks(report: Report, args: tuple, expected: tuple, serial: Measurement,
                repeats: int, warmup: int, resume: Plan | None, target: str = "numba"
                ) -> tuple[tuple[str, ...], dict[tuple[str, ...], Measurement]]:
    """Function blocks first (Yamato 2020/2024): measure the variant of each candidate block
    set (numba: NumPy/BLAS in the serial njit; cuda: CuPy/cuBLAS calls on device arrays);
    keep the fastest verified one when it beats the serial njit."""
    if resume is not None and resume.block_trials:
        return resume.blocks, dict(resume.block_trials)
    trials: dict[tuple[str, ...], Measurement] = {}
    sync = _cuda_sync if target == "cuda" else None
    for bs in _block_sets(report):
        trials[bs] = measure(transform(report, blocks=bs, target=target).compile(), args,
                             expected, repeats=repeats, warmup=warmup, sync=sync)
    good = [bs for bs, m in trials.items() if m.verified and m.times_s]
    best = min(good, key=lambda bs: trials[bs].time_s, default=())
    if best and trials[best].time_s < serial.time_s:
        return best, trials
    return (), trials


def _confirm(contenders: dict[Any, tuple[Callable[..., Any], Any]], args: tuple,
             repeats: int, rounds: int = 5) -> dict[Any, float]:
    """Times of already verified callables, robust to a shared machine's changing load.

    In each round every contender is measured back to back (median of ``repeats`` calls) and
    divided by the first contender's (the baseline) time of the same round; a contender's
    figure is the baseline's median time × its median ratio, so load that drifts between
    rounds cancels out.
    """
    keys = list(contenders)
    per_round: dict[Any, list[float]] = {k: [] for k in keys}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(rounds):
            for key in keys:
                fn, sync = contenders[key]
                m = measure(fn, args, None, repeats=repeats, sync=sync)
                per_round[key].append(m.time_s)
    base = per_round[keys[0]]
    base_s = statistics.median(base)
    return {k: base_s * statistics.median(t / b for t, b in zip(v, base, strict=True))
            for k, v in per_round.items() if all(math.isfinite(t) for t in v)}


def _cuda_sync() -> None:
    from numba import cuda

    cuda.synchronize()


def _count_transfers(report: Report, loops: list[str], args: tuple) -> dict[str, dict[str, int]]:
    """Host↔device copies and bytes of one call, per-launch copies vs the reduced plan."""
    out = {}
    for mode in ("naive", "reduced"):
        v = transform(report, loops, target="cuda", transfers=mode)
        v.compile()(*copy_args(args))
        t = v.transfers
        out[mode] = {"copies": t.copies, "bytes": t.bytes}
    return out


def _progress(show: bool, total: int, name: str) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"offload.search({name})", unit="variant", leave=False)


