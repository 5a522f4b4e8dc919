"""Answer-key designs tried for the matrix-vector, BLAS level-1 and contraction kernels (see
``designs_dense`` for the scheme and the labels)."""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

# -- matrix-vector kernels -----------------------------------------------------------------------


@numba.njit
def normal_matvec_blas(A, x, y, tmp):
    """Answer key: ``np.dot(A, x, tmp); np.dot(tmp, A, y)``, two GEMVs, plain njit.

    Tried: ``fused`` (one sweep over A per row), ``run1`` (``parallel=True``: 58 ms). On the
    loaded machine the serial loop measured 13.7-14.6 ms against 31-37 ms (BLAS's threads lose
    the most under load); the issue's quiet figures give this body 2.9 ms against 7.6 ms for the
    serial loop, so the BLAS design is kept.
    """
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
    """Answer key: ``np.dot(A, p, q); np.dot(r, A, s)``, two GEMVs, plain njit.

    Tried: ``fused`` (one serial sweep over A: 4.68 ms quiet; it won under load 6-10),
    ``run1`` (``parallel=True``: 8.5 ms). Kept: 1.66 ms in the quiet window (16:17 UTC).
    """
    np.dot(A, p, q)
    np.dot(r, A, s)


@numba.njit
def dual_matvec_fused(A, p, r, q, s):
    """Answer key: one sweep over A, both products per row (q[i] and s += r[i] * A[i]), plain njit.

    Tried: ``blas`` (two GEMVs: 24-38 ms), ``run1`` (``parallel=True``: 45-85 ms). Fastest in
    both loaded timings (A read once), but 4.68 ms against ``blas`` 1.66 ms in the quiet window.
    """
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
    """Answer key: ``x1 += A @ y1; x2 += y2 @ A`` under plain njit.

    Tried: ``run1`` (the same body under ``parallel=True``: 38 ms). Kept: 30 ms (serial loop
    48 ms, it reads A transposed).
    """
    x1 += A @ y1
    x2 += y2 @ A


@numba.njit(parallel=True)
def matvec_pair_update_run1(x1, x2, y1, y2, A):
    x1 += A @ y1
    x2 += y2 @ A


@numba.njit
def scaled_two_gemv_blas(alpha, beta, A, B, x, y, t):
    """Answer key: two GEMVs into t and y (``np.dot`` with out), fused α/β pass, plain njit.

    Tried: ``run1`` (``parallel=True`` array expression: 72 ms). Kept: 29 ms (serial loop 43).
    """
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
    """Answer key: the rank-2 update as a unit-stride loop, then ``np.dot(A, x, w)``, plain njit.

    Tried: ``prange`` (update and dot fused in one parallel pass over A: 26-48 ms), ``run1``
    (array expressions under ``parallel=True``: 37-77 ms). Kept: 16.4-24.4 ms, fastest twice.
    """
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
    """Answer key: prange over rows, scalar a*x[i] hoisted, unit-stride inner loop.

    Tried: ``run1`` (row slices times a vector: 32-34 ms). Kept: 23-31 ms; the serial loop tied
    it once on the loaded machine (29.5 ms), the quiet run gave ``run1`` 3.3 ms vs 6.5 serial.
    """
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
    """Answer key: prange reduction over x[i] * y[i].

    Tried: ``blas`` (``np.dot`` under plain njit: 13.9-14.7 ms). Kept: 2.9-9.8 ms.
    """
    total = 0.0
    for i in prange(x.shape[0]):
        total += x[i] * y[i]
    return total


@numba.njit(parallel=True)
def axpy_loop_prange(alpha, x, y, z):
    """Answer key: prange loop (memory bound, no temporary).

    Tried: ``serial`` (the same loop, range): a tie on the loaded machine (9.4 vs 9.7 ms;
    13.6 vs 12.8); the quiet run gave the prange loop 2.4 ms against 4.8 ms serial. Kept.
    """
    for i in prange(x.shape[0]):
        z[i] = alpha * x[i] + y[i]


@numba.njit
def axpy_loop_serial(alpha, x, y, z):
    for i in range(x.shape[0]):
        z[i] = alpha * x[i] + y[i]


@numba.njit(parallel=True)
def scal_loop_prange(alpha, x):
    """Answer key: prange loop in place.

    Tried: ``serial``: no clear winner on the loaded machine (11.7-19.9 ms, same code varying by
    70%); the quiet run gave the prange loop 4.0 ms against 7.2 ms serial. Kept.
    """
    for i in prange(x.size):
        x[i] *= alpha


@numba.njit
def scal_loop_serial(alpha, x):
    for i in range(x.size):
        x[i] *= alpha


# -- contractions --------------------------------------------------------------------------------


@numba.njit
def block_transform_blas(A, W, acc):
    """Answer key: the (nr*nq, np) view times W (one GEMM), copied back, plain njit.

    Tried: ``run1`` (same body under ``parallel=True``: 28 ms). Kept: 18 ms (serial 37).
    """
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
    """Answer key: ``np.dot(M, X[a], Y[a])`` per a (GEMM into the output slice), plain njit.

    Tried: ``prange`` (b-l-c loops, unit-stride inner c: 11.6 ms), ``run1`` (``M @ X[a]`` in a
    prange: 12.3 ms). Lost to ``run1`` in the quiet window (0.82 vs 0.51 ms).
    """
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
    """Answer key: ``Y[a] = M @ X[a]`` in a prange over a.

    Tried: ``blas`` (``np.dot(M, X[a], Y[a])`` serially: 0.82 ms quiet, 0.97 loaded),
    ``prange`` (b-l-c loops: 1.71 ms). Kept: 0.51 ms in the quiet window (16:17 UTC).
    """
    for a in prange(X.shape[0]):
        Y[a] = M @ X[a]


DESIGNS = {
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
