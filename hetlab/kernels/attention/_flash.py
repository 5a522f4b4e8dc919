"""CPU flash attention (numba): query tiles × key tiles, both products as BLAS GEMMs.

For each (head, tile of :data:`BLOCK_Q` query rows) — one ``prange`` task — the keys are
walked in tiles of :data:`BLOCK_K` rows:

1. ``S = Q_t · K_tᵀ`` (BLOCK_Q × BLOCK_K × d), one ``np.dot`` into a preallocated tile: numba
   calls scipy's BLAS ``sgemm``/``dgemm`` on the contiguous slices (``K_t`` is read
   transposed, no copy);
2. online softmax per row over the tile's visible columns: new running maximum ``m``,
   weights ``p = 2^(s − m)`` (the queries were scaled once by ``log₂e/√d``, so scores are in
   base-2 units), rescale factor ``α = 2^(m_old − m_new)`` and running sum ``l ← α·l + Σp``;
3. ``P · V_t`` (BLOCK_Q × BLOCK_K × d_v), a second GEMM into a tile, then
   ``acc ← α·acc + P·V_t`` per row; at the end ``o = acc / l``.

Scores exist only as one BLOCK_Q × BLOCK_K tile per task (memory O(BLOCK_Q·(BLOCK_K + d))
per worker, never n × n). With ``causal``, a query tile stops at its last visible key and
only the columns past a row's diagonal in the last tiles are left out (their weight is 0).

BLAS runs single-threaded inside the tasks (:func:`attention` limits scipy's BLAS to one
thread for the call with threadpoolctl; numba's ``prange`` supplies the parallelism). Were it
left at its default, every task's GEMM would start BLAS threads of its own on cores numba's
threads already fill.

Float32 weights come from :func:`_exp2_row`, a degree-6 polynomial for ``2^f`` on [0, 1)
plus the exponent written into the float's bits, which vectorizes (libm's ``expf`` is one
call per score); the float32 row maximum is an integer max over the scores' bit patterns
(:func:`_max_f32_bits`), which vectorizes where numba's float ``max`` loop does not (with
that loop, on a busy 2-core machine at n = 2048, the softmax took half the time and the two
GEMMs the other half). Float64 uses ``math.exp`` and a plain max. All arithmetic stays in
the inputs' dtype; ``m`` and ``l`` are kept in float64 per row. The kernel is compiled with
all fastmath flags, including no-NaN/no-inf: none can arise (inputs validated finite, scores
bounded by the validation, columns past the diagonal skipped rather than set to −inf).

Exactness: the spec's contract, ``max|o − o_ref| / max|o_ref| ≤ 1e-4`` against the float64
reference (derivation in :mod:`.spec`). Its worst-case bound has a term ``n_k/B + B`` for
``n_k/B`` rescales and sums of ``B`` keys per tile; with B = :data:`BLOCK_K` = 256 it is 320
at n_k = 16384, the same as with the 64-key tiles the derivation was written for, and the
GEMMs' d-term dot products are the ``d·S`` term. The scaled query rounds once more (u) and
the exp2 polynomial adds ≤ 1e-7 per weight (≈ 2u, within the derivation's allowance for the
exp). Errors seen on the generated cases: 1e-7 … 2e-6 (float32), ~1e-15 (float64).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from ._vexp import EXP2_POLY  # one polynomial for every float32 exp of the family

__all__ = ["attention", "flash", "BLOCK_Q", "BLOCK_K", "EXP2_POLY", "LOG2E"]

#: query rows per task (and per GEMM)
BLOCK_Q = 256
#: keys per tile: S is BLOCK_Q × BLOCK_K
BLOCK_K = 256
#: log₂(e): queries are scaled by LOG2E/√d so the weights are powers of 2
LOG2E = 1.4426950408889634


@njit(fastmath=True, cache=True, inline="always")
def _exp2_row(row, cols, mx, ebits, fbits):  # pragma: no cover - compiled
    """row[:cols] = 2^(row[:cols] − mx) in float32; returns their sum. Vectorizes.

    t = max(x − mx, −127) = n + f with n = ⌊t⌋; 2^f by :data:`EXP2_POLY`, 2^n by writing
    n + 127 into the int32 ``ebits`` (``fbits``, a float32 view of the same memory, reads
    them as 2^n). Relative error ≤ 1e-7 for t ≥ −126 (measured maximum 6.6e-8 over 2·10⁶ points
    of [−126, 0]; tests/test_attention_flash.py checks the bound); t < −126 gives exactly 0
    (exponent bits 0), a weight below 2⁻¹²⁶ of the row's largest.
    """
    total = np.float32(0.0)
    for c in range(cols):
        t = max(row[c] - mx, np.float32(-127.0))
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
        row[c] = p
    for c in range(cols):
        w = row[c] * fbits[c]
        row[c] = w
        total += w
    return total


@njit(fastmath=True, cache=True, inline="always")
def _max_f32_bits(bits, cols):  # pragma: no cover - compiled
    """max of the float32 values whose bit patterns are ``bits[:cols]`` (int32), returned
    as a bit pattern. Compares the patterns as integers, mapped so that their order is the
    floats' order (negative: magnitude bits flipped): an integer max reduction vectorizes,
    LLVM leaves numba's float ``max`` loop scalar (it took as long as the exp)."""
    mx = np.int32(-2147483648)
    for c in range(cols):
        b = bits[c]
        mx = max(mx, b ^ ((b >> 31) & np.int32(0x7FFFFFFF)))
    return mx ^ ((mx >> 31) & np.int32(0x7FFFFFFF))


