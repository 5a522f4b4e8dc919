"""NumPy's NaN rule in generated numba code, and array methods in loop bodies.

- numba 0.68's ``parallel=True`` turns ``np.max``/``np.min`` (and ``.max()``/``.min()``) into
  reductions that skip NaN, and its ``np.median`` may skip one: generated variants call
  ``hetlab.offload.runtime.nanexact`` instead, which returns what NumPy returns;
- ``A[i].max()``, ``row.sum()``, ``x.astype(...)``: array methods that return new storage or
  a number are read accesses of their receiver, not unknown calls (a loop calling them was
  "unsupported"); one with ``out=`` still writes in place and is refused; so are the builtins
  ``sum`` and ``divmod``.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numpy import amax as top  # a NumPy function imported under another name

from hetlab import offload
from hetlab.offload.analysis.transforms.nanexact import NAN_NAMES

QUICK = dict(budget=4, progress=False, reference="njit")


def row_spread(A, out):
    for i in range(A.shape[0]):
        out[i] = np.max(A[i]) - np.amin(A[i])


def row_spread_methods(A, out):
    for i in range(A.shape[0]):
        row = A[i]
        out[i] = row.max() - row.min()


def row_peak_over_median(A, out):
    for i in range(A.shape[0]):
        out[i] = top(A[i]) - np.median(A[i])


def column_max_axis(A, out):
    for i in range(A.shape[0]):
        out[i] = np.max(A[i], initial=-1.0)


def methods_in_a_row(A, out):
    for i in range(A.shape[0]):
        out[i] = A[i].astype(np.float32).sum() + A[i].dot(A[i]) + A[i].copy().argmax() \
            + A[i].mean() * A[i].std()


def method_of_the_row_before(A):
    for i in range(1, A.shape[0]):
        A[i, 0] = A[i - 1].sum()


def method_through_a_view_of_the_row_before(A):
    for i in range(1, A.shape[0]):
        row = A[i - 1]
        A[i, 0] = row.max()


def prefix_max_method(x):
    for i in range(1, x.shape[0]):
        x[i] = x[:i].max() + 1.0


def method_of_the_written_array(x, y):
    for i in range(x.shape[0]):
        x[i] = y.sum() + x.mean()


def builtin_sum_and_divmod(A, q, r):
    for i in range(A.shape[0]):
        q[i], r[i] = divmod(sum(A[i]), 0.75)


def method_with_out(A, out):
    for i in range(A.shape[0]):
        A[i].clip(0.0, 1.0, out=A[i])
        out[i] = A[i].sum()


def _with_nans(rows: int = 24, cols: int = 9, seed: int = 0) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((rows, cols))
    A[1, 0] = A[3, cols - 1] = A[5, 4] = np.nan  # first, last and middle of a row
    A[7, :] = np.nan  # a row of NaN only
    return A


# -- the runtime functions ------------------------------------------------------------------
def _import_runtime():
    from hetlab.offload.runtime import nanexact
    return nanexact


@pytest.mark.parametrize("seed", range(6))
def test_the_runtime_extrema_and_median_follow_numpy_on_nan(seed):
    nx = _import_runtime()

    @numba.njit(parallel=True)
    def calls(x):  # pragma: no cover - compiled
        return (nx.nan_max(x), nx.nan_min(x), nx.nan_max(x[::2]), nx.nan_min(x.T),
                nx.nan_median(x), nx.nan_max(2.5))

    rng = np.random.default_rng(seed)
    for _ in range(40):
        x = rng.standard_normal((int(rng.integers(1, 5)), int(rng.integers(1, 6))))
        if rng.random() < 0.6:
            x.flat[int(rng.integers(0, x.size))] = np.nan
        if rng.random() < 0.15:
            x[...] = np.nan
        want = (np.max(x), np.min(x), np.max(x[::2]), np.min(x.T), np.median(x), 2.5)
        for got, exp in zip(calls(x), want, strict=True):
            assert np.array_equal(got, exp, equal_nan=True), (x, got, exp)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float32, np.bool_])
def test_the_runtime_extrema_of_other_dtypes(dtype):
    nx = _import_runtime()

    @numba.njit
    def calls(x):  # pragma: no cover - compiled
        return nx.nan_max(x), nx.nan_min(x)

    x = np.random.default_rng(1).integers(0, 9, (3, 5)).astype(dtype)
    assert calls(x) == (np.max(x), np.min(x))
    assert calls(np.asfortranarray(x)[:, 1:]) == (np.max(x[:, 1:]), np.min(x[:, 1:]))


def test_the_runtime_extrema_refuse_an_empty_array_as_numpy_does():
    nx = _import_runtime()
    with pytest.raises(ValueError, match="zero-size array"):
        numba.njit(lambda x: nx.nan_max(x))(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="zero-size array"):
        np.max(np.zeros((0, 3)))


def test_numba_parallel_max_skips_nan_which_the_pass_exists_for():
    """Evidence for the pass (numba 0.68.1). Should numba follow NumPy one day, this fails:
    the pass is then harmless but may be dropped."""
    @numba.njit(parallel=True)
    def par_max(x):  # pragma: no cover - compiled
        return np.max(x)

    x = np.arange(10.0)
    x[4] = np.nan
    assert par_max(x) == 9.0 and np.isnan(np.max(x)), numba.__version__


# -- the rewrite ----------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [row_spread, row_spread_methods, row_peak_over_median])
def test_parallel_variants_call_the_nan_exact_forms_and_match_python(fn):
    report = offload.analyze(fn)
    assert [lp.id for lp in report.parallelizable] == ["L1"]
    v = offload.transform(report, ["L1"])
    assert "np.max(" not in v.source and "np.amin(" not in v.source and ".max()" not in v.source
    assert "NaN rule kept" in v.source and "nanexact import" in v.source
    A = _with_nans()
    want, got = np.zeros(A.shape[0]), np.zeros(A.shape[0])
    with np.errstate(invalid="ignore"):
        fn(A, want)
    v.compile()(A, got)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isnan(got[[1, 3, 5, 7]]).all() and not np.isnan(np.delete(got, [1, 3, 5, 7])).any()


def test_serial_variants_keep_numbas_own_extrema_and_exact_median():
    serial = offload.transform(offload.analyze(row_peak_over_median), [])
    assert "top(A[i])" in serial.source  # numba's serial np.amax follows NumPy
    assert f"{NAN_NAMES['median']}(A[i])" in serial.source
    A = _with_nans()
    want, got = np.zeros(A.shape[0]), np.zeros(A.shape[0])
    with np.errstate(invalid="ignore"):
        row_peak_over_median(A, want)
    serial.compile()(A, got)
    assert np.array_equal(got, want, equal_nan=True)


def test_a_keyword_form_is_left_to_numba():
    v = offload.transform(offload.analyze(column_max_axis), ["L1"])
    assert "np.max(A[" in v.source and "initial=-1.0)" in v.source
    assert "nanexact" not in v.source


def test_a_search_on_nan_free_data_gives_a_plan_exact_on_nan_data():
    A = np.random.default_rng(2).standard_normal((400, 300))
    plan = offload.search(row_spread, (A, np.zeros(400)), **QUICK)
    B = _with_nans(400, 300, seed=3)
    want, got = np.zeros(400), np.zeros(400)
    row_spread(B, want)
    plan.compile()(B, got)
    assert np.array_equal(got, want, equal_nan=True)


# -- array methods in loop bodies -----------------------------------------------------------
def test_pure_array_methods_are_reads_of_their_receiver():
    for fn in (row_spread_methods, methods_in_a_row):
        report = offload.analyze(fn)
        assert [lp.id for lp in report.parallelizable] == ["L1"], str(report)
    A = np.random.default_rng(4).standard_normal((30, 7))
    want, got = np.zeros(30), np.zeros(30)
    methods_in_a_row(A, want)
    offload.transform(offload.analyze(methods_in_a_row), ["L1"]).compile()(A, got)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # the float32 sum may round otherwise


@pytest.mark.parametrize("fn", [method_of_the_row_before, method_through_a_view_of_the_row_before,
                                prefix_max_method, method_of_the_written_array])
def test_a_method_reading_what_another_iteration_writes_keeps_the_loop_serial(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "sequential", str(report)


def test_a_method_with_out_is_a_hidden_write():
    report = offload.analyze(method_with_out)
    assert report.loop("L1").verdict == "unsupported"
    assert "out=" in report.loop("L1").why


def test_builtin_sum_and_divmod_are_pure_calls():
    report = offload.analyze(builtin_sum_and_divmod)
    assert report.loop("L1").verdict == "parallel", str(report)
    A = np.random.default_rng(5).standard_normal((20, 6))
    want, got = (np.zeros(20), np.zeros(20)), (np.zeros(20), np.zeros(20))
    builtin_sum_and_divmod(A, *want)
    offload.transform(report, ["L1"]).compile()(A, *got)
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], atol=1e-12)
