"""Row views bound in a loop body read through their array (``front/views.py``), and accesses
with fewer subscripts than others of the same array (``A[i]`` against ``A[i, j]``) compared on
their leading subscripts (``analysis/deps.py``).
"""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.front.views import substitute_views


def scale_row_view(A, w):
    for i in range(A.shape[0]):
        row = A[i]
        for j in range(A.shape[1]):
            row[j] = row[j] * w[j]


def scale_rows_iterated(A, w):
    for row in A:
        for j in range(A.shape[1]):
            row[j] = row[j] * w[j]


def row_slice_through_view(A, w):
    for i in range(A.shape[0]):
        row = A[i, :]
        row[1:] = row[1:] * w[1:] + np.sum(row)


def whole_row_from_mixed_ranks(A, w):
    for i in range(A.shape[0]):
        A[i, :] = A[i] * w


def row_from_the_row_before(A):
    for i in range(1, A.shape[0]):
        row = A[i]
        prev = A[i - 1]
        for j in range(A.shape[1]):
            row[j] = prev[j] + 1.0


def mixed_ranks_from_the_row_before(A, w):
    for i in range(1, A.shape[0]):
        A[i] = A[i - 1, :] * w


def _rewritten(fn_src: str) -> str:
    tree = ast.parse(fn_src).body[0]
    substitute_views(tree)
    return ast.unparse(tree)


@pytest.mark.parametrize("fn", [scale_row_view, scale_rows_iterated, row_slice_through_view,
                                whole_row_from_mixed_ranks])
def test_row_views_and_mixed_ranks_leave_the_row_loop_parallel_and_exact(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "parallel", str(report)
    rng = np.random.default_rng(0)
    A, w = rng.standard_normal((37, 9)), rng.standard_normal(9)
    want, got = A.copy(), A.copy()
    fn(want, w)
    offload.transform(report, ["L1"]).compile()(got, w)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("fn", [row_from_the_row_before, mixed_ranks_from_the_row_before])
def test_a_view_or_a_shorter_subscript_of_the_row_before_keeps_the_loop_serial(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "sequential", str(report)


@pytest.mark.parametrize("src", [
    # read before its binding: the previous iteration's row
    "def f(A):\n    row = A[0]\n    for i in range(3):\n        A[i, 0] = row[0]\n"
    "        row = A[i]\n",
    # bound twice
    "def f(A):\n    for i in range(3):\n        row = A[i]\n        row = row * 2\n"
    "        A[i, 0] = row[0]\n",
    # the array rebound after the binding
    "def f(A, B):\n    for i in range(3):\n        row = A[i]\n        A = B\n"
    "        row[0] = 1.0\n",
    # the index changes after the binding
    "def f(A):\n    for i in range(3):\n        k = i\n        row = A[k]\n        k = 0\n"
    "        row[0] = 1.0\n",
    # never subscripted: maybe a number, copied at the binding
    "def f(x, out):\n    for i in range(3):\n        v = x[i]\n        x[i] = 0.0\n"
    "        out[i] = v\n",
    # a column or an offset slice
    "def f(A):\n    for j in range(3):\n        col = A[:, j]\n        col[0] = 1.0\n",
    "def f(A):\n    for i in range(3):\n        tail = A[i, 1:]\n        tail[0] = 1.0\n",
    # read after the loop
    "def f(A):\n    for i in range(3):\n        row = A[i]\n        row[0] = 1.0\n"
    "    return row\n",
])
def test_views_that_are_not_plain_rows_of_one_iteration_are_left(src):
    assert _rewritten(src) == ast.unparse(ast.parse(src).body[0])
