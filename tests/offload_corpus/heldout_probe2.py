"""A second held-out probe of the offload search: the same kinds of computations as
``heldout_probe.py`` (maps, reductions, stencils, scans, graph updates), but the *Python* varied
the many ways real code is written — ``while`` loops with a counter, reversed and stepped
ranges, ``//`` bounds and tuple swaps, ``enumerate``/``zip``/``for row in A``, ``len``/``.shape``/
``.size`` bounds, ``continue``/``break``, arrays allocated in the function and returned, tuples of
results, integer/boolean/float32 data, ternaries, ``abs``/``min``/``max``, ``math.exp``/``np.exp``,
an aliased import, a module-level helper and constants, default and keyword arguments, aliased,
sliced, Fortran-ordered, strided and empty inputs, Floyd–Warshall with negative weights,
argmax/argmin with ties.

``PROBES`` maps a name to a :class:`Probe2` (a :class:`~.heldout_probe.Probe` plus ``kwargs``
passed by keyword on every call, and ``unsupported``: loops the analysis must refuse, whose plan
must still give the plain result, the reason in its report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from math import sqrt as root
from typing import Any

import numpy as np

from .heldout_probe import Probe

#: module-level constants read in loops
GAIN = 2.5
OFFSET = -1.0
N_BINS = 8


@dataclass(frozen=True)
class Probe2(Probe):
    """A :class:`Probe` with keyword arguments for the calls and loops that must be refused."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    unsupported: tuple[str, ...] = ()
    #: the arguments alias an array the function writes: search refuses them
    alias_refused: bool = False


def _clamp01(v):
    """A module-level helper called inside a loop."""
    return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)


# -- while loops, reversed and stepped ranges, // bounds -------------------------------------------
def while_axpy(a, x, y):
    """y += a x with a ``while`` loop and a counter."""
    i = 0
    n = len(x)
    while i < n:
        y[i] = y[i] + a * x[i]
        i += 1


def reversed_scale(x, out):
    """out[i] = 3 x[i] - 1, walked from the end: ``range(n - 1, -1, -1)``."""
    for i in range(x.shape[0] - 1, -1, -1):
        out[i] = 3.0 * x[i] - 1.0


