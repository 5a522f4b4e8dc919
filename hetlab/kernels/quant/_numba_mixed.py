"""One numba call for the GEMVs of a mixed-bit plan: every unit, whatever its width.

The units of a :class:`~hetlab.kernels.quant.mixed.BitPlan` (layers, or blocks of rows of
them, each with its own bit width) are concatenated once (:class:`FusedPlan` in
:mod:`.mixed`): all packed words in one uint32 array, all scales and zero points in flat
uint16 arrays, one row of ``META`` fields per unit. A call cuts every unit into blocks of
:data:`~._numba_w4.BLOCK_ROWS` rows, and the threads take blocks of any unit from one shared
counter (dynamic scheduling), so a plan of small, differently sized layers keeps both cores
busy to the end. Each row runs the AVX2 block dot of its width (:mod:`._simd_avx2`) on the
limbs of its layer's activations (prepared per layer and limb layout before the call), with
the exactness of :mod:`._numba_avx2`.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._numba_avx2 import KIND_OF_BITS
from ._numba_w4 import BLOCK_ROWS
from ._simd import fetch_add
from ._simd_avx2 import avx2_dot

__all__ = ["META", "fused_gemv"]

#: the columns of the per-unit metadata (int64): bits, group size, words per row, first word,
#: first scale, groups per row, first zero point (−1: symmetric), first output, first limb
#: byte, first block factor, first group sum of the unit's activations, rows
META = ("bits", "gs", "nw", "qoff", "soff", "ng", "zoff", "yoff", "xloff", "xfoff", "xsoff",
        "rows")

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}


def _make_row(bits: int):
    """One output of a unit of ``bits``-bit codes, from flat arrays and offsets."""
    dot = avx2_dot[KIND_OF_BITS[bits]]
    pb = 2 if bits == 3 else bits
    wblk = 4 * pb

    @numba.njit(**_OPTS)
    def row(qflat, qrow, scales, srow, zeros, zrow, ng, gs, xl, xlo, xf, xfo, xsum, xso,
            table, acc):  # pragma: no cover - compiled
        nb = gs // 128
        wpg = gs * bits // 32
        hoff = gs * pb // 32
        zsym = np.float32(2 ** (bits - 1))
        for i in range(8):
            acc[i] = 0
        zdot = np.float32(0)
        for g in range(ng):
            s = table[scales[srow + g]]
            z = table[zeros[zrow + g]] if zrow >= 0 else zsym
            zdot += s * z * xsum[xso + g]
            base = qrow + g * wpg
            for c in range(nb):
                k = g * nb + c
                dot(qflat, base + wblk * c, base + hoff + 4 * c, xl, xlo + 384 * k, acc,
                    s * xf[xfo + k])
        tot = np.float32(0)
        for i in range(8):
            tot += acc[i]
        return tot - zdot

    return row


_row2, _row3, _row4, _row8 = (_make_row(b) for b in (2, 3, 4, 8))


@numba.njit(parallel=True, **_OPTS)
def fused_gemv(qflat, scales, zeros, table, meta, items, xl, xf, xsum, out, nchunk
               ):  # pragma: no cover - compiled
    """All units' GEMVs: ``out[yoff + r] = unit row r · its layer's activations``.

    ``meta`` int64 (units, len(META)); ``items`` int64 (blocks, 2): (unit, first row) of
    each block of rows; ``xl``/``xf``/``xsum`` the concatenated limbs, block factors and
    group sums (offsets in ``meta``); ``nchunk`` workers.
    """
    nblk = items.shape[0]
    counter = np.zeros(1, np.int64)
    for _ in prange(nchunk):
        acc = np.empty(8, np.float32)
        b = fetch_add(counter, 1)
        while b < nblk:
            u = items[b, 0]
            bits, gs, nw, qoff, soff = meta[u, 0], meta[u, 1], meta[u, 2], meta[u, 3], meta[u, 4]
            ng, zoff, yoff, xlo, xfo = meta[u, 5], meta[u, 6], meta[u, 7], meta[u, 8], meta[u, 9]
            xso, nrows = meta[u, 10], meta[u, 11]
            r0 = items[b, 1]
            for r in range(r0, min(r0 + BLOCK_ROWS, nrows)):
                qrow = qoff + r * nw
                srow = soff + r * ng
                zrow = zoff + r * ng if zoff >= 0 else -1
                if bits == 4:
                    y = _row4(qflat, qrow, scales, srow, zeros, zrow, ng, gs, xl, xlo, xf, xfo,
                              xsum, xso, table, acc)
                elif bits == 3:
                    y = _row3(qflat, qrow, scales, srow, zeros, zrow, ng, gs, xl, xlo, xf, xfo,
                              xsum, xso, table, acc)
                elif bits == 2:
                    y = _row2(qflat, qrow, scales, srow, zeros, zrow, ng, gs, xl, xlo, xf, xfo,
                              xsum, xso, table, acc)
                else:
                    y = _row8(qflat, qrow, scales, srow, zeros, zrow, ng, gs, xl, xlo, xf, xfo,
                              xsum, xso, table, acc)
                out[yoff + r] = y
            b = fetch_add(counter, 1)
    return out
