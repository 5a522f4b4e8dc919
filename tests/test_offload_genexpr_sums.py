"""``sum(<generator expression>)`` read as an accumulating loop (``front/genexprs.py``).

numba cannot compile a generator expression (the whole function ran as Python); rewritten as
the loop Python runs, the sum is a reduction the analysis sees and numba compiles, so a
Pythonic matrix product ``C[i][j] = sum(A[i][k] * B[k][j] for k in range(n))`` is a matmul
block and a row loop over ``sum(...)`` is parallel.
"""

from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.front.genexprs import sums_as_loops

QUICK = dict(budget=4, progress=False)


def row_square_sums(A, out):
    for i in range(A.shape[0]):
        out[i] = sum(A[i, k] ** 2 for k in range(A.shape[1]))


def pythonic_matmul(A, B, C):
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            C[i][j] = sum(A[i][k] * B[k][j] for k in range(n))


def filtered_pair_sum(x, y):
    i = 3  # the generator's i does not leak into the function
    total = sum(a * b for a, b in zip(x, y) if a > 0) + sum(  # noqa: B905 (users' style)
        x[i] * x[j] for i in range(len(x)) for j in range(i) if j % 2 == 0)
    return total + i


def energy(x):
    return sum(v * v for v in x)


def rows_with_a_negative(A, flags, full):
    for i in range(A.shape[0]):
        flags[i] = any(A[i, j] < 0.0 for j in range(A.shape[1]))
        full[i] = all(v != 0.0 for v in A[i])


@pytest.mark.parametrize("fn, verdicts", [
    (row_square_sums, {"L1": "parallel"}),
    (pythonic_matmul, {"L1": "parallel", "L2": "parallel"}),
    (energy, {"L1": "reduction"}),
    (rows_with_a_negative, {"L1": "parallel"}),
])
def test_sums_of_generators_are_loops_the_analysis_reads(fn, verdicts):
    report = offload.analyze(fn)
    for key, verdict in verdicts.items():
        assert report.loop(key).verdict == verdict, str(report)


def test_a_pythonic_matmul_is_a_block_and_exact():
    report = offload.analyze(pythonic_matmul)
    assert [b.pattern for b in report.blocks] == ["matmul"]
    rng = np.random.default_rng(0)
    A, B = rng.random((12, 12)), rng.random((12, 12))
    want, got = np.zeros((12, 12)), np.zeros((12, 12))
    pythonic_matmul(A, B, want)
    offload.transform(report, blocks=["B1"]).compile()(A, B, got)
    np.testing.assert_allclose(got, want)


def test_search_compiles_instead_of_running_python_and_keeps_results():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(300), rng.standard_normal(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = offload.search(filtered_pair_sum, (x, y), **QUICK)
    assert not plan.fallback, plan.fallback
    x2, y2 = rng.standard_normal(77), rng.standard_normal(77)
    assert plan.compile()(x2, y2) == pytest.approx(filtered_pair_sum(x2, y2), rel=1e-12)
    A = rng.standard_normal((40, 7))
    plan = offload.search(row_square_sums, (A, np.zeros(40)), **QUICK)
    want, got = np.zeros(40), np.zeros(40)
    row_square_sums(A, want)
    plan.compile()(A, got)
    np.testing.assert_allclose(got, want)


def test_any_and_all_stop_at_the_first_decisive_item_and_match_python():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((30, 5))
    A[3] = np.abs(A[3])
    A[4, 2] = 0.0
    report = offload.analyze(rows_with_a_negative)
    want = (np.zeros(30, dtype=bool), np.zeros(30, dtype=bool))
    got = (np.zeros(30, dtype=bool), np.zeros(30, dtype=bool))
    rows_with_a_negative(A, *want)
    offload.transform(report, ["L1"]).compile()(A, *got)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert not want[0][3] and not want[1][4]


def _rewrite(src: str, namespace: dict | None = None) -> str:
    tree = ast.parse(src).body[0]
    sums_as_loops(tree, namespace or {})
    return ast.unparse(tree)


@pytest.mark.parametrize("src", [
    "def f(x):\n    return sum((v for v in x), 0.5)\n",  # a start value
    "def f(x):\n    sum = len\n    return sum(v for v in x)\n",  # not the builtin
    "def f(x, c):\n    return sum(v for v in x) if c else 0.0\n",  # conditional
    "def f(x, c):\n    return c and sum(v for v in x)\n",  # short-circuit
    "def f(x):\n    while sum(v for v in x) > 0:\n        x = x - 1\n",  # re-evaluated
    "def f(x):\n    return sum(sum(w for w in v) for v in x)\n",  # nested generator
    "def f(x):\n    return sum(v for v in x if (t := v) > 0)\n",  # walrus
    "def f(A):\n    return any(v > 0 for row in A for v in row)\n",  # two clauses: one break
])
def test_sums_that_cannot_move_before_their_statement_are_left(src):
    assert _rewrite(src) == ast.unparse(ast.parse(src).body[0])


def test_a_shadowing_sum_in_the_namespace_is_left():
    src = "def f(x):\n    return sum(v for v in x)\n"
    assert _rewrite(src, {"sum": np.sum}) == ast.unparse(ast.parse(src).body[0])
