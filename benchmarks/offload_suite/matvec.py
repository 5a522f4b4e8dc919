"""Matrix-vector kernels as plain loops: Aᵀ(Ax), Ax and Aᵀy in one sweep, paired updates,
GEMV with α/β on two matrices, rank-1/rank-2 updates and an outer product."""

from __future__ import annotations

import numpy as np

from . import designs_vec as _d
from ._spec import SuiteKernel, rng


# -- y = Aᵀ (A x) through a temporary, y accumulated by array element --------------------------
def normal_matvec(A, x, y, tmp):
    """tmp = A @ x; y = A.T @ tmp. A (m, n), x (n,), y (n,), tmp (m,) float64, in place."""
    m, n = A.shape
    for j in range(n):
        y[j] = 0.0
    for i in range(m):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(n):
            y[j] = y[j] + A[i, j] * tmp[i]


def args_normal(n, seed):
    g = rng(seed)
    return (g.random((n + 30, n)), g.random(n), np.zeros(n), np.zeros(n + 30))


# -- q = A p and s = Aᵀ r in one sweep ---------------------------------------------------------
def dual_matvec(A, p, r, q, s):
    """q = A @ p and s = A.T @ r in one pass over A (N, M); q (N,), s (M,) written."""
    N = A.shape[0]
    M = A.shape[1]
    for j in range(M):
        s[j] = 0.0
    for i in range(N):
        q[i] = 0.0
        for j in range(M):
            s[j] += r[i] * A[i, j]
            q[i] += A[i, j] * p[j]


def args_dual(n, seed):
    g = rng(seed)
    return (g.random((n, n + 25)), g.random(n + 25), g.random(n), np.zeros(n),
            np.zeros(n + 25))


# -- x1 += A y1 and x2 += Aᵀ y2, written x = x + … ---------------------------------------------
def matvec_pair_update(x1, x2, y1, y2, A):
    """x1 += A @ y1; x2 += A.T @ y2 for A (n, n), all vectors (n,) float64."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            x1[i] = x1[i] + A[i, j] * y1[j]
    for i in range(n):
        for j in range(n):
            x2[i] = x2[i] + A[j, i] * y2[j]


def args_pair(n, seed):
    g = rng(seed)
    return (g.random(n), g.random(n), g.random(n), g.random(n), g.random((n, n)))


# -- y = alpha A x + beta B x -------------------------------------------------------------------
def scaled_two_gemv(alpha, beta, A, B, x, y, t):
    """t = A @ x; y = alpha * t + beta * (B @ x). A, B (n, n), x, y, t (n,) float64."""
    n = x.shape[0]
    for i in range(n):
        t[i] = 0.0
        y[i] = 0.0
        for j in range(n):
            t[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * t[i] + beta * y[i]


def args_gemv2(n, seed):
    g = rng(seed)
    return (1.5, 1.2, g.random((n, n)), g.random((n, n)), g.random(n), np.zeros(n),
            np.zeros(n))


# -- rank-2 update followed by a matvec with it -------------------------------------------------
def rank_two_update(A, u1, v1, u2, v2, w, x):
    """A += u1 v1ᵀ + u2 v2ᵀ, then w = A @ x (A (n, n), vectors (n,), float64; A, w written)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + u1[i] * v1[j] + u2[i] * v2[j]
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        w[i] = s


def args_rank2(n, seed):
    g = rng(seed)
    return (g.random((n, n)), g.random(n), g.random(n), g.random(n), g.random(n), np.zeros(n),
            g.random(n))


# -- scaled outer product -----------------------------------------------------------------------
def outer_scaled(a, x, y, P):
    """P = a * outer(x, y); x (n,), y (m,), P (n, m) float64 written."""
    for i in range(x.shape[0]):
        xi = a * x[i]
        for j in range(y.shape[0]):
            P[i, j] = xi * y[j]


def args_outer(n, seed):
    g = rng(seed)
    return (0.75, g.random(n), g.random(n + 7), np.zeros((n, n + 7)))


# the answer keys: the design of designs_vec kept for each kernel (README.md says why)
normal_matvec_hand = _d.normal_matvec_blas
dual_matvec_hand = _d.dual_matvec_blas
matvec_pair_update_hand = _d.matvec_pair_update_blas
scaled_two_gemv_hand = _d.scaled_two_gemv_blas
rank_two_update_hand = _d.rank_two_update_blas
outer_scaled_hand = _d.outer_scaled_prange

KERNELS = [
    SuiteKernel("normal_matvec", "linalg", normal_matvec, args_normal, normal_matvec_hand,
                2800, 7, ("j", "j"), True,
                "y[j] += A[i, j] * tmp[i] inside the i loop: an array-element reduction"),
    SuiteKernel("dual_matvec", "linalg", dual_matvec, args_dual, dual_matvec_hand, 2000, 7,
                ("j",), True, "Ax and Aᵀy fused in one j loop; s[j] reduced over i"),
    SuiteKernel("matvec_pair_update", "linalg", matvec_pair_update, args_pair,
                matvec_pair_update_hand, 2000, 7, ("i", "i"), True,
                "x1[i] = x1[i] + … form; the second nest reads A transposed (strided)"),
    SuiteKernel("scaled_two_gemv", "linalg", scaled_two_gemv, args_gemv2,
                scaled_two_gemv_hand, 2000, 7, ("i",), True,
                "two GEMVs fused in one j loop, α/β epilogue on the row"),
    SuiteKernel("rank_two_update", "blas", rank_two_update, args_rank2, rank_two_update_hand,
                2600, 7, ("i", "j", "i"), True,
                "rank-2 update then a matvec on the updated matrix"),
    SuiteKernel("outer_scaled", "blas", outer_scaled, args_outer, outer_scaled_hand, 3200, 7,
                ("i", "j"), True, "scalar temporary hoisted out of the inner loop"),
]
