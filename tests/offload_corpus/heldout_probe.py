"""A held-out probe of the offload search: classic loop kernels written for this probe, not
taken from ``benchmarks/offload_suite/`` (dense linear algebra, BLAS-like combinations,
stencils, data mining, serial dynamic programming), each a plain function the way scientists
write them, with the loop-order, bound and spelling variants real code has: ``range(i)``,
``range(i + 1, n)``, ``range(n - 1, -1, -1)``, ``range(len(a))``, ``range(a.shape[0])``,
``x = x + …`` and ``x += …``, scalars passed as arguments, ``float32`` and Fortran-ordered
arrays.

``PROBES`` maps a name to a :class:`Probe`: the function, ``make(rng, n)`` returning a fresh
argument tuple of size ``n``, the loops (ids ``L1…`` in source pre-order) that must be judged
``"parallel"``, those that must be judged ``"reduction"``, and those that must never run in
parallel (a true dependence; seidel, LU, prefix sums), plus the sizes used by the test and by
``benchmarks/offload_probe.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Maker = Callable[[np.random.Generator, int], tuple]


@dataclass(frozen=True)
class Probe:
    """One probe kernel and what the analysis must say about its loops."""

    fn: Callable[..., Any]
    make: Maker
    parallel: tuple[str, ...] = ()
    reduction: tuple[str, ...] = ()
    serial: tuple[str, ...] = ()
    small: int = 12
    moderate: int = 200
    note: str = field(default="")


# -- BLAS-like combinations ----------------------------------------------------------------------
def gemver_like(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    """Rank-2 update of A, x += beta Aᵀy + z, w += alpha A x; A (n, n), vectors (n,)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(n):
        for j in range(n):
            x[i] = x[i] + beta * A[j, i] * y[j]
    for i in range(n):
        x[i] = x[i] + z[i]
    for i in range(n):
        for j in range(n):
            w[i] += alpha * A[i, j] * x[j]


def _gemver_args(r, n):
    return (1.5, 1.2, r.random((n, n)), *(r.random(n) for _ in range(8)))


def bicg_columns(A, p, r, q, s):
    """s = Aᵀ r (column loop outside), q = A p (scalar accumulator); A (n, m)."""
    for j in range(A.shape[1]):
        s[j] = 0.0
        for i in range(A.shape[0]):
            s[j] = s[j] + r[i] * A[i, j]
    for i in range(A.shape[0]):
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * p[j]
        q[i] = acc


def _bicg_args(g, n):
    m = n + 3
    return (g.random((n, m)), g.random(m), g.random(n), np.zeros(n), np.zeros(m))


def mvt_temporaries(x1, x2, y1, y2, A):
    """x1 += A y1, x2 += Aᵀ y2, each through a scalar copied in and out."""
    n = len(x1)
    for i in range(n):
        t = x1[i]
        for j in range(n):
            t = t + A[i, j] * y1[j]
        x1[i] = t
    for i in range(n):
        t = x2[i]
        for j in range(n):
            t = t + A[j, i] * y2[j]
        x2[i] = t


def _mvt_args(g, n):
    return (g.random(n), g.random(n), g.random(n), g.random(n), g.random((n, n)))


def syrk_upper(alpha, beta, C, A):
    """Upper triangle of C = beta C + alpha A Aᵀ with ``range(i, n)``; C (n, n), A (n, m)."""
    n = C.shape[0]
    m = A.shape[1]
    for i in range(n):
        for j in range(i, n):
            C[i, j] *= beta
            for k in range(m):
                C[i, j] += alpha * A[i, k] * A[j, k]


def _syrk_args(g, n):
    return (0.7, 1.3, g.random((n, n)), g.random((n, n + 2)))


def syr2k_k_middle(alpha, beta, C, A, B):
    """Lower triangle of C = beta C + alpha (A Bᵀ + B Aᵀ), k loop between i and j: the
    suite's sym_rank2k_lower spelled ``C[i, j] = C[i, j] + …`` (a spelling variant)."""
    n = C.shape[0]
    m = A.shape[1]
    for i in range(n):
        for j in range(i + 1):
            C[i, j] = C[i, j] * beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] = C[i, j] + A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def _syr2k_args(g, n):
    return (0.9, 1.1, g.random((n, n)), g.random((n, n - 2)), g.random((n, n - 2)))


