"""The protocol every FPGA device implements (PYNQ board or emulator), and its errors.

A driver is written once against these three shapes and runs unchanged on both:

``FpgaDevice``
    ``load(overlay) -> IpHandle`` programs (or emulates) an overlay and returns its IP;
    ``allocate(shape, dtype) -> DeviceBuffer`` reserves physically contiguous memory.
``IpHandle``
    ``read(offset) -> int`` and ``write(offset, value)``: 32-bit AXI4-Lite accesses to the
    IP's register file.
``DeviceBuffer``
    A NumPy array with ``device_address`` (the physical address the IP uses), ``flush()``
    (make host writes visible to the device), ``invalidate()`` (make device writes visible to
    the host) and ``free()``. These are PYNQ's names (``pynq.allocate``), so a
    ``pynq.PynqBuffer`` is a ``DeviceBuffer`` as it is.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..errors import HetlabError

__all__ = ["FpgaDevice", "IpHandle", "DeviceBuffer", "BusError", "FpgaTimeout"]


class BusError(HetlabError, RuntimeError):
    """An AXI access the hardware would reject (unmapped register, pointer out of range)."""


class FpgaTimeout(HetlabError, TimeoutError):
    """The IP did not raise ``ap_done`` in time (kernel never started, or hung)."""


@runtime_checkable
class IpHandle(Protocol):
    """The register file of one IP instance (AXI4-Lite, 32-bit words)."""

    def read(self, offset: int) -> int:
        """Return the 32-bit register at byte ``offset``."""
        ...

    def write(self, offset: int, value: int) -> None:
        """Write the 32-bit ``value`` to the register at byte ``offset``."""
        ...


@runtime_checkable
class DeviceBuffer(Protocol):
    """A host-visible, physically contiguous array the IP can reach by ``device_address``."""

    device_address: int
    shape: tuple[int, ...]
    nbytes: int

    def flush(self) -> None:
        """Write host caches back so the device sees the host's writes."""
        ...

    def invalidate(self) -> None:
        """Drop host caches so the host sees the device's writes."""
        ...


@runtime_checkable
class FpgaDevice(Protocol):
    """A place overlays run: a PYNQ board (:mod:`.pynq_adapter`) or the emulator."""

    #: board name, e.g. ``"pynq-z2"``
    board: str
    #: ``"measured"`` on a board, ``"modeled"`` in the emulator
    timing_source: str

    def load(self, overlay: str) -> IpHandle:
        """Program ``overlay`` (a name in ``overlays/``) and return its IP's register file."""
        ...

    def allocate(self, shape: Any, dtype: Any) -> DeviceBuffer:
        """Reserve a contiguous buffer of ``shape`` and ``dtype`` (zeroed in the emulator)."""
        ...

    def free(self, buffer: Any) -> None:
        """Release a buffer from :meth:`allocate` (explicitly, never in ``__del__``)."""
        ...
