"""Reductions of row expressions inside loops run as element loops in the numba variant
(:mod:`hetlab.offload.analysis.transforms.slice_sums`): ``np.sum((X[i] - C[k]) ** 2)``,
``v.sum()``, ``np.mean``, ``np.dot``/``@`` of two rows, ``np.linalg.norm`` — where it
applies, the variant gives the plain function's results (to the last bits: NumPy sums
pairwise); where a length differs, a divisor is 0 or a row is empty, the reduction runs as
written; integer or float32 arrays, other calls in the statement and statements outside
loops are kept."""

from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.transforms.slice_sums import slice_sums
from hetlab.offload.targets.numba import NumbaTarget

from .offload_corpus.heldout_probe9 import assign_to_nearest_center as nearest_center

pytest.importorskip("numba")

G = np.random.default_rng(0)


def distances(X, D):
    for i in range(X.shape[0]):
        for j in range(X.shape[0]):
            D[i, j] = np.sqrt(((X[i] - X[j]) ** 2).sum())


def row_stats(A, w, out):
    for i in range(A.shape[0]):
        out[i, 0] = np.mean(A[i] * 2.0)
        out[i, 1] = np.dot(A[i], w) + A[i] @ w
        out[i, 2] = np.linalg.norm(A[i] - w / 4.0)
        if A[i].sum() > 0.5 * A.shape[1]:
            out[i, 3] = 1.0


def scaled_by(A, s, out):
    for i in range(A.shape[0]):
        out[i] = np.sum(A[i] / s)


def column_sums(A, out):
    for j in range(A.shape[1]):
        out[j] = np.sum(A[:, j] * A[:, j])


def printed_sum(A, out):
    for i in range(A.shape[0]):
        out[i] = np.sum(A[i]) + len(str(i))


def outside_a_loop(A, out):
    out[0] = np.sum(A[0] * 2.0)


def scattered_sum(A, idx, out):
    for i in range(A.shape[0]):
        out[i] = np.add.at(A, idx, 1.0) or np.sum(A[i])  # the sum reads what add.at wrote


def whole_matrix_sum(A, out):
    for i in range(A.shape[0]):
        out[i] = np.sum(A * i)


def softmax_rows(A, P):
    for i in range(A.shape[0]):
        m = np.max(A[i])
        e = np.exp(A[i] - m)
        P[i] = e / np.sum(e)


def chebyshev_nearest(X, Y, idx, dmin):
    for i in range(X.shape[0]):
        dmin[i] = np.inf
        for j in range(Y.shape[0]):
            d = np.abs(X[i] - Y[j]).max()
            lo = (X[i] - Y[j]).min()
            if d + 0.0 * lo < dmin[i]:
                dmin[i] = d
                idx[i] = j


def projection_rows(A, u, R):
    for i in range(A.shape[0]):
        c = A[i] @ u
        R[i] = A[i] - c * u


