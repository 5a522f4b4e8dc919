"""Engine fixes found by the held-out probe (tests/offload_corpus/heldout_probe.py), each with a
positive and a negative case."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.elements import read_only_elements

pytest.importorskip("numba")


# -- a local bound to an element read and never written through is not an alias ------------------
def lu_upper_rows(A):
    """The rows of U in Doolittle's LU: ``w = A[i, j]`` then a running update of w."""
    for i in range(A.shape[0]):
        for j in range(i, A.shape[0]):
            w = A[i, j]
            for k in range(i):
                w = w - A[i, k] * A[k, j]
            A[i, j] = w


def row_update_via_view(A, B):
    """``r = A[i]`` is a row view when A is 2-D; nothing is written through it."""
    for i in range(A.shape[0]):
        r = A[i]
        B[i] = r * 2.0
        A[i] = r + 1.0


def write_through_view(A):
    """Row i - 1 written through a view while row i is read: sequential in truth."""
    for i in range(1, A.shape[0]):
        r = A[i - 1]
        r[0] = r[0] + A[i, 0]


def augmented_view(A):
    """``r += …`` updates row i - 1 in place through the view: sequential in truth."""
    for i in range(1, A.shape[0]):
        r = A[i - 1]
        r += A[i]


def view_from_before_the_loop(A, out):
    """``t`` is bound before the loop: each iteration reads row 0, which iteration 0 writes."""
    t = A[0]
    for i in range(A.shape[0]):
        out[i] = t * 2.0
        A[i] = A[i] + 1.0


def acc_stored_back(A, B, C):
    """``acc = C[i, j]; acc += …; C[i, j] = acc``: the i and j loops are parallel."""
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            acc = C[i, j]
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def acc_not_stored_back(C, out):
    """``acc += …`` writes C[i, 0] in place when C is 3-D, and iteration i + 1 reads it."""
    for i in range(C.shape[0] - 1):
        acc = C[i, 0]
        acc += 1.0
        out[i] = C[i + 1, 0] * 2.0


def acc_index_rebound(C):
    """The store back is to another element: j is bound anew in between."""
    for i in range(C.shape[0] - 1):
        j = 0
        acc = C[i, j]
        acc += C[i + 1, 0]
        j = 1
        C[i, j] = acc


def _run(fn, args):
    fn(*args)
    return args


def test_element_locals_bound_first_do_not_make_a_loop_sequential():
    report = offload.analyze(lu_upper_rows)
    assert report.loop("L2").verdict == "parallel", report.loop("L2").why
    assert not report.loop("L1").parallelizable
    report = offload.analyze(row_update_via_view)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    report = offload.analyze(acc_stored_back)
    assert [lp.verdict for lp in report.loops] == ["parallel", "parallel", "reduction"]
    rng = np.random.default_rng(0)
    for fn, loop, make in (
            (lu_upper_rows, "L2", lambda: (rng.random((9, 9)) + 9 * np.eye(9),)),
            (row_update_via_view, "L1", lambda: (rng.random((7, 5)), np.zeros((7, 5)))),
            (acc_stored_back, "L1", lambda: (rng.random((6, 4)), rng.random((4, 5)),
                                             rng.random((6, 5)))),
            # C 3-D: acc is a view of C[i, j, :] updated in place, then stored back
            (acc_stored_back, "L2", lambda: (rng.random((6, 4)), rng.random((4, 5)),
                                             rng.random((6, 5, 3))))):
        args = make()
        want = _run(fn, [a.copy() for a in args])
        got = _run(offload.transform(fn, [loop]).compile(), list(args))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_views_written_through_or_carried_keep_their_alias():
    assert read_only_elements(offload.analyze(write_through_view).source.tree, {}) == set()
    for fn in (write_through_view, augmented_view, view_from_before_the_loop,
               acc_not_stored_back, acc_index_rebound):
        report = offload.analyze(fn)
        assert not report.loop("L1").parallelizable, (fn.__name__, report.loop("L1").verdict)
        # a row view of one iteration is read through its array (front/views.py): the
        # dependence on A shows; the others keep their alias
        why = "dependence on A: A[i, 0] → A[i - 1, 0]" if fn is write_through_view \
            else "share memory"
        assert any(why in r for r in report.loop("L1").reasons), (fn.__name__, why)


