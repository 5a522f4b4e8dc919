"""Odd but ordinary functions, written the way scientists write them, that nobody wrote for the
offload engine: while loops, early exits, try/except, closures, containers, strings,
recursion, generators, global state, unusual signatures, methods, calls numba lacks, unusual
dtypes and layouts, tiny trip counts, reverse ranges, index arithmetic and indirection.

``CASES`` maps a name to ``(function, make)``; ``make(rng)`` returns a fresh argument tuple
(small sizes). ``ALIASED`` maps a name to ``(function, make, make_aliased)``: the second maker
passes one array twice (or overlapping views), which a compiled plan must refuse or run as
written.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special

N = 9

CALLS = 0  # written by global_counter


def _vec(rng: np.random.Generator, n: int = N) -> np.ndarray:
    return rng.standard_normal(n)


# -- control flow ------------------------------------------------------------------------------
def while_halving(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        v = abs(x[i]) + 1.0
        steps = 0
        while v > 1e-3:
            v = v / 2.0
            steps += 1
        out[i] = steps
    return out


def first_negative(a):
    for i in range(a.shape[0]):
        if a[i] < 0:
            return i
    return -1


def sum_until_limit(a, limit):
    s = 0.0
    for i in range(a.shape[0]):
        if s > limit:
            break
        s += a[i]
    return s


def skip_nan_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        if math.isnan(a[i]):
            continue
        s += a[i]
    return s


def safe_ratios(a, b):
    out = np.zeros(a.shape[0])
    for i in range(a.shape[0]):
        try:
            out[i] = float(a[i]) / float(b[i])
        except ZeroDivisionError:
            out[i] = np.nan
    return out


def newton_sqrt(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        x = a[i] if a[i] > 1.0 else 1.0
        it = 0
        while abs(x * x - a[i]) > 1e-10 and it < 50:
            x = 0.5 * (x + a[i] / x)
            it += 1
        out[i] = x
    return out


def early_exit_before_loop(a, n):
    if n <= 0:
        return 0.0
    s = 0.0
    for i in range(n):
        s += a[i] * a[i]
    return s


# -- nested functions, closures, lambdas -------------------------------------------------------
def nested_helper(a):
    def sq(v):
        return v * v

    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = sq(a[i]) + 1.0
    return out


def closure_scale(a, factor):
    def scaled(v):
        return v * factor

    total = 0.0
    for i in range(a.shape[0]):
        total += scaled(a[i])
    return total


def apply_callback(a, f):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = f(a[i])
    return out


def nonlocal_counter(a):
    count = 0

    def bump():
        nonlocal count
        count += 1

    for i in range(a.shape[0]):
        if a[i] > 0:
            bump()
    return count


# -- containers and strings --------------------------------------------------------------------
def positives_list(a):
    found = []
    for i in range(a.shape[0]):
        if a[i] > 0:
            found.append(float(a[i]))
    return found


def label_counts(labels):
    counts = {}
    for i in range(labels.shape[0]):
        k = int(labels[i])
        counts[k] = counts.get(k, 0) + 1
    return counts


def unique_rounded(a):
    seen = set()
    for i in range(a.shape[0]):
        seen.add(round(float(a[i]), 1))
    return sorted(seen)


def comprehension_then_loop(a):
    sq = [v * v for v in a]
    out = np.zeros(len(sq))
    for i in range(len(sq)):
        out[i] = sq[i] + 1.0
    return out


def format_rows(a):
    lines = []
    for i in range(a.shape[0]):
        lines.append(f"{i:3d}: {a[i]:.3f}")
    return "\n".join(lines)


def sum_list(values):
    s = 0.0
    for i in range(len(values)):
        s += values[i]
    return s


def label_name(name, n):
    out = ""
    for i in range(n):  # noqa: B007
        out += name
    return out


# -- recursion, generators, global state -------------------------------------------------------
def recursive_sum(a, lo, hi):
    if hi - lo <= 2:
        s = 0.0
        for i in range(lo, hi):
            s += a[i]
        return s
    mid = (lo + hi) // 2
    return recursive_sum(a, lo, mid) + recursive_sum(a, mid, hi)


def running_means(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
        yield s / (i + 1)


def global_counter(a):
    global CALLS
    CALLS += 1
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0
    return out


# -- signatures --------------------------------------------------------------------------------
def default_scale(a, scale=2.0):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * scale
    return out


def keyword_only(a, *, shift=1.5):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] + shift
    return out


def star_args(*arrays):
    total = 0.0
    for k in range(len(arrays)):
        for i in range(arrays[k].shape[0]):
            total += arrays[k][i]
    return total


def star_kwargs(a, **opts):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 3.0
    return out


class Smoother:
    """A bound method and a staticmethod with loops."""

    def __init__(self, weight: float) -> None:
        self.weight = weight

    def run(self, a):
        out = np.empty_like(a)
        for i in range(a.shape[0]):
            out[i] = a[i] * self.weight
        return out

    @staticmethod
    def clip_rows(A, hi):
        out = np.empty_like(A)
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                out[i, j] = A[i, j] if A[i, j] < hi else hi
        return out


_SMOOTHER = Smoother(0.25)


# -- calls numba has or lacks ------------------------------------------------------------------
def gammaln_loop(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = scipy.special.gammaln(abs(a[i]) + 1.0)
    return out


def eigh_batch(mats):
    out = np.empty((mats.shape[0], mats.shape[1]))
    for b in range(mats.shape[0]):
        w, _ = np.linalg.eigh(mats[b])
        out[b, :] = w
    return out


def fsum_loop(a):
    parts = []
    for i in range(a.shape[0]):
        parts.append(a[i] * 0.1)
    return math.fsum(parts)


# -- dtypes, shapes, layouts -------------------------------------------------------------------
def object_lengths(objs):
    out = np.zeros(objs.shape[0], dtype=np.int64)
    for i in range(objs.shape[0]):
        out[i] = len(objs[i])
    return out


def int8_total(a):
    s = 0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def int8_triple(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 3
    return a


def bool_flip_count(mask):
    n = 0
    for i in range(mask.shape[0]):
        mask[i] = not mask[i]
        if mask[i]:
            n += 1
    return n


def complex_rotate(z):
    total = 0.0
    for i in range(z.shape[0]):
        z[i] = z[i] * 1j
        total += abs(z[i])
    return total


def zero_d_doubling(x, n):
    for i in range(n):  # noqa: B007
        x[()] = x[()] * 2.0
    return x


def empty_scale(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0
    return out


def fortran_colsum(A):
    out = np.zeros(A.shape[1])
    for j in range(A.shape[1]):
        for i in range(A.shape[0]):
            out[j] += A[i, j]
    return out


def strided_double(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2.0


def nan_sqrt(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = np.nan if a[i] < 0 else math.sqrt(a[i])
    return out


# -- results -----------------------------------------------------------------------------------
def stats_tuple(a):
    lo, hi, s = a[0], a[0], 0.0
    for i in range(a.shape[0]):
        lo = min(lo, a[i])
        hi = max(hi, a[i])
        s += abs(a[i])
    return lo, hi, s / a.shape[0]


def normalize_inplace(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    r = math.sqrt(s)
    for i in range(a.shape[0]):
        a[i] = a[i] / r
    return a


def max_abs_diff(a, b):
    m = 0.0
    for i in range(a.shape[0]):
        m = max(m, abs(a[i] - b[i]))
    return m


# -- trip counts, ranges, index arithmetic -----------------------------------------------------
def trip_one(a):
    for i in range(1):
        a[i] = a[i] + 10.0
    return a


def trip_zero(a, n):
    s = 1.0
    for i in range(n):
        s *= a[i]
    return s


def reverse_cumsum(a):
    out = np.zeros_like(a)
    n = a.shape[0]
    out[n - 1] = a[n - 1]
    for i in range(n - 2, -1, -1):
        out[i] = a[i] + out[i + 1]
    return out


def reverse_copy_step(a):
    out = np.empty_like(a)
    n = a.shape[0]
    for i in range(n - 1, -1, -1):
        out[n - 1 - i] = a[i]
    return out


def guarded_offdiag(A):
    out = np.zeros_like(A)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if i != j and A[i, j] > 0:
                out[i, j] = A[i, j] * 2.0
            elif i == j:
                out[i, j] = -1.0
    return out


def backward_diff(a):
    out = np.zeros_like(a)
    for i in range(1, a.shape[0]):
        out[i] = a[i] - a[i - 1]
    return out


def in_place_recurrence(a):
    for i in range(1, a.shape[0]):
        a[i] = a[i] + a[i - 1]
    return a


def mirror(a):
    n = a.shape[0]
    out = np.empty_like(a)
    for i in range(n):
        out[i] = a[n - 1 - i]
    return out


def pair_sums(a):
    out = np.zeros((a.shape[0] + 1) // 2)
    for i in range(a.shape[0]):
        out[i // 2] += a[i]
    return out


def half_gather(a):
    out = np.empty(2 * a.shape[0])
    for i in range(2 * a.shape[0]):
        out[i] = a[i // 2]
    return out


def scatter_add(idx, w, out):
    for i in range(idx.shape[0]):
        out[idx[i]] += w[i]
    return out


def scatter_overwrite(idx, w, out):
    for i in range(idx.shape[0]):
        out[idx[i]] = w[i] * 2.0
    return out


def gather(idx, a):
    out = np.empty(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = a[idx[i]]
    return out


def in_place_stencil(a):
    for i in range(1, a.shape[0] - 1):
        a[i] = 0.5 * (a[i - 1] + a[i + 1])
    return a


# -- aliasing ----------------------------------------------------------------------------------
def add_into(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = dst[i] + src[i] * 2.0
    return dst


def shift_copy(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = src[i] + 1.0


def _idx(rng: np.random.Generator, n: int = N, hi: int = 4) -> np.ndarray:
    return rng.integers(0, hi, n)


def _objs(rng: np.random.Generator) -> np.ndarray:
    out = np.empty(5, dtype=object)
    for i in range(5):
        out[i] = "x" * int(rng.integers(0, 4))
    return out


def _with_nan(rng: np.random.Generator) -> np.ndarray:
    a = _vec(rng)
    a[[1, 4]] = np.nan
    return a


def _sym(rng: np.random.Generator) -> np.ndarray:
    m = rng.standard_normal((3, 4, 4))
    return m + m.transpose(0, 2, 1)


Maker = Callable[[np.random.Generator], tuple]

CASES: dict[str, tuple[Callable[..., Any], Maker]] = {
    "while_halving": (while_halving, lambda r: (_vec(r),)),
    "first_negative": (first_negative, lambda r: (_vec(r),)),
    "sum_until_limit": (sum_until_limit, lambda r: (np.abs(_vec(r)), 1.5)),
    "skip_nan_sum": (skip_nan_sum, lambda r: (_with_nan(r),)),
    "safe_ratios": (safe_ratios, lambda r: (_vec(r), np.where(_idx(r) == 0, 0.0, 2.0))),
    "newton_sqrt": (newton_sqrt, lambda r: (np.abs(_vec(r)) * 4,)),
    "early_exit_before_loop": (early_exit_before_loop, lambda r: (_vec(r), N)),
    "nested_helper": (nested_helper, lambda r: (_vec(r),)),
    "closure_scale": (closure_scale, lambda r: (_vec(r), 0.5)),
    "apply_callback": (apply_callback, lambda r: (_vec(r), lambda v: v * 2.0 + 1.0)),
    "nonlocal_counter": (nonlocal_counter, lambda r: (_vec(r),)),
    "positives_list": (positives_list, lambda r: (_vec(r),)),
    "label_counts": (label_counts, lambda r: (_idx(r),)),
    "unique_rounded": (unique_rounded, lambda r: (_vec(r),)),
    "comprehension_then_loop": (comprehension_then_loop, lambda r: (_vec(r),)),
    "format_rows": (format_rows, lambda r: (_vec(r),)),
    "sum_list": (sum_list, lambda r: (list(_vec(r)),)),
    "label_name": (label_name, lambda r: ("ab", 3)),
    "recursive_sum": (recursive_sum, lambda r: (_vec(r), 0, N)),
    "running_means": (running_means, lambda r: (_vec(r),)),
    "global_counter": (global_counter, lambda r: (_vec(r),)),
    "default_scale": (default_scale, lambda r: (_vec(r),)),
    "keyword_only": (keyword_only, lambda r: (_vec(r),)),
    "star_args": (star_args, lambda r: (_vec(r), _vec(r, 4))),
    "star_kwargs": (star_kwargs, lambda r: (_vec(r),)),
    "bound_method": (_SMOOTHER.run, lambda r: (_vec(r),)),
    "staticmethod": (Smoother.clip_rows, lambda r: (r.standard_normal((4, 5)), 0.5)),
    "gammaln_loop": (gammaln_loop, lambda r: (_vec(r),)),
    "eigh_batch": (eigh_batch, lambda r: (_sym(r),)),
    "fsum_loop": (fsum_loop, lambda r: (_vec(r),)),
    "object_lengths": (object_lengths, lambda r: (_objs(r),)),
    "int8_total": (int8_total, lambda r: (r.integers(60, 127, N).astype(np.int8),)),
    "int8_triple": (int8_triple, lambda r: (r.integers(-120, 120, N).astype(np.int8),)),
    "bool_flip_count": (bool_flip_count, lambda r: (_vec(r) > 0,)),
    "complex_rotate": (complex_rotate, lambda r: (_vec(r) + 1j * _vec(r),)),
    "zero_d_doubling": (zero_d_doubling, lambda r: (np.array(r.random()), 3)),
    "empty_scale": (empty_scale, lambda r: (np.empty(0),)),
    "fortran_colsum": (fortran_colsum, lambda r: (np.asfortranarray(r.random((5, 4))),)),
    "strided_double": (strided_double, lambda r: (r.random(2 * N)[::2],)),
    "nan_sqrt": (nan_sqrt, lambda r: (_vec(r),)),
    "stats_tuple": (stats_tuple, lambda r: (_vec(r),)),
    "normalize_inplace": (normalize_inplace, lambda r: (_vec(r),)),
    "max_abs_diff": (max_abs_diff, lambda r: (_vec(r), _vec(r))),
    "trip_one": (trip_one, lambda r: (_vec(r),)),
    "trip_zero": (trip_zero, lambda r: (_vec(r), 0)),
    "reverse_cumsum": (reverse_cumsum, lambda r: (_vec(r),)),
    "reverse_copy_step": (reverse_copy_step, lambda r: (_vec(r),)),
    "guarded_offdiag": (guarded_offdiag, lambda r: (r.standard_normal((4, 4)),)),
    "backward_diff": (backward_diff, lambda r: (_vec(r),)),
    "in_place_recurrence": (in_place_recurrence, lambda r: (_vec(r),)),
    "mirror": (mirror, lambda r: (_vec(r),)),
    "pair_sums": (pair_sums, lambda r: (_vec(r),)),
    "half_gather": (half_gather, lambda r: (_vec(r),)),
    "scatter_add": (scatter_add, lambda r: (_idx(r), _vec(r), np.zeros(4))),
    "scatter_overwrite": (scatter_overwrite, lambda r: (_idx(r), _vec(r), np.zeros(4))),
    "gather": (gather, lambda r: (_idx(r), _vec(r, 4))),
    "in_place_stencil": (in_place_stencil, lambda r: (_vec(r),)),
}

ALIASED: dict[str, tuple[Callable[..., Any], Maker, Maker]] = {
    "add_into_same": (add_into, lambda r: (_vec(r), _vec(r)),
                      lambda r: (lambda x: (x, x))(_vec(r))),
    "shift_copy_overlap": (shift_copy, lambda r: (_vec(r), _vec(r)),
                           lambda r: (lambda x: (x[1:], x[:-1]))(_vec(r, N + 1))),
}

#: loops that must not be called parallel: repeated or data-dependent targets, carried values
NOT_PARALLEL: dict[str, tuple[str, ...]] = {
    "pair_sums": ("L1",), "scatter_add": ("L1",), "scatter_overwrite": ("L1",),
    "reverse_cumsum": ("L1",), "in_place_recurrence": ("L1",), "in_place_stencil": ("L1",),
    "first_negative": ("L1",), "sum_until_limit": ("L1",), "safe_ratios": ("L1",),
}
