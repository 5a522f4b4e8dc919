"""Kernels for tests/test_offload_argmin_speed.py (module-level: the analysis reads them)."""

import math

import numpy as np


def carried_best(X, C, lab):
    """The index is not reset per row: a row without a smaller distance keeps the previous
    row's index, so rows depend on each other (no parallel form)."""
    best = 0
    for i in range(X.shape[0]):
        bd = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += (X[i, f] - C[c, f]) ** 2
            if d < bd:
                bd = d
                best = c
        lab[i] = best


def shared_element(X, C, out):
    """Every row writes out[0]: the last row's value wins (no parallel form)."""
    for i in range(X.shape[0]):
        best = 0
        bd = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                t = X[i, f] - C[c, f]
                d += t * t
            if d < bd:
                bd = d
                best = c
        out[0] = best


def reads_its_output(X, C, lab, prev):
    """Reads lab (written by the nest) in the row: no parallel form."""
    for i in range(X.shape[0]):
        best = lab[i]
        bd = np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += abs(X[i, f] - C[c, f])
            if d < bd:
                bd = d
                best = c
        lab[i] = best
        prev[i] = bd


def manhattan(X, C, lab, dist, scale):
    """L1 distance, a scalar parameter, a row offset in the loop bounds."""
    for i in range(1, X.shape[0]):
        best = -1
        bd = math.inf
        for c in range(C.shape[0]):
            d = 0.0
            for f in range(X.shape[1]):
                d += abs(X[i, f] - C[c, f])
            if d < bd:
                bd = d
                best = c
        lab[i] = best
        dist[i, 0] = scale * bd


def outer_scaled(a, x, y, P):
    for i in range(x.shape[0]):
        xi = a * x[i]
        for j in range(y.shape[0]):
            P[i, j] = xi * y[j]


def row_abs_sums(X, s):
    """Rows summed: prange over rows, each row's sum in column order."""
    for i in range(X.shape[0]):
        t = 0.0
        for j in range(X.shape[1]):
            t += abs(X[i, j] - 0.5)
        s[i] = t
