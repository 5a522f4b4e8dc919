"""A sixth held-out probe of the offload search, with answer keys (``heldout_probe6_keys.py``):
30 kernels written as a scientist writes plain loops over NumPy arrays, aimed at the Python
IDIOMS and program shapes the first five probes lack — module-level helpers called from a loop
body (pure ones, one returning a tuple, and ones that write their argument: through a subscript
and through an augmented assignment ``dst += src`` to a parameter), a module-level constant, a
keyword argument with a default, ``continue`` and an early ``return`` inside loops, ``while``
loops with their own counters (per element, per column), ``reversed(range(n))`` and
``range(n - 1, -1, -1)``, a time loop swapping two buffers (``a, b = b, a``) and a Jacobi step
allocating a new array each time, a red-black sweep whose inner start depends on the colour,
wavefront and backward DP tables, a scratch row allocated per row (privatizable) or once and
reused (a temporary), 3-D arrays with ``shape[-1]``, ``x.size``/``len(x)``, complex128 data,
boolean masks, integer bit operations (``^``, ``&``, ``>>``, ``%``, ``//``), ternary
expressions (one as a running maximum), a returned tuple and a returned count, two outputs of
one loop, chained stores ``K[i, j] = K[j, i] = v``, ``for row in A`` with a counter, and a
lagged read ``x[i - k]`` whose offset is an argument.

Every verdict was decided from the code's semantics, not from the engine's output:
``parallel``/``reduction`` loops are safe in any order; ``serial`` loops carry a true dependence
(a wrong "parallel" there is the worst bug); ``limits`` names loops parallel in truth which the
engine keeps serial, each with the reason; ``unsupported`` loops hold a construct the analysis
refuses (an early ``return``, a helper that writes its argument). ``key`` is the expert numba
version of the same computation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import heldout_probe6_keys as keys
from .heldout_probe4 import Probe4


@dataclass(frozen=True)
class Probe6(Probe4):
    """A :class:`Probe4` (kernel, maker, verdicts, sizes, limits, answer key)."""


#: a module-level constant read in a loop (a prime modulus)
MOD = 1_000_003



# -- module-level helpers ------------------------------------------------------------------------
def _smoothstep(v, lo, hi):
    """Hermite smoothstep of v between lo and hi, clamped by a nested ternary (pure)."""
    t = (v - lo) / (hi - lo)
    t = 0.0 if t < 0.0 else (1.0 if t > 1.0 else t)
    return t ** 2 * (3.0 - 2.0 * t)


def _rotate(px, py, c, s):
    """The point (px, py) turned by the angle whose cosine and sine are c, s (pure, a tuple)."""
    return c * px - s * py, s * px + c * py


def _scale_to_unit_sum(row):
    """Divides a row by its sum in place: a helper that WRITES its argument (a subscript)."""
    s = np.sum(row)
    for j in range(row.shape[0]):
        row[j] = row[j] / s


def _accumulate_into(dst, src):
    """``dst += src``: an augmented assignment to a parameter, which for an array argument
    writes the caller's array in place (no subscript in sight)."""
    dst += src


def smoothstep_helper_map(x, lo, hi, out):
    """out[i] = smoothstep(x[i]) through a pure module-level helper with ternaries and ``**``."""
    for i in range(len(x)):
        out[i] = _smoothstep(x[i], lo, hi)


def rotate_points_helper(P, theta, Q):
    """Q = P turned by theta, each point through a helper returning a tuple that is unpacked."""
    c = math.cos(theta)
    s = math.sin(theta)
    for i in range(P.shape[0]):
        qx, qy = _rotate(P[i, 0], P[i, 1], c, s)
        Q[i, 0] = qx
        Q[i, 1] = qy


def normalize_rows_by_helper(A):
    """Each row of A scaled to sum to one, in place, by a helper given the row ``A[i]``."""
    for i in range(A.shape[0]):
        _scale_to_unit_sum(A[i])


