"""numba block-sparse attention (PARO): the flash loop of :mod:`.numba` over kept blocks only.

The plan (permutation, kept key blocks, per-block quantization of q, k, v) is the numpy
code of :mod:`.paro`, shared with the reference; this module runs the block loop: one
``prange`` over heads × query blocks, key blocks in ascending order, online softmax.
``bits=None``: scores and weights in the inputs' dtype (float32 stays float32), as the flash
kernel. ``bits=8/4``: the integer codes are held as float32 and multiplied with float32
FMAs — exact, because every product and partial sum is an integer below 2²⁴ (q̂·k̂: at most
127²·256 ≈ 4.1e6; P̂·v̂: at most 127²·1024 ≈ 1.65e7 < 2²⁴ ≈ 1.68e7), and float32 FMAs run
several times faster than int32 multiplies. The scores ``q̂·k̂·s_q·s_k·scale``, the running
maximum and the block's weight scale ``s_P = exp(max(s − m)) / Q`` are float64 as in the
reference; the weights ``exp(s − m)`` are float32, from the flash kernel's vectorized
polynomial exp (the costly part: one exp per score), which moves the sum ``l`` by ~1e-7
relative — far inside the tolerance. Their codes ``round(P / s_P)`` must equal the
reference's, so where ``P / s_P`` lies within that exp's error bound (3e-7 + |s − m|·2⁻²³
relative; the kernel's guard uses the larger (|s − m| + 2)·2.4e-7) of a rounding boundary,
that weight is recomputed in float64; the two then agree up to the last bits of ``exp``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import paro
from .numba import _exp_row

__all__ = ["block_sparse_attention"]

_FM = {"reassoc", "contract", "nsz", "arcp"}


@njit(parallel=True, fastmath=_FM, cache=True)
def _sparse_float(q, kt, v, kept, block, scale, out):  # pragma: no cover - compiled
    h, n, d = q.shape
    dv = v.shape[2]
    nb = kept.shape[1]
    for t in prange(h * nb):
        hh = t // nb
        bi = t % nb
        r0 = bi * block
        rows = min(block, n - r0)
        m = np.full(rows, -np.inf, q.dtype)
        lsum = np.zeros(rows, q.dtype)
        acc = np.zeros((rows, dv), q.dtype)
        s = np.empty((rows, block), q.dtype)
        for bj in kept[hh, bi]:
            c0 = bj * block
            cols = min(block, n - c0)
            for r in range(rows):
                for c in range(cols):
                    s[r, c] = 0.0
                for e in range(d):
                    x = q[hh, r0 + r, e] * scale
                    for c in range(cols):
                        s[r, c] += x * kt[hh, e, c0 + c]
            for r in range(rows):
                mx = m[r]
                for c in range(cols):
                    if s[r, c] > mx:
                        mx = s[r, c]
                alpha = math.exp(m[r] - mx)
                total = 0.0
                for c in range(cols):
                    p = math.exp(s[r, c] - mx)
                    s[r, c] = p
                    total += p
                lsum[r] = lsum[r] * alpha + total
                m[r] = mx
                for e in range(dv):
                    acc[r, e] *= alpha
                for c in range(cols):
                    p = s[r, c]
                    for e in range(dv):
                        acc[r, e] += p * v[hh, c0 + c, e]
        for r in range(rows):
            for e in range(dv):
                out[hh, r0 + r, e] = acc[r, e] / lsum[r]


@njit(parallel=True, fastmath=_FM, cache=True)
def _sparse_quant(qi, kit, vi, sq, sk, sv, kept, block, scale, qm, out):  # pragma: no cover
    h, n, d = qi.shape
    dv = vi.shape[2]
    nb = kept.shape[1]
    for t in prange(h * nb):
        hh = t // nb
        bi = t % nb
        r0 = bi * block
        rows = min(block, n - r0)
        m = np.full(rows, -np.inf)
        lsum = np.zeros(rows)
        acc = np.zeros((rows, dv))
        si = np.empty((rows, block), np.float32)
        s = np.empty((rows, block))
        p32 = np.empty((rows, block), np.float32)
        ebits = np.empty(block, np.int32)
        fbits = ebits.view(np.float32)
        pq = np.empty((rows, block), np.float32)
        tot = np.empty(dv, np.float32)
        for bj in kept[hh, bi]:
            c0 = bj * block
            cols = min(block, n - c0)
            for r in range(rows):
                for c in range(cols):
                    si[r, c] = 0
                for e in range(d):
                    x = qi[hh, r0 + r, e]
                    for c in range(cols):
                        si[r, c] += x * kit[hh, e, c0 + c]
            f = sq[hh, bi] * sk[hh, bj] * scale
            xtop = -np.inf  # the block's largest s − m: its weight is the block's max P
            for r in range(rows):
                mx = m[r]
                for c in range(cols):
                    s[r, c] = np.float64(si[r, c]) * f
                    mx = max(mx, s[r, c])
                alpha = math.exp(m[r] - mx)
                m[r] = mx
                for c in range(cols):
                    x = s[r, c] - mx
                    s[r, c] = x
                    p32[r, c] = x
                    xtop = max(xtop, x)
                _exp_row(p32, r, cols, np.float32(0.0), ebits, fbits)  # the costly part
                total = np.float32(0.0)
                for c in range(cols):
                    total += p32[r, c]
                lsum[r] = lsum[r] * alpha + total
                for e in range(dv):
                    acc[r, e] *= alpha
            sp = math.exp(xtop) / qm  # the reference's scale, from one float64 exp
            for r in range(rows):
                for c in range(cols):
                    x = s[r, c]
                    y = np.float64(p32[r, c]) / sp
                    frac = y - math.floor(y)
                    # the float32 weight is off by ≤ 3e-7 + |x|·2⁻²³ relatively (_exp_row);
                    # near a rounding boundary its code could differ from the float64 one:
                    # redo it in float64
                    if abs(frac - 0.5) <= y * (abs(x) + 2.0) * 2.4e-7:
                        y = math.exp(x) / sp
                    pq[r, c] = math.floor(y + 0.5)
            g = sp * sv[hh, bj]
            for r in range(rows):
                tot[:] = 0
                for c in range(cols):
                    w = pq[r, c]
                    if w != 0:
                        for e in range(dv):
                            tot[e] += w * vi[hh, c0 + c, e]
                for e in range(dv):
                    acc[r, e] += np.float64(tot[e]) * g
        for r in range(rows):
            for e in range(dv):
                out[hh, r0 + r, e] = acc[r, e] / lsum[r]


def block_sparse_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                           order: np.ndarray | None = None, density: float = 0.25,
                           bits: int | None = 8, block: int = 64,
                           mask: np.ndarray | None = None) -> np.ndarray:
    """numba implementation of :func:`hetlab.block_sparse_attention` (validated arguments;
    a static ``mask`` replaces the per-call :func:`.paro.block_plan`)."""
    qp, kp, vp = paro.permute(q, order), paro.permute(k, order), paro.permute(v, order)
    kept = paro.block_plan(qp, kp, density, block) if mask is None else mask
    h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    if bits:
        (qi, sq), (ki, sk), (vi, sv) = paro.quantized_operands(qp, kp, vp, block, bits)
        out = np.empty((h, n, v.shape[2]))
        codes = [np.ascontiguousarray(x, dtype=np.float32)  # exact: |codes| ≤ 127
                 for x in (qi, ki.transpose(0, 2, 1), vi)]
        _sparse_quant(codes[0], codes[1], codes[2], sq, sk, sv, kept, block, scale,
                      float(paro.qmax(bits)), out)
    else:
        out = np.empty((h, n, v.shape[2]), q.dtype)
        _sparse_float(qp, np.ascontiguousarray(kp.transpose(0, 2, 1)), vp, kept, block,
                      q.dtype.type(scale), out)
    return paro.unpermute(out, order).astype(q.dtype, copy=False)
