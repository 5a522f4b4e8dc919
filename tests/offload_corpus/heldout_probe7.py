"""A seventh held-out probe of the offload search, with answer keys (``heldout_probe7_keys.py``):
kernels written as a student or a scientist writes plain loops over NumPy arrays, aimed at INDEX
ARITHMETIC, IN-PLACE UPDATES AND NOVICE-STYLE CODE, which the first six probes touch little —
subscripts whose dependence is subtle (``x[2 * i] = x[i] + 1``, a half copied onto the other
half, a forward read in place, a mirror assignment in place, swaps of a segment given at run time,
lifting steps over even and odd entries, an offset that is an argument, a modular neighbour in
place, ``x[i - 1]`` wrapping to ``x[-1]`` at ``i = 0``, ``A[i, -1]`` read while column ``-1`` is
written, negative subscripts that reach the back half), gathers and scatters through index
arrays (last writer wins; duplicates in a COO matrix), chained indexing ``A[i][j]`` read and
written, ``len(A[0])``, ``for row in A`` writing through the row view, builtin ``sum(row)``,
``A[i] @ x`` in a loop, ``for v in x`` accumulations, ``math.floor`` binning, ``round``, ``abs``
of ints, an in-place transpose by swaps and an in-place symmetrization (serial!), a module-level
lookup table, a helper calling a helper, a module-level ``lambda``, a recursive helper, a list
built by ``append``, a list argument, a dict counter, ``try/except`` in a loop, a ``print`` at
the end, float32 and int32 accumulations (int32 WRAPS in NumPy: the plan must wrap too), an
``np.int64`` counter, a boolean array written, a function that mutates one argument and returns a
new array, and two arguments that are views of one buffer (``f(x[:-1], x[1:])``).

Every verdict was decided from the code's semantics, not from the engine's output:
``parallel``/``reduction`` loops are safe in any order; ``serial`` loops carry a true dependence
(a wrong "parallel" there is the worst bug); ``limits`` names loops parallel in truth which the
engine keeps serial, each with the reason; ``unsupported`` loops hold a construct the analysis
refuses. ``key`` is the expert numba version of the same computation (None where numba has no
better version of novice Python: a list, a dict, a print).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import heldout_probe7_keys as keys
from .heldout_probe4 import Probe4


@dataclass(frozen=True)
class Probe7(Probe4):
    """A :class:`Probe4` (kernel, maker, verdicts, sizes, limits, answer key)."""


#: a module-level lookup table read in a loop (a gamma curve on 8-bit codes)
GAMMA_LUT = (np.arange(256) / 255.0) ** 2.2

#: a module-level lambda called in a loop
CUBE_PLUS_ONE = lambda v: v * v * v + 1.0  # noqa: E731  (novice style, on purpose)


# -- index arithmetic in place -------------------------------------------------------------------
def doubling_index_feed(x):
    """x[2 i] = x[i] + 1 for 1 <= i < n / 2, in place: iteration 1 writes x[2], iteration 2
    reads it (serial)."""
    n = x.shape[0]
    for i in range(1, n // 2):
        x[2 * i] = x[i] + 1.0


def upper_half_from_lower(x):
    """The upper half x[h:2h] set to twice the lower half x[:h], h = n // 2 (writes and reads
    never meet: parallel)."""
    h = len(x) // 2
    for i in range(h):
        x[i + h] = 2.0 * x[i]


def forward_pair_sum_inplace(x):
    """x[i] = x[i] + x[i + 1] in place: each iteration reads the NEXT element before it is
    overwritten (an anti-dependence: serial, or parallel only with a copy)."""
    for i in range(len(x) - 1):
        x[i] = x[i] + x[i + 1]


def mirror_assign_inplace(x):
    """x[i] = x[n - 1 - i] in place over all i: the back half reads the front half already
    overwritten (the result is a palindrome of the back half; serial)."""
    n = len(x)
    for i in range(n):
        x[i] = x[n - 1 - i]


def reverse_segment_swaps(x, lo, hi):
    """Reverses x[lo:hi] in place by swapping x[lo + k] and x[hi - 1 - k] for k < (hi - lo) // 2
    (each pair swapped once: parallel in truth; the bounds are arguments)."""
    for k in range((hi - lo) // 2):
        x[lo + k], x[hi - 1 - k] = x[hi - 1 - k], x[lo + k]


def lifting_predict_update(x):
    """One CDF 5/3 lifting step in place: the odd entries predicted from their even neighbours,
    then the even entries updated from the new odd ones (each loop parallel; the second reads
    what the first wrote)."""
    n = len(x)
    for i in range(1, n - 1, 2):
        x[i] -= 0.5 * (x[i - 1] + x[i + 1])
    for i in range(2, n - 1, 2):
        x[i] += 0.25 * (x[i - 1] + x[i + 1])


def offset_copy_scaled(x, k, c):
    """x[i + k] = c x[i] in place, the offset k >= 1 an argument: iteration i + k reads what
    iteration i wrote (serial)."""
    for i in range(len(x) - k):
        x[i + k] = c * x[i]


def ring_average_inplace(x):
    """x[i] = (x[i] + x[(i + 1) % n]) / 2 in place around a ring: each step reads the next old
    value, the last reads the new x[0] (serial)."""
    n = len(x)
    for i in range(n):
        x[i] = 0.5 * (x[i] + x[(i + 1) % n])


def wrap_backward_diff(x, d):
    """d[i] = x[i] - x[i - 1], x[-1] (the last entry) at i = 0: a periodic difference written
    by a student who relies on Python's wrap-around (parallel: d is another array)."""
    for i in range(len(x)):
        d[i] = x[i] - x[i - 1]


