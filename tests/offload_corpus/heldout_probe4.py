"""A fourth held-out probe of the offload search, this one WITH answer keys: classic dense
linear-algebra, stencil, data-mining and dynamic-programming kernels written as plain ``for``
loops, each spelled differently from ``benchmarks/offload_suite/`` and the first three probes
(GEMM in i-k-j order with a hoisted ``a = alpha * A[i, k]``, ``A @ B.T`` with transposed
reads, batched products over a leading axis, gesummv/atax/bicg with both products in one
``i`` loop, gemver end to end, syrk in j-k order, symm with ``temp2``, a 3-index contraction
through a ``sum`` array, outer-product accumulations, a Kronecker product, covariance with
``mean /= n`` and ``float(n - 1)``, correlation with an epsilon guard, a k-means centroid
update, a cosine-similarity matrix, row standardization, a power-iteration step, jacobi-2d with
a copy-back loop, heat-3d, fdtd-2d with a source array, ADI-like sweeps, a recursive filter,
seidel-2d, left-looking Cholesky, k-i-j LU, column-oriented triangular solve, Durbin,
classical Gram–Schmidt, Nussinov).

Every verdict was decided from the code's semantics: ``parallel``/``reduction`` loops are safe
in any order, ``serial`` loops carry a true dependence, ``limits`` names loops that are
parallel in truth (most of them array-element reductions) which the engine keeps serial, each
with the reason. ``key`` is the answer key: the expert numba version of the same computation
(``tests/offload_corpus/heldout_probe4_keys.py``), same arguments, same effect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import heldout_probe4_keys as keys
from .heldout_probe3 import Probe3

_ACC_OUT = ("acc is an argument: its last (r, q)'s sums are visible after the call, so one "
            "copy per iteration would need a copy-out of the last one")
_ELEMENT_OUTSIDE = ("a local bound to A[j, j] / A[i, k] outside the loop may be a row view "
                    "(nothing gives A's ndim): its use, or its -= accumulation, may touch what "
                    "the loop writes")
_EREDUCE = "an array element updated over the loop (C[i, j] += …) is no scalar reduction"


@dataclass(frozen=True)
class Probe4(Probe3):
    """A :class:`Probe3` with its answer key (the expert numba version)."""

    key: Callable[..., Any] | None = None


# -- dense products ------------------------------------------------------------------------------
def gemm_ikj_hoisted(alpha, beta, C, A, B):
    """C = beta C + alpha A B in i-k-j order, ``a = alpha * A[i, k]`` hoisted out of j."""
    ni, nk = A.shape
    nj = B.shape[1]
    for i in range(ni):
        for j in range(nj):
            C[i, j] = beta * C[i, j]
        for k in range(nk):
            a = alpha * A[i, k]
            for j in range(nj):
                C[i, j] += a * B[k, j]


def gemm_abt(alpha, beta, C, A, B):
    """C = alpha A Bᵀ + beta C with B (nj, nk) read transposed: ``B[j, k]``."""
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[j, k]
            C[i, j] = alpha * s + beta * C[i, j]


def batched_matmul(A, B, C):
    """C[b] = A[b] @ B[b] over the leading axis of 3-D arrays."""
    nb, ni, nk = A.shape
    nj = B.shape[2]
    for b in range(nb):
        for i in range(ni):
            for j in range(nj):
                s = 0.0
                for k in range(nk):
                    s += A[b, i, k] * B[b, k, j]
                C[b, i, j] = s


def gesummv_split(alpha, beta, A, B, x, y, tmp):
    """tmp = A x, y = B x in one j loop, then y = alpha tmp + beta y."""
    n = A.shape[0]
    for i in range(n):
        tmp[i] = 0.0
        y[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
            y[i] += B[i, j] * x[j]
        y[i] = alpha * tmp[i] + beta * y[i]


def atax_inside(A, x, y, tmp):
    """y = Aᵀ (A x) with the transposed product ``y[j] += A[i, j] * tmp[i]`` inside the i
    loop."""
    m, n = A.shape
    for j in range(n):
        y[j] = 0.0
    for i in range(m):
        tmp[i] = 0.0
        for j in range(n):
            tmp[i] += A[i, j] * x[j]
        for j in range(n):
            y[j] += A[i, j] * tmp[i]


def bicg_onepass(A, p, r, q, s):
    """q = A p and s = Aᵀ r in one pass over A."""
    m, n = A.shape
    for j in range(n):
        s[j] = 0.0
    for i in range(m):
        q[i] = 0.0
        for j in range(n):
            s[j] += r[i] * A[i, j]
            q[i] += A[i, j] * p[j]


def gemver_full(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    """A += u1 v1ᵀ + u2 v2ᵀ; x += beta Aᵀ y + z; w += alpha A x, scalar accumulators."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] += u1[i] * v1[j] + u2[i] * v2[j]
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += A[i, j] * y[i]
        x[j] = x[j] + beta * s + z[j]
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        w[i] += alpha * s


