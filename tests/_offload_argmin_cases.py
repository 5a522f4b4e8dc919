"""Kernels for tests/test_offload_argmin.py: argmin/argmax reductions (the k-means assignment)
in several writing styles, and near misses that must stay loops."""

import math

import numpy as np


def assign(X, C, lab, dist):
    n, m = X.shape
    for i in range(n):
        best = 0
        best_d = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(m):
                t = X[i, f] - C[c, f]
                d += t * t
            if d < best_d:
                best_d = d
                best = c
        lab[i] = best
        dist[i] = math.sqrt(best_d)


def assign_direct(X, C, lab):
    """The issue's form: label written inside the branch, ** 2, comparison reversed."""
    for i in range(X.shape[0]):
        best = math.inf
        lab[i] = -1
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if best > d:
                best = d
                lab[i] = c


def farthest(X, C, lab):
    for i in range(X.shape[0]):
        worst = -np.inf
        for c in range(1, C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += abs(X[i, f] - C[c, f])
            if d > worst:
                worst = d
                lab[i] = c


# -- near misses ----------------------------------------------------------------------------
def nm_non_strict(X, C, lab):
    """<= keeps the last minimum: not np.argmin's first."""
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d <= best:
                best = d
                lab[i] = c


def nm_writes_what_it_reads(X, C, lab):
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d < best:
                best = d
                lab[i] = c
        X[i, 0] = best  # later rows' distances would not see this


def nm_exp(X, C, lab):
    """np.exp in NumPy and libm may differ in the last bit: not vectorized."""
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += math.exp(X[i, f] - C[c, f])
            if d < best:
                best = d
                lab[i] = c


def nm_else(X, C, lab, cnt):
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d < best:
                best = d
                lab[i] = c
            else:
                cnt[0] += 1


def nm_step(X, C, lab):
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(0, C.shape[0], 2):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d < best:
                best = d
                lab[i] = c


def nm_view(X, C, lab):
    V = X[:, 0]  # a view of X written below
    for i in range(X.shape[0]):
        best = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d < best:
                best = d
                lab[i] = c
        V[i] = best
