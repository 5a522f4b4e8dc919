"""Block-sparse attention kernels (numba): the flash kernel's BLAS tiles over kept blocks only.

One ``prange`` task per (head, query block of ``block`` rows). The task's kept key blocks
(its row of the mask, ascending) are taken in *panels* of up to :data:`PANEL_KEYS` keys:
the panel's key blocks — one slice when they are consecutive, else copied into one
contiguous buffer — make one ``S = Q_I · K_panelᵀ`` GEMM (``np.dot``: scipy's BLAS sgemm,
single-threaded inside the tasks as in :mod:`._flash`). A 64 × 64 × 64 GEMM runs well
below the rate of a 64 × 1024 × 64 one (BLAS's per-call and edge costs), so one GEMM per
kept block would give back part of what the sparsity saves; the gather copies
``keep·block·(d + d_v)`` values per task against its ``2·block·keep·block·(d + d_v)`` flops.

:func:`sparse_float` (``bits=None``): the panel is a key tile of :func:`._flash.flash` —
float32 weights ``2^(s − m)`` from :func:`._flash._exp2_row` (queries pre-scaled by
``log₂e/√d``), the row maximum over the scores' bit patterns, online softmax across
panels, ``P · V_panel`` as a second GEMM; float64 uses ``math.exp``.

:func:`sparse_quant` (``bits=8/4``): the codes q̂, k̂, v̂ (from :func:`quantize`) are held
as float32 and multiplied by sgemm: every product and partial sum is an integer below 2²⁴
(q̂·k̂: ≤ 127²·256 ≈ 4.1e6; P̂·v̂: ≤ 127²·1024 ≈ 1.65e7 < 2²⁴ ≈ 1.68e7), so these float32
GEMMs give the exact integer dot products of the reference — the quantization's numerics,
not the speed of integer arithmetic (no INT8 instructions are used; the time is that of
float32 GEMMs on integer-valued operands). ``q̂·k̂`` is one GEMM per panel; the weights'
scale ``s_P`` belongs to one (query block, key block) pair, so ``P̂ · v̂`` is one GEMM per
kept block (``v̂``'s block is a slice, no copy). Scores, running max and ``s_P`` are float64
as in the reference, the weights float32 from :func:`.numba._exp_row`; where a weight's
code could differ from the reference's (``P/s_P`` within the float32 exp's error bound of a
rounding boundary) it is recomputed in float64 (see :mod:`.numba_paro`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._flash import _exp2_row, _max_f32_bits
from .numba import _exp_row

__all__ = ["PANEL_KEYS", "panel_blocks", "quantize", "sparse_float", "sparse_quant"]

#: most keys per panel (one S GEMM): S is block × PANEL_KEYS per task
PANEL_KEYS = 1024
_FM = {"reassoc", "contract", "nsz", "arcp"}


def panel_blocks(block: int) -> int:
    """Key blocks per panel: ``max(1, PANEL_KEYS // block)``.

    >>> panel_blocks(64), panel_blocks(1024)
    (16, 1)
    """
    return max(1, PANEL_KEYS // block)


@njit(fastmath=_FM, cache=True, inline="always")
def _absmax(x, shift, hh, r0, rows):  # pragma: no cover - compiled
    """max |x[hh, r0:r0+rows] − shift[hh]| in float64 (0 for none). Exact under fastmath: a
    maximum of exactly computed values does not round; the flags only let it vectorize."""
    d = x.shape[2]
    mx = 0.0
    for r in range(rows):
        for e in range(d):
            mx = max(mx, abs(np.float64(x[hh, r0 + r, e]) - shift[hh, e]))
    return mx


@njit(parallel=True, fastmath={"nnan", "ninf", "nsz"}, cache=True)
def quantize(x, shift, block, qm, codes, scales):  # pragma: no cover - compiled
    """Codes of ``x − shift`` (shift: (heads, d) float64, zeros for none) per (head, token
    block), as :func:`.paro.quantize_blocks` computes them — same float64 operations, so the
    same codes and scales — written as float32 into ``codes`` and ``scales``. Only the
    no-NaN/no-inf/no-signed-zero flags (inputs are finite; they let ``min`` and the sign
    vectorize): ``|y| / scale`` must stay the IEEE quotient, not a product by the reciprocal."""
    h, n, d = x.shape
    nb = scales.shape[1]
    for t in prange(h * nb):
        hh = t // nb
        r0 = (t % nb) * block
        rows = min(block, n - r0)
        s = _absmax(x, shift, hh, r0, rows) / qm
        if s == 0.0:
            s = 1.0
        scales[hh, t % nb] = s
        for r in range(rows):
            for e in range(d):
                y = np.float64(x[hh, r0 + r, e]) - shift[hh, e]
                codes[hh, r0 + r, e] = math.copysign(min(math.floor(abs(y) / s + 0.5), qm), y)


@njit(cache=True, inline="always")
def _gather(src, kept_row, p0, p1, block, buf):  # pragma: no cover - compiled
    """Copy the rows of key blocks ``kept_row[p0:p1]`` of ``src`` (n, x) into ``buf``;
    returns the number of rows."""
    n = src.shape[0]
    cols = 0
    for i in range(p0, p1):
        c0 = kept_row[i] * block
        c1 = min(n, c0 + block)
        buf[cols:cols + c1 - c0] = src[c0:c1]
        cols += c1 - c0
    return cols


@njit(cache=True, inline="always")
def _run_end(kept_row, p0, p1, block, n):  # pragma: no cover - compiled
    """End key of the panel's blocks when they are consecutive (one slice), else −1."""
    for i in range(p0 + 1, p1):
        if kept_row[i] != kept_row[i - 1] + 1:
            return -1
    return min(n, kept_row[p1 - 1] * block + block)


@njit(fastmath=_FM, cache=True, inline="always")
def _float_panel(qs, kp, vp, first, m, lsum, acc, pv, sbuf, ebits, fbits, mb,
                 fast):  # pragma: no cover - compiled
    """One key panel of the online softmax (:func:`._flash.flash`'s tile step, no causal)."""
    rows = qs.shape[0]
    cols = kp.shape[0]
    dv = vp.shape[1]
    s = sbuf[: rows * cols].reshape((rows, cols))
    np.dot(qs, kp.T, s)
    sbits = sbuf.view(np.int32)
    mf = mb.view(qs.dtype)
    for r in range(rows):
        row = s[r]
        if fast:
            mb[0] = _max_f32_bits(sbits[r * cols:(r + 1) * cols], cols)
            mx = mf[0]
        else:
            mx = row[0]
            for c in range(1, cols):
                mx = max(mx, row[c])
        if not first:
            mx = max(mx, qs.dtype.type(m[r]))
        if fast:
            total = _exp2_row(row, cols, mx, ebits, fbits)
            a = 2.0 ** (m[r] - mx) if not first else 0.0
        else:
            total = row[0] * 0
            for c in range(cols):
                w = math.exp(row[c] - mx)
                row[c] = w
                total += w
            a = math.exp(m[r] - mx) if not first else 0.0
        lsum[r] = lsum[r] * a + total
        m[r] = mx
        aa = qs.dtype.type(a)
        for e in range(dv):
            acc[r, e] *= aa
    np.dot(s, vp, pv)
    for r in range(rows):
        for e in range(dv):
            acc[r, e] += pv[r, e]


@njit(parallel=True, fastmath=_FM, cache=True)
def sparse_float(q, k, v, kept, block, scale, panel, out, fast):  # pragma: no cover
    """``out[h, I] = softmax(scale·q[h, I]·k[h, J]ᵀ) v[h, J]`` over the kept key blocks J of
    each query block I (``kept``: (heads, n_blocks, keep) ascending); q/k/v C-contiguous.
    ``fast`` (float32): ``scale`` includes log₂e and the weights are ``2^x``."""
    h, n, d = q.shape
    dv = v.shape[2]
    nb = kept.shape[1]
    keep = kept.shape[2]
    for t in prange(h * nb):
        hh = t // nb
        bi = t % nb
        r0 = bi * block
        rows = min(block, n - r0)
        kr = kept[hh, bi]
        qs = np.empty((rows, d), q.dtype)
        for r in range(rows):
            for e in range(d):
                qs[r, e] = q[hh, r0 + r, e] * scale
        m = np.zeros(rows)
        lsum = np.zeros(rows)
        acc = np.zeros((rows, dv), q.dtype)
        pv = np.empty((rows, dv), q.dtype)
        width = min(panel, keep) * block
        sbuf = np.empty(rows * width, q.dtype)
        kbuf = np.empty((width, d), q.dtype)
        vbuf = np.empty((width, dv), q.dtype)
        ebits = np.empty(width, np.int32)
        fbits = ebits.view(np.float32)
        mb = np.empty(2, np.int32)  # 8 bytes: one float64 or (mb[0]) one float32
        for p0 in range(0, keep, panel):
            p1 = min(keep, p0 + panel)
            end = _run_end(kr, p0, p1, block, n)
            if end >= 0:
                c0 = kr[p0] * block
                _float_panel(qs, k[hh, c0:end], v[hh, c0:end], p0 == 0, m, lsum, acc, pv,
                             sbuf, ebits, fbits, mb, fast)
            else:
                cols = _gather(k[hh], kr, p0, p1, block, kbuf)
                _gather(v[hh], kr, p0, p1, block, vbuf)
                _float_panel(qs, kbuf[:cols], vbuf[:cols], p0 == 0, m, lsum, acc, pv,
                             sbuf, ebits, fbits, mb, fast)
        for r in range(rows):
            inv = 1.0 / lsum[r]
            for e in range(dv):
                out[hh, r0 + r, e] = acc[r, e] * inv


@njit(fastmath=_FM, cache=True, inline="always")
def _codes(x, p32, pq, rows, cols, sp):  # pragma: no cover - compiled
    """``pq[r, c] = round(p32[r, c] / sp)`` (half up), the reference's weight codes: where
    the float32 weight (relative error ≤ 3e-7 + |x|·2⁻²³, :func:`.numba._exp_row`) puts
    ``P / s_P`` that close to a rounding boundary, the weight is redone in float64."""
    inv = 1.0 / sp
    for r in range(rows):
        near = 0
        for c in range(cols):
            y = np.float64(p32[r, c]) * inv
            fl = math.floor(y + 0.5)
            pq[r, c] = fl
            # the guard: (|x| + 2)·2.4e-7 covers the exp's bound, the product's 2⁻⁵² as well
            near += abs(y - math.floor(y) - 0.5) <= y * (abs(x[r, c]) + 2.0) * 2.4e-7
        if near:
            for c in range(cols):
                y = np.float64(p32[r, c]) * inv
                if abs(y - math.floor(y) - 0.5) <= y * (abs(x[r, c]) + 2.0) * 2.4e-7:
                    pq[r, c] = math.floor(math.exp(x[r, c]) / sp + 0.5)


@njit(parallel=True, fastmath=_FM, cache=True)
def sparse_quant(qi, ki, vi, sq, sk, sv, kept, block, scale, qm, panel,
                 out):  # pragma: no cover - compiled
    """Block-sparse attention on per-block codes (float32 arrays of integers) with scales
    ``sq, sk, sv`` (heads, n_blocks), :func:`.paro.block_sparse_attention`'s arithmetic:
    scores ``(q̂·k̂)·s_q·s_k·scale`` in float64, key blocks in ascending order with online
    softmax, weights quantized per block pair, ``acc += (P̂·v̂)·s_P·s_v``."""
    h, n, d = qi.shape
    dv = vi.shape[2]
    nb = kept.shape[1]
    keep = kept.shape[2]
    for t in prange(h * nb):
        hh = t // nb
        bi = t % nb
        r0 = bi * block
        rows = min(block, n - r0)
        kr = kept[hh, bi]
        qb = np.empty((rows, d), np.float32)
        for r in range(rows):
            for e in range(d):
                qb[r, e] = qi[hh, r0 + r, e]
        m = np.full(rows, -np.inf)
        lsum = np.zeros(rows)
        alpha = np.zeros(rows)
        acc = np.zeros((rows, dv))
        width = min(panel, keep) * block
        sbuf = np.empty(rows * width, np.float32)
        kbuf = np.empty((width, d), np.float32)
        x = np.empty((rows, block))
        p32 = np.empty((rows, block), np.float32)
        pbuf = np.empty(rows * block, np.float32)
        pv = np.empty((rows, dv), np.float32)
        ebits = np.empty(block, np.int32)
        fbits = ebits.view(np.float32)
        sbits = sbuf.view(np.int32)
        mb = np.empty(1, np.int32)
        mf = mb.view(np.float32)
        for p0 in range(0, keep, panel):
            p1 = min(keep, p0 + panel)
            end = _run_end(kr, p0, p1, block, n)
            if end >= 0:
                c0 = kr[p0] * block
                width = end - c0
                s = sbuf[: rows * width].reshape((rows, width))
                np.dot(qb, ki[hh, c0:end].T, s)
            else:
                width = _gather(ki[hh], kr, p0, p1, block, kbuf)
                s = sbuf[: rows * width].reshape((rows, width))
                np.dot(qb, kbuf[:width].T, s)
            off = 0
            for i in range(p0, p1):
                bj = kr[i]
                c0 = bj * block
                cols = min(block, n - c0)
                f = sq[hh, bi] * sk[hh, bj] * scale
                xtop = -np.inf  # the block's largest s − m: its weight is the block's max P
                for r in range(rows):
                    # f > 0 and rounding is monotone: the row's largest score is f·max(q̂·k̂)
                    a0 = r * width + off
                    mb[0] = _max_f32_bits(sbits[a0:a0 + cols], cols)
                    ymax = np.float64(mf[0]) * f
                    mx = max(m[r], ymax)
                    a = math.exp(m[r] - mx)
                    m[r] = mx
                    xtop = max(xtop, ymax - mx)
                    for c in range(cols):
                        y = np.float64(s[r, off + c]) * f - mx
                        x[r, c] = y
                        p32[r, c] = y
                    _exp_row(p32, r, cols, np.float32(0.0), ebits, fbits)  # one exp per score
                    total = np.float32(0.0)
                    for c in range(cols):
                        total += p32[r, c]
                    lsum[r] = lsum[r] * a + total
                    alpha[r] = a
                sp = math.exp(xtop) / qm  # the reference's scale, from one float64 exp
                pq = pbuf[: rows * cols].reshape((rows, cols))
                _codes(x, p32, pq, rows, cols, sp)
                np.dot(pq, vi[hh, c0:c0 + cols], pv)  # exact: integers below 2**24
                g = sp * sv[hh, bj]
                for r in range(rows):
                    a = alpha[r]
                    for e in range(dv):
                        acc[r, e] = acc[r, e] * a + np.float64(pv[r, e]) * g
                off += cols
        for r in range(rows):
            inv = 1.0 / lsum[r]
            for e in range(dv):
                out[hh, r0 + r, e] = acc[r, e] * inv
