"""The :class:`Plan` :func:`~hetlab.offload.search` returns: chosen loops, figures, views."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidInputError
from ..analysis.report import Report
from ..runtime.guard import python_when_untypable
from ..runtime.measure import Measurement
from ..runtime.results import ResultTypes
from ..targets.base import Variant, alias_guard, wrap_like
from ..targets.generate import transform
from ..targets.registry import get_target, target_names
from .ga import GAResult
from .load import LoadRecord

__all__ = ["OutlinedLoop", "Plan", "with_threads"]


@dataclass(frozen=True)
class OutlinedLoop:
    """A loop cut out of a function run as written and compiled alone
    (:mod:`hetlab.offload.searching.outline`): its file lines, the name of the function it
    became, and that function's plan (searched like any function)."""

    line: int
    end_line: int
    name: str
    plan: Plan
    #: lines of the tqdm progress bars its loops iterated, dropped in the compiled function
    progress_dropped: tuple[int, ...] = ()

    def holds(self, line: int) -> bool:
        """Whether the file line ``line`` is inside the outlined loop."""
        return self.line <= line <= self.end_line

    def label(self) -> str:
        """``"line 12: L1+fp:reassoc"``: where the loop is and what its plan offloads."""
        p = self.plan
        return (f"line {self.line}: "
                + ("+".join([*p.blocks, *p.loops, *p.options]) or "serial njit"))


def with_kinds(impl: Callable[..., Any], name: str, params: list[str],
               kinds: dict[str, tuple[int, bool]]) -> Callable[..., Any]:
    """``impl`` refusing array arguments whose rank, or whether they hold floating-point
    numbers, differ from ``kinds`` (parameter → (ndim, floats) of the search's arguments;
    ndim 0: the search passed a number, and an array there is refused).

    >>> import numpy as np
    >>> f = with_kinds(lambda x: x.sum(), "f", ["x"], {"x": (1, True)})
    >>> float(f(np.ones(3)))
    3.0
    >>> f(np.ones((2, 2)))
    Traceback (most recent call last):
    ...
    hetlab.errors.InvalidInputError: offload: the plan of f was searched with x a 1-D \
floating-point array; got a 2-D float64 array. Its code may rely on both (full-rank element \
reads are numbers, float accumulators held in scalars): search again with such arguments, or \
call the function itself.
    """
    import numpy as np

    where = tuple((k, p, *kinds[p]) for k, p in enumerate(params) if p in kinds)
    nd = np.ndarray

    def refuse(a: Any, p: str, ndim: int, floats: bool) -> None:
        if ndim == 0:  # a number in the search: an array of any rank is refused
            raise InvalidInputError(
                f"offload: the plan of {name} was searched with {p} a number; got a "
                f"{a.ndim}-D {a.dtype} array. Its code may rely on it (slice statements run "
                "as element loops): search again with such arguments, or call the function "
                "itself.")
        what = "floating-point" if floats else "non-floating-point"
        raise InvalidInputError(
            f"offload: the plan of {name} was searched with {p} a {ndim}-D {what} array; got "
            f"a {a.ndim}-D {a.dtype} array. Its code may rely on both (full-rank element reads "
            "are numbers, float accumulators held in scalars): search again with such "
            "arguments, or call the function itself.")

    def call(*args: Any) -> Any:
        n = len(args)
        for k, p, ndim, floats in where:
            if k < n:
                a = args[k]
                if isinstance(a, nd) and (a.ndim if ndim == 0 else (
                        a.ndim != ndim or (a.dtype.kind in "fc") != floats)):
                    refuse(a, p, ndim, floats)
        return impl(*args)

    return call


def with_threads(impl: Callable[..., Any], threads: int) -> Callable[..., Any]:
    """``impl`` run on ``threads`` numba threads: set around each call, restored after.

    ``numba.set_num_threads`` is per calling thread, so this changes nothing for other
    threads; the count is capped at ``numba.config.NUMBA_NUM_THREADS``.

    Examples
    --------
    >>> import numba
    >>> before = numba.get_num_threads()
    >>> with_threads(lambda: numba.get_num_threads(), 1)()
    1
    >>> numba.get_num_threads() == before
    True
    """
    import numba

    n = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))

    def call(*args: Any) -> Any:
        before = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            return impl(*args)
        finally:
            numba.set_num_threads(before)

    return call