def trmm_lower_inplace(alpha, L, B):
    """B = alpha L B in place, L lower triangular; rows from the bottom up (``range(n-1,-1,-1)``)
    so each row reads rows above it not yet overwritten: the row loop is serial."""
    n = B.shape[0]
    m = B.shape[1]
    for i in range(n - 1, -1, -1):
        for j in range(m):
            s = 0.0
            for k in range(i + 1):
                s += L[i, k] * B[k, j]
            B[i, j] = alpha * s


def _trmm_args(g, n):
    return (0.5, np.tril(g.random((n, n))), g.random((n, n + 1)))


def gemm_f32_jki(alpha, A, B, C):
    """C += alpha A B in float32, loops j-k-i and ``range(0, n)``."""
    ni, nk = A.shape
    nj = B.shape[1]
    for j in range(0, nj):
        for k in range(0, nk):
            for i in range(0, ni):
                C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]


def _gemm32_args(g, n):
    f = np.float32
    return (f(1.5), g.random((n, n + 1)).astype(f), g.random((n + 1, n - 1)).astype(f),
            g.random((n, n - 1)).astype(f))


def atax_scalar(A, x, y):
    """y = Aᵀ (A x), the inner product held in a scalar, y zeroed first."""
    for j in range(len(y)):
        y[j] = 0.0
    for i in range(A.shape[0]):
        t = 0.0
        for j in range(A.shape[1]):
            t = t + A[i, j] * x[j]
        for j in range(A.shape[1]):
            y[j] = y[j] + A[i, j] * t


def _atax_args(g, n):
    return (g.random((n + 2, n)), g.random(n), np.zeros(n))


def sum_of_squares(x):
    """Return Σ x² written ``total = total + …``."""
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * x[i]
    return total


def transpose_fortran(A, B):
    """B = Aᵀ with A Fortran-ordered."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[j, i] = A[i, j]


def _transpose_args(g, n):
    return (np.asfortranarray(g.random((n, n + 3))), np.zeros((n + 3, n)))


# -- stencils ------------------------------------------------------------------------------------
def jacobi_3d(steps, A, B):
    """7-point Jacobi sweeps between two 3-D grids."""
    n = A.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (A[i - 1, j, k] + A[i + 1, j, k] + A[i, j - 1, k]
                                  + A[i, j + 1, k] + A[i, j, k - 1] + A[i, j, k + 1]
                                  + A[i, j, k]) / 7.0
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = B[i, j, k]


def _jacobi3_args(g, n):
    return (2, g.random((n, n, n)), np.zeros((n, n, n)))


def conv2d_3x3(img, w, out):
    """out = img ⋆ w (valid part), 3×3 filter, scalar accumulator."""
    n, m = img.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += w[di, dj] * img[i + di - 1, j + dj - 1]
            out[i, j] = s


def _conv_args(g, n):
    return (g.random((n, n + 2)), g.random((3, 3)), np.zeros((n, n + 2)))


def seidel_1d(steps, a):
    """In-place three-point smoothing: each point reads its updated left neighbour."""
    for t in range(steps):  # noqa: B007
        for i in range(1, len(a) - 1):
            a[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


def _seidel_args(g, n):
    return (3, g.random(n * 4))


# -- linear algebra with serial dependences ------------------------------------------------------
def floyd_warshall_min(dist):
    """All-pairs shortest paths in place with ``min``."""
    n = dist.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                dist[i, j] = min(dist[i, j], dist[i, k] + dist[k, j])


def _floyd_args(g, n):
    d = g.random((n, n)) * 10.0
    np.fill_diagonal(d, 0.0)
    return (d,)


def cholesky_lower(A):
    """In-place Cholesky, lower factor; k-outer right-looking form."""
    n = A.shape[0]
    for k in range(n):
        A[k, k] = math.sqrt(A[k, k])
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
        for j in range(k + 1, n):
            for i in range(j, n):
                A[i, j] = A[i, j] - A[i, k] * A[j, k]


def _spd_args(g, n):
    M = g.random((n, n))
    return (M @ M.T + n * np.eye(n),)


def lu_rowwise(A):
    """Doolittle LU in place, row by row (i outer, ``range(i)`` then ``range(i, n)``)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            w = A[i, j]
            for k in range(j):
                w = w - A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, n):
            w = A[i, j]
            for k in range(i):
                w = w - A[i, k] * A[k, j]
            A[i, j] = w


