"""The AVX2 integer path of the quantized kernels (W4 GEMV/GEMM/W4A8, W2/W3/W8 GEMV), the W4
path selection for any CPU feature set, and the fused runner of a mixed-bit plan."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.errors import InvalidInputError
from hetlab.kernels.quant import _numba_avx2 as a2
from hetlab.kernels.quant import numba as qn
from hetlab.kernels.quant import reference
from hetlab.kernels.quant._amx import HAS_AMX
from hetlab.kernels.quant._simd import HAS_AVX2, host_features
from hetlab.kernels.quant._simd_avx2 import KINDS, avx2_dot
from hetlab.kernels.quant.spec import MAX_CONDITION, TOLERANCE, condition

FAST = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_AVX2 = pytest.mark.skipif(not HAS_AVX2, reason="no AVX2+FMA on this CPU")
ERR = hl.gemv_q.spec.error


def _case(out, n_in, bits, gs, sym, seed):
    rng = np.random.default_rng(seed)
    qw = quant.quantize(rng.normal(0, 0.05, (out, n_in)).astype(np.float32), bits, gs,
                        symmetric=sym)
    return qw, rng.standard_normal(n_in).astype(np.float32)


def _pad(qw, x):
    return np.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, qw.padded_in - qw.in_features)])


def _avx2_gemv(qw, x, threads=2):
    """The AVX2 kernel of ``qw``'s width, called directly (so the test cannot pass through
    another path)."""
    head, _ = qn._common(qw)
    out = np.empty(qw.out_features, np.float32)
    xp = _pad(qw, x).astype(np.float32)
    if qw.bits == 4:
        return a2.gemv4_avx2(*head, xp, qn._F16, qw.group_size, out, threads)
    return a2.gemv_bits_avx2(*head, xp, qn._F16, qw.group_size, out, threads, qw.bits)


# --- path selection -------------------------------------------------------------------------

AVX2_ONLY = {"sse4.2", "avx", "avx2", "fma", "bmi2"}  # e.g. AMD EPYC Zen 2/3
VNNI = AVX2_ONLY | {"avx512f", "avx512bw", "avx512vl", "avx512vnni"}
AMX = VNNI | {"amx-tile", "amx-int8"}


@pytest.mark.parametrize("op", ["gemv", "gemm"])
def test_path_selection_from_features(op):
    """AVX2 without VNNI selects avx2; without AVX2 (or FMA) float32; VNNI/AMX keep their
    order, with avx2 listed before float32."""
    assert qn.select_w4_paths(AVX2_ONLY, op) == ["avx2", "float32"]
    assert qn.select_w4_paths({"sse4.2", "avx"}, op) == ["float32"]
    assert qn.select_w4_paths({"avx2"}, op) == ["float32"]  # no FMA
    assert qn.select_w4_paths(set(), op) == ["float32"]
    assert qn.select_w4_paths(VNNI, op) == ["vnni", "avx2", "float32"]
    want = ["vnni", "amx"] if op == "gemv" else ["amx", "vnni"]
    assert qn.select_w4_paths(AMX, op) == [*want, "avx2", "float32"]
    assert qn.select_w4_paths(AMX, op, amx_granted=False) == ["vnni", "avx2", "float32"]
    with pytest.raises(ValueError, match="op must be"):
        qn.select_w4_paths(AVX2_ONLY, "gemm3")


def test_this_cpu_paths_come_from_its_features():
    feats = host_features()
    for op in ("gemv", "gemm"):
        assert qn.w4_paths(op) == qn.select_w4_paths(feats, op, amx_granted=HAS_AMX)
        assert ("avx2" in qn.w4_paths(op)) == HAS_AVX2


@NO_AVX2
def test_avx2_can_be_forced_and_reaches_every_kernel():
    qw, x = _case(20, 300, 4, 128, False, 3)
    qw3, _ = _case(20, 300, 3, 128, False, 3)
    X = np.stack([x, -2 * x])
    try:
        qn.use_w4_path("avx2")
        assert qn.w4_path("gemv") == qn.w4_path("gemm") == "avx2"
        assert qn.lowbit_path(qw3) == "avx2"
        assert ERR(hl.gemv_q(qw, x, device="numba"), reference.gemv_q(qw, _pad(qw, x))) <= 1e-5
        assert ERR(hl.gemm_q(qw, X, device="numba"), reference.gemm_q(qw, _pad(qw, X))) <= 1e-5
        qn.use_w4_path("float32")
        assert qn.lowbit_path(qw3) == "float32"
    finally:
        qn.use_w4_path(None)


@NO_AVX2
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_block_dots_compile_to_avx2_integer_instructions(kind):
    """The intrinsics emit vpmaddubsw and vpmaddwd on 256-bit registers."""
    dot = avx2_dot[kind]

    @numba.njit
    def f(q, xl, acc):
        dot(q, 0, 8, xl, 0, acc, np.float32(1))

    q, xl, acc = np.zeros(64, np.uint32), np.zeros(384, np.int8), np.zeros(8, np.float32)
    f(q, xl, acc)
    asm = f.inspect_asm(f.signatures[0])
    assert "vpmaddubsw" in asm and "vpmaddwd" in asm and "%ymm" in asm


# --- the kernels against the reference -------------------------------------------------------

@NO_AVX2
@FAST
@given(bits=st.sampled_from([2, 3, 4, 8]), out=st.integers(1, 40), n_in=st.integers(1, 600),
       gs=st.sampled_from([128, 256]), sym=st.booleans(), seed=st.integers(0, 2**32 - 1),
       threads=st.sampled_from([1, 2, 5]))
def test_avx2_gemv_equals_reference(bits, out, n_in, gs, sym, seed, threads):
    """Ragged rows (padding), one row, rows not a multiple of the block, more workers than
    blocks; every width."""
    qw, x = _case(out, n_in, bits, gs, sym, seed)
    assume(condition(qw, x) <= MAX_CONDITION)
    got = _avx2_gemv(qw, x, threads)
    assert got is not None  # Gaussian activations have no outlier block
    assert ERR(got, reference.gemv_q(qw, _pad(qw, x))) <= TOLERANCE


@NO_AVX2
@FAST
@given(m=st.sampled_from([1, 2, 7, 64]), out=st.integers(1, 30), n_in=st.integers(1, 400),
       sym=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_avx2_flat_gemm_equals_reference(m, out, n_in, sym, seed):
    qw, _ = _case(out, n_in, 4, 128, sym, seed)
    X = np.random.default_rng(seed + 1).standard_normal((m, n_in)).astype(np.float32)
    X[m // 2, : min(n_in, 128)] *= 1000.0  # one row with an outlier block
    assume(condition(qw, X) <= MAX_CONDITION)
    head, _ = qn._common(qw)
    got = a2.gemm4_avx2(*head, _pad(qw, X), qn._F16, 128,
                        np.empty((m, out), np.float32), 2)
    assert ERR(got, reference.gemm_q(qw, _pad(qw, X))) <= TOLERANCE


@NO_AVX2
@FAST
@given(out=st.integers(1, 40), n_in=st.integers(1, 700), gs=st.sampled_from([128, 256]),
       sym=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_w4a8_avx2_is_exact_on_integers(out, n_in, gs, sym, seed):
    """Unit scales and integer activations (max 127): every step is exact, so the kernel
    equals the float64 product bit for bit; random scales: within tolerance."""
    rng = np.random.default_rng(seed)
    ng = -(-n_in // gs)
    codes = rng.integers(0, 16, (out, ng * gs))
    codes[0, :] = 15  # extreme codes
    zeros = None if sym else rng.integers(0, 16, (out, ng)).astype(np.float16)
    qw = quant.QuantizedMatrix.from_codes(codes, np.ones((out, ng), np.float16), zeros, 4, gs,
                                          n_in)
    x = rng.integers(-127, 128, n_in).astype(np.float32)
    x[rng.integers(n_in)] = 127.0
    exact = (qw.dequantize(np.float64) @ x).astype(np.float32)
    try:
        qn.use_w4_path("avx2")
        np.testing.assert_array_equal(hl.gemv_w4a8(qw, x, device="numba"), exact)
        qw2, x2 = _case(out, n_in, 4, gs, sym, seed)
        got = hl.gemv_w4a8(qw2, x2, device="numba")
    finally:
        qn.use_w4_path(None)
    want = reference.gemv_w4a8(qw2, _pad(qw2, x2))
    assert hl.gemv_w4a8.spec.error(got, want) <= TOLERANCE


@NO_AVX2
@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_extreme_codes_zero_and_outlier_activations(bits):
    """Codes all 0 or all 2^bits − 1 (saturation would show here), zero activations, a zero
    block, and an outlier block (W4: float32 for that block; others: the float32 kernel)."""
    rng = np.random.default_rng(bits)
    out, n_in, gs = 6, 512, 128
    codes = rng.integers(0, 2**bits, (out, n_in))
    codes[0], codes[1] = 0, 2**bits - 1
    codes[2, ::2] = 2**bits - 1
    qw = quant.QuantizedMatrix.from_codes(codes, rng.uniform(0.01, 0.1, (out, n_in // gs)),
                                          rng.integers(0, 2**bits, (out, n_in // gs)), bits, gs)
    x = rng.standard_normal(n_in).astype(np.float32)
    x[::3] = 127.0  # the largest activation of every block: the top limb at its extreme
    assert ERR(_avx2_gemv(qw, x), reference.gemv_q(qw, x)) <= TOLERANCE
    np.testing.assert_array_equal(_avx2_gemv(qw, np.zeros(n_in, np.float32)), 0)
    x[128:256] = 0
    assert ERR(_avx2_gemv(qw, x), reference.gemv_q(qw, x)) <= TOLERANCE
    x[300] = 1e5
    got = _avx2_gemv(qw, x)
    if bits != 4:
        assert got is None  # the caller falls back
        qn.use_w4_path("avx2")
        try:
            got = hl.gemv_q(qw, x, device="numba")
        finally:
            qn.use_w4_path(None)
    assert ERR(got, reference.gemv_q(qw, x)) <= TOLERANCE


@pytest.mark.parametrize("nsplit,top", [(1, 64), (2, 127), (4, 127)])
def test_limbs_are_an_exact_split_in_their_layout(nsplit, top):
    rng = np.random.default_rng(nsplit)
    x = (rng.standard_normal(384) * np.repeat([1.0, 1e-3, 0.0], 128)).astype(np.float32)
    xl, xf, ok = np.empty(3 * 384, np.int8), np.empty(3, np.float32), np.empty(3, np.bool_)
    a2.prepare_limbs(x, nsplit, top, xl, xf, ok)
    assert ok.all() and xf[2] == 0 and not xl[768:].any()
    limbs = xl.astype(np.int64).reshape(3, 3, nsplit, 128 // nsplit)  # block, limb, split, pos
    limbs = limbs.transpose(0, 1, 3, 2).reshape(3, 3, 128)  # activation i = nsplit·pos + split
    assert np.abs(limbs[:, 0]).max() <= top and np.abs(limbs[:, 1:]).max() <= 64
    n = limbs[:, 0] * 2**14 + limbs[:, 1] * 2**7 + limbs[:, 2]
    for k in range(2):
        blk = x[128 * k:128 * (k + 1)].astype(np.float64)
        assert np.abs(n[k]).max() <= top * 2**14
        assert np.abs(n[k] - blk / np.float64(xf[k])).max() <= 0.75  # rint of x / xf, ±ε
        assert np.abs(n[k] * np.float64(xf[k]) - blk).max() <= np.abs(blk).max() / (top * 2**14)


# --- the fused runner of a mixed-bit plan ---------------------------------------------------

def _plan(seed, block_rows=None, candidates=(2, 3, 4, 8), target=4.5):
    rng = np.random.default_rng(seed)
    ws = [rng.normal(0, s, (o, i)) for s, o, i in ((1.0, 40, 256), (0.1, 33, 300),
                                                     (0.5, 17, 128))]
    plan = quant.allocate_bits(ws, target, candidates=candidates, block_rows=block_rows,
                               importance=[4.0, 1.0, 0.5])
    xs = [rng.standard_normal(w.shape[1]).astype(np.float32) for w in ws]
    return plan, xs


def _plan_ref(plan, xs):
    return [(plan.dequantize(i).astype(np.float64) @ x.astype(np.float64)).astype(np.float32)
            for i, x in enumerate(xs)]


@pytest.mark.parametrize("block_rows", [None, 8])
def test_fused_plan_equals_each_layer_reference(block_rows):
    plan, xs = _plan(1, block_rows)
    assert len(set(plan.bits)) >= 2  # a mixed plan
    run = quant.FusedPlan(plan)
    assert run.path == ("avx2" if HAS_AVX2 else "float32")
    for y, want in zip(run(xs), _plan_ref(plan, xs), strict=True):
        assert y.shape == want.shape and ERR(y, want) <= TOLERANCE
    qn.use_w4_path("float32")
    try:
        assert run.path == "float32"
        for y, want in zip(run(xs), _plan_ref(plan, xs), strict=True):
            assert ERR(y, want) <= TOLERANCE
    finally:
        qn.use_w4_path(None)


def test_fused_plan_outliers_and_shared_vector():
    rng = np.random.default_rng(5)
    ws = [rng.normal(0, 1, (24, 256)) for _ in range(3)]
    plan = quant.allocate_bits(ws, 4.2, candidates=(3, 4, 8), importance=[9.0, 1.0, 0.1])
    x = rng.standard_normal(256).astype(np.float32)
    run = quant.FusedPlan(plan)
    want = _plan_ref(plan, [x] * 3)
    for y, w in zip(run(x), want, strict=True):  # one vector for every layer
        assert ERR(y, w) <= TOLERANCE
    x[7] = 1e4  # an outlier block: the per-unit kernels take over
    for y, w in zip(run([x, x, x]), _plan_ref(plan, [x] * 3), strict=True):
        assert ERR(y, w) <= TOLERANCE


def test_fused_plan_refuses_bad_input():
    plan, xs = _plan(2, target=3.5)
    run = quant.FusedPlan(plan)
    with pytest.raises(InvalidInputError, match="plan must be a BitPlan"):
        quant.FusedPlan([qw for qw in plan.matrices])
    with pytest.raises(InvalidInputError, match="sequence of 3 activation vectors"):
        run(xs[:2])
    with pytest.raises(InvalidInputError, match="sequence of 3"):
        run(xs[0])  # one vector, but the layers' in_features differ
    with pytest.raises(InvalidInputError, match=r"xs\[1\] must have shape"):
        run([xs[0], xs[0], xs[2]])
    bad = [x.copy() for x in xs]
    bad[2][3] = np.nan
    with pytest.raises(InvalidInputError, match=r"xs\[2\]"):
        run(bad)
    with pytest.raises(InvalidInputError, match="float16/float32/float64"):
        run([xs[0], xs[1], np.arange(128)])


def test_fused_plan_of_other_group_sizes_runs_per_unit():
    """Group size 64 has no AVX2 block dot: every unit runs through gemv_q, same results."""
    rng = np.random.default_rng(6)
    ws = [rng.normal(0, 1, (20, 192)), rng.normal(0, 1, (9, 64))]
    plan = quant.allocate_bits(ws, 4.5, candidates=(2, 4, 8), group_size=64,
                               importance=[5.0, 0.1])
    run = quant.FusedPlan(plan)
    assert run.path == "float32" and run.in_features == [192, 64]
    assert run.out_features == [20, 9]
    xs = [rng.standard_normal(192), rng.standard_normal(64)]
    for y, w in zip(run(xs), _plan_ref(plan, xs), strict=True):
        assert y.dtype == np.float32 and ERR(y, w) <= TOLERANCE


@NO_AVX2
def test_block_dots_compiled_for_an_avx2_only_cpu(tmp_path):
    """Compiled for Haswell (AVX2, no AVX-512: what an AMD EPYC Zen 2/3 gets), every block dot
    equals its integer formula (bit for bit where the sums fit float32) with no zmm code."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CPU_NAME": "haswell",
           "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, str(root / "tests" / "_quant_avx2_only_check.py")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok")
