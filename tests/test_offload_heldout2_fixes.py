"""Engine fixes found by the second held-out probe (tests/offload_corpus/heldout_probe2.py),
each with a positive and a negative case."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload import GAOptions, MeasureOptions

pytest.importorskip("numba")

QUICK = dict(targets=("numba",), budget=2, progress=False, function_blocks=False,
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))


# -- a stepped prange's trip count keeps a compound bound whole -------------------------------
def even_from_odd(a):
    for i in range(2, a.shape[0] - 1, 2):
        a[i] = 0.5 * (a[i - 1] + a[i + 1])


def stepped_recurrence(a):
    for i in range(2, a.shape[0] - 1, 2):
        a[i] = a[i - 2] + 1.0


def test_stepped_prange_with_a_compound_upper_bound_stays_in_bounds():
    report = offload.analyze(even_from_odd)
    assert report.loop("L1").verdict == "parallel"
    variant = offload.transform(report, ["L1"])
    assert "(2 - (a.shape[0] - 1))" in variant.source
    for n in (7, 8, 40, 41):
        want, got = np.arange(n, dtype=float) ** 2, np.arange(n, dtype=float) ** 2
        even_from_odd(want)
        variant.compile()(got)
        np.testing.assert_array_equal(got, want)


def test_a_stepped_recurrence_is_not_parallel():
    assert not offload.analyze(stepped_recurrence).loop("L1").parallelizable


# -- plan.compile() takes keywords and defaults like the original --------------------------------
def scale_shift(x, out, scale=2.0, shift=0.0):
    for i in range(x.shape[0]):
        out[i] = scale * x[i] + shift


def test_a_plan_binds_keywords_and_defaults():
    plan = offload.search(scale_shift, (np.arange(64.0), np.zeros(64)), **QUICK)
    assert not plan.fallback
    out = np.zeros(64)
    plan.compile()(np.arange(64.0), out, shift=0.5)
    np.testing.assert_array_equal(out, 2.0 * np.arange(64.0) + 0.5)
    plan.compile()(np.arange(64.0), out, 3.0)
    np.testing.assert_array_equal(out, 3.0 * np.arange(64.0))


def test_a_plan_refuses_a_bad_keyword_as_the_original_does():
    plan = offload.search(scale_shift, (np.arange(8.0), np.zeros(8)), **QUICK)
    with pytest.raises(TypeError, match="offset"):
        plan.compile()(np.arange(8.0), np.zeros(8), offset=1.0)


# -- arrays only read may share memory in search --------------------------------------------
def sq_dist(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        d = x[i] - y[i]
        s += d * d
    return s


def add_into(a, b):
    for i in range(a.shape[0]):
        a[i] = a[i] + b[i]


def test_search_accepts_the_same_array_twice_when_nothing_is_written():
    x = np.arange(32.0)
    plan = offload.search(sq_dist, (x, x), **QUICK)
    assert not plan.fallback
    assert plan.compile()(x, x) == 0.0
    assert plan.compile()(x, x[::-1].copy()) == sq_dist(x, x[::-1].copy())


def test_search_still_refuses_an_alias_of_a_written_array():
    a = np.arange(16.0)
    with pytest.raises(InvalidInputError, match="arguments a and b share memory"):
        offload.search(add_into, (a, a), **QUICK)


# -- for loops over enumerate / zip / a sequence are range loops -------------------------------
def squares_enum(x, out):
    for i, v in enumerate(x):
        out[i] = v * v


def dot_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):  # noqa: B905
        s += a * b
    return s


def row_sums_iter(A, out):
    k = 0
    for row in A:
        out[k] = np.sum(row)
        k += 1


def offsets_enum(x, out):
    for i, v in enumerate(x, 1):
        out[i - 1] = v + i


def grows_while_iterated(values):
    total = 0.0
    for v in values:
        total += v
        if v > 1.0 and len(values) < 8:
            values.append(0.5)
    return total


def rebinds_the_sequence(x, out):
    for i, v in enumerate(x):
        out[i] = v
        x = out


def test_enumerate_zip_and_sequence_loops_are_range_loops():
    assert offload.analyze(squares_enum).loop("L1").verdict == "parallel"
    assert offload.analyze(dot_zip).loop("L1").verdict == "reduction"
    assert offload.analyze(offsets_enum).loop("L1").verdict == "parallel"
    assert "range(len(A))" in offload.analyze(row_sums_iter).loop("L1").bounds
    x, y = np.arange(10.0), np.arange(13.0)
    out = np.zeros(10)
    offload.transform(offload.analyze(squares_enum), ["L1"]).compile()(x, out)
    np.testing.assert_array_equal(out, x * x)
    got = offload.transform(offload.analyze(dot_zip), ["L1"]).compile()(x, y)
    assert got == pytest.approx(dot_zip(x, y))  # zip stops at the shorter
    offload.transform(offload.analyze(offsets_enum), ["L1"]).compile()(x, out)
    np.testing.assert_array_equal(out, x + np.arange(1, 11))


def test_sequences_that_change_in_the_loop_are_not_rewritten():
    lp = offload.analyze(grows_while_iterated).loop("L1")
    assert lp.verdict == "unsupported" and "range" in lp.why
    lp = offload.analyze(rebinds_the_sequence).loop("L1")
    assert lp.verdict == "unsupported"
    values = [2.0, 0.1]
    plan = offload.search(grows_while_iterated, (list(values),), **QUICK)
    assert plan.compile()(list(values)) == grows_while_iterated(list(values))


# -- returned scalars keep the plain function's NumPy types ----------------------------------------
def total32(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def count_and_first(x):
    c = 0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            c += 1
    return c, x[0]


def test_a_plan_returns_the_scalar_types_python_returns():
    x = np.linspace(0, 1, 64, dtype=np.float32)
    plan = offload.search(total32, (x,), **QUICK)
    got = plan.compile()(x)
    assert type(got) is type(total32(x)) is np.float32
    assert got == pytest.approx(total32(x), rel=1e-5)
    pair = offload.search(count_and_first, (np.linspace(0, 1, 64),), **QUICK).compile()(
        np.linspace(0, 1, 64))
    assert type(pair[0]) is int and type(pair[1]) is np.float64


def test_other_argument_dtypes_get_numba_s_types():
    plan = offload.search(total32, (np.linspace(0, 1, 64, dtype=np.float32),), **QUICK)
    got = plan.compile()(np.linspace(0, 1, 64))  # float64 data: not the searched dtypes
    assert type(got) is float and got == pytest.approx(32.0)


# -- a pure module-level helper is a call the dependence test models ------------------------------
def _clip01(v):
    return 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)


def _clip_sq(v):
    c = _clip01(v)
    return c * c


_LOG: list[float] = []


def _logged(v):
    _LOG.append(v)
    return v


def _bump(a, i):
    a[i] += 1.0
    return a[i]


def clip_all(x, out):
    for i in range(x.shape[0]):
        out[i] = _clip_sq(x[i])


def log_all(x, out):
    for i in range(x.shape[0]):
        out[i] = _logged(x[i])


def bump_all(x, out):
    for i in range(x.shape[0]):
        out[i] = _bump(x, 0)


def test_pure_helpers_are_modelled_and_compiled():
    report = offload.analyze(clip_all)
    assert report.loop("L1").verdict == "parallel"
    plan = offload.search(clip_all, (np.linspace(-1, 2, 64), np.zeros(64)), **QUICK)
    assert not plan.fallback
    x, out = np.linspace(-1, 2, 50), np.zeros(50)
    offload.transform(report, ["L1"]).compile()(x, out)
    np.testing.assert_array_equal(out, np.clip(x, 0, 1) ** 2)


def test_helpers_that_write_state_stay_unknown_calls():
    """A helper writing global state stays an unknown call; one writing its argument is
    inlined (front/inline.py), and the write it hides — ``x[0]`` in every iteration — keeps
    the loop serial."""
    lp = offload.analyze(log_all).loop("L1")
    assert lp.verdict == "unsupported" and "_logged()" in lp.why
    lp = offload.analyze(bump_all).loop("L1")
    assert lp.verdict == "sequential" and "x[0]" in lp.why, lp.why
    x = np.arange(4.0)
    plan = offload.search(bump_all, (x.copy(), np.zeros(4)), **QUICK)
    want_x, got_x, want, got = x.copy(), x.copy(), np.zeros(4), np.zeros(4)
    bump_all(want_x, want)
    plan.compile()(got_x, got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_x, want_x)
