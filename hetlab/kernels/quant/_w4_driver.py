"""The row loops of the fast quantized GEMV/GEMM, written once for every instruction set.

The float32, AVX512-VNNI and AVX2 kernels of :mod:`._numba_w4` and :mod:`._numba_avx2` (W4
GEMV and flat GEMM, W4A8 GEMV, the AVX2 W2/W3/W8 GEMV) differ only in how the activations
are prepared and in the block dot of one 128-weight block; the blocking, the dynamic
scheduling and the per-row group loop live here, generated per path by factories that take
the path's njit functions (or block-dot ``@intrinsic``) as arguments:

- :func:`make_gemv` / :func:`make_gemm`: the parallel drivers. Output rows are handed out in
  blocks of :data:`BLOCK_ROWS` from a shared atomic counter (dynamic scheduling: a worker
  that starts late, or is preempted, takes fewer blocks instead of delaying the call). Each
  row is ``row(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc)``, where ``st`` is the
  path's prepared activation state (a tuple; for the GEMM, ``select(sts, t)`` picks
  activation row ``t``'s from the flat buffers of all rows).
- :func:`make_row_int`, :func:`make_row_mixed`, :func:`make_row_a8`: one output row from the
  integer block dot ``dot(q, wb, wh, xl, xb, acc, f)`` (``acc[:lanes] += f · float(Σ codes ·
  limbs)`` over one 128-weight block; ``wh``: the high plane of 3-bit codes).

Each generated function is compiled where it is first called (``cache=True``: numba keys
the cache by the closure's contents, so the paths do not collide).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._simd import LANES, fetch_add, gdot4_acc

__all__ = ["BLOCK_ROWS", "make_gemv", "make_gemm", "make_row_int", "make_row_mixed",
           "make_row_w4", "make_row_a8", "prepare_a8", "vnni_dot"]

#: output rows per block taken from the shared counter (dynamic scheduling)
BLOCK_ROWS = 16

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}
#: glue (state unpacking, path choice, signature adapters) is inlined in numba's IR, so the
#: compiled loops are the ones each path had before the drivers were shared (bit-identical)
_INLINE = {**_OPTS, "inline": "always"}


def make_gemv(row, lanes: int):
    """``drive(qflat, nw, scales, zeros, zsym, st, table, gs, out, nchunk)``: ``out[r] =
    row(…, st, …, r, acc)`` for every output row, ``nchunk`` workers with a float32
    scratch of ``lanes`` each."""

    @numba.njit(parallel=True, **_OPTS)
    def drive(qflat, nw, scales, zeros, zsym, st, table, gs, out, nchunk
              ):  # pragma: no cover - compiled
        n_out = out.shape[0]
        nblk = (n_out + BLOCK_ROWS - 1) // BLOCK_ROWS
        counter = np.zeros(1, np.int64)
        for _ in prange(nchunk):
            acc = np.empty(lanes, np.float32)
            b = fetch_add(counter, 1)
            while b < nblk:
                for r in range(b * BLOCK_ROWS, min(b * BLOCK_ROWS + BLOCK_ROWS, n_out)):
                    out[r] = row(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc)
                b = fetch_add(counter, 1)
        return out

    return drive


def make_gemm(row, select, lanes: int):
    """``drive(qflat, nw, scales, zeros, zsym, sts, table, gs, out, nchunk)`` for ``out``
    (m, n_out): each weight row meets every activation row ``t`` (state ``select(sts, t)``)
    while its words are in L1."""

    @numba.njit(parallel=True, **_OPTS)
    def drive(qflat, nw, scales, zeros, zsym, sts, table, gs, out, nchunk
              ):  # pragma: no cover - compiled
        m, n_out = out.shape
        nblk = (n_out + BLOCK_ROWS - 1) // BLOCK_ROWS
        counter = np.zeros(1, np.int64)
        for _ in prange(nchunk):
            acc = np.empty(lanes, np.float32)
            b = fetch_add(counter, 1)
            while b < nblk:
                for r in range(b * BLOCK_ROWS, min(b * BLOCK_ROWS + BLOCK_ROWS, n_out)):
                    for t in range(m):
                        out[t, r] = row(qflat, nw, scales, zeros, zsym, select(sts, t), table,
                                        gs, r, acc)
                b = fetch_add(counter, 1)
        return out

    return drive


def make_row_int(dot, bits: int, lanes: int):
    """``row(qflat, nw, scales, zeros, zsym, (xl, xf, xsum), table, gs, r, acc)``: row ``r``
    of ``bits``-bit codes times one activation row held as int8 limbs (no outlier blocks)::

        y[r] = Σ_lanes Σ_g Σ_blocks s[r, g] · xf[block] · idot_lane(block) − Σ_g s · z · Σ x

    Group size 128 (one block per group) takes loops without the inner block loop and
    without a branch inside (the zero point's two forms apart): the same floating-point
    operations in the same order, fewer instructions per block (the per-block cost is what
    bounds these kernels, not memory: ``benchmarks/w4_block_cost.py``).
    """
    pb = 2 if bits == 3 else bits  # bits of the first plane
    wblk = 4 * pb  # first-plane words per 128-weight block

    @numba.njit(**_INLINE)
    def row(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc
            ):  # pragma: no cover - compiled
        xl, xf, xsum = st
        nb = gs // 128
        wpg = gs * bits // 32
        hoff = gs * pb // 32  # the high plane of a 3-bit group (unused otherwise)
        for i in range(lanes):
            acc[i] = 0
        zdot = np.float32(0)
        # one block per group (g128): flat loops, asymmetric and symmetric apart (no branch
        # inside; see make_row_int's doc)
        if nb == 1 and zeros.shape[0]:
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                zdot += s * table[zeros[r, g]] * xsum[g]
                base = r * nw + g * wpg
                dot(qflat, base, base + hoff, xl, 384 * g, acc, s * xf[g])
        elif nb == 1:
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                zdot += s * zsym * xsum[g]
                base = r * nw + g * wpg
                dot(qflat, base, base + hoff, xl, 384 * g, acc, s * xf[g])
        else:
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                z = table[zeros[r, g]] if zeros.shape[0] else zsym
                zdot += s * z * xsum[g]
                base = r * nw + g * wpg
                for c in range(nb):
                    k = g * nb + c
                    dot(qflat, base + wblk * c, base + hoff + 4 * c, xl, 384 * k, acc,
                        s * xf[k])
        tot = np.float32(0)
        for i in range(lanes):
            tot += acc[i]
        return tot - zdot

    return row


def make_row_mixed(dot):
    """W4 row with the integer block dot for blocks free of outliers (``ok[k]``) and the
    float32 block dot (:func:`~._simd.gdot4_acc`, 16 lanes, on the permuted copy ``xp``) for
    the others: ``row(qflat, nw, scales, zeros, zsym, xl, xf, ok, xp, xsum, table, gs, r,
    acc)``."""

    @numba.njit(**_OPTS)
    def row(qflat, nw, scales, zeros, zsym, xl, xf, ok, xp, xsum, table, gs, r, acc
            ):  # pragma: no cover - compiled
        nwp = gs // 8
        nb = gs // 128
        for i in range(LANES):
            acc[i] = 0
        zdot = np.float32(0)
        for g in range(scales.shape[1]):
            s = table[scales[r, g]]
            z = table[zeros[r, g]] if zeros.shape[0] else zsym
            zdot += s * z * xsum[g]
            for c in range(nb):
                k = g * nb + c
                wb = r * nw + g * nwp + LANES * c
                if ok[k]:
                    dot(qflat, wb, wb, xl, 384 * k, acc, s * xf[k])
                else:
                    gdot4_acc(qflat, wb, xp, g * gs + LANES * c, nwp, acc, s)
        tot = np.float32(0)
        for i in range(LANES):
            tot += acc[i]
        return tot - zdot

    return row


def make_row_w4(dot, lanes: int):
    """W4 row on the state ``(xl, xf, ok, xp, xsum, all_ok)`` of one activation row: the
    integer row (``lanes`` lanes) when no block has outliers, else the mixed one."""
    only = make_row_int(dot, 4, lanes)
    mixed = make_row_mixed(dot)

    @numba.njit(**_INLINE)
    def row(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc
            ):  # pragma: no cover - compiled
        xl, xf, ok, xp, xsum, all_ok = st
        if all_ok:
            return only(qflat, nw, scales, zeros, zsym, (xl, xf, xsum), table, gs, r, acc)
        return mixed(qflat, nw, scales, zeros, zsym, xl, xf, ok, xp, xsum, table, gs, r, acc)

    return row


def make_row_a8(dot, lanes: int):
    """W4A8 row: ``row(qflat, nw, scales, zeros, zsym, (xl, xsum, sx), table, gs, r, acc) =
    sx · Σ_g s · (Σ q·xq − z·Σ xq)``, the integer dots exact per lane, one float32 scale
    per block."""

    @numba.njit(**_INLINE)
    def row(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc
            ):  # pragma: no cover - compiled
        xl, xsum, sx = st
        nb = gs // 128
        nwp = gs // 8
        for i in range(lanes):
            acc[i] = 0
        zdot = np.float32(0)
        if nb == 1 and zeros.shape[0]:  # g128: the flat loops of make_row_int
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                zdot += s * (table[zeros[r, g]] * xsum[g])
                wb = r * nw + g * nwp
                dot(qflat, wb, wb, xl, 128 * g, acc, s)
        elif nb == 1:
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                zdot += s * (zsym * xsum[g])
                wb = r * nw + g * nwp
                dot(qflat, wb, wb, xl, 128 * g, acc, s)
        else:
            for g in range(scales.shape[1]):
                s = table[scales[r, g]]
                z = table[zeros[r, g]] if zeros.shape[0] else zsym
                zdot += s * (z * xsum[g])
                for c in range(nb):
                    wb = r * nw + g * nwp + LANES * c
                    dot(qflat, wb, wb, xl, 128 * (g * nb + c), acc, s)
        tot = np.float32(0)
        for i in range(lanes):
            tot += acc[i]
        return (tot - zdot) * sx

    return row


@numba.njit(**_OPTS)
def prepare_a8(xq, gs):  # pragma: no cover - compiled
    """(limbs, float32 group sums) of int8 activations ``xq`` for the W4A8 rows: each
    128-block's values even ones first, then odd ones (the low and high nibbles of a code
    byte); the group sums exact (int64, then float32)."""
    n = xq.shape[0]
    ng = n // gs
    xl = np.empty(n, np.int8)
    xsum = np.empty(ng, np.float32)
    for g in range(ng):
        tot = 0
        for i in range(gs):
            k = g * gs + i
            xl[(k >> 7) * 128 + 64 * (k & 1) + ((k & 127) >> 1)] = xq[k]
            tot += np.int64(xq[k])
        xsum[g] = np.float32(tot)
    return xl, xsum


def vnni_dot(vnni):
    """A VNNI block-dot intrinsic ``f(q, wb, xl, xb, acc, f)`` in the drivers' block-dot
    signature ``f(q, wb, wh, xl, xb, acc, f)`` (``wh`` unused: W4 has one plane)."""

    @numba.njit(**_INLINE)
    def dot(q, wb, wh, xl, xb, acc, f):  # pragma: no cover - compiled
        vnni(q, wb, xl, xb, acc, f)

    return dot
