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

Threads
-------
A board has one register file per IP and one contiguous-memory allocator, and so has the
emulator. hetlab therefore **serializes** access: each device instance has one re-entrant
lock (:func:`device_lock`), and a driver holds it for a whole call: buffer allocation and
writes, flush, register programming, ``ap_start``, polling ``ap_done``, invalidate, read-back
and free. Calls from several threads on one device are then correct, one after another (a
board runs one call of an IP at a time anyway). A device may offer its own lock as a
``lock`` attribute (:class:`~hetlab.fpga.Emulator` and :class:`~hetlab.fpga.PynqDevice` do;
every ``PynqDevice`` on one board shares that board's lock); any other device gets one here.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol, runtime_checkable

from ..errors import HetlabError

__all__ = ["FpgaDevice", "IpHandle", "DeviceBuffer", "BusError", "FpgaTimeout", "device_lock",
           "shared_lock"]

_registry_lock = threading.Lock()
_weak_locks: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_id_locks: dict[int, tuple[Any, threading.RLock]] = {}


def shared_lock(key: Any) -> threading.RLock:
    """The one re-entrant lock of ``key`` (kept while ``key`` lives; by identity when ``key``
    cannot be weakly referenced)."""
    with _registry_lock:
        try:
            lock = _weak_locks.get(key)
            if lock is None:
                lock = _weak_locks[key] = threading.RLock()
            return lock
        except TypeError:  # not weak-referenceable or not hashable: keep it alive with its lock
            held = _id_locks.get(id(key))
            if held is None or held[0] is not key:
                held = _id_locks[id(key)] = (key, threading.RLock())
            return held[1]


def device_lock(device: Any) -> threading.RLock:
    """The lock a driver holds for a whole call on ``device``: its ``lock`` attribute when it
    has one, else one kept here for that device instance."""
    lock = getattr(device, "lock", None)
    if lock is not None and hasattr(lock, "acquire") and hasattr(lock, "release"):
        return lock
    return shared_lock(device)


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
