"""The AVX2 integer path of the quantized GEMV/GEMM (group sizes that are multiples of 128).

For CPUs with AVX2 but without AVX512-VNNI (e.g. AMD EPYC Zen 2/3): the block dots of
:mod:`._simd_avx2` (``vpmaddubsw`` + ``vpmaddwd`` on 8-bit code bytes and int8 activation
limbs), in the row loop and dynamic scheduling of :mod:`._numba_w4`::

    y[r] = Σ_lanes Σ_g s[r, g] · xf[block] · idot_lane(block)  −  Σ_g s[r, g] · z[r, g] · Σ_k x

Kernels: :func:`gemv4_avx2`, :func:`gemm4_avx2` (W4, flat GEMM), :func:`gemv_w4a8_avx2`
(W4A8: the int8 activations are the single limb; exact integer group dots) and
:func:`gemv_bits_avx2` (W2, W3, W8 GEMV).

Exactness (the VNNI path's contract, :mod:`.spec`): each 128-activation block is held in
22-bit fixed point (W8: 21-bit) as three int8 limbs, ``x ≈ xf · (2^14·L0 + 2^7·L1 + L2)``,
an error ≤ ~0.75 · xf per value (≈ 2^-22.4 of the block's max |x|; W8 2^-21.4); the
integer products and sums are exact, then one int→float conversion and one float32 FMA per
block round. Blocks whose max |x| exceeds :data:`~._numba_w4.OUTLIER_RATIO` × the mean |x|
of their nonzero entries would lose their small entries: W4 computes those blocks with the
float32 block dot instead; W2/W3/W8 (:func:`gemv_bits_avx2`) return None and the caller
runs the float kernel for the whole call.

On an AVX-512 machine these kernels run too (AVX2 is a subset), which is how they are
tested here; numba compiles for the host, so there LLVM may still pick EVEX encodings for
the scalar and loop code around the intrinsics.
"""

from __future__ import annotations

import numba
import numpy as np

from ._numba_w4 import OUTLIER_RATIO, prepare_x4, select_w4
from ._simd import LANES
from ._simd_avx2 import KINDS, avx2_dot
from ._w4_driver import make_gemm, make_gemv, make_row_a8, make_row_int, make_row_w4, prepare_a8

__all__ = ["prepare_limbs", "gemv4_avx2", "gemm4_avx2", "gemv_w4a8_avx2", "gemv_bits_avx2",
           "prepare_bits", "KIND_OF_BITS", "TOP"]

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}
#: block-dot kind of each code width
KIND_OF_BITS = {2: "w2", 3: "w3", 4: "w4", 8: "w8"}
#: largest |top limb| per kind: 8-bit codes × 127 would saturate vpmaddubsw's int16 pairs
TOP = {"w2": 127, "w3": 127, "w4": 127, "w8": 64}
#: lanes of the AVX2 accumulator (one ymm of float32)
_AL = 8


@numba.njit(**_OPTS)
def prepare_limbs(x, nsplit, top, xl, xf, ok):  # pragma: no cover - compiled
    """Fixed point of each 128-activation block as three int8 limbs, for the AVX2 dots.

    Block ``k`` with ``m = max |x|``: ``N = rint(x · top·2^14 / m)`` split exactly as
    ``N = 2^14·L0 + 2^7·L1 + L2`` (``L0 ∈ [−top, top]``, ``L1, L2 ∈ [−64, 63]``),
    ``xf[k] = m / (top·2^14)``. Limb ``l`` of activation ``i`` is stored at
    ``xl[384k + 128l + (128 / nsplit)·(i % nsplit) + i // nsplit]`` (``nsplit`` 2 is the
    layout of :func:`~._numba_w4.prepare_limbs`). ``ok[k]``: False for a block with outliers
    (``m > OUTLIER_RATIO · mean |x|``, the mean over its nonzero entries: zeros, such as the
    padding of a ragged last block, are exact in fixed point), whose limbs are not written;
    an all-zero block has ``xf = 0`` and zero limbs.
    """
    sub = 128 // nsplit
    for k in range(xf.shape[0]):
        b = 128 * k
        m = np.float32(0)
        s1 = np.float32(0)
        nz = 0
        for i in range(128):
            a = abs(x[b + i])
            m = max(m, a)
            s1 += a
            nz += a != 0
        ok[k] = m * nz <= OUTLIER_RATIO * s1
        if m == 0:
            xf[k] = 0
            for i in range(384):
                xl[384 * k + i] = 0
            continue
        if not ok[k]:
            continue
        full = np.float32(top * 16384.0)
        u = full / m
        xf[k] = m / full
        for i in range(128):
            n = np.int32(np.rint(x[b + i] * u))
            l0 = (n + 8192) >> 14
            r = n - (l0 << 14)
            l1 = (r + 64) >> 7
            at = 384 * k + sub * (i % nsplit) + i // nsplit
            xl[at] = l0
            xl[at + 128] = l1
            xl[at + 256] = r - (l1 << 7)