def syrk_jk(alpha, beta, C, A):
    """Lower triangle of C = beta C + alpha A Aᵀ; ``C[i, j] *= beta`` first, then j-k."""
    n, m = A.shape
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for j in range(i + 1):
            for k in range(m):
                C[i, j] += alpha * A[i, k] * A[j, k]


def symm_temp2(alpha, beta, C, A, B):
    """C = beta C + alpha S B, S symmetric stored in A's lower triangle, with ``temp2``."""
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


def contract_rq(A, W, acc):
    """A[r, q, :] = A[r, q, :] @ W through a shared ``acc`` array per (r, q)."""
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                acc[p] = 0.0
                for t in range(npp):
                    acc[p] = acc[p] + A[r, q, t] * W[t, p]
            for p in range(npp):
                A[r, q, p] = acc[p]


def outer_accumulate(X, Y, P):
    """P += Σ_t X[t]ᵀ Y[t] (outer products of rows accumulated)."""
    for t in range(X.shape[0]):
        for i in range(X.shape[1]):
            for j in range(Y.shape[1]):
                P[i, j] += X[t, i] * Y[t, j]


def kron_product(A, B, K):
    """K = A ⊗ B with ``K[i * p + k, j * q + l]``."""
    m, n = A.shape
    p, q = B.shape
    for i in range(m):
        for j in range(n):
            for k in range(p):
                for l in range(q):  # noqa: E741
                    K[i * p + k, j * q + l] = A[i, j] * B[k, l]


# -- data mining ---------------------------------------------------------------------------------
def covariance_meandiv(data, cov):
    """Covariance of the columns: ``mean[j] /= n``, centering in place, ``float(n - 1)``."""
    n, m = data.shape
    mean = np.zeros(m)
    for j in range(m):
        for i in range(n):
            mean[j] += data[i, j]
        mean[j] /= n
    for i in range(n):
        for j in range(m):
            data[i, j] -= mean[j]
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for i in range(n):
                s += data[i, a] * data[i, b]
            s /= float(n - 1)
            cov[a, b] = s
            cov[b, a] = s


def correlation_eps(data, corr, eps):
    """Correlation of the columns with ``np.sqrt`` and a ``std <= eps`` guard."""
    n, m = data.shape
    mean = np.empty(m)
    std = np.empty(m)
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += data[i, j]
        mean[j] = s / n
    for j in range(m):
        s = 0.0
        for i in range(n):
            d = data[i, j] - mean[j]
            s += d * d
        sd = np.sqrt(s / n)
        std[j] = 1.0 if sd <= eps else sd
    for i in range(n):
        for j in range(m):
            data[i, j] = (data[i, j] - mean[j]) / (np.sqrt(float(n)) * std[j])
    for a in range(m):
        corr[a, a] = 1.0
        for b in range(a + 1, m):
            s = 0.0
            for i in range(n):
                s += data[i, a] * data[i, b]
            corr[a, b] = s
            corr[b, a] = s


def kmeans_update(points, labels, centers, counts):
    """Centroids as sums and counts through the labels, then divided."""
    k, d = centers.shape
    for c in range(k):
        counts[c] = 0
        for t in range(d):
            centers[c, t] = 0.0
    for i in range(points.shape[0]):
        c = labels[i]
        counts[c] += 1
        for t in range(d):
            centers[c, t] += points[i, t]
    for c in range(k):
        if counts[c] > 0:
            for t in range(d):
                centers[c, t] /= counts[c]


