"""numba block-sparse attention (PARO): the flash kernel's BLAS tiles over kept blocks only.

The plan (permutation, kept key blocks) is the numpy code of :mod:`.paro`, shared with the
reference; the per-block quantization of q, k, v runs in numba (:func:`quantized`, the same
float64 operations as :func:`.paro.quantize_blocks`, so the same codes); the kernels are in
:mod:`._bsparse`: one ``prange`` task per (head, query block), the kept key blocks taken in
panels of up to :data:`._bsparse.PANEL_KEYS` keys (sliced when consecutive, else gathered),
one sgemm per panel for ``Q·Kᵀ``.
``bits=None``: the panel is a key tile of :mod:`._flash` (float32 exp2 polynomial, online
softmax across panels, ``P·V`` as a second GEMM); float64 uses ``math.exp``.
``bits=8/4``: the integer codes are held as float32 and multiplied by sgemm — exact,
because every product and partial sum is an integer below 2²⁴ (q̂·k̂: at most
127²·256 ≈ 4.1e6; P̂·v̂: at most 127²·1024 ≈ 1.65e7 < 2²⁴ ≈ 1.68e7). The time is that of
float32 GEMMs on integer-valued operands, not of INT8 instructions. The scores
``q̂·k̂·s_q·s_k·scale``, the running maximum and the block's weight scale
``s_P = exp(max(s − m)) / Q`` are float64 as in the reference; the weights ``exp(s − m)``
are float32, from the flash kernel's vectorized polynomial exp (one exp per score), which
moves the sum ``l`` by ~1e-7 relative — far inside the tolerance. Their codes
``round(P / s_P)`` must equal the reference's, so where ``P / s_P`` lies within that exp's
error bound (3e-7 + |s − m|·2⁻²³ relative; the kernel's guard uses the larger
(|s − m| + 2)·2.4e-7) of a rounding boundary, that weight is recomputed in float64; the two
then agree up to the last bits of ``exp``. ``P̂·v̂`` is one exact GEMM per kept block (the
scale ``s_P`` is per block pair); folding several blocks into one panel GEMM (each block's
codes pre-multiplied by its scale) was tried: the extra scaling pass and the V gather cost
more than the larger GEMM saved on the 2-core development machine, so it is not used.
"""

from __future__ import annotations

import math

import numpy as np

from . import _bsparse, paro
from ._flash import LOG2E, _blas_controller

__all__ = ["block_sparse_attention", "quantized"]


#: float64 inputs with a value above this run the reference's arithmetic (see below)
HUGE = 1e18


def block_sparse_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                           order: np.ndarray | None = None, density: float = 0.25,
                           bits: int | None = 8, block: int = 64,
                           mask: np.ndarray | None = None) -> np.ndarray:
    """numba implementation of :func:`hetlab.block_sparse_attention` (validated arguments;
    a static ``mask`` replaces the per-call :func:`.paro.block_plan`)."""
    if q.dtype == np.float64 and max(float(np.abs(a).max()) for a in (q, k, v)) > HUGE:
        # values this large leave the range the float32 code and weight buffers of
        # :mod:`._bsparse` are exact in (the fuzz tests' ±1e300 gave wrong rows): the
        # reference's float64 arithmetic, same result contract, no speed
        return paro.block_sparse_attention(q, k, v, order, density, bits, block, mask)
    qp, kp, vp = paro.permute(q, order), paro.permute(k, order), paro.permute(v, order)
    kept = paro.block_plan(qp, kp, density, block) if mask is None else mask
    h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    kept = np.ascontiguousarray(kept, dtype=np.int64)
    panel = _bsparse.panel_blocks(block)
    out = np.empty((h, n, v.shape[2]), q.dtype)
    with _blas_controller().limit(limits=1, user_api="blas"):
        if bits:
            qi, sq = quantized(qp, None, block, bits)
            ki, sk = quantized(kp, kp.mean(axis=1, dtype=np.float64), block, bits)
            vi, sv = quantized(vp, None, block, bits)
            _bsparse.sparse_quant(qi, ki, vi, sq, sk, sv, kept, block, scale,
                                  float(paro.qmax(bits)), panel, out)
        else:
            fast = q.dtype == np.float32
            _bsparse.sparse_float(qp, kp, vp, kept, block,
                                  q.dtype.type(scale * (LOG2E if fast else 1.0)), panel, out,
                                  fast)
    return paro.unpermute(out, order)


def quantized(x: np.ndarray, shift: np.ndarray | None, block: int,
              bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-block codes of ``x − shift`` as float32 and their scales (heads, n_blocks),
    equal to :func:`.paro.quantize_blocks` of ``x − shift`` (``shift``: (heads, d) float64,
    e.g. k's mean over the tokens; None: no shift).

    >>> x = np.array([[[1.0, -2.0], [0.5, 0.0], [0.0, 0.0]]])
    >>> codes, scales = quantized(x, None, 2, 8)
    >>> codes[0].tolist(), bool(scales[0, 0] == 2 / 127)
    ([[64.0, -127.0], [32.0, 0.0], [0.0, 0.0]], True)
    """
    h, n, d = x.shape
    codes = np.empty((h, n, d), np.float32)
    scales = np.empty((h, -(-n // block)))
    _bsparse.quantize(x, np.zeros((h, d)) if shift is None else shift, block,
                      float(paro.qmax(bits)), codes, scales)
    return codes, scales
