"""Answer keys of the outlining corpus (``outlining.py``): the loops an expert would compile by
hand — numba kernels with ``prange`` over independent rows or elements and reductions, ``@``
for the products — called from the same Python around them (the ``print``, the dict, the
``try``, the timer), with the same arguments, effects, printed lines and results.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np
from numba import prange


@numba.njit(parallel=True)
def _energy(x):
    total = 0.0
    absolute = 0.0
    for i in prange(x.shape[0]):
        total += x[i] * x[i]
        absolute += abs(x[i])
    return total, absolute


def energy_report(x):
    total, absolute = _energy(x)
    print(f"energy {total:.4f}, mean |x| {absolute / len(x):.4f}")
    return {"energy": total, "mean_abs": absolute / len(x)}


@numba.njit(parallel=True)
def _smooth(x, out):
    n = x.shape[0]
    out[0] = x[0]
    out[n - 1] = x[n - 1]
    for i in prange(1, n - 1):
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0


def timed_smooth(x, out):
    t0 = time.perf_counter()
    _smooth(x, out)
    print(f"smoothed {len(x)} points in {time.perf_counter() - t0:.4f} s")


@numba.njit(parallel=True)
def _row_norms(A):
    norms = np.empty(A.shape[0])
    for i in prange(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j]
        norms[i] = math.sqrt(s)
    return norms


def row_norms_summary(A):
    norms = _row_norms(A)
    return norms, {"smallest": float(norms.min()), "largest": float(norms.max())}


@numba.njit(parallel=True)
def _scaled(x, f):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = x[i] * f
    return out


def scale_by_text_factor(x, factor):
    try:
        f = float(factor)
    except (TypeError, ValueError):
        f = 1.0
    return _scaled(x, f)


def fit_line_verbose(X, y, epochs, lr):
    w = np.zeros(X.shape[1])
    losses = []
    for epoch in range(epochs):
        r = X @ w - y
        loss = float(r @ r)
        w -= lr * (r @ X) / X.shape[0]
        losses.append(loss)
        print(f"epoch {epoch}: loss {loss:.6f}")
    return w, losses


@numba.njit(parallel=True)
def _assign(P, C, labels, dist):
    for i in prange(P.shape[0]):
        best, best_d = 0, np.inf
        for c in range(C.shape[0]):
            d = 0.0
            for j in range(P.shape[1]):
                t = P[i, j] - C[c, j]
                d += t * t
            if d < best_d:
                best, best_d = c, d
        labels[i] = best
        dist[i] = best_d


@numba.njit
def _update(P, C, labels):
    sums = np.zeros_like(C)
    counts = np.zeros(C.shape[0])
    for i in range(P.shape[0]):
        counts[labels[i]] += 1
        for j in range(P.shape[1]):
            sums[labels[i], j] += P[i, j]
    for c in range(C.shape[0]):
        if counts[c] > 0:
            for j in range(P.shape[1]):
                C[c, j] = sums[c, j] / counts[c]


def kmeans_verbose(P, C, iters):
    labels = np.zeros(P.shape[0], dtype=np.int64)
    dist = np.empty(P.shape[0])
    for it in range(iters):
        _assign(P, C, labels, dist)
        inertia = dist.sum()
        _update(P, C, labels)
        print(f"iteration {it}: inertia {inertia:.3f}")
    return labels


def power_iteration_log(A, iters):
    v = np.ones(A.shape[0]) / math.sqrt(A.shape[0])
    for it in range(iters):
        w = A @ v
        norm = math.sqrt(float(w @ w))
        v = w / norm
        print(f"step {it}: |Av| = {norm:.6f}")
    return v


@numba.njit(parallel=True)
def _sweep(u, new):
    residual = 0.0
    for i in prange(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            new[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
            residual += abs(new[i, j] - u[i, j])
    return residual


def jacobi_history(u, iters):
    history = []
    new = u.copy()
    for it in range(iters):
        residual = _sweep(u, new)
        u[1:-1, 1:-1] = new[1:-1, 1:-1]
        history.append(residual)
        if it % 5 == 0:
            print(f"sweep {it}: residual {residual:.3e}")
    return history


@numba.njit
def _counts(x, edges):
    counts = np.zeros(edges.shape[0] - 1, dtype=np.int64)
    for i in range(x.shape[0]):
        for k in range(edges.shape[0] - 1):
            if edges[k] <= x[i] < edges[k + 1]:
                counts[k] += 1
                break
    return counts


def histogram_labels(x, edges):
    counts = _counts(x, edges)
    return {f"[{edges[k]:.2f}, {edges[k + 1]:.2f})": int(counts[k])
            for k in range(len(edges) - 1)}


@numba.njit
def _closest(P):
    best_i, best_j, best = 0, 1, np.inf
    for i in range(P.shape[0]):
        for j in range(i + 1, P.shape[0]):
            d = 0.0
            for k in range(P.shape[1]):
                t = P[i, k] - P[j, k]
                d += t * t
            if d < best:
                best_i, best_j, best = i, j, d
    return best_i, best_j, best


def closest_pair_checked(P):
    assert P.ndim == 2, f"expected an (n, d) array of points, got {P.ndim:d} dimensions"
    best_i, best_j, best = _closest(P)
    return best_i, best_j, math.sqrt(best)
