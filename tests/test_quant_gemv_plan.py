"""quant.GemvPlan: the prepared GEMV gives hl.gemv_q's results and refuses what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

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
    """The fast NaN/inf test sums x; a sum that overflows float32 falls back to the full
    check, which accepts finite values."""
    qw = _qw(16, 256, 4, 128)
    x = np.full(256, 3e38, np.float32)
    np.testing.assert_array_equal(quant.GemvPlan(qw)(x), hl.gemv_q(qw, x, device="numba"))


def test_refuses_a_non_matrix():
    with pytest.raises(InvalidInputError, match="QuantizedMatrix"):
        quant.GemvPlan(np.ones((4, 4)))
