"""Data-mining loops: covariance, correlation (``from math import sqrt``), a k-means
assignment step (``math.sqrt``), column z-scores (``np.sqrt``) and a histogram."""

from __future__ import annotations

import math
from math import sqrt

import numpy as np

from . import designs_other as _d
from ._spec import SuiteKernel, rng


# -- covariance, both triangles written in one iteration ---------------------------------------
def covariance_matrix(X, mean, cov):
    """Sample covariance of the columns of X (n, m): mean (m,), cov (m, m); X centered in place."""
    n, m = X.shape
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += X[i, j]
        mean[j] /= n
    for i in range(n):
        for j in range(m):
            X[i, j] -= mean[j]
    for a in range(m):
        for b in range(a, m):
            c = 0.0
            for i in range(n):
                c += X[i, a] * X[i, b]
            c = c / (n - 1.0)
            cov[a, b] = c
            cov[b, a] = c


def args_cov(n, seed):
    g = rng(seed)
    return (g.random((n + 40, n)), np.zeros(n), np.zeros((n, n)))


# -- correlation with means and standard deviations ----------------------------------------------
def correlation_matrix(X, mean, std, corr):
    """Pearson correlation of the columns of X (n, m); mean, std (m,), corr (m, m) written.

    X is standardized in place; a column of (near) zero spread gets std 1.
    """
    n = X.shape[0]
    m = X.shape[1]
    eps = 0.1
    for j in range(m):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += X[i, j]
        mean[j] = mean[j] / n
    for j in range(m):
        std[j] = 0.0
        for i in range(n):
            std[j] += (X[i, j] - mean[j]) * (X[i, j] - mean[j])
        std[j] = sqrt(std[j] / n)
        if std[j] <= eps:
            std[j] = 1.0
    for i in range(n):
        for j in range(m):
            X[i, j] = (X[i, j] - mean[j]) / (sqrt(float(n)) * std[j])
    for a in range(m - 1):
        corr[a, a] = 1.0
        for b in range(a + 1, m):
            corr[a, b] = 0.0
            for i in range(n):
                corr[a, b] += X[i, a] * X[i, b]
            corr[b, a] = corr[a, b]
    corr[m - 1, m - 1] = 1.0


def args_corr(n, seed):
    g = rng(seed)
    X = g.random((n + 40, n))
    X[:, 1] = 0.25  # one constant column: the eps branch
    return (X, np.zeros(n), np.zeros(n), np.zeros((n, n)))


# -- k-means assignment step ------------------------------------------------------------------
def nearest_centroid(points, centers, labels, dist):
    """labels[i] = index of the nearest center, dist[i] its distance (math.sqrt).

    points (n, d), centers (k, d) float64; labels (n,) int64 and dist (n,) float64 written.
    """
    n, d = points.shape
    k = centers.shape[0]
    for i in range(n):
        best = 0
        best_d2 = np.inf
        for c in range(k):
            d2 = 0.0
            for f in range(d):
                diff = points[i, f] - centers[c, f]
                d2 += diff * diff
            if d2 < best_d2:
                best_d2 = d2
                best = c
        labels[i] = best
        dist[i] = math.sqrt(best_d2)


def args_kmeans(n, seed):
    g = rng(seed)
    return (g.random((n, 8)), g.random((16, 8)), np.zeros(n, dtype=np.int64), np.zeros(n))


# -- column z-scores written into a new array ---------------------------------------------------
def column_zscore(X, Z):
    """Z = (X - column mean) / column std (np.sqrt); X (n, m) float64 read, Z (n, m) written."""
    rows = X.shape[0]
    cols = X.shape[1]
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        mu = s / rows
        v = 0.0
        for i in range(rows):
            v += (X[i, j] - mu) ** 2
        sd = np.sqrt(v / rows)
        for i in range(rows):
            Z[i, j] = (X[i, j] - mu) / sd


def args_zscore(n, seed):
    g = rng(seed)
    return (g.random((n, n // 2 + 3)), np.zeros((n, n // 2 + 3)))


# -- histogram of values in [lo, hi) ------------------------------------------------------------
def value_histogram(x, lo, hi, counts):
    """counts[b] += 1 for each x in bin b of len(counts) equal bins over [lo, hi); outside: none."""
    nbins = counts.shape[0]
    width = (hi - lo) / nbins
    for i in range(x.shape[0]):
        b = int((x[i] - lo) / width)
        if b >= 0 and b < nbins:
            counts[b] += 1


def args_hist(n, seed):
    g = rng(seed)
    return (g.normal(0.0, 1.0, n), -3.0, 3.0, np.zeros(64, dtype=np.int64))


# the answer keys: the design of designs_other kept for each kernel (README.md says why)
covariance_matrix_hand = _d.covariance_matrix_blas
correlation_matrix_hand = _d.correlation_matrix_blas
nearest_centroid_hand = _d.nearest_centroid_prange
column_zscore_hand = _d.column_zscore_run1
value_histogram_hand = _d.value_histogram_prange

KERNELS = [
    SuiteKernel("covariance_matrix", "datamining", covariance_matrix, args_cov,
                covariance_matrix_hand, 380, 6, ("j", "i", "j", "a", "b"), True,
                "cov[a, b] and cov[b, a] in one iteration (coupled subscripts); mean[j] += …"),
    SuiteKernel("correlation_matrix", "datamining", correlation_matrix, args_corr,
                correlation_matrix_hand, 360, 6, ("j", "j", "i", "j", "a", "b"), True,
                "from math import sqrt; a branch on the spread; corr[a, b] accumulated in place"),
    SuiteKernel("nearest_centroid", "datamining", nearest_centroid, args_kmeans,
                nearest_centroid_hand, 300_000, 9, ("i",), True,
                "argmin with a branch, math.sqrt, int64 labels"),
    SuiteKernel("column_zscore", "datamining", column_zscore, args_zscore, column_zscore_hand,
                1400, 6, ("j", "i"), True,
                "np.sqrt, ** 2, column-wise (strided) traversal of a C-ordered array"),
    SuiteKernel("value_histogram", "datamining", value_histogram, args_hist,
                value_histogram_hand, 3_000_000, 60, (), False,
                "data-dependent write counts[b]: parallel only with private histograms "
                "(the hand-written key does that)"),
]
