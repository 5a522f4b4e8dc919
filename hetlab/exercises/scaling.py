"""Checkers of notebook 06 (scaling out): which units a resumed sweep still runs, and which
Dask resource a unit asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..distributed import unit_resources
from ._core import Case, Verdict, finish, run_cases

__all__ = ["check_units_to_run", "check_resources_for"]


def _todo(sizes: list[int], devices: list[str], done: list[tuple[int, str]]) -> list[tuple]:
    finished = set(done)
    return [(s, d) for s in sizes for d in devices if (s, d) not in finished]


def check_units_to_run(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 06.1: ``fn(sizes, devices, done)`` lists the units a resumed sweep runs.

    A unit is ``(size, device)``; a sweep's units run size by size, devices in the given order
    within a size (as ``hl.compare`` orders them); units in ``done`` (read back from a
    checkpoint) are skipped; entries of ``done`` outside this sweep are ignored.

    Parameters
    ----------
    fn : callable
        ``fn(sizes: list[int], devices: list[str], done: list[tuple[int, str]])
        -> list[tuple[int, str]]``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    sizes, devices = [1_000, 4_000], ["numpy", "numba"]
    specs = [
        ("nothing done yet", [], "every (size, device) pair, sizes outer, devices inner."),
        ("everything done", _todo(sizes, devices, []), "a finished sweep runs nothing: []."),
        ("(1000, numpy) and (4000, numba) done", [(1_000, "numpy"), (4_000, "numba")],
         "skip exactly the units in `done`, keep the order of the others."),
        ("done holds (1000, numpy) twice and (99, cupy) from another sweep",
         [(1_000, "numpy"), (1_000, "numpy"), (99, "cupy")],
         "a unit of another sweep is not yours to skip or to run: ignore it."),
    ]
    cases = [Case(label, {"sizes": list(sizes), "devices": list(devices), "done": list(done)},
                  _todo(sizes, devices, done), nudge) for label, done, nudge in specs]
    verdict = run_cases("06.1 units_to_run", fn, cases,
                        lambda got, exp: [tuple(u) for u in got] == exp)
    return finish(verdict, raise_on_fail)


def check_resources_for(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 06.2: ``fn(device, advertised)`` is the Dask resource a timing unit asks for.

    Expected answers come from ``hetlab.distributed.unit_resources``: ``{"gpu": 1}`` for a
    GPU device, ``{"cpu-bench": 1}`` for every other, and None when no worker advertises it.

    Parameters
    ----------
    fn : callable
        ``fn(device: str, advertised: set[str]) -> dict[str, int] or None``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("numba; workers offer cpu-bench", "numba", {"cpu-bench"},
         "a CPU timing takes the machine's one cpu-bench slot."),
        ("cupy; workers offer cpu-bench and gpu", "cupy", {"cpu-bench", "gpu"},
         "a GPU timing asks for the gpu slot, not cpu-bench."),
        ("fpga; workers offer cpu-bench and gpu", "fpga", {"cpu-bench", "gpu"},
         "only the GPU backend needs the gpu slot; the FPGA is driven from the CPU."),
        ("numpy; no worker offers anything", "numpy", set(),
         "asking for a resource no worker has would wait forever: return None."),
        ("cupy; workers offer only cpu-bench", "cupy", {"cpu-bench"},
         "the gpu slot is not offered: return None rather than the wrong slot."),
    ]
    cases = [Case(label, {"device": d, "advertised": set(adv)}, unit_resources(d, adv), nudge)
             for label, d, adv, nudge in specs]
    verdict = run_cases("06.2 resources_for", fn, cases, lambda got, exp: got == exp)
    return finish(verdict, raise_on_fail)
