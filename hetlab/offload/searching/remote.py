"""Offload-search candidates measured as tasks on a Dask cluster (``search(..., client=)``).

A GA generation's new candidates are submitted together, one task each; a task rebuilds the
variant from its generated source in the worker, times it and verifies it against the expected
outputs exactly as in-process (:func:`hetlab.offload.runtime.measure.measure`). The arguments and
the expected outputs travel with each task (not scattered: data held by a worker that dies would
cancel every task depending on it). Tasks ask for the same one-timing-per-
machine resource as comparison sweeps (:mod:`hetlab.distributed`); a worker that dies mid-task
has its task rescheduled by Dask, and a candidate lost for good scores zero fitness
(``status="failed: …"``) without stopping the search.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from ..runtime.measure import Measurement, measure
from ..targets.base import Variant
from ..targets.registry import get_target

__all__ = ["measure_variants"]


def _names(source: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def _measure_task(name: str, target: str, source: str, namespace: dict[str, Any], args: tuple,
                  expected: tuple, repeats: int, warmup: int, timeout_s: float,
                  passed: tuple[str, ...] = (), as_arrays: tuple[int, ...] = ()) -> Measurement:
    """Runs in a worker: rebuild the variant from its source, time it, verify it."""
    variant = Variant(name, target, (), source, dict(namespace), passed=passed,
                      as_arrays=as_arrays)
    return measure(variant.compile(), args, expected, repeats=repeats, warmup=warmup,
                   timeout_s=timeout_s, sync=get_target(target).synchronize)


def measure_variants(client: Any, variants: Sequence[Variant], args: tuple, expected: tuple,
                     *, repeats: int, warmup: int, timeout_s: float,
                     retries: int = 2) -> list[Measurement]:
    """Measure ``variants`` as Dask tasks; results in the same order, never raising."""
    from ...distributed import advertised_resources

    key = get_target(variants[0].target).resource if variants else "cpu-bench"
    resources = {key: 1} if key in advertised_resources(client) else None
    futures = []
    for v in variants:
        needed = _names(v.source)
        namespace = {k: val for k, val in v.namespace.items() if k in needed}
        futures.append(client.submit(
            _measure_task, v.name, v.target, v.source, namespace, args, expected,
            repeats, warmup, timeout_s, v.passed, v.as_arrays, resources=resources,
            retries=retries,
            pure=False))
    out = []
    for fut in futures:
        try:
            out.append(fut.result())
        except Exception as exc:  # lost for good (e.g. KilledWorker): zero fitness, go on
            out.append(Measurement(status=f"failed: {type(exc).__name__}: {exc}"))
    return out
