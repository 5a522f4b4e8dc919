"""``hl.compare``: a sweep of kernel × device × size units into one Dataset.

Units run in-process by default, or as tasks on a Dask cluster when a ``client`` is given
(:mod:`hetlab.distributed`). A ``checkpoint`` file keeps every finished unit as one JSON line,
so an interrupted sweep resumes where it stopped and loses nothing it had finished.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .bench import UnitResult, measure_unit
from .core.registry import backend_names, get_backend, get_kernel
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
                if row.get("sweep") != self.key:
                    continue
                unit = UnitResult(**row["unit"])
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
        yield measure_unit(kernel, device, size, **kw)


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
) -> Any:
    """Measure a kernel on several devices and sizes; return an ``xarray.Dataset``.

    Parameters
    ----------
    kernel : str, KernelSpec or hetlab kernel function (``hl.fps``)
    sizes : sequence of int
        Problem sizes in the kernel's ``size_unit`` (points for point-cloud kernels).
    devices : sequence of str, optional
        Backend names; default every registered backend. Devices that are unavailable or lack
        the kernel appear with NaN figures and a ``status`` saying why.
    repeats : int, default 5
        Timed calls per unit (after warm-up).
    warmup : int, default 1
        Untimed calls before timing; the first call's time (JIT compile included) is kept
        as ``first_call_s``.
    seed : int, default 0
        Seed of the generated cases (the same case on every device).
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
        JSON-lines file of finished units; units already there are not run again.

    Returns
    -------
    xarray.Dataset
        Dims ``(device, size, repeat)``; see :mod:`hetlab.results`.
    """
    from .results import to_dataset

    spec = get_kernel(kernel)
    names = list(devices) if devices is not None else backend_names()
    sizes = [int(s) for s in sizes]
    if not sizes or any(s < 1 for s in sizes):
        raise InvalidInputError(f"compare: sizes must be positive ints; got {sizes!r}.")
    if repeats < 1 or warmup < 1:
        raise InvalidInputError(
            f"compare: repeats and warmup must be ≥ 1; got repeats={repeats}, warmup={warmup}."
        )
    for name in names:
        get_backend(name)  # unknown names fail before any work
    units = [(size, name) for size in sizes for name in names]
    kw = {"seed": seed, "repeats": repeats, "warmup": warmup}
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
    for unit in stream:
        finished[(unit.size, unit.device)] = unit
        if store is not None:
            store.add(unit)
        if bar is not None:
            bar.set_postfix_str(f"{unit.device} n={unit.size}")
            bar.update()
        if callback is not None:
            callback(unit, len(finished), len(units))
    if bar is not None:
        bar.close()
    ds = to_dataset(spec, [finished[u] for u in units], names, sizes, repeats=repeats,
                    warmup=warmup, seed=seed)
    if include_recorded:
        from .recorded import recordings, with_recorded

        ds = with_recorded(ds, recordings(spec.name))
    return ds
