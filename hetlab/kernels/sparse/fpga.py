"""CSR SpMV on the ``spmv`` overlay (``device="fpga"``): the implementation the sparse
family registers, its modeled timing, its float datapath and the board self-test's cases.

The device and the thread model are shared by every overlay (:mod:`hetlab.fpga.device`); the
driver is :mod:`.fpga_driver`. :func:`spmv_f32` emulates the overlay's float32 datapath in NumPy,
operation for operation (same operations, same order, float32 round-to-nearest, no fused
multiply-add), so the C-simulation equals it bit for bit; the tests check that, and separately
that both are within the kernel spec's tolerance of the float64 numpy reference. It documents
the float path; it is not used to produce results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...fpga.device import overlay_kernel
from .formats import CSR
from .fpga_driver import SpmvDriver
from .generate import make_matrix

__all__ = ["OVERLAY", "Driver", "REPORT_SIZES", "spmv", "spmv_f32", "selftest_cases"]

#: the overlay (``overlays/spmv``) and its driver
OVERLAY = "spmv"
Driver = SpmvDriver
#: two representative calls (timing-model scalars) for ``python -m hetlab.fpga.report``
REPORT_SIZES = ({"n_rows": 4096, "n_cols": 4096, "nnz": 65536},
                {"n_rows": 32768, "n_cols": 32768, "nnz": 524288})

_F32 = np.float32


#: CSR SpMV on the ``spmv`` overlay: y (n_rows,) float32 (float32 ``A`` only);
#: ``spmv.modeled(...)`` adds the modeled timing
spmv = overlay_kernel(
    "spmv", SpmvDriver,
    lambda A, x: {"n_rows": A.shape[0], "n_cols": A.shape[1], "nnz": A.nnz},
)


def selftest_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Seeded (driver keywords, timing-model scalars) per size, for ``hetlab.fpga.selftest``."""
    out = []
    for n in sizes:
        rng = np.random.default_rng([13, n])
        A = make_matrix(n, rng, kind="powerlaw", nnz_per_row=16).astype(np.float32)
        x = (rng.random(A.shape[1]) * 2 - 1).astype(np.float32)
        out.append(({"A": A, "x": x},
                    {"n_rows": A.shape[0], "n_cols": A.shape[1], "nnz": A.nnz}))
    return out

def spmv_f32(A: CSR, x: np.ndarray) -> np.ndarray:
    """The ``spmv`` overlay's float path (``overlays/spmv/hls/spmv.cpp`` header).

    Row ``i``: ``y_i = ((0 + d_0 * x[c_0]) + d_1 * x[c_1]) + …`` over its stored entries in
    storage order, every product and sum rounded to float32 (an empty row gives +0.0).

    Returns
    -------
    ndarray of shape (n_rows,), float32
    """
    indptr = np.asarray(A.indptr, np.int64)
    data, idx = np.asarray(A.data, _F32), np.asarray(A.indices, np.int64)
    xs = np.asarray(x, _F32)
    lengths = np.diff(indptr)
    y = np.zeros(A.shape[0], _F32)
    for p in range(int(lengths.max(initial=0))):
        rows = np.flatnonzero(lengths > p)
        k = indptr[rows] + p
        y[rows] = y[rows] + data[k] * xs[idx[k]]
    return y
