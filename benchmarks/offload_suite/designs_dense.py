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
    """Answer key: P = A @ B (BLAS, plain njit), then C = beta*C + alpha*P in one fused pass.

    Tried: ``blas_expr`` (``C *= beta; C += alpha * (A @ B)``, two extra temporaries), ``run1``
    (the same under ``parallel=True``). Kept: fastest in the interleaved timing (1.21 ms vs
    1.31 / 1.26; serial loop 21 ms), and the fused epilogue writes C once.
    """
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
    """Answer key: one GEMM on the (full, uncopied) operands, fused α/β epilogue, plain njit.

    Tried: ``run1`` (``parallel=True``, contiguous copies of the slices, array expression).
    Kept: 1.91 ms vs 2.78 ms (serial loop 8.2 ms).
    """
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
    """Answer key: ``tmp[:] = alpha * (A @ B); D *= beta; D += tmp @ C`` under plain njit.

    Tried: ``blas`` (``np.dot`` into tmp, fused epilogue; 0.396 ms, a tie), ``run1`` (the same
    body under ``parallel=True``: 3.1 ms, parfors fighting OpenBLAS threads). Kept: 0.365 ms.
    """
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
    """Answer key: three ``np.dot(X, Y, out)`` calls writing E, F, G in place, plain njit.

    Tried: ``run1`` (``E[:] = A @ B`` …, a temporary per product: 1.09 ms). Kept: 0.87 ms.
    """
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
    """Answer key: T = A @ B.T (one GEMM), then the lower triangle from T[i, j] + T[j, i].

    Tried: ``blas_sym`` (one GEMM of depth 2m, ``[A B] @ [B A].T``: 2.19 ms), ``run1`` (prange
    loop after BLAS under ``parallel=True``: 25.6 ms). Kept: 0.76 ms (serial loop 64 ms).
    """
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
    """Answer key: S (the lower triangle mirrored, built in one pass), then S @ B and a fused
    α/β epilogue, plain njit.

    Tried: ``run1`` (``np.tril`` twice plus a transpose add under ``parallel=True``: 54.8 ms).
    Kept: 11.5 ms on the loaded machine (serial loop 26 ms).
    """
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
    """Answer key: U = I + strict lower triangle of A transposed (one pass), U @ B, then
    B = alpha * P, plain njit.

    Tried: ``run1`` (``np.tril(A, -1).T + np.eye(n)`` and ``alpha * (U @ B)`` under
    ``parallel=True``: 43 ms). Kept: 4.8 ms (serial loop 43 ms).
    """
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
}
