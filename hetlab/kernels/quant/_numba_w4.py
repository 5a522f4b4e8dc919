"""W4 GEMV/GEMM on 16-word vectors (group sizes that are multiples of 128): the fast path.

Same canonical format and same permuted, pre-scaled activations as
:mod:`hetlab.kernels.quant.numba`; the group dot is the vector intrinsic
:func:`~hetlab.kernels.quant._simd.gdot4_acc` (why, and the asm it becomes: see there).
Per row, a 16-lane float32 accumulator collects ``s_g · (lane dots of group g)`` over all
groups; the zero-point terms are summed apart and one horizontal sum ends the row::

    y[r] = Σ_lanes Σ_g s[r, g] · dot_lane(g)  −  Σ_g s[r, g] · z[r, g] · Σ_k x[g, k]

Rounding differs from the reference by float32 reassociation only (tolerance in
:mod:`.spec`).

Measured alternatives (4096×4096 W4 g128, one core, this machine; kept here so they are not
retried blindly):

- plain numba, words across lanes, one serial FMA chain and a horizontal sum per group
  (the generic kernel of :mod:`.numba`): ~1.0 ms; LLVM picks ``ymm`` (prefer-256 tuning);
- plain numba, repacked "row tiles" (16 rows' words for one word index adjacent, lanes =
  rows, no horizontal sums), accumulators in a 64-float scratch: 1.05–1.1 ms — the
  accumulators stay in memory (load + store per update) and the x values are broadcast
  from registers (extra port-5 uops); with ``reassoc`` LLVM turned the per-word tree into
  one 8-deep FMA chain through memory (1.3 ms);
- plain numba with the function attribute ``"prefer-vector-width"="512"``: the loop
  vectorizer still chose 8 lanes for this 16-trip loop (no gain);
- the float intrinsic (:func:`gemv4`): 0.86–0.95 ms on one core; the decode (``and`` +
  convert + FMA per 16 weights, ports 0 and 5) is the limit, not memory (a plain read of the
  same words on one core: 0.31 ms);
- AVX512-VNNI (:func:`gemv4_vnni`): 3 decode ops + 6 ``vpdpbusd`` + 6 to combine per 128
  weights instead of 25: 0.53 ms on one core in a quiet moment (the same run: float 0.86);
  under memory-bandwidth contention from other jobs both converge (0.8–0.9 ms); chaining
  the limbs through one accumulator (shift, then the next ``vpdpbusd``) instead of shifting
  and adding measured 3% slower then (longer dependency chain) — and 2–5% faster once the
  g128 rows lost their per-group loop overhead (below, 2026-12-01 night): the dot now chains;
- numba's static ``prange`` split into one range per thread: a worker woken from sleep
  (``OMP_WAIT_POLICY=PASSIVE``) starts 30–100 µs late on this VM, and one preempted by
  another process makes the whole call wait; the blocks of :data:`BLOCK_ROWS` rows from an
  atomic counter (dynamic scheduling) let the other thread take up the slack.

- the GEMV as :func:`gemm4_vnni` on one activation row, with the row's offsets passed into
  the row functions instead of slicing its arrays (one scheduling loop less in this file):
  0.85–0.88 ms against 0.60–0.75 ms for :func:`gemv4_vnni` on one core (2026-11-30), so
  the GEMV keeps its own loop;
- two weight rows per iteration of :func:`gemv4_vnni` (the limb loads and per-block scalars
  shared, two accumulators): measured slower than one row at a time on one and on two
  threads (2026-12-01, 4096×4096, best of 40 calls each);
- (2026-12-01, one thread, 4096×4096, fastest of 30 calls in 6 interleaved rounds, busy
  machine) the high nibbles by ``vpmultishiftqb`` on AVX512-VBMI CPUs instead of a shift
  (512-bit shifts share port 0 with the six ``vpdpbusd`` of a block): 558 → 546 µs and
  559 → 546 in two runs, identical results; on top of it, the limbs chained Horner-style
  (``d = (d << 7) + next limb's dots``, two adds fewer per block): 497 vs 499 µs, no gain.
  The kernel stays at ~66% of the one-thread floor (``read_words``: 326–353 µs in the same
  runs): by instruction count (six ``vpdpbusd``, two shifts and a conversion on port 0 per
  128 weights) it is port-bound, not memory-bound, on this CPU;
- the permuted float copy of x (:func:`prepare_x4`) is built only when a block has outliers
  (the VNNI kernels need only the group sums otherwise: :func:`group_sums`);
- flat GEMM, 16 rows × 4096×4096: decoding each weight row once per activation row in the
  float kernel (:func:`gemm4`) 22 ms; :func:`gemm4_vnni` (limbs prepared once per
  activation row, each weight row meeting every activation row in L1) 6.7–12 ms, against
  torch's int4 kernel 3.6–6.6 ms in the same runs: the three fixed-point limbs cost three
  ``vpdpbusd`` per 64 weights per row, where torch's bf16 dot products cost one.

- (2026-12-02, 4096×4096, 2 threads, busy shared machine, best of ~200 calls) where the time
  above the floor goes: the kernel alone 282–314 µs against ``read_words`` 211 µs; per 128
  weights the loop issues six ``vpdpbusd``, two ``vpslld`` and one ``vcvtdq2ps`` — nine uops
  that only port 0 takes for 512-bit vectors — which bounds it near 9 cycles per block, the
  floor being ~8.4 cycles per block per thread at 2.6 GHz. ``hl.gemv_q`` adds 50–60 µs per
  call on top of its kernel (365 vs 315 µs): the Python steps (dispatch, validation,
  ``_common``, allocation) take ~7 µs when timed alone but 23–80 µs right after a call, since
  streaming the 8 MB of codes evicts the interpreter's code and data from L1/L2 (measured by
  timing them after a 8 MB read). Inside the kernel the serial preparation is ~4 µs
  (``prepare_limbs`` 2.9, ``group_sums`` 1.2).
- (2026-12-01 night, ``benchmarks/w4_block_cost.py``, weights in L2, one thread, quiet; files
  in ``benchmarks/results/quiet-2026-12-01-night/``) the "port-0 bound" reading above was only
  part of it: before the row change below (``w4_block_cost_before.txt``), one limb instead of
  three (two ``vpdpbusd`` instead of six) made a block only 7% cheaper (0.93×; two limbs
  1.06×), so the group loop's own instructions (an inner block loop entered once per group at
  g128, a branch on the zero point's form, a call per row) cost as much as the arithmetic.
  With flat g128 rows inlined into the driver (:mod:`._w4_driver`) one limb takes 0.71–0.74×
  and two 0.84–0.87× of the kernel's dot (``w4_block_cost.txt``, ``w4_block_cost_final.txt``):
  the arithmetic is now the larger part. A/B of the row change, three alternating processes
  each (``w4_rows_ab.txt``): this kernel 298–307 → 277–307 µs at 4096×4096 on 2 threads
  (floor 195–198 µs), W4A8 252–270 → 216–231 µs; in L2 on one thread 37–40 → 34–37 µs and
  30–34 → 23–26 µs.

- (2026-12-02, files in ``benchmarks/results/quiet-2026-12-02/``) two changes, A/B against
  the code before them in alternating processes (``w4_ab.txt``, ``w4_ab_11008.txt``; medians
  of the best of 10 calls, µs): the codes kept on a 64-byte boundary (``QuantizedMatrix``:
  :mod:`hetlab.core.aligned`; ``malloc`` had placed them 16–48 bytes into a line, so every
  64-byte load split) and each g128 row's scales converted 16 at a time with the zero-point
  sum vectorized before the block loop (``_w4_driver.group_scales``). 4096×4096 on 2 threads:
  before 306–410 (median of 8 runs 361), after 279–387 (317); in L2 on one thread
  36.5–90.9 (median 42.6) → 34.0–42.0 (35.3); 4096 rows × 11008 inputs: 789–977 → 691–733
  (floor 543–576). Alone, the placement measured 0–3% (``w4_align_ab.txt``). This VM's
  figures swung by 15–25% between identical runs that night (``plan_vs_direct.txt``: the
  kernel at 59–64% of the floor at 4096×4096 and 62–74% at 4096 × 11008, in two runs
  minutes apart).
- (2026-12-02, second session; files in ``benchmarks/results/quiet-2026-12-02-s7/``) the
  "port-0 bound" reading was only part of it. With the codes in L2 on one thread, a block dot
  with no ``vpdpbusd`` at all ran about as fast as reading the codes alone, and the limb shifts
  as ``vpshufb`` (port 5) instead of ``vpslld`` (port 0) gained nothing (scratch experiments,
  printed and not kept). What mattered was memory: numba's ``np.empty`` starts arrays on 32
  bytes, so in about half of all processes every limb load of every block split across two
  cache lines (scratch now on 64-byte lines: ``_simd.empty64_*``; 54–57% → 71–75% of the
  floor at 4096×11008), and a software prefetch 2 KB ahead of the codes
  (``_simd.PREFETCH_WORDS``: 690 → 633 µs at 4096×11008). Six ``benchmarks/quant.py`` runs
  with both: 69.x–86% of the floor at 4096×4096, 84–97% at 4096×11008.

The row loops and dynamic scheduling of these kernels, of the AVX2 ones and of W4A8 are
written once, in :mod:`._w4_driver` (generated per path from its row function and block dot).

End to end (``benchmarks/quant.py``, 2 threads, same run, medians; before → after this
module): 4096×4096 1.40 → 0.85 ms (torch int4 ~1.0 ms), 4096×11008 3.31 → 1.84 ms (torch
~2.5 ms); W4A8 3.9 → 0.65 ms and 5.5 → 1.34 ms. Other jobs share these 2 cores, so single runs
swing by up to 2×.

Known limit (shared with :mod:`.numba`): the zero point is factored out (``Σ q·x − z·Σ x``),
so one activation orders of magnitude above the others cancels against its zero-point term
in float32 (see :mod:`.spec`).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ._simd import (
    LANES,
    empty64_f32,
    empty64_i8,
    fetch_add,
    gdot4_acc,
    gdot4_vnni_acc,
    idot4_vnni_acc,
)
from ._w4_driver import (
    BLOCK_ROWS,
    make_gemm,
    make_gemv,
    make_row_a8,
    make_row_w4,
    prepare_a8,
    vnni_dot,
)

__all__ = ["gemv4", "gemv4_vnni", "gemv_w4a8_vnni", "gemm4", "gemm4_vnni", "prepare_x4",
           "group_sums", "prepare_limbs", "read_words", "OUTLIER_RATIO"]

#: a 128-activation block whose max |x| exceeds this times its mean |x| takes the float
#: path in :func:`gemv4_vnni` (its small entries would lose too much in 22-bit fixed point)
OUTLIER_RATIO = 64.0
#: fixed-point steps per max |x| of a block: 3 int8 limbs, the top one within ±127
_FIX = 127.0 * 16384.0

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}


@numba.njit(**_OPTS)
def prepare_x4(x, gs, xp, xsum):  # pragma: no cover - compiled
    """Permute and pre-scale one activation row for the W4 kernels; its group sums.

    ``xp[g·gs + j·nwp + i] = x[g·gs + 8i + j] · 2^(−4j)`` (value j of word i of group g;
    ``nwp = gs / 8``; exact scaling), ``xsum[g] = Σ_k x[g·gs + k]`` in float32.
    """
    nwp = gs // 8
    for g in range(xsum.shape[0]):
        base = g * gs
        tot = np.float32(0)
        for i in range(nwp):
            scale = np.float32(1)
            for j in range(8):
                v = x[base + 8 * i + j]
                tot += v
                xp[base + j * nwp + i] = v * scale
                scale *= np.float32(0.0625)
        xsum[g] = tot


@numba.njit(**_OPTS)
def group_sums(x, gs, xsum):  # pragma: no cover - compiled
    """``xsum[g] = Σ_k x[g·gs + k]`` in float32: the group sums of :func:`prepare_x4` alone
    (the VNNI kernels need the permuted copy only for blocks with outliers)."""
    for g in range(xsum.shape[0]):
        tot = np.float32(0)
        for k in range(g * gs, (g + 1) * gs):
            tot += x[k]
        xsum[g] = tot


@numba.njit(**_OPTS)
def _row(qflat, nw, scales, zeros, zsym, xp, xb, xsum, table, gs, r, acc
         ):  # pragma: no cover - compiled
    """One output: row ``r`` of the weights times the activations at ``xp[xb:]``."""
    nwp = gs // 8
    for i in range(LANES):
        acc[i] = 0
    zdot = np.float32(0)
    for g in range(scales.shape[1]):
        s = table[scales[r, g]]
        z = table[zeros[r, g]] if zeros.shape[0] else zsym
        zdot += s * z * xsum[g]
        wb = r * nw + g * nwp
        for c in range(0, nwp, LANES):
            gdot4_acc(qflat, wb + c, xp, xb + g * gs + c, nwp, acc, s)
    tot = np.float32(0)
    for i in range(LANES):
        tot += acc[i]
    return tot - zdot


@numba.njit(inline="always", **_OPTS)
def _row_st(qflat, nw, scales, zeros, zsym, st, table, gs, r, acc):  # pragma: no cover
    """:func:`_row` on the state ``(xp, offset of the row in xp, xsum)``."""
    return _row(qflat, nw, scales, zeros, zsym, st[0], st[1], st[2], table, gs, r, acc)


@numba.njit(inline="always", **_OPTS)
def _select_float(sts, t):  # pragma: no cover - compiled
    xp, xsum, n, ng = sts
    return xp, t * n, xsum[t * ng:(t + 1) * ng]


_gemv_float = make_gemv(_row_st, LANES)
_gemm_float = make_gemm(_row_st, _select_float, LANES)


@numba.njit(**_OPTS)
def gemv4(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk
          ):  # pragma: no cover - compiled
    """y = W x for W4 codes (``qflat`` = qweight flattened); ``out`` float32 (out,).

    The activation preparation runs once on the calling thread; then ``nchunk`` workers
    (one per thread) take blocks of :data:`BLOCK_ROWS` rows from a shared atomic counter
    until none are left (the drivers of :mod:`._w4_driver`).
    """
    xp = empty64_f32(x.shape[0])
    xsum = np.empty(scales.shape[1], np.float32)
    prepare_x4(x, gs, xp, xsum)
    return _gemv_float(qflat, nw, scales, zeros, zsym, (xp, 0, xsum), table, gs, out, nchunk)


@numba.njit(**_OPTS)
def gemm4(qflat, nw, scales, zeros, zsym, X, table, gs, out, nchunk
          ):  # pragma: no cover - compiled
    """Y = X Wᵀ for W4 codes; X float32 (m, n), ``out`` float32 (m, out)."""
    m, n = X.shape
    ng = scales.shape[1]
    xp = empty64_f32(m * n)
    xsum = np.empty(m * ng, np.float32)
    for t in range(m):
        prepare_x4(X[t], gs, xp[t * n:(t + 1) * n], xsum[t * ng:(t + 1) * ng])
    return _gemm_float(qflat, nw, scales, zeros, zsym, (xp, xsum, n, ng), table, gs, out,
                       nchunk)


@numba.njit(**_OPTS)
def prepare_limbs(x, xl, xf, ok):  # pragma: no cover - compiled
    """22-bit fixed point of each 128-activation block as three int8 limbs, for VNNI.

    Block ``k`` with ``m = max |x|``: ``N = rint(x · 127·2^14 / m)`` (|N| ≤ 127·2^14) is
    split exactly as ``N = 2^14·L0 + 2^7·L1 + L2`` with ``L0 ∈ [−127, 127]``,
    ``L1, L2 ∈ [−64, 64]``; ``x ≈ N · xf[k]`` with ``xf[k] = m / (127·2^14)``, an error of
    at most ~0.75 · xf[k] per activation (≈ 2^−22.4 · m). Limb ``l`` is stored at
    ``xl[384k + 128l + 64·(i % 2) + i // 2]`` for activation ``i`` of the block (even
    activations, then odd: the low and high nibbles of a code byte). ``ok[k]`` is False for
    blocks with outliers (``m > OUTLIER_RATIO · mean |x|``), which the kernel computes in
    float32 instead.
    """
    bits = x.view(np.int32)
    top = np.empty(1, np.int32)
    top_f = top.view(np.float32)
    fixed = np.empty(128, np.int32)
    limbs = np.empty((3, 128), np.int8)
    for k in range(xf.shape[0]):
        b = 128 * k
        # max |x| as the largest sign-less bit pattern: an integer max vectorizes, a float
        # max loop did not (this function took 12.5 µs for 4096 activations, now 3.3)
        mi = np.int32(0)
        s1 = np.float32(0)
        for i in range(128):
            mi = max(mi, bits[b + i] & 0x7FFFFFFF)
            s1 += abs(x[b + i])
        top[0] = mi
        m = top_f[0]
        ok[k] = m <= OUTLIER_RATIO * s1 / 128
        if m == 0:
            xf[k] = 0
            for i in range(384):
                xl[384 * k + i] = 0
            continue
        if not ok[k]:
            continue
        u = np.float32(_FIX) / m
        xf[k] = m / np.float32(_FIX)
        for i in range(128):
            fixed[i] = np.int32(np.rint(x[b + i] * u))
        for i in range(128):
            n = fixed[i]
            l0 = (n + 8192) >> 14
            r = n - (l0 << 14)
            l1 = (r + 64) >> 7
            limbs[0, i] = l0
            limbs[1, i] = l1
            limbs[2, i] = r - (l1 << 7)
        for limb in range(3):  # even activations, then odd ones
            at = 384 * k + 128 * limb
            for i in range(64):
                xl[at + i] = limbs[limb, 2 * i]
                xl[at + 64 + i] = limbs[limb, 2 * i + 1]


_row_vnni = make_row_w4(vnni_dot(gdot4_vnni_acc), LANES)


@numba.njit(inline="always", **_OPTS)
def select_w4(sts, t):  # pragma: no cover - compiled
    """Activation row ``t``'s state ``(xl, xf, ok, xp, xsum, all_ok)`` in the flat buffers
    ``(xl, xf, ok, xp, xsum, all_ok, n, nk, ng)`` of the GEMM's rows."""
    xl, xf, ok, xp, xsum, all_ok, n, nk, ng = sts
    return (xl[3 * n * t:3 * n * (t + 1)], xf[t * nk:(t + 1) * nk], ok[t * nk:(t + 1) * nk],
            xp[t * n:(t + 1) * n], xsum[t * ng:(t + 1) * ng], all_ok[t])


