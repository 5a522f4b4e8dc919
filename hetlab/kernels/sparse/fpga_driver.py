"""The ``spmv`` overlay's driver: the same code on a PYNQ board and in the emulator.

One call: five buffers (indptr, indices, data, x, y), fourteen register writes (five pointers
as low/high words, ``n_rows``, ``n_cols``, ``nnz``, ``ap_start``), the ``ap_done`` polls;
``overlay.toml``'s ``[launch]`` counts them for the timing model. A matrix with no rows or no
columns needs no device: its product (all zeros) is returned without a launch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidInputError, KernelNotSupported
from ...fpga.driver import OverlayDriver
from .formats import CSR

__all__ = ["SpmvDriver"]


class SpmvDriver(OverlayDriver):
    """Run ``y = A @ x`` on the ``spmv`` overlay of ``device`` (float32 CSR).

    Parameters
    ----------
    device : FpgaDevice
        A :class:`~hetlab.fpga.Emulator` or a :class:`~hetlab.fpga.PynqDevice`.
    """

    overlay = "spmv"

    def __init__(self, device: Any) -> None:
        super().__init__(device)
        lim = self.manifest.limits
        self.max_rows, self.max_cols, self.max_nnz = (int(lim["max_rows"]),
                                                      int(lim["max_cols"]), int(lim["max_nnz"]))

    def check(self, A: Any, x: np.ndarray) -> None:
        """Refuse what the overlay cannot compute (dtype, sizes), with the fix."""
        if not isinstance(A, CSR):
            raise InvalidInputError(
                f"spmv: A must be a hetlab.sparse.CSR (convert with hetlab.sparse.csr); got "
                f"{type(A).__name__}."
            )
        if A.dtype != np.float32:
            raise KernelNotSupported(
                f"fpga: the spmv overlay's datapath is float32 and A is {A.dtype}; pass "
                "A.astype(np.float32) (the other devices then compute in float32 too), or run "
                "on device='numpy', 'numba' or 'cupy'."
            )
        (n_rows, n_cols), nnz = A.shape, A.nnz
        if n_rows > self.max_rows or n_cols > self.max_cols or nnz > self.max_nnz:
            raise KernelNotSupported(
                f"fpga: the spmv overlay takes at most {self.max_rows} rows, {self.max_cols} "
                f"columns (x is held on chip) and {self.max_nnz} stored entries ([limits] in "
                f"overlay.toml); got {n_rows} x {n_cols} with nnz={nnz}. Split A into row "
                "blocks and column blocks (y = Σ A[:, blk] @ x[blk]), or run on "
                "device='numba' or 'cupy'."
            )
        if x.shape != (n_cols,):
            raise InvalidInputError(
                f"spmv: x must have shape ({n_cols},) to match the matrix of shape {A.shape}; "
                f"got shape {x.shape}."
            )

    def __call__(self, A: CSR, x: Any, *, timeout_s: float = 30.0) -> np.ndarray:
        """y = A @ x: shape (n_rows,), float32; each row summed in storage order.

        Parameters
        ----------
        A : CSR
            float32 values; int32 or int64 indices (sent as int32, which always fits under
            the limits); n_cols ≤ 32768, n_rows ≤ 1048576, nnz ≤ 4194304.
        x : ndarray of shape (n_cols,)
            Cast to float32.
        timeout_s : float, default 30
            Wall-clock limit on polling ``ap_done``.

        Raises
        ------
        KernelNotSupported
            float64 values, or A beyond the limits.
        FpgaTimeout
            ``ap_done`` never came.
        """
        x = np.asarray(x)
        self.check(A, x)
        (n_rows, n_cols), nnz = A.shape, A.nnz
        if n_rows == 0 or n_cols == 0:
            return np.zeros(n_rows, np.float32)
        pad = np.zeros(1, np.int32)  # a 1-entry buffer keeps every pointer valid when nnz == 0
        inputs = {
            "indptr": np.ascontiguousarray(A.indptr, np.int32),
            "indices": np.ascontiguousarray(A.indices, np.int32) if nnz else pad,
            "data": np.ascontiguousarray(A.data, np.float32) if nnz else pad.view(np.float32),
            "x": np.ascontiguousarray(x, np.float32),
        }
        scalars = {"n_rows": n_rows, "n_cols": n_cols, "nnz": nnz}
        return self.launch(inputs, {"y": (n_rows, np.float32)}, scalars, timeout_s)["y"]