def row_prefix_via_helper(A):
    """Row i becomes the sum of rows 0..i, in place: ``_accumulate_into(A[i], A[i - 1])`` adds
    the row above (already accumulated) — a recurrence over i hidden in a helper's ``+=``."""
    for i in range(1, A.shape[0]):
        _accumulate_into(A[i], A[i - 1])


def logistic_with_defaults(x, out, k=1.0, x0=0.0):
    """out[i] = 1 / (1 + exp(-k (x[i] - x0))) with keyword arguments that have defaults."""
    for i in range(x.shape[0]):
        out[i] = 1.0 / (1.0 + math.exp(-k * (x[i] - x0)))


def rolling_hash_mod(codes):
    """Polynomial rolling hash ``h = (31 h + c) % MOD`` of int64 codes, MOD a module constant:
    each step multiplies the previous h (no reduction operator: serial)."""
    h = 0
    for i in range(codes.shape[0]):
        h = (h * 31 + codes[i]) % MOD
    return h


# -- continue, return, while ---------------------------------------------------------------------
def nan_skipping_row_means(A, out):
    """Mean of the non-NaN entries of each row (``continue`` past NaNs), 0 for an all-NaN row
    (a ternary on the count)."""
    m, n = A.shape
    for i in range(m):
        s = 0.0
        c = 0
        for j in range(n):
            v = A[i, j]
            if math.isnan(v):
                continue
            s += v
            c += 1
        out[i] = s / c if c > 0 else 0.0


def first_row_over_budget(A, budget):
    """Index of the first row whose sum exceeds ``budget`` (an early ``return`` in the row loop
    after the inner sum), -1 if none."""
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        if s > budget:
            return i
    return -1


def collatz_steps(seeds, steps):
    """Number of Collatz steps to reach 1 from each seed: a ``while`` per element with
    ``%``, ``//`` and a ternary (the for loop is parallel)."""
    for i in range(seeds.shape[0]):
        v = seeds[i]
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        steps[i] = c


def column_recurrence_while(A, r):
    """Down each column, A[i, j] += r A[i - 1, j] walked by a ``while`` with its own counter
    reset per column: a recurrence along i, independent columns (the for loop is parallel)."""
    for j in range(A.shape[1]):
        i = 1
        while i < A.shape[0]:
            A[i, j] += r * A[i - 1, j]
            i += 1


# -- reversed ranges and backward DP -------------------------------------------------------------
def upper_bidiag_solve_reversed(d, e, b, x):
    """Solves U x = b for upper bidiagonal U (diagonal d, superdiagonal e) from the bottom with
    ``reversed(range(n - 1))``: x[i] reads x[i + 1] (serial)."""
    n = d.shape[0]
    x[n - 1] = b[n - 1] / d[n - 1]
    for i in reversed(range(n - 1)):
        x[i] = (b[i] - e[i] * x[i + 1]) / d[i]


def reversed_ramp_weights(x, out):
    """out[i] = x[n - 1 - i] (i + 1) / n walked with ``reversed(range(n))`` (parallel)."""
    n = len(x)
    for i in reversed(range(n)):
        out[i] = x[n - 1 - i] * (i + 1) / n


def min_cost_to_corner(C, D):
    """D[i, j] = the cheapest right/down path cost from (i, j) to the bottom-right corner,
    filled backwards with ``range(n - 1, -1, -1)`` (both loops carry a dependence)."""
    m, n = C.shape
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            if i == m - 1 and j == n - 1:
                D[i, j] = C[i, j]
            elif i == m - 1:
                D[i, j] = C[i, j] + D[i, j + 1]
            elif j == n - 1:
                D[i, j] = C[i, j] + D[i + 1, j]
            else:
                D[i, j] = C[i, j] + min(D[i + 1, j], D[i, j + 1])


