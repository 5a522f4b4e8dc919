"""Answer keys of the ninth held-out probe (``heldout_probe9.py``): for each kernel the version an
expert would write — ``prange`` over samples, the row reductions spelled as element loops into
a scalar (no temporary per pair), norms computed once, the scatter kept serial — same arguments,
same effect on them. Each is checked against the plain function by
``tests/test_offload_heldout_probe9.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange


@numba.njit(parallel=True)
def assign_to_nearest_center(X, C, labels):
    n, d = X.shape
    for i in prange(n):
        best = np.inf
        for k in range(C.shape[0]):
            s = 0.0
            for f in range(d):
                t = X[i, f] - C[k, f]
                s += t * t
            if s < best:
                best = s
                labels[i] = k


@numba.njit(parallel=True)
def manhattan_nearest(X, Y, idx):
    n, d = X.shape
    for i in prange(n):
        best = np.inf
        for j in range(Y.shape[0]):
            s = 0.0
            for f in range(d):
                s += abs(X[i, f] - Y[j, f])
            if s < best:
                best = s
                idx[i] = j


@numba.njit(parallel=True)
def neighbors_within_radius(X, r, counts):
    n, d = X.shape
    r2 = r * r
    for i in prange(n):
        c = 0
        for j in range(n):
            s = 0.0
            for f in range(d):
                t = X[i, f] - X[j, f]
                s += t * t
            if s <= r2:
                c += 1
        counts[i] = c


@numba.njit(parallel=True)
def pairwise_distance_helper(X, D):
    n, d = X.shape
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for f in range(d):
                t = X[i, f] - X[j, f]
                s += t * t
            D[i, j] = math.sqrt(s)


#: the same distances written with ``np.linalg.norm``: the same key
pairwise_norm_matrix = pairwise_distance_helper


@numba.njit(parallel=True)
def cosine_similarity_rows(X, S):
    n, d = X.shape
    norms = np.empty(n)
    for i in prange(n):
        s = 0.0
        for f in range(d):
            s += X[i, f] * X[i, f]
        norms[i] = math.sqrt(s)
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for f in range(d):
                s += X[i, f] * X[j, f]
            S[i, j] = s / (norms[i] * norms[j])


@numba.njit(parallel=True)
def rbf_gram_rows(X, gamma, K):
    n, d = X.shape
    for i in prange(n):
        for j in range(n):
            s = 0.0
            for f in range(d):
                t = X[i, f] - X[j, f]
                s += t * t
            K[i, j] = math.exp(-gamma * s)


@numba.njit(parallel=True)
def standardize_rows_stats(A):
    n, m = A.shape
    for i in prange(n):
        mu = 0.0
        for j in range(m):
            mu += A[i, j]
        mu /= m
        v = 0.0
        for j in range(m):
            t = A[i, j] - mu
            v += t * t
        sd = math.sqrt(v / m)
        for j in range(m):
            A[i, j] = (A[i, j] - mu) / sd


@numba.njit(parallel=True)
def weighted_rms_rows(A, w, out):
    n, m = A.shape
    for i in prange(n):
        s = 0.0
        for j in range(m):
            s += w[j] * A[i, j] * A[i, j]
        out[i] = math.sqrt(s / m)


@numba.njit(parallel=True)
def row_projection_residual(A, u, R):
    n, m = A.shape
    for i in prange(n):
        c = 0.0
        for j in range(m):
            c += A[i, j] * u[j]
        for j in range(m):
            R[i, j] = A[i, j] - c * u[j]


@numba.njit(parallel=True)
def center_rows_by_helper(A):
    n, m = A.shape
    for i in prange(n):
        s = 0.0
        for j in range(m):
            s += A[i, j]
        mean = s / m
        for j in range(m):
            A[i, j] = A[i, j] - mean


@numba.njit(parallel=True)
def diagonal_mahalanobis(X, mu, var, out):
    n, d = X.shape
    for i in prange(n):
        s = 0.0
        for f in range(d):
            t = X[i, f] - mu[f]
            s += t * t / var[f]
        out[i] = s


@numba.njit
def centroid_sums_scatter(X, labels, C, counts):
    n, d = X.shape
    for i in range(n):
        k = labels[i]
        for f in range(d):
            C[k, f] += X[i, f]
        counts[k] += 1
