"""The emulator's physical memory: contiguous regions at fake physical addresses.

Each allocation is a *region* with a device side (what the IP reads and writes over AXI) and
a host side (what Python sees). In strict mode the two are separate copies, as on a
Zynq-7000 whose HP ports bypass the CPU caches: ``flush()`` copies host → device,
``invalidate()`` device → host, and forgetting either really breaks the result. A fresh
region's device side holds a poison pattern (stale DRAM), not zeros. In coherent mode the
host side *is* the device side and both calls do nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HetlabError, InvalidInputError
from .protocol import BusError

__all__ = ["Region", "PhysicalMemory", "EmuBuffer", "POISON"]

#: byte the device side of a fresh region holds (0xA5A5A5A5 is a valid small float32)
POISON = 0xA5
_PAGE = 4096


@dataclass(eq=False)
class Region:
    """One contiguous allocation: ``[base, base + nbytes)`` in the fake physical space."""

    base: int
    nbytes: int
    device: np.ndarray
    host: np.ndarray
    freed: bool = field(default=False)


class PhysicalMemory:
    """A fake physical address space with first-fit allocation of page-aligned regions.

    Parameters
    ----------
    base : int
        First physical address handed out (a CMA pool's start on a real board).
    size : int
        Bytes in the pool; allocations beyond it raise.
    strict : bool
        Separate host and device copies (non-coherent, flush/invalidate required).
    """

    def __init__(self, base: int = 0x1680_0000, size: int = 128 << 20, *, strict: bool = True):
        self.base, self.size, self.strict = base, size, strict
        self._regions: list[Region] = []  # sorted by base

    def allocate(self, nbytes: int) -> Region:
        """Reserve ``nbytes`` (rounded up to a page); return the region."""
        span = max(_PAGE, -(-nbytes // _PAGE) * _PAGE)
        addr = self.base
        for r in self._regions:
            if addr + span <= r.base:
                break
            addr = max(addr, r.base + -(-r.nbytes // _PAGE) * _PAGE)
        if addr + span > self.base + self.size:
            raise HetlabError(
                f"fpga: out of contiguous memory: {nbytes} bytes requested, pool of "
                f"{self.size >> 20} MiB holds {sum(r.nbytes for r in self._regions)} bytes; "
                "free buffers you no longer need."
            )
        device = np.full(nbytes, POISON, dtype=np.uint8)
        host = np.zeros(nbytes, dtype=np.uint8) if self.strict else device
        region = Region(addr, nbytes, device, host)
        self._regions.append(region)
        self._regions.sort(key=lambda r: r.base)
        return region

    def free(self, region: Region) -> None:
        """Release a region; later device accesses to it are bus errors."""
        if region in self._regions:
            self._regions.remove(region)
        region.freed = True

    def resolve(self, address: int, nbytes: int, what: str) -> np.ndarray:
        """Device-side bytes ``[address, address + nbytes)``; a bus error when not mapped."""
        for r in self._regions:
            if r.base <= address and address + nbytes <= r.base + r.nbytes:
                return r.device[address - r.base : address - r.base + nbytes]
        raise BusError(
            f"fpga: {what} = {address:#x} with {nbytes} bytes is outside every allocated buffer "
            "(AXI DECERR; on a board this can hang the bus). Pass a buffer's device_address "
            "and check its size."
        )

    def regions(self) -> list[Region]:
        """Live regions, lowest address first."""
        return list(self._regions)


class EmuBuffer(np.ndarray):
    """A NumPy array in emulated contiguous memory (the emulator's ``pynq.allocate``)."""

    _region: Region | None

    def __new__(cls, region: Region, shape: Any, dtype: Any) -> EmuBuffer:
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        arr = region.host[: count * dt.itemsize].view(dt).reshape(shape)
        obj = arr.view(cls)
        obj._region = region
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        region = getattr(obj, "_region", None)
        if region is not None:
            lo = region.host.ctypes.data
            ptr = self.__array_interface__["data"][0]
            if not lo <= ptr < lo + max(region.nbytes, 1):
                region = None  # a copy, not a view: it has no device address
        self._region = region

    def __array_wrap__(self, arr: Any, context: Any = None, return_scalar: bool = False) -> Any:
        out = np.asarray(arr)  # arithmetic results are plain arrays, not device buffers
        return out[()] if return_scalar else out

    def _live(self) -> Region:
        if self._region is None:
            raise InvalidInputError(
                "fpga: this array is a copy, not a view of an allocated buffer; it has no "
                "device address. Use the buffer returned by allocate()."
            )
        return self._region

    @property
    def device_address(self) -> int:
        """Physical address of this array's first byte, as the IP must be given it."""
        r = self._live()
        return r.base + (self.__array_interface__["data"][0] - r.host.ctypes.data)

    physical_address = device_address

    @property
    def coherent(self) -> bool:
        """True when host and device share memory (flush/invalidate do nothing)."""
        r = self._live()
        return r.host is r.device

    def flush(self) -> None:
        """Copy the whole buffer host → device (write back the CPU caches)."""
        r = self._live()
        if r.host is not r.device:
            r.device[:] = r.host

    def invalidate(self) -> None:
        """Copy the whole buffer device → host (drop stale CPU cache lines)."""
        r = self._live()
        if r.host is not r.device:
            r.host[:] = r.device
