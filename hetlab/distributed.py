"""Scaling out: comparison units as tasks on a Dask cluster (``dask.distributed``).

hetlab hands scheduling, retries and data movement to Dask; it adds three rules:

* **one timing per machine at a time.** Two measurements on one machine distort each other, so
  units ask for a worker resource: ``{"cpu-bench": 1}`` for CPU and FPGA-emulator units,
  ``{"gpu": 1}`` for GPU units. Start one worker per machine with ``--resources cpu-bench=1``
  (and one per GPU with ``--resources gpu=1``); a worker then runs one timing task at a time.
  When no worker advertises the resource, units run without it and the Dataset's
  ``concurrent_timing`` attr says timings may have overlapped.
* **nothing finished is lost.** A worker that dies mid-task has its task rescheduled on another
  (Dask's ``allowed-failures``, plus ``retries``); a unit that still fails is reported in the
  Dataset with status ``"failed: …"``; finished units stream back as they complete, and
  ``hl.compare(..., checkpoint=path)`` keeps them on disk so a sweep resumes where it stopped.
* **provenance.** Each unit records the host and worker that measured it (``host`` and
  ``worker`` coordinates of the Dataset).

An in-process cluster for the example (on real machines: ``dask worker`` processes started
with ``--resources cpu-bench=1``, or ``LocalCluster(processes=True)`` in a script guarded by
``if __name__ == "__main__":``):

>>> import hetlab as hl
>>> from dask.distributed import Client, LocalCluster
>>> cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
...                        resources={"cpu-bench": 1}, dashboard_address=None)
>>> with Client(cluster) as client:
...     ds = hl.compare(hl.fps, sizes=[64], devices=["numpy"], repeats=1, client=client,
...                     progress=False)
>>> ds.status.values.ravel().tolist()
['ok']
>>> cluster.close()
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from ._sweep_args import check_devices, check_int, check_kernel
from .bench import UnitResult, describe_error, measure_unit
from .core.registry import get_backend
from .errors import InvalidInputError

__all__ = ["run_units", "unit_resources", "advertised_resources"]


def advertised_resources(client: Any) -> set[str]:
    """Names of the resources any worker of ``client``'s cluster advertises."""
    workers = client.scheduler_info().get("workers", {})
    return {name for w in workers.values() for name in (w.get("resources") or {})}


def unit_resources(device: str, advertised: set[str]) -> dict[str, float] | None:
    """The resource a unit on ``device`` asks for, or None when no worker offers it."""
    device = check_devices("unit_resources", [device], name="device")[0]
    key = "gpu" if get_backend(device).kind == "gpu" else "cpu-bench"
    return {key: 1} if key in advertised else None


def run_units(client: Any, units: Iterable[tuple[int, str]], kernel: Any, *, seed: int,
              repeats: int, warmup: int, retries: int = 2) -> Iterator[UnitResult]:
    """Submit one task per (size, device) unit; yield results as they complete.

    Parameters
    ----------
    client : dask.distributed.Client
    units : list of (size, device)
        Distinct units; size an int >= 1, device a registered backend name.
    kernel : str, KernelSpec or hetlab kernel function
    seed, repeats, warmup : int
        As in :func:`hetlab.compare` (seed >= 0, the others >= 1).
    retries : int, default 2
        Dask retries of a failed task (>= 0).

    Yields
    ------
    UnitResult
        One per unit, never raised: a unit whose task fails for good (e.g. ``KilledWorker``
        after repeated worker deaths, or a task that could not be submitted) has
        ``status="failed: …"``. Closing the generator (or a ``KeyboardInterrupt``) cancels the
        tasks not yet finished.

    Raises
    ------
    InvalidInputError
        A bad argument, naming it (before anything is submitted).
    """
    if not callable(getattr(client, "submit", None)):
        raise InvalidInputError(
            f"run_units: client must be a dask.distributed.Client; got {type(client).__name__}."
        )
    spec = check_kernel("run_units", kernel)
    todo = _check_units(units)
    seed = check_int("run_units", "seed", seed, minimum=0)
    repeats = check_int("run_units", "repeats", repeats, minimum=1)
    warmup = check_int("run_units", "warmup", warmup, minimum=1)
    retries = check_int("run_units", "retries", retries, minimum=0)
    return _stream(client, todo, spec.name, seed=seed, repeats=repeats, warmup=warmup,
                   retries=retries)


def _check_units(units: Any) -> list[tuple[int, str]]:
    if isinstance(units, str | bytes) or not isinstance(units, Iterable):
        raise InvalidInputError(
            f"run_units: units must be a list of (size, device) pairs; got {units!r}."
        )
    out = []
    for u in units:
        if not isinstance(u, tuple | list) or len(u) != 2:
            raise InvalidInputError(
                f"run_units: units must be (size, device) pairs; got {u!r}."
            )
        size = check_int("run_units", "a unit's size", u[0], minimum=1)
        device = check_devices("run_units", [u[1]], name="a unit's device")[0]
        out.append((size, device))
    if len(set(out)) != len(out):
        raise InvalidInputError(
            f"run_units: units must not repeat a (size, device) pair; got {out}."
        )
    return out


def _lost(size: int, device: str, exc: BaseException) -> UnitResult:
    return UnitResult(device=device, size=size, status=f"failed: {describe_error(exc)}",
                      source=get_backend(device).timing_source)


def _stream(client: Any, units: list[tuple[int, str]], kernel: str, *, seed: int,
            repeats: int, warmup: int, retries: int) -> Iterator[UnitResult]:
    from asyncio import CancelledError

    from distributed import as_completed

    advertised = advertised_resources(client)
    tag = uuid.uuid4().hex[:8]
    futures: dict[Any, tuple[int, str]] = {}
    unsent: list[UnitResult] = []
    for size, device in units:
        try:
            fut = client.submit(
                measure_unit, kernel, device, size, seed=seed, repeats=repeats,
                warmup=warmup, resources=unit_resources(device, advertised), retries=retries,
                pure=False, key=f"hetlab-{kernel}-{device}-{size}-{tag}",
            )
        except Exception as exc:  # could not even be sent: report it, send the rest
            unsent.append(_lost(size, device, exc))
            continue
        futures[fut] = (size, device)
    try:
        yield from unsent
        for fut in as_completed(list(futures)):
            size, device = futures.pop(fut)
            try:
                yield fut.result()
            except (Exception, CancelledError) as exc:  # lost for good: report, keep the rest
                yield _lost(size, device, exc)
    finally:
        if futures:  # interrupted or closed early: do not leave tasks running
            try:
                client.cancel(list(futures))
            except Exception:  # the cluster may be gone already
                pass
