"""Dense matrix products as plain loops: GEMM with α/β, chained products, symmetric and
triangular products with ``j <= i`` bounds. Hand-written keys use ``@`` and ``prange``."""

from __future__ import annotations

import numpy as np

from . import designs_dense as _d
from ._spec import SuiteKernel, rng


# -- GEMM, β applied first, i-k-j order, alpha outside the product -----------------------------
def gemm_beta_first(alpha, beta, C, A, B):
    """C = beta * C + alpha * A @ B; A (ni, nk), B (nk, nj), C (ni, nj) float64, in place."""
    ni = C.shape[0]
    nj = C.shape[1]
    nk = A.shape[1]
    for i in range(ni):
        for j in range(nj):
            C[i, j] *= beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] += alpha * A[i, k] * B[k, j]


def args_gemm(n, seed):
    g = rng(seed)
    return (1.5, 1.2, g.random((n, n + 10)), g.random((n, n + 20)), g.random((n + 20, n + 10)))


# -- GEMM, scalar accumulator, alpha inside the product, range(0, n) ---------------------------
def gemm_alpha_inside(alpha, beta, C, A, B, ni, nj, nk):
    """C[i, j] = beta * C[i, j] + sum_k alpha * A[i, k] * B[k, j]; sizes given as arguments."""
    for i in range(0, ni):
        for j in range(0, nj):
            acc = 0.0
            for k in range(0, nk):
                acc = acc + alpha * A[i, k] * B[k, j]
            C[i, j] = beta * C[i, j] + acc


def args_gemm_sized(n, seed):
    *arrays, = args_gemm(n, seed)
    C = arrays[2]
    return (*arrays, C.shape[0], C.shape[1], arrays[3].shape[1])


# -- two chained products with a temporary -----------------------------------------------------
def chain2(alpha, beta, tmp, A, B, C, D):
    """tmp = alpha * A @ B; D = beta * D + tmp @ C (all float64 2-D, in place on tmp and D)."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            tmp[i, j] = 0.0
            for k in range(A.shape[1]):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            D[i, j] *= beta
            for k in range(tmp.shape[1]):
                D[i, j] += tmp[i, k] * C[k, j]


def args_chain2(n, seed):
    g = rng(seed)
    ni, nj, nk, nl = n, n + 8, n + 16, n + 4
    return (1.5, 1.2, np.zeros((ni, nj)), g.random((ni, nk)), g.random((nk, nj)),
            g.random((nj, nl)), g.random((ni, nl)))


# -- three chained products, range(0, N) bounds ------------------------------------------------
def chain3(E, A, B, F, C, D, G):
    """E = A @ B; F = C @ D; G = E @ F (float64 2-D; E, F, G written)."""
    NI, NK = A.shape
    NJ = B.shape[1]
    NM = C.shape[1]
    NL = D.shape[1]
    for i in range(0, NI):
        for j in range(0, NJ):
            E[i, j] = 0.0
            for k in range(0, NK):
                E[i, j] += A[i, k] * B[k, j]
    for i in range(0, NJ):
        for j in range(0, NL):
            F[i, j] = 0.0
            for k in range(0, NM):
                F[i, j] += C[i, k] * D[k, j]
    for i in range(0, NI):
        for j in range(0, NL):
            G[i, j] = 0.0
            for k in range(0, NJ):
                G[i, j] += E[i, k] * F[k, j]


def args_chain3(n, seed):
    g = rng(seed)
    ni, nj, nk, nl, nm = n, n + 4, n + 8, n + 12, n + 6
    return (np.zeros((ni, nj)), g.random((ni, nk)), g.random((nk, nj)), np.zeros((nj, nl)),
            g.random((nj, nm)), g.random((nm, nl)), np.zeros((ni, nl)))


# -- symmetric rank-2k update of the lower triangle --------------------------------------------
def sym_rank2k_lower(alpha, beta, C, A, B):
    """Lower triangle of C = beta * C + alpha * (A @ B.T + B @ A.T); C (n, n), A, B (n, m)."""
    n = C.shape[0]
    m = A.shape[1]
    for i in range(n):
        for j in range(i + 1):
            C[i, j] = C[i, j] * beta
        for k in range(m):
            for j in range(i + 1):
                C[i, j] += A[j, k] * alpha * B[i, k] + B[j, k] * alpha * A[i, k]


def args_syr2k(n, seed):
    g = rng(seed)
    return (1.5, 1.2, g.random((n, n)), g.random((n, n + 20)), g.random((n, n + 20)))


# -- symmetric matrix (lower triangle stored) times a general matrix ---------------------------
def sym_lower_matmul(alpha, beta, C, A, B):
    """C = beta * C + alpha * S @ B, S symmetric with only A's lower triangle read."""
    n = A.shape[0]
    p = B.shape[1]
    for i in range(n):
        for j in range(p):
            acc = 0.0
            for k in range(i + 1):
                acc += A[i, k] * B[k, j]
            for k in range(i + 1, n):
                acc += A[k, i] * B[k, j]
            C[i, j] = beta * C[i, j] + alpha * acc


