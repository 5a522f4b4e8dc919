"""Loops around an inner loop that ends early or may not run, and loops over nested
``enumerate``/``zip`` heads.

- a ``break`` refuses only the ``for`` it leaves: each iteration of the loops around it still
  runs whole, so they may run in parallel; a temporary written in such an inner loop covers
  no whole range (it is not privatized on that ground);
- an inner loop's variable read after that loop is carried from an earlier iteration when the
  inner loop may run no iteration (``range(i % 3)``), and private when it provably runs;
- ``for i, (a, b) in enumerate(zip(x, y))`` and ``zip(enumerate(x, s), y)`` are range loops,
  and a range bounded by ``min(len(x), len(y))`` (no affine upper bound) still starts at 0;
- ``reversed(range(a, b))`` (step 1 or -1) is a range with the opposite step, ``reversed(x)``
  reads ``x`` from its end.
"""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload

from .offload_corpus.heldout_probe5 import first_negative_col as first_negative

QUICK = dict(budget=4, progress=False, reference="njit")


def stale_inner_index(x, out):
    j = -1
    for i in range(x.shape[0]):
        for j in range(i % 3):  # runs no iteration when i % 3 == 0
            x[i] += j
        out[i] = j


def inner_index_of_a_triangle(x, out):
    for i in range(x.shape[0]):
        for j in range(i + 1):  # always runs: j is bound in the row
            x[i] += j
        out[i] = j


def inner_index_of_a_fixed_span(x, out):
    for i in range(x.shape[0]):
        for j in range(3):
            x[i] += j
        out[i] = j


def inner_index_over_another_size(x, m, out):
    j = -1
    for i in range(x.shape[0]):
        for j in range(m):  # m may be 0
            x[i] += j
        out[i] = j


def inner_index_of_a_size_changed_inside(x, out):
    n = x.shape[0]
    j = -1
    for i in range(n):
        n = i % 2  # the inner range(n) is not the range(n) L1 started with
        for j in range(n):
            x[i] += j
        out[i] = j


def break_with_a_temporary(A, out):
    m, n = A.shape
    tmp = np.zeros(n)
    for i in range(m):
        for j in range(n):
            tmp[j] = A[i, j]
            if tmp[j] < 0.0:
                break  # later elements of tmp keep an earlier row's values
        s = 0.0
        for j in range(n):
            s += tmp[j]
        out[i] = s


def blend_enumerate_zip(x, y, t, out):
    for i, (a, b) in enumerate(zip(x, y)):  # noqa: B905
        out[i] = (1.0 - t) * a + t * b


def product_zip_enumerate(x, y, out):
    for (i, a), b in zip(enumerate(x, 3), y):  # noqa: B905
        out[i - 3] = a * b


def triple_nested_zip(x, y, z, out):
    for a, (b, c) in zip(x, zip(y, z)):  # noqa: B905
        out[0] += a * b * c


def running_enumerate_zip(x, y, out):
    for i, (a, b) in enumerate(zip(x, y)):  # noqa: B905
        if i > 0:
            out[i] = out[i - 1] + a * b
        else:
            out[i] = a * b


def unpacks_rows(P, out):
    k = 0
    for a, b in P:
        out[k] = a * b
        k += 1


def copy_min_length(x, y, out):
    for i in range(min(len(x), len(y))):
        out[i] = x[i] + y[i]


def ramp_backwards(x, out):
    n = len(x)
    for i in reversed(range(n)):
        out[i] = x[n - 1 - i] * (i + 1)


def solve_backwards(d, e, b, x):
    n = d.shape[0]
    x[n - 1] = b[n - 1] / d[n - 1]
    for i in reversed(range(n - 1)):
        x[i] = (b[i] - e[i] * x[i + 1]) / d[i]


def count_up_reversed(x, out):
    for i in reversed(range(len(x) - 1, 0, -1)):  # 1, 2, …, n - 1
        out[i] = out[i - 1] + x[i]


def every_other_backwards(x, out):
    for i in reversed(range(0, len(x), 2)):  # step 2: left as written
        out[i] = x[i]


def last_first(x, out):
    for i, v in enumerate(reversed(x)):
        out[i] = v


def _run(fn, args, loops):
    """(plain result, variant result) of ``fn`` on copies of ``args``."""
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    fn(*want)
    offload.transform(offload.analyze(fn), loops).compile()(*got)
    return want, got


def test_a_break_leaves_the_row_loop_parallel_and_exact():
    report = offload.analyze(first_negative)
    assert report.loop("L2").verdict == "unsupported" and "break" in report.loop("L2").why
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    A = np.random.default_rng(0).standard_normal((61, 40)) + 1.8
    want, got = _run(first_negative, (A, np.zeros(61, dtype=np.int64)), ["L1"])
    np.testing.assert_array_equal(got[1], want[1])
    assert (want[1] == -1).any() and (want[1] >= 0).any()


def test_an_inner_index_from_a_loop_that_may_not_run_is_carried():
    for fn in (stale_inner_index, inner_index_over_another_size,
               inner_index_of_a_size_changed_inside):
        lp = offload.analyze(fn).loop("L1")
        assert lp.verdict == "sequential", (fn.__name__, lp.why)
        assert "may run no iteration" in lp.why
    x = np.zeros(12)
    plan = offload.search(stale_inner_index, (x, np.zeros(12, dtype=np.int64)), **QUICK)
    want, got = np.zeros(12, dtype=np.int64), np.zeros(12, dtype=np.int64)
    stale_inner_index(np.zeros(12), want)
    plan.compile()(np.zeros(12), got)
    np.testing.assert_array_equal(got, want)
    assert want[6] == 1  # the value of row 5's inner loop


