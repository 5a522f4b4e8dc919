"""The contract every backend fulfils (one sentence a method).

A backend knows whether it can run here (and why not), moves arrays to and from its device,
waits for its device to finish, and describes itself for provenance and rooflines. Kernels
are *not* methods of a backend: implementations are registered per kernel in
:mod:`hetlab.core.registry`, so adding a kernel never touches a backend.
"""

from __future__ import annotations

import abc
from typing import Any

from ..errors import BackendUnavailable

__all__ = ["Backend"]


class Backend(abc.ABC):
    """Abstract base class of a compute backend."""

    #: registry name, e.g. ``"numba"``
    name: str = ""
    #: ``"cpu"``, ``"gpu"`` or ``"fpga"``
    kind: str = ""
    #: how this backend's timings are obtained: ``"measured"`` or ``"modeled"``
    timing_source: str = "measured"

    @abc.abstractmethod
    def why_not(self) -> str | None:
        """Return why this backend cannot run here, or None when it can."""

    def is_available(self) -> bool:
        """Return True when kernels can run on this backend now."""
        return self.why_not() is None

    def require(self) -> None:
        """Raise :class:`BackendUnavailable` naming the reason when not available."""
        reason = self.why_not()
        if reason is not None:
            from ..core.registry import available_backends

            raise BackendUnavailable(
                f"{self.name}: {reason}; available: {', '.join(available_backends())}"
            )

    @abc.abstractmethod
    def owns(self, array: Any) -> bool:
        """Return True when ``array`` lives in this backend's memory."""

    @abc.abstractmethod
    def to_device(self, array: Any) -> Any:
        """Copy a host (NumPy) array to this device; identity for host backends."""

    @abc.abstractmethod
    def from_device(self, array: Any) -> Any:
        """Copy a device array back to a host NumPy array; identity for host backends."""

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Block until all work queued on the device has finished."""

    @abc.abstractmethod
    def info(self) -> dict[str, Any]:
        """Describe the device cheaply: ``device_name``, ``threads`` and backend-specific facts."""

    def peaks(self) -> dict[str, Any]:
        """Peak figures for rooflines: ``peak_bandwidth_gbps`` (GB/s), ``peak_gflops``
        (GFLOP/s) and ``peak_source`` (measured, datasheet or modeled, and how)."""
        return {"peak_bandwidth_gbps": float("nan"), "peak_gflops": float("nan"),
                "peak_source": "unknown"}

    def __repr__(self) -> str:
        state = "available" if self.is_available() else f"unavailable: {self.why_not()}"
        return f"<{type(self).__name__} {self.name!r} ({state})>"
