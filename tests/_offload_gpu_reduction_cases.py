"""Cases run with NUMBA_ENABLE_CUDASIM=1 by tests/test_offload_gpu_reductions.py (a subprocess:
the simulator must be chosen before numba is imported). Not collected on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetlab import offload
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify
from hetlab.offload.targets.cuda import gpu_loops


def _check(fn, args, loops, transfers="reduced"):
    w = copy_args(args)
    orig = fn.source.fn if hasattr(fn, "source") else fn
    want = outputs_of(orig(*w), w)
    v = offload.transform(fn, loops, target="cuda", transfers=transfers)
    w = copy_args(args)
    ok, err = verify(outputs_of(v.compile()(*w), w), want)
    assert ok, (loops, err, v.source)
    return v


@pytest.mark.parametrize("name", ["dot", "array_max", "histogram", "covariance", "matvec",
                                  "himeno", "row_norms", "nbody_forces", "matmul"])
def test_every_gpu_loop_alone_and_all_together(name):
    ex = EXAMPLES[name]
    rep = offload.analyze(ex.fn)
    loops = gpu_loops(rep)
    assert any(rep.loop(k).verdict != "parallel" for k in loops)  # a reduction or an update
    args = ex.make_args(7)
    _check(rep, args, loops)
    for k in loops:
        for mode in ("reduced", "naive"):
            _check(rep, args, [k], mode)


def col_sums(A, out):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[j] += A[i, j]


def row_min(A, out):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] = min(out[i], A[i, j])


def smallest(x):
    m = x[0]
    for i in range(x.shape[0]):
        m = min(m, x[i])
    return m


def int_hist(v, h):
    for i in range(v.shape[0]):
        h[v[i] % 5] -= 2


def hist_and_sum(x, h):
    s = 0.0
    for i in range(x.shape[0]):
        h[int(x[i] * 4)] += 1
        s += x[i]
    return s


def test_array_updates_on_a_2d_grid_and_min_max_forms():
    v = _check(hist_and_sum, (np.random.default_rng(3).random(40), np.zeros(4)), ["L1"])
    assert "_acc_s += x[i]" in v.source and "cuda.atomic.add(h, int(x[i] * 4), 1)" in v.source
    rng = np.random.default_rng(0)
    A = rng.random((9, 7))
    v = _check(col_sums, (A, np.zeros(7)), ["L1", "L2"])  # i carries out[j]: atomics
    assert "cuda.grid(2)" in v.source and "cuda.atomic.add(out, j, A[i, j])" in v.source
    v = _check(row_min, (A, np.ones(9)), ["L2"])
    assert "cuda.atomic.min(out, i, A[i, j])" in v.source
    v = _check(smallest, (rng.random(50) - 0.5,), ["L1"])
    assert "_acc_m = min(_acc_m, x[i])" in v.source and "_r_m = _rt.scalar_to_device(m)" in v.source
    v = _check(int_hist, (rng.integers(0, 100, 60), np.zeros(5, dtype=np.int64)), ["L1"])
    assert "cuda.atomic.add(h, v[i] % 5, -2)" in v.source


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 40), bins=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_histogram_and_dot_on_generated_sizes(n, bins, seed):
    rng = np.random.default_rng(seed)
    _check(EXAMPLES["histogram"].fn, (rng.random(n), np.zeros(bins)), ["L1"])
    _check(EXAMPLES["dot"].fn, (rng.random(n), rng.random(n)), ["L1"])
    _check(smallest, (rng.random(n),), ["L1"])


def test_reduction_scalar_transfers_are_counted_once_per_launch():
    ex = EXAMPLES["dot"]
    v = _check(ex.fn, ex.make_args(30), ["L1"])
    # x, y in; the accumulator in and out (8 bytes each)
    assert v.transfers.copies_in == 3 and v.transfers.copies_out == 1
    assert v.transfers.bytes == 2 * 30 * 8 + 16


def mm_then_scale(A, B, C, d):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]
    for i in range(C.shape[0]):
        d[i] = 2.0 * C[i, 0]


def test_block_and_kernel_share_one_transfer_plan():
    """A matmul block (NumPy standing in for CuPy: the simulator has no cuBLAS) followed by a
    kernel reading its result: C stays on the "device" between them."""
    rng = np.random.default_rng(1)
    args = (rng.random((6, 5)), rng.random((5, 4)), np.zeros((6, 4)), np.zeros(6))
    rep = offload.analyze(mm_then_scale)
    assert [b.pattern for b in rep.blocks] == ["matmul"]
    w = copy_args(args)
    want = outputs_of(mm_then_scale(*w), w)
    v = offload.transform(rep, ["L4"], target="cuda", blocks=["B1"])
    w = copy_args(args)
    assert verify(outputs_of(v.compile()(*w), w), want)[0]
    assert "] += _d_A @ " in v.source and "@cuda.jit" in v.source
    assert v.transfers.copies_in == 4 and v.transfers.copies_out == 2  # A B C d in; C d out
