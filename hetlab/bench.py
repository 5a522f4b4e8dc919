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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._sweep_args import MAX_REPEATS, check_devices, check_int, check_kernel
from .core.dispatch import map_arrays, move_arrays
from .core.modeled import ModeledRun
from .core.registry import get_backend, get_impl, get_kernel
from .core.spec import KernelSpec
from .core.validation import check_allocation
from .energy import energy_of, meter_for
from .errors import BackendUnavailable, InvalidInputError, KernelNotSupported

__all__ = ["ModeledRun", "UnitResult", "measure_unit", "case_args", "case_for",
           "describe_error"]


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
    #: with ``energy=True`` (:mod:`hetlab.energy`): J per call, W, its source and how
    energy_j: float = float("nan")
    power_w: float = float("nan")
    energy_source: str = ""
    energy_how: str = ""


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


def case_args(kernel: Any, size: int, seed: int) -> dict[str, Any]:
    """Validated host arguments of a generated case (cached; seeded by ``[seed, size]``).

    Parameters
    ----------
    kernel : str, KernelSpec or hetlab kernel function
    size : int
        Case size (>= 1) in the kernel's ``size_unit``.
    seed : int
        Non-negative seed.
    """
    spec = check_kernel("case_args", kernel)
    size = _check_case_size("case_args", size)
    return _generated("case_args", size, lambda: _case_args(
        spec.name, size, check_int("case_args", "seed", seed, minimum=0)))


def case_for(kernel: Any, size: int, seed: int) -> tuple[dict[str, Any], Any]:
    """Validated host arguments and the reference result of a generated case (cached)."""
    spec = check_kernel("case_for", kernel)
    size = _check_case_size("case_for", size)
    return _generated("case_for", size, lambda: _case_for(
        spec.name, size, check_int("case_for", "seed", seed, minimum=0)))


def _check_case_size(fn: str, size: Any) -> int:
    """A case of ``size`` items holds at least ``size`` 4-byte values: refuse, before
    generating it, one that cannot fit this machine's memory."""
    size = check_int(fn, "size", size, minimum=1)
    check_allocation(fn, 4.0 * size, f"a case of size={size} (at least {size} 4-byte values)",
                     "Use a smaller size.")
    return size


