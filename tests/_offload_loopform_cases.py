"""Kernels for tests/test_offload_loopform.py (module-level: the analysis reads their source)."""

import numpy as np


def col_rms(X, out):
    """Column root mean squares, columns outer (strided as written), ``v = v + …``."""
    n = X.shape[0]
    for j in range(X.shape[1]):
        v = 0.0
        for i in range(n):
            v = v + X[i, j] ** 2
        out[j] = np.sqrt(v / n)


def zscore(X, Z):
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


def row_sq_sums(X, out):
    """Rows outer: already in storage order."""
    for i in range(X.shape[0]):
        out[i] = 0.0
        for j in range(X.shape[1]):
            out[i] += X[i, j] * X[i, j] + 1.0


def col_sums_int(X, out):
    """An integer accumulator: its dtype is not known to the emitter, NumPy form kept."""
    for j in range(X.shape[1]):
        s = 0
        for i in range(X.shape[0]):
            s += X[i, j]
        out[j] = s


def col_sums_offset(X, out):
    """Loops starting at 1: a temporary indexed by the loop variable is refused."""
    for j in range(1, X.shape[1]):
        s = 0.0
        for i in range(1, X.shape[0]):
            s += X[i, j]
        out[j] = s


def product(A, B, C):
    """A contraction: stays a BLAS call."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def transpose(A, B):
    """A same-shape map: numba's slice assignment is a loop already."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[j, i] = A[i, j]


def col_sums_sized(X, out):
    """``cols`` is always a size: slices up to it need no ``max(cols, 0)``."""
    rows = X.shape[0]
    cols = X.shape[1]
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        out[j] = s


def col_sums_param(X, out, cols):
    """``cols`` is a parameter: it may be negative, the slice keeps ``max(cols, 0)``."""
    rows = X.shape[0]
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        out[j] = s


def col_sums_reassigned(X, out, k):
    """``cols`` is a size once, then ``k - 1``: not always a size."""
    rows = X.shape[0]
    cols = X.shape[1]
    if k < 0:
        cols = k - 1
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        out[j] = s


def col_sums_unpacked(X, out):
    """``rows, cols = X.shape``: both sizes."""
    rows, cols = X.shape
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        out[j] = s


def col_sums_unpacked_tuple(X, out, t):
    """``rows, cols = t``: a tuple argument, not a shape: may be negative."""
    rows, cols = t
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        out[j] = s