def gram_schmidt(A, Q, R):
    """Modified Gram–Schmidt QR: A (m, n) overwritten, Q (m, n), R (n, n)."""
    m, n = A.shape
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = np.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]


def _gs_args(g, n):
    return (g.random((n + 4, n)), np.zeros((n + 4, n)), np.zeros((n, n)))


def prefix_sum_inplace(a):
    """Inclusive prefix sum in place."""
    for i in range(1, len(a)):
        a[i] = a[i] + a[i - 1]


def edit_distance(a, b, D):
    """Levenshtein table of two int sequences; D (len(a)+1, len(b)+1) int64, border set."""
    for i in range(1, a.shape[0] + 1):
        for j in range(1, b.shape[0] + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)


def _edit_args(g, n):
    a = g.integers(0, 4, n)
    b = g.integers(0, 4, n + 3)
    D = np.zeros((n + 1, n + 4), dtype=np.int64)
    D[:, 0] = np.arange(n + 1)
    D[0, :] = np.arange(n + 4)
    return (a, b, D)


# -- data mining ---------------------------------------------------------------------------------
def kmeans_assign(X, C, labels, counts):
    """Nearest centre per point (squared distance, ``**2``), then cluster sizes."""
    for i in range(X.shape[0]):
        best = np.inf
        lab = 0
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d = d + (X[i, f] - C[c, f]) ** 2
            if d < best:
                best = d
                lab = c
        labels[i] = lab
    for i in range(X.shape[0]):
        counts[labels[i]] += 1


def _kmeans_args(g, n):
    return (g.random((n * 4, 3)), g.random((5, 3)), np.zeros(n * 4, np.int64),
            np.zeros(5, np.int64))


def pairwise_math_sqrt(X, D):
    """Euclidean distances between rows, ``math.sqrt``."""
    n = X.shape[0]
    for i in range(n):
        for j in range(n):
            s = 0.0
            for f in range(X.shape[1]):
                diff = X[i, f] - X[j, f]
                s += diff * diff
            D[i, j] = math.sqrt(s)


def _pair_args(g, n):
    return (g.random((n, 4)), np.zeros((n, n)))


def pairwise_np_sqrt_f32(X, Y, D):
    """Distances between rows of X and rows of Y in float32, ``np.sqrt``."""
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            s = np.float32(0.0)
            for f in range(X.shape[1]):
                s += (X[i, f] - Y[j, f]) * (X[i, f] - Y[j, f])
            D[i, j] = np.sqrt(s)


def _pair32_args(g, n):
    f = np.float32
    return (g.random((n, 3)).astype(f), g.random((n + 2, 3)).astype(f),
            np.zeros((n, n + 2), f))


def pairwise_pow_half(X, D):
    """Symmetric distance matrix, upper triangle ``range(i + 1, n)`` mirrored, ``** 0.5``."""
    n = X.shape[0]
    for i in range(n):
        D[i, i] = 0.0
        for j in range(i + 1, n):
            s = 0.0
            for f in range(X.shape[1]):
                s = s + (X[i, f] - X[j, f]) ** 2
            D[i, j] = s ** 0.5
            D[j, i] = D[i, j]


def softmax_rows(X, out):
    """Row-wise softmax with the row maximum subtracted."""
    for i in range(X.shape[0]):
        mx = X[i, 0]
        for j in range(1, X.shape[1]):
            if X[i, j] > mx:
                mx = X[i, j]
        total = 0.0
        for j in range(X.shape[1]):
            out[i, j] = math.exp(X[i, j] - mx)
            total += out[i, j]
        for j in range(X.shape[1]):
            out[i, j] = out[i, j] / total


def _softmax_args(g, n):
    return (g.standard_normal((n, n + 5)) * 3.0, np.zeros((n, n + 5)))


def threshold_histogram(img, thr, mask, hist):
    """Binary mask of an 8-bit image above ``thr`` and its 256-bin histogram."""
    h, w = img.shape
    for i in range(h):
        for j in range(w):
            if img[i, j] > thr:
                mask[i, j] = 1
            else:
                mask[i, j] = 0
    for i in range(h):
        for j in range(w):
            hist[img[i, j]] += 1


