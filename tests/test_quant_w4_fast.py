"""The W4 fast path of the numba backend (group sizes multiples of 128): the float32 vector
kernel, on AVX512-VNNI machines the fixed-point one and on AMX machines the tile one — each
against the reference."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant import _numba_w4 as w4
from hetlab.kernels.quant import _numba_w4_amx as w4amx
from hetlab.kernels.quant import numba as qn
from hetlab.kernels.quant import reference
from hetlab.kernels.quant._amx import HAS_AMX
from hetlab.kernels.quant._simd import HAS_VNNI, fetch_add
from hetlab.kernels.quant.spec import MAX_CONDITION, TOLERANCE, condition

FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_VNNI = pytest.mark.skipif(not HAS_VNNI, reason="no AVX512-VNNI")
NO_AMX = pytest.mark.skipif(not HAS_AMX, reason="no AMX-INT8 (or Linux refused its tile state)")
KERNELS = [pytest.param(w4.gemv4, id="float32"),
           pytest.param(w4.gemv4_vnni, id="vnni", marks=NO_VNNI),
           pytest.param(w4amx.gemv4_amx, id="amx", marks=NO_AMX)]


def _run(kernel, qw, x, threads=None):
    head, _ = qn._common(qw)
    out = np.empty(qw.out_features, np.float32)
    xp = np.pad(x, (0, qw.padded_in - qw.in_features)).astype(np.float32)
    return kernel(*head, xp, qn._F16, qw.group_size, out, threads or numba.get_num_threads())


def _case(out, n_in, gs, sym, seed):
    rng = np.random.default_rng(seed)
    qw = quant.quantize(rng.normal(0, 0.05, (out, n_in)).astype(np.float32), 4, gs,
                        symmetric=sym)
    return qw, rng.standard_normal(n_in).astype(np.float32)


def _expected(qw, x):
    return reference.gemv_q(qw, np.pad(x, (0, qw.padded_in - qw.in_features)))


@pytest.mark.parametrize("kernel", KERNELS)
@FAST
@given(out=st.integers(1, 70), n_in=st.integers(1, 700), gs=st.sampled_from([128, 256, 512]),
       sym=st.booleans(), seed=st.integers(0, 2**32 - 1), threads=st.sampled_from([1, 2, 5]))
def test_fast_kernels_equal_reference(kernel, out, n_in, gs, sym, seed, threads):
    """Ragged rows, rows not a multiple of the block, 1 row; more workers than blocks."""
    qw, x = _case(out, n_in, gs, sym, seed)
    assume(condition(qw, x) <= MAX_CONDITION)  # the tolerance's domain (see the spec)
    assert hl.gemv_q.spec.error(_run(kernel, qw, x, threads), _expected(qw, x)) <= TOLERANCE


@pytest.mark.parametrize("kernel", KERNELS)
def test_ill_conditioned_output_stays_within_its_terms(kernel):
    """One 232-wide output whose terms cancel 1577-fold (found by hypothesis): outside the
    tolerance's domain, the error is still tiny against the terms, Σ|w·x|."""
    qw, x = _case(1, 232, 128, False, 1)
    assert condition(qw, x) > 10 * MAX_CONDITION
    terms = (np.abs(qw.dequantize(np.float64)[:, :232]) @ np.abs(x.astype(np.float64))).max()
    err = np.abs(_run(kernel, qw, x) - _expected(qw, x)).max()
    assert err <= TOLERANCE / MAX_CONDITION * terms


