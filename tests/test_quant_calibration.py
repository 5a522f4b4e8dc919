"""AWQ-style calibration, MBQ token weights and mixed-precision allocation."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant.calibrate import clip_search


def _layer_with_outlier_channels(rng, out=48, n_in=128, tokens=256):
    w = rng.normal(0, 0.05, (out, n_in))
    X = rng.normal(0, 1, (tokens, n_in))
    X[:, :4] *= 30.0  # a few salient input channels, as in LLM activations
    return w, X


def test_awq_alpha_zero_is_rtn_and_the_minimum_is_kept(rng):
    w, X = _layer_with_outlier_channels(rng)
    res = quant.calibrate_awq(w, X, bits=3, group_size=32, grid=8, clip=False)
    p = np.full(X.shape[0], 1 / X.shape[0])
    rtn = quant.quantize(w, bits=3, group_size=32).dequantize(np.float64)
    assert res.losses[0] == pytest.approx(quant.output_error(rtn, w, X, p), rel=1e-9)
    assert res.alpha == res.alphas[np.argmin(res.losses)]
    got = quant.output_error(res.dequantize(np.float64), w, X, p)
    assert got == pytest.approx(res.losses.min(), rel=1e-5)


def test_awq_beats_rtn_on_salient_channels(rng):
    w, X = _layer_with_outlier_channels(rng)
    Xt = rng.normal(0, 1, X.shape)  # held-out tokens, same statistics
    Xt[:, :4] *= 30.0
    p = np.full(Xt.shape[0], 1 / Xt.shape[0])
    rtn = quant.quantize(w, bits=3, group_size=32).dequantize(np.float64)
    awq = quant.calibrate_awq(w, X, bits=3, group_size=32, grid=10)
    assert awq.alpha > 0
    assert quant.output_error(awq.dequantize(np.float64), w, Xt, p) < \
        0.8 * quant.output_error(rtn, w, Xt, p)


def test_clip_search_never_worse_than_rtn_per_group(rng):
    w, X = _layer_with_outlier_channels(rng)
    p = np.full(X.shape[0], 1 / X.shape[0])
    qc = clip_search(w, X, p, bits=2, group_size=32, symmetric=False,
                     ratios=np.linspace(1, 0.5, 6))
    rtn = quant.quantize(w, bits=2, group_size=32)
    assert quant.output_error(qc.dequantize(np.float64), w, X, p) <= \
        quant.output_error(rtn.dequantize(np.float64), w, X, p) * (1 + 1e-9)


def test_scaled_matrix_matvec_uses_the_fused_kernel(rng):
    w, X = _layer_with_outlier_channels(rng, out=16, n_in=64, tokens=64)
    res = quant.calibrate_awq(w, X, bits=4, group_size=32, grid=4)
    x = X[0].astype(np.float32)
    expect = res.dequantize(np.float64) @ x
    for device in ("numpy", "numba"):
        np.testing.assert_allclose(res.matvec(x, device=device), expect, rtol=1e-4,
                                   atol=1e-4 * np.abs(expect).max())
    assert res.bits_per_weight == pytest.approx(res.qw.bits_per_weight + 16 / 16)


def test_mbq_weights_balance_groups_by_sensitivity():
    labels = np.array([0] * 90 + [1] * 10)
    p = quant.mbq_token_weights(labels, [1.0, 3.0])
    assert p.sum() == pytest.approx(1.0)
    assert p[labels == 1].sum() == pytest.approx(0.75)  # 3 / (1 + 3), whatever the counts
    np.testing.assert_allclose(p[labels == 0], p[0])


def test_mbq_weighting_changes_what_calibration_fits(rng):
    """Group 1 uses other salient channels than group 0; weighting it moves the fit."""
    w = rng.normal(0, 0.05, (32, 64))
    X0 = rng.normal(0, 1, (200, 64))
    X0[:, :4] *= 20
    X1 = rng.normal(0, 1, (20, 64))
    X1[:, 32:36] *= 20
    X = np.concatenate([X0, X1])
    labels = np.array([0] * 200 + [1] * 20)
    p1 = np.full(20, 1 / 20)

    def err1(res):
        return quant.output_error(res.dequantize(np.float64), w, X1, p1)

    plain = quant.calibrate_awq(w, X, bits=3, group_size=32, grid=10)
    mbq = quant.calibrate_awq(w, X, bits=3, group_size=32, grid=10,
                              token_weights=quant.mbq_token_weights(labels, [1.0, 1.0]))
    assert err1(mbq) < err1(plain)


def test_calibration_bad_input(rng):
    w = rng.normal(0, 1, (8, 64))
    with pytest.raises(hl.InvalidInputError, match=r"X must be a float array of shape"):
        quant.calibrate_awq(w, np.ones((4, 63)))
    with pytest.raises(hl.InvalidInputError, match="X must be finite"):
        quant.calibrate_awq(w, np.full((4, 64), np.nan))
    with pytest.raises(hl.InvalidInputError, match="token_weights must be 4"):
        quant.calibrate_awq(w, np.ones((4, 64)), token_weights=[1, 1, -1, 1])
    with pytest.raises(hl.InvalidInputError, match="grid must be an int"):
        quant.calibrate_awq(w, np.ones((4, 64)), grid=0)
    with pytest.raises(hl.InvalidInputError, match="labels must be"):
        quant.mbq_token_weights([0, 2], [1.0, 1.0])
    with pytest.raises(hl.InvalidInputError, match="sensitivity must be"):
        quant.mbq_token_weights([0, 1], [1.0, -1.0])


# --- mixed precision --------------------------------------------------------------------


def _layers(rng):
    return [rng.normal(0, s, (64, 256)) for s in (1.0, 0.5, 0.2, 0.1)]


def test_allocate_bits_meets_target_and_beats_uniform(rng):
    layers = _layers(rng)
    X = [rng.normal(0, 1, (32, 256)) * np.linspace(0.1, 3, 256) for _ in layers]
    plan = quant.allocate_bits(layers, 3.45, importance=X, candidates=(2, 3, 4, 8))
    assert plan.average_bits <= 3.45
    assert len(plan.matrices) == 4 and all(m.bits == b for m, b in
                                           zip(plan.matrices, plan.bits, strict=True))
    uniform3 = plan.errors[:, plan.candidates.index(3)].sum()  # all 3-bit: 3.25 bits
    assert plan.error < uniform3
    assert plan.layer_bits(0)[0] >= plan.layer_bits(3)[0]  # larger weights, more bits


def test_allocate_bits_follows_importance(rng):
    layers = [rng.normal(0, 1, (32, 128)) for _ in range(2)]
    a = quant.allocate_bits(layers, 3.75, importance=[100.0, 1.0], candidates=(3, 4))
    b = quant.allocate_bits(layers, 3.75, importance=[1.0, 100.0], candidates=(3, 4))
    assert a.bits == [4, 3] and b.bits == [3, 4]


def test_allocate_bits_row_blocks(rng):
    w = rng.normal(0, 1, (64, 128))
    w[:16] *= 10  # the first block matters most
    plan = quant.allocate_bits([w], 3.5, candidates=(3, 4), block_rows=16)
    assert len(plan.units) == 4 and plan.bits[0] == 4
    assert plan.dequantize(0).shape == (64, 128)
    assert plan.average_bits <= 3.5


def test_allocate_bits_bad_input(rng):
    layers = _layers(rng)
    with pytest.raises(hl.InvalidInputError, match="target_bits must allow"):
        quant.allocate_bits(layers, 2.0)
    with pytest.raises(hl.InvalidInputError, match="candidates must be a non-empty subset"):
        quant.allocate_bits(layers, 4.0, candidates=(5,))
    with pytest.raises(hl.InvalidInputError, match="one entry per layer"):
        quant.allocate_bits(layers, 4.0, importance=[1.0])
    with pytest.raises(hl.InvalidInputError, match=r"importance\[0\] must be"):
        quant.allocate_bits(layers, 4.0, importance=[np.ones(3), None, None, None])


def test_allocate_bits_relative_errors_are_scale_free(rng):
    w = rng.normal(0, 1, (32, 128))  # × 64: float16 scales scale exactly, same codes
    plan = quant.allocate_bits([w, 64 * w], 4.0, candidates=(3, 4), relative=True)
    np.testing.assert_allclose(plan.errors[0], plan.errors[1], rtol=1e-6)
    absolute = quant.allocate_bits([w, 64 * w], 3.75, candidates=(3, 4))
    assert absolute.bits == [3, 4]  # absolute errors: the big layer wins the bits
