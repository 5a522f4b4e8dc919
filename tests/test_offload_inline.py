"""Helpers that write their arguments, inlined at their call statements (issue 17,
front/inline.py): a row loop calling ``_scale_row(A[i])`` is judged on what the helper does to
``A[i]``; a helper's recurrence stays serial; the rewritten function computes what the
original does (arguments evaluated once, parameters rebound locally, keyword arguments and
defaults, returned values); calls that cannot be inlined as the same program are left alone."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.front.inline import inline_helpers

from .test_offload_indices import _rewritten

pytest.importorskip("numba")

SCALE = 3.0  # a module constant a helper reads


def _scale_to_unit_sum(row):
    """Divides ``row`` by its sum, in place."""
    s = np.sum(row)
    for j in range(row.shape[0]):
        row[j] = row[j] / s


def normalize_rows(A):
    for i in range(A.shape[0]):
        _scale_to_unit_sum(A[i])


def _add_row_above(A, i):
    for j in range(A.shape[1]):
        A[i, j] += A[i - 1, j]


def prefix_rows(A):
    """Row i += row i - 1 (already updated): a recurrence over i inside the helper."""
    for i in range(1, A.shape[0]):
        _add_row_above(A, i)


def _axpy_into(y, x, i, a=2.0):
    for j in range(x.shape[1]):
        y[i, j] += a * x[i, j]


def axpy_rows_keywords(X, Y, b):
    for i in range(X.shape[0]):
        _axpy_into(Y, X, a=b, i=i)
        _axpy_into(Y, X, i)


def _store_and_return(out, i, v):
    out[i] = v * SCALE
    return out[i] + 1.0


def returned_value(x, out, acc):
    for i in range(x.shape[0]):
        acc[i] = _store_and_return(out, i, x[i])


def _rebinds(out, i, v):
    v = v * 2.0  # a parameter rebound: the caller's v stays as it was
    out[i] = v


def rebound_parameter(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        _rebinds(out, i, v)
        out[i] += v


def _outer_helper(row, w):
    _scale_by(row, w)


def _scale_by(row, w):
    for j in range(row.shape[0]):
        row[j] = row[j] * w


def nested_helpers(A, w):
    for i in range(A.shape[0]):
        _outer_helper(A[i], w[i])


def _early_return(row):
    if row[0] < 0.0:
        return
    row[0] = 1.0


def early_return_helper(A):
    for i in range(A.shape[0]):
        _early_return(A[i])


def _reads_scale(row):
    for j in range(row.shape[0]):
        row[j] = row[j] * SCALE


def caller_shadows_a_global(A):
    SCALE = 0.5  # the helper's SCALE is the module's, not this local
    for i in range(A.shape[0]):
        _reads_scale(A[i])
    A[0, 0] += SCALE


def _pure_norm(row):
    return np.sqrt(np.sum(row * row))


def _unit_clip(v):
    return min(max(v, 0.0), 1.0)


def pure_helpers(A, out, y):
    for i in range(A.shape[0]):
        out[i] = _pure_norm(A[i])
        y[i] = _unit_clip(out[i] - 1.0)


CASES = {  # name: (fn, arguments maker of (rng, n), loops the inlining makes parallel)
    "normalize_rows": (normalize_rows, lambda g, n: (g.random((n, n + 2)) + 0.1,), ("L1",)),
    "axpy_rows_keywords": (axpy_rows_keywords,
                           lambda g, n: (g.random((n, 3)), g.random((n, 3)), 0.5), ("L1",)),
    "returned_value": (returned_value,
                       lambda g, n: (g.random(n), np.zeros(n), np.zeros(n)), ("L1",)),
    "rebound_parameter": (rebound_parameter, lambda g, n: (g.random(n), np.zeros(n)), ("L1",)),
    "nested_helpers": (nested_helpers, lambda g, n: (g.random((n, 4)), g.random(n)), ("L1",)),
}
SIZES = (0, 1, 2, 7)


def _same_run(fn, other, make, sizes=SIZES) -> None:
    for n in sizes:
        want = make(np.random.default_rng(n), n)
        got = make(np.random.default_rng(n), n)
        fn(*want)
        other(*got)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"n={n}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_inlined_helpers_make_the_loop_parallel(name):
    fn, make, loops = CASES[name]
    params = inspect.signature(fn).parameters
    ranks = {p: a.ndim for p, a in zip(params, make(np.random.default_rng(0), 3), strict=True)
             if isinstance(a, np.ndarray)}  # as the search reads them
    report = offload.analyze(fn, arrays=ranks)
    for key in loops:
        assert report.loop(key).verdict == "parallel", (key, report.loop(key).reasons)
    _same_run(fn, offload.transform(report, list(loops)).compile(), make)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_rewritten_function_computes_what_the_original_does(name):
    fn, make, _ = CASES[name]
    rewritten, text = _rewritten(fn)
    assert "_hl_" in text  # the helper was inlined
    _same_run(fn, rewritten, make)


def test_a_recurrence_inside_the_helper_stays_serial():
    report = offload.analyze(prefix_rows)
    assert report.loop("L1").verdict == "sequential", report.loop("L1").reasons
    make = lambda g, n: (g.random((n, 3)),)  # noqa: E731
    _same_run(prefix_rows, _rewritten(prefix_rows)[0], make)
    _same_run(prefix_rows, offload.transform(report, []).compile(), make)


def test_the_callers_variable_is_not_rebound_by_the_helper():
    _, text = _rewritten(rebound_parameter)
    assert "_hl_rebinds_v = v" in text  # bound first: the helper's v is its own
    x, out = np.array([1.0, 2.0]), np.zeros(2)
    rebound_parameter(x, out)
    np.testing.assert_array_equal(out, [3.0, 6.0])


def test_keywords_and_defaults_bind_as_python_binds_them():
    _, text = _rewritten(axpy_rows_keywords)
    assert "Y[i, _hl_axpy_into_j] += b * X[i, _hl_axpy_into_j]" in text
    assert "2.0 * X[i, _hl_axpy_into2_j]" in text  # the default, second call renamed apart


@pytest.mark.parametrize("fn", [early_return_helper, caller_shadows_a_global],
                         ids=lambda f: f.__name__)
def test_calls_that_would_change_meaning_are_left_alone(fn):
    """A ``return`` before the end, a module name the caller rebinds locally: the call
    stays (the loop keeps the verdict of an unknown call) and the result is the original's."""
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "unsupported", report.loop("L1").reasons
    _, text = _rewritten(fn)
    assert "_hl_" not in text
    A = np.random.default_rng(1).random((5, 3)) - 0.3
    want, got = A.copy(), A.copy()
    fn(want)
    offload.transform(report, []).compile()(got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_pure_numpy_helper_is_inlined_and_a_scalar_one_stays_a_call():
    """A pure helper of NumPy calls without loops is inlined (its row arguments read in place:
    it writes nothing), so the variant's passes see its temporaries; a scalar one is a
    modelled call (numba compiles it as well inlined or not)."""
    _, text = _rewritten(pure_helpers)
    assert "out[i] = np.sqrt(np.sum(A[i] * A[i]))" in text
    assert "y[i] = _unit_clip(out[i] - 1.0)" in text
    report = offload.analyze(pure_helpers, arrays={"A": 2, "out": 1, "y": 1})
    assert report.loop("L1").verdict == "parallel"
    make = lambda g, n: (g.random((n, 4)) * 2.0, np.zeros(n), np.zeros(n))  # noqa: E731
    _same_run(pure_helpers, offload.transform(report, ["L1"]).compile(), make)


def test_a_helper_reading_another_object_under_the_same_name_is_left_alone():
    """The caller's namespace binds ``SCALE`` to another object than the helper's module:
    inlining would read the wrong one."""
    tree = ast.parse("def f(A):\n    for i in range(A.shape[0]):\n        _reads_scale(A[i])"
                     ).body[0]
    assert isinstance(tree, ast.FunctionDef)
    assert inline_helpers(tree, {"_reads_scale": _reads_scale, "SCALE": 4.0}) == []
    assert inline_helpers(tree, {"_reads_scale": _reads_scale, "SCALE": SCALE}) == [
        "_reads_scale (line 3)"]


def test_inlined_statements_carry_the_call_line():
    report = offload.analyze(normalize_rows)
    assert report.loop("L2").line == report.loop("L1").line + 1  # the call's line


def _fresh_row(n, v):
    return np.full(n, v, dtype=np.float64)


def _into_row(row, v):
    row[:] = np.zeros(row.shape[0], dtype=np.float64) + v


def _zeros_out(row):
    np.multiply(row, 0.0, out=row)


def rows_from_keyword_helpers(A):
    for i in range(A.shape[0]):
        A[i] = _fresh_row(A.shape[1], 1.0 * i)
        _into_row(A[i], A[i, 0] + 1.0)


def row_zeroed_through_out(A):
    for i in range(A.shape[0]):
        _zeros_out(A[i])


def test_helpers_may_pass_keywords_to_numpy_but_never_out():
    """``np.full(n, v, dtype=np.float64)`` in a helper: pure (was an unknown call, and the
    whole function ran in Python); ``np.multiply(row, 0.0, out=row)`` writes: unknown."""
    report = offload.analyze(rows_from_keyword_helpers, arrays={"A": 2})
    assert report.loop("L1").verdict == "parallel", report.loop("L1").reasons
    make = lambda g, n: (g.random((n, 3)),)  # noqa: E731
    _same_run(rows_from_keyword_helpers, offload.transform(report, ["L1"]).compile(), make)
    assert offload.analyze(row_zeroed_through_out).loop("L1").verdict == "unsupported"


def test_arguments_are_bound_in_the_order_python_evaluates_them():
    tree = ast.parse("def f(X, Y):\n    _axpy_into(Y, X, a=g(), i=h())").body[0]
    assert isinstance(tree, ast.FunctionDef)
    assert inline_helpers(tree, {"_axpy_into": _axpy_into}) == ["_axpy_into (line 2)"]
    text = ast.unparse(tree)
    assert text.index("_hl_axpy_into_a = g()") < text.index("_hl_axpy_into_i = h()")