def pair_sums_stepped(x, out):
    """out[i // 2] = x[i] + x[i + 1] over ``range(0, n - 1, 2)`` (a ``//`` subscript)."""
    for i in range(0, len(x) - 1, 2):
        out[i // 2] = x[i] + x[i + 1]


def red_black_sweep(a):
    """Odd points from their even neighbours, then even from odd: ``range(1, n - 1, 2)``; each
    stepped loop is parallel (it reads only the other colour)."""
    n = a.shape[0]
    for i in range(1, n - 1, 2):
        a[i] = 0.5 * (a[i - 1] + a[i + 1])
    for i in range(2, n - 1, 2):
        a[i] = 0.5 * (a[i - 1] + a[i + 1])


def reverse_swap(a):
    """Reverse in place by tuple swaps over ``range(n // 2)``, ``n = len(a)`` (2-D: rows are
    views, so the swap copies one row over the other, in Python as in numba)."""
    n = len(a)
    for i in range(n // 2):
        a[i], a[n - 1 - i] = a[n - 1 - i], a[i]


def halve_length(x):
    """Block averages of pairs into a new array ``np.zeros(n // 2)``, returned."""
    m = x.shape[0] // 2
    out = np.zeros(m)
    for i in range(m):
        out[i] = (x[2 * i] + x[2 * i + 1]) / 2
    return out


# -- enumerate, zip, iterating rows ------------------------------------------------------------
def enumerate_squares(x, out):
    """out[i] = v² with ``for i, v in enumerate(x)``."""
    for i, v in enumerate(x):
        out[i] = v * v


def zip_dot(x, y):
    """Σ a·b with ``for a, b in zip(x, y)``, returned."""
    s = 0.0
    for a, b in zip(x, y):  # noqa: B905 (written as scientists write it)
        s += a * b
    return s


def row_iter_norms(A):
    """Euclidean norm of each row with ``for k, row in enumerate(A)`` and an inner range."""
    out = np.empty(A.shape[0])
    for k, row in enumerate(A):
        s = 0.0
        for j in range(row.shape[0]):
            s += row[j] * row[j]
        out[k] = root(s)
    return out


# -- continue / break ----------------------------------------------------------------------------
def count_positive_continue(x):
    """How many entries are > 0, skipping the others with ``continue``; a Python int."""
    count = 0
    for i in range(len(x)):
        if x[i] <= 0:
            continue
        count += 1
    return count


def first_above(x, thr):
    """Index of the first entry above ``thr`` (``break``), -1 when none."""
    idx = -1
    for i in range(x.size):
        if x[i] > thr:
            idx = i
            break
    return idx


def relu_continue_rows(A, out):
    """Row-wise: negative entries skipped with ``continue`` (out pre-zeroed by the caller)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] < 0.0:
                continue
            out[i, j] = A[i, j]


# -- local arrays, several results, int/bool data --------------------------------------------------
def diff_local(x):
    """Forward differences into ``np.empty_like(x)``; first entry kept."""
    d = np.empty_like(x)
    d[0] = x[0]
    for i in range(1, x.shape[0]):
        d[i] = x[i] - x[i - 1]
    return d


def min_max_mean(x):
    """(min, max, mean) of a vector with the ``min``/``max`` builtins and a running sum."""
    lo = x[0]
    hi = x[0]
    s = 0.0
    for i in range(x.shape[0]):
        lo = min(lo, x[i])
        hi = max(hi, x[i])
        s = s + x[i]
    return lo, hi, s / x.shape[0]


def int32_histogram(labels, k):
    """Counts of int32 labels in ``range(k)`` into a local ``np.int32`` array."""
    counts = np.zeros(k, dtype=np.int32)
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1
    return counts


def mask_and_count(x, thr):
    """A boolean mask of ``x > thr`` and how many are set: (mask, count)."""
    mask = np.zeros(x.shape, dtype=np.bool_)
    n_set = 0
    for i in range(x.shape[0]):
        mask[i] = x[i] > thr
        if mask[i]:
            n_set += 1
    return mask, n_set


def int_count_to_python(x):
    """A reduction into a Python int of ``int(...)`` of comparisons."""
    total = 0
    for i in range(len(x)):
        total += int(x[i] > 0.5)
    return total


def float32_sum_from_zero(x):
    """Σ x for float32 x from ``s = 0.0``."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def int32_saxpy(a, x, y):
    """y = a x + y on int32 arrays (``a`` a Python int)."""
    for i in range(y.shape[0]):
        y[i] = a * x[i] + y[i]


# -- ternaries, builtins, math, helpers, constants, defaults -------------------------------------
def leaky_abs(x, out):
    """A ternary with ``abs``: x if positive else 0.1 |x|."""
    for i in range(len(x)):
        out[i] = x[i] if x[i] > 0 else 0.1 * abs(x[i])


def clamp_min_max(x, lo, hi, out):
    """out = min(max(x, lo), hi) with the builtins."""
    for i in range(x.shape[0]):
        out[i] = min(max(x[i], lo), hi)


def sigmoid_math_exp(x):
    """1 / (1 + e^-x) with ``math.exp`` into a local array."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = 1.0 / (1.0 + math.exp(-x[i]))
    return out


def softplus_np_exp_2d(X, out):
    """log(1 + e^x) with ``np.exp``/``np.log`` over a 2-D array."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            out[i, j] = np.log(1.0 + np.exp(X[i, j]))


def helper_clamp(x, out):
    """A module-level helper function called in the loop."""
    for i in range(x.shape[0]):
        out[i] = _clamp01(x[i])


def gain_offset_constants(x, out):
    """Module-level constants ``GAIN``, ``OFFSET`` in an affine map."""
    for i in range(x.size):
        out[i] = GAIN * x[i] + OFFSET


def scale_shift_defaults(x, out, scale=2.0, shift=0.0):
    """Default arguments; the calls pass ``shift`` by keyword."""
    for i in range(x.shape[0]):
        out[i] = scale * x[i] + shift


def binned_counts_const(x):
    """Counts of x in [0, 1) into ``N_BINS`` bins (a module constant), ``int(v * N_BINS)``."""
    counts = np.zeros(N_BINS, dtype=np.int64)
    for i in range(x.shape[0]):
        b = int(x[i] * N_BINS)
        if b >= N_BINS:
            b = N_BINS - 1
        counts[b] += 1
    return counts


# -- aliasing, views, layouts, empty ---------------------------------------------------------------
def sq_dist_self(x, y):
    """Σ (x - y)² read from two arguments (called with the same array twice)."""
    s = 0.0
    for i in range(x.shape[0]):
        d = x[i] - y[i]
        s += d * d
    return s


def add_into_first(a, b):
    """a += b; called as ``f(a, a)`` (doubles a in place)."""
    for i in range(a.shape[0]):
        a[i] = a[i] + b[i]


def col_sums_view(A, out):
    """Column sums, called on a strided view ``A[1:, ::2]``."""
    for j in range(A.shape[1]):
        s = 0.0
        for i in range(A.shape[0]):
            s += A[i, j]
        out[j] = s


def row_scale_fortran(A, w):
    """A[i, j] *= w[i] in place on a Fortran-ordered A."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] *= w[i]


def sum_maybe_empty(x):
    """Σ x over an empty vector (0.0)."""
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s


# -- graph updates and extrema with ties -----------------------------------------------------------
def floyd_warshall_tuple(dist):
    """All-pairs shortest paths with negative weights (a negative cycle on purpose): the i/j loops
    are parallel only while dist[k, k] >= 0."""
    n, m = dist.shape
    for k in range(n):
        for i in range(n):
            for j in range(m):
                d = dist[i][k] + dist[k][j]
                if d < dist[i][j]:
                    dist[i][j] = d


def argmax_ties(x):
    """(first index of the maximum, the maximum) with ties in the data."""
    best = x[0]
    best_i = 0
    for i in range(1, x.shape[0]):
        if x[i] > best:
            best = x[i]
            best_i = i
    return best_i, best


def argmin_rows_ties(X, idx):
    """Per-row first index of the minimum (ties), written into an int64 array."""
    for i in range(X.shape[0]):
        m = X[i, 0]
        k = 0
        for j in range(1, X.shape[1]):
            if X[i, j] < m:
                m = X[i, j]
                k = j
        idx[i] = k


def _ties(g, n):
    return np.floor(g.random(n * 8) * 5.0)


def _fw_args(g, n):
    d = np.floor(g.random((n, n)) * 10.0) - 2.0
    np.fill_diagonal(d, 0.0)
    d[1, 0] = -6.0  # with d[0, 1] <= 7 a negative cycle 0 → 1 → 0
    return (d,)


def _labels(g, n):
    return (g.integers(0, 5, n * 4).astype(np.int32), 5)


def _strided(g, n):
    A = g.random((n + 1, 2 * n + 1))
    return (A[1:, ::2], np.zeros(n + 1))


def _aliased(g, n):
    a = g.random(n * 4)
    return (a, a)


PROBES: dict[str, Probe2] = {
    "while_axpy": Probe2(while_axpy, lambda g, n: (1.5, g.random(n * 8), g.random(n * 8)),
                         moderate=250_000),
    "reversed_scale": Probe2(reversed_scale, lambda g, n: (g.random(n * 8), np.zeros(n * 8)),
                             parallel=("L1",), moderate=250_000),
    "pair_sums_stepped": Probe2(pair_sums_stepped,
                                lambda g, n: (g.random(n * 8 + 1), np.zeros(n * 4)),
                                moderate=250_000,
                                note="L1 parallel in truth; i // 2 is not affine"),
    "red_black_sweep": Probe2(red_black_sweep, lambda g, n: (g.random(n * 8 + 3),),
                              parallel=("L1", "L2"), moderate=250_000),
    "reverse_swap_odd": Probe2(reverse_swap, lambda g, n: (g.random(n * 8 + 1),),
                               moderate=250_000,
                               note="L1 parallel in truth; the n // 2 bound proves nothing"),
    "reverse_swap_int32_2d": Probe2(reverse_swap,
                                    lambda g, n: (g.integers(0, 99, (n + 1, 3)).astype(np.int32),),
                                    moderate=100_000),
    "halve_length": Probe2(halve_length, lambda g, n: (g.random(n * 8 + 1),), parallel=("L1",),
                           moderate=250_000),
    "enumerate_squares": Probe2(enumerate_squares, lambda g, n: (g.random(n * 8),
                                                                 np.zeros(n * 8)),
                                parallel=("L1",), moderate=250_000),
    "zip_dot": Probe2(zip_dot, lambda g, n: (g.random(n * 8), g.random(n * 8 + 3)),
                      reduction=("L1",), moderate=250_000),
    "row_iter_norms": Probe2(row_iter_norms, lambda g, n: (g.random((n, n + 3)),),
                             parallel=("L1",), reduction=("L2",), moderate=1_000),
    "count_positive_continue": Probe2(count_positive_continue,
                                      lambda g, n: (g.random(n * 8) - 0.5,), moderate=250_000),
    "first_above": Probe2(first_above, lambda g, n: (g.random(n * 8), 0.9), unsupported=("L1",),
                          moderate=250_000),
    "relu_continue_rows": Probe2(relu_continue_rows,
                                 lambda g, n: (g.random((n, n)) - 0.5, np.zeros((n, n))),
                                 moderate=1_000),
    "diff_local": Probe2(diff_local, lambda g, n: (g.random(n * 8),), parallel=("L1",),
                         moderate=250_000),
    "min_max_mean": Probe2(min_max_mean, lambda g, n: (g.random(n * 8),), reduction=("L1",),
                           moderate=250_000),
    "int32_histogram": Probe2(int32_histogram, _labels, moderate=250_000),
    "mask_and_count": Probe2(mask_and_count, lambda g, n: (g.random(n * 8), 0.3),
                             moderate=250_000),
    "int_count_to_python": Probe2(int_count_to_python, lambda g, n: (g.random(n * 8),),
                                  reduction=("L1",), moderate=250_000),
    "float32_sum_from_zero": Probe2(float32_sum_from_zero,
                                    lambda g, n: (g.random(n * 8).astype(np.float32),),
                                    reduction=("L1",), moderate=250_000),
    "int32_saxpy": Probe2(int32_saxpy,
                          lambda g, n: (3, g.integers(-9, 9, n * 8).astype(np.int32),
                                        g.integers(-9, 9, n * 8).astype(np.int32)),
                          parallel=("L1",), moderate=250_000),
    "leaky_abs": Probe2(leaky_abs, lambda g, n: (g.random(n * 8) - 0.5, np.zeros(n * 8)),
                        parallel=("L1",), moderate=250_000),
    "clamp_min_max": Probe2(clamp_min_max,
                            lambda g, n: (g.random(n * 8), 0.2, 0.7, np.zeros(n * 8)),
                            parallel=("L1",), moderate=250_000),
    "sigmoid_math_exp": Probe2(sigmoid_math_exp, lambda g, n: (8 * g.random(n * 8) - 4,),
                               parallel=("L1",), moderate=250_000),
    "softplus_np_exp_2d": Probe2(softplus_np_exp_2d,
                                 lambda g, n: (g.random((n, n)) * 4 - 2, np.zeros((n, n))),
                                 parallel=("L1", "L2"), moderate=1_000),
    "helper_clamp": Probe2(helper_clamp,
                           lambda g, n: (g.random(n * 8) * 2 - 0.5, np.zeros(n * 8)),
                           parallel=("L1",), moderate=250_000),
    "gain_offset_constants": Probe2(gain_offset_constants,
                                    lambda g, n: (g.random(n * 8), np.zeros(n * 8)),
                                    parallel=("L1",), moderate=250_000),
    "scale_shift_defaults": Probe2(scale_shift_defaults,
                                   lambda g, n: (g.random(n * 8), np.zeros(n * 8)),
                                   parallel=("L1",), kwargs={"shift": 0.5}, moderate=250_000),
    "binned_counts_const": Probe2(binned_counts_const, lambda g, n: (g.random(n * 8),),
                                  moderate=250_000),
    "sq_dist_self_aliased": Probe2(sq_dist_self, _aliased, reduction=("L1",), moderate=250_000),
    "add_into_first_aliased": Probe2(add_into_first, _aliased, alias_refused=True,
                                     moderate=250_000),
    "col_sums_strided_view": Probe2(col_sums_view, _strided, parallel=("L1",),
                                    reduction=("L2",), moderate=1_000),
    "row_scale_fortran": Probe2(row_scale_fortran,
                                lambda g, n: (np.asfortranarray(g.random((n, n + 2))),
                                              g.random(n)),
                                parallel=("L1", "L2"), moderate=1_000),
    "sum_empty": Probe2(sum_maybe_empty, lambda g, n: (np.zeros(0),), reduction=("L1",)),
    "floyd_warshall_negative": Probe2(floyd_warshall_tuple, _fw_args, serial=("L1",),
                                      small=10, moderate=250,
                                      note="i, j parallel only while dist[k, k] >= 0"),
    "argmax_ties": Probe2(argmax_ties, lambda g, n: (_ties(g, n),), moderate=250_000),
    "argmin_rows_ties": Probe2(argmin_rows_ties,
                               lambda g, n: (np.floor(g.random((n, n)) * 3.0),
                                             np.zeros(n, dtype=np.int64)),
                               parallel=("L1",), moderate=1_000),
}
