"""Names only swapped among themselves (``u, new = new, u``) stay distinct arrays
(hetlab/offload/analysis/aliases.py, ``_swap_groups``): a time loop's inner sweep is parallel,
the time loop is not, and anything that could make two of them one storage keeps the old,
conservative verdict."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.analysis.aliases import alias_info
from hetlab.offload.front.source import read_function


def jacobi_swap(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u, new = new, u
    return u


def jacobi_swap_local(steps, u0):
    u = u0.copy()
    new = np.empty_like(u)
    new[0] = u[0]
    new[-1] = u[-1]
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u, new = new, u
    return u


def rotate_three(steps, a, b, c):
    n = a.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(n):
            c[i] = a[i] + 0.5 * b[i]
        a, b, c = b, c, a
    return a


def heat_2d_swap(steps, A, B):
    n, m = A.shape
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        A, B = B, A
    return A


def swap_then_alias(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        w = u
        for i in range(1, n - 1):
            new[i] = 0.5 * (w[i - 1] + w[i + 1])
        u, new = new, u
    return u


def swap_of_a_view(steps, u, new):
    new = u[::-1]  # the two names share storage before any swap
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u, new = new, u
    return u


def swap_and_rebind(steps, u, new):
    n = u.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u, new = new, u
        if t == 1:
            new = u  # one storage under both names from here on
    return u


def _verdicts(fn):
    return {lp.id: lp.verdict for lp in offload.analyze(fn).loops}


@pytest.mark.parametrize("fn, parallel", [(jacobi_swap, ["L2"]), (jacobi_swap_local, ["L2"]),
                                          (rotate_three, ["L2"]),
                                          (heat_2d_swap, ["L2", "L3"])])
def test_the_inner_sweep_is_parallel_and_the_time_loop_is_not(fn, parallel):
    v = _verdicts(fn)
    assert v["L1"] == "sequential"
    assert [k for k, x in v.items() if x == "parallel"] == parallel


@pytest.mark.parametrize("fn", [swap_then_alias, swap_of_a_view, swap_and_rebind])
def test_a_possible_shared_storage_keeps_the_sweep_sequential(fn):
    rep = offload.analyze(fn)
    assert rep.loop("L2").verdict == "sequential"
    assert any("share memory" in r for r in rep.loop("L2").reasons)


def test_swapped_names_may_each_hold_every_array_of_the_group():
    info = alias_info(read_function(swap_then_alias).tree, {}, 1)
    assert not info.may_alias("u", "new")
    assert info.may_alias("w", "u") and info.may_alias("w", "new")
    assert info.roots_of("u") == info.roots_of("new") == frozenset({"u", "new"})
    assert {"u", "new"} <= info.written_params()  # the guard keeps both apart from the rest
    assert not alias_info(read_function(swap_of_a_view).tree, {}, 1).distinct


def _args(fn, n, steps, rng):
    if fn is jacobi_swap_local:
        return (steps, rng.random(n))
    if fn is heat_2d_swap:
        return (steps, rng.random((n, n + 3)), rng.random((n, n + 3)))
    if fn is rotate_three:
        return (steps, rng.random(n), rng.random(n), rng.random(n))
    return (steps, rng.random(n), rng.random(n))


@pytest.mark.parametrize("fn", [jacobi_swap, jacobi_swap_local, rotate_three, heat_2d_swap])
@pytest.mark.parametrize("steps", [0, 1, 4, 5])
def test_parallel_sweeps_give_the_plain_result(fn, steps):
    rng = np.random.default_rng(steps)
    loops = [k for k, x in _verdicts(fn).items() if x == "parallel"]
    variant = offload.transform(fn, loops).compile()
    for n in (3, 9):
        args = _args(fn, n, steps, rng)
        got = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        want = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        r_got, r_want = variant(*got), fn(*want)
        np.testing.assert_array_equal(r_got, r_want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


def test_one_array_passed_as_both_swapped_names_is_refused():
    variant = offload.transform(jacobi_swap, ["L2"]).compile()
    x = np.random.default_rng(0).random(16)
    with pytest.raises(hl.InvalidInputError, match="share memory"):
        variant(3, x, x)
    y, z = x.copy(), x.copy()  # run as written when asked to: the same result as Python
    got = offload.transform(jacobi_swap, ["L2"]).compile(on_alias="serial")(3, y, y)
    np.testing.assert_array_equal(got, jacobi_swap(3, z, z))
    np.testing.assert_array_equal(y, z)


# -- the same exchange through a temporary (``tmp = u; u = new; new = tmp``) -----------------
def jacobi_swap_temp(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        tmp = u
        u = new
        new = tmp
    return u


def heat_2d_swap_temp_local(steps, A0):
    A = A0.copy()
    B = A0.copy()
    n, m = A.shape
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        old = A
        A = B
        B = old
    return A


def rotate_three_temp(steps, a, b, c):
    n = a.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(n):
            c[i] = a[i] + 0.5 * b[i]
        keep = a
        a = b
        b = c
        c = keep
    return a


def temp_swap_then_write_through_temp(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        tmp = u
        u = new
        new = tmp
        for i in range(1, n - 1):  # tmp is the array ``new`` names now: i reads i - 1's write
            tmp[i] = 0.5 * (new[i - 1] + u[i])
    return u


def half_temp_swap(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        tmp = u
        u = new
        new = u  # not a swap: both names hold one array from here on
        del tmp
    return u


def temp_swap_not_consecutive(steps, u, new):
    n = u.shape[0]
    for t in range(steps):  # noqa: B007
        tmp = u
        for i in range(1, n - 1):
            new[i] = 0.5 * (u[i - 1] + u[i + 1])
        u = new
        new = tmp
    return u


@pytest.mark.parametrize("fn, parallel", [(jacobi_swap_temp, ["L2"]),
                                          (heat_2d_swap_temp_local, ["L2", "L3"]),
                                          (rotate_three_temp, ["L2"])])
def test_a_swap_through_a_temporary_keeps_the_sweep_parallel(fn, parallel):
    v = _verdicts(fn)
    assert v["L1"] == "sequential"
    assert [k for k, x in v.items() if x == "parallel"] == parallel


def test_the_temporary_may_hold_either_swapped_array():
    info = alias_info(read_function(temp_swap_then_write_through_temp).tree, {}, 1)
    assert not info.may_alias("u", "new")
    assert info.may_alias("tmp", "u") and info.may_alias("tmp", "new")
    v = _verdicts(temp_swap_then_write_through_temp)
    assert v["L3"] == "sequential"  # a true dependence through two names of one array


@pytest.mark.parametrize("fn", [half_temp_swap, temp_swap_not_consecutive])
def test_what_is_not_a_rotation_keeps_the_old_verdict(fn):
    assert not alias_info(read_function(fn).tree, {}, 1).distinct
    assert _verdicts(fn)["L2"] == "sequential"


@pytest.mark.parametrize("fn", [jacobi_swap_temp, heat_2d_swap_temp_local, rotate_three_temp,
                                temp_swap_then_write_through_temp])
@pytest.mark.parametrize("steps", [0, 1, 4])
def test_temporary_swaps_give_the_plain_result(fn, steps):
    rng = np.random.default_rng(steps)
    loops = [k for k, x in _verdicts(fn).items() if x == "parallel"]
    variant = offload.transform(fn, loops).compile()
    for n in (3, 9):
        if fn is heat_2d_swap_temp_local:
            args = (steps, rng.random((n, n + 3)))
        elif fn is rotate_three_temp:
            args = (steps, rng.random(n), rng.random(n), rng.random(n))
        else:
            args = (steps, rng.random(n), rng.random(n))
        got = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        want = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        np.testing.assert_array_equal(variant(*got), fn(*want))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
