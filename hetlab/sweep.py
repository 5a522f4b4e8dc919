"""``hl.compare``: a sweep of kernel × device × size units into one Dataset.

Units run in-process by default, or as tasks on a Dask cluster when a ``client`` is given
(:mod:`hetlab.distributed`). A ``checkpoint`` file keeps every finished unit as one JSON line,
so an interrupted sweep resumes where it stopped and loses nothing it had finished.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._sweep_args import (
    MAX_REPEATS,
    check_devices,
    check_int,
    check_kernel,
    check_optional_bool,
    check_optional_callable,
    check_path,
    check_sizes,
)
from .bench import UnitResult, describe_error, measure_unit
from .errors import InvalidInputError

__all__ = ["compare", "Checkpoint"]

Unit = tuple[int, str]  # (size, device)


class Checkpoint:
    """Finished units of one sweep, appended to a JSON-lines file as they complete.

    Lines record the sweep's identity (kernel, seed, repeats, warmup); lines of another sweep
    in the same file are ignored, never overwritten.
    """

    def __init__(self, path: str | os.PathLike[str], key: dict[str, Any]) -> None:
        self.path, self.key = os.fspath(path), key

    def load(self) -> dict[Unit, UnitResult]:
        """Units already finished by this sweep."""
        done: dict[Unit, UnitResult] = {}
        if not os.path.exists(self.path):
            return done
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a crash
                if not isinstance(row, dict) or row.get("sweep") != self.key:
                    continue
                try:
                    unit = UnitResult(**row["unit"])
                except (KeyError, TypeError):
                    continue  # not a unit line (edited by hand?): run that unit again
                done[(unit.size, unit.device)] = unit
        return done

    def add(self, unit: UnitResult) -> None:
        """Append one finished unit (flushed, so a crash right after keeps it)."""
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"sweep": self.key, "unit": dataclasses.asdict(unit)}) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _run_local(units: Iterable[Unit], kernel: str, **kw: Any) -> Iterable[UnitResult]:
    for size, device in units:
        try:
            yield measure_unit(kernel, device, size, **kw)
        except Exception as exc:  # measure_unit reports failures itself; this is the backstop
            yield UnitResult(device=device, size=size, status=f"error: {describe_error(exc)}",
                             source="skipped")


def _interrupted(size: int, device: str, why: str) -> UnitResult:
    return UnitResult(device=device, size=size, source="skipped",
                      status=f"interrupted: not run ({why} stopped the sweep)")


def compare(
    kernel: Any,
    sizes: Sequence[int] = (10_000,),
    devices: Sequence[str] | None = None,
    *,
    repeats: int = 5,
    warmup: int = 1,
    seed: int = 0,
    progress: bool | None = None,
    callback: Callable[[UnitResult, int, int], None] | None = None,
    include_recorded: bool = False,
    client: Any = None,
    checkpoint: str | os.PathLike[str] | None = None,
    energy: bool = False,
    objective: Any = None,
    tolerance: float = 0.1,
) -> Any:
    """Measure a kernel on several devices and sizes; return an ``xarray.Dataset``.

    No unit's failure loses another unit's figures: a case that cannot be generated (e.g.
    ``MemoryError`` at a huge size), an absent device, a kernel that raises or times out, or a
    wrong result becomes that unit's ``status`` (``"error: MemoryError: …"``,
    ``"unavailable: …"``, ``"failed: …"``, ``"wrong result …"``) and the sweep goes on. A
    ``KeyboardInterrupt`` stops the sweep: the Dataset of what finished is returned (with a
    warning), the units not run say ``"interrupted: …"``, and a checkpoint keeps the finished
    ones for a rerun. An exception raised by ``callback`` is the caller's and propagates
    (after the checkpoint has kept the unit).

    Parameters
    ----------
    kernel : str, KernelSpec or hetlab kernel function (``hl.fps``)
    sizes : list of int
        Distinct problem sizes >= 1 in the kernel's ``size_unit`` (points for point-cloud
        kernels); NumPy integers are accepted.
    devices : list of str, optional
        Distinct registered backend names; default every registered backend. Devices that are
        unavailable or lack the kernel appear with NaN figures and a ``status`` saying why.
    repeats : int, default 5
        Timed calls per unit (after warm-up), >= 1.
    warmup : int, default 1
        Untimed calls before timing (>= 1); the first call's time (JIT compile included) is
        kept as ``first_call_s``.
    seed : int, default 0
        Non-negative seed of the generated cases (the same case on every device).
    progress : bool, optional
        Show a tqdm progress bar; default when more than two units run.
    callback : callable, optional
        Called as ``callback(unit, done, total)`` after each unit (dashboards use it).
    include_recorded : bool, default False
        Append the shipped recordings of this kernel (:mod:`hetlab.recorded`) as extra devices
        labeled "recorded on <device>, <date>" with ``source="recorded"``.
    client : dask.distributed.Client, optional
        Run each unit as a task on this cluster (see :mod:`hetlab.distributed` for the
        resource rules that keep two timings off one machine at once).
    checkpoint : path, optional
        JSON-lines file (in an existing folder) of finished units; units already there are
        not run again.

    energy : bool, default False
        Add ``energy_j`` (J per call), ``power_w`` (W), ``energy_source`` ("measured" by a
        counter, "modeled" or "recorded") and ``energy_how`` per (device, size)
        (:mod:`hetlab.energy`; CPU energy is modeled where no RAPL counter is readable, and
        ``ds.attrs["energy_note"]`` says so). In-process sweeps only.
    objective : "time", "energy" or a mapping of resource → price per second, optional
        Rank the devices of each size: adds ``objective_value`` (device, size), ``pick`` and
        ``pick_source`` (size), the device holding the fewest resources (GPUs, boards,
        threads) among those within ``tolerance`` of the best (:class:`hetlab.auto.Objective`;
        resources ``"thread"``, ``"gpu"``, ``"board"``). ``"energy"`` implies ``energy=True``.
    tolerance : float, default 0.1
        Fraction of the best objective within which fewer resources win.

    Returns
    -------
    xarray.Dataset
        Dims ``(device, size, repeat)``; see :mod:`hetlab.results`.

    Raises
    ------
    InvalidInputError
        Any argument of the wrong type or range, naming it (checked before any work).
    """
    from .results import to_dataset

    spec = check_kernel("compare", kernel)
    sizes = check_sizes("compare", sizes)
    names = check_devices("compare", devices)
    repeats = check_int("compare", "repeats", repeats, minimum=1, maximum=MAX_REPEATS)
    warmup = check_int("compare", "warmup", warmup, minimum=1, maximum=MAX_REPEATS)
    seed = check_int("compare", "seed", seed, minimum=0)
    progress = check_optional_bool("compare", "progress", progress)
    callback = check_optional_callable("compare", "callback", callback)
    include_recorded = check_optional_bool("compare", "include_recorded", include_recorded,
                                           allow_none=False)
    if checkpoint is not None:
        checkpoint = check_path("compare", "checkpoint", checkpoint, parent_must_exist=True)
    energy = check_optional_bool("compare", "energy", energy, allow_none=False)
    rank = None
    if objective is not None:
        from .auto.objective import Objective

        rank = Objective.of(objective, tolerance)
        energy = energy or rank.kind == "energy"
    if energy and client is not None:
        raise InvalidInputError(
            "compare: energy=True reads counters around the timed calls in this process; got "
            "a client as well. Drop client= (or energy=) to run the sweep.")
    if client is not None and not callable(getattr(client, "submit", None)):
        raise InvalidInputError(
            f"compare: client must be a dask.distributed.Client (or None to run here); got "
            f"{type(client).__name__}."
        )
    units = [(size, name) for size in sizes for name in names]
    kw: dict[str, Any] = {"seed": seed, "repeats": repeats, "warmup": warmup}
    if energy:  # only then: checkpoints of earlier sweeps keep their key
        kw["energy"] = True
    store = Checkpoint(checkpoint, {"kernel": spec.name, **kw}) if checkpoint else None
    finished = {u: r for u, r in (store.load() if store else {}).items() if u in units}
    todo = [u for u in units if u not in finished]

    show = progress if progress is not None else len(todo) > 2
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(units), initial=len(finished), desc=f"compare {spec.name}",
                   leave=False)
    if client is None:
        stream = _run_local(todo, spec.name, **kw)
    else:
        from .distributed import run_units

        stream = run_units(client, todo, spec.name, **kw)
    try:
        for unit in stream:
            finished[(unit.size, unit.device)] = unit
            if store is not None:
                _keep(store, unit)
            if bar is not None:
                bar.set_postfix_str(f"{unit.device} n={unit.size}")
                bar.update()
            if callback is not None:
                callback(unit, len(finished), len(units))
    except KeyboardInterrupt:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # cancels the cluster's remaining tasks
        n_done = len(finished)
        for size, name in units:
            if (size, name) not in finished:
                finished[(size, name)] = _interrupted(size, name, "KeyboardInterrupt")
        warnings.warn(
            f"compare: interrupted; returning the {n_done} of {len(units)} units that "
            "finished (the others say 'interrupted').",
            RuntimeWarning, stacklevel=2,
        )
    finally:
        if bar is not None:
            bar.close()
    ds = to_dataset(spec, [finished[u] for u in units], names, sizes, repeats=repeats,
                    warmup=warmup, seed=seed)
    if include_recorded:
        from .recorded import recordings, with_recorded

        try:
            ds = with_recorded(ds, recordings(spec.name))
        except Exception as exc:  # a broken recording must not cost the live figures
            warnings.warn(f"compare: recordings left out ({describe_error(exc)}).",
                          RuntimeWarning, stacklevel=2)
        if energy:
            ds = _label_recorded_energy(ds)
    if rank is not None:
        from .auto.objective import rank_dataset

        ds = rank_dataset(ds, rank)
    return ds


def _label_recorded_energy(ds: Any) -> Any:
    """Recorded devices' energy figures are "recorded" (or absent: "")."""
    import numpy as np

    if "energy_source" not in ds:
        return ds
    rec = (ds["source"] == "recorded").values
    src = ds["energy_source"].values.astype(object)
    has = np.isfinite(ds["energy_j"].values)
    src[rec, :] = np.where(has[rec, :], "recorded", "")
    ds["energy_source"] = (("device", "size"), src.astype(str))
    ds["energy_how"] = ds["energy_how"].fillna("").astype(str)
    return ds


def _keep(store: Checkpoint, unit: UnitResult) -> None:
    """Append a unit to the checkpoint; a failing disk costs the checkpoint, not the sweep."""
    try:
        store.add(unit)
    except OSError as exc:
        warnings.warn(f"compare: checkpoint {store.path!r} not written ({exc}); the sweep "
                      "goes on and its Dataset keeps every unit.", RuntimeWarning, stacklevel=3)
