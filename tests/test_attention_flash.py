"""The numba flash attention kernel (hetlab.kernels.attention._flash): BLAS GEMMs per query ×
key tile with an online softmax, against the float64 reference within the spec's tolerance —
sizes that are not multiples of the tiles, fewer rows than a tile, several key tiles, head
dims other than 64, cross-attention, causal prefill and decode, tiny tiles that reach every
branch of the tiling, scores that force rescales and underflow, the polynomial exp2, the BLAS
thread limit, and NaN input refused."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import _flash
from hetlab.kernels.attention.reference import attention as ref_attention

TOL = hl.attention.spec.tolerance  # 1e-4 of max|o_ref| (derivation: attention/spec.py)

CASES = [  # heads, n_q, n_k, d, d_v, causal
    (1, 1, 1, 64, 64, False),  # n < tile
    (2, 37, 37, 64, 64, True),  # n < tile, causal
    (2, 300, 300, 64, 64, True),  # 3 query tiles (last partial), 2 key tiles (last partial)
    (1, 257, 257, 64, 64, False),  # one key past a key tile
    (3, 129, 600, 16, 24, False),  # cross-attention, d ≠ d_v ≠ 64, 3 key tiles
    (2, 1, 700, 100, 7, True),  # decode: one query sees every key
    (1, 520, 520, 256, 256, True),  # largest head dim, diagonal across two key tiles
    (2, 130, 9, 1, 1, False),  # d = 1
]


def _qkv(shape, dtype, scale=1.0):
    h, n_q, n_k, d, dv, _ = shape
    rng = np.random.default_rng(sum(shape[:5]))
    q = (rng.standard_normal((h, n_q, d)) * scale).astype(dtype)
    k = rng.standard_normal((h, n_k, d)).astype(dtype)
    v = rng.standard_normal((h, n_k, dv)).astype(dtype)
    return q, k, v


@pytest.mark.parametrize("shape", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flash_equals_reference(shape, dtype):
    q, k, v = _qkv(shape, dtype)
    causal = shape[5]
    got = hl.attention(q, k, v, causal=causal, device="numba")
    ref = ref_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                        causal)
    assert got.dtype == dtype and got.shape == ref.shape
    err = float(np.abs(got - ref).max() / np.abs(ref).max())
    assert err < (TOL if dtype == np.float32 else 1e-12), err


@pytest.mark.parametrize("bq,bk", [(1, 1), (5, 3), (3, 7), (64, 16), (7, 1000)])
@pytest.mark.parametrize("causal", [False, True])
def test_every_tiling_gives_the_reference(bq, bk, causal):
    # tiny and uneven tiles: rows whose whole key tile lies past their diagonal (bq > bk),
    # one-column tiles, a key tile longer than n
    q, k, v = _qkv((2, 41, 41, 8, 5, causal), np.float32)
    out = np.empty((2, 41, 5), np.float32)
    scale = np.float32(_flash.LOG2E / np.sqrt(8))
    with _flash._blas_controller().limit(limits=1, user_api="blas"):
        _flash.flash(q, k, v, causal, scale, bq, bk, out, True)
    ref = ref_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                        causal)
    assert np.abs(out - ref).max() / np.abs(ref).max() < TOL


@pytest.mark.parametrize("causal", [False, True])
def test_rising_scores_rescale_and_falling_scores_underflow(causal):
    # keys sorted by their score against a shared query direction: with rising scores every
    # key tile raises the running maximum (the accumulator is rescaled each time, by factors
    # down to 2^-100); with falling scores later tiles' weights underflow to exactly 0
    rng = np.random.default_rng(7)
    n, d = 700, 32
    u = rng.standard_normal(d).astype(np.float32)
    u /= np.linalg.norm(u)
    for sign in (1.0, -1.0):
        t = np.float32(sign) * np.linspace(-40, 40, n, dtype=np.float32)
        k = (t[:, None] * u[None, :] + 0.1 * rng.standard_normal((n, d)))[None].astype(
            np.float32)
        q = (u[None, :] * 6 + 0.1 * rng.standard_normal((n, d)))[None].astype(np.float32)
        v = rng.standard_normal((1, n, 16)).astype(np.float32)
        got = hl.attention(q, k, v, causal=causal, device="numba")
        ref = ref_attention(q.astype(float), k.astype(float), v.astype(float), causal)
        assert np.abs(got - ref).max() / np.abs(ref).max() < TOL, sign


def test_polynomial_exp2_error_bound():
    # documented: relative error ≤ 1e-7 for t ≥ −126; t < −126 gives exactly 0
    x = np.linspace(-126, 0, 200_001, dtype=np.float32)
    s = x.copy()
    ebits = np.empty(x.size, np.int32)
    total = _flash._exp2_row(s, x.size, np.float32(0), ebits, ebits.view(np.float32))
    want = np.exp2(x.astype(np.float64))
    assert np.abs(s / want - 1).max() <= 1e-7
    assert abs(total / want.sum() - 1) < 1e-5
    low = np.array([-126.5, -127, -300, -3e38], np.float32)
    _flash._exp2_row(low, 4, np.float32(0), ebits, ebits.view(np.float32))
    assert np.array_equal(low, np.zeros(4, np.float32))
    shifted = np.array([10.0, 9.0, 7.5], np.float32)  # 2^(x − max) with max = 10
    _flash._exp2_row(shifted, 3, np.float32(10), ebits, ebits.view(np.float32))
    np.testing.assert_allclose(shifted, [1.0, 0.5, 2**-2.5], rtol=1e-7)


@pytest.mark.parametrize("n", [1, 5, 16, 17, 256])
def test_float32_max_through_the_bit_patterns(n):
    rng = np.random.default_rng(n)
    for x in (rng.standard_normal(n), -rng.random(n) - 1, rng.random(n) + 1,
              np.r_[np.full(n - 1, -0.0), -1e-30][-n:], np.r_[np.full(n - 1, -3e38), -2e38][-n:]):
        x = x.astype(np.float32)
        got = np.int32(_flash._max_f32_bits(x.view(np.int32), n)).view(np.float32)
        assert got == x.max(), (n, x)


def test_blas_thread_limit_is_restored():
    from threadpoolctl import threadpool_info

    q, k, v = _qkv((1, 200, 200, 64, 64, False), np.float32)
    hl.attention(q, k, v, device="numba")  # loads scipy's BLAS
    before = {i["filepath"]: i["num_threads"] for i in threadpool_info()
              if i["user_api"] == "blas"}
    assert any("scipy" in path for path in before)  # the library numba's np.dot calls
    hl.attention(q, k, v, device="numba")
    after = {i["filepath"]: i["num_threads"] for i in threadpool_info()
             if i["user_api"] == "blas"}
    assert after == before


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_refused(name, bad):
    q, k, v = _qkv((2, 300, 300, 64, 64, False), np.float32)
    arrays = {"q": q, "k": k, "v": v}
    arrays[name][1, 299, 63] = bad
    with pytest.raises(hl.InvalidInputError, match=rf"\b{name}\b.*finite|finite.*\b{name}\b"):
        hl.attention(**arrays, device="numba")
