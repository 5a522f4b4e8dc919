"""The ``fps`` overlay's driver: the same code on a PYNQ board and in the emulator.

One call: allocate the input and output buffers, copy the points in and ``flush()``, write
the pointer words (low, high) and scalars, set ``ap_start``, poll ``ap_done``,
``invalidate()`` the output and read it, free both buffers. Eight register writes and the
polls; ``overlay.toml``'s ``[launch]`` counts them for the timing model.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...errors import InvalidInputError, KernelNotSupported
from ..manifest import load_manifest
from ..protocol import FpgaDevice, FpgaTimeout

__all__ = ["FpsDriver"]


class FpsDriver:
    """Run farthest point sampling on the ``fps`` overlay of ``device``.

    Parameters
    ----------
    device : FpgaDevice
        A :class:`~hetlab.fpga.Emulator` or a :class:`~hetlab.fpga.PynqDevice`.
    """

    overlay = "fps"

    def __init__(self, device: FpgaDevice) -> None:
        self.device = device
        self.manifest = load_manifest(self.overlay)
        self.ip = device.load(self.overlay)
        regs, bits = self.manifest.registers, self.manifest.bits
        self._ctrl = regs["ap_ctrl"]
        self._start_bit, self._done_bit = 1 << bits["ap_start"], 1 << bits["ap_done"]
        self._off = {a["name"]: a["offset"] for a in self.manifest.args}
        self.max_points = int(self.manifest.limits["max_points"])

    def check(self, points: np.ndarray, n_samples: int, start: int) -> None:
        """Refuse what the overlay cannot compute exactly (dtype, size), with the fix."""
        if points.dtype != np.float32:
            raise KernelNotSupported(
                f"fpga: the fps overlay's datapath is float32 and points are {points.dtype}; "
                "pass points.astype(np.float32) (the numpy reference then computes in "
                "float32 too, and the result is identical), or run on device='numpy', "
                "'numba' or 'cupy'."
            )
        if points.ndim != 2 or points.shape[1] != 3 or points.shape[0] == 0:
            raise InvalidInputError(
                f"fps: points must have shape (n, 3) with n ≥ 1; got {points.shape}."
            )
        n = points.shape[0]
        if n > self.max_points:
            raise KernelNotSupported(
                f"fpga: the fps overlay holds at most {self.max_points} points on chip "
                f"([limits] max_points in overlay.toml); got {n}. Subsample first, or run "
                "on device='numba' or 'cupy'."
            )
        if not 1 <= n_samples <= n or not 0 <= start < n:
            raise InvalidInputError(
                f"fps: n_samples must be in [1, {n}] and start in [0, {n - 1}]; got "
                f"n_samples={n_samples}, start={start}."
            )

    def _write_pointer(self, name: str, address: int) -> None:
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
                    f"fps: ap_done not seen within {timeout_s:g} s (ap_ctrl={ctrl:#x}); {hint}."
                )

    def __call__(self, points: Any, n_samples: int, start: int = 0, *,
                 timeout_s: float = 30.0) -> np.ndarray:
        """Indices of shape (n_samples,), int64, in pick order (see :func:`hetlab.fps`).

        Parameters
        ----------
        points : ndarray of shape (n, 3), float32
            n ≤ ``max_points`` (16384 for this overlay).
        n_samples, start : int
            As in :func:`hetlab.fps`.
        timeout_s : float, default 30
            Wall-clock limit on polling ``ap_done``.

        Raises
        ------
        KernelNotSupported
            float64 points or more points than the on-chip buffers hold.
        FpgaTimeout
            ``ap_done`` never came.
        """
        points = np.asarray(points)
        self.check(points, n_samples, start)
        n = points.shape[0]
        inp = self.device.allocate((n, 3), np.float32)
        out = self.device.allocate((n_samples,), np.uint32)
        try:
            inp[:] = points
            inp.flush()
            self._write_pointer("points", int(inp.device_address))
            self._write_pointer("out", int(out.device_address))
            self.ip.write(self._off["n"], n)
            self.ip.write(self._off["n_samples"], int(n_samples))
            self.ip.write(self._off["start"], int(start))
            self.ip.write(self._ctrl, self._start_bit)
            self.wait(timeout_s)
            out.invalidate()
            return np.array(out, dtype=np.int64)
        finally:
            self.device.free(inp)
            self.device.free(out)
