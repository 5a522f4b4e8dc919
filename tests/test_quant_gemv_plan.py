"""quant.GemvPlan: the prepared GEMV gives hl.gemv_q's results and refuses what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.errors import InvalidInputError
from hetlab.kernels.quant import numba as qn


def _qw(out, n_in, bits, gs, seed=0):
    rng = np.random.default_rng(seed)
    return quant.quantize(rng.normal(0, 0.05, (out, n_in)).astype(np.float32), bits, gs)


@pytest.mark.parametrize("out, n_in, bits, gs", [(64, 256, 4, 128), (40, 200, 4, 128),
                                                 (33, 256, 3, 128), (16, 512, 8, 64),
                                                 (8, 256, 4, 64)])
def test_equals_gemv_q_on_every_format(out, n_in, bits, gs):
    qw = _qw(out, n_in, bits, gs)
    plan = quant.GemvPlan(qw)
    rng = np.random.default_rng(1)
    for x in (rng.standard_normal(n_in).astype(np.float32),
              rng.standard_normal(n_in),                       # float64: the checked path
              rng.standard_normal(2 * n_in).astype(np.float32)[::2]):  # not contiguous
        np.testing.assert_array_equal(plan(x), hl.gemv_q(qw, x, device="numba"))


@pytest.mark.parametrize("path", qn.w4_paths())
def test_follows_the_w4_path_chosen(path):
    qw = _qw(48, 384, 4, 128, seed=2)
    x = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    qn.use_w4_path(path)
    try:
        np.testing.assert_array_equal(quant.GemvPlan(qw)(x), hl.gemv_q(qw, x, device="numba"))
    finally:
        qn.use_w4_path(None)


def test_out_argument_and_reuse():
    qw = _qw(32, 256, 4, 128)
    plan = quant.GemvPlan(qw)
    x = np.random.default_rng(4).standard_normal(256).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    assert plan(x, out=out) is out
    np.testing.assert_array_equal(out, hl.gemv_q(qw, x, device="numba"))
    with pytest.raises(InvalidInputError, match="out must be"):
        plan(x, out=np.empty(31, np.float32))
    with pytest.raises(InvalidInputError, match="out must be"):
        plan(x, out=np.empty(32, np.float64))


@pytest.mark.parametrize("bad, match", [
    (np.full(256, np.nan, np.float32), "NaN|finite"),
    (np.r_[np.ones(255, np.float32), np.float32(np.inf)], "NaN|finite|inf"),
    (np.ones(255, np.float32), "shape"),
    (np.ones((2, 256), np.float32), "shape"),
    (np.ones(256, np.int32), "dtype|float"),
])
def test_bad_activations_refused(bad, match):
    plan = quant.GemvPlan(_qw(16, 256, 4, 128))
    with pytest.raises(InvalidInputError, match=match):
        plan(bad)


def test_large_finite_values_are_not_mistaken_for_inf():
    """The fast NaN/inf test looks at y[0]; an output that overflows float32 from finite x
    falls back to the full check of x, which accepts finite values."""
    qw = _qw(16, 256, 4, 128)
    x = np.full(256, 3e38, np.float32)
    np.testing.assert_array_equal(quant.GemvPlan(qw)(x), hl.gemv_q(qw, x, device="numba"))


def test_refuses_a_non_matrix():
    with pytest.raises(InvalidInputError, match="QuantizedMatrix"):
        quant.GemvPlan(np.ones((4, 4)))


def test_a_plan_built_under_a_forced_path_follows_the_default_afterwards():
    qw = _qw(48, 384, 4, 128, seed=5)
    x = np.random.default_rng(6).standard_normal(384).astype(np.float32)
    paths = qn.w4_paths()
    qn.use_w4_path(paths[-1])
    try:
        plan = quant.GemvPlan(qw)
        np.testing.assert_array_equal(plan(x), hl.gemv_q(qw, x, device="numba"))
    finally:
        qn.use_w4_path(None)
    np.testing.assert_array_equal(plan(x), hl.gemv_q(qw, x, device="numba"))


def _nonfinite_matrices():
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.05, (40, 512)).astype(np.float32)
    w[3, 128:256] = 0  # an all-zero group: its scale is 0 (0 · inf is NaN, not 0)
    return [quant.quantize(w, 4, 128), quant.quantize(w, 4, 128, symmetric=True),
            quant.quantize(w, 4, 256)]


_MATS = _nonfinite_matrices()


@pytest.mark.parametrize("path", qn.w4_paths())
@settings(max_examples=12, deadline=None)
@given(where=st.lists(st.integers(0, 511), min_size=1, max_size=4),
       value=st.sampled_from([np.nan, np.inf, -np.inf]), spread=st.booleans(),
       mat=st.integers(0, len(_MATS) - 1))
def test_nonfinite_x_makes_every_output_nonfinite(path, where, value, spread, mat):
    """What GemvPlan's one-element NaN/inf check rests on, on every W4 path of this CPU:
    a NaN or ±inf anywhere in x (with outlier-free or outlier blocks around it) reaches
    every output row, whatever the scales (a zero scale included) and zero points."""
    qw = _MATS[mat]
    x = np.random.default_rng(len(where)).standard_normal(512).astype(np.float32)
    if spread:
        x[::97] *= 200  # outlier blocks: the VNNI/AVX2 kernels' float32 side
    x[where] = value
    qn.use_w4_path(path)
    try:
        y = qn.gemv_q(qw, x)
        with pytest.raises(InvalidInputError, match=r"NaN|finite|inf"):
            quant.GemvPlan(qw)(x)
    finally:
        qn.use_w4_path(None)
    assert not np.isfinite(y).any()


# --- hl.gemv_q's own route to the kept W4 call ------------------------------------------------

def _dispatched(qw, x):
    """hl.gemv_q through the dispatch and its checks (what the kept call must equal)."""
    from hetlab.core.dispatch import run
    from hetlab.kernels.quant.spec import GEMV_Q

    return run(GEMV_Q, "numba", False, qw=qw, x=x)


@pytest.mark.parametrize("path", qn.w4_paths())
def test_gemv_q_kept_call_equals_the_dispatch(path):
    from hetlab.kernels.quant.prepared import w4_call

    qw = _qw(40, 512, 4, 128, seed=7)
    x = np.random.default_rng(8).standard_normal(512).astype(np.float32)
    assert w4_call(qw) is not None and w4_call(qw) is w4_call(qw)  # built once, kept
    qn.use_w4_path(path)
    try:
        np.testing.assert_array_equal(hl.gemv_q(qw, x, device="numba"), _dispatched(qw, x))
    finally:
        qn.use_w4_path(None)


@pytest.mark.parametrize("out, n_in, bits, gs", [(33, 256, 3, 128), (16, 512, 8, 64),
                                                 (8, 256, 4, 64), (40, 200, 4, 128)])
def test_gemv_q_other_formats_take_the_dispatch(out, n_in, bits, gs):
    from hetlab.kernels.quant.prepared import w4_call

    qw = _qw(out, n_in, bits, gs)
    assert w4_call(qw) is None  # not a W4 fast format, or padded rows
    x = np.random.default_rng(1).standard_normal(n_in).astype(np.float32)
    np.testing.assert_array_equal(hl.gemv_q(qw, x, device="numba"), _dispatched(qw, x))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_gemv_q_kept_call_still_refuses_nonfinite_x_by_name(value):
    qw = _qw(24, 256, 4, 128, seed=4)
    x = np.random.default_rng(5).standard_normal(256).astype(np.float32)
    hl.gemv_q(qw, x, device="numba")  # the call is kept now
    x[200] = value
    with pytest.raises(InvalidInputError, match=r"^gemv_q: x"):
        hl.gemv_q(qw, x, device="numba")
    with pytest.raises(InvalidInputError, match=r"^gemv_q: x"):
        hl.gemv_q(qw, x[:100], device="numba")  # wrong length: the dispatch's message


def test_gemv_q_kept_call_does_not_keep_the_matrix_alive():
    import gc
    import weakref

    qw = _qw(16, 256, 4, 128, seed=6)
    hl.gemv_q(qw, np.ones(256, np.float32), device="numba")
    ref = weakref.ref(qw)
    del qw
    gc.collect()
    assert ref() is None
