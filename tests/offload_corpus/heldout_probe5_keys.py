"""Answer keys of the fifth held-out probe (``heldout_probe5.py``): for each kernel the version
an expert would write in numba — BLAS through ``@``/``np.dot`` under plain ``@numba.njit``,
``prange`` over independent rows or elements, array expressions, a per-thread privatized
histogram where bins collide, the serial loop where the computation is a true recurrence —
same arguments, same effect on them, same returned value. Each is checked against the plain
function by ``tests/test_offload_heldout_probe5.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange


# -- dense and triangular linear algebra ---------------------------------------------------------
@numba.njit(parallel=True)
def tri_lower_matvec(L, x, y):
    for i in prange(L.shape[0]):
        acc = 0.0
        for j in range(i + 1):
            acc += L[i, j] * x[j]
        y[i] = acc


@numba.njit
def tri_lower_product(A, B, C):
    P = np.tril(A) @ np.tril(B)
    for i in range(A.shape[0]):
        for j in range(i + 1):
            C[i, j] = P[i, j]


@numba.njit
def matpow_squaring(A, k, P, T):
    P[:, :] = A
    while k > 0:
        np.dot(P, P, T)
        P[:, :] = T
        k -= 1


@numba.njit
def dot_rows_fortran(A, x, y):
    np.dot(A, x, y)


@numba.njit(parallel=True)
def int64_matvec(A, x, y):
    for i in prange(A.shape[0]):
        s = 0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


@numba.njit(parallel=True)
def rank1_slice_update(A, u, v):
    for i in prange(A.shape[0]):
        ui = u[i]
        for j in range(A.shape[1]):
            A[i, j] += ui * v[j]


@numba.njit(parallel=True)
def transpose_from_fortran(A, B):
    m, n = A.shape
    for j in prange(n):  # B's rows and A's columns are both unit-stride
        for i in range(m):
            B[j, i] = A[i, j]


@numba.njit(parallel=True)
def tri_rows_accumulate(A):
    n = A.shape[0]
    for i in range(1, n):
        for j in prange(i):
            A[i, j] += A[i - 1, j]


# -- statistics and machine learning -------------------------------------------------------------
@numba.njit(parallel=True)
def logsumexp_rows(X, out):
    m, n = X.shape
    for i in prange(m):
        mx = -np.inf
        for j in range(n):
            mx = max(mx, X[i, j])
        s = 0.0
        for j in range(n):
            s += math.exp(X[i, j] - mx)
        out[i] = mx + math.log(s)


@numba.njit(parallel=True)
def softmax_f32_slices(X, out):
    for i in prange(X.shape[0]):
        m = np.max(X[i, :])
        e = np.exp(X[i, :] - m)
        out[i, :] = e / np.sum(e)


@numba.njit
def argmax_abs_first(x):
    best = -1.0
    idx = -1
    for i in range(x.shape[0]):
        v = abs(x[i])
        if v > best:
            best = v
            idx = i
    return idx, best


@numba.njit
def min_abs_gap(x):
    if x.shape[0] < 2:
        return np.inf
    s = np.sort(x)  # the closest pair is adjacent once sorted: O(n log n)
    return np.min(np.abs(s[1:] - s[:-1]))


@numba.njit(parallel=True)
def pairwise_l1_mirror(X, D):
    n, d = X.shape
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                s += abs(X[i, k] - X[j, k])
            D[i, j] = s


@numba.njit(parallel=True)
def nbody_accel_2d(pos, mass, acc, soft):
    n = pos.shape[0]
    for i in prange(n):
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


@numba.njit(parallel=True)
def bincount_clamped(x, lo, width, counts):
    nb = counts.shape[0]
    nt = numba.get_num_threads()
    n = x.shape[0]
    local = np.zeros((nt, nb), dtype=counts.dtype)
    chunk = (n + nt - 1) // nt
    for t in prange(nt):
        for i in range(t * chunk, min(n, (t + 1) * chunk)):
            b = int((x[i] - lo) / width)
            b = min(max(b, 0), nb - 1)
            local[t, b] += 1
    for t in range(nt):
        for b in range(nb):
            counts[b] += local[t, b]


@numba.njit(parallel=True)
def image_level_hist(img, nb, hist):
    h, w = img.shape
    local = np.zeros((h, hist.shape[0]), dtype=hist.dtype)
    for i in prange(h):
        for j in range(w):
            local[i, img[i, j] * nb // 256] += 1
    for i in range(h):
        for b in range(hist.shape[0]):
            hist[b] += local[i, b]


# -- sparse and indirect -------------------------------------------------------------------------
@numba.njit(parallel=True)
def csr_spmm_rows(indptr, indices, data, B, C):
    nc = B.shape[1]
    for i in prange(indptr.shape[0] - 1):
        for k in range(indptr[i], indptr[i + 1]):
            a = data[k]
            r = indices[k]
            for j in range(nc):
                C[i, j] += a * B[r, j]


@numba.njit
def csr_transpose_spmv(indptr, indices, data, x, y):
    for i in range(indptr.shape[0] - 1):
        xi = x[i]
        for k in range(indptr[i], indptr[i + 1]):
            y[indices[k]] += data[k] * xi


@numba.njit(parallel=True)
def gather_strided_f32(x, idx, out):
    for i in prange(idx.shape[0]):
        out[i] = 2.0 * x[idx[i]] + 1.0


# -- stencils ------------------------------------------------------------------------------------
@numba.njit(parallel=True)
def conv2d_periodic_mod(img, ker, out):
    h, w = img.shape
    for i in prange(h):
        for j in range(w):
            s = 0.0
            for a in range(3):
                ii = (i + a - 1 + h) % h
                for b in range(3):
                    s += ker[a, b] * img[ii, (j + b - 1 + w) % w]
            out[i, j] = s


@numba.njit(parallel=True)
def conv2d_clamped_edges(img, ker, out):
    h, w = img.shape
    for i in prange(h):
        for j in range(w):
            s = 0.0
            for a in range(3):
                ii = min(max(i + a - 1, 0), h - 1)
                for b in range(3):
                    s += ker[a, b] * img[ii, min(max(j + b - 1, 0), w - 1)]
            out[i, j] = s


@numba.njit
def gauss_seidel_1d(x, sweeps):
    n = x.shape[0]
    for _ in range(sweeps):
        for i in range(1, n - 1):
            x[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0


@numba.njit
def stepped_lag_update(x):
    for i in range(0, x.shape[0] - 2, 2):
        x[i + 2] += 0.5 * x[i]


@numba.njit(parallel=True)
def odd_from_even(x):
    for t in prange(x.shape[0] // 2):
        i = 2 * t + 1
        x[i] = 2.0 * x[i - 1] + x[i]


@numba.njit
def reverse_shift_inplace(x):
    if x.shape[0] > 1:
        x[1:] = x[:-1].copy()


# -- scans and control flow ----------------------------------------------------------------------
@numba.njit
def decayed_running_sum(x, out, decay):
    c = 0.0
    for i in range(x.shape[0]):
        c = decay * c + x[i]
        out[i] = c


@numba.njit
def suffix_sums_inplace(x):
    for i in range(x.shape[0] - 2, -1, -1):
        x[i] += x[i + 1]


@numba.njit
def compact_positive(x, out):
    k = 0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            out[k] = x[i]
            k += 1
    return k


@numba.njit(parallel=True)
def first_negative_col(A, cols):
    m, n = A.shape
    for i in prange(m):
        c = -1
        for j in range(n):
            if A[i, j] < 0.0:
                c = j
                break
        cols[i] = c


@numba.njit(parallel=True)
def zip_enumerate_blend(x, y, t, out):
    for i in prange(min(x.shape[0], y.shape[0])):
        out[i] = (1.0 - t) * x[i] + t * y[i]