def _thresh_args(g, n):
    return (g.integers(0, 256, (n, n + 1)).astype(np.uint8), 100,
            np.zeros((n, n + 1), np.uint8), np.zeros(256, np.int64))


def horner_eval(coef, x, y):
    """y[i] = p(x[i]) by Horner's rule, coefficients lowest first, k from the top down."""
    nc = len(coef)
    for i in range(len(x)):
        acc = 0.0
        for k in range(nc - 1, -1, -1):
            acc = acc * x[i] + coef[k]
        y[i] = acc


def _horner_args(g, n):
    return (g.standard_normal(6), g.standard_normal(n * 4), np.zeros(n * 4))


def column_means_fortran(X, mean, scale):
    """Column means of a Fortran-ordered matrix times an int scale passed as an argument."""
    n = X.shape[0]
    for j in range(X.shape[1]):
        s = 0.0
        for i in range(n):
            s = s + X[i, j]
        mean[j] = scale * s / n


def _colmean_args(g, n):
    return (np.asfortranarray(g.random((n + 3, n))), np.zeros(n), 3)


def doitgen_local_tmp(A, C4):
    """A[r, q, :] = A[r, q, :] @ C4 in place through a temporary allocated in the function."""
    nr, nq, npp = A.shape
    tmp = np.zeros(npp)
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                tmp[p] = 0.0
                for s in range(npp):
                    tmp[p] = tmp[p] + C4[s, p] * A[r, q, s]
            for p in range(npp):
                A[r, q, p] = tmp[p]


