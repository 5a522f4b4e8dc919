"""gemv_w4a8: int8 activations and integer group dots equal the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant import reference
from hetlab.kernels.quant.spec import TOLERANCE, make_quantized
from tests.conftest import backend_params

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEVICES = backend_params("gemv_w4a8")


def _formats():
    """(bits, group_size, symmetric, out, in, seed): every format, ragged rows."""
    return st.tuples(st.sampled_from([2, 3, 4, 8]), st.sampled_from([32, 64, 128]),
                     st.booleans(), st.integers(1, 40), st.integers(1, 300),
                     st.integers(0, 2**32 - 1))


def _pad(qw, x):
    return np.pad(x, (0, qw.padded_in - qw.in_features))


@pytest.mark.parametrize("device", DEVICES)
@FAST
@given(fmt=_formats())
def test_gemv_w4a8_equals_reference(device, fmt):
    bits, gs, sym, out, n_in, seed = fmt
    rng = np.random.default_rng(seed)
    qw = quant.quantize(rng.normal(0, 0.05, (out, n_in)).astype(np.float32), bits=bits,
                        group_size=gs, symmetric=sym)
    x = rng.standard_normal(n_in).astype(np.float32)
    got = hl.gemv_w4a8(qw, x, device=device)
    assert got.dtype == np.float32 and got.shape == (out,)
    expected = reference.gemv_w4a8(qw, _pad(qw, x).astype(np.float32))
    assert hl.gemv_w4a8.spec.error(got, expected) <= TOLERANCE
    # the reference is the float64 product of dequantized weights and dequantized activations
    xq, sx = reference.quantize_activations(x)
    np.testing.assert_allclose(expected, qw.dequantize(np.float64) @ (xq * np.float64(sx)),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@FAST
@given(fmt=_formats())
def test_integer_path_is_bit_exact(device, fmt):
    """Unit scales and integer activations with max |x| = 127 make every float step exact,
    so any decoding or integer-dot mistake shows as an inexact output."""
    bits, gs, sym, out, n_in, seed = fmt
    rng = np.random.default_rng(seed)
    ng = -(-n_in // gs)
    codes = rng.integers(0, 2**bits, (out, ng * gs))
    zeros = None if sym else rng.integers(0, 2**bits, (out, ng)).astype(np.float16)
    qw = quant.QuantizedMatrix.from_codes(codes, np.ones((out, ng), np.float16), zeros, bits,
                                          gs, n_in)
    x = rng.integers(-127, 128, n_in).astype(np.float32)
    x[rng.integers(n_in)] = 127.0
    xq, sx = reference.quantize_activations(x)
    assert sx == 1.0 and np.array_equal(xq, x.astype(np.int8))
    d = reference.w4a8_group_dots(qw, _pad(qw, xq))
    z = qw.zero_points().astype(np.int64)
    naive = ((codes.reshape(out, ng, gs) - z[:, :, None]) * _pad(qw, xq).reshape(ng, gs)
             ).sum(axis=2)
    np.testing.assert_array_equal(d, naive)
    exact = (qw.dequantize(np.float64) @ x).astype(np.float32)
    np.testing.assert_array_equal(hl.gemv_w4a8(qw, x, device=device), exact)


def test_quantize_activations():
    x = np.array([0.5, -1.27, 0.0, 1.0e-4, 1.27], np.float32)
    xq, sx = reference.quantize_activations(x)
    assert xq.dtype == np.int8 and sx == np.float32(1.27 / 127)
    assert xq.tolist() == [50, -127, 0, 0, 127]
    assert np.abs(xq * np.float64(sx) - x).max() <= sx / 2 + 1e-9
    zq, zs = reference.quantize_activations(np.zeros(4, np.float32))
    assert zs == 0 and not zq.any()


@pytest.mark.parametrize("device", DEVICES)
def test_zero_activations_give_zero(device):
    qw = make_quantized(16, 128, np.random.default_rng(0))
    y = hl.gemv_w4a8(qw, np.zeros(128, np.float32), device=device)
    assert y.shape == (16,) and not y.any()


@pytest.mark.parametrize("device", DEVICES)
def test_a8_error_against_a16_is_about_one_percent(device):
    """Documented accuracy: int8 activations cost ~1% of max |y| against gemv_q (A16)."""
    rng = np.random.default_rng(3)
    qw = make_quantized(256, 4096, rng)
    x = rng.standard_normal(4096).astype(np.float32)
    err = hl.gemv_w4a8.spec.error(hl.gemv_w4a8(qw, x, device=device), hl.gemv_q(qw, x))
    assert 1e-4 < err < 2e-2


def test_bad_input():
    qw = make_quantized(4, 64, np.random.default_rng(0), group_size=32)
    with pytest.raises(hl.InvalidInputError, match="gemv_w4a8: x must have shape"):
        hl.gemv_w4a8(qw, np.ones(63, np.float32))
    with pytest.raises(hl.InvalidInputError, match="gemv_w4a8: x must be finite"):
        hl.gemv_w4a8(qw, np.full(64, np.nan, np.float32))
    with pytest.raises(hl.InvalidInputError, match="gemv_w4a8: x must be a float16"):
        hl.gemv_w4a8(qw, np.ones(64, np.int8))
    with pytest.raises(hl.InvalidInputError, match="gemv_w4a8: qw must be a QuantizedMatrix"):
        hl.gemv_w4a8(np.ones((4, 64), np.float32), np.ones(64, np.float32))
    big = quant.quantize(np.ones((1, 65568), np.float32), bits=2, group_size=65568)
    with pytest.raises(hl.InvalidInputError, match="group_size must be at most 65536"):
        hl.gemv_w4a8(big, np.ones(65568, np.float32))
