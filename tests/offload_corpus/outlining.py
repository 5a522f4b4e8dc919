"""Functions numba cannot compile as a whole, written the way students and scientists write them,
for outlining (:mod:`hetlab.offload.searching.outline`): a formatted ``print`` of a result or of
each iteration, a dict or a dict comprehension returned, a ``try`` around the parsing of an
argument, a timer, an ``assert`` with a formatted message, a list of residuals — around loops
over NumPy arrays that numba compiles. Each has an answer key in ``outlining_keys.py`` (the
loops written by hand in numba, the rest as in the function).

``CASES[name] = Case(fn, make, key, moderate)``: ``make(rng, n)`` gives fresh arguments of size
``n``; ``moderate`` is the size of ``benchmarks/offload_outline.py`` (the Python function takes
tens to hundreds of milliseconds there).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import outlining_keys as keys


def energy_report(x):
    """Sum of squares and mean absolute value, printed and returned in a dict."""
    total = 0.0
    absolute = 0.0
    for i in range(len(x)):
        total += x[i] * x[i]
        absolute += abs(x[i])
    print(f"energy {total:.4f}, mean |x| {absolute / len(x):.4f}")
    return {"energy": total, "mean_abs": absolute / len(x)}


def timed_smooth(x, out):
    """A three-point moving average into ``out``, the time it took printed."""
    t0 = time.perf_counter()
    n = len(x)
    out[0] = x[0]
    out[n - 1] = x[n - 1]
    for i in range(1, n - 1):
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0
    print(f"smoothed {n} points in {time.perf_counter() - t0:.4f} s")


def row_norms_summary(A):
    """Euclidean norm of each row, and a dict of their extremes."""
    norms = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] ** 2
        norms[i] = math.sqrt(s)
    summary = {"smallest": float(norms.min()), "largest": float(norms.max())}
    return norms, summary


def scale_by_text_factor(x, factor):
    """``x`` times a factor given as text; 1 when the text is not a number."""
    try:
        f = float(factor)
    except (TypeError, ValueError):
        f = 1.0
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = x[i] * f
    return out


def fit_line_verbose(X, y, epochs, lr):
    """Least squares by gradient descent, the loss of each epoch printed."""
    w = np.zeros(X.shape[1])
    losses = []
    for epoch in range(epochs):
        grad = np.zeros(X.shape[1])
        loss = 0.0
        for i in range(X.shape[0]):
            r = -y[i]
            for j in range(X.shape[1]):
                r += X[i, j] * w[j]
            loss += r * r
            for j in range(X.shape[1]):
                grad[j] += r * X[i, j]
        for j in range(X.shape[1]):
            w[j] -= lr * grad[j] / X.shape[0]
        losses.append(loss)
        print(f"epoch {epoch}: loss {loss:.6f}")
    return w, losses


def kmeans_verbose(P, C, iters):
    """Lloyd's k-means from the centroids ``C`` (updated in place), the inertia printed each
    iteration; returns the labels."""
    n, k = P.shape[0], C.shape[0]
    labels = np.zeros(n, dtype=np.int64)
    for it in range(iters):
        inertia = 0.0
        for i in range(n):
            best, best_d = 0, np.inf
            for c in range(k):
                d = 0.0
                for j in range(P.shape[1]):
                    d += (P[i, j] - C[c, j]) ** 2
                if d < best_d:
                    best, best_d = c, d
            labels[i] = best
            inertia += best_d
        sums = np.zeros_like(C)
        counts = np.zeros(k)
        for i in range(n):
            counts[labels[i]] += 1
            for j in range(P.shape[1]):
                sums[labels[i], j] += P[i, j]
        for c in range(k):
            if counts[c] > 0:
                for j in range(P.shape[1]):
                    C[c, j] = sums[c, j] / counts[c]
        print(f"iteration {it}: inertia {inertia:.3f}")
    return labels


def power_iteration_log(A, iters):
    """The dominant eigenvector of ``A`` by power iteration, each step's norm printed."""
    n = A.shape[0]
    v = np.ones(n) / math.sqrt(n)
    for it in range(iters):
        w = np.zeros(n)
        for i in range(n):
            for j in range(n):
                w[i] += A[i, j] * v[j]
        norm = 0.0
        for i in range(n):
            norm += w[i] * w[i]
        norm = math.sqrt(norm)
        for i in range(n):
            v[i] = w[i] / norm
        print(f"step {it}: |Av| = {norm:.6f}")
    return v


