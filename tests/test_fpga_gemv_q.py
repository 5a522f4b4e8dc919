"""The gemv_q overlay: its C-simulation decodes codes bit-exactly, equals the documented
float32 datapath bit for bit and the numpy reference within the spec's tolerance; its driver
on the emulator; its limits; its timing model."""

from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab.fpga import Emulator, FpgaTimeout, csim, load_manifest, model
from hetlab.kernels.quant import reference
from hetlab.kernels.quant.formats import QuantizedMatrix
from hetlab.kernels.quant.fpga import gemv_q_f32
from hetlab.kernels.quant.fpga_driver import GemvQDriver
from hetlab.kernels.quant.spec import GEMV_Q, make_quantized

pytestmark = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")

M = load_manifest("gemv_q")
LIM = M.limits
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def csim_gemv_q(qw: QuantizedMatrix, x: np.ndarray, rows: int | None = None,
                cols: int | None = None, gs: int | None = None) -> np.ndarray:
    """Call the HLS top function directly (no emulator, no driver)."""
    fn = csim.load_library(M).gemv_q
    zeros = (np.full(qw.scales.shape, 8, np.float16) if qw.zeros is None else qw.zeros)
    xp = np.zeros(qw.padded_in, np.float32)
    xp[: x.size] = x
    y = np.full(qw.out_features, -7.0, np.float32)
    args = [np.ascontiguousarray(qw.qweight), np.ascontiguousarray(qw.scales).view(np.uint16),
            np.ascontiguousarray(zeros).view(np.uint16), xp, y]
    fn(*map(_p, args), ctypes.c_uint32(qw.out_features if rows is None else rows),
       ctypes.c_uint32(qw.padded_in if cols is None else cols),
       ctypes.c_uint32(qw.group_size if gs is None else gs))
    return y


def ref(qw: QuantizedMatrix, x: np.ndarray) -> np.ndarray:
    return reference.gemv_q(qw, np.pad(x, (0, qw.padded_in - x.size)))


@st.composite
def problems(draw):
    gs = draw(st.sampled_from([32, 64, 128]))
    out = draw(st.integers(1, 40))
    n_in = draw(st.integers(1, 3 * gs + 5))
    sym = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    qw = make_quantized(out, n_in, rng, group_size=gs, symmetric=sym)
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    x = (rng.standard_normal(n_in) * scale).astype(np.float32)
    return qw, x


@FAST
@given(problems())
def test_csim_equals_the_float32_datapath_bit_for_bit_and_the_reference_within_tolerance(p):
    qw, x = p
    got = csim_gemv_q(qw, x)
    np.testing.assert_array_equal(got.view(np.uint32), gemv_q_f32(qw, x).view(np.uint32))
    assert GEMV_Q.error(got, ref(qw, x)) <= GEMV_Q.tolerance


@pytest.mark.parametrize("gs", [32, 64, 128])
def test_integer_path_one_hot_x_returns_the_codes_exactly(gs, rng):
    out, n = 7, 3 * gs
    codes = rng.integers(0, 16, (out, n))
    ones = np.ones((out, 3), np.float16)
    qw = QuantizedMatrix.from_codes(codes, ones, np.zeros((out, 3), np.float16), 4, gs)
    for j in [0, 1, 7, 8, gs - 1, gs, n - 1]:
        x = np.zeros(n, np.float32)
        x[j] = 1.0
        np.testing.assert_array_equal(csim_gemv_q(qw, x), codes[:, j].astype(np.float32))


