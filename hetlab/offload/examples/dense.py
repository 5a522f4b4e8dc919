"""Dense linear-algebra loop kernels in PolyBench-port style (plain loops over NumPy arrays).

Each kernel works in place on its output arguments (PolyBench's convention) or returns a scalar;
``EXPECTED`` in :mod:`hetlab.offload.examples` lists the verdict of every loop.
"""

from __future__ import annotations

import numpy as np


def matmul(A, B, C):
    """C = A @ B for A (n, m), B (m, p), C (n, p) float64; the k loop is a scalar reduction."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def matvec(A, x, y):
    """y = A @ x for A (n, m), x (m,), y (n,) float64."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s


def axpy(a, x, y):
    """y = a * x + y in place, x and y (n,) float64."""
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def dot(x, y):
    """Return sum(x * y) for x, y (n,) float64 (a loop-carried sum: a reduction)."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def covariance(data, mean, cov):
    """PolyBench covariance: data (n, m) is centered in place, mean (m,), cov (m, m)."""
    n = data.shape[0]
    m = data.shape[1]
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += data[i, j]
        mean[j] = s / n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    for i in range(m):
        for j in range(i, m):
            s = 0.0
            for k in range(n):
                s += data[k, i] * data[k, j]
            cov[i, j] = s / (n - 1.0)
            cov[j, i] = cov[i, j]


def lu(A):
    """In-place LU decomposition without pivoting (Doolittle), A (n, n) diagonally dominant."""
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]


def trisolv(L, b, x):
    """Forward substitution L x = b, L (n, n) lower triangular with a nonzero diagonal."""
    for i in range(x.shape[0]):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


def floyd_warshall(d):
    """All-pairs shortest paths in place on d (n, n) float64 (no negative cycles).

    Parallel in i and j in truth (row and column k do not change during step k), but no
    affine dependence test can prove it: the conservative verdict is sequential.
    """
    n = d.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                d[i, j] = min(d[i, j], d[i, k] + d[k, j])


def transpose(A, B):
    """B = A.T for A (n, m), B (m, n)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[j, i] = A[i, j]


def _rng(size: int, seed: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, size])


def args_matmul(n: int = 24, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n + 3)), r.random((n + 3, n + 1)), np.zeros((n, n + 1))


def args_matvec(n: int = 40, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n + 5)), r.random(n + 5), np.zeros(n)


def args_axpy(n: int = 100, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return 1.5, r.random(n), r.random(n)


def args_dot(n: int = 100, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random(n), r.random(n)


def args_covariance(n: int = 30, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    m = max(n // 2, 2)
    return r.random((n, m)), np.zeros(m), np.zeros((m, m))


def args_lu(n: int = 20, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return (r.random((n, n)) + n * np.eye(n),)


def args_trisolv(n: int = 30, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return np.tril(r.random((n, n))) + np.eye(n), r.random(n), np.zeros(n)


def args_floyd_warshall(n: int = 16, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    d = r.random((n, n)) * 10
    np.fill_diagonal(d, 0.0)
    return (d,)


def args_transpose(n: int = 30, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n + 2)), np.zeros((n + 2, n))
