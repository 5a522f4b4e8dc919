"""Attention and decode attention: every CPU backend against the float64 reference on
generated cases (edge sizes, causal, cross-attention, float32/float64), bad input, and the
unified-max softmax's fallback forced by adversarial scores."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import decode_attention_info
from hetlab.kernels.attention.numba import OVERFLOW_MARGIN
from hetlab.kernels.attention.reference import attention as ref_attention

TOL = hl.attention.spec.tolerance


def _naive(q, k, v, causal):
    """Dense softmax written out in float64, independent of the chunked reference."""
    s = np.einsum("hid,hjd->hij", q.astype(float), k.astype(float)) / np.sqrt(q.shape[2])
    if causal:
        n_q, n_k = q.shape[1], k.shape[1]
        s[:, np.triu(np.ones((n_q, n_k), bool), k=n_k - n_q + 1)] = -np.inf
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hij,hjd->hid", p / p.sum(-1, keepdims=True), v.astype(float))


SHAPES = [  # heads, n_q, n_k, d, d_v, causal
    (1, 1, 1, 1, 1, False), (1, 1, 1, 1, 1, True), (2, 1, 37, 8, 5, True),
    (3, 2, 2, 1, 3, True), (2, 65, 65, 16, 16, True), (2, 70, 130, 32, 8, False),
    (1, 300, 300, 64, 64, True), (4, 129, 1, 256, 2, False),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flash_equals_reference(shape, dtype):
    h, n_q, n_k, d, dv, causal = shape
    rng = np.random.default_rng(sum(shape))
    q, k = (rng.standard_normal((h, n, d)).astype(dtype) for n in (n_q, n_k))
    v = rng.standard_normal((h, n_k, dv)).astype(dtype)
    ref = hl.attention(q, k, v, causal=causal)
    assert ref.dtype == dtype and ref.shape == (h, n_q, dv)
    assert np.abs(ref - _naive(q, k, v, causal)).max() < (1e-6 if dtype == np.float32 else 1e-12)
    got = hl.attention(q, k, v, causal=causal, device="numba")
    assert got.dtype == dtype
    err, ok = hl.attention.spec.verified(got, ref)
    assert ok and err < (TOL if dtype == np.float32 else 1e-12), err


def test_reference_never_builds_the_full_score_matrix_at_once():
    from hetlab.kernels.attention import reference

    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, reference.CHUNK * 2 + 3, 4))
    assert np.allclose(ref_attention(q, q, q, True), _naive(q, q, q, True))


@pytest.mark.parametrize("softmax", ["synchronized", "unified-max"])
@pytest.mark.parametrize("n,parts", [(1, 0), (5, 3), (100, 7), (4097, 0), (64, 64), (10, 500)])
def test_decode_equals_reference(softmax, n, parts):
    rng = np.random.default_rng(n)
    q1 = rng.standard_normal((3, 16), dtype=np.float32)
    k, v = (rng.standard_normal((3, n, 16), dtype=np.float32) for _ in range(2))
    ref = hl.decode_attention(q1, k, v)
    assert np.allclose(ref, _naive(q1[:, None], k, v, False)[:, 0], atol=1e-6)
    got = hl.decode_attention(q1, k, v, softmax=softmax, parts=parts, device="numba")
    err, ok = hl.decode_attention.spec.verified(got, ref)
    assert ok, err


def test_unified_max_without_fallback_on_ordinary_scores():
    rng = np.random.default_rng(1)
    q1 = rng.standard_normal((8, 64), dtype=np.float32)
    k, v = (rng.standard_normal((8, 8192, 64), dtype=np.float32) for _ in range(2))
    o, info = decode_attention_info(q1, k, v, softmax="unified-max", parts=16)
    assert info.recomputed_total == 0 and info.phi.shape == (8,)
    assert hl.decode_attention.spec.verified(o, hl.decode_attention(q1, k, v))[1]


def test_adversarial_scores_force_the_fallback_and_stay_exact():
    rng = np.random.default_rng(2)
    h, n, d = 4, 4096, 32
    q1 = rng.standard_normal((h, d), dtype=np.float32)
    k, v = (rng.standard_normal((h, n, d), dtype=np.float32) for _ in range(2))
    # head 1: one key far above every sampled score (overflow side); head 3: a whole part
    # of keys far below φ (underflow side)
    k[1, 1001] = q1[1] * 30.0
    k[3, :256] = -q1[3] * 30.0
    ref = hl.decode_attention(q1, k, v)
    o, info = decode_attention_info(q1, k, v, softmax="unified-max", parts=16)
    assert info.recomputed[1] >= 1 and info.recomputed[3] >= 1
    assert info.recomputed[0] == 0 and info.recomputed[2] == 0
    s = np.float64(q1[1]) @ np.float64(k[1, 1001]) / np.sqrt(d)
    assert s - info.phi[1] > OVERFLOW_MARGIN  # the score that forced it
    assert 0 < info.fallback_rate < 1
    assert hl.decode_attention.spec.verified(o, ref)[1]
    o2, info2 = decode_attention_info(q1, k, v, softmax="synchronized", parts=16)
    assert info2.phi is None and info2.recomputed_total == 0
    assert hl.decode_attention.spec.verified(o2, ref)[1]


BAD = [
    ("head dim", dict(q=np.ones((1, 2, 257)), k=np.ones((1, 2, 257)), v=np.ones((1, 2, 4))),
     "≤ 256"),
    ("causal cross", dict(q=np.ones((1, 2, 4)), k=np.ones((1, 3, 4)), v=np.ones((1, 3, 4)),
                          causal=True), "n_q == n_k"),
    ("heads", dict(q=np.ones((2, 2, 4)), k=np.ones((1, 2, 4)), v=np.ones((1, 2, 4))), "heads"),
    ("nan", dict(q=np.full((1, 2, 4), np.nan), k=np.ones((1, 2, 4)), v=np.ones((1, 2, 4))),
     "finite"),
    ("overflow f32", dict(q=np.full((1, 2, 4), 1e37, np.float32),
                          k=np.full((1, 2, 4), 10, np.float32),
                          v=np.ones((1, 2, 4), np.float32)), "overflow"),
    ("causal int", dict(q=np.ones((1, 2, 4)), k=np.ones((1, 2, 4)), v=np.ones((1, 2, 4)),
                        causal=1), "causal"),
    ("empty", dict(q=np.ones((1, 0, 4)), k=np.ones((1, 2, 4)), v=np.ones((1, 2, 4))), "empty"),
]


@pytest.mark.parametrize("name,kw,match", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_with_the_argument_named(name, kw, match):
    for device in ("numpy", "numba"):
        with pytest.raises(hl.InvalidInputError, match=match):
            hl.attention(**kw, device=device)


def test_decode_bad_input():
    q1, k = np.ones((2, 4)), np.ones((2, 5, 4))
    with pytest.raises(hl.InvalidInputError, match="softmax"):
        hl.decode_attention(q1, k, k, softmax="async")
    with pytest.raises(hl.InvalidInputError, match="parts"):
        hl.decode_attention(q1, k, k, parts=-1)
    with pytest.raises(hl.InvalidInputError, match="k_cache"):
        hl.decode_attention(q1, np.ones((2, 5, 3)), k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_one_non_finite_cache_value_is_found_by_the_one_pass_scan(dtype, bad):
    q1 = np.ones((2, 4), dtype)
    k, v = np.ones((2, 3000, 4), dtype), np.ones((2, 3000, 4), dtype)
    (v if bad == np.inf else k)[1, 2999, 3] = bad
    name = "v_cache" if bad == np.inf else "k_cache"
    with pytest.raises(hl.InvalidInputError, match=f"{name} must be finite"):
        hl.decode_attention(q1, k, v, device="numba")


def test_max_abs_scan():
    from hetlab.kernels.attention._scan import max_abs

    x = np.zeros((3, 70000), np.float32)
    x[2, 69999] = -4.5
    assert max_abs(x) == 4.5 and max_abs(np.zeros(0)) == 0.0
    x[0, 1] = np.nan
    assert np.isnan(max_abs(x))


@pytest.mark.parametrize("causal", [False, True])
def test_float32_flash_exp_over_a_wide_score_range(causal):
    # scores from about −600 to +600: weights from 1 down to underflow (the polynomial exp
    # must flush them to 0, not wrap the exponent bits), masked −inf included when causal
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 200, 16), dtype=np.float32) * 25
    k = rng.standard_normal((2, 200, 16), dtype=np.float32) * 6
    v = rng.standard_normal((2, 200, 16), dtype=np.float32)
    got = hl.attention(q, k, v, causal=causal, device="numba")
    ref = hl.attention(q, k, v, causal=causal)
    err, ok = hl.attention.spec.verified(got, ref)
    assert ok, err  # (float32 scores of magnitude 600 alone carry ~1e-5)


def test_polynomial_exp_row():
    from hetlab.kernels.attention.numba import _exp_row

    x = np.concatenate([np.linspace(-100, 0, 63), [-np.inf]]).astype(np.float32)
    s = x[None, :].copy()
    ebits = np.empty(64, np.int32)
    _exp_row(s, 0, 64, np.float32(0), ebits, ebits.view(np.float32))
    want = np.exp(x.astype(np.float64))
    assert s[0, -1] == 0.0 and np.all(s[0] >= 0)
    big = want > 1e-30
    rel = np.abs(s[0, big] / want[big] - 1)
    assert np.all(rel <= 3e-7 + np.abs(x[big]) * 2.0**-23)  # float32 x·log2(e) rounds
    assert np.all(s[0, ~big] < 1e-30)
