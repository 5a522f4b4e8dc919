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


# -- subscripts of a prange loop's index (unsigned_subscripts) ----------------------------------
from hetlab.offload.analysis.transforms.unsigned import unsigned_subscripts  # noqa: E402


def stencil_1d(a, b):
    n = a.shape[0]
    for i in range(1, n - 1):
        b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0


def wraps_at_zero(x, out):  # x[i - 1] at i = 0 is x[-1], the last element: must stay int64
    for i in range(x.shape[0]):
        out[i] = x[i] + x[i - 1]


def from_half(x, out):  # start n // 2: i and i + 1 proven, i - 1 not (the start is symbolic)
    n = x.shape[0]
    h = n // 2
    for i in range(h, n - 1):
        out[i] = x[i + 1] - x[i - 1]


def rows_inner_parallel(A, B):  # the prange is the inner j: A[i - 1, j] mixes the two types
    n, m = A.shape
    for i in range(1, n):
        for j in range(1, m):
            B[i, j] = A[i - 1, j] + A[i, j - 1]


def stepped(x, out):  # step 2: left to the unit-step rewrite
    for i in range(1, x.shape[0], 2):
        out[i] = x[i - 1]


def _pranged(fn, loops: dict[int, bool]) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    fors = [n for n in ast.walk(tree) if isinstance(n, ast.For)]
    for k, par in loops.items():
        if par:
            fors[k].iter.func = ast.Name("prange", ast.Load())
    return tree


@pytest.mark.parametrize("fn, loops, want", [
    (stencil_1d, {0: True}, ["_hl_u64(i - 1)", "_hl_u64(i + 1)", "b[_hl_u64(i)]"]),
    (wraps_at_zero, {0: True}, ["x[_hl_u64(i)]", "x[i - 1]"]),
    (from_half, {0: True}, ["x[_hl_u64(i + 1)]", "x[i - 1]", "out[_hl_u64(i)]"]),
    (rows_inner_parallel, {1: True}, ["A[i - 1, _hl_u64(j)]", "A[i, _hl_u64(j - 1)]"]),
    (stepped, {0: True}, ["x[i - 1]", "out[i]"]),
    (rows_inner_parallel, {0: True}, ["A[i - 1, j]"]),  # i's loop is not innermost
    (stencil_1d, {}, ["a[i - 1]"]),  # no prange: LLVM proves range(1, n - 1) itself
])
def test_subscripts_cast_only_where_never_negative(fn, loops, want):
    tree = _pranged(fn, loops)
    notes = unsigned_subscripts(tree)
    text = ast.unparse(tree)
    for piece in want:
        assert piece in text
    assert bool(notes) == ("_hl_u64" in text)


def _args_1d(n, rng):
    return (rng.random(n), rng.random(n))


@pytest.mark.parametrize("fn, loops, make", [
    (stencil_1d, ["L1"], _args_1d), (wraps_at_zero, ["L1"], _args_1d),
    (from_half, ["L1"], _args_1d), (stepped, ["L1"], _args_1d),
    (rows_inner_parallel, ["L2"], lambda n, rng: (rng.random((n, n + 1)),
                                                  rng.random((n, n + 1))))])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 17])
def test_prange_variant_with_unsigned_subscripts_equals_the_loop(fn, loops, make, n):
    rng = np.random.default_rng(n)
    args = make(n, rng)
    want, got = copy.deepcopy(args), copy.deepcopy(args)
    fn(*want)
    transform(fn, loops).compile()(*got)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_variant_source_names_the_pass():
    rep = analyze(stencil_1d)
    assert rep.loop("L1").verdict == "parallel"
    src = transform(stencil_1d, ["L1"]).source
    assert "subscripts of i as unsigned (start 1" in src
    assert "uint64 as _hl_u64" in src
