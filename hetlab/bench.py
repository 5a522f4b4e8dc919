"""One measurement method for every backend.

A *unit* is one kernel × device × size. It generates the case (seeded), validates it once on
the host, computes the reference, then on the device: copies inputs in (timed apart), makes a
first call (includes JIT compilation; reported apart), runs ``warmup`` more untimed calls and
``repeats`` timed calls each bracketed by device synchronization, copies the last result out
(timed apart) and checks it against the reference. Implementations allocate their outputs,
so a stale buffer cannot pass the check.

Implementations whose timing is modeled (the FPGA emulator) carry a ``modeled`` attribute:
the same call returning :class:`ModeledRun`. When the backend's ``timing_source`` is
``"modeled"`` the unit calls it and records the model's figures, labeled ``modeled``.
"""

from __future__ import annotations

import functools
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .core.dispatch import map_arrays, move_arrays
from .core.registry import get_backend, get_impl, get_kernel
from .core.spec import KernelSpec
from .errors import BackendUnavailable, KernelNotSupported

__all__ = ["ModeledRun", "UnitResult", "measure_unit", "case_args", "case_for"]


@dataclass(frozen=True)
class ModeledRun:
    """What a modeled implementation returns: the result and the model's times in seconds."""

    result: Any
    compute_s: float
    transfer_in_s: float = 0.0
    transfer_out_s: float = 0.0


@dataclass
class UnitResult:
    """Figures of one kernel × device × size unit (seconds; NaN where not run)."""

    device: str
    size: int
    status: str = "ok"
    source: str = "measured"
    times_s: list[float] = field(default_factory=list)
    transfer_in_s: float = float("nan")
    transfer_out_s: float = float("nan")
    first_call_s: float = float("nan")
    error: float = float("nan")
    verified: bool = False
    host: str = ""
    worker: str = ""


def _worker_name() -> str:
    """The Dask worker running this unit, or "local" in-process."""
    import sys

    if "distributed" in sys.modules:
        try:
            from distributed import get_worker

            return str(get_worker().address)
        except ValueError:
            pass
    return "local"


@functools.lru_cache(maxsize=4)
def case_args(kernel: str, size: int, seed: int) -> dict[str, Any]:
    """Validated host arguments of a generated case (cached; seeded by ``[seed, size]``)."""
    spec = get_kernel(kernel)
    rng = np.random.default_rng([seed, size])
    return spec.validate(**spec.make_case(size, rng))


@functools.lru_cache(maxsize=4)
def case_for(kernel: str, size: int, seed: int) -> tuple[dict[str, Any], Any]:
    """Validated host arguments and the reference result of a generated case (cached)."""
    validated = case_args(kernel, size, seed)
    return validated, get_kernel(kernel).reference(**validated)


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def _measured(unit: UnitResult, spec: KernelSpec, backend: Any, args: dict[str, Any],
              warmup: int, repeats: int) -> Any:
    impl = get_impl(spec.name, backend.name)
    if backend.timing_source == "modeled":
        # a modeled backend's implementation carries a `modeled` entry returning ModeledRun
        # (its plain call returns just the result, for users of hl.<kernel>(device=...))
        impl = getattr(impl, "modeled", impl)
    on_device = backend.kind != "cpu"
    dev_args, unit.transfer_in_s = _timed(
        lambda: move_arrays(spec, backend, args) if on_device else args, backend.synchronize
    )
    out, unit.first_call_s = _timed(lambda: impl(**dev_args), backend.synchronize)
    if isinstance(out, ModeledRun):
        unit.source = "modeled"
        unit.times_s = [out.compute_s] * repeats
        unit.transfer_in_s, unit.transfer_out_s = out.transfer_in_s, out.transfer_out_s
        unit.first_call_s = out.compute_s
        return out.result
    for _ in range(max(warmup - 1, 0)):
        impl(**dev_args)
    for _ in range(repeats):
        out, t = _timed(lambda: impl(**dev_args), backend.synchronize)
        unit.times_s.append(t)
    host, unit.transfer_out_s = _timed(
        lambda: map_arrays(backend.from_device, out) if on_device else out, backend.synchronize
    )
    return host


def measure_unit(kernel: str, device: str, size: int, *, seed: int = 0, repeats: int = 5,
                 warmup: int = 1) -> UnitResult:
    """Measure one kernel × device × size; never raises for a device that fails or is absent.

    Returns a :class:`UnitResult` whose ``status`` says ``"ok"``, ``"unavailable: …"``,
    ``"not supported: …"``, ``"wrong result (error …)"`` or ``"failed: …"``.
    """
    spec = get_kernel(kernel)
    backend = get_backend(device)
    unit = UnitResult(device=backend.name, size=size, source=backend.timing_source,
                      host=socket.gethostname(), worker=_worker_name())
    reason = backend.why_not()
    if reason is not None:
        unit.status, unit.source = f"unavailable: {reason}", "skipped"
        return unit
    try:
        get_impl(spec.name, backend.name)
    except KernelNotSupported as exc:
        unit.status, unit.source = f"not supported: {exc}", "skipped"
        return unit
    except BackendUnavailable as exc:
        unit.status, unit.source = f"unavailable: {exc}", "skipped"
        return unit
    args, expected = case_for(spec.name, size, seed)
    try:
        host = _measured(unit, spec, backend, args, warmup, repeats)
    except KernelNotSupported as exc:  # e.g. larger than an overlay's on-chip buffers
        unit.status, unit.times_s = f"not supported: {exc}", []
        return unit
    except Exception as exc:  # a failing device must not lose the other results
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        unit.status = f"failed: {last}"
        return unit
    unit.error, unit.verified = spec.verified(host, expected)
    if not unit.verified:
        unit.status = f"wrong result (error {unit.error:.3g} > tolerance {spec.tolerance:g})"
    return unit
