"""A ninth held-out probe of the offload search, with answer keys (``heldout_probe9_keys.py``):
NUMPY ON ROWS INSIDE LOOPS, the way data-mining code is spelled by people who know NumPy but
loop over samples — a squared distance ``np.sum((X[i] - C[k]) ** 2)`` per pair, ``.sum()``
called on a row expression, ``np.linalg.norm(X[i] - X[j])``, ``np.dot`` and ``@`` of two rows,
``np.mean`` of a row, small helpers returning such a reduction (``_euclid(X[i], X[j])``),
helpers that write the row they are given, a scatter of rows into centroids, a division by a
variance row.

Every verdict was decided from the code's semantics, not from the engine's output:
``parallel``/``reduction`` loops are safe in any order; ``serial`` loops carry a true dependence
(a running minimum and the index that reached it, a scatter into shared rows); ``limits`` names
loops parallel in truth which the engine keeps serial, with the reason. ``key`` is the expert
numba version of the same computation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import heldout_probe9_keys as keys
from .heldout_probe4 import Probe4


@dataclass(frozen=True)
class Probe9(Probe4):
    """A :class:`Probe4` (kernel, maker, verdicts, sizes, limits, answer key)."""


# -- helpers the kernels call ----------------------------------------------------------------------
def _euclid(a, b):
    """The Euclidean distance of two rows (a pure helper building NumPy temporaries)."""
    return np.sqrt(np.sum((a - b) ** 2))


def _weighted_rms(v, w):
    """The root of the w-weighted mean square of row v."""
    return np.sqrt(np.mean(w * v * v))


def _center_in_place(row):
    """Subtracts the row's mean from it, in place (a helper writing its argument)."""
    m = np.mean(row)
    for j in range(row.shape[0]):
        row[j] = row[j] - m


# -- nearest centers and neighbours ----------------------------------------------------------------
def assign_to_nearest_center(X, C, labels):
    """labels[i] = the center nearest to sample i (squared distance of two rows summed by
    ``np.sum``; the first center on ties)."""
    for i in range(X.shape[0]):
        best = np.inf
        for k in range(C.shape[0]):
            d = np.sum((X[i] - C[k]) ** 2)
            if d < best:
                best = d
                labels[i] = k


def manhattan_nearest(X, Y, idx):
    """idx[i] = the row of Y nearest to X[i] in the L1 distance (``np.abs`` of a row
    difference summed with ``.sum()``)."""
    for i in range(X.shape[0]):
        best = np.inf
        for j in range(Y.shape[0]):
            d = np.abs(X[i] - Y[j]).sum()
            if d < best:
                best = d
                idx[i] = j


def neighbors_within_radius(X, r, counts):
    """counts[i] = how many samples (i included) lie within distance r of sample i."""
    for i in range(X.shape[0]):
        c = 0
        for j in range(X.shape[0]):
            if np.sum((X[i] - X[j]) ** 2) <= r * r:
                c += 1
        counts[i] = c


# -- pairwise matrices -----------------------------------------------------------------------------
def pairwise_distance_helper(X, D):
    """D[i, j] = |X[i] − X[j]| through the pure helper ``_euclid``."""
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            D[i, j] = _euclid(X[i], X[j])


def pairwise_norm_matrix(X, D):
    """D[i, j] = ``np.linalg.norm(X[i] - X[j])``."""
    n = X.shape[0]
    for i in range(n):
        for j in range(n):
            D[i, j] = np.linalg.norm(X[i] - X[j])


def cosine_similarity_rows(X, S):
    """S[i, j] = the cosine of the angle between rows i and j (``np.dot`` over norms)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            S[i, j] = np.dot(X[i], X[j]) / (np.linalg.norm(X[i]) * np.linalg.norm(X[j]))


def rbf_gram_rows(X, gamma, K):
    """K[i, j] = exp(−γ |X[i] − X[j]|²)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            K[i, j] = np.exp(-gamma * np.sum((X[i] - X[j]) ** 2))


# -- per-row statistics ----------------------------------------------------------------------------
def standardize_rows_stats(A):
    """Each row to zero mean and unit (population) deviation, in place, from ``np.mean``."""
    for i in range(A.shape[0]):
        mu = np.mean(A[i])
        sd = np.sqrt(np.mean((A[i] - mu) ** 2))
        A[i] = (A[i] - mu) / sd


def weighted_rms_rows(A, w, out):
    """out[i] = the w-weighted RMS of row i through the helper ``_weighted_rms``."""
    for i in range(A.shape[0]):
        out[i] = _weighted_rms(A[i], w)


