"""A fifth held-out probe of the offload search, with answer keys
(``heldout_probe5_keys.py``): 30 kernels written as a scientist writes plain loops over NumPy
arrays, aimed at what the first four probes lack — float32 and int64 data, Fortran-ordered and
non-contiguous (strided, transposed) arguments, ``while`` loops around loop nests, reverse and
stepped ranges whose iterations do or do not touch each other, ``zip``/``enumerate`` loops,
scalars carried between iterations, conditional arg-extrema (``if v > m: m = v; idx = i``),
``min``/``max``/``abs`` reductions, histograms with computed (clamped, integer-divided) bins,
CSR SpMM and the transposed CSR product (colliding scatters), 2-D convolutions with periodic
(``%`` by a size) and clamped boundaries, log-sum-exp and float32 softmax over row slices,
mirrored pairwise distances, 2-D n-body accelerations, suffix sums, a matrix power by repeated
squaring, triangular products with ``j <= i``, Gauss–Seidel and lagged in-place updates, a
reverse shift, ``np.dot`` on rows of a Fortran array, slice updates ``A[i, :] += …`` and an
early ``break``.

Every verdict was decided from the code's semantics, not from the engine's output:
``parallel``/``reduction`` loops are safe in any order; ``serial`` loops carry a true dependence
(or write through an index array that may repeat: a wrong "parallel" there is the worst bug);
``limits`` names loops that are parallel in truth which the engine keeps serial, each with the
reason (a ``+=`` scatter whose targets may collide is an array reduction: parallel with a
privatized copy, which the numba target makes for an outer loop); ``unsupported`` loops hold a
construct the analysis refuses (``break`` out of a ``for``). ``key`` is the expert numba version
of the same computation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import heldout_probe5_keys as keys
from .heldout_probe4 import Probe4


@dataclass(frozen=True)
class Probe5(Probe4):
    """A :class:`Probe4` (kernel, maker, verdicts, sizes, limits, answer key)."""


_EREDUCE = "an array element updated over the loop (C[i, j] += …) is no scalar reduction"
_SCATTER_ADD = ("hist[b] += … through a computed or indirect subscript (bins may collide): an "
                "array reduction, sequential in the verdicts; the numba target may run the outer "
                "loop with a privatized copy per thread")
_ARGMAX = ("a two-scalar conditional update (best and its index, first of ties): a (value, index)"
           " max reduction in truth, kept sequential")


# -- dense and triangular linear algebra ---------------------------------------------------------
def tri_lower_matvec(L, x, y):
    """y = tril(L) x: row i sums L[i, j] x[j] for j <= i only."""
    n = L.shape[0]
    for i in range(n):
        acc = 0.0
        for j in range(i + 1):
            acc += L[i, j] * x[j]
        y[i] = acc


def tri_lower_product(A, B, C):
    """C = tril(A) tril(B) (lower triangular times lower triangular): for j <= i,
    C[i, j] = sum over k from j to i of A[i, k] B[k, j]; C's upper triangle is left alone."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(j, i + 1):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def matpow_squaring(A, k, P, T):
    """P = A^(2^k) by k repeated squarings in a ``while`` loop around a plain triple-loop
    product (T holds the square before a slice copy puts it back in P)."""
    n = A.shape[0]
    P[:, :] = A
    while k > 0:
        for i in range(n):
            for j in range(n):
                s = 0.0
                for m in range(n):
                    s += P[i, m] * P[m, j]
                T[i, j] = s
        P[:, :] = T
        k -= 1


def dot_rows_fortran(A, x, y):
    """y = A x with A Fortran-ordered, each row through ``np.dot(A[i, :], x)``."""
    for i in range(A.shape[0]):
        y[i] = np.dot(A[i, :], x)


def int64_matvec(A, x, y):
    """y = A x on int64 data (numba's ``@`` has no integer version)."""
    m, n = A.shape
    for i in range(m):
        s = 0
        for j in range(n):
            s += A[i, j] * x[j]
        y[i] = s


def rank1_slice_update(A, u, v):
    """A += u vᵀ written a row slice at a time: ``A[i, :] += u[i] * v``."""
    for i in range(A.shape[0]):
        A[i, :] += u[i] * v


def transpose_from_fortran(A, B):
    """B = Aᵀ with A Fortran-ordered (reads down its columns are unit-stride)."""
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            B[j, i] = A[i, j]


