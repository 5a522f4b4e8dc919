"""Loop kernels with reductions, recurrences, indirect writes and unsupported constructs."""

from __future__ import annotations

import math

import numpy as np


def nbody_forces(pos, mass, acc, eps):
    """Softened gravitational accelerations: pos (n, 3), mass (n,), acc (n, 3) float64."""
    n = pos.shape[0]
    for i in range(n):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(n):
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            dz = pos[j, 2] - pos[i, 2]
            r2 = dx * dx + dy * dy + dz * dz + eps
            inv = mass[j] / (r2 * math.sqrt(r2))
            ax += dx * inv
            ay += dy * inv
            az += dz * inv
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


def histogram(x, counts):
    """counts[b] += 1 for each x in [0, 1): an indirect write, so the loop stays sequential."""
    nbins = counts.shape[0]
    for i in range(x.shape[0]):
        b = int(x[i] * nbins)
        counts[b] += 1


def prefix_sum(x, out):
    """Inclusive prefix sum out[i] = x[0] + … + x[i]: a flow dependence of distance 1."""
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]


def running_sum(x, out):
    """The prefix sum written with a scalar: acc carries a value, read in every iteration."""
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc


def array_max(x):
    """Largest element of x (n,) float64 through ``m = max(m, x[i])``: a max reduction."""
    m = x[0]
    for i in range(1, x.shape[0]):
        m = max(m, x[i])
    return m


def row_norms(A, out):
    """out[i] = sqrt(sum_j A[i, j]**2): parallel rows, an inner reduction."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j]
        out[i] = math.sqrt(s)


def collatz_steps(x, out):
    """Steps of the Collatz map per start value: a while loop with a data-dependent exit, run
    within one iteration of the parallel i loop."""
    for i in range(x.shape[0]):
        v = x[i]
        c = 0
        while v != 1:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            c += 1
        out[i] = c


def first_crossing(x, thr):
    """Index of the first value above ``thr`` (-1 when none): ``break`` ends the loop early,
    so its iterations cannot run in any order."""
    found = -1
    for i in range(x.shape[0]):
        if x[i] > thr:
            found = i
            break
    return found


def blur_rows(img, out):
    """Horizontal 3-tap blur: a loop over rows and a loop over columns, both parallel."""
    for i in range(img.shape[0]):
        for j in range(1, img.shape[1] - 1):
            out[i, j] = (img[i, j - 1] + 2.0 * img[i, j] + img[i, j + 1]) * 0.25


def _rng(size: int, seed: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, size])


def args_nbody_forces(n: int = 24, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, 3)), r.random(n) + 0.5, np.zeros((n, 3)), 1e-3


def args_histogram(n: int = 200, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random(n), np.zeros(16)


def args_prefix_sum(n: int = 100, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random(n), np.zeros(n)


def args_running_sum(n: int = 100, seed: int = 0) -> tuple:
    return args_prefix_sum(n, seed)


def args_array_max(n: int = 100, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return (r.random(n),)


def args_row_norms(n: int = 30, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n + 4)), np.zeros(n)


def args_collatz_steps(n: int = 30, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.integers(1, 1000, n), np.zeros(n, dtype=np.int64)


def args_first_crossing(n: int = 100, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    x = r.random(n)
    return x, float(np.sort(x)[-2])  # the second largest: found late in the array


def args_blur_rows(n: int = 20, seed: int = 0) -> tuple:
    r = _rng(n, seed)
    return r.random((n, n + 6)), np.zeros((n, n + 6))