def divide_by_last_column(A):
    """A[i, j] /= A[i, -1] in place: the rows are independent, but along j the last iteration
    overwrites A[i, -1] with 1 after the others read it (the j loop is serial)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i, j] / A[i, -1]


def rotate_front_from_back(x):
    """x[i] = x[i - h] for i < h = n // 2: negative subscripts reach the back half (i - h is
    -h..-1, the entries n - h..n - 1 >= h), so no write meets a read (parallel in truth)."""
    h = len(x) // 2
    for i in range(h):
        x[i] = x[i - h]


# -- gathers, scatters ---------------------------------------------------------------------------
def gather_rows_by_index(A, idx, out):
    """out[i, :] = A[idx[i], :] element by element (a gather: parallel both ways)."""
    for i in range(idx.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[idx[i], j]


def scatter_last_wins(x, idx, y):
    """y[idx[i]] = x[i]: with repeated indices the LAST writer wins (serial: no privatized copy
    can know which thread wrote last)."""
    for i in range(len(x)):
        y[idx[i]] = x[i]


def coo_to_dense_add(rows, cols, vals, M):
    """A COO matrix summed into dense M, duplicates added: M[rows[k], cols[k]] += vals[k]
    (an indirect accumulation: serial as written, parallel with private copies)."""
    for k in range(len(vals)):
        M[rows[k], cols[k]] += vals[k]


# -- chained indexing, row views, builtins -------------------------------------------------------
def chained_index_matvec(A, x, y):
    """y = A x with ``A[i][j]`` chained subscripts and ``len(A)``, ``len(A[0])`` sizes."""
    for i in range(len(A)):
        s = 0.0
        for j in range(len(A[0])):
            s += A[i][j] * x[j]
        y[i] = s


def chained_index_affine_inplace(A, b):
    """A[i][j] = 2 A[i][j] + b[j] in place through chained subscripts (parallel both ways)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i][j] = 2.0 * A[i][j] + b[j]


def scale_rows_through_view(A, w):
    """``for row in A: row[j] *= w[j]``: each row view written in place (parallel in truth)."""
    for row in A:
        for j in range(len(row)):
            row[j] = row[j] * w[j]


def builtin_sum_row_means(A, out):
    """out[i] = sum(A[i]) / m with Python's builtin ``sum`` over a row (parallel)."""
    m = A.shape[1]
    for i in range(A.shape[0]):
        out[i] = sum(A[i]) / m


def row_at_matvec(A, x, y):
    """y[i] = A[i] @ x, one row at a time (parallel; a GEMV in truth)."""
    for i in range(A.shape[0]):
        y[i] = A[i] @ x


def iter_mean_abs(x):
    """Mean absolute value by ``for v in x: s += abs(v)`` (a reduction)."""
    s = 0.0
    for v in x:
        s += abs(v)
    return s / len(x)


