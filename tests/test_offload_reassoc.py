"""The numba target's reassociation gene ``"fp:reassoc"`` (``fastmath={'contract', 'reassoc'}``):
when it is offered, what it generates, that results stay within the verification tolerance
(and NaN stays NaN), and that the search tries it on its fittest candidates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.analysis.report import analyze
from hetlab.offload.searching.driver import _with_twins
from hetlab.offload.targets.numba import REASSOC, reassociable
from hetlab.offload.targets.registry import get_target
from tests.offload_corpus.heldout_probe4 import cholesky_left as chol


def dot_rows(A, x, out):
    n, m = A.shape
    for i in range(n):
        s = 0.0
        for k in range(m):
            s += A[i, k] * x[k]
        out[i] = s


def spelled_out(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i]
    return s


def added_first(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = x[i] * x[i] + s
    return s


def product(x):
    p = 1.0
    i = 0
    while i < x.shape[0]:
        p *= x[i]
        i += 1
    return p


def elementwise(x, out):
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i] + 1.0


def outside_loop(x):
    s = 0.0
    s += x[0]
    return s


def not_self(x, out):
    for i in range(x.shape[0]):
        t = x[i] + 1.0
        out[i] = t


def element_update(A, x, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]


def _spd(n, seed=0):
    m = np.random.default_rng(seed).random((n, n))
    return m @ m.T + n * np.eye(n)


F = np.zeros(8)


@pytest.mark.parametrize("fn, args", [
    (dot_rows, (np.zeros((4, 4)), F, F)),
    (chol, (np.zeros((4, 4)),)),
    (spelled_out, (F,)),
    (added_first, (F,)),
    (product, (F,)),
    (dot_rows, (np.zeros((4, 4), np.float32), np.zeros(4, np.float32), np.zeros(4, np.float32))),
    (spelled_out, (np.zeros(4, np.complex128),)),
    (element_update, (np.zeros((4, 4)), F, F)),  # y[i] over j: held in a scalar
])
def test_offered_for_float_accumulations_in_loops(fn, args):
    rep = analyze(fn)
    assert reassociable(rep, args)
    trips = {lp.id: 8 for lp in rep.loops}
    assert get_target("numba").option_genes(rep, args, trips=trips)[-1] == REASSOC


@pytest.mark.parametrize("fn, args", [
    (dot_rows, (np.zeros((4, 4), np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64))),
    (elementwise, (F, F)),
    (outside_loop, (F,)),
    (not_self, (F, F)),
])
def test_not_offered(fn, args):
    rep = analyze(fn)
    assert not reassociable(rep, args)
    trips = {lp.id: 8 for lp in rep.loops}
    assert REASSOC not in get_target("numba").option_genes(rep, args, trips=trips)


def test_source_says_fastmath_and_results_close():
    v = offload.transform(chol, [REASSOC])
    assert "fastmath={" in v.source and "'reassoc'" in v.source and "'contract'" in v.source
    assert "# transform: fastmath contract, reassoc" in v.source
    assert "nnan" not in v.source and "ninf" not in v.source
    plain = offload.transform(chol, [])
    assert "fastmath" not in plain.source
    A = _spd(37)
    want, got = A.copy(), A.copy()
    chol(want)
    v.compile()(got)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_with_a_parallel_loop():
    rep = analyze(dot_rows)
    par = [lp.id for lp in rep.parallelizable if lp.depth == 0]
    v = offload.transform(dot_rows, [*par, REASSOC])
    assert "prange" in v.source.split("def dot_rows")[1] and "fastmath" in v.source
    A = np.random.default_rng(1).random((33, 65))
    x = np.random.default_rng(2).random(65)
    out = np.zeros(33)
    v.compile()(A, x, out)
    np.testing.assert_allclose(out, A @ x, rtol=1e-12)


def test_nan_and_inf_keep_their_meaning():
    f = offload.transform(spelled_out, [REASSOC]).compile()
    x = np.arange(40.0)
    assert f(x) == pytest.approx(float(x @ x))
    x[7] = np.nan
    assert math.isnan(f(x))
    x[7] = np.inf
    assert f(x) == math.inf
    assert math.isnan(offload.transform(product, [REASSOC]).compile()(
        np.array([0.0, np.inf, 2.0])))  # 0 * inf stays NaN


def test_only_the_numba_target_knows_it():
    with pytest.raises(InvalidInputError, match="no loop 'fp:reassoc'"):
        offload.transform(chol, [REASSOC], target="cupy", array_module=np)


def test_twins_of_the_fittest():
    genes = ["L1", "L2", REASSOC]
    cache = {(0, 0, 0): 1.0, (1, 0, 0): 3.0, (0, 1, 0): 2.0, (1, 1, 0): 0.0}
    seen = []

    def fitness(g):
        seen.append(g)
        return 4.0 if g == (1, 0, 1) else 1.5

    out = _with_twins(cache, fitness, genes, (REASSOC,), 2)
    assert seen == [(1, 0, 1), (0, 1, 1)]  # the two fittest, fittest first
    assert out[(1, 0, 1)] == 4.0 and out[(0, 1, 1)] == 1.5
    assert cache == {(0, 0, 0): 1.0, (1, 0, 0): 3.0, (0, 1, 0): 2.0, (1, 1, 0): 0.0}
    # a failed candidate (fitness 0) gets no twin; nothing when the gene is not offered
    assert _with_twins({(0, 0): 0.0}, fitness, ["L1", REASSOC], (REASSOC,), 3) == {(0, 0): 0.0}
    assert _with_twins(cache, fitness, ["L1", "L2", "L1:t1"], (REASSOC,), 2) == cache


def test_search_tries_it_and_reports_it():
    A = _spd(120)
    plan = offload.search(chol, (A.copy(),), targets=("numba",), budget=4, reference="njit",
                          progress=False)
    assert REASSOC in plan.genes
    at = plan.genes.index(REASSOC)
    tried = {g for g, m in plan.measurements.items() if g[at] and m.status != "pruned"}
    assert tried, "the reassociated twin was never measured"
    assert plan.verified
    got = A.copy()
    plan.compile()(got)
    want = A.copy()
    chol(want)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    if plan.best[at]:
        assert REASSOC in plan.options and f"options {REASSOC}" in plan.summary()
        assert "fastmath" in plan.source()
    else:
        assert REASSOC not in plan.options


def test_loops_inside_chosen_blocks_do_not_count():
    rep = analyze(dot_rows)
    args = (np.zeros((4, 4)), F, F)
    assert reassociable(rep, args)
    assert not reassociable(rep, args, frozenset({"L2"}))  # s += … is L2's own update
    rep = analyze(element_update)
    assert not reassociable(rep, (np.zeros((4, 4)), F, F), frozenset({"L1", "L2"}))
