"""Answer-key designs tried for the stencil and dynamic-programming kernels (see
``designs_dense`` for the scheme and the labels)."""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from . import designs_other as _o

# -- stencils ------------------------------------------------------------------------------------


@numba.njit(parallel=True)
def smooth_1d_prange(steps, a, b):
    """Answer key: two prange loops per step, no temporaries.

    Tried: ``run1`` (slice expressions under ``parallel=True``: 93-459 ms on the loaded machine,
    8.6 ms in the quiet run). 79-320 ms loaded; lost to ``run1`` in the quiet window.
    """
    n = a.shape[0]
    for _ in range(steps):
        for i in prange(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        for i in prange(1, n - 1):
            a[i] = (b[i - 1] + b[i] + b[i + 1]) / 3.0


@numba.njit(parallel=True)
def smooth_1d_run1(steps, a, b):
    """Answer key: slice expressions under ``parallel=True`` (parfors fuse each into one loop).

    Tried: ``prange`` (explicit loops): 9.66-9.85 ms vs 8.58-9.3 ms in the quiet window
    (16:17 UTC), serial loop 11.2-11.8 ms. Kept: fastest quiet (loaded it lost to both).
    """
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0


@numba.njit(parallel=True)
def smooth_2d_prange(steps, A, B):
    """Answer key: prange over rows, unit-stride inner j loop, no temporaries.

    Tried: ``run1`` (slice expressions: 101-236 ms loaded, 17.5 ms quiet vs 11 ms serial).
    Kept: 22.5-63.6 ms loaded; the serial loop (14.7-28 ms) beat both there.
    """
    n = A.shape[0]
    for _ in range(steps):
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in prange(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


@numba.njit(parallel=True)
def smooth_2d_run1(steps, A, B):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                               + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                               + B[:-2, 1:-1])


@numba.njit(parallel=True)
def _heat_loops(src, dst):
    n = src.shape[0]
    for i in prange(1, n - 1):
        for j in range(1, n - 1):
            for k in range(1, n - 1):
                c = src[i, j, k]
                dst[i, j, k] = c + 0.125 * (
                    src[i + 1, j, k] - 2.0 * c + src[i - 1, j, k]
                    + src[i, j + 1, k] - 2.0 * c + src[i, j - 1, k]
                    + src[i, j, k + 1] - 2.0 * c + src[i, j, k - 1])


@numba.njit
def heat_cube_prange(steps, u, v):
    """Answer key: prange over i, unit-stride k loop, centre value read once.

    Tried: ``run1`` (slice expressions per plane: 124-306 ms loaded, 28.7 ms quiet vs 15.4 ms
    serial). Kept: 83-101 ms loaded; the serial loop (17-42 ms) beat both there.
    """
    for _ in range(steps):
        _heat_loops(u, v)
        _heat_loops(v, u)


@numba.njit(parallel=True)
def _heat_step(src, dst):
    n = src.shape[0]
    for i in prange(1, n - 1):
        c = src[i, 1:-1, 1:-1]
        dst[i, 1:-1, 1:-1] = c + 0.125 * (
            src[i + 1, 1:-1, 1:-1] - 2.0 * c + src[i - 1, 1:-1, 1:-1]
            + src[i, 2:, 1:-1] - 2.0 * c + src[i, :-2, 1:-1]
            + src[i, 1:-1, 2:] - 2.0 * c + src[i, 1:-1, :-2])


@numba.njit
def heat_cube_run1(steps, u, v):
    for _ in range(steps):
        _heat_step(u, v)
        _heat_step(v, u)


@numba.njit
def gauss_seidel_2d_serial(steps, G):
    """Answer key: the loops as written, serial (each point reads this sweep's updates).

    Tried: ``registers`` (the 3x3 window slid along j in registers): a tie, 12.7 ms each.
    Kept the simpler one.
    """
    n = G.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                G[i, j] = (G[i - 1, j - 1] + G[i - 1, j] + G[i - 1, j + 1]
                           + G[i, j - 1] + G[i, j] + G[i, j + 1]
                           + G[i + 1, j - 1] + G[i + 1, j] + G[i + 1, j + 1]) / 9.0


@numba.njit
def gauss_seidel_2d_registers(steps, G):
    # same order of updates; the 3x3 window slides along j in registers (scalar replacement)
    n = G.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            up0, up1 = G[i - 1, 0], G[i - 1, 1]
            md0, md1 = G[i, 0], G[i, 1]
            dn0, dn1 = G[i + 1, 0], G[i + 1, 1]
            for j in range(1, n - 1):
                up2, md2, dn2 = G[i - 1, j + 1], G[i, j + 1], G[i + 1, j + 1]
                v = (up0 + up1 + up2 + md0 + md1 + md2 + dn0 + dn1 + dn2) / 9.0
                G[i, j] = v
                up0, up1 = up1, up2
                md0, md1 = v, md2
                dn0, dn1 = dn1, dn2


@numba.njit(parallel=True)
def wave_fdtd_prange(steps, src, ex, ey, hz):
    nx, ny = ex.shape
    for t in range(steps):
        for j in range(ny):
            ey[0, j] = src[t]
        for i in prange(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.45 * (hz[i, j] - hz[i - 1, j])
        for i in prange(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.45 * (hz[i, j] - hz[i, j - 1])
        for i in prange(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.6 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


@numba.njit(parallel=True)
def wave_fdtd_fused(steps, src, ex, ey, hz):
    """Answer key: ey and ex rows updated in one prange pass (both read hz only), then hz.

    Tried: ``prange`` (three parallel loops: 28-31 ms), ``run1`` (slice expressions: 79-100 ms).
    Kept: 18.6-31 ms.
    """
    # ey and ex rows in one parallel pass (both read hz only), then hz
    nx, ny = ex.shape
    for t in range(steps):
        for i in prange(nx):
            if i == 0:
                for j in range(ny):
                    ey[0, j] = src[t]
            else:
                for j in range(ny):
                    ey[i, j] = ey[i, j] - 0.45 * (hz[i, j] - hz[i - 1, j])
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.45 * (hz[i, j] - hz[i, j - 1])
        for i in prange(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.6 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


@numba.njit(parallel=True)
def wave_fdtd_run1(steps, src, ex, ey, hz):
    for t in range(steps):
        ey[0, :] = src[t]
        ey[1:, :] -= 0.45 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.45 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.6 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


# -- dynamic programming (serial by nature) ------------------------------------------------------


@numba.njit
def lcs_table_registers(a, b, T):
    n = a.shape[0]
    m = b.shape[0]
    for i in range(1, n + 1):
        ai = a[i - 1]
        left = T[i, 0]
        diag = T[i - 1, 0]
        for j in range(1, m + 1):
            up = T[i - 1, j]
            if ai == b[j - 1]:
                left = diag + 1
            elif up > left:
                left = up
            T[i, j] = left
            diag = up


@numba.njit
def lcs_table_run1(a, b, T):
    """Answer key: serial, the row's left value kept in a register.

    Tried: ``registers`` (diagonal kept in a register too: 42.9 ms). Kept: 26.8 ms.
    """
    n = a.shape[0]
    m = b.shape[0]
    for i in range(1, n + 1):
        ai = a[i - 1]
        left = T[i, 0]
        for j in range(1, m + 1):
            if ai == b[j - 1]:
                left = T[i - 1, j - 1] + 1
            else:
                up = T[i - 1, j]
                left = up if up > left else left
            T[i, j] = left


@numba.njit
def pair_folding_transposed(seq, F):
    """Answer key: serial; a transposed copy FT kept alongside F so the split loop reads
    F[i, k] and FT[j, k + 1], two rows, unit stride.

    Tried: ``serial`` (the loops: 32 ms, strided column read), ``run1`` (an array temporary per
    (i, j): 37.5 ms). Kept: 18.6 ms.
    """
    # FT[j, k] = F[k, j] kept alongside F: the split loop reads two rows, unit-stride
    n = seq.shape[0]
    FT = np.zeros((n, n), F.dtype)
    for i in range(n):
        for j in range(n):
            FT[j, i] = F[i, j]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = F[i + 1, j] if i + 1 < n else 0
            if F[i, j - 1] > best:
                best = F[i, j - 1]
            if seq[i] + seq[j] == 3:
                inner = F[i + 1, j - 1] + 1 if i + 1 <= j - 1 else 1
                if inner > best:
                    best = inner
            for k in range(i + 1, j):
                split = F[i, k] + FT[j, k + 1]
                if split > best:
                    best = split
            F[i, j] = best
            FT[j, i] = best


@numba.njit
def pair_folding_serial(seq, F):
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = F[i + 1, j] if i + 1 < n else 0
            if F[i, j - 1] > best:
                best = F[i, j - 1]
            if seq[i] + seq[j] == 3:
                inner = F[i + 1, j - 1] + 1 if i + 1 <= j - 1 else 1
                if inner > best:
                    best = inner
            for k in range(i + 1, j):
                split = F[i, k] + F[k + 1, j]
                if split > best:
                    best = split
            F[i, j] = best


@numba.njit
def pair_folding_run1(seq, F):
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = max(F[i + 1, j] if i + 1 < n else 0, F[i, j - 1])
            if seq[i] + seq[j] == 3:
                best = max(best, F[i + 1, j - 1] + 1 if i + 1 <= j - 1 else 1)
            if j - i > 1:
                best = max(best, np.max(F[i, i + 1:j] + F[i + 2:j + 1, j]))
            F[i, j] = best


@numba.njit
def prefix_scan_serial(x, out):
    """Answer key: a tight serial loop with a running scalar.

    Tried: ``run1`` (``np.cumsum`` into a temporary then copied: 13 ms). Kept: 3.3 ms.
    """
    run = 0.0
    for i in range(x.shape[0]):
        run += x[i]
        out[i] = run


@numba.njit
def prefix_scan_run1(x, out):
    out[:] = np.cumsum(x)


DESIGNS = {
    "covariance_matrix": {"split": _o.covariance_matrix_split, "blas": _o.covariance_matrix_blas,
                          "run1": _o.covariance_matrix_run1},
    "correlation_matrix": {"split": _o.correlation_matrix_split,
                           "blas": _o.correlation_matrix_blas,
                           "run1": _o.correlation_matrix_run1},
    "nearest_centroid": {"prange": _o.nearest_centroid_prange,
                         "serial": _o.nearest_centroid_serial, "run1": _o.nearest_centroid_run1},
    "column_zscore": {"prange": _o.column_zscore_prange, "run1": _o.column_zscore_run1},
    "value_histogram": {"prange": _o.value_histogram_prange,
                        "serial": _o.value_histogram_serial},
    "smooth_1d": {"prange": smooth_1d_prange, "run1": smooth_1d_run1},
    "smooth_2d": {"prange": smooth_2d_prange, "run1": smooth_2d_run1},
    "heat_cube": {"prange": heat_cube_prange, "run1": heat_cube_run1},
    "gauss_seidel_2d": {"serial": gauss_seidel_2d_serial,
                        "registers": gauss_seidel_2d_registers},
    "wave_fdtd": {"prange": wave_fdtd_prange, "fused": wave_fdtd_fused, "run1": wave_fdtd_run1},
    "lcs_table": {"registers": lcs_table_registers, "run1": lcs_table_run1},
    "pair_folding": {"transposed": pair_folding_transposed, "serial": pair_folding_serial,
                     "run1": pair_folding_run1},
    "prefix_scan": {"serial": prefix_scan_serial, "run1": prefix_scan_run1},
}
