"""What every overlay driver shares: register offsets from the manifest, the 64-bit pointer
split, the ``ap_start``/``ap_done`` handshake with a timeout, and buffer bookkeeping.

Written only against :mod:`hetlab.fpga.protocol`, so a subclass runs unchanged on a PYNQ
board and in the emulator.

Thread safety: a driver holds its device's lock (:func:`~hetlab.fpga.protocol.device_lock`,
one per device instance, shared by every driver on it) for a whole call, from the first buffer
allocation to the last free, so threads sharing a device take turns and each gets its own
result. Before anything is written, the scalar register values are checked against the
overlay's manifest (``min``/``max``/``multiple_of`` of each scalar argument), so a value the IP
would refuse (it would return without writing its output) is an error here, on a board too.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .manifest import load_manifest
from .protocol import FpgaDevice, FpgaTimeout, device_lock

__all__ = ["OverlayDriver"]


class OverlayDriver:
    """Base of the overlay drivers (``fps``, ``gemv_q``, ``spmv``).

    Parameters
    ----------
    device : FpgaDevice
        A :class:`~hetlab.fpga.Emulator` or a :class:`~hetlab.fpga.PynqDevice`.
    """

    overlay = ""

    def __init__(self, device: FpgaDevice) -> None:
        self.device = device
        self.manifest = load_manifest(self.overlay)
        #: the device's lock, held for every call (shared by all drivers on ``device``)
        self.lock = device_lock(device)
        with self.lock:
            self.ip = device.load(self.overlay)
        regs, bits = self.manifest.registers, self.manifest.bits
        self._ctrl = regs["ap_ctrl"]
        self._start_bit, self._done_bit = 1 << bits["ap_start"], 1 << bits["ap_done"]
        self._off = {a["name"]: a["offset"] for a in self.manifest.args}

    def write_pointer(self, name: str, address: int) -> None:
        """Write a 64-bit device address as two 32-bit words: low, then high."""
        off = self._off[name]
        self.ip.write(off, address & 0xFFFF_FFFF)
        self.ip.write(off + 4, (address >> 32) & 0xFFFF_FFFF)

    def wait(self, timeout_s: float) -> None:
        """Poll ``ap_ctrl`` until ``ap_done``; :class:`FpgaTimeout` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            ctrl = self.ip.read(self._ctrl)
            if ctrl & self._done_bit:
                return
            if time.monotonic() > deadline:
                hint = (
                    "ap_start is still high: the IP never took the start (is the bitstream "
                    "loaded and the PL clock running?)"
                    if ctrl & self._start_bit
                    else "the kernel started but did not finish"
                )
                raise FpgaTimeout(
                    f"{self.overlay}: ap_done not seen within {timeout_s:g} s "
                    f"(ap_ctrl={ctrl:#x}); {hint}."
                )

    def launch(self, inputs: dict[str, np.ndarray], outputs: dict[str, tuple[int, Any]],
               scalars: dict[str, int], timeout_s: float) -> dict[str, np.ndarray]:
        """One call: copy ``inputs`` into fresh buffers and flush them, program every pointer
        and scalar in register order, start, wait, invalidate and copy out ``outputs``
        (``name -> (length, dtype)``); every buffer is freed, also on error.

        The device's lock is held throughout, so concurrent calls take turns.

        Raises
        ------
        InvalidInputError
            A scalar the overlay cannot take (outside its manifest's limits), before anything
            is written to the device.
        """
        self.manifest.check_scalars(scalars)
        with self.lock:
            return self._launch(inputs, outputs, scalars, timeout_s)

    def _launch(self, inputs: dict[str, np.ndarray], outputs: dict[str, tuple[int, Any]],
                scalars: dict[str, int], timeout_s: float) -> dict[str, np.ndarray]:
        bufs: dict[str, Any] = {}
        try:
            for name, arr in inputs.items():
                bufs[name] = self.device.allocate(arr.shape, arr.dtype)
                bufs[name][...] = arr
                bufs[name].flush()
            for name, (length, dtype) in outputs.items():
                bufs[name] = self.device.allocate((length,), dtype)
            for a in self.manifest.args:
                if a["kind"] == "pointer":
                    self.write_pointer(a["name"], int(bufs[a["name"]].device_address))
                else:
                    self.ip.write(a["offset"], int(scalars[a["name"]]))
            self.ip.write(self._ctrl, self._start_bit)
            self.wait(timeout_s)
            result = {}
            for name in outputs:
                bufs[name].invalidate()
                result[name] = np.array(bufs[name])
            return result
        finally:
            for buf in bufs.values():
                self.device.free(buf)