# -- binning, rounding, integers -----------------------------------------------------------------
def floor_bin_counts(x, lo, width, counts):
    """counts[b] += 1 for b = floor((v - lo) / width) inside [0, len(counts)) (``math.floor``,
    out-of-range values dropped; an indirect increment)."""
    nb = len(counts)
    for v in x:
        b = math.floor((v - lo) / width)
        if 0 <= b < nb:
            counts[b] += 1


def round_to_grid(x, h, out):
    """out[i] = round(x[i] / h) h with Python's ``round`` (half to even; parallel)."""
    for i in range(len(x)):
        out[i] = round(x[i] / h) * h


def abs_int_gaps_total(a, b, gaps):
    """gaps[i] = |a[i] - b[i]| on int64 arrays and the total returned (a map and a sum)."""
    total = 0
    for i in range(len(a)):
        g = abs(a[i] - b[i])
        gaps[i] = g
        total += g
    return total


# -- in-place transposes and symmetrizations -----------------------------------------------------
def transpose_by_swaps(A):
    """A transposed in place by swapping A[i, j] and A[j, i] for j < i (each pair once:
    parallel both ways in truth)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j], A[j, i] = A[j, i], A[i, j]


def symmetrize_average_inplace(A):
    """A[i, j] = (A[i, j] + A[j, i]) / 2 in place over ALL i, j: row i = 1 reads A[0, 1]
    already averaged by row 0 (the result is not (A + Aᵀ)/2; the row loop is serial, the
    column loop parallel)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = 0.5 * (A[i, j] + A[j, i])


# -- module-level tables, helpers, lambdas, recursion --------------------------------------------
def _sq(v):
    return v * v


def _hypot3(a, b, c):
    """A pure helper calling another pure helper."""
    return math.sqrt(_sq(a) + _sq(b) + _sq(c))


def _tri_rec(k):
    """1 + 2 + ... + k by recursion (a recursive pure helper)."""
    if k <= 0:
        return 0
    return k + _tri_rec(k - 1)


def lookup_table_map(codes, out):
    """out[i] = GAMMA_LUT[codes[i]], a module-level NumPy table (parallel)."""
    for i in range(len(codes)):
        out[i] = GAMMA_LUT[codes[i]]


def nested_helper_norms(P, out):
    """out[i] = |P[i]| through ``_hypot3``, which calls ``_sq`` (parallel)."""
    for i in range(P.shape[0]):
        out[i] = _hypot3(P[i, 0], P[i, 1], P[i, 2])


def module_lambda_map(x, out):
    """out[i] = CUBE_PLUS_ONE(x[i]), a lambda bound at module level (parallel in truth)."""
    for i in range(len(x)):
        out[i] = CUBE_PLUS_ONE(x[i])


def recursive_helper_map(ks, out):
    """out[i] = 1 + ... + ks[i] by a recursive helper (parallel in truth)."""
    for i in range(len(ks)):
        out[i] = _tri_rec(ks[i])


# -- Python containers, try, print ---------------------------------------------------------------
def positives_to_list(x):
    """The positive entries collected by ``out.append(v)`` into a list, returned as an array."""
    out = []
    for v in x:
        if v > 0:
            out.append(v)
    return np.array(out)


def weights_from_list(vals, w):
    """Σ vals[i] w[i] where ``vals`` is a Python LIST of floats (a reduction)."""
    s = 0.0
    for i in range(len(vals)):
        s += vals[i] * w[i]
    return s


def code_counts_dict(codes):
    """How often each code occurs, in a dict ``counts[c] = counts.get(c, 0) + 1``."""
    counts = {}
    for c in codes:
        c = int(c)
        counts[c] = counts.get(c, 0) + 1
    return counts


def safe_log_try(x, out):
    """out[i] = log(x[i]), -inf where ``math.log`` raises (``try/except ValueError`` in the
    loop; x holds zeros and negatives)."""
    for i in range(len(x)):
        try:
            out[i] = math.log(x[i])
        except ValueError:
            out[i] = -math.inf


def sum_then_print(x):
    """Sum of squares, then a formatted ``print`` of it after the loop (a reduction)."""
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    print(f"sum of squares = {s:.3f}")
    return s


# -- dtypes --------------------------------------------------------------------------------------
def float32_total_energy(x):
    """Σ x[i]² accumulated in a float32 scalar ``s = np.float32(0)`` (a reduction in
    float32)."""
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def int32_total_wraps(a):
    """Σ a[i] in an ``np.int32`` accumulator: NumPy keeps int32 and WRAPS on overflow (with a
    warning); the plan must return the same wrapped int32."""
    total = np.int32(0)
    for i in range(len(a)):
        total += a[i]
    return total


