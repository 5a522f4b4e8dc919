"""The next iterate allocated afresh and then rebound (``new = np.empty_like(u)`` … ``u = new``):
distinct from ``u`` in the loops between (:func:`hetlab.offload.analysis.aliases._fresh_pairs`);
every other spelling where they may share storage stays sequential."""

from __future__ import annotations

import numpy as np

from hetlab import offload

from .offload_corpus.heldout_probe6 import jacobi1d_new_each_step as jacobi_fresh


def bound_twice(u, steps):
    n = u.shape[0]
    new = u  # new may be u itself in the first sweep
    for _ in range(steps):
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        new = np.empty_like(u)
        u = new
    return u


def rebound_before_the_sweep(u, steps):
    n = u.shape[0]
    for _ in range(steps):
        new = np.empty_like(u)
        u = new
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u = new
    return u


def through_a_third_name(u, steps):
    n = u.shape[0]
    w = u
    for _ in range(steps):
        new = np.zeros_like(u)
        for i in range(1, n - 1):
            new[i] = 0.5 * (w[i - 1] + w[i + 1])
        u = new
        w = u
    return u


def test_a_fresh_next_iterate_is_distinct_from_the_current_one():
    report = offload.analyze(jacobi_fresh)
    assert report.loop("L2").verdict == "parallel", report.loop("L2").why
    assert report.loop("L1").verdict == "sequential"
    x = np.random.default_rng(0).random(50)
    want = jacobi_fresh(x.copy(), 4)
    got = offload.transform(report, ["L2"]).compile()(x.copy(), 4)
    np.testing.assert_array_equal(got, want)


def test_other_rebindings_keep_the_sweep_sequential():
    for fn in (bound_twice, rebound_before_the_sweep):
        lp = offload.analyze(fn).loop("L2")
        assert lp.verdict == "sequential" and "may share memory" in lp.why, fn.__name__
    lp = offload.analyze(through_a_third_name).loop("L2")
    assert lp.verdict == "sequential", lp.why
