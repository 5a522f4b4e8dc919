"""Answer keys of the fourth held-out probe (``heldout_probe4.py``): for each kernel the version
an expert would write in numba — BLAS through ``@``/``np.dot`` under plain ``@numba.njit``
(parfors around BLAS calls fight OpenBLAS's threads), ``prange`` over independent rows with
unit-stride inner loops, array expressions — same arguments, same effect on them, same
returned value. Each is checked against the plain function by
``tests/test_offload_heldout_probe4.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange


# -- dense products ------------------------------------------------------------------------------
@numba.njit
def gemm_ikj_hoisted(alpha, beta, C, A, B):
    P = A @ B
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j] + alpha * P[i, j]


@numba.njit
def gemm_abt(alpha, beta, C, A, B):
    P = A @ B.T
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = alpha * P[i, j] + beta * C[i, j]


@numba.njit
def batched_matmul(A, B, C):
    for b in range(A.shape[0]):
        np.dot(A[b], B[b], C[b])


@numba.njit
def gesummv_split(alpha, beta, A, B, x, y, tmp):
    np.dot(A, x, tmp)
    np.dot(B, x, y)
    for i in range(y.shape[0]):
        y[i] = alpha * tmp[i] + beta * y[i]


@numba.njit
def atax_inside(A, x, y, tmp):
    np.dot(A, x, tmp)
    np.dot(tmp, A, y)


@numba.njit
def bicg_onepass(A, p, r, q, s):
    np.dot(A, p, q)
    np.dot(r, A, s)


@numba.njit
def gemver_full(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    n = A.shape[0]
    for i in range(n):
        a, b = u1[i], u2[i]
        for j in range(n):
            A[i, j] += a * v1[j] + b * v2[j]
    t = y @ A
    for j in range(n):
        x[j] = x[j] + beta * t[j] + z[j]
    t = A @ x
    for i in range(n):
        w[i] += alpha * t[i]


@numba.njit
def syrk_jk(alpha, beta, C, A):
    T = A @ A.T
    for i in range(C.shape[0]):
        for j in range(i + 1):
            C[i, j] = beta * C[i, j] + alpha * T[i, j]


@numba.njit
def symm_temp2(alpha, beta, C, A, B):
    m = C.shape[0]
    S = np.empty((m, m))
    for i in range(m):
        for k in range(i + 1):
            S[i, k] = A[i, k]
            S[k, i] = A[i, k]
    P = S @ B
    for i in range(m):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j] + alpha * P[i, j]


@numba.njit
def contract_rq(A, W, acc):
    nr, nq, npp = A.shape
    if nr * nq == 0 or npp == 0:
        return
    flat = A.reshape(nr * nq, npp)
    flat[:, :] = flat @ W
    acc[:] = flat[-1]  # the last (r, q)'s sums stay in acc


@numba.njit
def outer_accumulate(X, Y, P):
    P += X.T @ Y


@numba.njit(parallel=True)
def kron_product(A, B, K):
    m, n = A.shape
    p, q = B.shape
    for i in prange(m):
        for k in range(p):
            for j in range(n):
                a = A[i, j]
                for l in range(q):  # noqa: E741
                    K[i * p + k, j * q + l] = a * B[k, l]


# -- data mining ---------------------------------------------------------------------------------
@numba.njit
def covariance_meandiv(data, cov):
    n, m = data.shape
    mean = np.zeros(m)
    for i in range(n):
        for j in range(m):
            mean[j] += data[i, j]
    for j in range(m):
        mean[j] /= n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    np.dot(data.T, data, cov)
    cov /= float(n - 1)


@numba.njit
def correlation_eps(data, corr, eps):
    n, m = data.shape
    mean = np.zeros(m)
    for i in range(n):
        for j in range(m):
            mean[j] += data[i, j]
    mean /= n
    var = np.zeros(m)
    for i in range(n):
        for j in range(m):
            d = data[i, j] - mean[j]
            var[j] += d * d
    scale = np.empty(m)
    for j in range(m):
        sd = np.sqrt(var[j] / n)
        scale[j] = np.sqrt(float(n)) * (1.0 if sd <= eps else sd)
    for i in range(n):
        for j in range(m):
            data[i, j] = (data[i, j] - mean[j]) / scale[j]
    np.dot(data.T, data, corr)
    for a in range(m):
        corr[a, a] = 1.0


@numba.njit
def kmeans_update(points, labels, centers, counts):
    k, d = centers.shape
    centers[:, :] = 0.0
    counts[:] = 0
    for i in range(points.shape[0]):
        c = labels[i]
        counts[c] += 1
        for t in range(d):
            centers[c, t] += points[i, t]
    for c in range(k):
        if counts[c] > 0:
            for t in range(d):
                centers[c, t] /= counts[c]


@numba.njit
def cosine_matrix(X, S):
    n = X.shape[0]
    norms = np.empty(n)
    for i in range(n):
        s = 0.0
        for k in range(X.shape[1]):
            s += X[i, k] ** 2
        norms[i] = math.sqrt(s)
    np.dot(X, X.T, S)
    for i in range(n):
        for j in range(n):
            S[i, j] = S[i, j] / (norms[i] * norms[j] + 1e-12)


@numba.njit(parallel=True)
def row_standardize(X, Z):
    n, m = X.shape
    for i in prange(n):
        mu = 0.0
        for j in range(m):
            mu += X[i, j]
        mu = mu / m
        var = 0.0
        for j in range(m):
            var += (X[i, j] - mu) * (X[i, j] - mu)
        sd = math.sqrt(var / m)
        if sd == 0.0:
            sd = 1.0
        for j in range(m):
            Z[i, j] = (X[i, j] - mu) / sd


@numba.njit
def power_step(A, x, y):
    np.dot(A, x, y)
    nrm = math.sqrt(np.dot(y, y))
    y /= nrm
    return nrm


# -- stencils ------------------------------------------------------------------------------------
@numba.njit(parallel=True)
def jacobi2d_copyback(steps, A, B):
    n = A.shape[0]
    for _t in range(steps):
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = B[i, j]


@numba.njit
def _heat_sweep(src, dst, i):
    n = src.shape[0]
    for j in range(1, n - 1):
        for k in range(1, n - 1):
            dst[i, j, k] = src[i, j, k] + 0.125 * (
                src[i + 1, j, k] - 2.0 * src[i, j, k] + src[i - 1, j, k]
                + src[i, j + 1, k] - 2.0 * src[i, j, k] + src[i, j - 1, k]
                + src[i, j, k + 1] - 2.0 * src[i, j, k] + src[i, j, k - 1])


@numba.njit(parallel=True)
def heat3d_interior(steps, A, B):
    n = A.shape[0]
    for _t in range(steps):
        for i in prange(1, n - 1):
            _heat_sweep(A, B, i)
        for i in prange(1, n - 1):
            _heat_sweep(B, A, i)


@numba.njit(parallel=True)
def fdtd2d_source(fict, ex, ey, hz):
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in prange(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in prange(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in prange(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


@numba.njit(parallel=True)
def adi_sweeps(X, A, B):
    n, m = X.shape
    for i in prange(n):
        for j in range(1, m):
            X[i, j] = X[i, j] - X[i, j - 1] * A[i, j] / B[i, j - 1]
            B[i, j] = B[i, j] - A[i, j] * A[i, j] / B[i, j - 1]
    for i in range(1, n):  # down the columns: rows in order, each row's columns at once
        for j in prange(m):
            X[i, j] = X[i, j] - X[i - 1, j] * A[i, j] / B[i - 1, j]
            B[i, j] = B[i, j] - A[i, j] * A[i, j] / B[i - 1, j]


@numba.njit
def iir_down_columns(x, y, a):
    n, m = x.shape
    for j in range(m):
        y[0, j] = x[0, j]
    b = 1.0 - a
    for i in range(1, n):
        for j in range(m):
            y[i, j] = a * y[i - 1, j] + b * x[i, j]


@numba.njit
def seidel2d_nine(steps, A):
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


# -- factorizations and solvers ------------------------------------------------------------------
@numba.njit
def cholesky_left(A):
    n = A.shape[0]
    S = np.empty((n, n))
    for i in range(n):
        for k in range(i + 1):
            S[i, k] = A[i, k]
            S[k, i] = A[i, k]
    L = np.linalg.cholesky(S)
    for i in range(n):
        for k in range(i + 1):
            A[i, k] = L[i, k]


@numba.njit(parallel=True)
def lu_kij(A):
    n = A.shape[0]
    for k in range(n):
        d = A[k, k]
        for i in prange(k + 1, n):
            aik = A[i, k] / d
            A[i, k] = aik
            for j in range(k + 1, n):
                A[i, j] -= aik * A[k, j]


@numba.njit
def trisolv_columns(L, b, x):
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


@numba.njit
def durbin_levinson(r, y):
    n = r.shape[0]
    z = np.empty(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        y[:k] = z[:k]
        y[k] = alpha


@numba.njit
def gram_schmidt_classic(A, Q, R):
    n = A.shape[1]
    for k in range(n):
        a = A[:, k].copy()
        if k:
            Qk = np.ascontiguousarray(Q[:, :k])
            s = a @ Qk
            R[:k, k] = s
            q = a - Qk @ s
        else:
            q = a
        nrm = math.sqrt(np.dot(q, q))
        R[k, k] = nrm
        Q[:, k] = q / nrm


@numba.njit
def nussinov_fold(seq, T):
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = T[i, j - 1]
            if i + 1 < n:
                best = max(best, T[i + 1, j])
                pair = 1 if seq[i] + seq[j] == 3 and i < j - 1 else 0
                best = max(best, T[i + 1, j - 1] + pair)
            for k in range(i + 1, j):
                best = max(best, T[i, k] + T[k + 1, j])
            T[i, j] = best