def row_projection_residual(A, u, R):
    """R[i] = A[i] minus its projection on the unit vector u (``A[i] @ u``)."""
    for i in range(A.shape[0]):
        c = A[i] @ u
        R[i] = A[i] - c * u


def center_rows_by_helper(A):
    """Each row centred in place by a helper that writes the row it is given."""
    for i in range(A.shape[0]):
        _center_in_place(A[i])


def diagonal_mahalanobis(X, mu, var, out):
    """out[i] = Σ (X[i] − mu)² / var, the variance a row (``/`` by an array)."""
    for i in range(X.shape[0]):
        out[i] = np.sum((X[i] - mu) ** 2 / var)


def centroid_sums_scatter(X, labels, C, counts):
    """C[k] += X[i] and counts[k] += 1 for k = labels[i]: rows scattered into shared sums."""
    for i in range(X.shape[0]):
        k = labels[i]
        C[k] += X[i]
        counts[k] += 1


# -- inputs ----------------------------------------------------------------------------------------
def _centers(g, n):
    d, k = 8, max(1, min(n, 16))
    return g.random((n, d)), g.random((k, d)), np.full(n, -1, dtype=np.int64)


def _two_sets(g, n):
    return g.random((n, 6)), g.random((max(1, min(n, 50)), 6)), np.full(n, -1, dtype=np.int64)


def _points(g, n):
    return g.random((n, 3)), 0.3, np.zeros(n, dtype=np.int64)


def _square(d):
    def make(g, n):
        return g.random((n, d)) + 0.05, np.zeros((n, n))
    return make


def _rbf(g, n):
    return g.random((n, 4)), 0.7, np.zeros((n, n))


def _rows(g, n):
    return (g.random((n, 64)) * 3.0 + g.random((n, 1)),)


def _weighted(g, n):
    return g.random((n, 32)), g.random(32), np.zeros(n)


def _projection(g, n):
    u = g.random(32)
    return g.random((n, 32)), u / np.linalg.norm(u), np.zeros((n, 32))


def _variances(g, n):
    return g.random((n, 8)), g.random(8), g.random(8) + 0.1, np.zeros(n)


def _scatter(g, n):
    k = max(1, min(n, 16))
    return (g.random((n, 8)), g.integers(0, k, n), np.zeros((k, 8)),
            np.zeros(k, dtype=np.int64))


PROBES: dict[str, Probe9] = {
    "assign_to_nearest_center": Probe9(
        assign_to_nearest_center, _centers, parallel=("L1",), serial=("L2",),
        key=keys.assign_to_nearest_center, moderate=20000),
    "manhattan_nearest": Probe9(
        manhattan_nearest, _two_sets, parallel=("L1",), serial=("L2",),
        key=keys.manhattan_nearest, moderate=6000),
    "neighbors_within_radius": Probe9(
        neighbors_within_radius, _points, parallel=("L1",), reduction=("L2",),
        key=keys.neighbors_within_radius, moderate=1500),
    "pairwise_distance_helper": Probe9(
        pairwise_distance_helper, _square(8), parallel=("L1", "L2"),
        key=keys.pairwise_distance_helper, moderate=500),
    "pairwise_norm_matrix": Probe9(
        pairwise_norm_matrix, _square(8), parallel=("L1", "L2"),
        key=keys.pairwise_norm_matrix, moderate=500),
    "cosine_similarity_rows": Probe9(
        cosine_similarity_rows, _square(16), parallel=("L1", "L2"),
        key=keys.cosine_similarity_rows, moderate=400),
    "rbf_gram_rows": Probe9(
        rbf_gram_rows, _rbf, parallel=("L1", "L2"), key=keys.rbf_gram_rows, moderate=500),
    "standardize_rows_stats": Probe9(
        standardize_rows_stats, _rows, parallel=("L1",), key=keys.standardize_rows_stats,
        moderate=4000),
    "weighted_rms_rows": Probe9(
        weighted_rms_rows, _weighted, parallel=("L1",), key=keys.weighted_rms_rows,
        moderate=8000),
    "row_projection_residual": Probe9(
        row_projection_residual, _projection, parallel=("L1",),
        key=keys.row_projection_residual, moderate=8000),
    "center_rows_by_helper": Probe9(
        center_rows_by_helper, _rows, parallel=("L1", "L2"), key=keys.center_rows_by_helper,
        moderate=4000),
    "diagonal_mahalanobis": Probe9(
        diagonal_mahalanobis, _variances, parallel=("L1",), key=keys.diagonal_mahalanobis,
        moderate=40000),
    "centroid_sums_scatter": Probe9(
        centroid_sums_scatter, _scatter, serial=("L1",), key=keys.centroid_sums_scatter,
        moderate=40000),
}
