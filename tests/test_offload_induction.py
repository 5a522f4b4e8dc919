"""Counters in step with a loop replaced by the loop index (:mod:`hetlab.offload.front.induction`):
positive cases parallel and exact (the counter's final value included), negative ones left as
written and sequential."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload

QUICK = dict(budget=4, progress=False, reference="njit")
TOTAL = 0


def row_spread_counter(A, out):
    k = 0
    for row in A:
        out[k] = np.max(row) - np.min(row)
        k += 1
    return k


def two_counters(x, out, idx):
    k = 3
    m = 10
    for i in range(2, x.shape[0]):
        out[k] = x[i]
        k += 2
        idx[i] = k + m
        m = m - 1
    return k, m


def conditional_counter(x, out):
    k = 0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            out[k] = x[i]
            k += 1
    return k


def counter_with_break(x, out):
    k = 0
    for i in range(x.shape[0]):
        if x[i] > 0.9:
            break
        out[k] = x[i]
        k += 1
    return k


def counter_from_a_size(x, out, n0):
    k = n0
    for i in range(x.shape[0]):
        out[k] = x[i]
        k += 1


def float_counter(x, out):
    t = 0.0
    for i in range(x.shape[0]):
        out[i] = t
        t += 1


def counter_stored_twice(x, out):
    k = 0
    for i in range(x.shape[0]):
        out[k] = x[i]
        k += 1
        if x[i] > 0.5:
            k = 0


def counter_bounds_loop(x, out):
    k = 0
    for i in range(k + x.shape[0]):
        out[i] = k
        k += 1


def global_counter(x, out):
    global TOTAL
    TOTAL = 0
    for i in range(x.shape[0]):
        out[i] = TOTAL
        TOTAL += 1


def _fresh(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def test_counters_in_step_become_the_loop_index():
    g = np.random.default_rng(0)
    A = g.random((13, 5))
    report = offload.analyze(row_spread_counter)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    want, got = np.zeros(13), np.zeros(13)
    assert offload.transform(report, ["L1"]).compile()(A, got) == row_spread_counter(A, want)
    np.testing.assert_array_equal(got, want)
    x = g.random(9)
    report = offload.analyze(two_counters)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    args = (x, np.zeros(40), np.zeros(9))
    w, v = _fresh(args), _fresh(args)
    assert offload.transform(report, ["L1"]).compile()(*v) == two_counters(*w)
    for a, b in zip(v, w, strict=True):
        np.testing.assert_array_equal(a, b)
    e = np.zeros((0, 5))  # no iteration: the counter keeps its start
    assert offload.transform(row_spread_counter, ["L1"]).compile()(e, np.zeros(0)) == 0


@pytest.mark.parametrize("fn", [conditional_counter, counter_with_break, counter_from_a_size,
                                float_counter, counter_stored_twice, counter_bounds_loop])
def test_other_counters_are_left_as_written(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict != "parallel", fn.__name__
    assert "+= 1" in report.source.text and ("+= 1" in offload.transform(fn).source)


def test_a_global_counter_is_no_induction_variable():
    assert "TOTAL += 1" in offload.transform(global_counter).source
    assert offload.analyze(global_counter).loop("L1").verdict == "unsupported"


def test_a_plan_of_a_counter_loop_gives_the_plain_results():
    A = np.random.default_rng(1).random((40, 30))
    plan = offload.search(row_spread_counter, (A, np.zeros(40)), **QUICK)
    got = np.zeros(40)
    assert plan.compile()(A, got) == 40
    np.testing.assert_array_equal(got, A.max(axis=1) - A.min(axis=1))
