"""CPU attention kernels (numba): tiled flash attention and split-KV decode attention.

Flash attention (:func:`attention`): one ``prange`` over heads × query tiles of
:data:`BLOCK_Q` rows; each tile walks the keys in tiles of :data:`BLOCK_K` (only up to its
last visible key when causal), keeps a running maximum ``m``, sum ``l`` and output
accumulator per row (online softmax: when a tile raises ``m``, the old ``l`` and accumulator
are rescaled by ``exp(m_old − m_new)``), and divides by ``l`` at the end. Scores exist only
as one BLOCK_Q × BLOCK_K tile per worker, never n × n. Keys are transposed once per call so
the score loop runs over contiguous keys and vectorizes; the dtype is the inputs' (float32
stays float32). Fastmath without the NaN/inf flags (the masked −inf scores must stay −inf).
In float32 the weights ``exp(s − m)`` of a tile row come from :func:`_exp_row`, a polynomial
exp that vectorizes (libm's ``expf`` is one call per score and cost as much as the two dot
products together at d = 64); float64 keeps ``math.exp``.

Decode attention (:func:`decode_attention`, :func:`decode_attention_stats`): split-KV with the
synchronized and the unified-max softmax, validation folded into its one pass over the cache:
:mod:`.numba_decode`, re-exported here, where the backend's kernels are registered.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .numba_decode import (
    DECODE_BLOCK,
    OVERFLOW_MARGIN,
    PHI_SAMPLE,
    UNDERFLOW_MARGIN,
    DecodeStats,
    auto_parts,
    decode_attention,
    decode_attention_stats,
    unified_phi,
)

__all__ = ["attention", "decode_attention", "decode_attention_stats", "DecodeStats",
           "unified_phi", "auto_parts", "BLOCK_Q", "BLOCK_K", "OVERFLOW_MARGIN",
           "UNDERFLOW_MARGIN", "PHI_SAMPLE", "DECODE_BLOCK"]

BLOCK_Q = 64
BLOCK_K = 64
_FM = {"reassoc", "contract", "nsz", "arcp"}


#: 2^f ≈ Σ EXP2_POLY[i]·f^i on [0, 1): least-squares degree 6, relative error ≤ 6.1e-9
EXP2_POLY = (1.0000000061006686, 0.693146838839268, 0.24023109004394078, 0.05547892877882392,
             0.00968616939752204, 0.0012382470445335384, 0.00021871340717184224)


@njit(fastmath=_FM, cache=True, inline="always")
def _exp_row(s, r, cols, mx, ebits, fbits):  # pragma: no cover - compiled
    """s[r, :cols] = exp(s[r, :cols] − mx) in float32, vectorizable: 2^t with t = x·log₂e
    split as n + f, 2^f by :data:`EXP2_POLY`, 2^n by writing n + 127 into the exponent bits
    (t ≥ −127: −inf and underflowing weights become exactly 0). Relative error
    ≤ 3e-7 + |x|·2⁻²³ (the second term: t rounded to float32, as in any float32 exp)."""
    for c in range(cols):
        t = max((s[r, c] - mx) * np.float32(1.4426950408889634), np.float32(-127.0))
        n = math.floor(t)
        f = t - n
        p = np.float32(EXP2_POLY[6])
        p = p * f + np.float32(EXP2_POLY[5])
        p = p * f + np.float32(EXP2_POLY[4])
        p = p * f + np.float32(EXP2_POLY[3])
        p = p * f + np.float32(EXP2_POLY[2])
        p = p * f + np.float32(EXP2_POLY[1])
        p = p * f + np.float32(EXP2_POLY[0])
        ebits[c] = (np.int32(n) + 127) << 23
        s[r, c] = p
    for c in range(cols):
        s[r, c] *= fbits[c]


@njit(parallel=True, fastmath=_FM, cache=True)
def _flash(q, kt, v, causal, scale, bq, bk, out, fast):  # pragma: no cover - compiled
    h, n_q, d = q.shape
    n_k = kt.shape[2]
    dv = v.shape[2]
    offset = n_k - n_q
    tiles = (n_q + bq - 1) // bq
    for t in prange(h * tiles):
        hh = t // tiles
        i0 = (t % tiles) * bq
        rows = min(bq, n_q - i0)
        m = np.full(rows, -np.inf, q.dtype)
        lsum = np.zeros(rows, q.dtype)
        acc = np.zeros((rows, dv), q.dtype)
        s = np.empty((rows, bk), q.dtype)
        qs = np.empty((rows, d), q.dtype)
        ebits = np.empty(bk, np.int32)
        fbits = ebits.view(np.float32)
        for r in range(rows):
            for e in range(d):
                qs[r, e] = q[hh, i0 + r, e] * scale
        j_end = min(n_k, i0 + rows + offset) if causal else n_k
        for j0 in range(0, j_end, bk):
            cols = min(bk, j_end - j0)
            for r in range(rows):
                for c in range(cols):
                    s[r, c] = 0.0
                for e in range(d):
                    x = qs[r, e]
                    for c in range(cols):
                        s[r, c] += x * kt[hh, e, j0 + c]
            for r in range(rows):
                mx = m[r]
                lim = i0 + r + offset - j0  # last visible column of this row in the tile
                for c in range(cols):
                    if causal and c > lim:
                        s[r, c] = -np.inf
                    elif s[r, c] > mx:
                        mx = s[r, c]
                if mx == -np.inf:  # nothing visible yet (never on the first tile)
                    continue
                alpha = math.exp(m[r] - mx)
                if fast:
                    _exp_row(s, r, cols, mx, ebits, fbits)
                    total = s[r, 0] * 0
                    for c in range(cols):
                        total += s[r, c]
                else:
                    total = s[r, 0] * 0
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
                    if p != 0.0:
                        for e in range(dv):
                            acc[r, e] += p * v[hh, j0 + c, e]
        for r in range(rows):
            inv = 1.0 / lsum[r]
            for e in range(dv):
                out[hh, i0 + r, e] = acc[r, e] * inv


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """numba implementation of :func:`hetlab.attention` (validated arguments)."""
    out = np.empty((q.shape[0], q.shape[1], v.shape[2]), q.dtype)
    kt = np.ascontiguousarray(k.transpose(0, 2, 1))
    scale = q.dtype.type(1.0 / math.sqrt(q.shape[2]))
    _flash(q, kt, v, causal, scale, BLOCK_Q, BLOCK_K, out, q.dtype == np.float32)
    return out
