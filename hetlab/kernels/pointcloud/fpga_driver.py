"""The ``fps`` overlay's driver: the same code on a PYNQ board and in the emulator.

One call: allocate the input and output buffers, copy the points in and ``flush()``, write
the pointer words (low, high) and scalars, set ``ap_start``, poll ``ap_done``,
``invalidate()`` the output and read it, free both buffers. Eight register writes and the
polls; ``overlay.toml``'s ``[launch]`` counts them for the timing model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidInputError, KernelNotSupported
from ...fpga.driver import OverlayDriver
from ...fpga.protocol import FpgaDevice

__all__ = ["FpsDriver"]


class FpsDriver(OverlayDriver):
    """Run farthest point sampling on the ``fps`` overlay of ``device``.

    Parameters
    ----------
    device : FpgaDevice
        A :class:`~hetlab.fpga.Emulator` or a :class:`~hetlab.fpga.PynqDevice`.
    """

    overlay = "fps"

    def __init__(self, device: FpgaDevice) -> None:
        super().__init__(device)
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
        out = self.launch({"points": np.ascontiguousarray(points)},
                          {"out": (int(n_samples), np.uint32)},
                          {"n": n, "n_samples": int(n_samples), "start": int(start)}, timeout_s)
        return out["out"].astype(np.int64)
