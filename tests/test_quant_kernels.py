"""gemv_q / gemm_q: every backend equals the numpy reference on generated and edge cases."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant import reference
from hetlab.kernels.quant.spec import MAX_CONDITION, TOLERANCE, condition
from tests.conftest import backend_params

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _err(got, expected):
    return hl.gemv_q.spec.error(got, expected)


def _gemv(qw, x, device):
    """hl.gemv_q on ``device``; the fpga overlay decodes 4-bit codes only and must refuse
    other widths (then None)."""
    if device == "fpga" and qw.bits != 4:
        with pytest.raises(hl.KernelNotSupported, match="4-bit codes only"):
            hl.gemv_q(qw, x, device=device)
        return None
    return hl.gemv_q(qw, x, device=device)


def matrices():
    """(QuantizedMatrix, seed): every format, ragged rows (padding), out = 1 … 40."""
    return st.tuples(
        st.sampled_from([2, 3, 4, 8]), st.sampled_from([32, 64, 128]), st.booleans(),
        st.integers(1, 40), st.integers(1, 300), st.integers(0, 2**32 - 1),
    ).map(lambda t: (quant.quantize(
        np.random.default_rng(t[5]).normal(0, 0.05, (t[3], t[4])).astype(np.float32),
        bits=t[0], group_size=t[1], symmetric=t[2]), t[5]))


@pytest.mark.parametrize("device", backend_params("gemv_q"))
@FAST
@given(case=matrices())
def test_gemv_q_equals_reference(device, case):
    qw, seed = case
    x = np.random.default_rng(seed + 1).standard_normal(qw.in_features).astype(np.float32)
    assume(condition(qw, x) <= MAX_CONDITION)  # the tolerance's domain (see the spec)
    got = _gemv(qw, x, device)
    if got is None:
        return
    assert got.dtype == np.float32 and got.shape == (qw.out_features,)
    expected = reference.gemv_q(qw, np.pad(x, (0, qw.padded_in - qw.in_features)))
    assert _err(got, expected) <= TOLERANCE
    # and the reference is the float64 product of the dequantized matrix
    np.testing.assert_allclose(expected, qw.dequantize(np.float64) @ x, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", backend_params("gemm_q"))
@FAST
@given(case=matrices(), m=st.sampled_from([1, 2, 7, 64]))
def test_gemm_q_equals_reference_and_gemv(device, case, m):
    qw, seed = case
    X = np.random.default_rng(seed + 2).standard_normal((m, qw.in_features)).astype(np.float32)
    assume(max(condition(qw, X), condition(qw, X[0])) <= MAX_CONDITION)
    got = hl.gemm_q(qw, X, device=device)
    assert got.dtype == np.float32 and got.shape == (m, qw.out_features)
    padded = np.pad(X, ((0, 0), (0, qw.padded_in - qw.in_features)))
    assert _err(got, reference.gemm_q(qw, padded)) <= TOLERANCE
    assert _err(got[0], hl.gemv_q(qw, X[0], device=device)) <= TOLERANCE


@pytest.mark.parametrize("device", backend_params("gemv_q"))
@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_decoding_error_would_be_caught(device, bits, rng):
    """One flipped bit of one code moves the output well beyond the tolerance."""
    qw = quant.quantize(rng.normal(0, 0.02, (16, 256)).astype(np.float32), bits, 128)
    x = rng.standard_normal(256).astype(np.float32)
    good = _gemv(qw, x, device)
    if good is None:
        return
    codes = qw.codes()
    codes[3, 17] ^= 1 << (bits - 1)  # flip the top bit of one code
    bad = quant.QuantizedMatrix.from_codes(codes, qw.scales, qw.zeros, bits, 128, 256)
    assert _err(hl.gemv_q(bad, x, device=device), good) > 10 * TOLERANCE


@pytest.mark.parametrize("device", backend_params("gemv_q"))
def test_edge_cases(device):
    zero = quant.quantize(np.zeros((3, 32), np.float32), 4, 32)
    np.testing.assert_array_equal(hl.gemv_q(zero, np.ones(32, np.float32), device=device), 0)
    one = quant.quantize(np.array([[0.5]], np.float32), 8, 32)  # 1×1, padded to 32
    qw = quant.quantize(127 * np.eye(64, dtype=np.float32), 8, 64, symmetric=True)  # s = 1
    x16 = np.arange(64, dtype=np.float16)
    if device == "fpga":  # 4-bit overlay: same checks in W4 (7·I with s = 1; zero point 8)
        _gemv(one, np.array([2.0]), device)
        one = quant.quantize(np.array([[0.5]], np.float32), 4, 32)
        qw = quant.quantize(7 * np.eye(64, dtype=np.float32), 4, 64, symmetric=True)
    assert hl.gemv_q(one, np.array([2.0]), device=device)[0] == pytest.approx(1.0, rel=1e-2)
    top = 7 if device == "fpga" else 127
    np.testing.assert_array_equal(hl.gemv_q(qw, x16, device=device), top * np.arange(64))


def test_large_rows_across_blocks(rng):
    qw = quant.quantize(rng.normal(0, 0.02, (70, 1100)).astype(np.float32), 3, 128)
    x = rng.standard_normal(1100).astype(np.float32)
    assert _err(hl.gemv_q(qw, x, device="numba"), hl.gemv_q(qw, x)) <= TOLERANCE


# --- bad input --------------------------------------------------------------------------


@pytest.fixture
def qw():
    return quant.quantize(np.ones((4, 96), np.float32), 4, 32)


def test_gemv_bad_input(qw):
    with pytest.raises(hl.InvalidInputError, match="gemv_q: qw must be a QuantizedMatrix"):
        hl.gemv_q(np.ones((4, 96)), np.ones(96))
    msg = r"gemv_q: x must have shape \(in_features,\) = 96; got shape \(95,\)"
    with pytest.raises(hl.InvalidInputError, match=msg):
        hl.gemv_q(qw, np.ones(95))
    with pytest.raises(hl.InvalidInputError, match="x must be a float16/float32/float64"):
        hl.gemv_q(qw, np.ones(96, np.int32))
    with pytest.raises(hl.InvalidInputError, match="x must be finite"):
        hl.gemv_q(qw, np.full(96, np.nan))
    with pytest.raises(hl.InvalidInputError, match="device must be one of"):
        hl.gemv_q(qw, np.ones(96), device="tpu")


def test_gemm_bad_input(qw):
    with pytest.raises(hl.InvalidInputError, match="gemm_q: X must have shape"):
        hl.gemm_q(qw, np.ones(96))
    with pytest.raises(hl.InvalidInputError, match=r"1 ≤ m ≤ 64"):
        hl.gemm_q(qw, np.ones((65, 96)))
    with pytest.raises(hl.InvalidInputError, match="X must be finite"):
        hl.gemm_q(qw, np.full((2, 96), np.inf))


def test_compare_verifies_both_backends():
    ds = hl.compare(hl.gemv_q, sizes=[100], devices=["numpy", "numba"], repeats=1, progress=False)
    assert ds["verified"].values.all(), ds["status"].values
    assert float(ds["bytes"][0]) > hl.quant.quantize(np.ones((100, 100)), 4, 128).nbytes


def test_import_hetlab_does_not_import_numba():
    code = "import sys, hetlab; from hetlab import quant; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- dispatch of array containers (the spine change for QuantizedMatrix) -----------------


class _FakeDeviceArray:
    shape = (1,)


_FakeDeviceArray.__module__ = "cupy._core.core"


class _Box:
    def __init__(self, *arrays):
        self.arrays = arrays

    def map_arrays(self, fn):
        return _Box(*(fn(a) for a in self.arrays))


def test_container_lives_where_its_arrays_live():
    from hetlab.core.dispatch import _owner

    assert _owner(_Box(np.ones(2), np.ones(3))) == "host"
    assert _owner(_Box(_FakeDeviceArray(), _FakeDeviceArray())) == "cupy"
    with pytest.raises(hl.DeviceMismatchError, match="different devices"):
        _owner(_Box(np.ones(2), _FakeDeviceArray()))


def test_move_arrays_maps_every_array_of_a_container(qw):
    from hetlab.core.dispatch import move_arrays

    class CopyingBackend:
        def to_device(self, a):
            return np.array(a, copy=True)

    moved = move_arrays(hl.gemv_q.spec, CopyingBackend(), {"qw": qw, "x": np.ones(96)})
    assert isinstance(moved["qw"], quant.QuantizedMatrix) and moved["qw"] is not qw
    assert moved["qw"].qweight is not qw.qweight
    np.testing.assert_array_equal(moved["qw"].qweight, qw.qweight)
    np.testing.assert_array_equal(moved["qw"].zeros, qw.zeros)


def test_condition_measures_cancellation():
    qw = quant.quantize(np.array([[127.0, -127.0]], np.float32), 8, 32, symmetric=True)
    assert condition(qw, np.array([1.0, 0.0])) == pytest.approx(1.0)
    assert condition(qw, np.array([1.0, 0.5])) == pytest.approx(3.0)  # 190.5 / 63.5
    assert condition(qw, np.array([1.0, 1.0])) == np.inf  # the terms cancel exactly
    assert condition(qw, np.zeros(2)) == 1.0