def tri_rows_accumulate(A):
    """Below the diagonal each row adds the row above, in place: ``A[i, j] += A[i - 1, j]``
    for j < i (row i reads what row i - 1 just wrote: i serial, j parallel)."""
    n = A.shape[0]
    for i in range(1, n):
        for j in range(i):
            A[i, j] += A[i - 1, j]


# -- statistics and machine learning -------------------------------------------------------------
def logsumexp_rows(X, out):
    """out[i] = log Σ_j exp(X[i, j]), stabilized by the row maximum (``if`` extremum)."""
    m, n = X.shape
    for i in range(m):
        mx = -np.inf
        for j in range(n):
            if X[i, j] > mx:
                mx = X[i, j]
        s = 0.0
        for j in range(n):
            s += math.exp(X[i, j] - mx)
        out[i] = mx + math.log(s)


def softmax_f32_slices(X, out):
    """Row softmax of float32 data through NumPy calls on row slices."""
    for i in range(X.shape[0]):
        m = np.max(X[i, :])
        e = np.exp(X[i, :] - m)
        out[i, :] = e / np.sum(e)


def argmax_abs_first(x):
    """(index, value) of the first element of largest magnitude: a conditional update of two
    scalars, ``if v > best: best = v; idx = i`` (ties keep the first)."""
    best = -1.0
    idx = -1
    for i in range(x.shape[0]):
        v = abs(x[i])
        if v > best:
            best = v
            idx = i
    return idx, best


def min_abs_gap(x):
    """Smallest |x[i] - x[j]| over pairs i < j (``min`` of ``abs`` in a triangular nest)."""
    n = x.shape[0]
    best = np.inf
    for i in range(n):
        for j in range(i + 1, n):
            best = min(best, abs(x[i] - x[j]))
    return best


def pairwise_l1_mirror(X, D):
    """Manhattan distances between rows, the lower triangle computed and mirrored."""
    n, d = X.shape
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for k in range(d):
                s += abs(X[i, k] - X[j, k])
            D[i, j] = s
            D[j, i] = s


def nbody_accel_2d(pos, mass, acc, soft):
    """Softened gravitational accelerations in 2-D, skipping the self-pair with ``if``."""
    n = pos.shape[0]
    for i in range(n):
        ax = 0.0
        ay = 0.0
        for j in range(n):
            if j != i:
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                r2 = dx * dx + dy * dy + soft
                f = mass[j] / (r2 * math.sqrt(r2))
                ax += f * dx
                ay += f * dy
        acc[i, 0] = ax
        acc[i, 1] = ay


def bincount_clamped(x, lo, width, counts):
    """Histogram of float data into int64 counts, the bin computed and clamped to the ends."""
    nb = counts.shape[0]
    for i in range(x.shape[0]):
        b = int((x[i] - lo) / width)
        if b < 0:
            b = 0
        if b >= nb:
            b = nb - 1
        counts[b] += 1


def image_level_hist(img, nb, hist):
    """Grey-level histogram of an int64 image, ``nb`` bins of 256 levels: ``v * nb // 256``."""
    h, w = img.shape
    for i in range(h):
        for j in range(w):
            hist[img[i, j] * nb // 256] += 1


# -- sparse and indirect -------------------------------------------------------------------------
def csr_spmm_rows(indptr, indices, data, B, C):
    """C += A B for A in CSR form and dense B: row i of C gathers rows of B."""
    nc = B.shape[1]
    for i in range(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1]):
            a = data[k]
            r = indices[k]
            for j in range(nc):
                C[i, j] += a * B[r, j]


def csr_transpose_spmv(indptr, indices, data, x, y):
    """y += Aᵀ x for A in CSR form: rows scatter into y through the column indices (two rows
    with a common column collide)."""
    for i in range(indptr.shape[0] - 1):
        xi = x[i]
        for k in range(indptr[i], indptr[i + 1]):
            y[indices[k]] += data[k] * xi


def gather_strided_f32(x, idx, out):
    """out[i] = 2 x[idx[i]] + 1 with x a strided float32 view (every other element)."""
    for i in range(idx.shape[0]):
        out[i] = 2.0 * x[idx[i]] + 1.0


# -- stencils ------------------------------------------------------------------------------------
def conv2d_periodic_mod(img, ker, out):
    """3×3 convolution on a torus: neighbours wrap with ``% h`` and ``% w`` (sizes, not
    constants)."""
    h, w = img.shape
    for i in range(h):
        for j in range(w):
            s = 0.0
            for a in range(3):
                for b in range(3):
                    s += ker[a, b] * img[(i + a - 1 + h) % h, (j + b - 1 + w) % w]
            out[i, j] = s