@numba.njit(**_OPTS)
def prepare_bits(x, gs, nsplit, top):  # pragma: no cover - compiled
    """(limbs, block factors, all blocks free of outliers, float32 group sums) of ``x``."""
    nk = x.shape[0] // 128
    xl = np.empty(384 * nk, np.int8)
    xf = np.empty(nk, np.float32)
    ok = np.empty(nk, np.bool_)
    prepare_limbs(x, nsplit, top, xl, xf, ok)
    ng = x.shape[0] // gs
    xsum = np.empty(ng, np.float32)
    for g in range(ng):
        tot = np.float32(0)
        for i in range(gs):
            tot += x[g * gs + i]
        xsum[g] = tot
    return xl, xf, ok.all(), xsum


#: the row function of each code width: ``row(…, (xl, xf, xsum), table, gs, r, acc)``
ROWS = {bits: make_row_int(avx2_dot[kind], bits, _AL) for bits, kind in KIND_OF_BITS.items()}
_row4 = make_row_w4(avx2_dot["w4"], _AL)


@numba.njit(**_OPTS)
def _prepare4(x, gs, xp, xsum, xl, xf, ok):  # pragma: no cover - compiled
    prepare_x4(x, gs, xp, xsum)
    prepare_limbs(x, 2, 127, xl, xf, ok)
    return ok.all()


_gemv4 = make_gemv(_row4, LANES)
_gemm4 = make_gemm(_row4, select_w4, LANES)


@numba.njit(**_OPTS)
def gemv4_avx2(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk
               ):  # pragma: no cover - compiled
    """W4 GEMV on AVX2: the arguments of :func:`~._numba_w4.gemv4`."""
    n = x.shape[0]
    xp = np.empty(n, np.float32)
    xsum = np.empty(scales.shape[1], np.float32)
    xl = np.empty(3 * n, np.int8)
    xf = np.empty(n // 128, np.float32)
    ok = np.empty(n // 128, np.bool_)
    all_ok = _prepare4(x, gs, xp, xsum, xl, xf, ok)
    return _gemv4(qflat, nw, scales, zeros, zsym, (xl, xf, ok, xp, xsum, all_ok), table, gs,
                  out, nchunk)


@numba.njit(**_OPTS)
def gemm4_avx2(qflat, nw, scales, zeros, zsym, X, table, gs, out, nchunk
               ):  # pragma: no cover - compiled
    """W4 flat GEMM on AVX2 (arguments of :func:`~._numba_w4.gemm4`): each activation row
    prepared once, each weight row meeting every activation row while it is in L1."""
    m, n = X.shape
    ng = scales.shape[1]
    nk = n // 128
    xp = np.empty(m * n, np.float32)
    xsum = np.empty(m * ng, np.float32)
    xl = np.empty(3 * m * n, np.int8)
    xf = np.empty(m * nk, np.float32)
    ok = np.empty(m * nk, np.bool_)
    all_ok = np.empty(m, np.bool_)
    for t in range(m):
        all_ok[t] = _prepare4(X[t], gs, xp[t * n:(t + 1) * n], xsum[t * ng:(t + 1) * ng],
                              xl[3 * n * t:3 * n * (t + 1)], xf[t * nk:(t + 1) * nk],
                              ok[t * nk:(t + 1) * nk])
    return _gemm4(qflat, nw, scales, zeros, zsym, (xl, xf, ok, xp, xsum, all_ok, n, nk, ng),
                  table, gs, out, nchunk)


_gemv_a8 = make_gemv(make_row_a8(avx2_dot["w4a8"], _AL), _AL)


@numba.njit(**_OPTS)
def gemv_w4a8_avx2(qflat, nw, scales, zeros, zsym, xq, sx, table, gs, out, nchunk
                   ):  # pragma: no cover - compiled
    """W4A8 GEMV on AVX2 (arguments of :func:`~._numba_w4.gemv_w4a8_vnni`): exact integer
    dots of the codes with the int8 activations, one float32 scale per group."""
    xl, xsum = prepare_a8(xq, gs)
    return _gemv_a8(qflat, nw, scales, zeros, zsym, (xl, xsum, sx), table, gs, out, nchunk)


_GEMV = {bits: make_gemv(row, _AL) for bits, row in ROWS.items() if bits != 4}


def gemv_bits_avx2(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk, bits):
    """W2/W3/W8 GEMV on AVX2 (``gs`` a multiple of 128); None when a block of ``x`` has
    outliers (the caller then runs the float32 kernel)."""
    kind = KIND_OF_BITS[bits]
    xl, xf, all_ok, xsum = prepare_bits(x, gs, KINDS[kind][0], TOP[kind])
    if not all_ok:
        return None
    return _GEMV[bits](qflat, nw, scales, zeros, zsym, (xl, xf, xsum), table, gs, out, nchunk)