def _generated(fn: str, size: int, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except MemoryError:  # the generator's own arrays did not fit: the size is the cause
        raise InvalidInputError(
            f"{fn}: size={size} is too large: generating its case ran out of memory. Use a "
            "smaller size.") from None


@functools.lru_cache(maxsize=4)
def _case_args(kernel: str, size: int, seed: int) -> dict[str, Any]:
    spec = get_kernel(kernel)
    rng = np.random.default_rng([seed, size])
    return spec.validate(**spec.make_case(size, rng))


@functools.lru_cache(maxsize=4)
def _case_for(kernel: str, size: int, seed: int) -> tuple[dict[str, Any], Any]:
    validated = _case_args(kernel, size, seed)
    return validated, get_kernel(kernel).reference(**validated)


#: in the ``status`` of a unit whose case could not be generated
CASE_FAILED = "generating the case"


def describe_error(exc: BaseException) -> str:
    """``"Type: message"`` of an exception, on one line (for a unit's ``status``)."""
    # a private subclass (numpy's _ArrayMemoryError) is named by its public base (MemoryError)
    name = next((c.__name__ for c in type(exc).__mro__ if not c.__name__.startswith("_")),
                type(exc).__name__)
    text = " ".join(str(exc).split())
    return f"{name}: {text}" if text else name


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def _measured(unit: UnitResult, spec: KernelSpec, backend: Any, args: dict[str, Any],
              warmup: int, repeats: int, energy: bool = False) -> Any:
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
    meter = meter_for(backend) if energy else None
    if meter is not None:
        backend.synchronize()
        meter.start()
    for _ in range(repeats):
        out, t = _timed(lambda: impl(**dev_args), backend.synchronize)
        unit.times_s.append(t)
    if meter is not None:
        unit.energy_j, unit.energy_how = meter.stop(), meter.how  # J over all repeats
    host, unit.transfer_out_s = _timed(
        lambda: map_arrays(backend.from_device, out) if on_device else out, backend.synchronize
    )
    return host


def measure_unit(kernel: Any, device: str, size: int, *, seed: int = 0, repeats: int = 5,
                 warmup: int = 1, energy: bool = False) -> UnitResult:
    """Measure one kernel × device × size; never raises once its arguments are valid.

    Every failure becomes the unit's ``status``: ``"ok"``, ``"unavailable: …"``,
    ``"not supported: …"``, ``"wrong result (…)"``, ``"failed: <Type>: …"`` (the device's
    call raised) or ``"error: <Type>: …"`` (anything else, e.g. the case could not be
    generated: ``"error: MemoryError: … (generating the case of size …)"``).

    ``energy=True`` adds ``energy_j`` (J per call), ``power_w`` and ``energy_source``
    (measured by a counter around the timed calls, or modeled: :mod:`hetlab.energy`).

    Raises
    ------
    InvalidInputError
        Unknown kernel or device; size, repeats or warmup not an int >= 1; seed not an
        int >= 0; energy not a bool.
    """
    spec = check_kernel("measure_unit", kernel)
    name = check_devices("measure_unit", [device], name="device")[0]
    size = check_int("measure_unit", "size", size, minimum=1)
    seed = check_int("measure_unit", "seed", seed, minimum=0)
    repeats = check_int("measure_unit", "repeats", repeats, minimum=1, maximum=MAX_REPEATS)
    warmup = check_int("measure_unit", "warmup", warmup, minimum=1, maximum=MAX_REPEATS)
    if not isinstance(energy, bool):
        raise InvalidInputError(f"measure_unit: energy must be True or False; got {energy!r}.")
    backend = get_backend(name)
    unit = UnitResult(device=backend.name, size=size, source="skipped")
    try:
        unit.source = backend.timing_source
        unit.host, unit.worker = socket.gethostname(), _worker_name()
        _measure(unit, spec, backend, size, seed=seed, repeats=repeats, warmup=warmup,
                 energy=energy)
    except Exception as exc:  # nothing may escape: a sweep keeps every other unit
        _clear(unit, f"error: {describe_error(exc)}")
    return unit


def _clear(unit: UnitResult, status: str, source: str | None = None) -> None:
    """Mark a unit not measured: its figures NaN, ``status`` saying why."""
    unit.status, unit.times_s, unit.verified = status, [], False
    unit.transfer_in_s = unit.transfer_out_s = unit.first_call_s = unit.error = float("nan")
    unit.energy_j = unit.power_w = float("nan")
    unit.energy_source = unit.energy_how = ""
    if source is not None:
        unit.source = source


def _measure(unit: UnitResult, spec: KernelSpec, backend: Any, size: int, *, seed: int,
             repeats: int, warmup: int, energy: bool = False) -> None:
    reason = backend.why_not()
    if reason is not None:
        _clear(unit, f"unavailable: {reason}", "skipped")
        return
    try:
        get_impl(spec.name, backend.name)
    except KernelNotSupported as exc:
        _clear(unit, f"not supported: {exc}", "skipped")
        return
    except BackendUnavailable as exc:
        _clear(unit, f"unavailable: {exc}", "skipped")
        return
    try:
        args, expected = _case_for(spec.name, size, seed)
    except Exception as exc:  # e.g. MemoryError at a huge size: this unit only
        _clear(unit, f"error: {describe_error(exc)} ({CASE_FAILED} of size {size})")
        return
    try:
        host = _measured(unit, spec, backend, args, warmup, repeats, energy)
    except KernelNotSupported as exc:  # e.g. larger than an overlay's on-chip buffers
        _clear(unit, f"not supported: {exc}")
        return
    except Exception as exc:  # a failing device must not lose the other results
        _clear(unit, f"failed: {describe_error(exc)}")
        return
    try:
        unit.error, unit.verified = spec.verified(host, expected)
    except Exception as exc:  # a result of the wrong shape or type cannot be compared
        unit.error, unit.verified = float("nan"), False
        unit.status = (f"wrong result (could not compare it with the reference: "
                       f"{describe_error(exc)})")
        return
    if not unit.verified:
        unit.status = f"wrong result (error {unit.error:.3g} > tolerance {spec.tolerance:g})"
    if energy:
        metered = unit.energy_j if unit.energy_how else None
        threads = int(backend.info().get("threads", 1)) if backend.kind == "cpu" else 1
        for k, v in energy_of(spec.name, backend, unit.times_s, threads, metered,
                              unit.energy_how).items():
            setattr(unit, k, v)