def cosine_matrix(X, S):
    """S[i, j] = <X[i], X[j]> / (|X[i]| |X[j]| + 1e-12), row norms first."""
    n, d = X.shape
    norms = np.empty(n)
    for i in range(n):
        s = 0.0
        for k in range(d):
            s += X[i, k] ** 2
        norms[i] = math.sqrt(s)
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(d):
                s += X[i, k] * X[j, k]
            S[i, j] = s / (norms[i] * norms[j] + 1e-12)


def row_standardize(X, Z):
    """Z[i] = (X[i] - mean) / std per row (population std, 1 where it is 0)."""
    n, m = X.shape
    for i in range(n):
        mu = 0.0
        for j in range(m):
            mu += X[i, j]
        mu = mu / m
        var = 0.0
        for j in range(m):
            var += (X[i, j] - mu) * (X[i, j] - mu)
        sd = math.sqrt(var / m)
        if sd == 0.0:
            sd = 1.0
        for j in range(m):
            Z[i, j] = (X[i, j] - mu) / sd


def power_step(A, x, y):
    """y = A x / |A x|; returns |A x|."""
    n = A.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s
    nrm = 0.0
    for i in range(n):
        nrm += y[i] * y[i]
    nrm = math.sqrt(nrm)
    for i in range(n):
        y[i] = y[i] / nrm
    return nrm


# -- stencils ------------------------------------------------------------------------------------
def jacobi2d_copyback(steps, A, B):
    """Five-point Jacobi into B, then an explicit copy-back loop into A."""
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = B[i, j]


def heat3d_interior(steps, A, B):
    """Heat equation, ``range(1, n - 1)`` in all three axes, A → B then B → A."""
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = A[i, j, k] + 0.125 * (
                        A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k]
                        + A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k]
                        + A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = B[i, j, k] + 0.125 * (
                        B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k]
                        + B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k]
                        + B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])


