"""Engine fixes found by the held-out probe (tests/offload_corpus/heldout_probe.py), each with a
positive and a negative case."""

from __future__ import annotations

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


def _run(fn, args):
    fn(*args)
    return args


def test_element_locals_bound_first_do_not_make_a_loop_sequential():
    report = offload.analyze(lu_upper_rows)
    assert report.loop("L2").verdict == "parallel", report.loop("L2").why
    assert not report.loop("L1").parallelizable
    report = offload.analyze(row_update_via_view)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    rng = np.random.default_rng(0)
    for fn, loop, make in (
            (lu_upper_rows, "L2", lambda: (rng.random((9, 9)) + 9 * np.eye(9),)),
            (row_update_via_view, "L1", lambda: (rng.random((7, 5)), np.zeros((7, 5))))):
        args = make()
        want = _run(fn, [a.copy() for a in args])
        got = _run(offload.transform(fn, [loop]).compile(), list(args))
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)


def test_views_written_through_or_carried_keep_their_alias():
    assert read_only_elements(offload.analyze(write_through_view).source.tree, {}) == set()
    for fn in (write_through_view, augmented_view, view_from_before_the_loop):
        report = offload.analyze(fn)
        assert not report.loop("L1").parallelizable, (fn.__name__, report.loop("L1").verdict)
        assert any("share memory" in r for r in report.loop("L1").reasons), fn.__name__
