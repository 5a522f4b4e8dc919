"""numba block-sparse attention (PARO): the flash loop of :mod:`.numba` over kept blocks only.

The plan (permutation, kept key blocks, per-block quantization of q, k, v) is the numpy
code of :mod:`.paro`, shared with the reference; this module runs the block loop: one
``prange`` over heads × query blocks, key blocks in ascending order, online softmax.
``bits=None``: scores and weights in the inputs' dtype (float32 stays float32), as the flash
kernel. ``bits=8/4``: exact integer dot products (int32 for q̂·k̂, int64 for P̂·v̂), the
softmax in float64 and the weights' per-block quantization exactly as the reference does it,
so the two agree up to the last bits of ``exp``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import paro

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


@njit(parallel=True, cache=True)
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
        si = np.empty((rows, block), np.int32)
        s = np.empty((rows, block))
        pq = np.empty((rows, block), np.int64)
        for bj in kept[hh, bi]:
            c0 = bj * block
            cols = min(block, n - c0)
            for r in range(rows):
                for c in range(cols):
                    si[r, c] = 0
                for e in range(d):
                    x = np.int32(qi[hh, r0 + r, e])
                    for c in range(cols):
                        si[r, c] += x * np.int32(kit[hh, e, c0 + c])
            f = sq[hh, bi] * sk[hh, bj] * scale
            pmax = 0.0
            for r in range(rows):
                mx = m[r]
                for c in range(cols):
                    s[r, c] = np.float64(si[r, c]) * f
                    if s[r, c] > mx:
                        mx = s[r, c]
                alpha = math.exp(m[r] - mx)
                total = 0.0
                for c in range(cols):
                    p = math.exp(s[r, c] - mx)
                    s[r, c] = p
                    total += p
                    if p > pmax:
                        pmax = p
                lsum[r] = lsum[r] * alpha + total
                m[r] = mx
                for e in range(dv):
                    acc[r, e] *= alpha
            sp = pmax / qm
            for r in range(rows):
                for c in range(cols):
                    pq[r, c] = np.int64(math.floor(s[r, c] / sp + 0.5))
            g = sp * sv[hh, bj]
            for r in range(rows):
                for e in range(dv):
                    tot = np.int64(0)
                    for c in range(cols):
                        tot += pq[r, c] * np.int64(vi[hh, c0 + c, e])
                    acc[r, e] += np.float64(tot) * g
        for r in range(rows):
            for e in range(dv):
                out[hh, r0 + r, e] = acc[r, e] / lsum[r]


def block_sparse_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                           order: np.ndarray | None = None, density: float = 0.25,
                           bits: int | None = 8, block: int = 64) -> np.ndarray:
    """numba implementation of :func:`hetlab.block_sparse_attention` (validated arguments)."""
    qp, kp, vp = paro.permute(q, order), paro.permute(k, order), paro.permute(v, order)
    kept = paro.block_plan(qp, kp, density, block)
    h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    if bits:
        (qi, sq), (ki, sk), (vi, sv) = paro.quantized_operands(qp, kp, vp, block, bits)
        out = np.empty((h, n, v.shape[2]))
        _sparse_quant(qi, np.ascontiguousarray(ki.transpose(0, 2, 1)), vi, sq, sk, sv, kept,
                      block, scale, float(paro.qmax(bits)), out)
    else:
        out = np.empty((h, n, v.shape[2]), q.dtype)
        _sparse_float(qp, np.ascontiguousarray(kp.transpose(0, 2, 1)), vp, kept, block,
                      q.dtype.type(scale), out)
    return paro.unpermute(out, order).astype(q.dtype, copy=False)
