"""The unsigned-index fixed pass (issue 17, part 2): where it applies, and that values stay."""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap

import numpy as np
import pytest

from hetlab.offload import analyze, transform
from hetlab.offload.analysis.transforms.unsigned import unsigned_indices


def upper_update(A, u, v):
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            A[i, j] += u[i] * v[j]


def band_sum(A, out):
    n, m = A.shape
    for i in range(n):
        for j in range(i, min(i + 3, m)):
            out[i] += A[i, j]


def uses_arith(A, out):  # j - 1 is arithmetic on the index: must stay int64
    n = A.shape[0]
    for i in range(1, n):
        for j in range(i, n):
            out[i, j] = A[i, j - 1]


def read_after(A, out):  # j read after its loop
    n = A.shape[0]
    for i in range(n):
        j = 0
        for j in range(i, n):
            out[i] += A[i, j]
        out[i] += j


def signed_start(A, out, s):  # s may be negative: a[-1] wraps, uint64 would not
    n = A.shape[0]
    for i in range(n):
        for j in range(s, n):
            out[i] += A[i, j]


def constant_start(A, out):  # range(2, n): LLVM proves it already; left alone
    n, m = A.shape
    for i in range(n):
        for j in range(2, m):
            out[i] += A[i, j]


def _rewritten(fn) -> tuple[str, list[str]]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(tree, ast.FunctionDef)
    notes = unsigned_indices(tree)
    return ast.unparse(tree), notes


@pytest.mark.parametrize("fn, changed", [(upper_update, True), (band_sum, True),
                                         (uses_arith, False), (read_after, False),
                                         (signed_start, False), (constant_start, False)])
def test_applies_only_where_values_cannot_change(fn, changed):
    src, notes = _rewritten(fn)
    assert ("_hl_u64(" in src) is changed, src
    assert bool(notes) is changed


def test_empty_and_negative_upper_bound_stay_empty():
    """max(lo, hi) keeps range(i, hi) empty when hi < i, even for a negative hi."""
    src, _ = _rewritten(band_sum)
    assert "_hl_u64(max(i, min(i + 3, m)))" in src


@pytest.mark.parametrize("fn, make", [
    (upper_update, lambda r: (r.random((37, 37)), r.random(37), r.random(37))),
    (band_sum, lambda r: (r.random((23, 2)), np.zeros(23))),
    (band_sum, lambda r: (r.random((23, 41)), np.zeros(23))),
])
def test_variant_equals_the_loop(fn, make):
    args = make(np.random.default_rng(3))
    want = copy.deepcopy(args)
    fn(*want)
    v = transform(analyze(fn), ["L1"])  # the fixed passes run with a parallel loop
    assert "unsigned index" in v.source
    got = copy.deepcopy(args)
    v.compile()(*got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