# -- chained subscripts ``A[i][k]`` are the catalogue's ``A[i, k]`` --------------------------
def chained_gemm(alpha, A, B, C):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i][j] = C[i][j] + alpha * A[i][k] * B[k][j]


def chained_offset(A, y):
    """``A[i][j + 1]``: an offset subscript, no block (as for ``A[i, j + 1]``)."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1] - 1):
            y[i] += A[i][j + 1]


def list_rows_product(rows, x, y):
    """``rows`` a list of 1-D arrays: the block (slicing ``rows[:, :]``) cannot compile."""
    for i in range(len(rows)):
        for j in range(len(x)):
            y[i] += rows[i][j] * x[j]


def test_chained_subscripts_match_the_catalogue():
    report = offload.analyze(chained_gemm)
    assert [b.pattern for b in report.blocks] == ["matmul"]
    rng = np.random.default_rng(3)
    args = (0.5, rng.random((5, 4)), rng.random((4, 6)), rng.random((5, 6)))
    want = args[3] + 0.5 * args[1] @ args[2]
    offload.transform(report, blocks=["B1"]).compile()(*args)
    np.testing.assert_allclose(args[3], want, rtol=1e-12)
    assert not offload.analyze(chained_offset).blocks


def test_a_chained_block_on_a_list_is_dropped_by_the_search():
    from hetlab.offload import GAOptions, MeasureOptions

    rng = np.random.default_rng(4)

    def make():
        return ([rng.random(5) for _ in range(4)], rng.random(5), np.zeros(4))

    with warnings.catch_warnings():  # numba's reflected-list deprecation
        warnings.simplefilter("ignore")
        plan = offload.search(list_rows_product, make(), targets=("numba",), budget=4,
                              progress=False, ga=GAOptions(population=4, generations=1),
                              measure=MeasureOptions(repeats=1, warmup=0, confirm=0,
                                                     among_work=0))
    assert "B1" not in plan.blocks
    assert plan.block_trials[("B1",)].status.startswith("failed")
    args = make()
    want = args[2].copy()
    list_rows_product(args[0], args[1], want)
    plan.compile()(*args)
    np.testing.assert_allclose(args[2], want, rtol=1e-12)


# -- a scalar stored into an array element is copied, not referenced ------------------------------
def clip_in_place(a, lo, hi):
    """``a.shape`` says a is an array: ``a[i] = hi`` copies the number."""
    for i in range(a.shape[0]):
        if a[i] > hi:
            a[i] = hi
        elif a[i] < lo:
            a[i] = lo


def fill_maybe_list(c, v):
    """Nothing says c is an array: ``c[i] = v`` may put a reference to v in a list."""
    for i in range(len(c)):
        c[i] = v


def test_element_stores_into_known_arrays_keep_no_reference():
    report = offload.analyze(clip_in_place)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    assert not report.aliases.may_alias("a", "hi")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(40)
    want = np.clip(x, -0.5, 0.5)
    offload.transform(clip_in_place, ["L1"]).compile()(x, -0.5, 0.5)
    np.testing.assert_array_equal(x, want)
    report = offload.analyze(fill_maybe_list)
    assert report.aliases.may_alias("c", "v")
    assert not report.loop("L1").parallelizable


# -- ``if e > m: m = e`` is a max reduction -------------------------------------------------------
def largest(x):
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
    return m


def smallest_abs(x):
    m = np.inf
    for i in range(x.shape[0]):
        if m > abs(x[i]):
            m = abs(x[i])
    return m


def largest_non_strict(x):
    """``>=`` keeps the later of equal values (-0.0 vs 0.0): not folded."""
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] >= m:
            m = x[i]
    return m


def largest_with_else(x, out):
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
        else:
            out[i] = m
    return m


def largest_other_value(x):
    """The value assigned is not the one compared: a different computation."""
    m = -np.inf
    for i in range(x.shape[0] - 1):
        if x[i] > m:
            m = x[i + 1]
    return m


def _noisy(v):
    return v


def largest_through_a_call(x):
    m = -np.inf
    for i in range(x.shape[0]):
        if _noisy(x[i]) > m:
            m = _noisy(x[i])
    return m


def smallest_ternary(x):
    m = np.inf
    for i in range(x.shape[0]):
        m = abs(x[i]) if abs(x[i]) < m else m
    return m


def largest_ternary_flipped(x):
    """``m = m if m > v else v`` takes v when the test is false, a NaN v too: not folded."""
    m = -np.inf
    for i in range(x.shape[0]):
        m = m if m > x[i] else x[i]
    return m


def test_conditional_extrema_are_reductions():
    from tests.offload_corpus.heldout_probe import softmax_rows

    assert offload.analyze(softmax_rows).loop("L2").reductions == {"mx": "max"}
    assert offload.analyze(largest).loop("L1").reductions == {"m": "max"}
    assert offload.analyze(smallest_abs).loop("L1").reductions == {"m": "min"}
    assert offload.analyze(smallest_ternary).loop("L1").reductions == {"m": "min"}
    rng = np.random.default_rng(6)
    for fn in (largest, smallest_abs, smallest_ternary):
        x = rng.standard_normal(3000)
        x[[5, 700, 2999]] = np.nan  # NaN compares false: skipped by both spellings
        got = offload.transform(fn, ["L1"]).compile()(x)
        assert got == fn(x) and not np.isnan(got)
    X = rng.standard_normal((7, 300))
    want, got = np.zeros_like(X), np.zeros_like(X)
    softmax_rows(X, want)
    offload.transform(softmax_rows, ["L2"]).compile()(X, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_other_conditional_updates_are_left_alone():
    for fn in (largest_non_strict, largest_with_else, largest_other_value,
               largest_through_a_call, largest_ternary_flipped):
        report = offload.analyze(fn)
        assert not report.loop("L1").parallelizable, fn.__name__
        assert "max(" not in offload.transform(fn).source, fn.__name__


# -- one-based loops (Fortran ports) are re-based for the catalogue -------------------------------
def gemm_one_based(A, B, C, n):
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            for k in range(1, n + 1):
                C[i - 1, j - 1] += A[i - 1, k - 1] * B[k - 1, j - 1]


def matvec_from_two(A, x, y):
    """``range(2, n + 1)`` with ``i - 1``: rows 1 … n - 1 (start 2 − 1 = 1)."""
    n = A.shape[0]
    for i in range(2, n + 1):
        for j in range(1, n + 1):
            y[i - 1] = y[i - 1] + A[i - 1, j - 1] * x[j - 1]


def matvec_mixed_offsets(A, x, y):
    """``x[j]`` beside ``A[i, j - 1]``: not one shift per variable, no block."""
    n = A.shape[0]
    for i in range(n):
        for j in range(1, n):
            y[i] += A[i, j - 1] * x[j]


def matvec_one_based_live(A, x, y):
    """The loop variable is returned: its value after the loop would change, no block."""
    n = A.shape[0]
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            y[i - 1] += A[i - 1, j - 1] * x[j - 1]
    return i


def test_one_based_loops_match_the_catalogue():
    rng = np.random.default_rng(7)
    report = offload.analyze(gemm_one_based)
    assert [b.pattern for b in report.blocks] == ["matmul"]
    A, B, C = rng.random((6, 6)), rng.random((6, 6)), rng.random((6, 6))
    want = C.copy()
    gemm_one_based(A, B, want, 5)  # n = 5 < 6: the bounds are kept
    offload.transform(report, blocks=["B1"]).compile()(A, B, C, 5)
    np.testing.assert_allclose(C, want, rtol=1e-12)
    report = offload.analyze(matvec_from_two)
    assert [b.pattern for b in report.blocks] == ["matvec"]
    y, want = np.zeros(6), np.zeros(6)
    matvec_from_two(A, B[0], want)
    offload.transform(report, blocks=["B1"]).compile()(A, B[0], y)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    assert y[0] == 0.0


def test_mixed_offsets_and_live_loop_variables_are_no_block():
    assert not offload.analyze(matvec_mixed_offsets).blocks
    assert not offload.analyze(matvec_one_based_live).blocks