def lcs_length_table(a, b):
    """Length of the longest common subsequence of two int sequences by the DP table (a
    wavefront: serial both ways; a ternary picks the diagonal or the ``max``)."""
    n, m = len(a), len(b)
    L = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            L[i, j] = L[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(L[i - 1, j],
                                                                          L[i, j - 1])
    return L[n, m]


# -- time loops and sweeps -----------------------------------------------------------------------
def diffuse2d_pingpong(a, b, steps, r):
    """``steps`` explicit 2-D diffusion steps between two buffers swapped with ``a, b = b, a``
    (the time loop serial, the sweep parallel); returns the last buffer written."""
    h, w = a.shape
    for _ in range(steps):
        for i in range(1, h - 1):
            for j in range(1, w - 1):
                b[i, j] = a[i, j] + r * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                         + a[i, j + 1] - 4.0 * a[i, j])
        a, b = b, a
    return a


def jacobi1d_new_each_step(u, steps):
    """Jacobi smoothing that allocates the next iterate with ``np.empty_like`` at each step
    (ends copied) and rebinds ``u = new``; returns the last iterate."""
    n = u.shape[0]
    for _ in range(steps):
        new = np.empty_like(u)
        new[0] = u[0]
        new[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u = new
    return u


def red_black_poisson(U, f, sweeps):
    """Red-black Gauss–Seidel for the 5-point Poisson problem: within a colour, point (i, j)
    with i + j of one parity reads only the other parity (rows and columns parallel); the
    colour loop and the sweeps are serial. The inner start ``1 + (i + colour) % 2`` depends on
    the row and the colour."""
    n, m = U.shape
    for _ in range(sweeps):
        for colour in range(2):
            for i in range(1, n - 1):
                for j in range(1 + (i + colour) % 2, m - 1, 2):
                    U[i, j] = 0.25 * (U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1]
                                      - f[i, j])


# -- scratch arrays, 3-D, sizes ------------------------------------------------------------------
def weighted_row_spread(A, w, out):
    """out[i] = max - min of row i scaled by w, built in a per-row scratch ``tmp = np.empty(m)``
    allocated inside the loop (private to the iteration: parallel)."""
    rows, m = A.shape
    for i in range(rows):
        tmp = np.empty(m)
        for j in range(m):
            tmp[j] = A[i, j] * w[j]
        out[i] = np.max(tmp) - np.min(tmp)


def centered_row_energy_shared_tmp(A, out):
    """out[i] = Σ_j (A[i, j] - mean of row i)², the centred row kept in ONE scratch row
    allocated before the loop and reused by every row (as written, rows overwrite each other's
    scratch: the row loop is serial unless the scratch is privatized)."""
    m, n = A.shape
    tmp = np.empty(n)
    for i in range(m):
        mu = 0.0
        for j in range(n):
            mu += A[i, j]
        mu /= n
        for j in range(n):
            tmp[j] = A[i, j] - mu
        e = 0.0
        for j in range(n):
            e += tmp[j] ** 2
        out[i] = e


def rms_last_axis_3d(V, out):
    """Root mean square over the last axis of a 3-D array, its length read as ``shape[-1]``."""
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            s = 0.0
            for k in range(V.shape[-1]):
                s += V[i, j, k] ** 2
            out[i, j] = np.sqrt(s / V.shape[-1])


def zscore_size_len(x, out):
    """z-scores with the sizes read as ``x.size`` and ``len(x)``/``len(out)``: two sums, then a
    map."""
    n = x.size
    mu = 0.0
    for i in range(n):
        mu += x[i]
    mu /= n
    var = 0.0
    for i in range(len(x)):
        var += (x[i] - mu) ** 2
    sd = math.sqrt(var / n)
    for i in range(len(out)):
        out[i] = (x[i] - mu) / sd


# -- complex, masks, bits ------------------------------------------------------------------------
def naive_dft(x, X):
    """X[k] = Σ_t x[t] exp(-2πi k t / n) on complex128 data (a complex ``0j`` sum per k)."""
    n = x.shape[0]
    for k in range(n):
        s = 0j
        for t in range(n):
            s += x[t] * np.exp(-2j * np.pi * k * t / n)
        X[k] = s


