"""NumPy references of the quantized GEMV/GEMM: the ground truth the other backends equal.

The reference dequantizes a block of rows at a time (exact in float32, see
:meth:`~hetlab.quant.QuantizedMatrix.dequantize`) and multiplies in float64, then rounds the
result to float32 — so it is the correctly rounded product up to float64 error. It expands
weights (block by block); the fused backends never do.
"""

from __future__ import annotations

import numpy as np

from ...quant.formats import QuantizedMatrix

__all__ = ["gemv_q", "gemm_q"]

#: rows dequantized at once (bounds temporary memory to ~ROW_BLOCK × in float64)
_ROW_BLOCK = 256


def gemm_q(qw: QuantizedMatrix, X: np.ndarray) -> np.ndarray:
    """Y (m, out) float32 = X (m, padded_in) @ dequantized Wᵀ (padding columns of X ignored)."""
    n_in = qw.in_features
    x64 = np.asarray(X[:, :n_in], dtype=np.float64)
    out = np.empty((X.shape[0], qw.out_features), dtype=np.float32)
    for r0 in range(0, qw.out_features, _ROW_BLOCK):
        rows = slice(r0, r0 + _ROW_BLOCK)
        w = qw.dequantize(np.float64, rows=rows)
        out[:, rows] = x64 @ w.T
    return out


def gemv_q(qw: QuantizedMatrix, x: np.ndarray) -> np.ndarray:
    """y (out,) float32 = dequantized W @ x (x of length padded_in; padding ignored)."""
    return gemm_q(qw, x[None, :])[0]