@pytest.mark.parametrize("kernel", KERNELS)
def test_activation_outliers_and_zero_blocks(kernel):
    """Blocks with outliers (float32 path of the VNNI kernel), an all-zero block, a block
    whose max is 30× its mean (fixed point, near the outlier limit): within the tolerance."""
    qw, x = _case(40, 1024, 128, False, 3)
    x[5] *= 1e3                      # an outlier block
    x[128:256] = 0                   # an all-zero block
    x[300] = 30 * np.abs(x[256:384]).mean() * 128 / 127  # max ≈ 30 × mean: fixed point
    assert hl.gemv_q.spec.error(_run(kernel, qw, x), _expected(qw, x)) <= TOLERANCE


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_flipped_code_is_caught(kernel):
    qw, x = _case(16, 256, 128, True, 5)
    codes = qw.codes()
    codes[9, 200] ^= 8
    bad = quant.QuantizedMatrix.from_codes(codes, qw.scales, qw.zeros, 4, 128, 256)
    assert hl.gemv_q.spec.error(_run(kernel, bad, x), _run(kernel, qw, x)) > 10 * TOLERANCE


GEMM_KERNELS = [pytest.param(w4.gemm4, id="float32"),
                pytest.param(w4.gemm4_vnni, id="vnni", marks=NO_VNNI),
                pytest.param(w4amx.gemm4_amx, id="amx", marks=NO_AMX)]
#: each GEMM kernel's GEMV sibling
GEMV_OF = {w4.gemm4: w4.gemv4, w4.gemm4_vnni: w4.gemv4_vnni, w4amx.gemm4_amx: w4amx.gemv4_amx}


@pytest.mark.parametrize("kernel", GEMM_KERNELS)
@FAST
@given(out=st.integers(1, 40), n_in=st.integers(1, 600), gs=st.sampled_from([128, 256]),
       m=st.sampled_from([1, 2, 3, 5, 17]), sym=st.booleans(), seed=st.integers(0, 2**32 - 1),
       threads=st.sampled_from([1, 2, 5]))
