"""Level-1 BLAS-like loops (dot, axpy, scal) and tensor contractions with a temporary."""

from __future__ import annotations

import numpy as np

from . import designs_vec as _d
from ._spec import SuiteKernel, rng


# -- dot product returned as a scalar -----------------------------------------------------------
def dot_loop(x, y):
    """Return sum(x * y) for x, y (n,) float64."""
    total = 0.0
    for i in range(len(x)):
        total += x[i] * y[i]
    return total


def args_vec2(n, seed):
    g = rng(seed)
    return (g.random(n), g.random(n))


# -- axpy into a third array -------------------------------------------------------------------
def axpy_loop(alpha, x, y, z):
    """z = alpha * x + y; x, y, z (n,) float64, z written."""
    n = x.shape[0]
    for i in range(0, n):
        z[i] = alpha * x[i] + y[i]


def args_axpy(n, seed):
    g = rng(seed)
    return (0.5, g.random(n), g.random(n), np.zeros(n))


# -- scal: in-place scaling with *= --------------------------------------------------------------
def scal_loop(alpha, x):
    """x *= alpha in place, x (n,) float64."""
    for i in range(x.size):
        x[i] *= alpha


def args_scal(n, seed):
    return (1.0001, rng(seed).random(n))


# -- 4-index contraction A[r, q, :] = A[r, q, :] @ W through a shared temporary -----------------
def block_transform(A, W, acc):
    """A[r, q, p] = sum_s A[r, q, s] * W[s, p] in place; A (nr, nq, np), W (np, np), acc (np,)."""
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                acc[p] = 0.0
                for s in range(npp):
                    acc[p] += A[r, q, s] * W[s, p]
            for p in range(npp):
                A[r, q, p] = acc[p]


def args_block(n, seed):
    g = rng(seed)
    return (g.random((n // 2 + 1, n // 2 + 3, n)), g.random((n, n)), np.zeros(n))


# -- mode-2 tensor product into a fresh tensor, written with a scalar temporary ----------------
def mode2_product(X, M, Y):
    """Y[a, b, c] = sum_l M[b, l] * X[a, l, c]; X (na, nl, nc), M (nb, nl), Y (na, nb, nc)."""
    na = X.shape[0]
    nl = X.shape[1]
    nc = X.shape[2]
    nb = M.shape[0]
    for a in range(na):
        for b in range(nb):
            for c in range(nc):
                t = 0.0
                for l in range(nl):  # noqa: E741
                    t += M[b, l] * X[a, l, c]
                Y[a, b, c] = t


def args_mode2(n, seed):
    g = rng(seed)
    return (g.random((n, n + 2, n + 4)), g.random((n + 6, n + 2)), np.zeros((n, n + 6, n + 4)))


# the answer keys: the design of designs_vec kept for each kernel (README.md says why)
dot_loop_hand = _d.dot_loop_prange
axpy_loop_hand = _d.axpy_loop_prange
scal_loop_hand = _d.scal_loop_prange
block_transform_hand = _d.block_transform_blas
mode2_product_hand = _d.mode2_product_run1

KERNELS = [
    SuiteKernel("dot_loop", "blas", dot_loop, args_vec2, dot_loop_hand, 6_000_000, 50, ("i",),
                True, "len(x) bound; a scalar sum returned"),
    SuiteKernel("axpy_loop", "blas", axpy_loop, args_axpy, axpy_loop_hand, 4_000_000, 50,
                ("i",), True, "range(0, n); memory bound"),
    SuiteKernel("scal_loop", "blas", scal_loop, args_scal, scal_loop_hand, 16_000_000, 50,
                ("i",), True, "x.size bound, *= in place; memory bound"),
    SuiteKernel("block_transform", "linalg", block_transform, args_block, block_transform_hand,
                100, 6, ("r", "q", "p"), True,
                "4-index contraction; acc[p] shared across (r, q): privatizing it frees r, q"),
    SuiteKernel("mode2_product", "linalg", mode2_product, args_mode2, mode2_product_hand, 70, 5,
                ("a", "b", "c"), True,
                "3-index contraction over the middle index, scalar temporary, strided X read"),
]
