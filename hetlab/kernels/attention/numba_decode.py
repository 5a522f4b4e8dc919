"""numba decode attention: split-KV (FlashDecoding), two softmax schemes, validation folded in.

The cache is cut into ``parts`` (FlashDecoding); heads × parts run in one ``prange``; each
part reads its keys and values **once**, in blocks of :data:`DECODE_BLOCK` keys: the scores
of a block are one contiguous d-dot per key row (SIMD FMAs over d), the weights are
exponentiated in place (float32: :func:`._vexp.exp_shifted`, vectorized; float64:
``math.exp``), and ``p·V`` adds contiguous value rows (SIMD over d_v); both loops prefetch
the row :data:`PREFETCH_ROWS` ahead (the hardware prefetcher stops at 4 KiB pages). Then
the parts of a head are combined (a few hundred numbers, in float64):

* ``"synchronized"``: each part keeps its own running maximum ``m_p`` (online softmax over
  its blocks: when a block raises it, the part's sum and accumulator are rescaled); the
  combine rescales each part by ``exp(m_p − M)``, M = max of the parts' maxima.
* ``"unified-max"`` (FlashDecoding++'s asynchronous softmax): every part of a head
  exponentiates against one fixed ``φ`` and the combine is a plain sum — no rescale, no
  running maximum to compare against. ``φ`` comes from statistics of the inputs
  (:func:`unified_phi`: mean + 3 standard deviations of the scores of a strided sample of
  at most :data:`PHI_SAMPLE` cached keys per head — the paper takes the same kind of
  statistic offline from a model's softmax inputs). A part whose maximum left
  ``[φ − UNDERFLOW_MARGIN, φ + OVERFLOW_MARGIN]`` (``exp`` could overflow, or the part's
  weights could all underflow) is recomputed with the synchronized scheme and its head
  combined with rescaling; :func:`decode_attention_stats` counts the recomputed parts.

Validation folded into the pass. :func:`hetlab.decode_attention`'s validation checks shapes,
dtypes and ``q1`` but defers the value checks of ``k_cache`` and ``v_cache`` (finite; scores
and sums within the dtype's range: :func:`.spec.check_cache`): as separate ``max``/``min``
scans they read the cache twice more — as long as the kernel itself. Instead each block of
keys and values, still in L1 after the kernel used it, goes through :func:`_peaks`: running
maxima of its bits read as signed and as unsigned integers, two SIMD integer reductions
that give ``max|x|`` and reveal any NaN/inf (their bits lie above every finite value's).
When a peak is not finite, or the output is not (a safety net), the result is discarded and
:func:`.spec.check_cache` runs to raise the same :class:`~hetlab.errors.InvalidInputError`
as before, naming the argument; finite peaks go through the same range rule
(:func:`.spec.check_ranges`) as the scan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...errors import HetlabError
from ._scan import max_abs
from ._vexp import exp_shifted
from .spec import check_cache, check_ranges

__all__ = ["decode_attention", "decode_attention_stats", "DecodeStats", "unified_phi",
           "auto_parts", "OVERFLOW_MARGIN", "UNDERFLOW_MARGIN", "PHI_SAMPLE", "DECODE_BLOCK",
           "PREFETCH_ROWS"]

#: a unified-max part is recomputed when its maximum exceeds φ by more than this (e^20 ≈ 5e8:
#: sums of up to 2³¹ weights stay far from float32's 3.4e38)
OVERFLOW_MARGIN = 20.0
#: … or when its maximum is more than this below φ (e^−30 ≈ 1e-13: weights stay normal floats)
UNDERFLOW_MARGIN = 30.0
#: most cached keys whose scores set φ
PHI_SAMPLE = 256
#: keys whose scores a decode part computes at once (one block: scores, weights, p·V)
DECODE_BLOCK = 128
#: rows of K (in the score loop) and of V (in the p·V loop) prefetched ahead of the one read:
#: 16 rows of d = 64 float32 = one 4 KiB page, which the hardware prefetcher does not cross
#: (measured here, on a loaded machine: ~5–10% less time than without)
PREFETCH_ROWS = 16
_FM = {"reassoc", "contract", "nsz", "arcp"}


@intrinsic
def _prefetch(typingctx, arr, idx):  # pragma: no cover - compiled
    """Hint the cache line holding the ``idx``-th element of C-contiguous ``arr`` (flat)
    into L1 (LLVM's prefetch: read, high locality, data); never faults."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def _ahead(x, hh, row, dist):  # pragma: no cover - compiled
    """Prefetch row ``row + dist`` of head ``hh`` of x (heads, n, d) (the last row at most),
    one hint per 64-byte line."""
    n, d = x.shape[1], x.shape[2]
    r = min(row + dist, n - 1)
    base = (hh * n + r) * d
    step = max(1, 64 // x.itemsize)
    for e in range(0, d, step):
        _prefetch(x, base + e)


@njit(fastmath=_FM, cache=True, inline="always")
def _scores(qs, k, hh, b0, cols, s, dist):  # pragma: no cover - compiled
    """s[:cols] = qs · k[hh, b0 + c] (one contiguous d-dot per key row); returns the block's
    largest score."""
    d = qs.shape[0]
    zero = qs[0] - qs[0]  # qs is finite: a zero of its dtype (x * 0 would be float64)
    mx = zero - np.inf
    for c in range(cols):
        if dist:
            _ahead(k, hh, b0 + c, dist)
        row = k[hh, b0 + c]
        x = zero
        for e in range(d):
            x += qs[e] * row[e]
        s[c] = x
        mx = x if x > mx else mx
    return mx


@njit(fastmath=_FM, cache=True, inline="always")
def _accumulate(v, hh, b0, cols, s, acc, dist):  # pragma: no cover - compiled
    """acc += Σ_c s[c] · v[hh, b0 + c] (contiguous value rows, SIMD over d_v)."""
    dv = acc.shape[0]
    for c in range(cols):
        if dist:
            _ahead(v, hh, b0 + c, dist)
        p = s[c]
        row = v[hh, b0 + c]
        for e in range(dv):
            acc[e] += p * row[e]


@njit(cache=True, inline="always")
def _peaks(si, ui, hh, lo, hi, ts, tu):  # pragma: no cover - compiled
    """Running maxima of ``si[hh, lo:hi]`` and ``ui[hh, lo:hi]``, the signed and the unsigned
    integer views of one float array: non-negative floats order as their bits do in the
    signed view (+inf, then NaN, above every finite value) and negative ones as theirs in
    the unsigned view (sign bit set, then the magnitude). Two integer max reductions — SIMD
    (a float max is not, without the no-NaN flag that would blind it to NaN) and free of
    arithmetic, so they stay in 32-bit lanes for float32 — give max|x| and any NaN/inf."""
    rs = si[hh, lo:hi]
    ru = ui[hh, lo:hi]
    for j in range(hi - lo):
        a = rs[j]
        ts = a if a > ts else ts
        b = ru[j]
        tu = b if b > tu else tu
    return ts, tu


@njit(fastmath=_FM, cache=True, inline="always")
def _weights(s, cols, ref, fast, ebits, fbits):  # pragma: no cover - compiled
    """s[:cols] = exp(s[:cols] − ref); returns their sum (``fast``: float32 polynomial)."""
    if fast:
        return exp_shifted(s, cols, np.float32(ref), ebits, fbits)
    total = s[0] * 0
    for c in range(cols):
        w = math.exp(s[c] - ref)
        s[c] = w
        total += w
    return total


@njit(fastmath=_FM, cache=True)
def _part(qs, k, v, bits, hh, j0, j1, unified, phi, acc, s, fast, ebits, ps, pu,
          dist):  # pragma: no cover - compiled
    """One part in one pass over its keys. Unified (``unified``): weights exp(s − φ), no
    rescale; else online softmax over blocks (running maximum, acc rescaled when it rises).
    Returns (l, max score); fills acc, and ``ps``/``pu`` with the :func:`_peaks` of k (index
    0) and v (1) over the part; ``bits`` = (k signed, k unsigned, v signed, v unsigned),
    integer views of shape (heads, n·d)."""
    fbits = ebits.view(np.float32)
    d, dv = k.shape[2], v.shape[2]
    acc[:] = 0.0
    total = 0.0
    m = -np.inf
    ks, ku, vs, vu = ps[0], pu[0], ps[1], pu[1]
    for b0 in range(j0, j1, s.shape[0]):
        cols = min(s.shape[0], j1 - b0)
        mx = _scores(qs, k, hh, b0, cols, s, dist)
        ks, ku = _peaks(bits[0], bits[1], hh, b0 * d, (b0 + cols) * d, ks, ku)  # in L1
        if unified:
            m = max(m, mx)
            ref = phi
        else:
            if mx > m:
                alpha = math.exp(m - mx)
                total *= alpha
                a = s.dtype.type(alpha)  # acc stays in its dtype
                for e in range(acc.shape[0]):
                    acc[e] *= a
                m = mx
            ref = m
        total += _weights(s, cols, ref, fast, ebits, fbits)
        _accumulate(v, hh, b0, cols, s, acc, dist)
        vs, vu = _peaks(bits[2], bits[3], hh, b0 * dv, (b0 + cols) * dv, vs, vu)
    ps[0], pu[0], ps[1], pu[1] = ks, ku, vs, vu
    return total, m


@njit(parallel=True, cache=True)
def _decode(q, k, v, bits, parts, block, unified, phi, hi, lo, acc, lsum, ref, redo, ps, pu,
            fast, dist):  # pragma: no cover - compiled
    h, n, _ = k.shape
    d = q.shape[1]
    size = (n + parts - 1) // parts
    scale = q.dtype.type(1.0 / math.sqrt(d))
    for t in prange(h * parts):
        hh = t // parts
        p = t % parts
        j0 = p * size
        j1 = min(n, j0 + size)
        if j0 >= j1:
            lsum[hh, p] = 0.0
            ref[hh, p] = -np.inf
            acc[hh, p, :] = 0.0
            ps[hh, p, :] = 0
            pu[hh, p, :] = 0
            continue
        qs = np.empty(d, q.dtype)
        for e in range(d):
            qs[e] = q[hh, e] * scale
        s = np.empty(block, q.dtype)
        ebits = np.empty(block, np.int32)
        done = False
        if unified:
            ph = phi[hh]
            total, m = _part(qs, k, v, bits, hh, j0, j1, True, ph, acc[hh, p], s, fast,
                             ebits, ps[hh, p], pu[hh, p], dist)
            if m - ph <= hi and m - ph >= -lo:
                lsum[hh, p] = total
                ref[hh, p] = ph
                done = True
            else:
                redo[hh, p] = 1  # the fallback: this part again, synchronized
        if not done:
            total, m = _part(qs, k, v, bits, hh, j0, j1, False, 0.0, acc[hh, p], s, fast,
                             ebits, ps[hh, p], pu[hh, p], dist)
            lsum[hh, p] = total
            ref[hh, p] = m


def unified_phi(q1: np.ndarray, k_cache: np.ndarray) -> np.ndarray:
    """φ per head, float64: mean + 3·std of the scores (float64) of every
    ``max(1, n // PHI_SAMPLE)``-th cached key; the sample's max where that overflows.

    >>> import numpy as np
    >>> unified_phi(np.ones((1, 4)), np.zeros((1, 10, 4)))
    array([0.])
    """
    n, d = k_cache.shape[1], k_cache.shape[2]
    sample = k_cache[:, :: max(1, n // PHI_SAMPLE)].astype(np.float64)
    s = np.einsum("hd,hjd->hj", q1.astype(np.float64), sample) / math.sqrt(d)
    with np.errstate(over="ignore", invalid="ignore"):
        phi = s.mean(axis=1) + 3.0 * s.std(axis=1)
    return np.where(np.isfinite(phi), phi, s.max(axis=1))  # huge scores: the sample's max


def auto_parts(heads: int, n: int) -> int:
    """Parts per head when ``parts=0``: at least two (head, part) tasks per thread, and
    parts of at most 4096 keys; never more parts than keys."""
    threads = numba.get_num_threads()
    return int(max(1, min(n, max(-(-2 * threads // heads), -(-n // 4096)))))


@dataclass(frozen=True)
class DecodeStats:
    """What one decode call did: parts per head, the recomputed (fallback) parts per head,
    and the unified maximum φ per head (None for the synchronized scheme)."""

    parts: int
    recomputed: np.ndarray
    phi: np.ndarray | None

    @property
    def recomputed_total(self) -> int:
        return int(self.recomputed.sum())

    @property
    def fallback_rate(self) -> float:
        """Recomputed parts / all parts."""
        return self.recomputed_total / max(self.parts * self.recomputed.shape[0], 1)


def _refuse(q1: np.ndarray, k: np.ndarray, v: np.ndarray, ps: np.ndarray, pu: np.ndarray,
            out: np.ndarray) -> None:
    """Raise what :func:`.spec.check_cache` would when the kernel's own pass saw a NaN/inf
    (``ps``, ``pu``: the :func:`_peaks` of k and v per part) or out-of-range peaks; return
    when it saw neither."""
    unsigned = _BITS[q1.dtype.itemsize][1]
    sign = unsigned(1) << unsigned(8 * q1.dtype.itemsize - 1)
    pos = np.maximum(ps.max(axis=(0, 1)), 0).astype(unsigned)  # max over non-negative values
    tu = pu.max(axis=(0, 1))
    neg = np.where(tu >= sign, tu - sign, 0).astype(unsigned)  # … and over negative ones
    top = np.maximum(pos, neg).view(q1.dtype)  # max|k|, max|v| (NaN where one was)
    if not (np.isfinite(top).all() and np.isfinite(out).all()):
        check_cache(q1, k, v)  # names the argument and the fault
        raise HetlabError(  # finite, in-range inputs and a non-finite result: a kernel bug
            "decode_attention: the numba kernel produced a non-finite result from finite "
            "inputs within range; please report it with the inputs."
        )
    check_ranges("decode_attention", ("q1", "k_cache", "v_cache"), q1, k, v,
                 (max_abs(q1), float(top[0]), float(top[1])))


#: the signed and unsigned integer types of a float's bits, by width
_BITS = {4: (np.int32, np.uint32), 8: (np.int64, np.uint64)}


def decode_attention_stats(q1: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray,
                           softmax: str = "synchronized",
                           parts: int = 0) -> tuple[np.ndarray, DecodeStats]:
    """numba decode attention (validated arguments; the cache's value checks are folded into
    the kernel) and what it did (:class:`DecodeStats`)."""
    h, n, d = k_cache.shape
    dv = v_cache.shape[2]
    parts = auto_parts(h, n) if parts == 0 else min(parts, n)
    unified = softmax == "unified-max"
    phi = unified_phi(q1, k_cache) if unified else np.zeros(h)
    acc = np.empty((h, parts, dv), q1.dtype)
    lsum = np.empty((h, parts), np.float64)
    ref = np.empty((h, parts), np.float64)
    redo = np.zeros((h, parts), np.int64)
    signed, unsigned = _BITS[q1.dtype.itemsize]
    ps = np.zeros((h, parts, 2), signed)  # running maxima start at +0.0
    pu = np.zeros((h, parts, 2), unsigned)
    bits = (k_cache.view(signed).reshape(h, n * d), k_cache.view(unsigned).reshape(h, n * d),
            v_cache.view(signed).reshape(h, n * dv), v_cache.view(unsigned).reshape(h, n * dv))
    with np.errstate(all="ignore"):  # refused inputs make NaN here; _refuse names them
        _decode(q1, k_cache, v_cache, bits, parts, DECODE_BLOCK, unified, phi, OVERFLOW_MARGIN,
                UNDERFLOW_MARGIN, acc, lsum, ref, redo, ps, pu, q1.dtype == np.float32,
                PREFETCH_ROWS)
        if unified and not redo.any():
            out = acc.astype(np.float64).sum(axis=1) / lsum.sum(axis=1)[:, None]  # no rescale
        else:  # synchronized combine (or a head with a recomputed part): rescale to the max
            top = ref.max(axis=1, keepdims=True)
            w = np.exp(ref - top)
            out = (np.einsum("hp,hpd->hd", w, acc.astype(np.float64))
                   / (w * lsum).sum(axis=1)[:, None])
    _refuse(q1, k_cache, v_cache, ps, pu, out)
    stats = DecodeStats(parts, redo.sum(axis=1), phi if unified else None)
    return out.astype(q1.dtype), stats


def decode_attention(q1: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray,
                     softmax: str = "synchronized", parts: int = 0) -> np.ndarray:
    """numba implementation of :func:`hetlab.decode_attention` (validated arguments)."""
    return decode_attention_stats(q1, k_cache, v_cache, softmax, parts)[0]