def conv2d_clamped_edges(img, ker, out):
    """3×3 convolution with clamped (replicated) edges: ``min(max(i + a - 1, 0), h - 1)``."""
    h, w = img.shape
    for i in range(h):
        for j in range(w):
            s = 0.0
            for a in range(3):
                ii = min(max(i + a - 1, 0), h - 1)
                for b in range(3):
                    jj = min(max(j + b - 1, 0), w - 1)
                    s += ker[a, b] * img[ii, jj]
            out[i, j] = s


def gauss_seidel_1d(x, sweeps):
    """In-place three-point smoothing: x[i] reads x[i - 1] already updated this sweep."""
    n = x.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            x[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0


def stepped_lag_update(x):
    """Step-2 loop whose write lands on the next iteration's read: x[i + 2] += 0.5 x[i]."""
    for i in range(0, x.shape[0] - 2, 2):
        x[i + 2] += 0.5 * x[i]


def odd_from_even(x):
    """Step-2 loop over odd positions reading only even ones: x[i] = 2 x[i - 1] + x[i]."""
    for i in range(1, x.shape[0], 2):
        x[i] = 2.0 * x[i - 1] + x[i]


def reverse_shift_inplace(x):
    """Shift right by one in place, walked from the end (x[i] = x[i - 1]): run forwards it would
    copy x[0] everywhere."""
    for i in range(x.shape[0] - 1, 0, -1):
        x[i] = x[i - 1]


# -- scans and control flow ----------------------------------------------------------------------
def decayed_running_sum(x, out, decay):
    """Exponentially decayed running sum: ``c = decay * c + x[i]; out[i] = c``."""
    c = 0.0
    for i in range(x.shape[0]):
        c = decay * c + x[i]
        out[i] = c


def suffix_sums_inplace(x):
    """x[i] = Σ_{k >= i} x[k] in place with a reverse range."""
    for i in range(x.shape[0] - 2, -1, -1):
        x[i] += x[i + 1]


def compact_positive(x, out):
    """Stream compaction: the positive entries packed to the front of ``out``, their count
    returned. ``k += 1`` looks like a sum but ``k`` is also the write subscript (serial)."""
    k = 0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            out[k] = x[i]
            k += 1
    return k


def first_negative_col(A, cols):
    """cols[i] = the first column holding a negative entry of row i (-1 if none): an early
    ``break`` in the column loop."""
    m, n = A.shape
    for i in range(m):
        cols[i] = -1
        for j in range(n):
            if A[i, j] < 0.0:
                cols[i] = j
                break


def zip_enumerate_blend(x, y, t, out):
    """out[i] = (1 - t) x[i] + t y[i] through ``for i, (a, b) in enumerate(zip(x, y))``."""
    for i, (a, b) in enumerate(zip(x, y)):  # noqa: B905 (y may be longer: zip stops at x)
        out[i] = (1.0 - t) * a + t * b


# -- makers --------------------------------------------------------------------------------------
def _tri(g, n):
    return (np.tril(g.random((n, n))) + np.eye(n), g.random(n), np.zeros(n))


def _tri2(g, n):
    return (g.random((n, n)), g.random((n, n)), np.full((n, n), 7.0))


def _matpow(g, n):
    return (g.random((n, n)) / max(n, 1), 3, np.zeros((n, n)), np.zeros((n, n)))


def _csr(g, n):
    """A random (n + 2) × n CSR matrix with sorted distinct columns, some rows empty."""
    rows = n + 2
    counts = g.integers(0, min(n, 4) + 1, rows) if n else np.zeros(rows, dtype=np.int64)
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    indices = np.concatenate([np.sort(g.choice(n, c, replace=False)) for c in counts]
                             + [np.zeros(0, dtype=np.int64)]).astype(np.int64)
    return indptr, indices, g.random(indptr[-1])


def _spmm(g, n):
    indptr, indices, data = _csr(g, n)
    return (indptr, indices, data, g.random((n, 5)), g.random((n + 2, 5)))


def _spmv_t(g, n):
    indptr, indices, data = _csr(g, n)
    return (indptr, indices, data, g.random(n + 2), g.random(n))


def _gather32(g, n):
    base = g.random(2 * n + 2).astype(np.float32)
    return (base[::2], g.integers(0, n + 1, 3 * n), np.zeros(3 * n, dtype=np.float32))


def _img(g, n):
    return (g.random((n, n + 3)), g.random((3, 3)), np.zeros((n, n + 3)))


def _ties(g, n):
    return (np.round(g.standard_normal(n) * 3.0),)


def _nbody(g, n):
    return (g.random((n, 2)), g.random(n) + 0.5, np.zeros((n, 2)), 0.01)


def _hist(g, n):
    return (g.standard_normal(10 * n), -2.0, 0.25, np.zeros(16, dtype=np.int64))


def _levels(g, n):
    return (g.integers(0, 256, (n, n + 1)), 10, np.zeros(10, dtype=np.int64))


def _fortran_mv(g, n):
    return (np.asfortranarray(g.random((n + 1, n))), g.random(n), np.zeros(n + 1))


def _int_mv(g, n):
    return (g.integers(-50, 50, (n + 1, n)), g.integers(-50, 50, n),
            np.zeros(n + 1, dtype=np.int64))


def _negcols(g, n):
    return (g.random((n, n + 2)) - 0.1, np.zeros(n, dtype=np.int64))


PROBES: dict[str, Probe5] = {
    "tri_lower_matvec": Probe5(tri_lower_matvec, _tri, parallel=("L1",), reduction=("L2",),
                               key=keys.tri_lower_matvec, sizes=(1, 2, 7), moderate=2000),
    "tri_lower_product": Probe5(tri_lower_product, _tri2, parallel=("L1", "L2"),
                                reduction=("L3",), key=keys.tri_lower_product,
                                sizes=(1, 2, 7), moderate=200),
    "matpow_squaring": Probe5(matpow_squaring, _matpow,
                              parallel=("L1", "L2"), reduction=("L3",), key=keys.matpow_squaring,
                              sizes=(1, 2, 7), moderate=150),
    "dot_rows_fortran": Probe5(dot_rows_fortran, _fortran_mv, parallel=("L1",),
                               key=keys.dot_rows_fortran, sizes=(1, 2, 7), moderate=1500),
    "int64_matvec": Probe5(int64_matvec, _int_mv, parallel=("L1",), reduction=("L2",),
                           key=keys.int64_matvec, sizes=(1, 2, 7), moderate=1500),
    "rank1_slice_update": Probe5(rank1_slice_update,
                                 lambda g, n: (g.random((n, n + 1)), g.random(n),
                                               g.random(n + 1)),
                                 parallel=("L1",), key=keys.rank1_slice_update,
                                 sizes=(1, 2, 7), moderate=1500),
    "transpose_from_fortran": Probe5(transpose_from_fortran,
                                     lambda g, n: (np.asfortranarray(g.random((n, n + 2))),
                                                   np.zeros((n + 2, n))),
                                     parallel=("L1", "L2"), key=keys.transpose_from_fortran,
                                     sizes=(1, 2, 7), moderate=1500),
    "tri_rows_accumulate": Probe5(tri_rows_accumulate, lambda g, n: (g.random((n, n)),),
                                  serial=("L1",), parallel=("L2",),
                                  key=keys.tri_rows_accumulate, sizes=(1, 2, 7),
                                  moderate=1500),
    "logsumexp_rows": Probe5(logsumexp_rows,
                             lambda g, n: (g.standard_normal((n, n + 3)) * 5.0, np.zeros(n)),
                             parallel=("L1",), reduction=("L2", "L3"),
                             key=keys.logsumexp_rows, sizes=(1, 2, 7), moderate=1000),
    "softmax_f32_slices": Probe5(softmax_f32_slices,
                                 lambda g, n: (g.standard_normal((n, n + 3))
                                               .astype(np.float32),
                                               np.zeros((n, n + 3), dtype=np.float32)),
                                 parallel=("L1",), key=keys.softmax_f32_slices,
                                 sizes=(1, 2, 7), moderate=1000),
    "argmax_abs_first": Probe5(argmax_abs_first, _ties, limits={"L1": _ARGMAX},
                               key=keys.argmax_abs_first,
                               sizes=(0, 1, 2, 7), moderate=200000),
    "min_abs_gap": Probe5(min_abs_gap, lambda g, n: (g.random(n),), reduction=("L1", "L2"),
                          key=keys.min_abs_gap, sizes=(0, 1, 2, 7), moderate=3000),
    "pairwise_l1_mirror": Probe5(pairwise_l1_mirror, lambda g, n: (g.random((n, 6)),
                                                                    np.zeros((n, n))),
                                 parallel=("L1", "L2"), reduction=("L3",),
                                 key=keys.pairwise_l1_mirror, sizes=(1, 2, 7), moderate=600),
    "nbody_accel_2d": Probe5(nbody_accel_2d, _nbody, parallel=("L1",), reduction=("L2",),
                             key=keys.nbody_accel_2d, sizes=(1, 2, 7), moderate=1500),
    "bincount_clamped": Probe5(bincount_clamped, _hist, limits={"L1": _SCATTER_ADD},
                               key=keys.bincount_clamped, sizes=(0, 1, 2, 7),
                               moderate=20000),
    "image_level_hist": Probe5(image_level_hist, _levels,
                               limits={"L1": _SCATTER_ADD, "L2": _SCATTER_ADD},
                               key=keys.image_level_hist, sizes=(1, 2, 7), moderate=1000),
    "csr_spmm_rows": Probe5(csr_spmm_rows, _spmm, parallel=("L1", "L3"),
                            limits={"L2": _EREDUCE}, key=keys.csr_spmm_rows,
                            sizes=(1, 2, 7), moderate=20000),
    "csr_transpose_spmv": Probe5(csr_transpose_spmv, _spmv_t,
                                 limits={"L1": _SCATTER_ADD, "L2": _SCATTER_ADD},
                                 key=keys.csr_transpose_spmv, sizes=(1, 2, 7),
                                 moderate=20000),
    "gather_strided_f32": Probe5(gather_strided_f32, _gather32, parallel=("L1",),
                                 key=keys.gather_strided_f32, sizes=(0, 1, 2, 7),
                                 moderate=200000),
    "conv2d_periodic_mod": Probe5(conv2d_periodic_mod, _img, parallel=("L1", "L2"),
                                  reduction=("L3", "L4"), key=keys.conv2d_periodic_mod,
                                  sizes=(1, 2, 7), moderate=600),
    "conv2d_clamped_edges": Probe5(conv2d_clamped_edges, _img, parallel=("L1", "L2"),
                                   reduction=("L3", "L4"), key=keys.conv2d_clamped_edges,
                                   sizes=(1, 2, 7), moderate=600),
    "gauss_seidel_1d": Probe5(gauss_seidel_1d, lambda g, n: (g.random(n + 2), 3),
                              serial=("L1", "L2"), key=keys.gauss_seidel_1d,
                              sizes=(0, 1, 2, 7), moderate=20000),
    "stepped_lag_update": Probe5(stepped_lag_update, lambda g, n: (g.random(n),),
                                 serial=("L1",), key=keys.stepped_lag_update,
                                 sizes=(0, 1, 2, 3, 7), moderate=200000),
    "odd_from_even": Probe5(odd_from_even, lambda g, n: (g.random(n),), parallel=("L1",),
                            key=keys.odd_from_even, sizes=(0, 1, 2, 3, 7), moderate=200000),
    "reverse_shift_inplace": Probe5(reverse_shift_inplace, lambda g, n: (g.random(n),),
                                    serial=("L1",), key=keys.reverse_shift_inplace,
                                    sizes=(0, 1, 2, 7), moderate=200000),
    "decayed_running_sum": Probe5(decayed_running_sum,
                                  lambda g, n: (g.random(n), np.zeros(n), 0.9),
                                  serial=("L1",), key=keys.decayed_running_sum,
                                  sizes=(0, 1, 2, 7), moderate=200000),
    "suffix_sums_inplace": Probe5(suffix_sums_inplace, lambda g, n: (g.random(n),),
                                  serial=("L1",), key=keys.suffix_sums_inplace,
                                  sizes=(0, 1, 2, 7), moderate=200000),
    "compact_positive": Probe5(compact_positive,
                               lambda g, n: (g.standard_normal(n), np.zeros(n)),
                               serial=("L1",), key=keys.compact_positive,
                               sizes=(0, 1, 2, 7), moderate=200000),
    "first_negative_col": Probe5(first_negative_col, _negcols, parallel=("L1",),
                                 unsupported=("L2",), key=keys.first_negative_col,
                                 sizes=(1, 2, 7), moderate=1500),
    "zip_enumerate_blend": Probe5(zip_enumerate_blend,
                                  lambda g, n: (g.random(n), g.random(n + 2), 0.3, np.zeros(n)),
                                  parallel=("L1",), key=keys.zip_enumerate_blend,
                                  sizes=(0, 1, 2, 7), moderate=200000),
}
