"""Scalars read after a loop (lastprivate): the numba variant runs every iteration but the
last in parallel with the scalar renamed, then the last as written
(hetlab/offload/analysis/transforms/peel.py). Only a scalar assigned on every path of every
iteration qualifies; a conditional assignment, an early ``continue`` or a value carried from
one iteration to the next keeps the loop sequential."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.scalars import exits_iteration
from hetlab.offload.analysis.transforms.peel import peel


def last_value(x, out):
    last = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0
        last = out[i]
    return last


def last_two_and_sum(x, out):
    s = 0.0
    a = -1.0
    b = 0
    for i in range(x.shape[0]):
        a = x[i] * 2.0
        b = i * 3
        out[i] = a + b
        s += x[i]
    return a, b, s


def reversed_stepped(x, out):
    t = 5.0
    for i in range(x.shape[0] - 1, -1, -2):
        t = x[i] - 1.0
        out[i] = t * t
    return t


def inner_loop_last(A, out):
    n, m = A.shape
    total = 0.0
    for i in range(n):
        v = 0.0
        for j in range(m):
            v = A[i, j] * 0.5
            out[i, j] = v
        total += v  # the inner loop's last value, per row
    return total


def if_else_both_assign(x, out):
    last = 0.0
    for i in range(out.shape[0]):  # out.shape: out is an array (element stores copy values)
        if x[i] > 0.5:
            last = x[i]
        else:
            last = -x[i]
        out[i] = last
    return last


# -- must stay sequential ---------------------------------------------------------------------
def last_hit(x):
    pos = -1
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            pos = i  # only some iterations assign: the last one that did is wanted
    return pos


def skip_then_assign(x, out):
    last = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.2:
            continue
        last = x[i]
        out[i] = last
    return last


def carried_and_read_after(x, out):
    t = 0.0
    for i in range(x.shape[0]):
        out[i] = t
        t = x[i]
    return t


def last_and_dependence(x):
    last = 0.0
    for i in range(1, x.shape[0]):
        x[i] = x[i - 1] + 1.0
        last = x[i]
    return last


def index_after(x, out):
    i = -1
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    return i  # the loop's own index: n - 1 (or -1 when x is empty)


def inner_index_after(A, out):
    n, m = A.shape
    j = -1
    for i in range(n):
        for j in range(m):
            out[i, j] = A[i, j] * 2.0
    return j  # the inner loop's index from the last row whose inner loop ran


# -- must stay sequential ---------------------------------------------------------------------
def inner_index_after_outer(A, out):
    n = A.shape[0]
    j = -1
    for i in range(n):
        for j in range(i):
            out[i, j] = A[i, j] * 2.0
    return j


POSITIVE = {last_value: "L1", last_two_and_sum: "L1", reversed_stepped: "L1",
            inner_loop_last: "L2", if_else_both_assign: "L1", index_after: "L1",
            inner_index_after: "L2"}
NEGATIVE = [last_hit, skip_then_assign, carried_and_read_after, last_and_dependence]


@pytest.mark.parametrize("fn, outer", [(inner_index_after, "L1"),
                                       (inner_index_after_outer, "L1")])
def test_an_inner_index_read_after_the_outer_loop_keeps_it_sequential(fn, outer):
    rep = offload.analyze(fn, arrays={"A", "out"})
    assert rep.loop(outer).verdict == "sequential"
    assert outer not in rep.transforms.lastprivate
    assert any("of an inner loop is read after the loop" in r for r in rep.loop(outer).reasons)


def test_the_index_read_after_a_parallel_loop_is_the_last_one():
    # numba's prange leaves any iteration's index (or none) in ``i`` after the loop: before
    # this check the variant returned 1 instead of 2 for n = 3, nondeterministically
    rep = offload.analyze(index_after, arrays={"x", "out"})
    assert rep.loop("L1").verdict == "sequential"
    assert rep.transforms.lastprivate == {"L1": ["i"]}
    variant = offload.transform(index_after, ["L1"]).compile()
    for n in (0, 1, 3, 100):
        assert variant(np.ones(n), np.zeros(n)) == index_after(np.ones(n), np.zeros(n))


@pytest.mark.parametrize("fn", list(POSITIVE))
def test_a_scalar_read_after_the_loop_is_lastprivate(fn):
    rep = offload.analyze(fn)
    key = POSITIVE[fn]
    assert rep.loop(key).verdict == "sequential"  # to every target but numba
    assert key in rep.transforms.lastprivate
    assert key in rep.transforms.privatizable()
    assert any("last iteration run after the others" in line for line in rep.transforms.lines())


@pytest.mark.parametrize("fn", NEGATIVE)
def test_no_lastprivate_without_an_assignment_on_every_path(fn):
    rep = offload.analyze(fn)
    assert not rep.transforms.lastprivate
    assert not rep.parallelizable


def _args(fn, n, rng):
    if fn in (inner_loop_last, inner_index_after):
        return (rng.random((n, n + 2)), np.zeros((n, n + 2)))
    if fn is last_hit:
        return (rng.random(n),)
    if fn is last_and_dependence:
        return (rng.random(n),)
    return (rng.random(n), np.zeros(n))


@pytest.mark.parametrize("fn", list(POSITIVE))
@pytest.mark.parametrize("n", [0, 1, 2, 5, 64])
def test_the_peeled_variant_gives_the_plain_result(fn, n):
    variant = offload.transform(fn, [POSITIVE[fn]]).compile()
    rng = np.random.default_rng(n)
    args = _args(fn, n, rng)
    got = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    want = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    r_got, r_want = variant(*got), fn(*want)
    np.testing.assert_allclose(np.asarray(r_got, dtype=float), np.asarray(r_want, dtype=float),
                               rtol=1e-12)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_the_source_shows_the_peel_and_the_renamed_scalar():
    src = offload.transform(last_value, ["L1"]).source
    assert "prange(_hl_TL1 - 1)" in src and "_hl_last_L1 = out[i]" in src
    assert "last iteration run after the others" in src
    assert src.count(" last = out[i]") == 1  # only the last iteration writes ``last``


@pytest.mark.parametrize("fn", [last_value, reversed_stepped, last_hit, skip_then_assign])
def test_search_keeps_the_plain_result(fn):
    rng = np.random.default_rng(3)
    args = _args(fn, 4001, rng)
    plan = offload.search(fn, args, targets=("numba",), budget=4, progress=False)
    fresh = _args(fn, 1001, np.random.default_rng(4))
    got = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in fresh)
    want = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in fresh)
    np.testing.assert_allclose(plan.compile()(*got), fn(*want))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("src, exits", [
    ("for i in r:\n    if c:\n        continue\n    t = i", True),
    ("for i in r:\n    for j in r:\n        break\n    t = i", False),
    ("for i in r:\n    while c:\n        continue\n    t = i", False),
    ("for i in r:\n    for j in r:\n        pass\n    else:\n        break\n    t = i", True),
    ("for i in r:\n    def f():\n        return 1\n    t = i", False),
    ("for i in r:\n    if c:\n        return t", True),
    ("for i in r:\n    t = i", False)])
def test_an_iteration_may_end_early(src, exits):
    loop = ast.parse(src).body[0]
    assert exits_iteration(loop.body) is exits


def test_peel_evaluates_the_bounds_once_and_keeps_the_step():
    node = ast.parse("for i in range(a, b, -3):\n    t = x[i]").body[0]
    text = "\n".join(ast.unparse(s) for s in peel(node, ["t"], "L9"))
    assert "_hl_loL9 = a" in text and "_hl_stL9 = -3" in text
    assert "len(range(_hl_loL9, b, _hl_stL9))" in text
    assert "_hl_t_L9 = x[i]" in text