def hash_bucket_and_parity(keys_, nb, bucket, parity):
    """Two outputs of one loop: a bucket by an integer xor-shift-multiply hash (``^``, ``>>``,
    ``&``, ``%``) and the parity of the hash's set bits by xor folding (``h ^= h >> s`` on a
    private scalar)."""
    for i in range(keys_.shape[0]):
        h = keys_[i]
        h = ((h >> 16) ^ h) * 0x45D9F3B & 0xFFFFFFFF
        h = ((h >> 16) ^ h) & 0xFFFFFFFF
        bucket[i] = h % nb
        h ^= h >> 16
        h ^= h >> 8
        h ^= h >> 4
        h ^= h >> 2
        h ^= h >> 1
        parity[i] = h & 1


def masked_row_norms(A, keep, out):
    """Euclidean norm of the rows a boolean mask keeps (``if not keep[i]: …; continue``), 0 for
    the others."""
    for i in range(A.shape[0]):
        if not keep[i]:
            out[i] = 0.0
            continue
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j]
        out[i] = np.sqrt(s)


# -- reductions, pairs, carried values -----------------------------------------------------------
def weighted_mean_var(x, w):
    """(weighted mean, weighted variance) returned as a tuple: three sums in one loop."""
    sw = 0.0
    swx = 0.0
    swxx = 0.0
    for i in range(len(x)):
        sw += w[i]
        swx += w[i] * x[i]
        swxx += w[i] * x[i] ** 2
    mean = swx / sw
    return mean, swxx / sw - mean ** 2


def count_inversions_pairs(x):
    """Number of pairs i < j with x[i] > x[j] (a count over a triangular pair loop)."""
    n = len(x)
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if x[i] > x[j]:
                count += 1
    return count


def rbf_kernel_chained(X, gamma, K):
    """Gaussian kernel matrix over i < j with the chained store ``K[i, j] = K[j, i] = v`` and
    the diagonal set in the outer loop."""
    n, d = X.shape
    for i in range(n):
        K[i, i] = 1.0
        for j in range(i + 1, n):
            s = 0.0
            for k in range(d):
                s += (X[i, k] - X[j, k]) ** 2
            K[i, j] = K[j, i] = math.exp(-gamma * s)


def peak_abs_ternary(x):
    """Largest |x[i]| as a ternary running maximum ``m = v if v > m else m`` (a max reduction
    in truth)."""
    m = 0.0
    for i in range(x.shape[0]):
        v = abs(x[i])
        m = v if v > m else m
    return m


def lagged_feedback(x, k, g):
    """x[i] += g x[i - k] for i >= k in place, the lag ``k >= 1`` an argument: iteration i reads
    what iteration i - k wrote (serial unless k is known to exceed the trip count)."""
    for i in range(k, x.shape[0]):
        x[i] += g * x[i - k]


def row_ranges_counter(A, out):
    """out[k] = max - min of the k-th row, iterating ``for row in A`` with a hand-kept counter
    ``k += 1`` (an induction variable: parallel in truth)."""
    k = 0
    for row in A:
        out[k] = np.max(row) - np.min(row)
        k += 1


# -- makers --------------------------------------------------------------------------------------
def _nan_rows(g, n):
    A = g.random((n, n + 3))
    A[g.random((n, n + 3)) < 0.2] = np.nan
    if n > 1:
        A[1, :] = np.nan
    return (A, np.zeros(n))


def _bidiag(g, n):
    return (g.random(n) + 1.0, g.random(n) * 0.5, g.random(n), np.zeros(n))


def _pingpong(g, n):
    a = g.random((n + 2, n + 3))
    return (a, a.copy(), 4, 0.2)


def _poisson(g, n):
    return (g.random((n + 2, n + 3)), g.random((n + 2, n + 3)) * 0.01, 3)


def _lcs(g, n):
    return (g.integers(0, 4, n), g.integers(0, 4, n + 3))


def _dft(g, n):
    return (g.standard_normal(n) + 1j * g.standard_normal(n), np.zeros(n, dtype=np.complex128))


def _hash(g, n):
    return (g.integers(0, 2 ** 31, n), 97, np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64))


def _masked(g, n):
    return (g.random((n, n + 1)), g.random(n) < 0.7, np.full(n, -1.0))


