"""Answer keys of the seventh held-out probe (``heldout_probe7.py``): for each kernel the version an
expert would write — ``prange`` over independent rows or elements, reductions in a ``prange``,
array expressions (with a copy where the loop reads ahead of its writes), ``@`` for the GEMV,
helpers and the lambda inlined, the serial loop where the computation is a true recurrence, and
plain NumPy where numba has nothing better (a list, a dict, a ``print``) — same arguments, same
effect on them, same returned value. Each is checked against the plain function by
``tests/test_offload_heldout_probe7.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

GAMMA_LUT = (np.arange(256) / 255.0) ** 2.2


# -- index arithmetic in place -------------------------------------------------------------------
@numba.njit
def doubling_index_feed(x):
    n = x.shape[0]
    for i in range(1, n // 2):
        x[2 * i] = x[i] + 1.0


@numba.njit(parallel=True)
def upper_half_from_lower(x):
    h = x.shape[0] // 2
    for i in prange(h):
        x[i + h] = 2.0 * x[i]


@numba.njit(parallel=True)
def forward_pair_sum_inplace(x):
    n = x.shape[0]
    if n < 2:
        return
    nxt = x[1:].copy()  # the old values the serial loop reads ahead of its writes
    for i in prange(n - 1):
        x[i] = x[i] + nxt[i]


@numba.njit
def mirror_assign_inplace(x):
    n = x.shape[0]
    for i in range(n):
        x[i] = x[n - 1 - i]


@numba.njit(parallel=True)
def reverse_segment_swaps(x, lo, hi):
    for k in prange((hi - lo) // 2):
        a = x[lo + k]
        x[lo + k] = x[hi - 1 - k]
        x[hi - 1 - k] = a


@numba.njit(parallel=True)
def lifting_predict_update(x):
    n = x.shape[0]
    for t in prange(max(0, (n - 1) // 2)):  # i = 1, 3, …, < n - 1
        i = 2 * t + 1
        x[i] -= 0.5 * (x[i - 1] + x[i + 1])
    for t in prange(max(0, (n - 2) // 2)):  # i = 2, 4, …, < n - 1
        i = 2 * t + 2
        x[i] += 0.25 * (x[i - 1] + x[i + 1])


@numba.njit
def offset_copy_scaled(x, k, c):
    for i in range(x.shape[0] - k):
        x[i + k] = c * x[i]


@numba.njit
def ring_average_inplace(x):
    n = x.shape[0]
    for i in range(n):
        x[i] = 0.5 * (x[i] + x[(i + 1) % n])


@numba.njit(parallel=True)
def wrap_backward_diff(x, d):
    n = x.shape[0]
    for i in prange(n):
        d[i] = x[i] - x[i - 1 if i > 0 else n - 1]


@numba.njit(parallel=True)
def divide_by_last_column(A):
    m = A.shape[1]
    for i in prange(A.shape[0]):
        last = A[i, m - 1]
        for j in range(m):
            A[i, j] = A[i, j] / last  # j = m - 1 gives last / last, as the serial loop


@numba.njit(parallel=True)
def rotate_front_from_back(x):
    n = x.shape[0]
    h = n // 2
    for i in prange(h):
        x[i] = x[n - h + i]


# -- gathers, scatters ---------------------------------------------------------------------------
@numba.njit(parallel=True)
def gather_rows_by_index(A, idx, out):
    for i in prange(idx.shape[0]):
        r = idx[i]
        for j in range(A.shape[1]):
            out[i, j] = A[r, j]


@numba.njit
def scatter_last_wins(x, idx, y):
    for i in range(x.shape[0]):
        y[idx[i]] = x[i]


@numba.njit
def coo_to_dense_add(rows, cols, vals, M):
    for k in range(vals.shape[0]):
        M[rows[k], cols[k]] += vals[k]


# -- chained indexing, row views, builtins -------------------------------------------------------
@numba.njit
def chained_index_matvec(A, x, y):
    y[:] = A @ x


@numba.njit(parallel=True)
def chained_index_affine_inplace(A, b):
    for i in prange(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = 2.0 * A[i, j] + b[j]


@numba.njit(parallel=True)
def scale_rows_through_view(A, w):
    for i in prange(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] * w[j]


@numba.njit(parallel=True)
def builtin_sum_row_means(A, out):
    m = A.shape[1]
    for i in prange(A.shape[0]):
        s = 0.0
        for j in range(m):
            s += A[i, j]
        out[i] = s / m


@numba.njit
def row_at_matvec(A, x, y):
    y[:] = A @ x


@numba.njit(parallel=True)
def iter_mean_abs(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += abs(x[i])
    return s / x.shape[0]


# -- binning, rounding, integers -----------------------------------------------------------------
@numba.njit
def floor_bin_counts(x, lo, width, counts):
    nb = counts.shape[0]
    for i in range(x.shape[0]):
        b = math.floor((x[i] - lo) / width)
        if 0 <= b < nb:
            counts[b] += 1


@numba.njit(parallel=True)
def round_to_grid(x, h, out):
    for i in prange(x.shape[0]):
        out[i] = np.rint(x[i] / h) * h  # half to even, as Python's round


@numba.njit(parallel=True)
def abs_int_gaps_total(a, b, gaps):
    total = 0
    for i in prange(a.shape[0]):
        g = abs(a[i] - b[i])
        gaps[i] = g
        total += g
    return total


# -- in-place transposes and symmetrizations -----------------------------------------------------
@numba.njit(parallel=True)
def transpose_by_swaps(A):
    n = A.shape[0]
    for i in prange(n):
        for j in range(i):
            t = A[i, j]
            A[i, j] = A[j, i]
            A[j, i] = t


@numba.njit
def symmetrize_average_inplace(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.5 * (A[i, j] + A[j, i])


# -- module-level tables, helpers, lambdas, recursion --------------------------------------------
@numba.njit(parallel=True)
def _lut_map(codes, lut, out):
    for i in prange(codes.shape[0]):
        out[i] = lut[codes[i]]


def lookup_table_map(codes, out):
    _lut_map(codes, GAMMA_LUT, out)


@numba.njit(parallel=True)
def nested_helper_norms(P, out):
    for i in prange(P.shape[0]):
        out[i] = math.sqrt(P[i, 0] * P[i, 0] + P[i, 1] * P[i, 1] + P[i, 2] * P[i, 2])


@numba.njit(parallel=True)
def module_lambda_map(x, out):
    for i in prange(x.shape[0]):
        v = x[i]
        out[i] = v * v * v + 1.0


@numba.njit(parallel=True)
def recursive_helper_map(ks, out):
    for i in prange(ks.shape[0]):
        k = ks[i]
        out[i] = k * (k + 1) // 2 if k > 0 else 0


# -- Python containers, try, print ---------------------------------------------------------------
@numba.njit
def positives_to_list(x):
    return x[x > 0]


@numba.njit(parallel=True)
def _dot(v, w):
    s = 0.0
    for i in prange(v.shape[0]):
        s += v[i] * w[i]
    return s


def weights_from_list(vals, w):
    return _dot(np.asarray(vals, dtype=np.float64), w)


def code_counts_dict(codes):
    u, c = np.unique(codes, return_counts=True)
    return {int(a): int(b) for a, b in zip(u, c, strict=True)}


@numba.njit(parallel=True)
def safe_log_try(x, out):
    for i in prange(x.shape[0]):
        out[i] = math.log(x[i]) if x[i] > 0.0 else -math.inf


def sum_then_print(x):
    s = _dot(x, x)
    print(f"sum of squares = {s:.3f}")
    return s


# -- dtypes --------------------------------------------------------------------------------------
@numba.njit(parallel=True)
def _f32_energy(x):
    s = np.float32(0.0)
    for i in prange(x.shape[0]):
        s += x[i] * x[i]
    return s


def float32_total_energy(x):
    return np.float32(_f32_energy(x))


@numba.njit(parallel=True)
def _i64_sum(a):
    s = 0
    for i in prange(a.shape[0]):
        s += a[i]
    return s


def int32_total_wraps(a):
    # the sum modulo 2**32 is what int32 steps that wrap give
    return np.int64(_i64_sum(a)).astype(np.int32)


@numba.njit(parallel=True)
def int64_count_above(x, t):
    c = 0
    for i in prange(x.shape[0]):
        if x[i] > t:
            c += 1
    return c


@numba.njit(parallel=True)
def flag_strict_peaks(x, flags):
    for i in prange(1, x.shape[0] - 1):
        flags[i] = x[i] > x[i - 1] and x[i] > x[i + 1]


@numba.njit(parallel=True)
def center_rows_return_norms(A):
    m, n = A.shape
    norms = np.empty(m)
    for i in prange(m):
        mu = 0.0
        for j in range(n):
            mu += A[i, j]
        mu = mu / n
        ss = 0.0
        for j in range(n):
            A[i, j] -= mu
            ss += A[i, j] * A[i, j]
        norms[i] = math.sqrt(ss)
    return norms


@numba.njit
def _prefix_into(a, b):
    for i in range(b.shape[0]):
        b[i] += a[i]


@numba.njit(parallel=True)
def _add_distinct(a, b):
    for i in prange(b.shape[0]):
        b[i] += a[i]


def accumulate_into_next(a, b):
    if np.shares_memory(a, b):  # f(x[:-1], x[1:]): the loop is a prefix sum
        _prefix_into(a, b)
    else:
        _add_distinct(a, b)
