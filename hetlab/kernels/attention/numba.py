"""CPU attention kernels (numba): tiled flash attention and split-KV decode attention.

Flash attention (:func:`attention`): :mod:`._flash` (query tiles × key tiles, both
products as BLAS GEMMs, online softmax); re-exported here, where the backend's
kernels are registered. :func:`_exp_row` (the float32 polynomial exp) is used by
the block-sparse kernel.

Decode attention (:func:`decode_attention`, :func:`decode_attention_stats`): the cache is cut
into ``parts`` (FlashDecoding), heads × parts run in one ``prange``, then the parts are
combined per head:

* ``"synchronized"``: each part keeps its own running maximum ``m_p`` (online softmax over
  blocks of :data:`DECODE_BLOCK` keys: when a block raises it, the part's sum and accumulator
  are rescaled), sums ``exp(s − m_p)`` and ``exp(s − m_p)·v``; the combine rescales each part
  by ``exp(m_p − M)``, M = max of the parts' maxima.
* ``"unified-max"`` (FlashDecoding++'s asynchronous softmax): every part of a head
  exponentiates against one fixed ``φ`` in a single pass over its keys and the combine is a
  plain sum — no part waits for another's maximum, no rescale. ``φ`` comes from statistics of
  the inputs (:func:`unified_phi`: mean + 3 standard deviations of the scores of a strided
  sample of at most :data:`PHI_SAMPLE` cached keys per head — the paper takes the same kind
  of statistic offline from a model's softmax inputs). A part whose maximum left
  ``[φ − UNDERFLOW_MARGIN, φ + OVERFLOW_MARGIN]`` (``exp`` could overflow, or the part's
  weights could all underflow) is recomputed with the synchronized scheme, and that head is
  then combined with rescaling; :func:`decode_attention_stats` counts the recomputed parts.

Both schemes read K and V once, in blocks of keys: the scores of a block are one contiguous
d-dot per key row (K stays (n, d), no transpose), the weights are exponentiated in place and
``p·V`` adds contiguous value rows; everything in the inputs' dtype (float32 stays float32;
the parts' sums are combined in float64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

__all__ = ["attention", "decode_attention", "decode_attention_stats", "DecodeStats",
           "unified_phi", "auto_parts", "BLOCK_Q", "BLOCK_K", "OVERFLOW_MARGIN",
           "UNDERFLOW_MARGIN", "PHI_SAMPLE", "DECODE_BLOCK"]

#: a unified-max part is recomputed when its maximum exceeds φ by more than this (e^20 ≈ 5e8:
#: sums of up to 2³¹ weights stay far from float32's 3.4e38)
OVERFLOW_MARGIN = 20.0
#: … or when its maximum is more than this below φ (e^−30 ≈ 1e-13: weights stay normal floats)
UNDERFLOW_MARGIN = 30.0
#: most cached keys whose scores set φ
PHI_SAMPLE = 256
#: keys whose scores a decode part computes at once (one block: scores, then weights, then p·V)
DECODE_BLOCK = 128
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


# the flash attention kernel lives in ._flash (BLAS GEMMs per query × key tile)
from ._flash import BLOCK_K, BLOCK_Q, attention  # noqa: E402

# --------------------------------------------------------------------------- decode


@njit(fastmath=_FM, cache=True, inline="always")
def _scores(qs, k, hh, j0, cols, s):  # pragma: no cover - compiled
    """s[:cols] = qs · k[hh, j0 + c] for a block of keys: one contiguous d-dot per key row,
    in the inputs' dtype."""
    d = qs.shape[0]
    for c in range(cols):
        row = k[hh, j0 + c]
        x = qs[0] * row[0]
        for e in range(1, d):
            x += qs[e] * row[e]
        s[c] = x


@njit(fastmath=_FM, cache=True, inline="always")
def _accumulate(v, hh, j0, cols, s, acc):  # pragma: no cover - compiled
    """acc += Σ_c s[c] · v[hh, j0 + c] (contiguous value rows, vectorized over d_v)."""
    dv = acc.shape[0]
    for c in range(cols):
        p = s[c]
        row = v[hh, j0 + c]
        for e in range(dv):
            acc[e] += p * row[e]


@njit(fastmath=_FM, cache=True)
def _part_sync(qs, k, v, hh, j0, j1, acc, s):  # pragma: no cover - compiled
    """Synchronized part in one pass over its keys: online softmax over blocks of
    :data:`DECODE_BLOCK` keys (the part's running maximum; acc rescaled when it rises);
    returns (l, m), fills acc."""
    acc[:] = 0.0
    total = 0.0
    m = -np.inf
    for b0 in range(j0, j1, s.shape[0]):
        cols = min(s.shape[0], j1 - b0)
        _scores(qs, k, hh, b0, cols, s)
        mx = m
        for c in range(cols):
            if s[c] > mx:
                mx = s[c]
        if mx > m:
            alpha = math.exp(m - mx)
            total *= alpha
            for e in range(acc.shape[0]):
                acc[e] *= alpha
            m = mx
        mt = s.dtype.type(m)
        blk = s[0] * 0
        for c in range(cols):
            w = math.exp(s[c] - mt)
            s[c] = w
            blk += w
        total += blk
        _accumulate(v, hh, b0, cols, s, acc)
    return total, m


