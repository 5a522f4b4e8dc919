"""CPU attention kernels (numba): tiled flash attention and split-KV decode attention.

Flash attention (:func:`attention`): :mod:`._flash` (query tiles × key tiles, both
products as BLAS GEMMs, online softmax); re-exported here, where the backend's
kernels are registered. :func:`_exp_row` (the float32 polynomial exp) is used by
the block-sparse kernel.

Decode attention (:func:`decode_attention`, :func:`decode_attention_stats`): split-KV with the
synchronized and the unified-max softmax, validation folded into its one pass over the cache:
:mod:`.numba_decode`, re-exported here, where the backend's kernels are registered.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._vexp import EXP2_POLY  # one polynomial for every float32 exp of the family
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

_FM = {"reassoc", "contract", "nsz", "arcp"}




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
