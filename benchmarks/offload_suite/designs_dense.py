"""Answer-key designs tried for the dense kernels (linalg, matvec, BLAS-like).

``DESIGNS[kernel][label]`` is one numba design of the kernel, same signature and effect as the
plain function. ``compare_keys.py`` times them interleaved on the kernel's full size; the
fastest is the kernel's ``hand`` (the family modules import it from here). Labels:

- ``blas``: plain ``@numba.njit`` around ``@``/``np.dot`` with contiguous operands and a fused
  scalar epilogue (no ``parallel=True``: parfors around BLAS calls fight OpenBLAS's threads);
- ``prange``: ``@numba.njit(parallel=True)`` loops with unit-stride inner loops;
- ``run1``: the key of the first suite run (``parallel=True`` around array expressions).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

# -- gemm_beta_first / gemm_alpha_inside ---------------------------------------------------------


@numba.njit
def _epilogue(C, beta, alpha, P):
    """C = beta * C + alpha * P in one pass, no temporary (C, P (n, m) float64)."""
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = beta * C[i, j] + alpha * P[i, j]


@numba.njit
def gemm_beta_first_blas(alpha, beta, C, A, B):
    _epilogue(C, beta, alpha, A @ B)


@numba.njit
def gemm_beta_first_blas_expr(alpha, beta, C, A, B):
    C *= beta
    C += alpha * (A @ B)


@numba.njit(parallel=True)
def gemm_beta_first_run1(alpha, beta, C, A, B):
    C *= beta
    C += alpha * (A @ B)


@numba.njit
def gemm_alpha_inside_blas(alpha, beta, C, A, B, ni, nj, nk):
    if ni == A.shape[0] and nk == A.shape[1] and nk == B.shape[0] and nj == B.shape[1]:
        P = A @ B  # full operands: no copies
    else:
        P = np.ascontiguousarray(A[:ni, :nk]) @ np.ascontiguousarray(B[:nk, :nj])
    for i in range(ni):
        for j in range(nj):
            C[i, j] = beta * C[i, j] + alpha * P[i, j]


@numba.njit(parallel=True)
def gemm_alpha_inside_run1(alpha, beta, C, A, B, ni, nj, nk):
    Ab = np.ascontiguousarray(A[:ni, :nk])
    Bb = np.ascontiguousarray(B[:nk, :nj])
    C[:ni, :nj] = beta * C[:ni, :nj] + alpha * (Ab @ Bb)


# -- chained products ----------------------------------------------------------------------------


@numba.njit
def chain2_blas(alpha, beta, tmp, A, B, C, D):
    np.dot(A, B, tmp)
    tmp *= alpha
    _epilogue(D, beta, 1.0, tmp @ C)


@numba.njit
def chain2_blas_expr(alpha, beta, tmp, A, B, C, D):
    tmp[:] = alpha * (A @ B)
    D *= beta
    D += tmp @ C


@numba.njit(parallel=True)
def chain2_run1(alpha, beta, tmp, A, B, C, D):
    tmp[:] = alpha * (A @ B)
    D *= beta
    D += tmp @ C


@numba.njit
def chain3_blas(E, A, B, F, C, D, G):
    np.dot(A, B, E)
    np.dot(C, D, F)
    np.dot(E, F, G)


@numba.njit
def chain3_run1(E, A, B, F, C, D, G):
    E[:] = A @ B
    F[:] = C @ D
    G[:] = E @ F


# -- symmetric and triangular products -----------------------------------------------------------


@numba.njit
def sym_rank2k_lower_blas(alpha, beta, C, A, B):
    T = A @ B.T  # T[i, j] = A[i] . B[j]; the update needs T[i, j] + T[j, i]
    for i in range(C.shape[0]):
        for j in range(i + 1):
            C[i, j] = beta * C[i, j] + alpha * (T[j, i] + T[i, j])


@numba.njit
def sym_rank2k_lower_blas_sym(alpha, beta, C, A, B):
    # one GEMM of depth 2m: [A B] @ [B A].T = A B.T + B A.T, read row-wise (unit stride)
    T = np.hstack((A, B)) @ np.hstack((B, A)).T
    for i in range(C.shape[0]):
        for j in range(i + 1):
            C[i, j] = beta * C[i, j] + alpha * T[i, j]


@numba.njit(parallel=True)
def sym_rank2k_lower_run1(alpha, beta, C, A, B):
    T = A @ B.T
    n = C.shape[0]
    for i in prange(n):
        for j in range(i + 1):
            C[i, j] = beta * C[i, j] + alpha * (T[j, i] + T[i, j])


@numba.njit
def sym_lower_matmul_blas(alpha, beta, C, A, B):
    n = A.shape[0]
    S = np.empty((n, n))
    for i in range(n):  # S = lower triangle of A mirrored, built in one pass
        for k in range(i + 1):
            S[i, k] = A[i, k]
            S[k, i] = A[i, k]
    _epilogue(C, beta, alpha, S @ B)


@numba.njit(parallel=True)
def sym_lower_matmul_run1(alpha, beta, C, A, B):
    L = np.tril(A)
    S = L + np.tril(A, -1).T
    C[:] = beta * C + alpha * (S @ B)


@numba.njit
def unit_tri_product_blas(alpha, A, B):
    n = B.shape[0]
    U = np.zeros((n, n))
    for k in range(n):  # U = I + strict lower triangle of A, transposed, built in one pass
        U[k, k] = 1.0
        for i in range(k):
            U[i, k] = A[k, i]
    P = U @ B
    for i in range(n):
        for j in range(B.shape[1]):
            B[i, j] = alpha * P[i, j]


@numba.njit(parallel=True)
def unit_tri_product_run1(alpha, A, B):
    n = B.shape[0]
    U = np.tril(A, -1).T + np.eye(n)
    B[:] = alpha * (U @ B)


# -- matrix-vector kernels -----------------------------------------------------------------------


@numba.njit
def normal_matvec_blas(A, x, y, tmp):
    np.dot(A, x, tmp)
    np.dot(tmp, A, y)


@numba.njit(parallel=True)
def normal_matvec_run1(A, x, y, tmp):
    tmp[:] = A @ x
    y[:] = tmp @ A


@numba.njit
def normal_matvec_fused(A, x, y, tmp):
    # one sweep over A: row i gives tmp[i], then y += tmp[i] * A[i] (A read once from cache)
    m, n = A.shape
    y[:] = 0.0
    for i in range(m):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        tmp[i] = s
        for j in range(n):
            y[j] += A[i, j] * s


@numba.njit
def dual_matvec_blas(A, p, r, q, s):
    np.dot(A, p, q)
    np.dot(r, A, s)


@numba.njit
def dual_matvec_fused(A, p, r, q, s):
    N, M = A.shape
    s[:] = 0.0
    for i in range(N):  # one sweep over A, both products per row
        acc = 0.0
        ri = r[i]
        for j in range(M):
            a = A[i, j]
            s[j] += ri * a
            acc += a * p[j]
        q[i] = acc


@numba.njit(parallel=True)
def dual_matvec_run1(A, p, r, q, s):
    q[:] = A @ p
    s[:] = r @ A


@numba.njit
def matvec_pair_update_blas(x1, x2, y1, y2, A):
    x1 += A @ y1
    x2 += y2 @ A


@numba.njit(parallel=True)
def matvec_pair_update_run1(x1, x2, y1, y2, A):
    x1 += A @ y1
    x2 += y2 @ A


@numba.njit
def scaled_two_gemv_blas(alpha, beta, A, B, x, y, t):
    np.dot(A, x, t)
    np.dot(B, x, y)
    for i in range(y.shape[0]):
        y[i] = alpha * t[i] + beta * y[i]


@numba.njit(parallel=True)
def scaled_two_gemv_run1(alpha, beta, A, B, x, y, t):
    t[:] = A @ x
    y[:] = alpha * t + beta * (B @ x)


@numba.njit(parallel=True)
def rank_two_update_prange(A, u1, v1, u2, v2, w, x):
    n = A.shape[0]
    for i in prange(n):  # update row i and take its dot with x in the same pass over A
        a1, a2 = u1[i], u2[i]
        s = 0.0
        for j in range(A.shape[1]):
            v = A[i, j] + a1 * v1[j] + a2 * v2[j]
            A[i, j] = v
            s += v * x[j]
        w[i] = s


@numba.njit
def rank_two_update_blas(A, u1, v1, u2, v2, w, x):
    for i in range(A.shape[0]):
        a1, a2 = u1[i], u2[i]
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] + a1 * v1[j] + a2 * v2[j]
    np.dot(A, x, w)


@numba.njit(parallel=True)
def rank_two_update_run1(A, u1, v1, u2, v2, w, x):
    n = A.shape[0]
    for i in prange(n):
        A[i, :] += u1[i] * v1 + u2[i] * v2
    w[:] = A @ x


@numba.njit(parallel=True)
def outer_scaled_prange(a, x, y, P):
    for i in prange(x.shape[0]):
        xi = a * x[i]
        for j in range(y.shape[0]):
            P[i, j] = xi * y[j]


@numba.njit(parallel=True)
def outer_scaled_run1(a, x, y, P):
    ax = a * x
    for i in prange(x.shape[0]):
        P[i, :] = ax[i] * y


# -- level 1 -------------------------------------------------------------------------------------


@numba.njit
def dot_loop_blas(x, y):
    return np.dot(x, y)


@numba.njit(parallel=True)
def dot_loop_prange(x, y):
    total = 0.0
    for i in prange(x.shape[0]):
        total += x[i] * y[i]
    return total


@numba.njit(parallel=True)
def axpy_loop_prange(alpha, x, y, z):
    for i in prange(x.shape[0]):
        z[i] = alpha * x[i] + y[i]


@numba.njit
def axpy_loop_serial(alpha, x, y, z):
    for i in range(x.shape[0]):
        z[i] = alpha * x[i] + y[i]


@numba.njit(parallel=True)
def scal_loop_prange(alpha, x):
    for i in prange(x.size):
        x[i] *= alpha


@numba.njit
def scal_loop_serial(alpha, x):
    for i in range(x.size):
        x[i] *= alpha


# -- contractions --------------------------------------------------------------------------------


@numba.njit
def block_transform_blas(A, W, acc):
    nr, nq, npp = A.shape
    flat = A.reshape(nr * nq, npp)
    out = flat @ W
    flat[:] = out
    acc[:] = out[-1]


@numba.njit(parallel=True)
def block_transform_run1(A, W, acc):
    nr, nq, npp = A.shape
    flat = A.reshape(nr * nq, npp)
    out = flat @ W
    flat[:] = out
    acc[:] = out[-1]


@numba.njit
def mode2_product_blas(X, M, Y):
    for a in range(X.shape[0]):
        np.dot(M, X[a], Y[a])


@numba.njit(parallel=True)
def mode2_product_prange(X, M, Y):
    na, nl, nc = X.shape
    for a in prange(na):  # b-l-c order: the inner c loop runs unit-stride over X and Y
        for b in range(M.shape[0]):
            for c in range(nc):
                Y[a, b, c] = 0.0
            for l in range(nl):  # noqa: E741
                m = M[b, l]
                for c in range(nc):
                    Y[a, b, c] += m * X[a, l, c]


@numba.njit(parallel=True)
def mode2_product_run1(X, M, Y):
    for a in prange(X.shape[0]):
        Y[a] = M @ X[a]


DESIGNS = {
    "gemm_beta_first": {"blas": gemm_beta_first_blas, "blas_expr": gemm_beta_first_blas_expr,
                        "run1": gemm_beta_first_run1},
    "gemm_alpha_inside": {"blas": gemm_alpha_inside_blas, "run1": gemm_alpha_inside_run1},
    "chain2": {"blas": chain2_blas, "blas_expr": chain2_blas_expr, "run1": chain2_run1},
    "chain3": {"blas": chain3_blas, "run1": chain3_run1},
    "sym_rank2k_lower": {"blas": sym_rank2k_lower_blas, "blas_sym": sym_rank2k_lower_blas_sym,
                         "run1": sym_rank2k_lower_run1},
    "sym_lower_matmul": {"blas": sym_lower_matmul_blas, "run1": sym_lower_matmul_run1},
    "unit_tri_product": {"blas": unit_tri_product_blas, "run1": unit_tri_product_run1},
    "normal_matvec": {"blas": normal_matvec_blas, "fused": normal_matvec_fused,
                      "run1": normal_matvec_run1},
    "dual_matvec": {"blas": dual_matvec_blas, "fused": dual_matvec_fused,
                    "run1": dual_matvec_run1},
    "matvec_pair_update": {"blas": matvec_pair_update_blas, "run1": matvec_pair_update_run1},
    "scaled_two_gemv": {"blas": scaled_two_gemv_blas, "run1": scaled_two_gemv_run1},
    "rank_two_update": {"prange": rank_two_update_prange, "blas": rank_two_update_blas,
                        "run1": rank_two_update_run1},
    "outer_scaled": {"prange": outer_scaled_prange, "run1": outer_scaled_run1},
    "dot_loop": {"blas": dot_loop_blas, "prange": dot_loop_prange},
    "axpy_loop": {"prange": axpy_loop_prange, "serial": axpy_loop_serial},
    "scal_loop": {"prange": scal_loop_prange, "serial": scal_loop_serial},
    "block_transform": {"blas": block_transform_blas, "run1": block_transform_run1},
    "mode2_product": {"blas": mode2_product_blas, "prange": mode2_product_prange,
                      "run1": mode2_product_run1},
}
