"""Counting ``while`` loops read as ``for`` loops over a ``range`` (``front/whiles.py``)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.front.whiles import whiles_as_fors


def doubled_by_hand(x, out):
    i = 0
    while i < x.shape[0]:
        out[i] = x[i] * 2.0
        i += 1


def row_sums_by_hand(A, out):
    n, m = A.shape
    i = 0
    while i < n:
        j = 0
        s = 0.0
        while j < m:
            s += A[i, j]
            j += 1
        out[i] = s
        i += 1


def prefix_by_hand(x):
    i = 1
    while i < len(x):
        x[i] += x[i - 1]
        i += 1


@pytest.mark.parametrize("fn, verdicts", [
    (doubled_by_hand, {"L1": "parallel"}),
    (row_sums_by_hand, {"L1": "parallel", "L2": "reduction"}),
    (prefix_by_hand, {"L1": "sequential"}),
])
def test_counting_whiles_are_range_loops(fn, verdicts):
    report = offload.analyze(fn)
    for key, verdict in verdicts.items():
        assert report.loop(key).verdict == verdict, str(report)


def test_a_counting_while_runs_in_parallel_with_the_same_results():
    A = np.random.default_rng(0).standard_normal((33, 6))
    want, got = np.zeros(33), np.zeros(33)
    row_sums_by_hand(A, want)
    offload.transform(offload.analyze(row_sums_by_hand), ["L1"]).compile()(A, got)
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("test_op, step_op", [("<", "+="), ("<=", "+="), (">", "-="),
                                              (">=", "-=")])
@pytest.mark.parametrize("step", [1, 2, 3])
def test_the_rewrite_visits_the_same_counters_and_leaves_the_same_final_value(
        test_op, step_op, step):
    src = (f"def f(start, bound):\n    seen = []\n    i = START\n"
           f"    while i {test_op} bound:\n        seen.append(i)\n        i {step_op} {step}\n"
           "    return seen, i\n")
    for start in (-3, 0, 2, 7):
        plain_src = src.replace("START", str(start))
        tree = ast.parse(plain_src).body[0]
        assert whiles_as_fors(tree) == 1
        plain: dict = {}
        rewritten: dict = {}
        exec(plain_src, plain)
        exec(ast.unparse(tree), rewritten)
        for bound in range(-5, 10):
            assert rewritten["f"](start, bound) == plain["f"](start, bound), (start, bound)


@pytest.mark.parametrize("body", [
    "    while i < n:\n        if x[i] < 0:\n            break\n        i += 1\n",
    "    while i < n:\n        i += 1\n        if x[i - 1] < 0:\n            continue\n"
    "        x[i - 1] = 0.0\n",  # the increment is not last
    "    while i < n:\n        x[i] = 0.0\n        n -= 1\n        i += 1\n",  # bound changes
    "    while i < n:\n        x[i] = 0.0\n        i += 1\n    else:\n        x[0] = 1.0\n",
    "    while i < n:\n        i = i * 2\n        i += 1\n",  # other stores of i
    "    while i < n / 2:\n        x[i] = 0.0\n        i += 1\n",  # a float bound
    "    while i < n:\n        x[i] = 0.0\n        i -= 1\n",  # the wrong direction
])
def test_whiles_that_are_not_plain_counters_are_left(body):
    src = "def f(x, n):\n    i = 0\n" + body
    tree = ast.parse(src).body[0]
    assert whiles_as_fors(tree) == 0
    assert ast.unparse(tree) == ast.unparse(ast.parse(src).body[0])


def test_a_counter_without_a_constant_start_is_left():
    for init in ("i = n - 1", "i = 0.0", "i = 0\n    i = n"):
        src = f"def f(x, n):\n    {init}\n    while i < n:\n        x[i] = 0.0\n        i += 1\n"
        assert whiles_as_fors(ast.parse(src).body[0]) == 0, init
