"""Option objects of :func:`~hetlab.offload.search`: the GA, the measurements, the FPGA step.

Frozen dataclasses validated on construction (an :class:`~hetlab.errors.InvalidInputError`
naming the field), the way Kernel Tuner takes ``strategy_options``::

    offload.search(fn, args, targets=["numba", "cupy"], budget=64,
                   ga=GAOptions(population=12, generations=40),
                   measure=MeasureOptions(repeats=5, confirm=0),
                   fpga=FpgaOptions(threshold=1.0, board="kv260"))
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ...errors import InvalidInputError

__all__ = ["GAOptions", "MeasureOptions", "FpgaOptions", "LEGACY", "split_legacy",
           "plan_candidates", "choose_plan"]


def _bad(cls: str, name: str, rule: str, value: Any) -> InvalidInputError:
    return InvalidInputError(f"offload.search: {cls}.{name} must be {rule}; got {value!r}.")


def _int(cls: str, name: str, value: Any, lo: int, hi: float = math.inf) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        rule = f"an int >= {lo}" if hi == math.inf else f"an int in [{lo}, {int(hi)}]"
        raise _bad(cls, name, rule, value)


def _real(cls: str, name: str, value: Any, lo: float, hi: float = math.inf,
          open_lo: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) and (lo < value if open_lo else lo <= value) and value <= hi
    if not ok:
        rule = (f"a number > {lo:g}" if open_lo else f"a number >= {lo:g}") \
            if hi == math.inf else f"a number in [{lo:g}, {hi:g}]"
        raise _bad(cls, name, rule, value)


@dataclass(frozen=True)
class GAOptions:
    """The genetic algorithm (:func:`~hetlab.offload.searching.ga.genetic_search`).

    ``selection``: ``"tournament"`` or ``"roulette"``; ``mutation_rate`` defaults to 1 /
    number of genes; ``exhaustive``: also measure every gene to check the GA (default: when
    there are at most 4 genes, 6 for the FPGA step); ``patience``: stop after this many
    generations without a better fitness (None: run all ``generations``).
    """

    population: int = 8
    generations: int = 30
    elite: int = 1
    selection: str = "tournament"
    crossover_rate: float = 0.9
    mutation_rate: float | None = None
    exhaustive: bool | None = None
    patience: int | None = 5

    def __post_init__(self) -> None:
        _int("GAOptions", "population", self.population, 2, 10_000)
        _int("GAOptions", "generations", self.generations, 0)
        _int("GAOptions", "elite", self.elite, 0, self.population - 1)
        if self.selection not in ("tournament", "roulette"):
            raise _bad("GAOptions", "selection", "'tournament' or 'roulette'", self.selection)
        _real("GAOptions", "crossover_rate", self.crossover_rate, 0.0, 1.0)
        if self.mutation_rate is not None:
            _real("GAOptions", "mutation_rate", self.mutation_rate, 0.0, 1.0)
        if self.exhaustive is not None and not isinstance(self.exhaustive, bool):
            raise _bad("GAOptions", "exhaustive", "True, False or None", self.exhaustive)
        if self.patience is not None:
            _int("GAOptions", "patience", self.patience, 1)

    def ga_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``genetic_search`` (all but ``exhaustive``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "exhaustive"}


@dataclass(frozen=True)
class MeasureOptions:
    """How candidates are timed.

    ``repeats`` timed calls per candidate (median kept) after ``warmup`` untimed ones; a call
    longer than ``timeout_factor`` × the serial time (+1 s) stops the candidate (zero
    fitness); ``confirm``: the fittest genes measured again back to back after the search
    (0: off); ``thread_tolerance``: the numba thread amount is the smallest count within this
    fraction of the best.

    Search cost: ``prune``: a candidate whose static-model time
    (:mod:`hetlab.offload.searching.model`) is more than ``prune`` × the best measured time
    is not run (counted in ``plan.pruned``; None: run every candidate); ``cut``: a candidate
    whose timed call is more than ``cut`` × the best measured time gets no further repeats
    (None: all ``repeats``); ``predictor``: ``predictor(loops, serial_s) -> seconds`` in place
    of the static model (tests inject one).

    Among other work: ``among_work`` calls of the chosen plan, each right after NumPy/BLAS
    work and on fresh copies of the arguments, are timed in the confirmation
    (``plan.among_work_s``; 0: off).

    Load: ``busy_fraction``: the search warns (``plan.load.busy``, the ``hetlab.offload``
    logger) when other processes used more than this fraction of the cores on average
    (:mod:`hetlab.offload.searching.load`); ``load_probe``: the reading function (tests inject
    one; default ``/proc/stat`` and ``os.getloadavg``).
    """

    repeats: int = 3
    warmup: int = 1
    timeout_factor: float = 20.0
    confirm: int = 3
    thread_tolerance: float = 0.1
    prune: float | None = 3.0
    cut: float | None = 2.0
    among_work: int = 5
    busy_fraction: float = 0.25
    predictor: Callable[[Sequence[str], float], float] | None = None
    load_probe: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        _int("MeasureOptions", "repeats", self.repeats, 1)
        _int("MeasureOptions", "warmup", self.warmup, 0)
        _real("MeasureOptions", "timeout_factor", self.timeout_factor, 0.0, open_lo=True)
        _int("MeasureOptions", "confirm", self.confirm, 0)
        _real("MeasureOptions", "thread_tolerance", self.thread_tolerance, 0.0)
        if self.prune is not None:
            _real("MeasureOptions", "prune", self.prune, 1.0, open_lo=True)
        if self.cut is not None:
            _real("MeasureOptions", "cut", self.cut, 1.0, open_lo=True)
        _int("MeasureOptions", "among_work", self.among_work, 0)
        _real("MeasureOptions", "busy_fraction", self.busy_fraction, 0.0, open_lo=True)
        for name in ("predictor", "load_probe"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise _bad("MeasureOptions", name, "a callable or None", value)


@dataclass(frozen=True)
class FpgaOptions:
    """The FPGA step: nests of arithmetic intensity (flop per byte of distinct array traffic)
    from ``threshold`` are candidates; ``board``: the modeled board (``"pynq-z2"`` or
    ``"kv260"``; None: ``$HETLAB_FPGA_BOARD`` or pynq-z2)."""

    threshold: float = 2.0
    board: str | None = None

    def __post_init__(self) -> None:
        _real("FpgaOptions", "threshold", self.threshold, 0.0)
        if self.board is not None and (not isinstance(self.board, str) or not self.board):
            raise _bad("FpgaOptions", "board", "a board name or None", self.board)


#: fields added after the keywords were deprecated: no old spelling
_NEW = {"patience", "prune", "cut", "among_work", "busy_fraction", "predictor", "load_probe"}
#: old keyword of ``search`` → (option object keyword, its field)
LEGACY: dict[str, tuple[str, str]] = {
    **{f.name: ("ga", f.name) for f in fields(GAOptions) if f.name not in _NEW},
    **{f.name: ("measure", f.name) for f in fields(MeasureOptions) if f.name not in _NEW},
    "fpga_threshold": ("fpga", "threshold"),
    "board": ("fpga", "board"),
}
_CLASSES: dict[str, type] = {"ga": GAOptions, "measure": MeasureOptions, "fpga": FpgaOptions}


def split_legacy(given: dict[str, Any], ga: Any, measure: Any, fpga: Any
                 ) -> tuple[GAOptions, MeasureOptions, FpgaOptions]:
    """The option objects, with the deprecated keywords in ``given`` applied on top (one
    :class:`DeprecationWarning` naming the new spelling of each)."""
    unknown = sorted(set(given) - set(LEGACY))
    if unknown:
        raise TypeError(f"search() got an unexpected keyword argument {unknown[0]!r}")
    objs: dict[str, Any] = {"ga": ga, "measure": measure, "fpga": fpga}
    for key, obj in objs.items():
        cls = _CLASSES[key]
        if obj is None:
            objs[key] = cls()
        elif not isinstance(obj, cls):
            raise InvalidInputError(f"offload.search: {key} must be a {cls.__name__}; "
                                    f"got {type(obj).__name__}.")
    if given:
        spelled = ", ".join(f"{k}= → {LEGACY[k][0]}={_CLASSES[LEGACY[k][0]].__name__}"
                            f"({LEGACY[k][1]}=…)" for k in given)
        warnings.warn(f"offload.search: keyword arguments {', '.join(given)} are deprecated "
                      f"and will be removed in the next release; pass {spelled}.",
                      DeprecationWarning, stacklevel=3)
        for key in _CLASSES:
            changes = {LEGACY[k][1]: v for k, v in given.items() if LEGACY[k][0] == key}
            if changes:
                objs[key] = replace(objs[key], **changes)
    return objs["ga"], objs["measure"], objs["fpga"]


def plan_candidates(plans: Mapping[str, Any], all_threads: int
                    ) -> list[tuple[tuple[str, int | None], float, float, dict[str, int]]]:
    """What ``objective=`` ranks: each plan, and each thread count its thread sweep measured.

    Returns ``((target, threads or None), time_s, energy_j, resources)`` per candidate;
    ``energy_j`` is modeled for CPU plans (busy threads × :func:`hetlab.energy.
    cpu_watts_per_thread` × time) and NaN for GPU and board plans (no figure: an ``"energy"``
    objective ranks only the CPU plans then).
    """
    from ...auto.objective import resources_of
    from ...energy import cpu_watts_per_thread

    kinds = {"cuda": "gpu", "fpga": "fpga"}
    out = []
    for name, plan in plans.items():
        kind = kinds.get(name, "cpu")
        if kind == "cpu" and plan.threads:
            runs = [((name, n), t, n) for n, t in sorted(plan.threads.items())]
        else:
            n = all_threads if kind == "cpu" and any(plan.best) else 1
            runs = [((name, None), plan.time_s, n)]
        for key, t, n in runs:
            res = resources_of(kind, n)
            e = t * n * cpu_watts_per_thread() if kind == "cpu" else math.nan
            out.append((key, float(t), e, res))
    return out


def choose_plan(plans: Mapping[str, Any], objective: Any, all_threads: int
                ) -> tuple[str, int | None, str]:
    """The plan (and thread count) ``objective`` picks: among candidates within its
    tolerance of the best value, the one holding the fewest resources (GPUs, then boards,
    then threads) — ``thread_tolerance``'s rule generalized. Returns ``(target, threads or
    None, note)``.

    Raises
    ------
    InvalidInputError
        No candidate has a finite objective (e.g. ``"energy"`` over GPU plans only).
    """
    cands = plan_candidates(plans, all_threads)
    key = objective.pick([(k, objective.value(t, e, r), r) for k, t, e, r in cands])
    if key is None:
        raise InvalidInputError(f"offload.search: objective {objective.describe()!r} has no "
                                f"finite value for any plan ({', '.join(plans)}); use "
                                f"objective='time' or price the resources these plans hold.")
    name, threads = key
    where = f"{name} with {threads} thread(s)" if threads is not None else name
    return name, threads, f"objective: {objective.describe()} → {where}"
