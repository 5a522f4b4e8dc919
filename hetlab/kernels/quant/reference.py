"""NumPy references of the quantized GEMV/GEMM: the ground truth the other backends equal.

The reference dequantizes a block of rows at a time (exact in float32, see
:meth:`~hetlab.quant.QuantizedMatrix.dequantize`) and multiplies in float64, then rounds the
result to float32 — so it is the correctly rounded product up to float64 error. It expands
weights (block by block); the fused backends never do.
"""

from __future__ import annotations

import numpy as np

from .formats import QuantizedMatrix, unpack_codes

__all__ = ["gemv_q", "gemm_q", "gemv_w4a8", "quantize_activations", "w4a8_group_dots"]

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


def quantize_activations(x: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """Per-token symmetric int8 activations: ``x ≈ xq · sx``.

    ``sx = float32(max|x| / 127)``; ``xq = clip(rint(x / sx), −127, 127)`` as int8 (half to
    even; −128 unused, so the range is symmetric). An all-zero ``x`` gives ``sx = 0`` and
    ``xq = 0``. Every backend of :func:`gemv_w4a8` uses this function, so the integer
    activations are identical on all of them.

    Parameters
    ----------
    x : ndarray of shape (n,), float

    Returns
    -------
    (xq, sx) : ndarray of shape (n,) int8, float32 scalar
    """
    x64 = np.asarray(x, dtype=np.float64)
    sx = np.float32(np.abs(x64).max() / 127.0) if x64.size else np.float32(0)
    if sx == 0:
        return np.zeros(x64.shape, dtype=np.int8), np.float32(0)
    xq = np.clip(np.rint(x64 / np.float64(sx)), -127, 127).astype(np.int8)
    return xq, sx


def w4a8_group_dots(qw: QuantizedMatrix, xq: np.ndarray) -> np.ndarray:
    """Integer group dots ``d[r, g] = Σ_k (q[r,g,k] − z[r,g]) · xq[g,k]``, int64 (out, n_groups).

    ``xq`` is int8 of length ``qw.padded_in`` (padding entries 0). Exact integers: the part of
    W4A8 every backend must reproduce bit for bit.
    """
    ng, gs = qw.n_groups, qw.group_size
    x = xq.astype(np.int64).reshape(ng, gs)
    z = qw.zero_points().astype(np.int64)
    d = np.empty((qw.out_features, ng), dtype=np.int64)
    for r0 in range(0, qw.out_features, _ROW_BLOCK):
        rows = slice(r0, r0 + _ROW_BLOCK)
        q = unpack_codes(np.asarray(qw.qweight[rows]), qw.bits, gs)
        q = q.astype(np.int64).reshape(-1, ng, gs)
        d[rows] = np.einsum("rgk,gk->rg", q, x) - z[rows] * x.sum(axis=1)
    return d


def gemv_w4a8(qw: QuantizedMatrix, x: np.ndarray) -> np.ndarray:
    """y (out,) float32 = ``sx · Σ_g s[r, g] · d[r, g]`` (float64, rounded once).

    ``x`` float32 of length ``qw.padded_in`` (padding 0); activations quantized with
    :func:`quantize_activations`, integer group dots from :func:`w4a8_group_dots`.
    """
    xq, sx = quantize_activations(x)
    d = w4a8_group_dots(qw, xq).astype(np.float64)
    s = qw.scales.astype(np.float64)
    return (np.float64(sx) * (d * s).sum(axis=1)).astype(np.float32)