def _doitgen_args(g, n):
    return (g.random((n // 2 + 1, n // 2 + 2, n)), g.random((n, n)))


# -- more variants: float32 sums, Fortran order, reverse loops, NaN, integers, swaps ---------------
def dot_f32(x, y):
    """Σ x·y of float32 arrays from ``s = 0.0`` (NumPy keeps float32)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def gemm_fortran(A, B, C):
    """C = A B into a Fortran-ordered C, all operands Fortran-ordered, k outermost."""
    for k in range(A.shape[1]):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def _gemm_f_args(g, n):
    f = np.asfortranarray
    return (f(g.random((n, n + 2))), f(g.random((n + 2, n - 1))), f(np.zeros((n, n - 1))))


def backward_recurrence(a):
    """a[i] += a[i - 1] from the top down: each iteration reads an element the next one
    writes (an anti dependence)."""
    for i in range(a.shape[0] - 1, 0, -1):
        a[i] = a[i] + a[i - 1]


def row_normalize(a):
    """Each row scaled to unit Euclidean norm, the norm in a scalar."""
    for i in range(a.shape[0]):
        nrm = 0.0
        for j in range(a.shape[1]):
            nrm = nrm + a[i, j] ** 2
        nrm = math.sqrt(nrm)
        for j in range(a.shape[1]):
            a[i, j] /= nrm


def forward_substitution(L, b, x):
    """Solve L x = b, L lower triangular."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


def back_substitution(U, b, x):
    """Solve U x = b, U upper triangular, rows from the bottom (``range(n - 1, -1, -1)``)."""
    n = U.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s = s - U[i, j] * x[j]
        x[i] = s / U[i, i]


def _tri_args(g, n):
    return (g.random((n, n)) + n * np.eye(n), g.random(n), np.zeros(n))


def moving_average(x, w, out):
    """Mean of each window of ``w`` (an int argument) consecutive values."""
    for i in range(len(x) - w + 1):
        s = 0.0
        for k in range(w):
            s += x[i + k]
        out[i] = s / w


def _mavg_args(g, n):
    return (g.random(n * 8), 5, np.zeros(n * 8 - 4))


def int_matvec(A, x, y):
    """y = A x in int64 (exact)."""
    for i in range(A.shape[0]):
        acc = 0
        for j in range(A.shape[1]):
            acc = acc + A[i, j] * x[j]
        y[i] = acc


def _int_mv_args(g, n):
    return (g.integers(-9, 9, (n, n + 1)), g.integers(-9, 9, n + 1), np.zeros(n, np.int64))


def count_and_clip(a, lo, hi):
    """Count values above ``hi``, then clip in place; returns the count."""
    c = 0
    for i in range(a.shape[0]):
        if a[i] > hi:
            c += 1
    for i in range(a.shape[0]):
        if a[i] > hi:
            a[i] = hi
        elif a[i] < lo:
            a[i] = lo
    return c


def _clip_args(g, n):
    return (g.standard_normal(n * 8), -0.5, 0.5)


def nan_to_zero_scaled(x, scale, out):
    """out = scale · x with NaN replaced by 0; NaN inputs on purpose."""
    for i in range(len(x)):
        if np.isnan(x[i]):
            out[i] = 0.0
        else:
            out[i] = scale * x[i]


def _nan_args(g, n):
    x = g.standard_normal(n * 8)
    x[::7] = np.nan
    return (x, 2.5, np.zeros(n * 8))


def reverse_rows(a):
    """Reverse the order of rows (or elements) in place by swaps through a temporary; with a
    2-D ``a`` the temporary is a view (Python semantics kept: rows ``n-1-i`` get row ``i``'s
    new contents)."""
    n = a.shape[0]
    for i in range(n // 2):
        tmp = a[i]
        a[i] = a[n - 1 - i]
        a[n - 1 - i] = tmp


def running_max_argmax(x):
    """Largest value and its first index."""
    best = x[0]
    at = 0
    for i in range(1, len(x)):
        if x[i] > best:
            best = x[i]
            at = i
    return best, at


def matvec_one_based(A, x, y):
    """y = A x written as a Fortran port: one-based loops, ``i - 1`` subscripts."""
    n = A.shape[0]
    m = A.shape[1]
    for i in range(1, n + 1):
        y[i - 1] = 0.0
        for j in range(1, m + 1):
            y[i - 1] = y[i - 1] + A[i - 1, j - 1] * x[j - 1]


def _square(g, n):
    return (g.random((n, n)) + n * np.eye(n),)


PROBES: dict[str, Probe] = {
    "gemver_like": Probe(gemver_like, _gemver_args,
                         parallel=("L1", "L2", "L3", "L5", "L6"), moderate=1_500),
    "bicg_columns": Probe(bicg_columns, _bicg_args, parallel=("L1", "L3"),
                          reduction=("L4",), moderate=1_500),
    "mvt_temporaries": Probe(mvt_temporaries, _mvt_args, parallel=("L1", "L3"),
                             reduction=("L2", "L4"), moderate=1_500),
    "syrk_upper": Probe(syrk_upper, _syrk_args, parallel=("L1", "L2"), moderate=300),
    "syr2k_k_middle": Probe(syr2k_k_middle, _syr2k_args, parallel=("L1", "L2", "L4"), moderate=250),
    "trmm_lower_inplace": Probe(trmm_lower_inplace, _trmm_args, parallel=("L2",),
                                reduction=("L3",), serial=("L1",), moderate=300),
    "gemm_f32_jki": Probe(gemm_f32_jki, _gemm32_args, parallel=("L1", "L3"), moderate=250),
    "atax_scalar": Probe(atax_scalar, _atax_args, parallel=("L1", "L4"),
                         reduction=("L3",), moderate=1_500),
    "sum_of_squares": Probe(sum_of_squares, lambda g, n: (g.random(n * 8),),
                            reduction=("L1",), moderate=200_000),
    "transpose_fortran": Probe(transpose_fortran, _transpose_args, parallel=("L1", "L2"),
                               moderate=1_500),
    "jacobi_3d": Probe(jacobi_3d, _jacobi3_args, serial=("L1",),
                       parallel=("L2", "L3", "L4", "L5", "L6", "L7"), small=8, moderate=80),
    "conv2d_3x3": Probe(conv2d_3x3, _conv_args, parallel=("L1", "L2"), moderate=1_000),
    "seidel_1d": Probe(seidel_1d, _seidel_args, serial=("L1", "L2"), moderate=250_000),
    "floyd_warshall_min": Probe(floyd_warshall_min, _floyd_args, serial=("L1",),
                                note="i, j parallel only when dist[k, k] >= 0", moderate=250),
    "cholesky_lower": Probe(cholesky_lower, _spd_args, serial=("L1",),
                            parallel=("L2", "L3", "L4"), moderate=400),
    "lu_rowwise": Probe(lu_rowwise, _square, serial=("L1", "L2"), parallel=("L4",),
                        reduction=("L3", "L5"), moderate=300),
    "gram_schmidt": Probe(gram_schmidt, _gs_args, serial=("L1",), reduction=("L2",),
                          parallel=("L3", "L4", "L6"), moderate=250),
    "prefix_sum_inplace": Probe(prefix_sum_inplace, lambda g, n: (g.random(n * 8),),
                                serial=("L1",), moderate=250_000),
    "edit_distance": Probe(edit_distance, _edit_args, serial=("L1", "L2"), moderate=1_500),
    "kmeans_assign": Probe(kmeans_assign, _kmeans_args, parallel=("L1",),
                           reduction=("L3",), moderate=50_000),
    "pairwise_math_sqrt": Probe(pairwise_math_sqrt, _pair_args, parallel=("L1", "L2"),
                                reduction=("L3",), moderate=800),
    "pairwise_np_sqrt_f32": Probe(pairwise_np_sqrt_f32, _pair32_args, parallel=("L1", "L2"),
                                  reduction=("L3",), moderate=800),
    "pairwise_pow_half": Probe(pairwise_pow_half, _pair_args, parallel=("L1", "L2"),
                               reduction=("L3",), moderate=800),
    "softmax_rows": Probe(softmax_rows, _softmax_args, parallel=("L1", "L4"),
                          reduction=("L3",), moderate=800,
                          note="L2 (if-max) is a max reduction in truth"),
    "threshold_histogram": Probe(threshold_histogram, _thresh_args, parallel=("L1", "L2"),
                                 moderate=1_500),
    "horner_eval": Probe(horner_eval, _horner_args, parallel=("L1",), serial=("L2",),
                         moderate=250_000),
    "column_means_fortran": Probe(column_means_fortran, _colmean_args, parallel=("L1",),
                                  reduction=("L2",), moderate=1_500),
    "doitgen_local_tmp": Probe(doitgen_local_tmp, _doitgen_args, parallel=("L3", "L5"),
                               moderate=80),
    "dot_f32": Probe(dot_f32, lambda g, n: (g.random(n * 8).astype(np.float32),
                                            g.random(n * 8).astype(np.float32)),
                     reduction=("L1",), moderate=200_000),
    "gemm_fortran": Probe(gemm_fortran, _gemm_f_args, parallel=("L2", "L3"), moderate=250),
    "backward_recurrence": Probe(backward_recurrence, lambda g, n: (g.random(n * 8),),
                                 serial=("L1",), moderate=250_000),
    "row_normalize": Probe(row_normalize, lambda g, n: (g.random((n, n + 2)),),
                           parallel=("L1", "L3"), reduction=("L2",), moderate=1_000),
    "forward_substitution": Probe(forward_substitution, _tri_args, serial=("L1",),
                                  reduction=("L2",), moderate=1_500),
    "back_substitution": Probe(back_substitution, _tri_args, serial=("L1",),
                               reduction=("L2",), moderate=1_500),
    "moving_average": Probe(moving_average, _mavg_args, parallel=("L1",),
                            reduction=("L2",), moderate=100_000),
    "int_matvec": Probe(int_matvec, _int_mv_args, parallel=("L1",), reduction=("L2",),
                        moderate=1_500),
    "count_and_clip": Probe(count_and_clip, _clip_args, reduction=("L1",),
                            parallel=("L2",), moderate=250_000),
    "nan_to_zero_scaled": Probe(nan_to_zero_scaled, _nan_args, parallel=("L1",),
                                moderate=250_000),
    "reverse_rows_1d": Probe(reverse_rows, lambda g, n: (g.random(n * 8),),
                             moderate=250_000),
    "reverse_rows_2d": Probe(reverse_rows, lambda g, n: (g.random((n + 1, 3)),),
                             moderate=100_000),
    "running_max_argmax": Probe(running_max_argmax, lambda g, n: (g.random(n * 8),),
                                serial=(), moderate=250_000),
    "matvec_one_based": Probe(matvec_one_based, lambda g, n: (g.random((n, n + 1)),
                                                              g.random(n + 1), np.zeros(n)),
                              parallel=("L1",), moderate=1_500),
}
