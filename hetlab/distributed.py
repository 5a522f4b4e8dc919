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

>>> from dask.distributed import Client, LocalCluster          # doctest: +SKIP
>>> cluster = LocalCluster(n_workers=1, threads_per_worker=1, resources={"cpu-bench": 1})
>>> ds = hl.compare(hl.fps, sizes=[10_000], client=Client(cluster))  # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from .bench import UnitResult, measure_unit
from .core.registry import get_backend

__all__ = ["run_units", "unit_resources", "advertised_resources"]


def advertised_resources(client: Any) -> set[str]:
    """Names of the resources any worker of ``client``'s cluster advertises."""
    workers = client.scheduler_info().get("workers", {})
    return {name for w in workers.values() for name in (w.get("resources") or {})}


def unit_resources(device: str, advertised: set[str]) -> dict[str, float] | None:
    """The resource a unit on ``device`` asks for, or None when no worker offers it."""
    key = "gpu" if get_backend(device).kind == "gpu" else "cpu-bench"
    return {key: 1} if key in advertised else None


def run_units(client: Any, units: Iterable[tuple[int, str]], kernel: str, *, seed: int,
              repeats: int, warmup: int, retries: int = 2) -> Iterator[UnitResult]:
    """Submit one task per (size, device) unit; yield results as they complete.

    A unit whose task fails for good (e.g. ``KilledWorker`` after repeated worker deaths)
    is yielded as a ``UnitResult`` with ``status="failed: …"``, never raised.
    """
    from distributed import as_completed

    advertised = advertised_resources(client)
    tag = uuid.uuid4().hex[:8]
    futures = {}
    for size, device in units:
        fut = client.submit(
            measure_unit, kernel, device, size, seed=seed, repeats=repeats, warmup=warmup,
            resources=unit_resources(device, advertised), retries=retries, pure=False,
            key=f"hetlab-{kernel}-{device}-{size}-{tag}",
        )
        futures[fut] = (size, device)
    for fut in as_completed(futures):
        size, device = futures.pop(fut)
        try:
            yield fut.result()
        except Exception as exc:  # lost for good: report it, keep the rest
            yield UnitResult(device=device, size=size,
                             status=f"failed: {type(exc).__name__}: {exc}",
                             source=get_backend(device).timing_source)
