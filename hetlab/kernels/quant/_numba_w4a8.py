"""W4A8 (and W8/W3/W2 A8) GEMV as plain numba loops: the kernel of any format, any CPU.

Each group's dot ``Σ_k q · xq − z · Σ_k xq`` is computed in int32 (exact), then one float32
multiply by the group's scale; the activation scale is applied once at the end. The vector
kernels of :mod:`._numba_w4` (VNNI) and :mod:`._numba_avx2` take W4 with group sizes that are
multiples of 128 instead; :func:`hetlab.kernels.quant.numba.gemv_w4a8` chooses.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

__all__ = ["IDOT", "gemv_w4a8_loop"]

_U = np.uint32
_I = np.uint64


def _make_idot(bits: int):
    """The integer group dot of a one-plane width (8, 4, 2 bits), compiled per width.

    The width's constants (values per word, shift, mask) are closure constants of each
    compiled function, so the inner loop over a word's values unrolls exactly as the three
    hand-written copies it replaces did (a runtime ``bits`` measured about 2× slower).
    Products and sums are integers.
    """
    per = 32 // bits
    mask = _U((1 << bits) - 1)

    @numba.njit(cache=True, nogil=True)
    def idot(qflat, wb, xq, xb, gs):  # pragma: no cover - compiled
        acc = np.int32(0)
        for i in range(gs // per):
            w = qflat[_I(wb + i)]
            for j in range(per):
                acc += np.int32((w >> _U(bits * j)) & mask) * np.int32(xq[_I(xb + per * i + j)])
        return acc

    return idot


@numba.njit(cache=True, nogil=True)
def _idot3(qflat, wb, xq, xb, gs):  # pragma: no cover - compiled
    # low-plane word i: 2-bit fields of weights 16i…16i+15; their high bits: bits 16(i%2)…
    # of high-plane word i//2
    acc = np.int32(0)
    nlo = gs // 16
    for i in range(nlo):
        lo = qflat[_I(wb + i)]
        hi = qflat[_I(wb + nlo + (i >> 1))] >> _U(16 * (i & 1))
        for j in range(16):
            q = ((lo >> _U(2 * j)) & _U(3)) | (((hi >> _U(j)) & _U(1)) << _U(2))
            acc += np.int32(q) * np.int32(xq[_I(xb + 16 * i + j)])
    return acc


#: the integer group dot of each code width
IDOT = {8: _make_idot(8), 4: _make_idot(4), 3: _idot3, 2: _make_idot(2)}


@numba.njit(parallel=True, cache=True, nogil=True)
def gemv_w4a8_loop(qflat, nw, scales, zeros, zsym, xq, xsum, sx, table, gs, wpg, out, idot
               ):  # pragma: no cover - compiled
    """y[r] = sx · Σ_g s[r, g] · (Σ_k q · xq − z · Σ_k xq): integer group dots, float rescale."""
    ng = scales.shape[1]
    for r in prange(out.shape[0]):
        acc = np.float32(0)
        for g in range(ng):
            z = np.int32(table[zeros[r, g]]) if zeros.shape[0] else zsym
            d = idot(qflat, r * nw + g * wpg, xq, g * gs, gs) - z * xsum[g]
            acc += table[scales[r, g]] * np.float32(d)
        out[r] = acc * sx
    return out