@njit(parallel=True, fastmath=True, cache=True)
def flash(q, k, v, causal, scale, bq, bk, out, fast):  # pragma: no cover - compiled
    """The tiled kernel: ``out[h] = softmax(scale·q[h]·k[h]ᵀ) v[h]``, q/k/v C-contiguous.

    ``fast`` (float32): ``scale`` includes log₂e and the weights are ``2^x`` by
    :func:`_exp2_row`; otherwise ``scale = 1/√d`` and the weights are ``math.exp``.
    """
    h, n_q, d = q.shape
    n_k = k.shape[1]
    dv = v.shape[2]
    offset = n_k - n_q
    tiles = (n_q + bq - 1) // bq
    for t in prange(h * tiles):
        hh = t // tiles
        i0 = (t % tiles) * bq
        rows = min(bq, n_q - i0)
        qs = np.empty((rows, d), q.dtype)
        for r in range(rows):
            for e in range(d):
                qs[r, e] = q[hh, i0 + r, e] * scale
        m = np.zeros(rows)
        lsum = np.zeros(rows)
        alpha = np.zeros(rows, q.dtype)
        acc = np.zeros((rows, dv), q.dtype)
        pv = np.empty((rows, dv), q.dtype)
        sbuf = np.empty(rows * bk, q.dtype)
        ebits = np.empty(bk, np.int32)
        fbits = ebits.view(np.float32)
        sbits = sbuf.view(np.int32)  # (float32 only) the scores' bit patterns, for the max
        mb = np.empty(2, np.int32)  # 8 bytes: one float64 or (mb[0]) one float32
        mf = mb.view(q.dtype)
        j_end = min(n_k, i0 + rows + offset) if causal else n_k
        for j0 in range(0, j_end, bk):
            cols = min(bk, j_end - j0)
            s = sbuf[: rows * cols].reshape((rows, cols))
            np.dot(qs, k[hh, j0:j0 + cols].T, s)
            for r in range(rows):
                vis = min(cols, i0 + r + offset - j0 + 1) if causal else cols
                if vis <= 0:  # the whole tile lies past this row's diagonal
                    alpha[r] = 1.0
                    for c in range(cols):
                        s[r, c] = 0.0
                    continue
                row = s[r]
                if fast:
                    mb[0] = _max_f32_bits(sbits[r * cols:r * cols + vis], vis)
                    mx = mf[0]
                else:
                    mx = row[0]
                    for c in range(1, vis):
                        mx = max(mx, row[c])
                if j0 > 0:  # every row sees key 0, so m is set on the first tile
                    mx = max(mx, q.dtype.type(m[r]))
                if fast:
                    total = _exp2_row(row, vis, mx, ebits, fbits)
                    a = 2.0 ** (m[r] - mx) if j0 > 0 else 0.0
                else:
                    total = row[0] * 0
                    for c in range(vis):
                        w = math.exp(row[c] - mx)
                        row[c] = w
                        total += w
                    a = math.exp(m[r] - mx) if j0 > 0 else 0.0
                for c in range(vis, cols):
                    s[r, c] = 0.0
                lsum[r] = lsum[r] * a + total
                m[r] = mx
                alpha[r] = a
            np.dot(s, v[hh, j0:j0 + cols], pv)
            for r in range(rows):
                a = alpha[r]
                for e in range(dv):
                    acc[r, e] = acc[r, e] * a + pv[r, e]
        for r in range(rows):
            inv = 1.0 / lsum[r]
            for e in range(dv):
                out[hh, i0 + r, e] = acc[r, e] * inv


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """numba flash attention of validated, C-contiguous arguments (:func:`hetlab.attention`).

    Parameters
    ----------
    q : ndarray (heads, n_q, d), float32 or float64
    k : ndarray (heads, n_k, d), q's dtype
    v : ndarray (heads, n_k, d_v), q's dtype
    causal : bool
        Key ``j`` visible to query ``i`` when ``j ≤ i + n_k − n_q``.

    Returns
    -------
    ndarray (heads, n_q, d_v), the inputs' dtype

    Examples
    --------
    >>> import numpy as np
    >>> q = np.zeros((1, 2, 4), np.float32); v = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    >>> attention(q, q, v, causal=True)
    array([[[0., 1., 2., 3.],
            [2., 3., 4., 5.]]], dtype=float32)
    """
    fast = q.dtype == np.float32
    out = np.empty((q.shape[0], q.shape[1], v.shape[2]), q.dtype)
    scale = q.dtype.type((LOG2E if fast else 1.0) / math.sqrt(q.shape[2]))
    with _blas_controller().limit(limits=1, user_api="blas"):
        flash(q, k, v, causal, scale, BLOCK_Q, BLOCK_K, out, fast)
    return out


_CONTROLLER: list = []


def _blas_controller() -> Any:
    """threadpoolctl's controller of the loaded BLAS libraries, made once, after scipy's BLAS
    (the one numba's ``np.dot`` calls) is loaded — a controller made before would not see it
    and the first call would run multithreaded BLAS inside the ``prange`` tasks."""
    if not _CONTROLLER:
        import scipy.linalg.cython_blas  # noqa: F401  (loads the library numba calls)
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]
