"""Group-wise formats: packing round trips, documented bit order, RTN bounds, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant.formats import QuantizedMatrix, pack_codes, unpack_codes

FAST = settings(max_examples=30, deadline=None)


@FAST
@given(bits=st.sampled_from([2, 3, 4, 8]), gs=st.sampled_from([32, 64, 128]),
       out=st.integers(1, 5), ng=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_pack_unpack_round_trip_is_exact(bits, gs, out, ng, seed):
    codes = np.random.default_rng(seed).integers(0, 2**bits, (out, ng * gs), dtype=np.uint8)
    packed = pack_codes(codes, bits, gs)
    assert packed.dtype == np.uint32 and packed.shape == (out, ng * gs * bits // 32)
    np.testing.assert_array_equal(unpack_codes(packed, bits, gs), codes)


def test_bit_order_4_and_8_bits_least_significant_first():
    codes = np.tile(np.arange(1, 9, dtype=np.uint8), 4)[None, :]  # 32 codes 1..8 repeated
    assert pack_codes(codes, 4, 32)[0, 0] == 0x87654321
    assert pack_codes(codes, 8, 32)[0, 0] == 0x04030201


def test_bit_order_3_bits_is_a_2_bit_plane_then_a_1_bit_plane():
    codes = (np.arange(32, dtype=np.uint8) % 8)[None, :]  # one group of 32
    words = pack_codes(codes, 3, 32)[0]
    assert words.shape == (3,)  # 32 weights in 3 words
    low = [sum(int(codes[0, 16 * w + j] & 3) << (2 * j) for j in range(16)) for w in range(2)]
    high = sum(int(codes[0, j] >> 2) << j for j in range(32))
    assert [int(v) for v in words] == [*low, high]


def test_groups_are_word_aligned():
    qw = quant.quantize(np.ones((2, 256), np.float32), bits=3, group_size=64)
    assert qw.qweight.shape == (2, 4 * 64 * 3 // 32)  # 6 words per group, none shared


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("symmetric", [False, True])
def test_rtn_error_is_at_most_half_a_step(bits, symmetric, rng):
    w = rng.normal(0, 0.02, (7, 320)).astype(np.float32)
    qw = quant.quantize(w, bits=bits, group_size=64, symmetric=symmetric)
    step = np.repeat(qw.scales.astype(np.float64), 64, axis=1)[:, :320]
    err = np.abs(qw.dequantize(np.float64) - w)
    assert np.all(err <= 0.5 * step * (1 + 1e-6) + 1e-12)
    codes = qw.codes()
    assert codes.max() < 2**bits


def test_dequantize_is_q_minus_z_times_s(rng):
    w = rng.normal(0, 1, (3, 128)).astype(np.float32)
    qw = quant.quantize(w, bits=4, group_size=64)
    q = qw.codes().astype(np.float64).reshape(3, 2, 64)
    expect = (q - qw.zeros.astype(np.float64)[..., None]) * qw.scales.astype(np.float64)[..., None]
    np.testing.assert_array_equal(qw.dequantize(np.float64), expect.reshape(3, 128))
    np.testing.assert_array_equal(qw.dequantize(), expect.reshape(3, 128).astype(np.float32))


def test_bits_per_weight_counts_scales_zeros_and_padding():
    w = np.ones((4, 256), np.float32)
    assert quant.quantize(w, 4, 128).bits_per_weight == 4.25
    assert quant.quantize(w, 4, 128, symmetric=True).bits_per_weight == 4.125
    assert quant.quantize(w, 3, 128).bits_per_weight == 3.25
    assert quant.quantize(w, 8, 32).bits_per_weight == 9.0
    qw = quant.quantize(np.ones((4, 200), np.float32), 4, 128)  # padded to 256
    assert qw.nbytes == 4 * (256 // 8) * 4 + 2 * 4 * 2 * 2
    assert qw.bits_per_weight == pytest.approx(8 * qw.nbytes / (4 * 200))


def test_padding_keeps_shape_and_values(rng):
    w = rng.normal(0, 1, (5, 100)).astype(np.float32)
    qw = quant.quantize(w, bits=8, group_size=64)
    assert qw.shape == (5, 100) and qw.padded_in == 128
    assert qw.dequantize().shape == (5, 100)
    np.testing.assert_allclose(qw.dequantize(), w, atol=0.02)


def test_all_zero_groups_get_scale_zero_and_dequantize_to_zero():
    w = np.zeros((2, 64), np.float32)
    w[1, 32:] = 1.0  # row 1: one zero group and one non-zero group (g=32)
    for sym in (False, True):
        qw = quant.quantize(w, bits=4, group_size=32, symmetric=sym)
        assert qw.scales[0, 0] == 0 and qw.scales[1, 0] == 0 and qw.scales[1, 1] > 0
        np.testing.assert_array_equal(qw.dequantize()[:, :32], 0)


def test_scales_that_underflow_float16_quantize_to_zero():
    qw = quant.quantize(np.full((1, 32), 1e-10, np.float32), bits=4, group_size=32)
    assert qw.scales[0, 0] == 0
    np.testing.assert_array_equal(qw.dequantize(), 0)


def test_from_codes_round_trip(rng):
    qw = quant.quantize(rng.normal(0, 1, (3, 96)).astype(np.float32), 3, 32)
    back = QuantizedMatrix.from_codes(qw.codes(), qw.scales, qw.zeros, 3, 32, 96)
    np.testing.assert_array_equal(back.qweight, qw.qweight)


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 5, 16, 0, "4", 4.0, True])
def test_bad_bits(bits):
    with pytest.raises(hl.InvalidInputError, match=r"quantize: bits must be one of"):
        quant.quantize(np.ones((2, 64), np.float32), bits=bits)


@pytest.mark.parametrize("gs", [0, 16, 48, 100, -32, 64.0, None])
def test_bad_group_size(gs):
    with pytest.raises(hl.InvalidInputError, match=r"group_size must be a positive multiple"):
        quant.quantize(np.ones((2, 64), np.float32), group_size=gs)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_refused_with_location(bad):
    w = np.ones((3, 64), np.float32)
    w[2, 5] = bad
    msg = r"finite; got 1 NaN/inf value\(s\), first at \[2, 5\]"
    with pytest.raises(hl.InvalidInputError, match=msg):
        quant.quantize(w, group_size=32)


@pytest.mark.parametrize("w", [np.ones((2, 64), np.int32), np.ones((2, 64), bool),
                               np.ones((2, 64), np.complex64), [["a"] * 64]])
def test_wrong_dtype_refused(w):
    with pytest.raises(hl.InvalidInputError, match="w must be a float16/float32/float64"):
        quant.quantize(w, group_size=32)


@pytest.mark.parametrize("shape", [(64,), (2, 2, 64), (0, 64), (2, 0)])
def test_wrong_shape_refused(shape):
    with pytest.raises(hl.InvalidInputError, match="non-empty 2-D"):
        quant.quantize(np.ones(shape, np.float32), group_size=32)


def test_float16_overflowing_scales_refused():
    with pytest.raises(hl.InvalidInputError, match="within float16"):
        quant.quantize(np.full((1, 32), 1e8, np.float64), bits=8, group_size=32)


def test_inconsistent_matrix_refused():
    qw = quant.quantize(np.ones((2, 64), np.float32), 4, 32)
    with pytest.raises(hl.InvalidInputError, match="qweight must be a 2-D uint32"):
        QuantizedMatrix(qw.qweight.astype(np.int64), qw.scales, qw.zeros, 4, 32, 64)
    with pytest.raises(hl.InvalidInputError, match="scales must be a float16 array"):
        QuantizedMatrix(qw.qweight, qw.scales.astype(np.float32), qw.zeros, 4, 32, 64)
    with pytest.raises(hl.InvalidInputError, match="in_features must be"):
        QuantizedMatrix(qw.qweight, qw.scales, qw.zeros, 4, 32, 65)
    with pytest.raises(hl.InvalidInputError, match="multiple of 4 words"):
        QuantizedMatrix(qw.qweight[:, :5], qw.scales, qw.zeros, 4, 32, 64)
