"""GPTQ (hetlab.kernels.quant.gptq) against a naive reference, correlated activations, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant.gptq import CLIP_RATIOS


def _correlated(rng, out=32, n_in=128, tokens=512):
    """A layer whose inputs are strongly correlated (mixed latent factors, a few outliers)."""
    w = rng.normal(0, 0.05, (out, n_in))
    mix = rng.normal(size=(16, n_in))

    def tokens_(t):
        X = rng.normal(size=(t, 16)) @ mix + 0.2 * rng.normal(size=(t, n_in))
        X[:, :3] *= 8.0
        return X

    return w, tokens_(tokens), tokens_(tokens)


def _err(qw, w, X):
    p = np.full(X.shape[0], 1.0 / X.shape[0])
    w_eff = qw.dequantize(np.float64) if hasattr(qw, "dequantize") else qw
    return quant.output_error(w_eff, w, X, p)


def _naive_gptq(w, X, bits, group_size, damp, act_order=False):
    """Textbook OBS-form GPTQ: explicit H⁻¹, full update of every later column, H⁻¹ shrunk
    by Gaussian elimination after each column (no Cholesky, no lazy batches)."""
    out, n = w.shape
    H = X.T @ X / X.shape[0]
    H += damp * np.diag(H).mean() * np.eye(n)
    order = np.argsort(-np.diag(H), kind="stable") if act_order else np.arange(n)
    static = quant.quantize(w, bits, group_size)
    W = w[:, order].copy()
    Hinv = np.linalg.inv(H[np.ix_(order, order)])
    codes = np.zeros((out, n), dtype=np.uint8)
    sc, zr = static.scales.astype(np.float64), static.zeros.astype(np.float64)
    for i in range(n):
        g = order[i] // group_size
        if not act_order and i % group_size == 0:
            blk = quant.quantize(W[:, i : i + group_size], bits, group_size)
            sc[:, g], zr[:, g] = blk.scales[:, 0], blk.zeros[:, 0]
        s, z = sc[:, g], zr[:, g]
        q = np.clip(np.rint(W[:, i] / s) + z, 0, 2**bits - 1)
        codes[:, order[i]] = q
        err = (W[:, i] - (q - z) * s) / Hinv[i, i]
        W[:, i + 1 :] -= np.outer(err, Hinv[i, i + 1 :])
        Hinv -= np.outer(Hinv[:, i], Hinv[i, :]) / Hinv[i, i]
    return codes, sc, zr


@pytest.mark.parametrize("act_order", [False, True])
@pytest.mark.parametrize("bits", [3, 4])
def test_gptq_equals_the_naive_reference(rng, bits, act_order):
    w, X, _ = _correlated(rng, out=12, n_in=96, tokens=200)
    qw = quant.gptq(w, X, bits=bits, group_size=32, act_order=act_order)
    codes, sc, zr = _naive_gptq(w, X, bits, 32, 0.01, act_order)
    np.testing.assert_array_equal(qw.codes(), codes)
    np.testing.assert_array_equal(qw.scales.astype(np.float64), sc)
    np.testing.assert_array_equal(qw.zeros.astype(np.float64), zr)


@pytest.mark.parametrize("bits", [3, 4])
def test_gptq_and_clip_beat_rtn_on_correlated_activations(rng, bits):
    w, X, Xt = _correlated(rng)
    rtn = quant.quantize(w, bits, 64)
    plain = quant.gptq(w, X, bits=bits, group_size=64)
    act = quant.gptq(w, X, bits=bits, group_size=64, act_order=True)
    clip = quant.gptq(w, X, bits=bits, group_size=64, act_order=True, clip_ratios=CLIP_RATIOS)
    for q in (plain, act, clip):
        assert _err(q, w, X) < 0.8 * _err(rtn, w, X)    # calibration tokens
        assert _err(q, w, Xt) < 0.9 * _err(rtn, w, Xt)  # held-out tokens, same statistics


def test_clip_ratio_one_is_no_clipping_and_clipping_changes_scales(rng):
    w, X, _ = _correlated(rng, out=16, n_in=64, tokens=128)
    base = quant.gptq(w, X, bits=3, group_size=32)
    same = quant.gptq(w, X, bits=3, group_size=32, clip_ratios=[1.0])
    np.testing.assert_array_equal(base.qweight, same.qweight)
    clipped = quant.gptq(w, X, bits=3, group_size=32, clip_ratios=CLIP_RATIOS)
    assert (clipped.scales < base.scales).any()


def test_refinement_never_increases_the_dampened_error(rng):
    w, X, _ = _correlated(rng, out=16, n_in=64, tokens=256)
    H = X.T @ X / X.shape[0]
    H += 0.01 * np.diag(H).mean() * np.eye(64)

    def objective(qw):
        d = qw.dequantize(np.float64) - w
        return float(np.einsum("rc,cd,rd->", d, H, d))

    first = quant.gptq(w, X, bits=3, group_size=32, act_order=True)
    refined = quant.gptq(w, X, bits=3, group_size=32, act_order=True, refine=3)
    assert objective(refined) < objective(first)
    np.testing.assert_array_equal(refined.scales, first.scales)  # only codes move


def test_result_is_a_valid_matrix_in_the_same_format(rng):
    w, X, _ = _correlated(rng, out=24, n_in=100, tokens=300)  # 100: last group padded
    for symmetric in (False, True):
        qw = quant.gptq(w, X, bits=4, group_size=32, symmetric=symmetric)
        ref = quant.quantize(w, 4, 32, symmetric=symmetric)
        assert qw.shape == (24, 100) and qw.bits_per_weight == ref.bits_per_weight
        assert qw.nbytes == ref.nbytes and qw.symmetric == symmetric
        again = quant.QuantizedMatrix.from_codes(qw.codes(), qw.scales, qw.zeros, 4, 32, 100)
        np.testing.assert_array_equal(again.qweight, qw.qweight)
        assert (qw.codes()[:, 100:] == qw.zero_points()[:, -1:]).all()  # padding stays 0
        x = rng.normal(size=100).astype(np.float32)
        expect = qw.dequantize(np.float64) @ x
        got = hl.gemv_q(qw, x, device="numba")
        np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-4 * np.abs(expect).max())


def test_few_tokens_dead_channels_and_zero_weights(rng):
    w, X, _ = _correlated(rng, out=8, n_in=64, tokens=64)
    few = quant.gptq(w, X[:3], bits=4, group_size=32)  # rank 3 ≪ 64: dampening keeps it PD
    assert np.isfinite(few.dequantize()).all()
    Xd = X.copy()
    Xd[:, 5] = 0.0  # an input channel that never fires
    dead = quant.gptq(w, Xd, bits=4, group_size=32)
    assert np.isfinite(dead.dequantize()).all()
    assert _err(dead, w, Xd) < _err(quant.quantize(w, 4, 32), w, Xd)
    zero = quant.gptq(np.zeros((4, 64)), X, bits=4, group_size=32)
    assert not zero.dequantize().any()


def test_awq_then_gptq(rng):
    w, X, Xt = _correlated(rng)
    res = quant.calibrate_awq(w, X, bits=3, group_size=64, grid=5, quantizer="gptq")
    assert isinstance(res, quant.ScaledQuantizedMatrix) and res.qw.bits == 3
    assert _err(res.dequantize(np.float64), w, Xt) < 0.9 * _err(quant.quantize(w, 3, 64), w, Xt)
    with pytest.raises(hl.InvalidInputError, match="quantizer must be 'rtn' or 'gptq'"):
        quant.calibrate_awq(w, X, quantizer="adaround")


def test_gptq_bad_input(rng):
    w = rng.normal(size=(8, 64))
    X = rng.normal(size=(32, 64))
    cases = [
        (dict(X=np.ones((4, 63))), r"gptq: X must be a float array of shape \(tokens ≥ 1, 64\)"),
        (dict(X=np.ones((0, 64))), r"X must be a float array"),
        (dict(X=np.ones((4, 64), dtype=np.int64)), r"X must be a float array"),
        (dict(X=np.full((4, 64), np.nan)), "gptq: X must be finite"),
        (dict(token_weights=np.zeros(32)), "token_weights must be 32"),
        (dict(damp=0.0), "damp must be a number > 0"),
        (dict(damp=True), "damp must be a number > 0"),
        (dict(damp=float("nan")), "damp must be a number > 0"),
        (dict(clip_ratios=[0.5, 1.5]), r"clip_ratios must be numbers in \(0, 1\]"),
        (dict(refine=-1), "refine must be an int"),
        (dict(bits=5), "bits must be one of"),
        (dict(group_size=48), "group_size must be a positive multiple of 32"),
        (dict(w=np.full((8, 64), np.inf)), "w must be finite"),
    ]
    for kwargs, match in cases:
        args = dict(w=w, X=X) | kwargs
        with pytest.raises(hl.InvalidInputError, match=match):
            quant.gptq(args.pop("w"), args.pop("X"), **args)
    with pytest.raises(hl.InvalidInputError, match="not positive definite with damp=1e-300"):
        quant.gptq(w, X[:2], damp=1e-300)  # rank 2, dampening below rounding: singular