PROBES: dict[str, Probe6] = {
    "smoothstep_helper_map": Probe6(
        smoothstep_helper_map, lambda g, n: (g.random(n) * 1.4 - 0.2, 0.0, 1.0, np.zeros(n)),
        parallel=("L1",), key=keys.smoothstep_helper_map, sizes=(0, 1, 2, 7),
        moderate=1_600_000),
    "rotate_points_helper": Probe6(
        rotate_points_helper, lambda g, n: (g.random((n, 2)), 0.7, np.zeros((n, 2))),
        parallel=("L1",), key=keys.rotate_points_helper, sizes=(0, 1, 2, 7),
        moderate=400_000),
    "normalize_rows_by_helper": Probe6(
        normalize_rows_by_helper, lambda g, n: (g.random((n, n + 1)) + 0.1,),
        parallel=("L1", "L2"), key=keys.normalize_rows_by_helper, sizes=(1, 2, 7),
        moderate=1000),
    "row_prefix_via_helper": Probe6(
        row_prefix_via_helper, lambda g, n: (g.random((n, n + 1)),), serial=("L1",),
        key=keys.row_prefix_via_helper, sizes=(1, 2, 7), moderate=2000),
    "logistic_with_defaults": Probe6(
        logistic_with_defaults, lambda g, n: (g.standard_normal(n), np.zeros(n)),
        kwargs={"k": 2.5}, parallel=("L1",), key=keys.logistic_with_defaults,
        sizes=(0, 1, 2, 7), moderate=400_000),
    "rolling_hash_mod": Probe6(
        rolling_hash_mod, lambda g, n: (g.integers(0, 256, n),), serial=("L1",),
        key=keys.rolling_hash_mod, sizes=(0, 1, 2, 7), moderate=400_000),
    "nan_skipping_row_means": Probe6(
        nan_skipping_row_means, _nan_rows, parallel=("L1",), reduction=("L2",),
        key=keys.nan_skipping_row_means, sizes=(1, 2, 7), moderate=1000),
    "first_row_over_budget": Probe6(
        first_row_over_budget, lambda g, n: (g.random((n, n + 1)), 0.6 * (n + 1) + 3.0),
        reduction=("L2",), unsupported=("L1",), key=keys.first_row_over_budget,
        sizes=(1, 2, 7), moderate=1000),
    "collatz_steps": Probe6(
        collatz_steps, lambda g, n: (g.integers(1, 10_000, n), np.zeros(n, dtype=np.int64)),
        parallel=("L1",), key=keys.collatz_steps, sizes=(0, 1, 2, 7), moderate=100_000),
    "column_recurrence_while": Probe6(
        column_recurrence_while, lambda g, n: (g.random((n + 1, n)), 0.5),
        parallel=("L1",), serial=("L2",), key=keys.column_recurrence_while, sizes=(1, 2, 7),
        moderate=1000),
    "upper_bidiag_solve_reversed": Probe6(
        upper_bidiag_solve_reversed, _bidiag, serial=("L1",),
        key=keys.upper_bidiag_solve_reversed, sizes=(1, 2, 7), moderate=200_000),
    "reversed_ramp_weights": Probe6(
        reversed_ramp_weights, lambda g, n: (g.random(n), np.zeros(n)),
        parallel=("L1",),
        key=keys.reversed_ramp_weights, sizes=(0, 1, 2, 7), moderate=400_000),
    "min_cost_to_corner": Probe6(
        min_cost_to_corner, lambda g, n: (g.random((n, n + 2)), np.zeros((n, n + 2))),
        serial=("L1", "L2"), key=keys.min_cost_to_corner, sizes=(1, 2, 7), moderate=1000),
    "lcs_length_table": Probe6(
        lcs_length_table, _lcs, serial=("L1", "L2"), key=keys.lcs_length_table,
        sizes=(0, 1, 2, 7), moderate=1500),
    "diffuse2d_pingpong": Probe6(
        diffuse2d_pingpong, _pingpong, serial=("L1",), parallel=("L2", "L3"),
        key=keys.diffuse2d_pingpong, sizes=(1, 2, 7), moderate=800),
    "jacobi1d_new_each_step": Probe6(
        jacobi1d_new_each_step, lambda g, n: (g.random(n), 4), serial=("L1",),
        parallel=("L2",), key=keys.jacobi1d_new_each_step, sizes=(1, 2, 7),
        moderate=400_000),
    "red_black_poisson": Probe6(
        red_black_poisson, _poisson, serial=("L1", "L2"), parallel=("L3", "L4"),
        key=keys.red_black_poisson, sizes=(1, 2, 7), moderate=600),
    "weighted_row_spread": Probe6(
        weighted_row_spread, lambda g, n: (g.random((n, n + 1)), g.random(n + 1), np.zeros(n)),
        parallel=("L1", "L2"), key=keys.weighted_row_spread,
        sizes=(1, 2, 7), moderate=1000),
    "centered_row_energy_shared_tmp": Probe6(
        centered_row_energy_shared_tmp, lambda g, n: (g.random((n, n + 1)), np.zeros(n)),
        serial=("L1",), reduction=("L2", "L4"), parallel=("L3",),
        key=keys.centered_row_energy_shared_tmp, sizes=(1, 2, 7), moderate=1000),
    "rms_last_axis_3d": Probe6(
        rms_last_axis_3d, lambda g, n: (g.random((n, n + 1, 16)), np.zeros((n, n + 1))),
        parallel=("L1", "L2"), reduction=("L3",), key=keys.rms_last_axis_3d,
        sizes=(1, 2, 7), moderate=400),
    "zscore_size_len": Probe6(
        zscore_size_len, lambda g, n: (g.random(n), np.zeros(n)), reduction=("L1", "L2"),
        parallel=("L3",), key=keys.zscore_size_len, sizes=(2, 3, 7), moderate=1_600_000),
    "naive_dft": Probe6(
        naive_dft, _dft, parallel=("L1",), reduction=("L2",), key=keys.naive_dft,
        sizes=(1, 2, 7), moderate=1000),
    "hash_bucket_and_parity": Probe6(
        hash_bucket_and_parity, _hash, parallel=("L1",), key=keys.hash_bucket_and_parity,
        sizes=(0, 1, 2, 7), moderate=400_000),
    "masked_row_norms": Probe6(
        masked_row_norms, _masked, parallel=("L1",), reduction=("L2",),
        key=keys.masked_row_norms, sizes=(1, 2, 7), moderate=2000),
    "weighted_mean_var": Probe6(
        weighted_mean_var, lambda g, n: (g.random(n), g.random(n) + 0.1), reduction=("L1",),
        key=keys.weighted_mean_var, sizes=(1, 2, 7), moderate=1_600_000),
    "count_inversions_pairs": Probe6(
        count_inversions_pairs, lambda g, n: (g.integers(0, 50, n),),
        reduction=("L1", "L2"), key=keys.count_inversions_pairs, sizes=(0, 1, 2, 7),
        moderate=3000),
    "rbf_kernel_chained": Probe6(
        rbf_kernel_chained, lambda g, n: (g.random((n, 8)), 0.5, np.zeros((n, n))),
        parallel=("L1", "L2"), reduction=("L3",), key=keys.rbf_kernel_chained,
        sizes=(1, 2, 7), moderate=600),
    "peak_abs_ternary": Probe6(
        peak_abs_ternary, lambda g, n: (g.standard_normal(n),), reduction=("L1",),
        key=keys.peak_abs_ternary, sizes=(0, 1, 2, 7), moderate=1_600_000),
    "lagged_feedback": Probe6(
        lagged_feedback, lambda g, n: (g.random(n), 3, 0.5), serial=("L1",),
        key=keys.lagged_feedback, sizes=(0, 1, 2, 7), moderate=1_600_000),
    "row_ranges_counter": Probe6(
        row_ranges_counter, lambda g, n: (g.random((n, n + 1)), np.zeros(n)),
        parallel=("L1",), key=keys.row_ranges_counter, sizes=(1, 2, 7), moderate=1000),
}
