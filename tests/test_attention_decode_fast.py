"""Decode attention with its validation folded into the kernel: the spec no longer scans the
cache, the kernel's own pass finds every NaN/inf and out-of-range value and the call raises
what the scan raised; the vectorized pieces (exp, integer peaks) are exact where they must be
and compile to SIMD."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

import hetlab as hl
from hetlab.errors import HetlabError
from hetlab.kernels.attention import numba_decode as nd
from hetlab.kernels.attention import spec as attn_spec
from hetlab.kernels.attention._vexp import exp_shifted

DTYPES = [np.float32, np.float64]


def _case(dtype, h=3, n=1000, d=16, seed=0):
    rng = np.random.default_rng(seed)
    q1 = rng.standard_normal((h, d)).astype(dtype)
    k, v = (rng.standard_normal((h, n, d)).astype(dtype) for _ in range(2))
    return q1, k, v


def test_validation_scans_only_q1(monkeypatch):
    calls = []
    real = attn_spec.max_abs
    monkeypatch.setattr(attn_spec, "max_abs", lambda a: calls.append(a.shape) or real(a))
    q1, k, v = _case(np.float32)
    k[0, 0, 0] = np.nan  # validation defers the cache: no scan, no error here
    kw = hl.decode_attention.spec.validate(q1, k, v, "synchronized", 0)
    assert calls == [q1.shape] and kw["k_cache"] is k
    with pytest.raises(hl.InvalidInputError, match="k_cache must be finite"):
        hl.decode_attention(q1, k, v, device="numba")


def test_a_cast_cache_is_still_checked_at_validation():
    q1, k, v = _case(np.float64)
    v32 = v.astype(np.float32)
    v32[1, 5, 2] = np.nan  # v is cast to float64 (a copy): its scan comes with the cast
    with pytest.raises(hl.InvalidInputError, match="v_cache must be finite"):
        hl.decode_attention.spec.validate(q1, k, v32, "synchronized", 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("softmax", ["synchronized", "unified-max"])
@pytest.mark.parametrize("where", ["k_cache", "v_cache"])
@pytest.mark.parametrize("bad", [np.nan, -np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("pos", [(0, 0, 0), (1, 517, 7), (2, 999, 15)])
def test_every_non_finite_value_is_found_by_the_kernel(dtype, softmax, where, bad, pos):
    q1, k, v = _case(dtype)
    (k if where == "k_cache" else v)[pos] = bad
    for device in ("numpy", "numba"):
        with pytest.raises(hl.InvalidInputError, match=f"{where} must be finite"):
            hl.decode_attention(q1, k, v, softmax=softmax, parts=7, device=device)


def test_negative_nan_bits_are_found():
    q1, k, v = _case(np.float32)
    v.view(np.uint32)[2, 3, 4] = 0xFFC00001  # a NaN with the sign bit set
    with pytest.raises(hl.InvalidInputError, match="v_cache must be finite"):
        hl.decode_attention(q1, k, v, device="numba")


def test_non_finite_value_in_a_recomputed_part_is_found():
    q1, k, v = _case(np.float32, n=4096, d=32, seed=2)
    k[1, 1001] = q1[1] * 30.0  # forces head 1's part to fall back
    k[1, 1002, 3] = np.inf
    with pytest.raises(hl.InvalidInputError, match="k_cache must be finite"):
        hl.decode_attention(q1, k, v, softmax="unified-max", parts=16, device="numba")


@pytest.mark.parametrize("dtype", DTYPES)
def test_range_rules_match_the_scan(dtype):
    q1, k, v = _case(dtype)
    big = float(np.finfo(dtype).max)
    v2 = v.copy()
    v2[2, 400, 1] = -big / 1000 / 2.0**32 * 2  # beyond max|v|·n·2³² ≤ max, negative side
    k2 = k.copy()
    k2[0, 10, 0] = big / 8 / np.abs(q1).max()  # scores could overflow
    for kk, vv, msg in ((k, v2, "too large for sums"), (k2, v, "would overflow")):
        got = []
        for device in ("numpy", "numba"):
            with pytest.raises(hl.InvalidInputError, match=msg) as e:
                hl.decode_attention(q1, kk, vv, device=device)
            got.append(str(e.value))
        assert got[0] == got[1]  # the same message, with the same figures


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_values_within_range_are_accepted(dtype):
    q1, k, v = _case(dtype)
    scale = 1e20 if dtype == np.float32 else 1e250  # max|v|·n·2³² below the max
    v = v * scale
    ref = hl.decode_attention(q1, k, v)
    got = hl.decode_attention(q1, k, v, softmax="unified-max", device="numba")
    assert hl.decode_attention.spec.verified(got, ref)[1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,parts", [(1, 0), (129, 2), (1000, 7), (3000, 0), (5, 50)])
def test_equals_reference(dtype, n, parts):
    q1, k, v = _case(dtype, n=n, seed=n)
    ref = hl.decode_attention(q1, k, v)
    for softmax in ("synchronized", "unified-max"):
        got = hl.decode_attention(q1, k, v, softmax=softmax, parts=parts, device="numba")
        assert got.dtype == dtype
        err, ok = hl.decode_attention.spec.verified(got, ref)
        assert ok, (softmax, err)


@pytest.mark.parametrize("dtype", DTYPES)
def test_peaks_give_max_abs_exactly(dtype):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 999)) * 10.0 ** rng.integers(-30, 30, (2, 999))).astype(dtype)
    signed, unsigned = nd._BITS[x.dtype.itemsize]
    for lo, hi in ((0, 999), (3, 500), (998, 999)):
        ts, tu = nd._peaks(x.view(signed), x.view(unsigned), 1, lo, hi, signed(0), unsigned(0))
        ps = np.array([[[ts, 0]]], signed)
        pu = np.array([[[tu, 0]]], unsigned)
        sign = unsigned(1) << unsigned(8 * x.dtype.itemsize - 1)
        pos = max(int(ps.max()), 0)
        neg = int(pu.max()) - int(sign) if int(pu.max()) >= int(sign) else 0
        top = np.array(max(pos, neg), unsigned).view(dtype)
        assert top == np.abs(x[1, lo:hi]).max()


def test_refuse_reports_a_kernel_bug_for_a_non_finite_result_of_valid_inputs():
    q1, k, v = _case(np.float32)
    ps = np.zeros((3, 2, 2), np.int32)
    pu = np.zeros((3, 2, 2), np.uint32)
    with pytest.raises(HetlabError, match="please report"):
        nd._refuse(q1, k, v, ps, pu, np.full((3, 16), np.nan))
    nd._refuse(q1, k, v, ps, pu, np.zeros((3, 16)))  # finite peaks and output: no error


def test_vectorized_exp_error_bound():
    x = np.linspace(-100.0, 20.0, 100_001).astype(np.float32)
    s = x.copy()
    e = np.empty(x.size, np.int32)
    total = exp_shifted(s, x.size, np.float32(0.0), e, e.view(np.float32))
    want = np.exp(x.astype(np.float64))
    normal = want > np.finfo(np.float32).tiny * 2**23  # a normal float32 result
    rel = np.abs(s[normal] - want[normal]) / want[normal]
    assert (rel <= 3e-7 + np.abs(x[normal]) * 2.0**-23).all()
    assert (s[x < -88.5] == 0).all()
    assert abs(total - want.sum()) / want.sum() < 1e-5


def _packed_ops(asm: str) -> set[str]:
    return set(re.findall(r"\t(v[a-z0-9]+)\s+[^\n]*%[yz]mm", asm))


def test_the_part_loop_compiles_to_simd():
    from hetlab.machine import cpu_isa

    if "avx2" not in cpu_isa():
        pytest.skip("the host has no AVX2/FMA: no packed instructions to look for")
    q1, k, v = _case(np.float32, n=300, d=64)
    h, n, d = k.shape
    bits = (k.view(np.int32).reshape(h, -1), k.view(np.uint32).reshape(h, -1),
            v.view(np.int32).reshape(h, -1), v.view(np.uint32).reshape(h, -1))
    acc = np.zeros(d, np.float32)
    s = np.empty(nd.DECODE_BLOCK, np.float32)
    eb = np.empty(nd.DECODE_BLOCK, np.int32)
    part = numba.njit(fastmath=nd._FM)(nd._part.py_func)  # a fresh compile (no cache)
    part(q1[0], k, v, bits, 0, 0, n, True, 1.0, acc, s, True, eb, np.zeros(2, np.int32),
         np.zeros(2, np.uint32), nd.PREFETCH_ROWS)
    asm = part.inspect_asm(part.signatures[0])
    ops = _packed_ops(asm)
    assert any(o.startswith("vfmadd") and o.endswith("ps") for o in ops), ops  # dot, p·V
    assert {"vpmaxsd", "vpmaxud"} <= ops, ops  # the folded validation
    assert "prefetcht0" in asm  # rows ahead of the K and V streams