@pytest.mark.parametrize("fn", [inner_index_of_a_triangle, inner_index_of_a_fixed_span])
def test_an_inner_index_from_a_loop_that_always_runs_is_private(fn):
    assert offload.analyze(fn).loop("L1").verdict == "parallel"
    want, got = _run(fn, (np.zeros(30), np.zeros(30, dtype=np.int64)), ["L1"])
    np.testing.assert_array_equal(got[1], want[1])


def test_a_temporary_written_before_a_break_is_not_privatized():
    report = offload.analyze(break_with_a_temporary)
    assert report.loop("L1").verdict == "sequential"
    assert "L1" not in report.transforms.private
    A = np.random.default_rng(1).standard_normal((40, 9)) + 1.0
    plan = offload.search(break_with_a_temporary, (A, np.zeros(40)), **QUICK)
    want, got = np.zeros(40), np.zeros(40)
    break_with_a_temporary(A, want)
    plan.compile()(A, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_nested_enumerate_and_zip_heads_are_range_loops():
    g = np.random.default_rng(2)
    x, y, z = g.random(20), g.random(23), g.random(21)
    assert offload.analyze(blend_enumerate_zip).loop("L1").verdict == "parallel"
    want, got = _run(blend_enumerate_zip, (x, y, 0.3, np.zeros(20)), ["L1"])
    np.testing.assert_array_equal(got[3], want[3])
    # a range loop now; ``i = _hl_i_b + 3`` is an index scalar substituted into ``out[i - 3]``
    # (front/indices.py), so the test sees ``out[_hl_i_b]``
    assert offload.analyze(product_zip_enumerate).loop("L1").verdict == "parallel"
    want, got = _run(product_zip_enumerate, (x, y, np.zeros(20)), ["L1"])
    np.testing.assert_array_equal(got[2], want[2])
    assert offload.analyze(triple_nested_zip).loop("L1").verdict == "sequential"  # out[0]
    want, got = _run(triple_nested_zip, (x, y, z, np.zeros(1)), [])
    np.testing.assert_allclose(got[3], want[3], rtol=1e-12)
    lp = offload.analyze(running_enumerate_zip).loop("L1")
    assert lp.verdict == "sequential" and "out" in lp.why


def test_unpacking_the_rows_of_an_array_is_left_as_written():
    lp = offload.analyze(unpacks_rows).loop("L1")
    assert lp.verdict == "unsupported"
    P = np.random.default_rng(3).random((15, 2))
    plan = offload.search(unpacks_rows, (P, np.zeros(15)), **QUICK)
    got = np.zeros(15)
    plan.compile()(P, got)
    np.testing.assert_array_equal(got, P[:, 0] * P[:, 1])


def test_a_range_bounded_by_a_minimum_of_lengths_starts_at_zero():
    assert offload.analyze(copy_min_length).loop("L1").verdict == "parallel"
    x, y = np.arange(9.0), np.arange(12.0)
    want, got = _run(copy_min_length, (x, y, np.zeros(9)), ["L1"])
    np.testing.assert_array_equal(got[2], want[2])


def test_reversed_ranges_and_sequences_are_range_loops():
    g = np.random.default_rng(5)
    x = g.random(17)
    assert offload.analyze(ramp_backwards).loop("L1").verdict == "parallel"
    want, got = _run(ramp_backwards, (x, np.zeros(17)), ["L1"])
    np.testing.assert_array_equal(got[1], want[1])
    d, e, b = g.random(17) + 1.0, g.random(17), g.random(17)
    assert offload.analyze(solve_backwards).loop("L1").verdict == "sequential"
    want, got = _run(solve_backwards, (d, e, b, np.zeros(17)), [])
    np.testing.assert_array_equal(got[3], want[3])
    assert offload.analyze(count_up_reversed).loop("L1").verdict == "sequential"
    want, got = _run(count_up_reversed, (x, np.zeros(17)), [])
    np.testing.assert_array_equal(got[1], want[1])
    assert offload.analyze(every_other_backwards).loop("L1").verdict == "unsupported"
    plan = offload.search(every_other_backwards, (x, np.zeros(17)), **QUICK)
    out = np.zeros(17)
    plan.compile()(x, out)
    np.testing.assert_array_equal(out[::2], x[::2])
    # v = x[len(x) - 1 - i] may be a view without ranks; with them (the search) a number
    report = offload.analyze(last_first, arrays={"x": 1, "out": 1})
    assert report.loop("L1").verdict == "parallel"
    out = np.zeros(17)
    offload.transform(report, ["L1"]).compile()(x, out)
    np.testing.assert_array_equal(out, x[::-1])


def shared_scratch_max(A, out):
    tmp = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            tmp[j] += A[i, j]  # accumulates over the rows: carried
        out[i] = np.max(tmp)


def fresh_scratch_max(A, out):
    for i in range(A.shape[0]):
        tmp = np.empty(A.shape[1])  # a new array each row, written before it is read
        for j in range(A.shape[1]):
            tmp[j] = 2.0 * A[i, j]
        out[i] = np.max(tmp) - np.min(tmp)


def test_a_whole_read_of_an_array_allocated_in_the_iteration_is_private():
    assert offload.analyze(fresh_scratch_max).loop("L1").verdict == "parallel"
    lp = offload.analyze(shared_scratch_max).loop("L1")
    assert lp.verdict == "sequential" and "tmp" in lp.why
    A = np.random.default_rng(7).random((23, 6))
    want, got = _run(fresh_scratch_max, (A, np.zeros(23)), ["L1"])
    np.testing.assert_array_equal(got[1], want[1])