def test_fast_gemm_kernels_equal_reference(kernel, out, n_in, gs, m, sym, seed, threads):
    """Every activation row; rows with an outlier block (float path) beside rows without."""
    qw, _ = _case(out, n_in, gs, sym, seed)
    rng = np.random.default_rng(seed + 1)
    X = np.zeros((m, qw.padded_in), np.float32)
    X[:, :n_in] = rng.standard_normal((m, n_in))
    X[m // 2, rng.integers(n_in)] = 300.0  # an outlier: that block takes the float32 path
    assume(max(condition(qw, X[t]) for t in range(m)) <= MAX_CONDITION)
    got = kernel(*qn._common(qw)[0], X, qn._F16, gs, np.empty((m, out), np.float32), threads)
    assert hl.gemm_q.spec.error(got, reference.gemm_q(qw, X)) <= TOLERANCE
    gemv = GEMV_OF[kernel]
    for t in range(m):  # and each row equals the same family's GEMV of that row
        assert hl.gemm_q.spec.error(got[t], _run(gemv, qw, X[t, :n_in])) <= TOLERANCE


def test_limbs_are_an_exact_split_of_the_fixed_point_value():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(512).astype(np.float32)
    x[:128] *= 1000  # block 0: large but no outliers
    x[200] = 500.0   # block 1: an outlier → float path
    xl = np.empty(3 * 512, np.int8)
    xf = np.empty(4, np.float32)
    ok = np.empty(4, np.bool_)
    w4.prepare_limbs(x, xl, xf, ok)
    assert ok.tolist() == [True, False, True, True]
    for k in (0, 2, 3):
        blk = xl[384 * k: 384 * (k + 1)].astype(np.int64).reshape(3, 2, 64)
        limbs = blk.transpose(0, 2, 1).reshape(3, 128)  # back to activation order
        n = limbs[0] * 16384 + limbs[1] * 128 + limbs[2]
        assert np.abs(limbs[0]).max() <= 127 and np.abs(limbs[1:]).max() <= 64
        m = np.abs(x[128 * k: 128 * (k + 1)]).max()
        assert xf[k] == np.float32(m / np.float32(127 * 16384))
        # |x - N·step| ≤ 0.75 step (rounding of x·u in float32 included)
        assert np.abs(x[128 * k: 128 * (k + 1)] - n * np.float64(xf[k])).max() <= 0.75 * xf[k]


def test_fetch_add_hands_out_every_block_once():
    @numba.njit(parallel=True)
    def take(n, workers):  # pragma: no cover - compiled
        counter = np.zeros(1, np.int64)
        seen = np.zeros(n, np.int64)
        for _ in numba.prange(workers):
            b = fetch_add(counter, 1)
            while b < n:
                seen[b] += 1
                b = fetch_add(counter, 1)
        return seen

    assert (take(1000, 4) == 1).all()
    assert (take(3, 8) == 1).all()


@NO_VNNI
@FAST
@given(out=st.integers(1, 40), n_in=st.integers(1, 700), gs=st.sampled_from([128, 256, 512]),
       sym=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_w4a8_vnni_is_exact_on_integers_and_equals_reference(out, n_in, gs, sym, seed):
    """Unit scales and integer activations (max 127): every step is exact, so the VNNI
    kernel must equal the float64 product bit for bit; random scales: within tolerance."""
    rng = np.random.default_rng(seed)
    ng = -(-n_in // gs)
    codes = rng.integers(0, 16, (out, ng * gs))
    zeros = None if sym else rng.integers(0, 16, (out, ng)).astype(np.float16)
    qw = quant.QuantizedMatrix.from_codes(codes, np.ones((out, ng), np.float16), zeros, 4, gs,
                                          n_in)
    x = rng.integers(-127, 128, n_in).astype(np.float32)
    x[rng.integers(n_in)] = 127.0
    exact = (qw.dequantize(np.float64) @ x).astype(np.float32)
    np.testing.assert_array_equal(hl.gemv_w4a8(qw, x, device="numba"), exact)
    qw2, x2 = _case(out, n_in, gs, sym, seed)
    got = hl.gemv_w4a8(qw2, x2, device="numba")
    want = reference.gemv_w4a8(qw2, np.pad(x2, (0, qw2.padded_in - n_in)))
    assert hl.gemv_w4a8.spec.error(got, want) <= TOLERANCE


# --- AMX: the fixed-point limbs, the VNNI fallback, the path switch ------------------------

LIMB_WEIGHTS = np.array([2 ** 21, 2 ** 14, 2 ** 7, 1])


@pytest.mark.parametrize("m", [1, 2, 3, 4, 6])
def test_amx_limbs_are_an_exact_split_in_the_tile_layout(m):
    """Read the B tiles back into activation order: four limbs in range whose value is within
    half a fixed-point step of every activation; padded rows and zero blocks stay zero."""
    rng = np.random.default_rng(m)
    X = rng.standard_normal((m, 384)).astype(np.float32)
    X[0, :128] *= 1e4          # a large block: its own step
    X[-1, 128:256] = 0         # an all-zero block
    X[0, 300] = 1000.0         # max ≈ 1000× the mean: still fixed point (limit 4096×)
    nact = w4amx.act_rows_per_tile(m)
    nct = -(-m // nact)
    bl = np.zeros(512 * nact * nct * 3, np.int8)
    cf = np.zeros(16 * nct * 3, np.float32)
    assert w4amx.prepare_amx(X, nact, bl, cf)
    # bl[(ct·nk + k)·512·nact + 256·nact·h + 16·nact·j + 4·(4a + l) + t]
    tiles = bl.astype(np.int64).reshape(nct, 3, 2, 16, nact, 4, 4)  # ct k h j a l t
    for t in range(nct * nact):
        ct, a = divmod(t, nact)
        for k in range(3):
            limbs = tiles[ct, k, :, :, a]                    # h j l t
            assert np.abs(limbs[:, :, 0]).max() <= 127 and np.abs(limbs[:, :, 1:]).max() <= 64
            fixed = (limbs * LIMB_WEIGHTS[None, None, :, None]).sum(axis=2)  # h j t
            value = fixed.transpose(1, 2, 0).reshape(128)    # activation 8j + 2t + h
            steps = cf[16 * (ct * 3 + k) + 4 * a: 16 * (ct * 3 + k) + 4 * a + 4]
            if t >= m or not X[t, 128 * k:128 * (k + 1)].any():
                assert not value.any() and not steps.any()
                continue
            step = np.float64(np.abs(X[t, 128 * k:128 * (k + 1)]).max()) / (127 * 2.0 ** 21)
            np.testing.assert_allclose(steps, np.float32(step * LIMB_WEIGHTS))
            err = np.abs(X[t, 128 * k:128 * (k + 1)] - value * step).max()
            assert err <= 0.5 * step * (1 + 1e-9)


@NO_AMX
def test_amx_hands_activation_outliers_to_the_vnni_kernel():
    """A block whose max is above 4096× its mean: the AMX kernels return the VNNI result."""
    qw, x = _case(40, 1024, 128, False, 7)
    x[700] = 1e5 * np.abs(x).mean()
    X = np.zeros((1, qw.padded_in), np.float32)
    X[0, :1024] = x
    assert not w4amx.prepare_amx(X, 1, np.zeros(512 * 8, np.int8), np.zeros(16 * 8, np.float32))
    np.testing.assert_array_equal(_run(w4amx.gemv4_amx, qw, x), _run(w4.gemv4_vnni, qw, x))
    got = w4amx.gemm4_amx(*qn._common(qw)[0], np.repeat(X, 3, axis=0), qn._F16, 128,
                          np.empty((3, 40), np.float32), 2)
    assert hl.gemm_q.spec.error(got[2], _expected(qw, x)) <= TOLERANCE


def test_w4_path_switch():
    """The numba W4 path can be forced (to compare instruction sets) and is checked; each
    operation has its own default order."""
    for op in ("gemv", "gemm"):
        paths = qn.w4_paths(op)
        assert paths[-1] == "float32" and paths[0] == qn.w4_path(op)
        assert ("amx" in paths) == HAS_AMX and ("vnni" in paths) == HAS_VNNI
    if HAS_AMX:
        assert qn.w4_path("gemm") == "amx" and qn.w4_path("gemv") == "vnni"
    qw, x = _case(20, 300, 128, True, 9)
    X = np.stack([x, 2 * x])
    try:
        for path in qn.w4_paths():
            qn.use_w4_path(path)
            assert qn.w4_path("gemv") == qn.w4_path("gemm") == path
            assert hl.gemv_q.spec.error(hl.gemv_q(qw, x, device="numba"),
                                        _expected(qw, x)) <= TOLERANCE
            got = hl.gemm_q(qw, X, device="numba")
            want = reference.gemm_q(qw, np.pad(X, ((0, 0), (0, qw.padded_in - 300))))
            assert hl.gemm_q.spec.error(got, want) <= TOLERANCE
        with pytest.raises(ValueError, match="unknown"):
            qn.use_w4_path("avx9000")
    finally:
        qn.use_w4_path(None)
    assert qn.w4_path() == qn.w4_paths()[0]


def test_read_words_reads_every_word():
    """The benchmark's floor kernel: the XOR of every word, whatever the worker count."""
    rng = np.random.default_rng(4)
    for rows, nw, workers in [(1, 16, 1), (37, 32, 2), (100, 48, 5)]:
        q = rng.integers(0, 2**32, rows * nw, dtype=np.uint64).astype(np.uint32)
        want = np.bitwise_xor.reduce(q.view(np.uint64))
        assert w4.read_words(q, nw, rows, workers) == want


def test_amx_is_only_used_for_host_builds_with_the_tile_state(monkeypatch):
    """A portable build (numba told to compile for another CPU) never takes the AMX path;
    on a machine where it is taken, Linux has granted the tile state."""
    from hetlab.kernels.quant import _amx

    monkeypatch.setattr(numba.config, "CPU_NAME", "generic")
    assert _amx._host_has_amx() is False
    monkeypatch.undo()
    if HAS_AMX:
        assert _amx._request_tile_permission() is True