def _variant(fn, args, loops=(), scalars=()):
    """The numba variant of ``fn`` with the fixed passes, as the search builds it."""
    params = offload.analyze(fn).params
    ranks = {p: a.ndim for p, a in zip(params, args, strict=True) if isinstance(a, np.ndarray)}
    report = offload.analyze(fn, arrays=ranks)
    report.float_arrays = frozenset(p for p, a in zip(params, args, strict=True)
                                    if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    report.double_arrays = frozenset(p for p, a in zip(params, args, strict=True)
                                     if isinstance(a, np.ndarray) and a.dtype == np.float64)
    report.scalar_params = frozenset(scalars)
    return NumbaTarget().generate(report, loops, transforms=True)


def _agree(fn, args, loops=(), scalars=()) -> str:
    v = _variant(fn, args, loops, scalars)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of an empty row
        fn(*want)
    v.compile()(*got)
    for w, g in zip(want, got, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    return v.source


def test_a_squared_distance_is_an_element_loop_with_a_length_guard():
    src = _agree(nearest_center, (G.random((30, 5)), G.random((4, 5)), np.zeros(30, np.int64)),
                 loops=("L1",))
    assert "reduction of a row expression as an element loop" in src
    assert "if X.shape[1] == C.shape[1]:" in src
    assert "_hl_q0 += (X[i, _hl_s0q] - C[k, _hl_s0q]) ** 2" in src
    assert "d = _hl_q0" in src


def test_a_length_that_broadcasts_runs_the_reduction_as_written():
    """Serially: under ``parallel=True`` numba refuses a broadcast in an array expression
    (sizes asserted equal) whether the pass ran or not, and the search drops that variant."""
    args = (G.random((6, 5)), G.random((3, 1)), np.zeros(6, np.int64))  # C rows broadcast
    _agree(nearest_center, args)


@pytest.mark.parametrize("loops", [(), ("L1",)])
def test_method_sums_and_the_row_view_the_scalar_replacement_hoists(loops):
    src = _agree(distances, (G.random((9, 4)), np.zeros((9, 9))), loops=loops)
    assert "D[i, j] = np.sqrt(_hl_q0)" in src


def test_mean_dot_matmul_norm_and_an_if_test():
    A = G.random((8, 6))
    src = _agree(row_stats, (A, G.random(6), np.zeros((8, 4))))
    assert src.count("reduction of a row expression") == 5
    assert "np.sqrt(_hl_q" in src and "/ A.shape[1]" in src  # norm; mean
    assert "A.shape[1] > 0" in src  # the mean of an empty row stays NumPy's (nan)
    _agree(row_stats, (np.zeros((3, 0)), np.zeros(0), np.zeros((3, 4))))


def test_a_zero_divisor_keeps_numpys_inf():
    src = _agree(scaled_by, (G.random((4, 3)), 0.0, np.zeros(4)), scalars=("s",))
    assert "s != 0" in src
    _agree(scaled_by, (G.random((4, 3)), 2.0, np.zeros(4)), scalars=("s",))


def test_columns_are_rows_too():
    src = _agree(column_sums, (G.random((5, 7)), np.zeros(7)))
    assert "A[_hl_s0q, j] * A[_hl_s0q, j]" in src


def _rewritten(fn, ranks, doubles):
    report = offload.analyze(fn, arrays=ranks)
    tree = report.source.tree
    notes = slice_sums(tree, report.array_ranks, frozenset(doubles), report.aliases.numbers,
                       frozenset())
    return ast.unparse(tree), notes


@pytest.mark.parametrize(("fn", "ranks", "doubles"), [
    (nearest_center, {"X": 2, "C": 2, "labels": 1}, {"C"}),  # X float32 or integer
    (printed_sum, {"A": 2, "out": 1}, {"A", "out"}),  # another call in the statement
    (outside_a_loop, {"A": 2, "out": 1}, {"A", "out"}),
    (whole_matrix_sum, {"A": 2, "out": 1}, {"A", "out"}),  # not a row
    (scattered_sum, {"A": 2, "idx": 1, "out": 1}, {"A", "out"}),  # a write before the sum
    (nearest_center, {}, {"X", "C"}),  # ranks unknown: X[i] may be a plane
])
def test_reductions_the_loop_would_change_are_kept(fn, ranks, doubles):
    src, notes = _rewritten(fn, ranks, doubles)
    assert notes == [] and "_hl_q" not in src


def test_a_search_plan_gives_the_plain_result():
    args = (G.random((200, 6)), G.random((7, 6)), np.zeros(200, np.int64))
    plan = offload.search(nearest_center, tuple(a.copy() for a in args), budget=2,
                          progress=False, reference="njit")
    got = [a.copy() for a in args]
    plan.compile()(*got)
    want = [a.copy() for a in args]
    nearest_center(*want)
    np.testing.assert_array_equal(got[2], want[2])


def test_max_and_min_of_rows_are_nan_exact():
    A = G.random((6, 5))
    A[2, 3] = np.nan  # NumPy's max of that row is nan, and so is every entry of its softmax
    src = _agree(softmax_rows, (A, np.zeros((6, 5))), loops=("L1",))
    assert "not _hl_q0e <= _hl_q0" in src
    X, Y = G.random((7, 3)), G.random((4, 3))
    X[1, 0] = np.nan
    Y[2, 2] = np.nan
    src = _agree(chebyshev_nearest, (X, Y, np.full(7, -1), np.zeros(7)), loops=("L1",))
    assert "not _hl_q0e <= _hl_q0" in src and "not _hl_q1e >= _hl_q1" in src
    with pytest.raises(ValueError):  # an empty row: NumPy's error, in the variant too
        _agree(softmax_rows, (np.zeros((2, 0)), np.zeros((2, 0))))


@pytest.mark.parametrize("seed", range(4))  # more: python -m tests.fuzz.slice_sums_differential
def test_random_row_reductions_give_numpys_values(seed):
    """Random elementwise row expressions under every reduction the pass rewrites, on rows
    that are empty, broadcast, hold NaN, divided by 0: the serial variant with the fixed
    passes leaves ``out`` as the plain function does (or raises the same error)."""
    from .fuzz.slice_sums_differential import check_seed

    assert check_seed(seed, _variant) == [], seed


def test_a_row_statement_scaled_by_a_reduced_number_is_an_element_loop_too():
    """``c = A[i] @ u`` is a number once reduced (``_hl_q0``), so ``R[i] = A[i] - c * u``
    (its row read through the view the scalar replacement hoisted) runs as an element loop."""
    src = _agree(projection_rows, (G.random((6, 4)), G.random(4), np.zeros((6, 4))),
                 loops=("L1",))
    assert "slice statement as an element loop" in src
    assert "c * u[_hl_s0]" in src
