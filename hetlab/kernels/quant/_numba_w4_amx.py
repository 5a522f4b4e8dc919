"""W4 GEMV and flat GEMM on Intel AMX tiles (group sizes that are multiples of 128).

Same canonical format as :mod:`._numba_w4`; the tile instructions and why they suit a
quantized GEMV: :mod:`._amx`. Per block of 16 output rows, for every 128-weight block k of
the rows::

    decode block k+1 (16 rows: low and high nibbles into a tile buffer)
    for each column tile (up to 4 activation rows × 4 limbs):
        C = A_lo·B_lo + A_hi·B_hi            (two tdpbusd, exact int32)
    combine block k−1: acc += s[row, group] · step[limb] · float(C)

and at the end ``y[t, r] = Σ_limbs acc − Σ_g s·z·Σ_k x[t, g, k]`` (the zero point factored
out as in every fused kernel). Decoding ahead and combining behind let the tile unit work
while the next words arrive from memory.

Activations: each 128-block of each row in 28-bit fixed point, ``N = rint(x · 127·2^21 /
m)`` with ``m`` the block's max |x|, split exactly into four int8 limbs (:func:`prepare_amx`)
— an error of at most half a step, 2^−29 · m, per activation. A block whose max exceeds
:data:`AMX_OUTLIER_RATIO` times the mean |x| of its other entries would leave them fewer
than 16 significant bits; then the whole call runs the VNNI kernel
(:func:`._numba_w4.gemv4_vnni`, which computes such blocks in float32).

Which operation uses them by default, and why: :func:`hetlab.kernels.quant.numba.w4_paths`;
figures and the variants tried: :mod:`._amx` and ``benchmarks/quant.py``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from . import _numba_w4 as _w4
from ._amx import (
    CFG_BYTES,
    combine1,
    combine2,
    combine4,
    decode_row,
    tile_config,
    tile_dot,
    tile_load_a,
    tile_release,
)
from ._simd import empty64_f32, empty64_i8, empty64_i32, empty64_u8, fetch_add

__all__ = ["gemv4_amx", "gemm4_amx", "prepare_amx", "AMX_OUTLIER_RATIO", "ROWS",
           "act_rows_per_tile"]

#: a 128-activation block whose max |x| exceeds this times the mean |x| of its other 127
#: entries sends the call to the VNNI kernel (those entries would keep fewer than 16
#: significant bits in 28-bit fixed point; the VNNI kernel computes such blocks in float32).
#: Measured against the others' mean, not the block's: one entry can raise a block's mean
#: to 1/128 of itself at most, so a ratio to the block's own mean never exceeds 128.
AMX_OUTLIER_RATIO = 4096.0
#: fixed-point steps per max |x| of a block: 4 int8 limbs, the top one within ±127
_FIX = 127.0 * 2.0 ** 21
#: output rows per tile block (rows of the A and C tiles)
ROWS = 16
#: bytes of one 128-weight block's A tiles (low nibbles, then high nibbles)
_A_BYTES = 2 * ROWS * 64

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}


@numba.njit(cache=True, nogil=True)
def act_rows_per_tile(m):  # pragma: no cover - compiled
    """Activation rows per C tile for ``m`` rows: 1, 2 or 4 (4 limb columns each)."""
    return 1 if m == 1 else (2 if m == 2 else 4)


@numba.njit(**_OPTS)
def prepare_amx(X, nact, bl, cf):  # pragma: no cover - compiled
    """Limbs (B tiles) and per-column steps of activation rows ``X`` float32 (m, n).

    Column tile ``ct`` holds rows ``nact·ct … nact·ct + nact − 1`` (rows past ``m`` are
    zero). For 128-block ``k``: ``bl[(ct·nk + k)·512·nact + 256·nact·h + 16·nact·j +
    4·(4a + l) + t]`` = limb ``l`` of row ``nact·ct + a``, activation ``8j + 2t + h`` of the
    block (``h`` 0: even activations, matching the low nibbles; 1: odd), int8, zero-filled by
    the caller. Limbs: ``N = rint(x / step)``, ``step = m / (127·2^21)``, computed in float64,
    ``N = 2^21·L0 + 2^14·L1 + 2^7·L2 + L3`` with ``L0 ∈ [−127, 127]``, ``L1..L3 ∈ [−64, 64]``.
    ``cf[(ct·nk + k)·16 + 4a + l] = step · 2^(7·(3 − l))`` (float32; 0 for an all-zero block).
    Returns False (and stops) at the first block beyond :data:`AMX_OUTLIER_RATIO`.
    """
    m, n = X.shape
    nk = n // 128
    fixed = np.empty(128, np.int32)
    limbs = np.empty((4, 128), np.int8)
    half = np.empty(64, np.int8)  # one limb of the even (or odd) activations
    half32 = half.view(np.uint32)
    bl32 = bl.view(np.uint32)
    top = np.empty(1, np.int32)
    top_f = top.view(np.float32)
    for t in range(m):
        ct = t // nact
        a = t - ct * nact
        bits = X[t].view(np.int32)
        for k in range(nk):
            xb = X[t, 128 * k:128 * (k + 1)]
            # max |x| as the largest bit pattern without the sign (an integer max, which
            # vectorizes; a float max loop did not: half of this function's time)
            mxi = np.int32(0)
            s1 = np.float32(0)
            for i in range(128):
                mxi = max(mxi, bits[128 * k + i] & 0x7FFFFFFF)
                s1 += abs(xb[i])
            top[0] = mxi
            mx = top_f[0]
            if mx * 127 > AMX_OUTLIER_RATIO * (s1 - mx):  # vs the mean of the others
                return False
            slot = ct * nk + k
            if mx == 0:
                for limb in range(4):
                    cf[16 * slot + 4 * a + limb] = 0
                continue
            step = np.float64(mx) / _FIX
            u = _FIX / np.float64(mx)
            for limb in range(4):
                cf[16 * slot + 4 * a + limb] = np.float32(step * 2.0 ** (7 * (3 - limb)))
            # vector-friendly passes: fixed point, limbs in activation order, then per limb
            # and parity four-byte words (one word = the four activations of one B-tile row)
            for i in range(128):
                fixed[i] = np.int32(np.rint(np.float64(xb[i]) * u))
            for i in range(128):
                v = fixed[i]
                l0 = (v + (1 << 20)) >> 21
                r = v - (l0 << 21)
                l1 = (r + (1 << 13)) >> 14
                r -= l1 << 14
                l2 = (r + 64) >> 7
                limbs[0, i] = l0
                limbs[1, i] = l1
                limbs[2, i] = l2
                limbs[3, i] = r - (l2 << 7)
            word0 = (512 * nact * slot + 16 * a) // 4
            for h in range(2):
                for limb in range(4):
                    for i in range(64):
                        half[i] = limbs[limb, 2 * i + h]
                    at = word0 + 64 * nact * h + limb
                    for j in range(16):
                        bl32[at + 4 * nact * j] = half32[j]
    return True


@numba.njit(**_OPTS)
def _config(nact):  # pragma: no cover - compiled
    """Tile configuration: tiles 0/1 A (16 × 64 bytes), 2/3 B and 4 C (16 × 16·nact)."""
    cfg = np.zeros(CFG_BYTES, np.uint8)
    cfg[0] = 1  # palette 1
    for t in range(5):
        width = 64 if t < 2 else 16 * nact
        cfg[16 + 2 * t] = width & 0xFF
        cfg[17 + 2 * t] = width >> 8
        cfg[48 + t] = ROWS
    return cfg


@numba.njit(inline="always", **_OPTS)
def _decode(qflat, nw, r0, nr, k, buf, ao):  # pragma: no cover - compiled
    """Block ``k`` of rows ``r0 … r0 + 15`` into ``buf[ao:]``; rows past ``nr`` repeat the
    last (their outputs are dropped)."""
    for i in range(ROWS):
        decode_row(qflat, (r0 + min(i, nr - 1)) * nw + 16 * k, buf, ao + 64 * i)


@numba.njit(inline="always", **_OPTS)
def _combine(nact, cbuf, co, sblk, so, cf, fo, acc, ao):  # pragma: no cover - compiled
    if nact == 1:
        combine1(cbuf, co, sblk, so, cf, fo, acc, ao)
    elif nact == 2:
        combine2(cbuf, co, sblk, so, cf, fo, acc, ao)
    else:
        combine4(cbuf, co, sblk, so, cf, fo, acc, ao)


@numba.njit(inline="always", **_OPTS)
def _combine_all(nact, nct, nk, nb, k, cbuf, sblk, cf, acc):  # pragma: no cover - compiled
    """Combine block ``k``'s C tiles (one per column tile) into ``acc``."""
    csz = ROWS * 4 * nact
    for ct in range(nct):
        _combine(nact, cbuf, csz * ((k & 1) * nct + ct), sblk, ROWS * (k // nb), cf,
                 16 * (ct * nk + k), acc, csz * ct)


@numba.njit(parallel=True, **_OPTS)
def _amx_rows(qflat, nw, scales, zeros, zsym, table, gs, out, nchunk, nact, bl, cf, xsum
              ):  # pragma: no cover - compiled
    """``out`` (m, n_out) from prepared limbs ``bl``, steps ``cf`` and group sums ``xsum``
    (m, ng); ``nchunk`` workers take blocks of :data:`ROWS` rows from an atomic counter."""
    m, n_out = out.shape
    ng = scales.shape[1]
    nb = gs // 128
    nk = ng * nb
    nct = (m + nact - 1) // nact
    cols = 4 * nact
    csz = ROWS * cols  # int32 of one C tile
    nblk = (n_out + ROWS - 1) // ROWS
    cfg = _config(nact)
    counter = np.zeros(1, np.int64)
    for _ in prange(nchunk):
        tile_config(cfg)
        buf = empty64_u8(2 * _A_BYTES)  # double buffer: block k and block k+1
        cbuf = empty64_i32(2 * nct * csz)
        acc = empty64_f32(nct * csz)
        sblk = empty64_f32(ROWS * ng + ROWS)
        sz = np.empty(ng, np.float32)
        b = fetch_add(counter, 1)
        while b < nblk:
            r0 = b * ROWS
            nr = min(ROWS, n_out - r0)
            for g in range(ng):
                for i in range(ROWS):
                    sblk[ROWS * g + i] = table[scales[r0 + min(i, nr - 1), g]]
            acc[:] = 0
            _decode(qflat, nw, r0, nr, 0, buf, 0)
            for k in range(nk):
                if k + 1 < nk:
                    _decode(qflat, nw, r0, nr, k + 1, buf, _A_BYTES * ((k + 1) & 1))
                tile_load_a(buf, _A_BYTES * (k & 1))
                for ct in range(nct):
                    tile_dot(bl, 512 * nact * (ct * nk + k), 16 * nact, cbuf,
                             csz * ((k & 1) * nct + ct), 4 * cols)
                if k > 0:  # combine the previous block while this one is in the tile unit
                    _combine_all(nact, nct, nk, nb, k - 1, cbuf, sblk, cf, acc)
            _combine_all(nact, nct, nk, nb, nk - 1, cbuf, sblk, cf, acc)
            for i in range(nr):
                r = r0 + i
                for g in range(ng):  # s · z of this row's groups, for every activation row
                    z = table[zeros[r, g]] if zeros.shape[0] else zsym
                    sz[g] = sblk[ROWS * g + i] * z
                for t in range(m):
                    zdot = np.float32(0)
                    for g in range(ng):
                        zdot += sz[g] * xsum[t, g]
                    ct = t // nact
                    at = csz * ct + cols * i + 4 * (t - ct * nact)
                    out[t, r] = (acc[at] + acc[at + 1]) + (acc[at + 2] + acc[at + 3]) - zdot
            b = fetch_add(counter, 1)
        tile_release()
    return out


@numba.njit(**_OPTS)
def _group_sums(X, gs):  # pragma: no cover - compiled
    m, n = X.shape
    xsum = np.empty((m, n // gs), np.float32)
    for t in range(m):
        for g in range(n // gs):
            tot = np.float32(0)
            for i in range(gs):
                tot += X[t, g * gs + i]
            xsum[t, g] = tot
    return xsum


@numba.njit(**_OPTS)
def _prepared(X):  # pragma: no cover - compiled
    """(nact, limbs, steps, ok) of activation rows X (m, n)."""
    m, n = X.shape
    nact = act_rows_per_tile(m)
    nct = (m + nact - 1) // nact
    nk = n // 128
    bl = empty64_i8(512 * nact * nct * nk)
    bl[:] = 0
    cf = empty64_f32(16 * nct * nk)
    cf[:] = 0
    ok = prepare_amx(X, nact, bl, cf)
    return nact, bl, cf, ok


@numba.njit(**_OPTS)
def gemv4_amx(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk
              ):  # pragma: no cover - compiled
    """y = W x on AMX tiles (``_amx.HAS_AMX`` machines only); same arguments as
    :func:`._numba_w4.gemv4`. Activations with outlier blocks go to the VNNI kernel."""
    X = x.reshape((1, x.shape[0]))
    nact, bl, cf, ok = _prepared(X)
    if not ok:
        return _w4.gemv4_vnni(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk)
    _amx_rows(qflat, nw, scales, zeros, zsym, table, gs, out.reshape((1, out.shape[0])),
              nchunk, nact, bl, cf, _group_sums(X, gs))
    return out


@numba.njit(**_OPTS)
def gemm4_amx(qflat, nw, scales, zeros, zsym, X, table, gs, out, nchunk
              ):  # pragma: no cover - compiled
    """Y = X Wᵀ on AMX tiles; X float32 (m, n), ``out`` float32 (m, out). Each 128-weight
    block of 16 output rows is decoded once for all m rows (four rows per C tile)."""
    nact, bl, cf, ok = _prepared(X)
    if not ok:
        return _w4.gemm4_vnni(qflat, nw, scales, zeros, zsym, X, table, gs, out, nchunk)
    _amx_rows(qflat, nw, scales, zeros, zsym, table, gs, out, nchunk, nact, bl, cf,
              _group_sums(X, gs))
    return out
