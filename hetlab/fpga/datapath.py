"""NumPy float32 emulations of the overlays' float datapaths, operation for operation.

Each function computes exactly what its overlay's HLS C++ computes (same operations, same
order, float32 round-to-nearest, no fused multiply-add), so the C-simulation equals it bit
for bit; the tests check that, and separately that both are within the kernel spec's
tolerance of the float64 numpy reference. They document the float path; they are not used
to produce results.
"""

from __future__ import annotations

import numpy as np

from ..quant.formats import QuantizedMatrix
from ..sparse import CSR

__all__ = ["gemv_q_f32", "spmv_f32"]

_F32 = np.float32


def gemv_q_f32(qw: QuantizedMatrix, x: np.ndarray, lanes: int = 4) -> np.ndarray:
    """The ``gemv_q`` overlay's float path (``overlays/gemv_q/hls/gemv_q.cpp`` header).

    Per row: ``p = (float(q) - z) * x`` per code; per 32-bit word of 8 codes the adder tree
    ``((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7))``; per group ``lanes`` interleaved sums over its
    words (word ``w`` into lane ``w % lanes``, each lane from +0.0), then
    ``(a0+a1)+(a2+a3)``; the row ``y = ((0 + G0*s0) + G1*s1) + …`` in group order.

    Parameters
    ----------
    qw : QuantizedMatrix
        bits=4, shape (out, in).
    x : ndarray of shape (padded_in,) or (in,), float32
        Zero-padded to ``qw.padded_in`` when shorter.

    Returns
    -------
    ndarray of shape (out,), float32
    """
    out, ng, gs = qw.out_features, qw.n_groups, qw.group_size
    wpg = gs // 8
    xs = np.zeros(qw.padded_in, _F32)
    x = np.asarray(x, _F32).ravel()
    xs[: x.size] = x
    codes = qw.codes().astype(_F32).reshape(out, ng, wpg, 8)
    z = qw.zero_points().astype(_F32)[:, :, None, None]
    s = np.asarray(qw.scales).astype(_F32)
    p = (codes - z) * xs.reshape(1, ng, wpg, 8)
    t = ((p[..., 0] + p[..., 1]) + (p[..., 2] + p[..., 3])) + (
        (p[..., 4] + p[..., 5]) + (p[..., 6] + p[..., 7]))          # (out, ng, wpg)
    acc = np.zeros((out, ng, lanes), _F32)
    for i in range(wpg // lanes):
        acc = acc + t[:, :, i * lanes:(i + 1) * lanes]
    g = (acc[..., 0] + acc[..., 1]) + (acc[..., 2] + acc[..., 3])  # (out, ng)
    y = np.zeros(out, _F32)
    for j in range(ng):
        y = y + g[:, j] * s[:, j]
    return y


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
