"""Row-wise ``np.dot`` calls read as the sums they compute for block matching
(:mod:`hetlab.offload.analysis.dots`): positive and negative cases, results."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.report import analyze


def rows_dot(A, x, y):
    for i in range(A.shape[0]):
        y[i] = np.dot(A[i, :], x)


def rows_dot_bare(A, x, y):
    for i in range(A.shape[0]):
        y[i] = np.dot(A[i], x[:])


def rows_dot_acc(A, x, y):
    for i in range(A.shape[0]):
        y[i] += np.dot(x, A[i])


def rows_dot_scalar(A, x, y):
    for i in range(A.shape[0]):
        s = np.dot(A[i], x)
        y[i] = s


def reads_its_target(A, x):
    for i in range(A.shape[0]):
        x[i] = np.dot(A[i], x)


def subtracted(A, x, y):
    for i in range(A.shape[0]):
        y[i] -= np.dot(A[i], x)


def scaled(A, x, y):
    for i in range(A.shape[0]):
        y[i] = 2.0 * np.dot(A[i], x)


RANKS = {"A": 2, "x": 1, "y": 1}


def _args(fn, seed=0, order="C"):
    g = np.random.default_rng(seed)
    A = np.asarray(g.random((23, 17)), order=order)
    x = g.random(17 if fn is not reads_its_target else 23)
    if fn is reads_its_target:
        return g.random((23, 23)), x
    return A, x, g.random(23)


@pytest.mark.parametrize("fn", [rows_dot, rows_dot_bare, rows_dot_acc, rows_dot_scalar])
@pytest.mark.parametrize("order", ["C", "F"])
def test_row_dots_are_a_matvec(fn, order):
    rep = analyze(fn, arrays=RANKS)
    assert [b.pattern for b in rep.blocks] == ["matvec"], [str(b) for b in rep.blocks]
    args = _args(fn, order=order)
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    fn(*want)
    offload.transform(rep, blocks=["B1"]).compile()(*got)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


@pytest.mark.parametrize("fn, ranks", [
    (rows_dot, {}),  # ranks unknown: A[i, :] might be a matrix
    (rows_dot, {"A": 3, "x": 1, "y": 1}),
    (rows_dot, {"A": 2, "x": 2, "y": 1}),  # a vector-matrix product per row
    (reads_its_target, {"A": 2, "x": 1}),  # zeroing x[i] first would change what is read
    (subtracted, RANKS), (scaled, RANKS),
])
def test_not_expanded(fn, ranks):
    assert not analyze(fn, arrays=ranks).blocks


def test_search_uses_it():
    args = _args(rows_dot, order="F")
    plan = offload.search(rows_dot, tuple(a.copy() for a in args), targets=("numba",),
                          budget=2, reference="njit", progress=False)
    assert [b.pattern for b in plan.report.blocks] == ["matvec"]
    got = [a.copy() for a in args]
    plan.compile()(*got)
    np.testing.assert_allclose(got[2], args[0] @ args[1], rtol=1e-12)


def row_sums(A, out):
    for i in range(A.shape[0]):
        out[i] = np.sum(A[i, :])


def row_sums_scalar(A, out):
    for i in range(A.shape[0]):
        s = np.sum(A[i])
        out[i] = 2.0 * s


@pytest.mark.parametrize("fn", [row_sums, row_sums_scalar])
def test_row_sums(fn):
    rep = analyze(fn, arrays={"A": 2, "out": 1})
    assert rep.blocks, fn.__name__
    A = np.random.default_rng(4).random((31, 19))
    want, got = np.zeros(31), np.zeros(31)
    fn(A, want)
    offload.transform(rep, blocks=[b.id for b in rep.blocks]).compile()(A, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not analyze(fn, arrays={"A": 3, "out": 1}).blocks
