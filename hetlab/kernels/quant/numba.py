"""Numba kernels of the quantized GEMV/GEMM: fused unpack + dequantize + dot, fp32 accumulate.

Weights are never expanded to a float matrix: each thread decodes the uint32 words of one
row and group at a time, in registers. The GEMM runs the GEMV dot of every activation row
on a weight row while that row is in L1 (decoding it once per activation row: a decode-once
variant through a float scratch vector measured slower here).

How a row is computed (both kernels)::

    y[r] = Σ_g s[r, g] · (Σ_k q[r, g, k] · x[g, k]  −  z[r, g] · Σ_k x[g, k])

with the integer codes ``q`` decoded from their bit planes, the inner dots and the group
sums of ``x`` in float32. The kernels read ``x`` in a permuted order (value ``j`` of
first-plane word ``i`` of a group sits at ``x_perm[j * words + i]``) so the loop over the
words of a group is a contiguous, vectorizable reduction for every bit position. Float
reductions may be reassociated (``fastmath`` with NaN/inf semantics kept): results differ
from the numpy reference by rounding only (tolerance in :mod:`.spec`).

W4A8 (``gemv_w4a8``) decodes the same words but multiplies codes by int8 activations in
integer arithmetic: each group's dot ``Σ_k q · xq − z · Σ_k xq`` is exact, and one float32
multiply by the group's scale follows (the activation scale is applied once at the end).

Indices into flat arrays are cast to unsigned so numba skips its negative-index wraparound,
which otherwise turns the contiguous loads into gathers (measured: 8× slower).

W4 with a group size that is a multiple of 128 (the common W4 g128) takes the faster
kernels of :mod:`._numba_w4` instead: explicit 16-lane vector code, and on AVX512-VNNI CPUs
integer dot products with the activations in 22-bit fixed point (accuracy and measurements
there); on CPUs with AMX (Sapphire Rapids and later) the flat GEMM takes the tile kernels of
:mod:`._numba_w4_amx` (28-bit fixed point, exact int32 tile dot products; :func:`w4_paths`
says which path each operation takes and why); on CPUs with AVX2 but not AVX512-VNNI (e.g. AMD
EPYC Zen 2/3) the AVX2 integer kernels of :mod:`._numba_avx2` (``vpmaddubsw`` + ``vpmaddwd``,
the VNNI path's 22-bit fixed point). W2, W3 and W8 with such group sizes take the AVX2 kernels
too wherever the CPU has AVX2 (:func:`lowbit_path`). The kernels below serve every other
format (and the float32 path).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ...log import get_logger, log_once
from . import _numba_avx2 as _avx2
from . import _numba_w4 as _w4
from . import _numba_w4_amx as _w4amx
from . import _numba_w4a8 as _w4a8
from ._amx import HAS_AMX
from ._simd import has_avx2, has_vnni, host_features
from .formats import F16_TO_F32 as _F16
from .formats import QuantizedMatrix, planes

__all__ = ["gemv_q", "gemm_q", "gemv_w4a8", "W4_PATHS", "w4_paths", "w4_path", "use_w4_path",
           "select_w4_paths", "lowbit_path"]

_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
_OPTS = {"cache": True, "nogil": True, "fastmath": _FASTMATH}
#: output rows per parallel work item
_ROW_BLOCK = 8

_U = np.uint32
_I = np.uint64


@numba.njit(**_OPTS)
def _m(w, mask):  # pragma: no cover - compiled
    """The bits of ``w`` under ``mask``, in place, as float32 (exact: ≤ 8 significant bits)."""
    return np.float32(_U(w & _U(mask)))


@numba.njit(**_OPTS)
def _quad(w, mask, pb, xp, xj, nwp):  # pragma: no cover - compiled
    """Σ of four consecutive fields of a word (first under ``mask``) times their scaled x.

    Fields are masked in place, not shifted: field j is worth q·2^(pb·j), and the permuted
    x of a one-plane format is pre-scaled by 2^(−pb·j) (exact), which saves one operation
    per weight (measured 1.2× faster).
    """
    return (_m(w, mask) * xp[_I(xj)] + _m(w, mask << pb) * xp[_I(xj + nwp)]
            + _m(w, mask << (2 * pb)) * xp[_I(xj + 2 * nwp)]
            + _m(w, mask << (3 * pb)) * xp[_I(xj + 3 * nwp)])


# One function per plane width, written out: numba/LLVM vectorizes the word loop only when
# the values of a word are spelled out (a generic inner loop over them measured 4-8× slower).
@numba.njit(**_OPTS)
def _dot8(qflat, wb, xp, xb, nwp):  # pragma: no cover - compiled
    dot = np.float32(0)
    for i in range(nwp):
        dot += _quad(qflat[_I(wb + i)], 0xFF, 8, xp, xb + i, nwp)
    return dot


@numba.njit(**_OPTS)
def _dot4(qflat, wb, xp, xb, nwp):  # pragma: no cover - compiled
    dot = np.float32(0)
    for i in range(nwp):
        w = qflat[_I(wb + i)]
        x0 = xb + i
        dot += _quad(w, 0xF, 4, xp, x0, nwp) + _quad(w, 0xF0000, 4, xp, x0 + 4 * nwp, nwp)
    return dot


@numba.njit(**_OPTS)
def _dot4_g128(qflat, wb, xp, xb, nwp):  # pragma: no cover - compiled
    # the common W4 g128 case with its trip count fixed at 16 words: LLVM unrolls it fully
    # (measured 1.3× faster than _dot4, whose vector loop is too long for 16 words)
    dot = np.float32(0)
    for i in range(16):
        w = qflat[_I(wb + i)]
        x0 = xb + i
        dot += _quad(w, 0xF, 4, xp, x0, 16) + _quad(w, 0xF0000, 4, xp, x0 + 64, 16)
    return dot


@numba.njit(**_OPTS)
def _dot2(qflat, wb, xp, xb, nwp):  # pragma: no cover - compiled
    dot = np.float32(0)
    for i in range(nwp):
        w = qflat[_I(wb + i)]
        x0 = xb + i
        dot += ((_quad(w, 0x3, 2, xp, x0, nwp) + _quad(w, 0x300, 2, xp, x0 + 4 * nwp, nwp))
                + (_quad(w, 0x30000, 2, xp, x0 + 8 * nwp, nwp)
                   + _quad(w, 0x3000000, 2, xp, x0 + 12 * nwp, nwp)))
    return dot


@numba.njit(**_OPTS)
def _q3(lo, hi, j):  # pragma: no cover - compiled
    """3-bit value j of a low-plane word ``lo`` with its 16 high bits in ``hi``."""
    return np.float32(_U(((lo >> _U(2 * j)) & _U(3)) | (((hi >> _U(j)) & _U(1)) << _U(2))))


@numba.njit(**_OPTS)
def _quad3(lo, hi, j, xp, xj, nwp):  # pragma: no cover - compiled
    return (_q3(lo, hi, j) * xp[_I(xj)] + _q3(lo, hi, j + 1) * xp[_I(xj + nwp)]
            + _q3(lo, hi, j + 2) * xp[_I(xj + 2 * nwp)]
            + _q3(lo, hi, j + 3) * xp[_I(xj + 3 * nwp)])


@numba.njit(**_OPTS)
def _dot3(qflat, wb, xp, xb, nwp):  # pragma: no cover - compiled
    # low-plane word i holds weights 16i..16i+15; their high bits are bits 16(i%2).. of
    # high-plane word i//2 (the natural 1-bit packing), so one x order serves both planes
    dot = np.float32(0)
    for i in range(nwp):
        lo = qflat[_I(wb + i)]
        hi = qflat[_I(wb + nwp + (i >> 1))] >> _U(16 * (i & 1))
        x0 = xb + i
        dot += ((_quad3(lo, hi, 0, xp, x0, nwp) + _quad3(lo, hi, 4, xp, x0 + 4 * nwp, nwp))
                + (_quad3(lo, hi, 8, xp, x0 + 8 * nwp, nwp)
                   + _quad3(lo, hi, 12, xp, x0 + 12 * nwp, nwp)))
    return dot


_DOT = {8: _dot8, 4: _dot4, 3: _dot3, 2: _dot2}


@numba.njit(**_OPTS)
def _gemv_rows(qflat, nw, scales, zeros, zsym, xp, xsum, table, gs, r0, r1, out, dot, nwp,
               wpg):  # pragma: no cover - compiled
    """Rows r0..r1 of the GEMV (``dot`` is the format's group dot, ``nwp`` its word count)."""
    ng = scales.shape[1]
    for r in range(r0, r1):
        acc = np.float32(0)
        for g in range(ng):
            d = dot(qflat, r * nw + g * wpg, xp, g * gs, nwp)
            z = table[zeros[r, g]] if zeros.shape[0] else zsym
            acc += table[scales[r, g]] * (d - z * xsum[g])
        out[r] = acc


@numba.njit(parallel=True, **_OPTS)
def _gemv(qflat, nw, scales, zeros, zsym, xp, xsum, table, gs, out, dot, nwp,
          wpg):  # pragma: no cover - compiled
    n_out = out.shape[0]
    for blk in prange((n_out + _ROW_BLOCK - 1) // _ROW_BLOCK):
        r1 = min(blk * _ROW_BLOCK + _ROW_BLOCK, n_out)
        _gemv_rows(qflat, nw, scales, zeros, zsym, xp, xsum, table, gs, blk * _ROW_BLOCK, r1,
                   out, dot, nwp, wpg)
    return out


@numba.njit(**_OPTS)
def _gemm_rows(qflat, nw, scales, zeros, zsym, xflat, n, xsum, table, gs, r0, r1, out, dot,
               nwp, wpg):  # pragma: no cover - compiled
    """Rows r0..r1 of the GEMM: the GEMV of each activation row, group by group."""
    m = out.shape[0]
    ng = scales.shape[1]
    for r in range(r0, r1):
        for t in range(m):
            acc = np.float32(0)
            for g in range(ng):
                d = dot(qflat, r * nw + g * wpg, xflat, t * n + g * gs, nwp)
                z = table[zeros[r, g]] if zeros.shape[0] else zsym
                acc += table[scales[r, g]] * (d - z * xsum[t, g])
            out[t, r] = acc


@numba.njit(parallel=True, **_OPTS)
def _gemm(qflat, nw, scales, zeros, zsym, xflat, n, xsum, table, gs, out, dot, nwp,
          wpg):  # pragma: no cover - compiled
    n_out = out.shape[1]
    for blk in prange((n_out + _ROW_BLOCK - 1) // _ROW_BLOCK):
        r1 = min(blk * _ROW_BLOCK + _ROW_BLOCK, n_out)
        _gemm_rows(qflat, nw, scales, zeros, zsym, xflat, n, xsum, table, gs,
                   blk * _ROW_BLOCK, r1, out, dot, nwp, wpg)
    return out


def _permuted_x(x: np.ndarray, bits: int, gs: int) -> np.ndarray:
    """x (…, n) reordered so value j of first-plane word i of a group is at j * words + i.

    One-plane formats (8, 4, 2 bits) also scale value j by 2^(−bits·j) (masked-in-place
    decoding, see :func:`_quad`); exact unless |x| < ~2^-96, where float32 goes subnormal.
    """
    lead, n = x.shape[:-1], x.shape[-1]
    pb = planes(bits)[0][0]
    per = 32 // pb
    v = np.swapaxes(x.reshape(*lead, n // gs, gs // per, per), -1, -2).astype(np.float32)
    if bits != 3:
        v = v * (2.0 ** (-pb * np.arange(per, dtype=np.float32)))[:, None]
    return np.ascontiguousarray(v.reshape(*lead, n), dtype=np.float32)


def _common(qw: QuantizedMatrix) -> tuple:
    scales = qw.scales.view(np.uint16)
    zeros = (np.zeros((0, 0), np.uint16) if qw.zeros is None else qw.zeros.view(np.uint16))
    zsym = np.float32(2 ** (qw.bits - 1))
    gs = qw.group_size
    nwp = gs * planes(qw.bits)[0][0] // 32
    dot = _dot4_g128 if (qw.bits, gs) == (4, 128) else _DOT[qw.bits]
    return (qw.qweight.reshape(-1), qw.qweight.shape[1], scales, zeros, zsym), (
        dot, nwp, gs * qw.bits // 32)


def _w4_fast(qw: QuantizedMatrix) -> bool:
    """Whether the 16-word vector kernels of :mod:`._numba_w4` take this format."""
    return qw.bits == 4 and qw.group_size % 128 == 0


#: the W4 fast paths: AMX tiles, AVX512-VNNI integer dots, AVX2 integer dots, float32 vectors
W4_PATHS = ("amx", "vnni", "avx2", "float32")
#: each operation's paths in the order measured fastest on an AMX machine (this one): the flat
#: GEMM reuses each decoded tile for every activation row (AMX 1.7–2.4 ms for 16 rows ×
#: 4096×4096 against 5.5–7.3 on VNNI), while for one vector the tile unit measured no faster than
#: VNNI (0.83–1.16× in ``benchmarks/quant.py`` runs of 2026-11-30: unpacking the codes and
#: applying each group's scale stay on the vector units, and the tile unit mostly idles). AVX2
#: (256-bit ``vpmaddubsw``) comes after the 512-bit VNNI: it is the default on CPUs with AVX2
#: but not AVX512-VNNI (e.g. AMD EPYC Zen 2/3), the float32 vectors only where AVX2 is missing.
_W4_ORDER = {"gemv": ("vnni", "amx", "avx2", "float32"),
             "gemm": ("amx", "vnni", "avx2", "float32")}
#: features (llvmlite names) of the AMX tile kernels; Linux must also grant the tile state
_AMX_FEATURES = frozenset({"amx-tile", "amx-int8", "avx512bw"})


def select_w4_paths(features: frozenset[str] | set[str], op: str = "gemv", *,
                    amx_granted: bool = True) -> list[str]:
    """The W4 paths a CPU with ``features`` runs for ``op``, the default first.

    Parameters
    ----------
    features : set of str
        CPU features in llvmlite's names (``"avx2"``, ``"fma"``, ``"avx512vnni"``, …), as
        :func:`~hetlab.kernels.quant._simd.host_features` returns for this CPU.
    op : {"gemv", "gemm"}
    amx_granted : bool, default True
        Whether the OS grants the AMX tile state (checked at import on this machine).

    Returns
    -------
    list of str, a subset of :data:`W4_PATHS` in ``op``'s order, "float32" always last.

    Examples
    --------
    >>> select_w4_paths({"avx", "avx2", "fma"})
    ['avx2', 'float32']
    >>> select_w4_paths({"sse4.2"})
    ['float32']
    >>> select_w4_paths({"avx2", "fma", "avx512f", "avx512bw", "avx512vnni"}, "gemm")
    ['vnni', 'avx2', 'float32']
    """
    if op not in _W4_ORDER:
        raise ValueError(f"select_w4_paths: op must be one of {sorted(_W4_ORDER)}; got {op!r}.")
    feats = frozenset(features)
    available = {"amx": amx_granted and _AMX_FEATURES <= feats, "vnni": has_vnni(feats),
                 "avx2": has_avx2(feats), "float32": True}
    return [p for p in _W4_ORDER[op] if available[p]]


_W4_KERNELS = {"gemv": {"amx": _w4amx.gemv4_amx, "vnni": _w4.gemv4_vnni,
                        "avx2": _avx2.gemv4_avx2, "float32": _w4.gemv4},
               "gemm": {"amx": _w4amx.gemm4_amx, "vnni": _w4.gemm4_vnni,
                        "avx2": _avx2.gemm4_avx2, "float32": _w4.gemm4}}
_w4_forced: str | None = None
_log = get_logger(__name__)


def w4_paths(op: str = "gemv") -> list[str]:
    """The W4 fast paths this CPU runs for ``op`` ("gemv" or "gemm"), the default first:
    AMX first for the flat GEMM, VNNI first for the GEMV, then AVX2 (measured; see
    ``_W4_ORDER``; :func:`select_w4_paths` for any feature set)."""
    return list(_W4_HOST[op])


#: this CPU's paths per operation (fixed at import)
_W4_HOST = {op: tuple(select_w4_paths(host_features(), op, amx_granted=HAS_AMX))
            for op in _W4_ORDER}
#: each operation's default path on this CPU (fixed at import: read on every call)
_W4_DEFAULT = {op: w4_paths(op)[0] for op in _W4_ORDER}
_W4_LISTED = {op: ", ".join(w4_paths(op)) for op in _W4_ORDER}


def w4_path(op: str = "gemv") -> str:
    """The path the numba W4 ``op`` takes now: the forced one, else its default (logged on
    the ``hetlab`` logger the first time each operation takes each path)."""
    path = _w4_forced or _W4_DEFAULT[op]
    log_once(_log, (op, path), "quant: W4 %s takes the %s path (%s; this CPU has %s)", op, path,
             "forced by use_w4_path" if _w4_forced else "default", _W4_LISTED[op])
    return path


def use_w4_path(path: str | None) -> None:
    """Force the numba W4 GEMV and GEMM onto one path (``None``: the defaults again), e.g. to
    compare AMX with VNNI on one machine. Raises ValueError for a path this CPU lacks."""
    global _w4_forced
    if path is not None and path not in w4_paths():
        why = "unknown" if path not in W4_PATHS else "not available on this CPU"
        raise ValueError(f"W4 path {path!r} is {why}; this CPU has {w4_paths()}.")
    _w4_forced = path


def lowbit_path(qw: QuantizedMatrix) -> str:
    """The path of a W2/W3/W8 GEMV (and of W4A8): "avx2" for group sizes that are multiples
    of 128 on CPUs with AVX2 (also where the W4 default is VNNI or AMX: those have no W2/W3/W8
    kernels), "float32" otherwise or when ``use_w4_path("float32")`` forces it."""
    fast = qw.group_size % 128 == 0 and "avx2" in w4_paths() and qw.bits in (2, 3, 8)
    return "avx2" if fast and w4_path("gemv") != "float32" else "float32"


def _chunks(n_out: int) -> int:
    """Parallel workers of the W4 kernels: one per numba thread (they share row blocks)."""
    return numba.get_num_threads()


def gemv_q(qw: QuantizedMatrix, x: np.ndarray) -> np.ndarray:
    """y (out,) float32 = dequantized W @ x; x float32 of length ``qw.padded_in``."""
    head, tail = _common(qw)
    gs = qw.group_size
    if _w4_fast(qw):
        out = np.empty(qw.out_features, dtype=np.float32)
        kernel = _W4_KERNELS["gemv"][w4_path("gemv")]
        return kernel(*head, x, _F16, gs, out, _chunks(qw.out_features))
    out = np.empty(qw.out_features, dtype=np.float32)
    if lowbit_path(qw) == "avx2":
        y = _avx2.gemv_bits_avx2(*head, x, _F16, gs, out, _chunks(qw.out_features), qw.bits)
        log_once(_log, ("bits", qw.bits, y is None), "quant: W%d GEMV takes the %s", qw.bits,
                 "avx2 path" if y is not None else "float32 path (activation outliers)")
        if y is not None:
            return y
    xsum = x.reshape(-1, gs).sum(axis=1, dtype=np.float32)
    return _gemv(*head, _permuted_x(x, qw.bits, gs), xsum, _F16, gs, out, *tail)


def gemm_q(qw: QuantizedMatrix, X: np.ndarray) -> np.ndarray:
    """Y (m, out) float32 = X @ dequantized Wᵀ; X float32 (m, ``qw.padded_in``)."""
    head, tail = _common(qw)
    gs = qw.group_size
    m = X.shape[0]
    if _w4_fast(qw):
        out = np.empty((m, qw.out_features), dtype=np.float32)
        kernel = _W4_KERNELS["gemm"][w4_path("gemm")]
        return kernel(*head, X, _F16, gs, out, _chunks(qw.out_features))
    xsum = X.reshape(m, -1, gs).sum(axis=2, dtype=np.float32)
    out = np.empty((m, qw.out_features), dtype=np.float32)
    # flattened here: a reshape inside numba is typed non-contiguous (gathers, 8× slower)
    xflat = _permuted_x(X, qw.bits, gs).reshape(-1)
    return _gemm(*head, xflat, X.shape[1], xsum, _F16, gs, out, *tail)


# --- W4A8: int8 activations, integer group dots, one float rescale per group -------------
# (the loop kernels of any format: :mod:`._numba_w4a8`)

def gemv_w4a8(qw: QuantizedMatrix, x: np.ndarray) -> np.ndarray:
    """y (out,) float32: W4A8 GEMV (int8 per-token activations, integer group dots).

    x float32 of length ``qw.padded_in``; the activations are quantized with the reference's
    :func:`~hetlab.kernels.quant.reference.quantize_activations` (the shared A8 format).
    """
    from .reference import quantize_activations

    xq, sx = quantize_activations(x)
    gs = qw.group_size
    scales = qw.scales.view(np.uint16)
    zeros = (np.zeros((0, 0), np.uint16) if qw.zeros is None else qw.zeros.view(np.uint16))
    out = np.empty(qw.out_features, dtype=np.float32)
    path = w4_path("gemv") if _w4_fast(qw) and gs <= 8192 else "float32"
    # (float32 holds z·Σxq exactly up to a group of 8192)
    if path in ("vnni", "amx", "avx2"):
        kernel = _avx2.gemv_w4a8_avx2 if path == "avx2" else _w4.gemv_w4a8_vnni
        log_once(_log, ("w4a8", kernel), "quant: W4A8 GEMV takes the %s path",
                 "avx2" if path == "avx2" else "vnni")
        return kernel(qw.qweight.reshape(-1), qw.qweight.shape[1], scales, zeros,
                      np.float32(2 ** (qw.bits - 1)), xq, np.float32(sx), _F16, gs, out,
                      _chunks(qw.out_features))
    xsum = xq.reshape(-1, gs).sum(axis=1, dtype=np.int32)
    log_once(_log, ("w4a8", qw.bits), "quant: W%dA8 GEMV takes the integer loop path", qw.bits)
    return _w4a8.gemv_w4a8_loop(qw.qweight.reshape(-1), qw.qweight.shape[1], scales, zeros,
                                np.int32(2 ** (qw.bits - 1)), xq, xsum, np.float32(sx), _F16,
                                gs, gs * qw.bits // 32, out, _w4a8.IDOT[qw.bits])
