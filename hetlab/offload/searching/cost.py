"""What a search costs and how its plan runs among other work.

:class:`Cost` prunes candidates by the static model (:mod:`hetlab.offload.searching.model`),
cuts the repeats of candidates clearly slower than the best measured, and records when each
candidate was measured (for ``plan.evaluations_to_best`` and ``plan.seconds_to_best``).
:func:`among_work_figures` times the chosen plan the way a program calls it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numba

from ..analysis.report import Report
from ..runtime.measure import among_work, blas_work
from ..targets.base import Target, Variant
from .model import StaticModel
from .options import MeasureOptions

__all__ = ["Cost", "search_cost", "among_work_figures"]


def search_cost(target: Target, opts: MeasureOptions, report: Report, args: tuple,
                started: float) -> Cost:
    """Targets whose loops become ``prange`` (numba): pruning by the static model (a CPU
    model) and nested genes folded; other targets: measured cuts only."""
    if getattr(target, "loop_kind", "") != "prange":
        return Cost(MeasureOptions(prune=None, cut=opts.cut), None, started)
    return Cost(opts, StaticModel(report, args, numba.get_num_threads()), started,
                nested_serial=True)


class Cost:
    """What cuts a search's cost: pruning by the static model, fewer repeats for candidates
    clearly worse than the best measured; and when the best was found."""

    def __init__(self, opts: MeasureOptions, model: StaticModel | None, started: float,
                 nested_serial: bool = False) -> None:
        self.prune, self.cut, self.started = opts.prune, opts.cut, started
        self.nested_serial = nested_serial
        self.predict = opts.predictor or (model.predict if model is not None else None)
        self.pruned = 0
        self.order: dict[tuple[int, ...], tuple[int, float]] = {}  # gene → (index, seconds)

    def skip(self, loops: Sequence[str], base_s: float, best_s: float) -> bool:
        """Whether a candidate is predicted more than ``prune`` × the best measured time."""
        if self.prune is None or self.predict is None or not loops \
                or not math.isfinite(best_s):
            return False
        if self.predict(loops, base_s) > self.prune * best_s:
            self.pruned += 1
            return True
        return False

    def canonical(self, report: Report, genes: Sequence[str],
                  gene: tuple[int, ...]) -> tuple[int, ...]:
        """``gene`` without the bits of loops nested in another offloaded loop, when the
        target runs a nested prange serially (numba: "loop serialization"): both genes are
        the same computation, so only this one is compiled, run and verified."""
        if not self.nested_serial:
            return gene
        on = {g for g, b in zip(genes, gene, strict=True) if b}

        def nested(k: str) -> bool:
            p = report.loop(k).parent
            while p is not None:
                if report.loops[p].id in on:
                    return True
                p = report.loops[p].parent
            return False

        return tuple(int(b and (":" in g or not nested(g)))  # "L1:t1": an option bit
                     for g, b in zip(genes, gene, strict=True))

    def cut_s(self, best_s: float) -> float:
        return math.inf if self.cut is None else self.cut * best_s

    def done(self, gene: tuple[int, ...]) -> None:
        self.order[gene] = (len(self.order), time.perf_counter() - self.started)


def among_work_figures(plan: Any, serial_v: Variant, args: tuple, repeats: int) -> None:
    """Time the plan as a program calls it (after NumPy/BLAS work, fresh inputs), alternating
    with the serial njit timed the same way; medians in the plan. With threadpoolctl
    installed, also the plan among the same work with the BLAS limited to one thread
    (``threadpool_limits(1, "blas")`` around work and calls: the remedy docs/offload.md
    describes)."""
    fn, ser, work = plan.compile(), serial_v.compile(), blas_work()
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(repeats):
        mine += among_work(fn, args, repeats=1, work=work)
        theirs += among_work(ser, args, repeats=1, work=work)
    plan.among_work_s, plan.serial_among_work_s = (statistics.median(mine),
                                                   statistics.median(theirs))
    try:  # the remedy, when threadpoolctl is installed (the bench extra)
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    limited: list[float] = []
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(repeats):
            limited += among_work(fn, args, repeats=1, work=work)
    plan.among_work_blas1_s = statistics.median(limited)
