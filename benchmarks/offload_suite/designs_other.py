"""Answer-key designs tried for the data-mining, stencil and dynamic-programming kernels.

Same scheme as ``designs_dense``: ``DESIGNS[kernel][label]``, timed by ``compare_keys.py``;
labels ``blas`` (plain njit around BLAS/array calls), ``prange`` (parallel loops, unit-stride
inner loops), ``serial`` (the best serial loop), ``expr`` (array expressions),
``run1`` (the key of the first suite run).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

# -- covariance / correlation --------------------------------------------------------------------


@numba.njit(parallel=True)
def _center_columns(X, mean):
    """mean[j] = column mean of X (n, m), then X -= mean; row-wise (unit-stride) passes."""
    n, m = X.shape
    nt = numba.get_num_threads()
    part = np.zeros((nt, m))
    step = (n + nt - 1) // nt
    for t in prange(nt):  # private column sums per chunk of rows
        for i in range(t * step, min((t + 1) * step, n)):
            for j in range(m):
                part[t, j] += X[i, j]
    for j in range(m):
        mean[j] = part[:, j].sum() / n
    for i in prange(n):
        for j in range(m):
            X[i, j] -= mean[j]


@numba.njit
def _gram(X, scale, out):
    """out = (X.T @ X) * scale, with plain njit (BLAS, no parfor around it)."""
    np.dot(X.T, X, out)
    out *= scale


@numba.njit
def covariance_matrix_split(X, mean, cov):
    _center_columns(X, mean)
    _gram(X, 1.0 / (X.shape[0] - 1.0), cov)


@numba.njit
def covariance_matrix_blas(X, mean, cov):
    """Answer key: row-wise (unit-stride) column sums and centering, then
    ``np.dot(X.T, X, cov)`` scaled in place, plain njit.

    Tried: ``split`` (a parallel centering function then BLAS: 58.8 ms), ``run1`` (column slices
    and BLAS under ``parallel=True``: 59.6 ms). Kept: 1.1 ms (serial loop 70 ms).
    """
    n, m = X.shape
    mean[:] = 0.0
    for i in range(n):
        for j in range(m):
            mean[j] += X[i, j]
    mean /= n
    for i in range(n):
        for j in range(m):
            X[i, j] -= mean[j]
    np.dot(X.T, X, cov)
    cov /= n - 1.0


@numba.njit(parallel=True)
def covariance_matrix_run1(X, mean, cov):
    n = X.shape[0]
    for j in prange(X.shape[1]):
        mean[j] = X[:, j].sum() / n
    for i in prange(n):
        X[i, :] -= mean
    cov[:] = (X.T @ X) / (n - 1.0)


@numba.njit
def correlation_matrix_blas(X, mean, std, corr):
    """Answer key: row-wise sums and squared deviations, standardization in one pass,
    ``np.dot(X.T, X, corr)``, plain njit.

    Tried: ``split`` (parallel standardization then BLAS: 63 ms), ``run1`` (``parallel=True``
    with column temporaries: 83 ms). Kept: 0.99 ms (serial loop 56 ms).
    """
    n, m = X.shape
    mean[:] = 0.0
    std[:] = 0.0
    for i in range(n):
        for j in range(m):
            mean[j] += X[i, j]
    mean /= n
    for i in range(n):
        for j in range(m):
            d = X[i, j] - mean[j]
            std[j] += d * d
    sq = math.sqrt(float(n))
    for j in range(m):
        s = math.sqrt(std[j] / n)
        std[j] = s if s > 0.1 else 1.0
    for i in range(n):
        for j in range(m):
            X[i, j] = (X[i, j] - mean[j]) / (sq * std[j])
    np.dot(X.T, X, corr)
    for a in range(m):
        corr[a, a] = 1.0


@numba.njit(parallel=True)
def _standardize(X, mean, std):
    n, m = X.shape
    nt = numba.get_num_threads()
    part = np.zeros((nt, m))
    step = (n + nt - 1) // nt
    for t in prange(nt):
        for i in range(t * step, min((t + 1) * step, n)):
            for j in range(m):
                part[t, j] += X[i, j]
    for j in range(m):
        mean[j] = part[:, j].sum() / n
    part[:] = 0.0
    for t in prange(nt):
        for i in range(t * step, min((t + 1) * step, n)):
            for j in range(m):
                d = X[i, j] - mean[j]
                part[t, j] += d * d
    sq = math.sqrt(float(n))
    for j in range(m):
        s = math.sqrt(part[:, j].sum() / n)
        std[j] = s if s > 0.1 else 1.0
    for i in prange(n):
        for j in range(m):
            X[i, j] = (X[i, j] - mean[j]) / (sq * std[j])


@numba.njit
def correlation_matrix_split(X, mean, std, corr):
    _standardize(X, mean, std)
    _gram(X, 1.0, corr)
    for a in range(X.shape[1]):
        corr[a, a] = 1.0


@numba.njit(parallel=True)
def correlation_matrix_run1(X, mean, std, corr):
    n, m = X.shape
    for j in prange(m):
        col = X[:, j]
        mu = col.sum() / n
        d = col - mu
        s = np.sqrt((d * d).sum() / n)
        mean[j] = mu
        std[j] = s if s > 0.1 else 1.0
    scale = np.sqrt(float(n)) * std
    for i in prange(n):
        X[i, :] = (X[i, :] - mean) / scale
    corr[:] = X.T @ X
    for a in range(m):
        corr[a, a] = 1.0


# -- nearest centroid ----------------------------------------------------------------------------


@numba.njit(parallel=True)
def nearest_centroid_prange(points, centers, labels, dist):
    """Answer key: prange over points, scalar inner loops, no temporaries.

    Tried: ``serial`` (the same loops, range), ``run1`` (a ``p - centers[c]`` temporary per pair:
    614-647 ms). On the loaded machine (load 6-10 on 2 cores) serial measured 44-50 ms against
    51-59 ms; the rows are independent and compute bound, so on a quiet 2-core machine the
    prange loop is the expert's choice. Kept, with that caveat.
    """
    n, d = points.shape
    for i in prange(n):
        best, best_d2 = 0, np.inf
        for c in range(centers.shape[0]):
            d2 = 0.0
            for f in range(d):
                diff = points[i, f] - centers[c, f]
                d2 += diff * diff
            if d2 < best_d2:
                best, best_d2 = c, d2
        labels[i] = best
        dist[i] = math.sqrt(best_d2)


@numba.njit
def nearest_centroid_serial(points, centers, labels, dist):
    n, d = points.shape
    for i in range(n):
        best, best_d2 = 0, np.inf
        for c in range(centers.shape[0]):
            d2 = 0.0
            for f in range(d):
                diff = points[i, f] - centers[c, f]
                d2 += diff * diff
            if d2 < best_d2:
                best, best_d2 = c, d2
        labels[i] = best
        dist[i] = math.sqrt(best_d2)


@numba.njit(parallel=True)
def nearest_centroid_run1(points, centers, labels, dist):
    n = points.shape[0]
    k = centers.shape[0]
    for i in prange(n):
        p = points[i]
        best, best_d2 = 0, np.inf
        for c in range(k):
            diff = p - centers[c]
            d2 = (diff * diff).sum()
            if d2 < best_d2:
                best, best_d2 = c, d2
        labels[i] = best
        dist[i] = np.sqrt(best_d2)


# -- column z-scores -----------------------------------------------------------------------------


@numba.njit(parallel=True)
def column_zscore_prange(X, Z):
    rows, cols = X.shape
    nt = numba.get_num_threads()
    part = np.zeros((nt, cols))
    step = (rows + nt - 1) // nt
    for t in prange(nt):  # private column sums per chunk of rows, unit-stride
        for i in range(t * step, min((t + 1) * step, rows)):
            for j in range(cols):
                part[t, j] += X[i, j]
    mu = np.empty(cols)
    for j in range(cols):
        mu[j] = part[:, j].sum() / rows
    part[:] = 0.0
    for t in prange(nt):
        for i in range(t * step, min((t + 1) * step, rows)):
            for j in range(cols):
                d = X[i, j] - mu[j]
                part[t, j] += d * d
    sd = np.empty(cols)
    for j in range(cols):
        sd[j] = np.sqrt(part[:, j].sum() / rows)
    for i in prange(rows):
        for j in range(cols):
            Z[i, j] = (X[i, j] - mu[j]) / sd[j]


@numba.njit(parallel=True)
def column_zscore_run1(X, Z):
    """Answer key: prange over columns (a column slice summed into contiguous temporaries),
    then prange over rows writing Z.

    Tried: ``prange`` (row chunks with private column sums, unit stride: 44-69 ms). Kept: 2.0-14 ms.
    """
    rows, cols = X.shape
    mu = np.empty(cols)
    sd = np.empty(cols)
    for j in prange(cols):
        c = X[:, j]
        mu[j] = c.sum() / rows
        dv = c - mu[j]
        sd[j] = np.sqrt((dv * dv).sum() / rows)
    for i in prange(rows):
        Z[i, :] = (X[i, :] - mu) / sd


# -- histogram -----------------------------------------------------------------------------------


@numba.njit(parallel=True)
def value_histogram_prange(x, lo, hi, counts):
    """Answer key: one private histogram row per thread (prange over chunks), summed at the end.

    Tried: ``serial`` (the loop): 22-31 ms vs 65-67 ms on the loaded machine; the quiet run
    gave the private-histogram design 5.0 ms against 10.3 ms serial. Kept.
    """
    nbins = counts.shape[0]
    width = (hi - lo) / nbins
    nchunk = numba.get_num_threads()
    part = np.zeros((nchunk, nbins), dtype=counts.dtype)
    step = (x.shape[0] + nchunk - 1) // nchunk
    for t in prange(nchunk):  # one private histogram per chunk
        for i in range(t * step, min((t + 1) * step, x.shape[0])):
            b = int((x[i] - lo) / width)
            if b >= 0 and b < nbins:
                part[t, b] += 1
    counts += part.sum(axis=0)


@numba.njit
def value_histogram_serial(x, lo, hi, counts):
    nbins = counts.shape[0]
    width = (hi - lo) / nbins
    for i in range(x.shape[0]):
        b = int((x[i] - lo) / width)
        if b >= 0 and b < nbins:
            counts[b] += 1