def int64_count_above(x, t):
    """How many x[i] > t, counted in ``c = np.int64(0)`` (a reduction)."""
    c = np.int64(0)
    for i in range(len(x)):
        if x[i] > t:
            c += 1
    return c


def flag_strict_peaks(x, flags):
    """flags[i] = x[i] is above both neighbours, into a boolean array (parallel)."""
    for i in range(1, len(x) - 1):
        flags[i] = x[i] > x[i - 1] and x[i] > x[i + 1]


def center_rows_return_norms(A):
    """Subtracts each row's mean from A in place and returns a NEW array of the centred rows'
    norms (mutates one argument, returns another value)."""
    m, n = A.shape
    norms = np.empty(m)
    for i in range(m):
        mu = 0.0
        for j in range(n):
            mu += A[i, j]
        mu = mu / n
        ss = 0.0
        for j in range(n):
            A[i, j] -= mu
            ss += A[i, j] * A[i, j]
        norms[i] = math.sqrt(ss)
    return norms


def accumulate_into_next(a, b):
    """b[i] += a[i] (parallel for distinct arrays). Called as ``f(x[:-1], x[1:])`` the two
    arguments ALIAS: b[i] is x[i + 1] and a[i] is x[i], which iteration i - 1 wrote, so the
    call is a prefix sum of x (serial): the per-call alias check must catch it."""
    for i in range(len(b)):
        b[i] += a[i]


# -- makers --------------------------------------------------------------------------------------
def _vec(g, n):
    return (g.random(n),)


def _segment(g, n):
    return (g.random(n + 4), 1, n + 2)


