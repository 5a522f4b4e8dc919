"""The ``gemv_q`` overlay's driver: the same code on a PYNQ board and in the emulator.

One call: five buffers (packed codes, float16 scales and zero points as their bit patterns,
x, y), fourteen register writes (five pointers as low/high words, ``rows``, ``cols``,
``group_size``, ``ap_start``), the ``ap_done`` polls; ``overlay.toml``'s ``[launch]`` counts
them for the timing model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidInputError, KernelNotSupported
from ...fpga.driver import OverlayDriver
from .formats import QuantizedMatrix

__all__ = ["GemvQDriver"]


class GemvQDriver(OverlayDriver):
    """Run ``y = dequant(W) @ x`` on the ``gemv_q`` overlay of ``device`` (4-bit weights).

    Parameters
    ----------
    device : FpgaDevice
        A :class:`~hetlab.fpga.Emulator` or a :class:`~hetlab.fpga.PynqDevice`.
    """

    overlay = "gemv_q"

    def __init__(self, device: Any) -> None:
        super().__init__(device)
        lim = self.manifest.limits
        self.bits, self.max_rows, self.max_cols = (int(lim["bits"]), int(lim["max_rows"]),
                                                   int(lim["max_cols"]))

    def check(self, qw: Any, x: np.ndarray) -> None:
        """Refuse what the overlay cannot compute (format, sizes), with the fix."""
        if not isinstance(qw, QuantizedMatrix):
            raise InvalidInputError(
                f"gemv_q: qw must be a QuantizedMatrix (from hetlab.quant.quantize); got "
                f"{type(qw).__name__}."
            )
        if qw.bits != self.bits:
            raise KernelNotSupported(
                f"fpga: the gemv_q overlay decodes {self.bits}-bit codes only and qw has "
                f"bits={qw.bits}; quantize with bits=4, or run on device='numpy', 'numba' or "
                "'cupy'."
            )
        out, cols = qw.out_features, qw.padded_in
        if out > self.max_rows or cols > self.max_cols:
            raise KernelNotSupported(
                f"fpga: the gemv_q overlay holds at most {self.max_rows} output rows and "
                f"{self.max_cols} (padded) input columns on chip ([limits] max_rows/max_cols "
                f"in overlay.toml); got {out} x {cols}. Split W into row blocks "
                f"(qw.qweight[r0:r1] etc.) and columns into chunks of ≤ {self.max_cols}, or "
                "run on device='numba' or 'cupy'."
            )
        if x.dtype != np.float32 or x.shape not in ((cols,), (qw.in_features,)):
            raise InvalidInputError(
                f"gemv_q: x must be float32 of shape ({qw.in_features},) or ({cols},); got "
                f"{x.dtype} of shape {x.shape}."
            )

    def __call__(self, qw: QuantizedMatrix, x: Any, *, timeout_s: float = 30.0) -> np.ndarray:
        """y = dequant(W) @ x: shape (out_features,), float32.

        Parameters
        ----------
        qw : QuantizedMatrix
            bits=4, any group size (a multiple of 32); out ≤ 16384, padded in ≤ 8192.
        x : ndarray of shape (in_features,) or (padded_in,), float32
            Padding entries are ignored (the codes there are zero weights).
        timeout_s : float, default 30
            Wall-clock limit on polling ``ap_done``.

        Raises
        ------
        KernelNotSupported
            bits ≠ 4, or W larger than the on-chip buffers.
        FpgaTimeout
            ``ap_done`` never came.
        """
        x = np.asarray(x)
        self.check(qw, x)
        cols = qw.padded_in
        xp = np.zeros(cols, np.float32)
        xp[: qw.in_features] = x[: qw.in_features]
        zeros = (np.full(qw.scales.shape, 2 ** (qw.bits - 1), np.float16) if qw.zeros is None
                 else np.asarray(qw.zeros, np.float16))
        inputs = {
            "qweight": np.ascontiguousarray(qw.qweight, np.uint32),
            "scales": np.ascontiguousarray(qw.scales, np.float16).view(np.uint16),
            "zeros": np.ascontiguousarray(zeros).view(np.uint16),
            "x": xp,
        }
        scalars = {"rows": qw.out_features, "cols": cols, "group_size": qw.group_size}
        res = self.launch(inputs, {"y": (qw.out_features, np.float32)}, scalars, timeout_s)
        return res["y"]
