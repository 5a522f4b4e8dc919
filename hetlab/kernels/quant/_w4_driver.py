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

from ._simd import HAS_F16C, LANES, empty64_f32, empty64_i8, f16x16_to_f32, fetch_add, gdot4_acc

__all__ = ["BLOCK_ROWS", "make_gemv", "make_gemm", "make_row_int", "make_row_mixed",
           "make_row_w4", "make_row_a8", "prepare_a8", "vnni_dot", "group_scales"]

#: output rows per block taken from the shared counter (dynamic scheduling)
BLOCK_ROWS = 16

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}
#: glue (state unpacking, path choice, signature adapters) is inlined in numba's IR, so the
#: compiled loops are the ones each path had before the drivers were shared (bit-identical)
_INLINE = {**_OPTS, "inline": "always"}


@numba.njit(**_INLINE)
def _zero_point_sum(zeros, zsym, xsum, acc, off):  # pragma: no cover - compiled
    """``Σ_g s_g · z_g · xsum[g]`` from the scales at ``acc[off:off + ng]`` and, for an
    asymmetric format, the zero points after them; vectorized by LLVM (reassociation)."""
    ng = xsum.shape[0]
    zdot = np.float32(0)
    if zeros.shape[0]:
        for g in range(ng):
            zdot += acc[off + g] * acc[off + ng + g] * xsum[g]
        return zdot
    for g in range(ng):
        zdot += acc[off + g] * xsum[g]
    return zdot * zsym  # zsym a power of two: the same as multiplying each term


@numba.njit(**_INLINE)
def _group_scales_f16c(scales, zeros, zsym, xsum, table, r, acc, off
                       ):  # pragma: no cover - compiled
    ng = scales.shape[1]
    asym = zeros.shape[0] > 0
    g = 0
    while g + LANES <= ng:
        f16x16_to_f32(scales, r * ng + g, acc, off + g)
        if asym:
            f16x16_to_f32(zeros, r * ng + g, acc, off + ng + g)
        g += LANES
    for t in range(g, ng):
        acc[off + t] = table[scales[r, t]]
        if asym:
            acc[off + ng + t] = table[zeros[r, t]]
    return _zero_point_sum(zeros, zsym, xsum, acc, off)


@numba.njit(**_INLINE)
def _group_scales_table(scales, zeros, zsym, xsum, table, r, acc, off
                        ):  # pragma: no cover - compiled
    ng = scales.shape[1]
    for g in range(ng):
        acc[off + g] = table[scales[r, g]]
        if zeros.shape[0]:
            acc[off + ng + g] = table[zeros[r, g]]
    return _zero_point_sum(zeros, zsym, xsum, acc, off)


#: ``zdot = group_scales(scales, zeros, zsym, xsum, table, r, acc, off)``: row ``r``'s group
#: scales as float32 at ``acc[off:off + ng]`` (zero points after them when asymmetric) and
#: the zero-point sum ``Σ_g s · z · xsum[g]``. With F16C (every AVX2 CPU) 16 float16 values
#: per ``vcvtph2ps``; elsewhere (or in a portable build) one ``table`` lookup each.
group_scales = _group_scales_f16c if HAS_F16C else _group_scales_table


def make_gemv(row, lanes: int):
    """``drive(qflat, nw, scales, zeros, zsym, st, table, gs, out, nchunk)``: ``out[r] =
    row(…, st, …, r, acc)`` for every output row, ``nchunk`` workers with a float32
    scratch ``acc`` of ``lanes + 2 · groups`` each (the accumulators, then room for one row's
    scales and zero points: :func:`group_scales`)."""

    @numba.njit(parallel=True, **_OPTS)
    def drive(qflat, nw, scales, zeros, zsym, st, table, gs, out, nchunk
              ):  # pragma: no cover - compiled
        n_out = out.shape[0]
        nblk = (n_out + BLOCK_ROWS - 1) // BLOCK_ROWS
        counter = np.zeros(1, np.int64)
        for _ in prange(nchunk):
            acc = empty64_f32(lanes + 2 * scales.shape[1])
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
            acc = empty64_f32(lanes + 2 * scales.shape[1])
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

    Group size 128 (one block per group) takes a flat loop without the inner block loop and
    without a branch inside: the row's scales, zero-point sum and block factors
    ``s · xf`` are computed first, 16 groups per vector op (:func:`group_scales`), and each
    block's FMA reads its factor from memory. The per-block cost is what bounds these
    kernels, not memory (``benchmarks/w4_block_cost.py``): the scalar table lookups,
    products and zero-point FMA per block, and the broadcast of a register, took the vector
    ports the block dot needs (A/B figures: ``benchmarks/results/quiet-2026-12-02/``). The
    block factors are the same float32 products as before; the zero-point sum adds in another
    order.
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
        if nb == 1:  # one block per group (g128): flat loops (see make_row_int's doc)
            ng = scales.shape[1]
            zdot = group_scales(scales, zeros, zsym, xsum, table, r, acc, lanes)
            for g in range(ng):
                acc[lanes + g] *= xf[g]
            for g in range(ng):
                base = r * nw + g * wpg
                dot(qflat, base, base + hoff, xl, 384 * g, acc, acc[lanes + g])
        else:
            zdot = np.float32(0)
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
        if nb == 1:  # g128: the flat loop of make_row_int
            zdot = group_scales(scales, zeros, zsym, xsum, table, r, acc, lanes)
            for g in range(scales.shape[1]):
                wb = r * nw + g * nwp
                dot(qflat, wb, wb, xl, 128 * g, acc, acc[lanes + g])
        else:
            zdot = np.float32(0)
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
    xl = empty64_i8(n)
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