@njit(fastmath=_FM, cache=True)
def _part_unified(qs, k, v, hh, j0, j1, phi, acc, s):  # pragma: no cover - compiled
    """Unified-max part: one pass, weights exp(s − φ), no rescale; returns (l, max score)."""
    acc[:] = 0.0
    total = 0.0
    m = -np.inf
    ph = s.dtype.type(phi)
    for b0 in range(j0, j1, s.shape[0]):
        cols = min(s.shape[0], j1 - b0)
        _scores(qs, k, hh, b0, cols, s)
        mx = s[0]
        blk = s[0] * 0
        for c in range(cols):
            x = s[c]
            mx = max(mx, x)
            w = math.exp(x - ph)
            s[c] = w
            blk += w
        m = max(m, mx)
        total += blk
        _accumulate(v, hh, b0, cols, s, acc)
    return total, m


@njit(parallel=True, cache=True)
def _decode(q, k, v, parts, unified, phi, hi, lo, acc, lsum, ref, redo):  # pragma: no cover
    h, n, _ = k.shape
    d = q.shape[1]
    size = (n + parts - 1) // parts
    scale = q.dtype.type(1.0 / math.sqrt(d))
    for t in prange(h * parts):
        hh = t // parts
        p = t % parts
        j0 = p * size
        j1 = min(n, j0 + size)
        if j0 >= j1:
            lsum[hh, p] = 0.0
            ref[hh, p] = -np.inf
            acc[hh, p, :] = 0.0
            continue
        qs = np.empty(d, q.dtype)
        for e in range(d):
            qs[e] = q[hh, e] * scale
        s = np.empty(DECODE_BLOCK, q.dtype)
        if unified:
            total, m = _part_unified(qs, k, v, hh, j0, j1, phi[hh], acc[hh, p], s)
            if m - phi[hh] <= hi and m - phi[hh] >= -lo:
                lsum[hh, p] = total
                ref[hh, p] = phi[hh]
                continue
            redo[hh, p] = 1  # the fallback: this part again, synchronized
        total, m = _part_sync(qs, k, v, hh, j0, j1, acc[hh, p], s)
        lsum[hh, p] = total
        ref[hh, p] = m


@dataclass(frozen=True)
class DecodeStats:
    """What one decode call did: parts per head, the recomputed (fallback) parts per head,
    and the unified maximum φ per head (None for the synchronized scheme)."""

    parts: int
    recomputed: np.ndarray
    phi: np.ndarray | None

    @property
    def recomputed_total(self) -> int:
        return int(self.recomputed.sum())

    @property
    def fallback_rate(self) -> float:
        """Recomputed parts / all parts."""
        return self.recomputed_total / max(self.parts * self.recomputed.shape[0], 1)


def unified_phi(q1: np.ndarray, k_cache: np.ndarray) -> np.ndarray:
    """φ per head: mean + 3·std of the scores of a strided sample of ≤ PHI_SAMPLE keys.

    >>> import numpy as np
    >>> unified_phi(np.ones((1, 4)), np.zeros((1, 10, 4)))
    array([0.])
    """
    n, d = k_cache.shape[1], k_cache.shape[2]
    sample = k_cache[:, :: max(1, n // PHI_SAMPLE)].astype(np.float64)
    s = np.einsum("hd,hjd->hj", q1.astype(np.float64), sample) / math.sqrt(d)
    with np.errstate(over="ignore", invalid="ignore"):
        phi = s.mean(axis=1) + 3.0 * s.std(axis=1)
    return np.where(np.isfinite(phi), phi, s.max(axis=1))  # huge scores: the sample's max


def auto_parts(heads: int, n: int) -> int:
    """Parts per head when ``parts=0``: at least two (head, part) tasks per thread, and
    parts of at most 4096 keys; never more parts than keys."""
    threads = numba.get_num_threads()
    return int(max(1, min(n, max(-(-2 * threads // heads), -(-n // 4096)))))


def decode_attention_stats(q1: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray,
                           softmax: str = "synchronized",
                           parts: int = 0) -> tuple[np.ndarray, DecodeStats]:
    """numba decode attention (validated arguments) and what it did (:class:`DecodeStats`)."""
    h, n, _ = k_cache.shape
    dv = v_cache.shape[2]
    parts = auto_parts(h, n) if parts == 0 else min(parts, n)
    unified = softmax == "unified-max"
    phi = unified_phi(q1, k_cache) if unified else np.zeros(h)
    acc = np.empty((h, parts, dv), q1.dtype)
    lsum = np.empty((h, parts), np.float64)
    ref = np.empty((h, parts), np.float64)
    redo = np.zeros((h, parts), np.int64)
    _decode(q1, k_cache, v_cache, parts, unified, phi, OVERFLOW_MARGIN, UNDERFLOW_MARGIN,
            acc, lsum, ref, redo)
    if unified and not redo.any():
        out = acc.astype(np.float64).sum(axis=1) / lsum.sum(axis=1)[:, None]  # no rescale
    else:  # synchronized combine (or a head with a recomputed part): rescale to the max
        top = ref.max(axis=1, keepdims=True)
        w = np.exp(ref - top)
        out = np.einsum("hp,hpd->hd", w, acc.astype(np.float64)) / (w * lsum).sum(axis=1)[:, None]
    stats = DecodeStats(parts, redo.sum(axis=1), phi if unified else None)
    return out.astype(q1.dtype), stats


def decode_attention(q1: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray,
                     softmax: str = "synchronized", parts: int = 0) -> np.ndarray:
    """numba implementation of :func:`hetlab.decode_attention` (validated arguments)."""
    return decode_attention_stats(q1, k_cache, v_cache, softmax, parts)[0]