def _plan_name(target: str) -> str:
    """What plans call ``target`` (``"cupy"``, ``"gpu"`` → ``"cuda"``); unknown names as given."""
    try:
        return get_target(target).name
    except InvalidInputError:
        return target


def _stage(name: str) -> str:
    """How ``search`` explored target ``name`` ("loops", "nests"; "" when not registered)."""
    try:
        return str(getattr(get_target(name), "stage", "loops"))
    except InvalidInputError:
        return ""


def _under(report: Report, loop: str, root: str) -> bool:
    p = report.loop(loop).parent
    while p is not None:
        if report.loops[p].id == root:
            return True
        p = report.loops[p].parent
    return False


@dataclass
class Plan:
    """The result of :func:`search`: the chosen loops, the figures behind the choice."""

    report: Report
    target: str
    genes: list[str]
    best: tuple[int, ...]
    measurements: dict[tuple[int, ...], Measurement]
    serial_s: float
    auto_s: float
    ga: GAResult
    exhaustive: GAResult | None
    threads: dict[int, float] = field(default_factory=dict)
    thread_choice: int | None = None
    variants: dict[tuple[int, ...], Variant] = field(default_factory=dict, repr=False)
    #: cuda: host↔device copies and bytes of one call, {"naive": …, "reduced": …}
    transfers: dict[str, dict[str, int]] = field(default_factory=dict)
    #: every target's plan (this one included), and targets skipped with the reason
    alternatives: dict[str, Plan] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)
    #: medians of the confirmation round (gene or "auto" → seconds), measured back to back
    confirmed: dict[Any, float] = field(default_factory=dict)
    #: function blocks replaced by library calls in every candidate (numba), and each tried
    #: block set's measurement (tried before the loop search)
    blocks: tuple[str, ...] = ()
    block_trials: dict[tuple[str, ...], Measurement] = field(default_factory=dict)
    #: the FPGA step (``FpgaTrial``: nests, intensities, outcomes), when "fpga" was a target
    fpga: Any = None
    #: fpga plans: the modeled board
    board: str = ""
    #: search cost: candidates not run because the static model predicted them more than
    #: ``MeasureOptions.prune`` × the best measured time; candidates measured (GA and
    #: exhaustive, the serial baseline not counted); how many of them, and the wall time
    #: (s, from the start of ``search``), until the chosen one was measured (0 and NaN when
    #: the serial baseline was kept); the whole search's wall time (s)
    pruned: int = 0
    evaluations: int = 0
    evaluations_to_best: int = 0
    seconds_to_best: float = math.nan
    search_s: float = math.nan
    #: the plan and the serial njit timed the way a program calls them: each call right after
    #: NumPy/BLAS work, on fresh inputs (medians, s; NaN when not measured)
    among_work_s: float = math.nan
    serial_among_work_s: float = math.nan
    #: the plan among the same work with the BLAS held to one thread (threadpoolctl; NaN
    #: without it)
    among_work_blas1_s: float = math.nan
    #: the machine's load during the search (:class:`~hetlab.offload.searching.load.LoadRecord`)
    load: LoadRecord | None = None
    #: why the plan runs the function as written (nothing compiled); "" for a searched plan
    #: (:mod:`hetlab.offload.searching.fallback`)
    fallback: str = ""
    #: loops of a function run as written that were compiled alone, the rest of it running
    #: in Python (:mod:`hetlab.offload.searching.outline`); its time and :attr:`speedup`
    #: are then against the function as written (there is no serial njit of the whole)
    outlined: list[OutlinedLoop] = field(default_factory=list)
    #: NumPy scalar types of the plain function's result, restored on compiled calls
    #: (:class:`~hetlab.offload.runtime.results.ResultTypes`); None: as numba returns them
    result_types: ResultTypes | None = None
    #: array parameter → (ndim, holds floats) of the search's arguments: the variant may rely
    #: on both (a full-rank element read is a number; a float accumulator held in a scalar),
    #: so :meth:`compile` refuses a call whose arrays differ there
    arg_kinds: dict[str, tuple[int, bool]] = field(default_factory=dict)

    @property
    def loops(self) -> list[str]:
        """Ids of the loops the plan offloads."""
        return [g for g, bit in zip(self.genes, self.best, strict=True)
                if bit and ":" not in g]  # fpga genes "L1:u2" are unroll bits

    @property
    def options(self) -> list[str]:
        """The option genes the plan sets: ``"fp:reassoc"`` (numba's fastmath reassociation),
        tile sizes ``"L1:t1"``, FPGA unroll bits ``"L1:u2"``."""
        return [g for g, bit in zip(self.genes, self.best, strict=True) if bit and ":" in g]

    @property
    def modeled(self) -> bool:
        """Whether this plan is the FPGA step's (nests as kernels): its time is modeled."""
        return _stage(self.target) == "nests"

    @property
    def time_s(self) -> float:
        """Median time of the plan (from the confirmation round when there was one)."""
        if self.best in self.confirmed:
            return self.confirmed[self.best]
        return self.measurements[self.best].time_s

    @property
    def speedup(self) -> float:
        """Plan time against the serial ``njit`` of the original (against the function as
        written for a plan with :attr:`outlined` loops; 1 for one run as written)."""
        return self.serial_s / self.time_s

    @property
    def verified(self) -> bool:
        return self.measurements[self.best].verified

    def variant(self) -> Variant:
        if self.best not in self.variants:
            self.variants[self.best] = transform(self.report, self.loops, target=self.target,
                                                 blocks=self.blocks)
        return self.variants[self.best]

    def compile(self, on_alias: str = "raise") -> Callable[..., Any]:
        """A callable with the original's signature running the chosen variant.

        Every call checks the assumption the plan was searched on: no array the function
        writes shares memory with another argument (``f(x, x)``, ``f(x[:-1], x[1:])``).
        ``on_alias="raise"`` (default) refuses such a call with
        :class:`~hetlab.errors.InvalidInputError` naming the two arguments;
        ``on_alias="serial"`` runs the original function on it instead.

        An array argument of another rank, or not floating-point where the search's was (or
        the reverse), is refused too (:class:`~hetlab.errors.InvalidInputError`): the plan's
        code may rely on both (:attr:`arg_kinds`); search again for such arguments.
        Arguments numba cannot type (an empty list, a list of lists) run the original
        function, with a RuntimeWarning saying why.

        A numba plan with a :attr:`thread_choice` runs each call on that many threads
        (``numba.set_num_threads`` around the call, the caller's count restored after, also
        when the call raises); capped at ``numba.config.NUMBA_NUM_THREADS``.
        """
        variant = self.variant()
        if self.fallback:  # the original itself: nothing assumed, keywords passed through
            return variant.compile(on_alias)
        if variant.guard is None:  # built elsewhere (a worker, an older plan): check anyway
            variant.guard = alias_guard(self.report)
        impl = python_when_untypable(variant.compile(on_alias), variant.guard.original,
                                     self.report.name)
        if self.thread_choice is not None and any(self.best):  # set for CPU plans only
            impl = with_threads(impl, self.thread_choice)
        if self.arg_kinds:
            impl = with_kinds(impl, self.report.name, self.report.params, self.arg_kinds)
        if self.result_types is not None:  # np.float32 stays np.float32, not a Python float
            impl = self.result_types.wrap(impl)
        return wrap_like(self.report.source.fn, impl)

    def source(self, target: str | None = None) -> str:
        """The generated source of the chosen variant (or of another searched target's)."""
        target = _plan_name(target or self.target)
        if _stage(target) == "nests" and self.fpga is not None and self.fpga.kernels and (
                self.target != target or not self.loops):
            return ("// hetlab.offload: FPGA kernels tried (modeled), not chosen by the plan\n"
                    + self.fpga.kernels)
        if target == self.target:
            return self.variant().source
        if target in self.alternatives:
            return self.alternatives[target].source(target)
        raise InvalidInputError(f"offload: plan.source target must be one of "
                                f"{sorted(self.alternatives) or [self.target]}; got {target!r}.")

    def table(self) -> Any:
        """pandas DataFrame: one row per loop with verdict and destination."""
        import pandas as pd

        rows = []
        in_block = {k: self.report.block(b) for b in self.blocks
                    for k in self.report.block(b).loops}
        nests = {n.root: n for n in self.fpga.nests} if self.fpga is not None else {}
        in_fpga = {k: r for r in (self.loops if self.modeled else [])
                   for k in nests[r].loops}
        cpu = getattr(self.variants.get(self.best), "cpu_loops", ()) \
            if self.modeled else ()
        kind = getattr(get_target(self.target), "loop_kind", "")
        for lp in self.report.loops:
            dest = f"{self.target} {kind}" if lp.id in self.loops else \
                "host (as written)" if self.fallback else "host"
            out = next((o for o in self.outlined if o.holds(lp.line)), None)
            if out is not None:
                dest = f"outlined into {out.name} ({out.label()})"
            if lp.id in in_block:
                b = in_block[lp.id]
                dest = f"block {b.id} ({b.pattern}: {b.call})"
            if lp.id in in_fpga:
                dest = self.fpga.outcome.get(in_fpga[lp.id], "fpga kernel (modeled)")
            elif lp.id in cpu:
                dest = "numba prange (host part of the FPGA plan)"
            row = {"loop": lp.id, "line": lp.line, "nest": "  " * lp.depth + lp.var,
                   "verdict": lp.verdict, "destination": dest}
            if nests:
                n = nests.get(lp.id)
                row["intensity"] = round(n.intensity, 3) if n is not None else None
                row["fpga"] = self.fpga.outcome.get(lp.id, "") if n is not None else ""
            rows.append(row)
        return pd.DataFrame(rows).set_index("loop")

    def destinations(self) -> Any:
        """pandas DataFrame, one row per nest (outermost parallelizable loop): what each
        destination did with it, in the order tried (CPU, GPU, FPGA), and why the others were
        skipped. ``fpga_s``: modeled time of one FPGA kernel call (``source`` says so)."""
        import pandas as pd

        alts = self.alternatives or {self.target: self}
        nests = self.fpga.nests if self.fpga is not None else []
        roots = [n.root for n in nests] or [lp.id for lp in self.report.loops
                                            if lp.parallelizable and (
                                                lp.parent is None or not self.report.loops[
                                                    lp.parent].parallelizable)]
        skipped = {n.split(":", 1)[0]: n.split(":", 1)[1].strip() for n in self.notes
                   if "skipped" in n}
        loop_targets = [t.name for t in map(get_target, target_names())
                        if getattr(t, "stage", "loops") == "loops"]
        rows = []
        for r in roots:
            lp = self.report.loop(r)
            row: dict[str, Any] = {"nest": r, "line": lp.line, "var": lp.var}
            for t in loop_targets:
                p = alts.get(t)
                mine = [k for k in p.loops if k == r or _under(self.report, k, r)] \
                    if p is not None else []
                blocks = [b for b in (p.blocks if p is not None else ())
                          if r in self.report.block(b).loops]
                out = next((o for o in p.outlined if o.holds(lp.line)), None) \
                    if p is not None else None
                row[t] = (skipped.get(t, "not asked") if p is None
                          else f"outlined into {out.name} ({out.label()})" if out is not None
                          else "function block " + "+".join(blocks) if blocks
                          else "offloaded: " + ", ".join(mine) if mine else "tried, host kept")
            n = next((x for x in nests if x.root == r), None)
            if self.fpga is None:
                row["fpga"] = skipped.get("fpga", "not asked")
            else:
                row["intensity"] = n.intensity if n is not None else None
                row["fpga"] = self.fpga.outcome.get(r, "")
                m = self.fpga.tried_models.get(r)
                row["fpga_s"] = m.total_s if m is not None else None
                row["source"] = "modeled" if m is not None else ""
            row["chosen"] = self.target
            rows.append(row)
        if not rows:  # no parallelizable nest: an empty table with the columns
            return pd.DataFrame(columns=["nest", "line", "var", *loop_targets, "fpga",
                                         "chosen"]).set_index("nest")
        return pd.DataFrame(rows).set_index("nest")

    def candidates(self) -> Any:
        """pandas DataFrame of every measured gene: loops, median time, speedup, status."""
        import pandas as pd

        base = self.measurements[(0,) * len(self.genes)].time_s
        zero = f"(blocks {'+'.join(self.blocks)})" if self.blocks else "(serial)"
        rows = [{"loops": "+".join(g for g, b in zip(self.genes, gene, strict=True) if b)
                 or zero, "time_s": m.time_s, "speedup": base / m.time_s
                 if m.times_s else 0.0, "status": m.status, "error": m.error,
                 "source": m.source}
                for gene, m in self.measurements.items()]
        return pd.DataFrame(rows).sort_values("time_s").reset_index(drop=True)

    def summary(self) -> str:
        if self.fallback and self.outlined:
            return (f"offload.search({self.report.name}, target={self.target}): the function "
                    f"runs as written ({self.fallback}) but for its loops at "
                    f"{'; '.join(o.label() for o in self.outlined)}, compiled alone; "
                    f"{self.time_s * 1e3:.3g} ms vs {self.serial_s * 1e3:.3g} ms as written "
                    f"({self.speedup:.2f}×); verified={self.verified}"
                    + "".join(f"\nnote: {n}" for n in self.notes[1:]))
        if self.fallback:
            m = self.measurements[self.best]
            return (f"offload.search({self.report.name}, target={self.target}): offload "
                    f"nothing; runs as written: {self.fallback}; {m.time_s * 1e3:.3g} ms "
                    f"({m.status})" + "".join(f"\nnote: {n}" for n in self.notes[1:]))
        ex = (f"; exhaustive optimum {self.exhaustive.fitness:.2f}× over all "
              f"{2 ** len(self.genes)} patterns" if self.exhaustive else "")
        thr = (f"; {self.thread_choice} threads within tolerance of the best"
               if self.thread_choice else "")
        moved = ""
        if self.transfers:
            nv, rd = self.transfers["naive"], self.transfers["reduced"]
            moved = (f"; transfers {nv['copies']} copies / {nv['bytes']} B per-launch → "
                     f"{rd['copies']} / {rd['bytes']} B reduced")
        notes = "".join(f"\nnote: {n}" for n in self.notes)
        found = (f"best after {self.evaluations_to_best} ({self.seconds_to_best:.3g} s)"
                 if self.evaluations_to_best else "best: the baseline")
        cost = (f"; search {self.search_s:.3g} s, {self.evaluations} candidates measured, "
                f"{self.pruned} pruned by the static model, {found}"
                if math.isfinite(self.search_s) else "")
        if math.isfinite(self.among_work_s):
            cost += (f"; among NumPy/BLAS work {self.among_work_s * 1e3:.3g} ms vs serial "
                     f"{self.serial_among_work_s * 1e3:.3g} ms")
            if math.isfinite(self.among_work_blas1_s):
                cost += f", {self.among_work_blas1_s * 1e3:.3g} ms with BLAS on 1 thread"
        load = f"\nload: {self.load.describe()}" if self.load is not None else ""
        blk = f", replace function blocks {', '.join(self.blocks)}" if self.blocks else ""
        if self.options and not self.modeled:
            blk += f", options {', '.join(self.options)}"
        if self.modeled and self.loops:
            blk += (f" as FPGA kernels; time MODELED (host part measured, kernels by the "
                    f"FPGA timing model for {self.board}), not measured")
        elif self.modeled:
            blk += " (FPGA kernels tried with modeled times: none faster than the serial njit)"
        if self.block_trials:
            tried = ", ".join(f"{'+'.join(bs)} {m.time_s * 1e3:.3g} ms ({m.status})"
                              for bs, m in self.block_trials.items())
            kept = "+".join(self.blocks) or "none kept"
            notes = f"; function blocks tried first: {tried}; replaced: {kept}" + notes
        return (f"offload.search({self.report.name}, target={self.target}): offload "
                f"{', '.join(self.loops) or 'nothing'}{blk}; {self.time_s * 1e3:.3g} ms vs serial "
                f"njit {self.serial_s * 1e3:.3g} ms ({self.speedup:.2f}×), njit(parallel=True) "
                f"auto {self.auto_s * 1e3:.3g} ms; verified={self.verified}; GA best "
                f"{self.ga.fitness:.2f}× after {self.ga.evaluations} evaluations{ex}{thr}"
                f"{moved}{cost}{notes}{load}")

    def __repr__(self) -> str:
        return self.summary() + "\n" + self.table().to_string()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.summary())}</p>" + self.table().to_html()