_gemv_vnni = make_gemv(_row_vnni, LANES)
_gemm_vnni = make_gemm(_row_vnni, select_w4, LANES)


@numba.njit(**_OPTS)
def gemv4_vnni(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk
               ):  # pragma: no cover - compiled
    """:func:`gemv4` with AVX512-VNNI integer group dots (``_simd.HAS_VNNI`` machines only)."""
    n = x.shape[0]
    xsum = np.empty(scales.shape[1], np.float32)
    xl = empty64_i8(3 * n)
    xf = np.empty(n // 128, np.float32)
    ok = np.empty(n // 128, np.bool_)
    prepare_limbs(x, xl, xf, ok)
    all_ok = ok.all()
    # the permuted float copy serves only blocks with outliers: skipped when there are none
    xp = empty64_f32(0 if all_ok else n)
    if all_ok:
        group_sums(x, gs, xsum)
    else:
        prepare_x4(x, gs, xp, xsum)
    return _gemv_vnni(qflat, nw, scales, zeros, zsym, (xl, xf, ok, xp, xsum, all_ok), table,
                      gs, out, nchunk)


@numba.njit(**_OPTS)
def gemm4_vnni(qflat, nw, scales, zeros, zsym, X, table, gs, out, nchunk
               ):  # pragma: no cover - compiled
    """:func:`gemm4` with the VNNI group dots of :func:`gemv4_vnni`; X float32 (m, n),
    ``out`` float32 (m, out).

    Each activation row is prepared once (limbs, scales, outlier flags, group sums); each
    weight row then meets every activation row while its words are in L1.
    """
    m, n = X.shape
    ng = scales.shape[1]
    nk = n // 128
    xp = empty64_f32(m * n)
    xsum = np.empty(m * ng, np.float32)
    xl = empty64_i8(3 * m * n)
    xf = np.empty(m * nk, np.float32)
    ok = np.empty(m * nk, np.bool_)
    all_ok = np.empty(m, np.bool_)
    for t in range(m):
        prepare_limbs(X[t], xl[3 * n * t:3 * n * (t + 1)], xf[t * nk:(t + 1) * nk],
                      ok[t * nk:(t + 1) * nk])
        all_ok[t] = ok[t * nk:(t + 1) * nk].all()
        if all_ok[t]:  # the permuted copy serves only blocks with outliers
            group_sums(X[t], gs, xsum[t * ng:(t + 1) * ng])
        else:
            prepare_x4(X[t], gs, xp[t * n:(t + 1) * n], xsum[t * ng:(t + 1) * ng])
    return _gemm_vnni(qflat, nw, scales, zeros, zsym, (xl, xf, ok, xp, xsum, all_ok, n, nk, ng),
                      table, gs, out, nchunk)


_gemv_a8_vnni = make_gemv(make_row_a8(vnni_dot(idot4_vnni_acc), LANES), LANES)


@numba.njit(**_OPTS)
def gemv_w4a8_vnni(qflat, nw, scales, zeros, zsym, xq, sx, table, gs, out, nchunk
                   ):  # pragma: no cover - compiled
    """W4A8 GEMV on AVX512-VNNI: ``y[r] = sx · Σ_g s · (Σ q·xq − z·Σ xq)``.

    ``xq`` int8 (padded_in,), ``sx`` float32. The integer products are exact per lane
    (``vpdpbusd``); each group's 16 lane sums are scaled by ``s`` in float32 (rounding only).
    """
    xl, xsum = prepare_a8(xq, gs)
    return _gemv_a8_vnni(qflat, nw, scales, zeros, zsym, (xl, xsum, sx), table, gs, out,
                         nchunk)


@numba.njit(parallel=True, cache=True, nogil=True)
def read_words(qflat, nw, n_out, nchunk):  # pragma: no cover - compiled
    """Read every packed word of the weights once: the floor of any W4 GEMV on these threads.

    ``qflat`` uint32 (``n_out · nw`` words, row-major as in the kernels above; ``nw`` even, as
    for every W4 row of whole 128-weight blocks, since the words are read in pairs); ``nchunk``
    workers take blocks of :data:`BLOCK_ROWS` rows from a shared counter, as the kernels do.
    Returns the XOR of all words (so the reads cannot be optimized away). No decoding, no
    arithmetic on activations: a kernel can only approach this time, never beat it.
    """
    words = qflat.view(np.uint64)
    nw2 = nw // 2
    nblk = (n_out + BLOCK_ROWS - 1) // BLOCK_ROWS
    counter = np.zeros(1, np.int64)
    part = np.zeros(nchunk, np.uint64)
    for c in prange(nchunk):
        acc = np.uint64(0)
        b = fetch_add(counter, 1)
        while b < nblk:
            lo = b * BLOCK_ROWS * nw2
            hi = min((b + 1) * BLOCK_ROWS, n_out) * nw2
            for i in range(lo, hi):
                acc ^= words[i]
            b = fetch_add(counter, 1)
        part[c] = acc
    tot = np.uint64(0)
    for c in range(nchunk):
        tot ^= part[c]
    return tot
