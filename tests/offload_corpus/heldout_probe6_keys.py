"""Answer keys of the sixth held-out probe (``heldout_probe6.py``): for each kernel the version an
expert would write in numba — ``prange`` over independent rows or elements, reductions in a
``prange``, array expressions, helpers inlined, the serial loop where the computation is a true
recurrence — same arguments, same effect on them, same returned value. Each is checked against
the plain function by ``tests/test_offload_heldout_probe6.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

MOD = 1_000_003


# -- module-level helpers ------------------------------------------------------------------------
@numba.njit(parallel=True)
def smoothstep_helper_map(x, lo, hi, out):
    inv = 1.0 / (hi - lo)
    for i in prange(x.shape[0]):
        t = min(max((x[i] - lo) * inv, 0.0), 1.0)
        out[i] = t * t * (3.0 - 2.0 * t)


@numba.njit(parallel=True)
def rotate_points_helper(P, theta, Q):
    c = math.cos(theta)
    s = math.sin(theta)
    for i in prange(P.shape[0]):
        px = P[i, 0]
        py = P[i, 1]
        Q[i, 0] = c * px - s * py
        Q[i, 1] = s * px + c * py


@numba.njit(parallel=True)
def normalize_rows_by_helper(A):
    for i in prange(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] / s


@numba.njit(parallel=True)
def row_prefix_via_helper(A):
    for j in prange(A.shape[1]):  # columns are independent; the scan runs down each
        for i in range(1, A.shape[0]):
            A[i, j] += A[i - 1, j]


@numba.njit(parallel=True)
def logistic_with_defaults(x, out, k=1.0, x0=0.0):
    for i in prange(x.shape[0]):
        out[i] = 1.0 / (1.0 + math.exp(-k * (x[i] - x0)))


@numba.njit
def rolling_hash_mod(codes):
    h = 0
    for i in range(codes.shape[0]):
        h = (h * 31 + codes[i]) % MOD
    return h


# -- continue, return, while ---------------------------------------------------------------------
@numba.njit(parallel=True)
def nan_skipping_row_means(A, out):
    m, n = A.shape
    for i in prange(m):
        s = 0.0
        c = 0
        for j in range(n):
            v = A[i, j]
            if not math.isnan(v):
                s += v
                c += 1
        out[i] = s / c if c > 0 else 0.0


@numba.njit(parallel=True)
def first_row_over_budget(A, budget):
    m = A.shape[0]
    over = np.zeros(m, dtype=np.bool_)
    for i in prange(m):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        over[i] = s > budget
    for i in range(m):
        if over[i]:
            return i
    return -1


@numba.njit(parallel=True)
def collatz_steps(seeds, steps):
    for i in prange(seeds.shape[0]):
        v = seeds[i]
        c = 0
        while v != 1:
            v = v >> 1 if v & 1 == 0 else 3 * v + 1
            c += 1
        steps[i] = c


@numba.njit(parallel=True)
def column_recurrence_while(A, r):
    m, n = A.shape
    # rows in order, columns in parallel within a row (row-major friendly)
    for i in range(1, m):
        for j in prange(n):
            A[i, j] += r * A[i - 1, j]


# -- reversed ranges and backward DP -------------------------------------------------------------
@numba.njit
def upper_bidiag_solve_reversed(d, e, b, x):
    n = d.shape[0]
    x[n - 1] = b[n - 1] / d[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = (b[i] - e[i] * x[i + 1]) / d[i]


@numba.njit(parallel=True)
def reversed_ramp_weights(x, out):
    n = x.shape[0]
    for i in prange(n):
        out[i] = x[n - 1 - i] * (i + 1) / n


@numba.njit
def min_cost_to_corner(C, D):
    m, n = C.shape
    D[m - 1, n - 1] = C[m - 1, n - 1]
    for j in range(n - 2, -1, -1):
        D[m - 1, j] = C[m - 1, j] + D[m - 1, j + 1]
    for i in range(m - 2, -1, -1):
        D[i, n - 1] = C[i, n - 1] + D[i + 1, n - 1]
        for j in range(n - 2, -1, -1):
            D[i, j] = C[i, j] + min(D[i + 1, j], D[i, j + 1])


@numba.njit
def lcs_length_table(a, b):
    n, m = len(a), len(b)
    prev = np.zeros(m + 1, dtype=np.int64)
    cur = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        ai = a[i - 1]
        for j in range(1, m + 1):
            if ai == b[j - 1]:
                cur[j] = prev[j - 1] + 1
            else:
                cur[j] = max(prev[j], cur[j - 1])
        prev, cur = cur, prev
    return prev[m]


# -- time loops and sweeps -----------------------------------------------------------------------
@numba.njit(parallel=True)
def diffuse2d_pingpong(a, b, steps, r):
    h, w = a.shape
    for _ in range(steps):
        for i in prange(1, h - 1):
            for j in range(1, w - 1):
                b[i, j] = a[i, j] + r * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                         + a[i, j + 1] - 4.0 * a[i, j])
        a, b = b, a
    return a


@numba.njit(parallel=True)
def jacobi1d_new_each_step(u, steps):
    n = u.shape[0]
    for _ in range(steps):
        new = np.empty_like(u)
        new[0] = u[0]
        new[n - 1] = u[n - 1]
        for i in prange(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u = new
    return u


@numba.njit(parallel=True)
def red_black_poisson(U, f, sweeps):
    n, m = U.shape
    for _ in range(sweeps):
        for colour in range(2):
            for i in prange(1, n - 1):
                for j in range(1 + (i + colour) % 2, m - 1, 2):
                    U[i, j] = 0.25 * (U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1]
                                      - f[i, j])


# -- scratch arrays, 3-D, sizes ------------------------------------------------------------------
@numba.njit(parallel=True)
def weighted_row_spread(A, w, out):
    rows, m = A.shape
    for i in prange(rows):
        hi = -np.inf
        lo = np.inf
        for j in range(m):
            v = A[i, j] * w[j]
            hi = max(hi, v)
            lo = min(lo, v)
        out[i] = hi - lo


@numba.njit(parallel=True)
def centered_row_energy_shared_tmp(A, out):
    m, n = A.shape
    for i in prange(m):
        mu = 0.0
        for j in range(n):
            mu += A[i, j]
        mu /= n
        e = 0.0
        for j in range(n):
            d = A[i, j] - mu
            e += d * d
        out[i] = e


@numba.njit(parallel=True)
def rms_last_axis_3d(V, out):
    a, b, c = V.shape
    for i in prange(a):
        for j in range(b):
            s = 0.0
            for k in range(c):
                s += V[i, j, k] * V[i, j, k]
            out[i, j] = np.sqrt(s / c)


@numba.njit(parallel=True)
def zscore_size_len(x, out):
    n = x.size
    mu = 0.0
    for i in prange(n):
        mu += x[i]
    mu /= n
    var = 0.0
    for i in prange(n):
        var += (x[i] - mu) ** 2
    sd = math.sqrt(var / n)
    for i in prange(n):
        out[i] = (x[i] - mu) / sd


# -- complex, masks, bits ------------------------------------------------------------------------
@numba.njit(parallel=True)
def naive_dft(x, X):
    n = x.shape[0]
    for k in prange(n):
        s = 0j
        for t in range(n):
            s += x[t] * np.exp(-2j * np.pi * k * t / n)
        X[k] = s


@numba.njit(parallel=True)
def hash_bucket_and_parity(keys_, nb, bucket, parity):
    for i in prange(keys_.shape[0]):
        h = keys_[i]
        h = ((h >> 16) ^ h) * 0x45D9F3B & 0xFFFFFFFF
        h = ((h >> 16) ^ h) & 0xFFFFFFFF
        bucket[i] = h % nb
        h ^= h >> 16
        h ^= h >> 8
        h ^= h >> 4
        h ^= h >> 2
        h ^= h >> 1
        parity[i] = h & 1


@numba.njit(parallel=True)
def masked_row_norms(A, keep, out):
    for i in prange(A.shape[0]):
        if keep[i]:
            s = 0.0
            for j in range(A.shape[1]):
                s += A[i, j] * A[i, j]
            out[i] = np.sqrt(s)
        else:
            out[i] = 0.0


# -- reductions, pairs, carried values -----------------------------------------------------------
@numba.njit(parallel=True)
def weighted_mean_var(x, w):
    sw = 0.0
    swx = 0.0
    swxx = 0.0
    for i in prange(x.shape[0]):
        wi = w[i]
        xi = x[i]
        sw += wi
        swx += wi * xi
        swxx += wi * xi * xi
    mean = swx / sw
    return mean, swxx / sw - mean ** 2


@numba.njit(parallel=True)
def count_inversions_pairs(x):
    n = len(x)
    count = 0
    for i in prange(n):
        xi = x[i]
        c = 0
        for j in range(i + 1, n):
            if xi > x[j]:
                c += 1
        count += c
    return count


@numba.njit(parallel=True)
def rbf_kernel_chained(X, gamma, K):
    n, d = X.shape
    for i in prange(n):
        K[i, i] = 1.0
        for j in range(n):
            if j != i:
                s = 0.0
                for k in range(d):
                    t = X[i, k] - X[j, k]
                    s += t * t
                K[i, j] = math.exp(-gamma * s)


@numba.njit(parallel=True)
def peak_abs_ternary(x):
    m = 0.0
    for i in prange(x.shape[0]):
        m = max(m, abs(x[i]))
    return m


@numba.njit
def lagged_feedback(x, k, g):
    for i in range(k, x.shape[0]):
        x[i] += g * x[i - k]


@numba.njit(parallel=True)
def row_ranges_counter(A, out):
    for k in prange(A.shape[0]):
        hi = -np.inf
        lo = np.inf
        for j in range(A.shape[1]):
            v = A[k, j]
            hi = max(hi, v)
            lo = min(lo, v)
        out[k] = hi - lo
