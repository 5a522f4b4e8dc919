"""Column-major arguments (``np.asfortranarray``, a transposed view ``A.T``) weigh in the
loop interchange for unit stride: their first subscript is the unit-stride one."""

from __future__ import annotations

import numpy as np

from hetlab import offload

QUICK = dict(budget=2, progress=False, reference="njit")


def transpose_into(A, B):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            B[j, i] = A[i, j]


def scale_rows(A, s, B):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            B[i, j] = s[i] * A[i, j]


def test_a_column_major_operand_turns_the_interchange():
    ranks = {"A": 2, "s": 1, "B": 2}
    assert not offload.analyze(scale_rows, arrays=ranks).transforms.interchanges
    both = offload.analyze(scale_rows, arrays=ranks, fortran=["A", "B"])
    assert both.transforms.interchanges[0].order == (1, 0)
    # the write counts double: B's layout decides against A's
    assert not offload.analyze(scale_rows, arrays=ranks, fortran=["A"]).transforms.interchanges
    # a transpose gets one unit-stride access either way: the written one wins
    for fortran in ([], ["A"]):
        t = offload.analyze(transpose_into, arrays={"A": 2, "B": 2}, fortran=fortran)
        assert t.transforms.interchanges[0].order == (1, 0)


def test_the_search_sees_the_layout_of_its_arguments():
    g = np.random.default_rng(0)
    s = g.random(30)
    for A in (np.asfortranarray(g.random((30, 20))), g.random((20, 30)).T):
        B = np.asfortranarray(np.zeros((30, 20)))
        plan = offload.search(scale_rows, (A, s, B), **QUICK)
        assert plan.report.transforms.interchanges, "both operands are column-major"
        out = np.asfortranarray(np.zeros((30, 20)))
        plan.compile()(A, s, out)
        np.testing.assert_array_equal(out, s[:, None] * A)
    plan = offload.search(scale_rows, (g.random((30, 20)), s, np.zeros((30, 20))), **QUICK)
    assert not plan.report.transforms.interchanges