def jacobi_history(u, iters):
    """Jacobi sweeps of Laplace's equation on ``u`` (borders fixed), the residual of each
    sweep kept in a list and printed every fifth sweep."""
    history = []
    new = u.copy()
    for it in range(iters):
        residual = 0.0
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                new[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
                residual += abs(new[i, j] - u[i, j])
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                u[i, j] = new[i, j]
        history.append(residual)
        if it % 5 == 0:
            print(f"sweep {it}: residual {residual:.3e}")
    return history


def histogram_labels(x, edges):
    """Counts of ``x`` between consecutive ``edges`` (sorted), returned as a dict keyed by the
    bins' text."""
    counts = np.zeros(len(edges) - 1, dtype=np.int64)
    for i in range(len(x)):
        for k in range(len(edges) - 1):
            if edges[k] <= x[i] < edges[k + 1]:
                counts[k] += 1
                break
    return {f"[{edges[k]:.2f}, {edges[k + 1]:.2f})": int(counts[k])
            for k in range(len(edges) - 1)}


def closest_pair_checked(P):
    """The closest pair of points (indices and distance), after an ``assert`` on the shape with
    a formatted message."""
    assert P.ndim == 2, f"expected an (n, d) array of points, got {P.ndim:d} dimensions"
    best_i, best_j, best = 0, 1, np.inf
    for i in range(P.shape[0]):
        for j in range(i + 1, P.shape[0]):
            d = 0.0
            for k in range(P.shape[1]):
                d += (P[i, k] - P[j, k]) ** 2
            if d < best:
                best_i, best_j, best = i, j, d
    return best_i, best_j, math.sqrt(best)


@dataclass(frozen=True)
class Case:
    """One function of the corpus, its argument maker and answer key."""

    fn: Callable[..., Any]
    make: Callable[[np.random.Generator, int], tuple]
    key: Callable[..., Any]
    moderate: int


def _kmeans(g: np.random.Generator, n: int) -> tuple:
    P = g.random((n, 3))
    return P, P[:4].copy(), 3


def _fit(g: np.random.Generator, n: int) -> tuple:
    X = g.random((n, 6))
    return X, X @ g.random(6), 3, 0.5


CASES: dict[str, Case] = {
    "energy_report": Case(energy_report, lambda g, n: (g.standard_normal(n),),
                          keys.energy_report, 1_000_000),
    "timed_smooth": Case(timed_smooth, lambda g, n: (g.random(max(n, 2)), np.zeros(max(n, 2))),
                         keys.timed_smooth, 1_000_000),
    "row_norms_summary": Case(row_norms_summary, lambda g, n: (g.random((n, 40)),),
                              keys.row_norms_summary, 20_000),
    "scale_by_text_factor": Case(scale_by_text_factor, lambda g, n: (g.random(n), "2.5"),
                                 keys.scale_by_text_factor, 1_000_000),
    "fit_line_verbose": Case(fit_line_verbose, _fit, keys.fit_line_verbose, 20_000),
    "kmeans_verbose": Case(kmeans_verbose, _kmeans, keys.kmeans_verbose, 10_000),
    "power_iteration_log": Case(power_iteration_log,
                                lambda g, n: (g.random((n, n)), 4), keys.power_iteration_log,
                                300),
    "jacobi_history": Case(jacobi_history, lambda g, n: (g.random((n, n)), 6),
                           keys.jacobi_history, 200),
    "histogram_labels": Case(histogram_labels,
                             lambda g, n: (g.random(n), np.linspace(0.0, 1.0, 11)),
                             keys.histogram_labels, 200_000),
    "closest_pair_checked": Case(closest_pair_checked, lambda g, n: (g.random((n, 3)),),
                                 keys.closest_pair_checked, 600),
}
