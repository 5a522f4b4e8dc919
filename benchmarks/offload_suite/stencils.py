"""Time-stepped stencils: 1-D/2-D Jacobi with two arrays, 3-D heat, an in-place Gauss-Seidel
that must stay serial, and a 2-D FDTD-like field update."""

from __future__ import annotations

from . import designs_grid as _d
from ._spec import SuiteKernel, rng

STEPS = 10


# -- 1-D three-point smoothing, two arrays ------------------------------------------------------
def smooth_1d(steps, a, b):
    """steps × (b = 3-point mean of a; a = 3-point mean of b) on the interior; a, b (n,)."""
    n = a.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
        for i in range(1, n - 1):
            a[i] = (b[i - 1] + b[i] + b[i + 1]) / 3.0


def args_1d(n, seed):
    g = rng(seed)
    return (STEPS, g.random(n), g.random(n))


# -- 2-D five-point Jacobi, two arrays ----------------------------------------------------------
def smooth_2d(steps, A, B):
    """steps × Jacobi sweeps A → B → A on the interior of A, B (n, n) float64."""
    n = A.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


def args_2d(n, seed):
    g = rng(seed)
    return (STEPS, g.random((n, n)), g.random((n, n)))


# -- 3-D heat equation, explicit, two arrays ---------------------------------------------------
def heat_cube(steps, u, v):
    """steps × explicit heat steps u → v → u (7-point Laplacian, factor 0.125); u, v (n, n, n)."""
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    v[i, j, k] = u[i, j, k] + 0.125 * (
                        u[i + 1, j, k] - 2.0 * u[i, j, k] + u[i - 1, j, k]
                        + u[i, j + 1, k] - 2.0 * u[i, j, k] + u[i, j - 1, k]
                        + u[i, j, k + 1] - 2.0 * u[i, j, k] + u[i, j, k - 1])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    u[i, j, k] = v[i, j, k] + 0.125 * (
                        v[i + 1, j, k] - 2.0 * v[i, j, k] + v[i - 1, j, k]
                        + v[i, j + 1, k] - 2.0 * v[i, j, k] + v[i, j - 1, k]
                        + v[i, j, k + 1] - 2.0 * v[i, j, k] + v[i, j, k - 1])


def args_3d(n, seed):
    g = rng(seed)
    return (STEPS, g.random((n, n, n)), g.random((n, n, n)))


# -- in-place Gauss-Seidel: every point reads values updated in this sweep --------------------
def gauss_seidel_2d(steps, G):
    """steps × in-place 9-point Gauss-Seidel sweeps over the interior of G (n, n) float64."""
    n = G.shape[0]
    for t in range(0, steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                G[i, j] = (G[i - 1, j - 1] + G[i - 1, j] + G[i - 1, j + 1]
                           + G[i, j - 1] + G[i, j] + G[i, j + 1]
                           + G[i + 1, j - 1] + G[i + 1, j] + G[i + 1, j + 1]) / 9.0


def args_gs(n, seed):
    return (STEPS, rng(seed).random((n, n)))


# -- 2-D FDTD-like update of three coupled fields ----------------------------------------------
def wave_fdtd(steps, src, ex, ey, hz):
    """steps × (drive row 0 of ey with src[t]; update ey, ex from hz; hz from ex, ey).

    src (steps,), ex, ey, hz (nx, ny) float64, fields updated in place.
    """
    nx = ex.shape[0]
    ny = ex.shape[1]
    for t in range(steps):
        for j in range(ny):
            ey[0, j] = src[t]
        for i in range(1, nx):
            for j in range(ny):
                ey[i, j] = ey[i, j] - 0.45 * (hz[i, j] - hz[i - 1, j])
        for i in range(nx):
            for j in range(1, ny):
                ex[i, j] = ex[i, j] - 0.45 * (hz[i, j] - hz[i, j - 1])
        for i in range(nx - 1):
            for j in range(ny - 1):
                hz[i, j] = hz[i, j] - 0.6 * (ex[i, j + 1] - ex[i, j] + ey[i + 1, j] - ey[i, j])


def args_fdtd(n, seed):
    g = rng(seed)
    return (STEPS, g.random(STEPS), g.random((n, n + 10)), g.random((n, n + 10)),
            g.random((n, n + 10)))


# the answer keys: the design of designs_grid kept for each kernel (README.md says why)
smooth_1d_hand = _d.smooth_1d_run1
smooth_2d_hand = _d.smooth_2d_prange
heat_cube_hand = _d.heat_cube_prange
gauss_seidel_2d_hand = _d.gauss_seidel_2d_serial
wave_fdtd_hand = _d.wave_fdtd_fused

KERNELS = [
    SuiteKernel("smooth_1d", "stencil", smooth_1d, args_1d, smooth_1d_hand, 1_000_000, 40,
                ("i", "i"), True, "range(1, n - 1), two arrays, time loop outside"),
    SuiteKernel("smooth_2d", "stencil", smooth_2d, args_2d, smooth_2d_hand, 1000, 8,
                ("i", "j", "i", "j"), True, "5-point Jacobi, two arrays"),
    SuiteKernel("heat_cube", "stencil", heat_cube, args_3d, heat_cube_hand, 110, 6,
                ("i", "j", "k", "i", "j", "k"), True, "7-point 3-D heat, two arrays"),
    SuiteKernel("gauss_seidel_2d", "stencil", gauss_seidel_2d, args_gs, gauss_seidel_2d_hand,
                450, 8, (), False, "in place: each point reads this sweep's updates; serial"),
    SuiteKernel("wave_fdtd", "stencil", wave_fdtd, args_fdtd, wave_fdtd_hand, 800, 7,
                ("j", "i", "j", "i", "j", "i", "j"), True,
                "three coupled fields, source row from src[t], differently shaped ranges"),
]