def test_extreme_codes_zero_points_and_float16_scales(rng):
    gs, out = 32, 6
    codes = np.tile(np.array([0, 15] * (gs // 2)), (out, 2))
    scales = np.array([[6.1e-5, 65504.0], [6e-8, 1.0], [2.0**-24, 1e-3], [1.0, 1.0],
                       [0.5, 0.25], [3.0, 7.0]], np.float16)  # normal, subnormal, max
    zeros = np.array([[0, 15], [15, 0], [8, 8], [0, 0], [15, 15], [7, 9]], np.float16)
    qw = QuantizedMatrix.from_codes(codes, scales, zeros, 4, gs)
    x = rng.standard_normal(2 * gs).astype(np.float32)
    got = csim_gemv_q(qw, x)
    np.testing.assert_array_equal(got.view(np.uint32), gemv_q_f32(qw, x).view(np.uint32))
    assert GEMV_Q.error(got, ref(qw, x)) <= GEMV_Q.tolerance


def test_invalid_scalars_write_nothing(rng):
    qw = make_quantized(4, 64, rng, group_size=32)
    x = np.ones(64, np.float32)
    for rows, cols, gs in [(0, 64, 32), (4, 0, 32), (4, 64, 48), (4, 64, 0), (4, 96, 64),
                           (LIM["max_rows"] + 1, 64, 32), (4, LIM["max_cols"] + 32, 32)]:
        assert (csim_gemv_q(qw, x, rows, cols, gs) == -7.0).all(), (rows, cols, gs)


def test_limits_equal_the_hls_constants():
    header = M.path("hls/gemv_q.h").read_text()
    for macro, key in [("GQ_MAX_COLS", "max_cols"), ("GQ_MAX_ROWS", "max_rows"),
                       ("GQ_CODES", "codes"), ("GQ_LANES", "lanes")]:
        assert re.search(rf"#define {macro} (\d+)", header)[1] == str(LIM[key]), macro
    src = M.path("hls/gemv_q.cpp").read_text()
    assert re.search(r"variable = xb cyclic factor = (\d+)", src)[1] == str(LIM["codes"])
    assert 32 // LIM["bits"] == LIM["codes"]


# ---- driver on the emulator ------------------------------------------------------------


def test_driver_equals_the_datapath_and_writes_the_documented_registers(rng):
    emu = Emulator("pynq-z2")
    drv = GemvQDriver(emu)
    qw = make_quantized(33, 200, rng, group_size=64)
    x = rng.standard_normal(200).astype(np.float32)
    got = drv(qw, x)
    assert got.dtype == np.float32 and got.shape == (33,)
    np.testing.assert_array_equal(got.view(np.uint32), gemv_q_f32(qw, x).view(np.uint32))
    writes = [(off, v) for kind, off, v in drv.ip.log if kind == "w"]
    args = drv.ip.arguments()
    want = []
    for name in ("qweight", "scales", "zeros", "x", "y"):
        off = M.arg(name)["offset"]
        want += [(off, args[name] & 0xFFFFFFFF), (off + 4, args[name] >> 32)]
    want += [(0x4C, 33), (0x54, 256), (0x5C, 64), (0x00, 1)]
    assert writes == want and len(writes) == M.data["launch"]["mmio_writes"]
    assert emu.memory.regions() == []  # every buffer freed


def test_symmetric_format_runs_with_zero_point_eight(rng):
    qw = make_quantized(9, 128, rng, symmetric=True)
    x = rng.standard_normal(128).astype(np.float32)
    got = GemvQDriver(Emulator("kv260"))(qw, x)
    assert GEMV_Q.error(got, ref(qw, x)) <= GEMV_Q.tolerance


def test_missing_flush_breaks_the_result_in_strict_mode(rng, monkeypatch):
    emu = Emulator("pynq-z2")
    drv = GemvQDriver(emu)
    qw = make_quantized(8, 64, rng, group_size=32)
    x = rng.standard_normal(64).astype(np.float32)
    good = drv(qw, x)
    from hetlab.fpga.memory import EmuBuffer

    monkeypatch.setattr(EmuBuffer, "flush", lambda self: None)
    bad = drv(qw, x)
    assert not np.array_equal(good, bad, equal_nan=True)


def test_stalled_ip_times_out_and_frees_buffers(rng):
    emu = Emulator("pynq-z2")
    drv = GemvQDriver(emu)
    drv.ip.stalled = True
    with pytest.raises(FpgaTimeout, match=r"gemv_q: .*never took the start"):
        drv(make_quantized(2, 32, rng, group_size=32), np.ones(32, np.float32),
            timeout_s=0.02)
    assert emu.memory.regions() == []


def test_refuses_other_bit_widths_and_oversized_matrices(rng):
    drv = GemvQDriver(Emulator("pynq-z2"))
    with pytest.raises(hl.KernelNotSupported, match=r"4-bit codes only.*bits=8"):
        drv(make_quantized(2, 32, rng, bits=8, group_size=32), np.ones(32, np.float32))
    wide = make_quantized(1, LIM["max_cols"] + 1, rng, group_size=32)
    with pytest.raises(hl.KernelNotSupported, match="at most 16384 output rows and 8192"):
        drv(wide, np.ones(LIM["max_cols"] + 1, np.float32))
    with pytest.raises(hl.InvalidInputError, match="x must be float32"):
        drv(make_quantized(2, 32, rng, group_size=32), np.ones(32))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_hl_gemv_q_on_the_fpga_equals_the_reference(p):
    qw, x = p
    got = hl.gemv_q(qw, x, device="fpga")
    assert got.dtype == np.float32
    assert GEMV_Q.error(got, ref(qw, x)) <= GEMV_Q.tolerance


def test_bench_labels_the_fpga_figures_modeled(rng):
    from hetlab.kernels.quant.fpga import gemv_q

    qw = make_quantized(64, 256, rng)
    x = rng.standard_normal(256).astype(np.float32)
    run = gemv_q.modeled(qw, x)
    t = model(M, "pynq-z2", rows=64, cols=256, group_size=128)
    assert run.compute_s == pytest.approx(t.compute_s + t.launch_s)
    assert run.transfer_in_s == pytest.approx(t.transfer_in_s)


# ---- timing model ----------------------------------------------------------------------


def test_model_by_hand_on_pynq_z2():
    rows, cols, gs = 1024, 4096, 128
    t = model(M, "pynq-z2", rows=rows, cols=cols, group_size=gs)
    ng = cols // gs
    per_row = 4 + (70 + ng - 1) + (97 + cols // 8 - 1) + (9 + 4 * (ng - 1))
    assert t.loops[1].cycles == rows * per_row
    # weights: 0.5 B/code + 4 B per group; 4 B/cycle port = 400 MB/s at 100 MHz
    nbytes = rows * cols // 2 + 4 * rows * ng
    assert t.compute_s == pytest.approx(max(rows * per_row / 100e6, nbytes / 400e6))
    assert t.transfer_in_s == pytest.approx((70 + cols - 1) / 100e6)
    assert t.transfer_out_s == pytest.approx((68 + rows - 1) / 100e6)
    assert t.launch_s == pytest.approx(15 * 30e-6)
    assert t.source == "modeled" and "not measured" in str(t)


def test_compute_scales_with_rows_and_row_length():
    a = model(M, "pynq-z2", rows=512, cols=4096, group_size=128)
    b = model(M, "pynq-z2", rows=1024, cols=4096, group_size=128)
    assert b.compute_s / a.compute_s == pytest.approx(2.0)
    c = model(M, "pynq-z2", rows=512, cols=8192, group_size=128)
    assert 1.6 < c.compute_s / a.compute_s < 2.0  # per-row latency amortized over more words
    assert math.isclose(model(M, "kv260", rows=512, cols=4096, group_size=128).compute_s,
                        a.compute_s)  # same clock, same loops
