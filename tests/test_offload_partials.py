"""prange reductions numba would drop (updates only in a loop nested under an ``if``) run as
per-iteration partials (:mod:`hetlab.offload.analysis.transforms.partials`), and a scalar
recurrence is no function block (:mod:`hetlab.offload.analysis.expand`)."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload


def guarded_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            for j in range(x.shape[0]):
                s += x[j]
    return s


def guarded_max(x):
    s = -1.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            for j in range(x.shape[0]):
                s = max(s, x[j] * x[i])
    return s


def guarded_min_int(k):
    s = 1000
    for i in range(k.shape[0]):
        if k[i] % 2 == 0:
            for j in range(k.shape[0]):
                s = min(s, k[j] + k[i])
    return s


def guarded_product(x):
    p = 1.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            for j in range(2):
                p *= x[j] + 0.5
    return p


def guarded_assign_form(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            for j in range(x.shape[0]):
                s = s - x[j]
    return s


def deep(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if x[j] > 0.5:
                for k in range(2):
                    s += x[k] * x[i]
    return s


def weighted_total(A, w):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += w[i] * A[i, j]
    return s


def with_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.2:
            continue
        if x[i] > 0.5:
            for j in range(x.shape[0]):
                s += x[j]
    return s


def plain_if(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            s += x[i]
    return s


def decay_scan(x, out, decay):
    c = 0.0
    for i in range(x.shape[0]):
        c = decay * c + x[i]
        out[i] = c


X = np.array([0.9, 0.1, 0.7, 0.6, 0.3, 0.95])


@pytest.mark.parametrize("fn, args", [
    (guarded_sum, (X,)), (guarded_max, (X,)), (guarded_product, (X,)),
    (guarded_assign_form, (X,)), (deep, (X,)),
    (weighted_total, (np.arange(12.0).reshape(3, 4), np.array([1.0, 2.0, 3.0]))),
    (guarded_min_int, (np.array([4, 7, 2, 9, 6]),)),
    (guarded_sum, (np.zeros(0),)), (guarded_max, (np.array([0.1, 0.2]),)),
])
def test_outer_loop_in_parallel_equals_the_loops(fn, args):
    rep = offload.analyze(fn)
    assert rep.loop("L1").verdict == "reduction"
    v = offload.transform(rep, ["L1"])
    got = v.compile()(*args)
    assert got == pytest.approx(fn(*args), rel=1e-12)
    if len(args[0]) > 2 and fn is not plain_if:
        assert "around the if holding its loop" in v.source and "_hl_p0" in v.source


def test_min_max_start_from_the_value_before_the_loop():
    src = offload.transform(guarded_max, ["L1"]).source
    assert "_hl_p0s = s" in src and "_hl_p0 = _hl_p0s" in src and "s = max(s, _hl_p0)" in src
    assert offload.transform(guarded_min_int, ["L1"]).compile()(
        np.array([3, 5])) == 1000  # no even element: untouched, still an int
    assert isinstance(offload.transform(guarded_min_int, ["L1"]).compile()(
        np.array([4, 7])), int)


def test_shapes_numba_handles_are_left_alone():
    for fn in (plain_if,):
        src = offload.transform(fn, ["L1"]).source
        assert "_hl_p" not in src
        assert offload.transform(fn, ["L1"]).compile()(X) == pytest.approx(fn(X))


def test_a_continue_is_written_as_if_else():
    """A ``continue`` would skip the partial's combination: the body is written without it,
    the statements after the ``if`` in its ``else`` (the variant was refused)."""
    rep = offload.analyze(with_continue)
    assert rep.loop("L1").verdict == "reduction"
    v = offload.transform(rep, ["L1"])
    body = v.source[v.source.index("def with_continue"):]
    assert "continue\n" not in body and "pass\n" in body and "_hl_p1" not in body
    assert "body written without continue" in v.source
    for x in (X, np.zeros(0), np.array([0.1, 0.1]), np.linspace(0.0, 1.0, 37)):
        assert v.compile()(x) == pytest.approx(with_continue(x), rel=1e-12)
    plan = offload.search(with_continue, (X.copy(),), targets=("numba",), budget=4,
                          reference="njit", progress=False)
    assert plan.compile()(X) == pytest.approx(with_continue(X))


def test_a_recurrence_is_no_block():
    rep = offload.analyze(decay_scan, arrays=["x", "out"])
    assert not rep.blocks, [(b.pattern, b.call) for b in rep.blocks]
    assert rep.loop("L1").verdict == "sequential"