def args_symm(n, seed):
    g = rng(seed)
    return (1.5, 1.2, g.random((n, n + 10)), g.random((n, n)), g.random((n, n + 10)))


# -- unit upper-triangular (transposed lower) product, in place --------------------------------
def unit_tri_product(alpha, A, B):
    """B = alpha * U @ B in place, U = I + strict lower triangle of A transposed (A (n, n))."""
    n = B.shape[0]
    m = B.shape[1]
    for i in range(n):
        for j in range(m):
            for k in range(i + 1, n):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]


def args_trmm(n, seed):
    g = rng(seed)
    return (1.5, g.random((n, n)), g.random((n, n + 10)))


# the answer keys: the design of designs_dense kept for each kernel (README.md says why)
gemm_beta_first_hand = _d.gemm_beta_first_blas
gemm_alpha_inside_hand = _d.gemm_alpha_inside_blas
chain2_hand = _d.chain2_blas_expr
chain3_hand = _d.chain3_blas
sym_rank2k_lower_hand = _d.sym_rank2k_lower_blas
sym_lower_matmul_hand = _d.sym_lower_matmul_blas
unit_tri_product_hand = _d.unit_tri_product_blas

KERNELS = [
    SuiteKernel("gemm_beta_first", "linalg", gemm_beta_first, args_gemm, gemm_beta_first_hand,
                380, 6, ("i", "j", "j"), True,
                "β scales C first, then i-k-j accumulation with alpha outside A*B"),
    SuiteKernel("gemm_alpha_inside", "linalg", gemm_alpha_inside, args_gemm_sized,
                gemm_alpha_inside_hand, 250, 6, ("i", "j"), True,
                "range(0, n) bounds, sizes as arguments, scalar accumulator, "
                "x = x + … form, alpha inside the product"),
    SuiteKernel("chain2", "linalg", chain2, args_chain2, chain2_hand, 190, 5,
                ("i", "j", "i", "j"), True,
                "two products through a temporary; tmp[i, j] accumulated in place"),
    SuiteKernel("chain3", "linalg", chain3, args_chain3, chain3_hand, 220, 5,
                ("i", "j", "i", "j", "i", "j"), True,
                "three products, tuple-unpacked shapes, range(0, N) bounds"),
    SuiteKernel("sym_rank2k_lower", "linalg", sym_rank2k_lower, args_syr2k,
                sym_rank2k_lower_hand, 300, 6, ("i", "j", "j"), True,
                "triangular j <= i bounds, alpha inside both products"),
    SuiteKernel("sym_lower_matmul", "linalg", sym_lower_matmul, args_symm,
                sym_lower_matmul_hand, 250, 6, ("i", "j"), True,
                "symmetric operand read from its lower triangle: two k loops split at i"),
    SuiteKernel("unit_tri_product", "linalg", unit_tri_product, args_trmm,
                unit_tri_product_hand, 340, 6, ("j",), True,
                "in place: row i reads the rows below it, so only j is parallel as written"),
]