def _scatter(g, n):
    return (g.random(n), g.integers(0, max(n // 2, 1), n), np.zeros(max(n // 2, 1)))


def _coo(g, n):
    nnz = 3 * n
    return (g.integers(0, n, nnz), g.integers(0, n + 1, nnz), g.random(nnz),
            np.zeros((n, n + 1)))


def _bins(g, n):
    return (g.standard_normal(4 * n), -2.0, 0.25, np.zeros(16, dtype=np.int64))


def _halves(g, n):
    return (g.integers(-40, 40, n) * 0.05, 0.1, np.zeros(n))


def _int_gaps(g, n):
    return (g.integers(-1000, 1000, n), g.integers(-1000, 1000, n), np.zeros(n, dtype=np.int64))


def _logs(g, n):
    x = g.random(n) * 4.0 - 1.0
    x[::3] = 0.0
    return (x, np.zeros(n))


def _aliased(g, n):
    x = g.random(n + 1)
    return (x[:-1], x[1:])


PROBES: dict[str, Probe7] = {
    "doubling_index_feed": Probe7(
        doubling_index_feed, _vec, serial=("L1",), key=keys.doubling_index_feed,
        sizes=(0, 1, 2, 7, 16), moderate=2_000_000),
    "upper_half_from_lower": Probe7(
        upper_half_from_lower, _vec, parallel=("L1",), key=keys.upper_half_from_lower,
        sizes=(0, 1, 2, 7, 16), moderate=2_000_000),
    "forward_pair_sum_inplace": Probe7(
        forward_pair_sum_inplace, _vec, serial=("L1",), key=keys.forward_pair_sum_inplace,
        sizes=(0, 1, 2, 7), moderate=2_000_000),
    "mirror_assign_inplace": Probe7(
        mirror_assign_inplace, _vec, serial=("L1",), key=keys.mirror_assign_inplace,
        sizes=(0, 1, 2, 7), moderate=2_000_000),
    "reverse_segment_swaps": Probe7(
        reverse_segment_swaps, _segment,
        limits={"L1": "lo + k1 = hi - 1 - k2 needs k1 + k2 = hi - lo - 1, impossible for "
                      "k < (hi - lo) // 2: floor division by 2 of a symbolic difference"},
        key=keys.reverse_segment_swaps,
        sizes=(0, 1, 2, 7), moderate=2_000_000),
    "lifting_predict_update": Probe7(
        lifting_predict_update, _vec, parallel=("L1", "L2"),
        key=keys.lifting_predict_update, sizes=(0, 1, 2, 7, 8), moderate=2_000_000),
    "offset_copy_scaled": Probe7(
        offset_copy_scaled, lambda g, n: (g.random(n), 3, 0.9), serial=("L1",),
        key=keys.offset_copy_scaled, sizes=(0, 1, 2, 7), moderate=2_000_000),
    "ring_average_inplace": Probe7(
        ring_average_inplace, _vec, serial=("L1",), key=keys.ring_average_inplace,
        sizes=(1, 2, 7), moderate=2_000_000),
    "wrap_backward_diff": Probe7(
        wrap_backward_diff, lambda g, n: (g.random(n), np.zeros(n)), parallel=("L1",),
        key=keys.wrap_backward_diff, sizes=(0, 1, 2, 7), moderate=2_000_000),
    "divide_by_last_column": Probe7(
        divide_by_last_column, lambda g, n: (g.random((n, n + 2)) + 0.5,), parallel=("L1",),
        serial=("L2",), key=keys.divide_by_last_column, sizes=(1, 2, 7), moderate=1500),
    "rotate_front_from_back": Probe7(
        rotate_front_from_back, _vec,
        limits={"L1": "i - h < 0 wraps to n - h + i >= h: a subscript that may be negative "
                      "proves nothing"}, key=keys.rotate_front_from_back,
        sizes=(0, 1, 2, 7, 8), moderate=2_000_000),
    "gather_rows_by_index": Probe7(
        gather_rows_by_index,
        lambda g, n: (g.random((n + 3, n)), g.integers(0, n + 3, 2 * n), np.zeros((2 * n, n))),
        parallel=("L1", "L2"), key=keys.gather_rows_by_index, sizes=(1, 2, 7), moderate=1000),
    "scatter_last_wins": Probe7(
        scatter_last_wins, _scatter, serial=("L1",), key=keys.scatter_last_wins,
        sizes=(0, 1, 2, 7, 40), moderate=2_000_000),
    "coo_to_dense_add": Probe7(
        coo_to_dense_add, _coo, serial=("L1",), key=keys.coo_to_dense_add,
        sizes=(1, 2, 7), moderate=600),
    "chained_index_matvec": Probe7(
        chained_index_matvec, lambda g, n: (g.random((n, n + 1)), g.random(n + 1), np.zeros(n)),
        parallel=("L1",), reduction=("L2",), key=keys.chained_index_matvec, sizes=(1, 2, 7),
        moderate=2000),
    "chained_index_affine_inplace": Probe7(
        chained_index_affine_inplace, lambda g, n: (g.random((n, n + 1)), g.random(n + 1)),
        parallel=("L1", "L2"), key=keys.chained_index_affine_inplace, sizes=(1, 2, 7),
        moderate=2000),
    "scale_rows_through_view": Probe7(
        scale_rows_through_view, lambda g, n: (g.random((n, n + 1)), g.random(n + 1)),
        parallel=("L1", "L2"), key=keys.scale_rows_through_view, sizes=(1, 2, 7),
        moderate=2000),
    "builtin_sum_row_means": Probe7(
        builtin_sum_row_means, lambda g, n: (g.random((n, n + 1)), np.zeros(n)),
        parallel=("L1",), key=keys.builtin_sum_row_means, sizes=(1, 2, 7), moderate=1500),
    "row_at_matvec": Probe7(
        row_at_matvec, lambda g, n: (g.random((n, n + 1)), g.random(n + 1), np.zeros(n)),
        parallel=("L1",), key=keys.row_at_matvec, sizes=(1, 2, 7), moderate=2000),
    "iter_mean_abs": Probe7(
        iter_mean_abs, lambda g, n: (g.standard_normal(n),), reduction=("L1",),
        key=keys.iter_mean_abs, sizes=(1, 2, 7), moderate=2_000_000),
    "floor_bin_counts": Probe7(
        floor_bin_counts, _bins, serial=("L1",), key=keys.floor_bin_counts,
        sizes=(0, 1, 2, 7), moderate=500_000),
    "round_to_grid": Probe7(
        round_to_grid, _halves, parallel=("L1",), key=keys.round_to_grid,
        sizes=(0, 1, 2, 7, 40), moderate=2_000_000),
    "abs_int_gaps_total": Probe7(
        abs_int_gaps_total, _int_gaps, reduction=("L1",), key=keys.abs_int_gaps_total,
        sizes=(0, 1, 2, 7), moderate=2_000_000),
    "transpose_by_swaps": Probe7(
        transpose_by_swaps, lambda g, n: (g.random((n, n)),), parallel=("L1", "L2"),
        key=keys.transpose_by_swaps, sizes=(1, 2, 7), moderate=2000),
    "symmetrize_average_inplace": Probe7(
        symmetrize_average_inplace, lambda g, n: (g.random((n, n)),), serial=("L1",),
        parallel=("L2",), key=keys.symmetrize_average_inplace, sizes=(1, 2, 7),
        moderate=2000),
    "lookup_table_map": Probe7(
        lookup_table_map, lambda g, n: (g.integers(0, 256, n), np.zeros(n)),
        parallel=("L1",), key=keys.lookup_table_map, sizes=(0, 1, 2, 7), moderate=2_000_000),
    "nested_helper_norms": Probe7(
        nested_helper_norms, lambda g, n: (g.standard_normal((n, 3)), np.zeros(n)),
        parallel=("L1",), key=keys.nested_helper_norms, sizes=(0, 1, 2, 7),
        moderate=2_000_000),
    "module_lambda_map": Probe7(
        module_lambda_map, lambda g, n: (g.standard_normal(n), np.zeros(n)),
        parallel=("L1",), key=keys.module_lambda_map, sizes=(0, 1, 2, 7),
        moderate=2_000_000),
    "recursive_helper_map": Probe7(
        recursive_helper_map, lambda g, n: (g.integers(0, 30, n), np.zeros(n, dtype=np.int64)),
        key=keys.recursive_helper_map,
        limits={"L1": "a recursive helper is an unknown call (not proved pure)"},
        sizes=(0, 1, 2, 7), moderate=200_000),
    "positives_to_list": Probe7(
        positives_to_list, lambda g, n: (g.standard_normal(n),), unsupported=("L1",),
        key=keys.positives_to_list, sizes=(1, 2, 7), moderate=200_000),
    "weights_from_list": Probe7(
        weights_from_list, lambda g, n: (list(g.random(n)), g.random(n)), reduction=("L1",),
        key=keys.weights_from_list, sizes=(0, 1, 2, 7), moderate=200_000),
    "code_counts_dict": Probe7(
        code_counts_dict, lambda g, n: (g.integers(0, 9, n),), unsupported=("L1",),
        key=keys.code_counts_dict, sizes=(0, 1, 2, 7), moderate=200_000),
    "safe_log_try": Probe7(
        safe_log_try, _logs, unsupported=("L1",), key=keys.safe_log_try,
        sizes=(0, 1, 2, 7), moderate=200_000),
    "sum_then_print": Probe7(
        sum_then_print, _vec, reduction=("L1",), key=keys.sum_then_print,
        sizes=(0, 1, 2, 7), moderate=2_000_000),
    "float32_total_energy": Probe7(
        float32_total_energy, lambda g, n: (g.random(n, dtype=np.float32),),
        reduction=("L1",), key=keys.float32_total_energy, sizes=(0, 1, 2, 7),
        moderate=2_000_000),
    "int32_total_wraps": Probe7(
        int32_total_wraps, lambda g, n: (g.integers(0, 2 ** 30, n, dtype=np.int32),),
        reduction=("L1",), key=keys.int32_total_wraps, sizes=(0, 1, 2, 7),
        moderate=2_000_000),
    "int64_count_above": Probe7(
        int64_count_above, lambda g, n: (g.random(n), 0.3), reduction=("L1",),
        key=keys.int64_count_above, sizes=(0, 1, 2, 7), moderate=2_000_000),
    "flag_strict_peaks": Probe7(
        flag_strict_peaks, lambda g, n: (g.random(n), np.zeros(n, dtype=np.bool_)),
        parallel=("L1",), key=keys.flag_strict_peaks, sizes=(0, 1, 2, 7),
        moderate=2_000_000),
    "center_rows_return_norms": Probe7(
        center_rows_return_norms, lambda g, n: (g.random((n, n + 1)),),
        parallel=("L1",), reduction=("L2", "L3"), key=keys.center_rows_return_norms,
        sizes=(1, 2, 7), moderate=1500),
    "accumulate_into_next": Probe7(
        accumulate_into_next, _aliased, parallel=("L1",), alias_refused=True,
        key=keys.accumulate_into_next, sizes=(0, 1, 2, 7), moderate=2_000_000),
}
