# ruff: noqa: B007  (PolyBench time-step loops do not read their variable)
"""Stencil loop kernels over time steps (Jacobi, Gauss-Seidel, heat, a Himeno-like solver)."""

from __future__ import annotations

import numpy as np


def jacobi_1d(A, B, tsteps):
    """PolyBench jacobi-1d: tsteps two-sweep 3-point averages on A, B (n,) float64."""
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])


def jacobi_2d(A, B, tsteps):
    """PolyBench jacobi-2d: 5-point averages, A and B (n, n) float64, alternating."""
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])


def seidel_2d(A, tsteps):
    """PolyBench seidel-2d: in-place 9-point Gauss-Seidel sweeps on A (n, n) (all sequential)."""
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0


def heat_3d(A, B, tsteps):
    """PolyBench heat-3d: 7-point 3-D heat equation, A and B (n, n, n) float64."""
    n = A.shape[0]
    for t in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    B[i, j, k] = (0.125 * (A[i + 1, j, k] - 2.0 * A[i, j, k] + A[i - 1, j, k])
                                  + 0.125 * (A[i, j + 1, k] - 2.0 * A[i, j, k] + A[i, j - 1, k])
                                  + 0.125 * (A[i, j, k + 1] - 2.0 * A[i, j, k] + A[i, j, k - 1])
                                  + A[i, j, k])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                for k in range(1, n - 1):
                    A[i, j, k] = (0.125 * (B[i + 1, j, k] - 2.0 * B[i, j, k] + B[i - 1, j, k])
                                  + 0.125 * (B[i, j + 1, k] - 2.0 * B[i, j, k] + B[i, j - 1, k])
                                  + 0.125 * (B[i, j, k + 1] - 2.0 * B[i, j, k] + B[i, j, k - 1])
                                  + B[i, j, k])


def himeno(p, a, wrk, omega, nn):
    """Himeno-like Poisson solver: nn Jacobi sweeps of a 7-point stencil on p (I, J, K).

    a (I, J, K) holds the center weight; wrk is scratch of p's shape. Returns the last sweep's
    residual sum of squares (``gosa``), a reduction over the three space loops.
    """
    ni = p.shape[0]
    nj = p.shape[1]
    nk = p.shape[2]
    gosa = 0.0
    for it in range(nn):
        gosa = 0.0
        for i in range(1, ni - 1):
            for j in range(1, nj - 1):
                for k in range(1, nk - 1):
                    s0 = (p[i + 1, j, k] + p[i - 1, j, k] + p[i, j + 1, k] + p[i, j - 1, k]
                          + p[i, j, k + 1] + p[i, j, k - 1]) / 6.0
                    ss = (s0 - p[i, j, k]) * a[i, j, k]
                    gosa += ss * ss
                    wrk[i, j, k] = p[i, j, k] + omega * ss
        for i in range(1, ni - 1):
            for j in range(1, nj - 1):
                for k in range(1, nk - 1):
                    p[i, j, k] = wrk[i, j, k]
    return gosa


def _rng(size: int, seed: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, size])


def args_jacobi_1d(n: int = 60, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random(n), r.random(n), 4


def args_jacobi_2d(n: int = 16, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n)), r.random((n, n)), 3


def args_seidel_2d(n: int = 12, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n)), 2


def args_heat_3d(n: int = 8, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n, n)), r.random((n, n, n)), 2


def args_himeno(n: int = 8, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    p = r.random((n, n, n + 2))
    return p, np.ones_like(p), np.zeros_like(p), 0.8, 2