def fdtd2d_source(fict, ex, ey, hz):
    """2-D FDTD: ey row 0 from the source ``fict[t]``, ey/ex from hz, hz from both."""
    nx, ny = ex.shape
    for t in range(fict.shape[0]):
        for j in range(ny):
            ey[0, j] = fict[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.5 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.5 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.7 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


def adi_sweeps(X, A, B):
    """Forward elimination along each row (rows independent), then down each column (columns
    independent): serial along the sweep, parallel across it."""
    n, m = X.shape
    for i in range(n):
        for j in range(1, m):
            X[i, j] = X[i, j] - X[i, j - 1] * A[i, j] / B[i, j - 1]
            B[i, j] = B[i, j] - A[i, j] * A[i, j] / B[i, j - 1]
    for j in range(m):
        for i in range(1, n):
            X[i, j] = X[i, j] - X[i - 1, j] * A[i, j] / B[i - 1, j]
            B[i, j] = B[i, j] - A[i, j] * A[i, j] / B[i - 1, j]


def iir_down_columns(x, y, a):
    """A first-order recursive filter down the rows: serial along i, parallel over columns."""
    n, m = x.shape
    for j in range(m):
        y[0, j] = x[0, j]
    for i in range(1, n):
        for j in range(m):
            y[i, j] = a * y[i - 1, j] + (1.0 - a) * x[i, j]


def seidel2d_nine(steps, A):
    """Nine-point Gauss–Seidel in place (every loop serial)."""
    n = A.shape[0]
    for _t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


# -- factorizations and solvers ------------------------------------------------------------------
def cholesky_left(A):
    """Left-looking Cholesky in place (lower triangle): the diagonal from a dot, then the column
    below it from dots with row j."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= A[j, k] * A[j, k]
        A[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= A[i, k] * A[j, k]
            A[i, j] = t / A[j, j]


def lu_kij(A):
    """Right-looking LU in k-i-j order with the multiplier hoisted: ``aik = A[i, k]``."""
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
        for i in range(k + 1, n):
            aik = A[i, k]
            for j in range(k + 1, n):
                A[i, j] -= aik * A[k, j]


def trisolv_columns(L, b, x):
    """L x = b, column-oriented: x[j] fixed, then subtracted from the rows below."""
    n = L.shape[0]
    for i in range(n):
        x[i] = b[i]
    for j in range(n):
        x[j] /= L[j, j]
        for i in range(j + 1, n):
            x[i] -= L[i, j] * x[j]


def durbin_levinson(r, y):
    """Levinson–Durbin recursion (Toeplitz system) with a ``z`` scratch array."""
    n = r.shape[0]
    z = np.empty(n)
    y[0] = -r[0]
    beta = 1.0
    alpha = -r[0]
    for k in range(1, n):
        beta = (1.0 - alpha * alpha) * beta
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        alpha = -(r[k] + s) / beta
        for i in range(k):
            z[i] = y[i] + alpha * y[k - i - 1]
        for i in range(k):
            y[i] = z[i]
        y[k] = alpha


def gram_schmidt_classic(A, Q, R):
    """Classical Gram–Schmidt: column k of A projected on the earlier q's (R[j, k] from A's
    column, not the updated one), then normalized."""
    m, n = A.shape
    for k in range(n):
        for i in range(m):
            Q[i, k] = A[i, k]
        for j in range(k):
            s = 0.0
            for i in range(m):
                s += Q[i, j] * A[i, k]
            R[j, k] = s
            for i in range(m):
                Q[i, k] -= s * Q[i, j]
        nrm = 0.0
        for i in range(m):
            nrm += Q[i, k] * Q[i, k]
        nrm = math.sqrt(nrm)
        R[k, k] = nrm
        for i in range(m):
            Q[i, k] = Q[i, k] / nrm


def nussinov_fold(seq, T):
    """Nussinov base-pair maximization, rows from the bottom (serial)."""
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = T[i, j - 1]
            if i + 1 < n:
                best = max(best, T[i + 1, j])
                pair = 1 if seq[i] + seq[j] == 3 and i < j - 1 else 0
                best = max(best, T[i + 1, j - 1] + pair)
            for k in range(i + 1, j):
                best = max(best, T[i, k] + T[k + 1, j])
            T[i, j] = best


# -- argument makers -----------------------------------------------------------------------------
def _gemm(g, n):
    return (1.5, 1.2, g.random((n, n + 3)), g.random((n, n + 5)), g.random((n + 5, n + 3)))


def _gemm_bt(g, n):
    return (1.5, 1.2, g.random((n, n + 3)), g.random((n, n + 5)), g.random((n + 3, n + 5)))


def _spd(g, n):
    M = g.random((n, n))
    return (M @ M.T + n * np.eye(n),)


def _lu(g, n):
    return (g.random((n, n)) + n * np.eye(n),)


def _vec_mat(g, n):
    return (g.random((n + 2, n)), g.random(n), np.zeros(n), np.zeros(n + 2))


def _gemver(g, n):
    v = [g.random(n) for _ in range(8)]
    return (1.5, 1.2, g.random((n, n)), *v)


def _kmeans(g, n):
    k = 3
    pts = g.random((8 * n, 4))
    return (pts, g.integers(0, k, 8 * n), np.zeros((k, 4)), np.zeros(k, dtype=np.int64))


def _seq(g, n):
    return (g.integers(0, 4, 2 * n), np.zeros((2 * n, 2 * n), dtype=np.int64))


def _gs(g, n):
    return (g.random((n + 3, n)) + np.eye(n + 3, n), np.zeros((n + 3, n)), np.zeros((n, n)))


PROBES: dict[str, Probe4] = {
    "gemm_ikj_hoisted": Probe4(gemm_ikj_hoisted, _gemm, parallel=("L1", "L2", "L4"),
                               limits={"L3": _EREDUCE}, key=keys.gemm_ikj_hoisted,
                               sizes=(1, 2, 7)),
    "gemm_abt": Probe4(gemm_abt, _gemm_bt, parallel=("L1", "L2"), reduction=("L3",),
                       key=keys.gemm_abt, sizes=(1, 2, 7)),
    "batched_matmul": Probe4(batched_matmul,
                             lambda g, n: (g.random((3, n, n + 2)), g.random((3, n + 2, n + 1)),
                                           np.zeros((3, n, n + 1))),
                             parallel=("L1", "L2", "L3"), reduction=("L4",),
                             key=keys.batched_matmul, sizes=(1, 2, 7), moderate=120),
    "gesummv_split": Probe4(gesummv_split,
                            lambda g, n: (1.5, 1.2, g.random((n, n + 1)), g.random((n, n + 1)),
                                          g.random(n + 1), np.zeros(n), np.zeros(n)),
                            parallel=("L1",), limits={"L2": _EREDUCE},
                            key=keys.gesummv_split, sizes=(1, 2, 7), moderate=1500),
    "atax_inside": Probe4(atax_inside, _vec_mat, parallel=("L1", "L4"),
                          limits={"L2": "y[j] += … over i is an array reduction",
                                  "L3": _EREDUCE},
                          key=keys.atax_inside, sizes=(1, 2, 7), moderate=1500),
    "bicg_onepass": Probe4(bicg_onepass,
                           lambda g, n: (g.random((n + 2, n)), g.random(n), g.random(n + 2),
                                         np.zeros(n + 2), np.zeros(n)),
                           parallel=("L1",),
                           limits={"L2": "s[j] += … over i is an array reduction",
                                   "L3": _EREDUCE},
                           key=keys.bicg_onepass, sizes=(1, 2, 7), moderate=1500),
    "gemver_full": Probe4(gemver_full, _gemver, parallel=("L1", "L2", "L3", "L5"),
                          reduction=("L4", "L6"), key=keys.gemver_full, sizes=(1, 2, 7),
                          moderate=1500),
    "syrk_jk": Probe4(syrk_jk, lambda g, n: (1.5, 1.2, g.random((n, n)), g.random((n, n + 3))),
                      parallel=("L1", "L2", "L3"), limits={"L4": _EREDUCE}, key=keys.syrk_jk,
                      sizes=(1, 2, 7)),
    "symm_temp2": Probe4(symm_temp2,
                         lambda g, n: (1.5, 1.2, g.random((n, n + 2)), g.random((n, n)),
                                       g.random((n, n + 2))),
                         serial=("L1",), parallel=("L2",), reduction=("L3",),
                         key=keys.symm_temp2, sizes=(1, 2, 7)),
    "contract_rq": Probe4(contract_rq,
                          lambda g, n: (g.random((n, n + 1, n + 2)), g.random((n + 2, n + 2)),
                                        np.zeros(n + 2)),
                          parallel=("L3", "L5"),
                          limits={"L1": _ACC_OUT, "L2": _ACC_OUT, "L4": _EREDUCE},
                          key=keys.contract_rq, sizes=(1, 2, 7), moderate=60),
    "outer_accumulate": Probe4(outer_accumulate,
                               lambda g, n: (g.random((n + 4, n)), g.random((n + 4, n + 1)),
                                             g.random((n, n + 1))),
                               parallel=("L2", "L3"),
                               limits={"L1": "P[i, j] += … over t is an array reduction"},
                               key=keys.outer_accumulate, sizes=(1, 2, 7)),
    "kron_product": Probe4(kron_product,
                           lambda g, n: (g.random((n, n + 1)), g.random((3, 2)),
                                         np.zeros((3 * n, 2 * (n + 1)))),
                           # ``i * p + k`` with k in range(p): digits (i, k), radix p
                           parallel=("L1", "L2", "L3", "L4"),
                           key=keys.kron_product, sizes=(1, 2, 7), moderate=120),
    "covariance_meandiv": Probe4(covariance_meandiv,
                                 lambda g, n: (g.random((n + 3, n)), np.zeros((n, n))),
                                 parallel=("L1", "L3", "L4", "L5", "L6"), reduction=("L7",),
                                 limits={"L2": _EREDUCE}, key=keys.covariance_meandiv,
                                 sizes=(1, 2, 7)),
    "correlation_eps": Probe4(correlation_eps,
                              lambda g, n: (g.random((n + 3, n)), np.zeros((n, n)), 0.1),
                              parallel=("L1", "L3", "L5", "L6", "L7", "L8"),
                              reduction=("L2", "L4", "L9"), key=keys.correlation_eps,
                              sizes=(1, 2, 7)),
    "kmeans_update": Probe4(kmeans_update, _kmeans, parallel=("L1", "L2", "L4", "L5", "L6"),
                            serial=("L3",), key=keys.kmeans_update, sizes=(1, 2, 7),
                            moderate=20000),
    "cosine_matrix": Probe4(cosine_matrix, lambda g, n: (g.random((n, n + 3)), np.zeros((n, n))),
                            parallel=("L1", "L3", "L4"), reduction=("L2", "L5"),
                            key=keys.cosine_matrix, sizes=(1, 2, 7)),
    "row_standardize": Probe4(row_standardize,
                              lambda g, n: (g.random((n, n + 3)), np.zeros((n, n + 3))),
                              parallel=("L1", "L4"), reduction=("L2", "L3"),
                              key=keys.row_standardize, sizes=(1, 2, 7), moderate=1500),
    "power_step": Probe4(power_step,
                         lambda g, n: (g.random((n, n + 1)) + 0.1, g.random(n + 1),
                                       np.zeros(n)),
                         parallel=("L1", "L4"), reduction=("L2", "L3"), key=keys.power_step,
                         sizes=(1, 2, 7), moderate=2000),
    "jacobi2d_copyback": Probe4(jacobi2d_copyback,
                                lambda g, n: (3, g.random((n, n)), np.zeros((n, n))),
                                serial=("L1",), parallel=("L2", "L3", "L4", "L5"),
                                key=keys.jacobi2d_copyback, sizes=(1, 2, 3, 7), moderate=500),
    "heat3d_interior": Probe4(heat3d_interior,
                              lambda g, n: (2, g.random((n, n, n)), np.zeros((n, n, n))),
                              serial=("L1",),
                              parallel=("L2", "L3", "L4", "L5", "L6", "L7"),
                              key=keys.heat3d_interior, sizes=(1, 2, 3, 7), moderate=80),
    "fdtd2d_source": Probe4(fdtd2d_source,
                            lambda g, n: (g.random(3), g.random((n, n + 1)),
                                          g.random((n, n + 1)), g.random((n, n + 1))),
                            serial=("L1",),
                            parallel=("L2", "L3", "L4", "L5", "L6", "L7", "L8"),
                            key=keys.fdtd2d_source, sizes=(1, 2, 7), moderate=500),
    "adi_sweeps": Probe4(adi_sweeps,
                         lambda g, n: (g.random((n, n + 1)), g.random((n, n + 1)),
                                       g.random((n, n + 1)) + 2.0),
                         parallel=("L1", "L3"), serial=("L2", "L4"), key=keys.adi_sweeps,
                         sizes=(1, 2, 7), moderate=800),
    "iir_down_columns": Probe4(iir_down_columns,
                               lambda g, n: (g.random((n + 1, n)), np.zeros((n + 1, n)), 0.3),
                               parallel=("L1", "L3"), serial=("L2",),
                               key=keys.iir_down_columns, sizes=(1, 2, 7), moderate=1000),
    "seidel2d_nine": Probe4(seidel2d_nine, lambda g, n: (2, g.random((n, n))),
                            serial=("L1", "L2", "L3"), key=keys.seidel2d_nine,
                            sizes=(1, 2, 3, 7), moderate=400),
    "cholesky_left": Probe4(cholesky_left, _spd, serial=("L1",), parallel=("L3",),
                            limits={"L2": _ELEMENT_OUTSIDE, "L4": _ELEMENT_OUTSIDE},
                            key=keys.cholesky_left, sizes=(1, 2, 7)),
    "lu_kij": Probe4(lu_kij, _lu, serial=("L1",), parallel=("L2", "L3"),
                     limits={"L4": _ELEMENT_OUTSIDE}, key=keys.lu_kij, sizes=(1, 2, 7)),
    "trisolv_columns": Probe4(trisolv_columns,
                              lambda g, n: (np.tril(g.random((n, n))) + n * np.eye(n),
                                            g.random(n), np.zeros(n)),
                              parallel=("L1", "L3"), serial=("L2",), key=keys.trisolv_columns,
                              sizes=(1, 2, 7), moderate=1500),
    "durbin_levinson": Probe4(durbin_levinson,
                              lambda g, n: (g.random(n + 1) * 0.1, np.zeros(n + 1)),
                              serial=("L1",), reduction=("L2",), parallel=("L3", "L4"),
                              key=keys.durbin_levinson, sizes=(1, 2, 7), moderate=1500),
    "gram_schmidt_classic": Probe4(gram_schmidt_classic, _gs, serial=("L1",),
                                   parallel=("L2", "L5", "L7"), reduction=("L4", "L6"),
                                   limits={"L3": "Q[i, k] -= … over j is an array "
                                                 "reduction"},
                                   key=keys.gram_schmidt_classic, sizes=(1, 2, 7)),
    "nussinov_fold": Probe4(nussinov_fold, _seq, serial=("L1", "L2"), reduction=("L3",),
                            key=keys.nussinov_fold, sizes=(1, 2, 7), moderate=150),
}
