"""Array-element accumulators held in a scalar over an innermost loop, with the numba target's
``fp:reassoc`` gene (:mod:`hetlab.offload.analysis.transforms.accumulate`): where it applies,
where it must not, and that the variants equal the loops."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.analysis.report import analyze
from hetlab.offload.analysis.transforms.accumulate import promote_accumulators
from hetlab.offload.targets.numba import REASSOC


def chol_inplace(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
        for k in range(i):
            A[i, i] -= A[i, k] * A[i, k]
        A[i, i] = math.sqrt(A[i, i])


def forward_subst(L, x, b):
    for i in range(x.shape[0]):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i, j] * x[j]
        x[i] = x[i] / L[i, i]


def lu_rows(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]


def backward_subst(U, x, b):
    n = x.shape[0]
    for i in range(n - 1, -1, -1):
        x[i] = b[i]
        for j in range(i + 1, n):
            x[i] -= U[i, j] * x[j]
        x[i] /= U[i, i]


# -- must not be promoted ------------------------------------------------------------------
def reads_own_element_range(x):
    for i in range(x.shape[0]):
        for j in range(i + 1):  # j == i reads the element being accumulated
            x[i] += 0.5 * x[j]


def writes_another_element(x, y):
    for i in range(1, x.shape[0]):
        for j in range(3):
            x[i] += y[j]
            x[i - 1] = 2.0 * x[i]


def index_moves(x, idx, y):
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            x[idx[j]] += y[j] * i


def passed_whole(x, y):
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            x[i] += np.sum(x) * y[j]


def _tree(fn, floats):
    rep = analyze(fn)
    tree = rep.source.tree
    import copy

    tree = copy.deepcopy(tree)
    return tree, promote_accumulators(tree, frozenset(floats), rep.aliases)


@pytest.mark.parametrize("fn, floats, count", [
    (chol_inplace, {"A"}, 2), (forward_subst, {"L", "x", "b"}, 1),
    (lu_rows, {"A"}, 2), (backward_subst, {"U", "x", "b"}, 1),
])
def test_promoted(fn, floats, count):
    tree, notes = _tree(fn, floats)
    assert len(notes) == count and all("accumulated in a scalar" in n for n in notes)
    text = ast.unparse(tree)
    assert "_hl_a0 = " in text


@pytest.mark.parametrize("fn, floats", [
    (reads_own_element_range, {"x"}), (writes_another_element, {"x", "y"}),
    (index_moves, {"x", "y"}), (passed_whole, {"x", "y"}),
    (forward_subst, {"L", "b"}),  # x not known to hold floats (an int x truncates each step)
    (chol_inplace, set()),
])
def test_not_promoted(fn, floats):
    assert _tree(fn, floats)[1] == []


def _spd(n, seed=0):
    m = np.random.default_rng(seed).random((n, n))
    return m @ m.T + n * np.eye(n)


def _args(fn, n):
    g = np.random.default_rng(1)
    if fn in (chol_inplace, lu_rows):
        return (_spd(n),)
    T = np.tril(g.random((n, n))) + n * np.eye(n)
    if fn is backward_subst:
        T = T.T.copy()
    return T, np.zeros(n), g.random(n)


@pytest.mark.parametrize("fn", [chol_inplace, forward_subst, lu_rows, backward_subst])
@pytest.mark.parametrize("n", [0, 1, 2, 9, 40])
def test_variant_equals_the_loops(fn, n):
    rep = analyze(fn)
    rep.float_arrays = frozenset(rep.params)
    v = offload.transform(rep, [REASSOC])
    assert "accumulated in a scalar" in v.source
    args = _args(fn, n)
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    fn(*want)
    v.compile()(*got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_no_float_knowledge_no_promotion():
    v = offload.transform(forward_subst, [REASSOC])  # analyze alone: dtypes unknown
    assert "accumulated" not in v.source and "fastmath" in v.source


def test_search_promotes_with_the_gene():
    n = 150
    args = _args(forward_subst, n)
    plan = offload.search(forward_subst, tuple(a.copy() for a in args), targets=("numba",),
                          budget=4, reference="njit", progress=False)
    assert plan.report.float_arrays == {"L", "x", "b"}
    assert REASSOC in plan.genes
    got = [a.copy() for a in args]
    plan.compile()(*got)
    want = [a.copy() for a in args]
    forward_subst(*want)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10)
    if REASSOC in plan.options:
        assert "accumulated in a scalar" in plan.source()


def bound_changes(x, y):
    h = 1
    for j in range(h, x.shape[0]):  # j >= h when j's loop starts, not after h grows
        h = h + 1
        for k in range(h):  # k reaches j: x[k] may be x[j]
            x[j] += y[k] * x[k]


def test_a_bound_assigned_in_a_loop_gives_no_fact():
    assert _tree(bound_changes, {"x", "y"})[1] == []
    rep = analyze(bound_changes)
    rep.float_arrays = frozenset({"x", "y"})
    v = offload.transform(rep, [REASSOC])
    x, y = np.arange(1.0, 7.0), np.full(8, 0.5)
    want, got = x.copy(), x.copy()
    bound_changes(want, y)
    v.compile()(got, y)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_plan_refuses_arrays_of_another_kind():
    n = 40
    args = _args(forward_subst, n)
    plan = offload.search(forward_subst, tuple(a.copy() for a in args), targets=("numba",),
                          budget=2, reference="njit", progress=False)
    assert plan.arg_kinds == {"L": (2, True), "x": (1, True), "b": (1, True)}
    f = plan.compile()
    small = _args(forward_subst, 7)  # another size, float32: fine
    got = [a.astype(np.float32) for a in small]
    f(*got)
    want = [a.copy() for a in small]
    forward_subst(*want)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4)
    with pytest.raises(InvalidInputError, match="searched with x a 1-D floating-point array; "
                                                "got a 1-D int64 array"):
        f(small[0], np.zeros(7, np.int64), small[2])
    with pytest.raises(InvalidInputError, match="L a 2-D"):
        f(small[0][None], small[1], small[2])
