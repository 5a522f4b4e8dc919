"""A full-rank element read of a numeric array of known rank is a number, not a view
(``analyze(fn, arrays={"A": 2})``, as ``search`` passes its arguments): ``s = A[j, j]`` then
``s -= …`` is a reduction, where an array of unknown rank keeps the loop sequential."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.report import analyze
from tests.offload_corpus.heldout_probe4 import cholesky_left as chol


def row_view(A, out):
    for i in range(A.shape[0]):
        r = A[i]
        for k in range(A.shape[1]):
            r[k] += 1.0
        out[i] = r[0]


def row_view_returned(A, out):
    r = A[0]
    for i in range(A.shape[0]):
        r = A[i]
        for k in range(A.shape[1]):
            r[k] += 1.0
        out[i] = r[0]
    return r


def gathered(A, idx, out):
    for i in range(out.shape[0]):
        v = A[idx[i], 0]
        for k in range(3):
            v += A[idx[i], k]
        out[i] = v


def sliced(A, out):
    for i in range(out.shape[0]):
        v = A[i, 0:1]
        for _k in range(2):
            v += A[i, 0]  # in place: A[i, 0] read after the last k wrote it
        out[i] = v[0]


def carried(A):
    for i in range(1, A.shape[0]):
        s = A[i - 1, i - 1]
        A[i, i] = s + 1.0


def _verdicts(fn, arrays):
    return {lp.id: lp.verdict for lp in analyze(fn, arrays=arrays).loops}


def test_full_rank_read_is_a_number():
    assert _verdicts(chol, {"A": 2}) == {"L1": "sequential", "L2": "reduction",
                                         "L3": "parallel", "L4": "reduction"}
    # rank unknown, a 3-D array (A[j, j] is a row) or an array of objects: as before
    for arrays in ((), ["A"], {"A": 3}, {"A": -1}):
        v = _verdicts(chol, arrays)
        assert v["L2"] == v["L4"] == "sequential", arrays
        assert "may share memory" in analyze(chol, arrays=arrays).loop("L2").why


def test_gathered_index_of_known_rank():
    v = _verdicts(gathered, {"A": 2, "idx": 1, "out": 1})
    assert v["L1"] == "parallel" and v["L2"] == "reduction"
    # idx of unknown rank: idx[i] might be an array (a fancy index), so v might be a view
    assert _verdicts(gathered, {"A": 2, "out": 1})["L2"] == "sequential"


@pytest.mark.parametrize("fn, arrays, loop", [
    (row_view_returned, {"A": 2, "out": 1}, "L1"),  # A[i] of a 2-D A is a row: r writes A
    (sliced, {"A": 2, "out": 1}, "L2"),  # a slice is a view, whatever A's rank
])
def test_not_a_number(fn, arrays, loop):
    assert _verdicts(fn, arrays)[loop] == "sequential"


def test_a_row_view_of_one_iteration_is_read_through_its_array():
    """``r = A[i]`` bound once and used only in its iteration is ``A[i, k]`` to the
    dependence test (front/views.py): parallel, and the same results."""
    assert _verdicts(row_view, {"A": 2, "out": 1})["L1"] == "parallel"
    A = np.random.default_rng(0).random((9, 4))
    want, got = (A.copy(), np.zeros(9)), (A.copy(), np.zeros(9))
    row_view(*want)
    offload.transform(analyze(row_view), ["L1"]).compile()(*got)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_values_still_carried_through_the_array():
    v = analyze(carried, arrays={"A": 2}).loop("L1")
    assert v.verdict == "sequential" and "A" in v.why


def test_search_gives_the_serial_result():
    m = np.random.default_rng(3).random((60, 60))
    A = m @ m.T + 60 * np.eye(60)
    plan = offload.search(chol, (A.copy(),), targets=("numba",), budget=6, reference="njit",
                          progress=False)
    assert plan.report.loop("L2").verdict == "reduction"
    got, want = A.copy(), A.copy()
    plan.compile()(got)
    chol(want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for loops in (["L2"], ["L3"], ["L3", "L4"], ["L2", "L4"]):
        got = A.copy()
        offload.transform(plan.report, loops).compile()(got)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=str(loops))
