"""The spmv overlay: its C-simulation equals the documented row-order float32 datapath bit
for bit and the numpy reference within the spmv spec's tolerance; its driver on the
emulator; its limits; its timing model."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab.fpga import Emulator, FpgaTimeout, csim, load_manifest, model
from hetlab.kernels.sparse import reference
from hetlab.kernels.sparse.fpga import spmv_f32
from hetlab.kernels.sparse.fpga_driver import SpmvDriver
from hetlab.kernels.sparse.spec import SPMV
from hetlab.sparse import CSR, make_matrix

pytestmark = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")

M = load_manifest("spmv")
LIM = M.limits
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _p(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


def csim_spmv(A: CSR, x: np.ndarray, n_rows=None, n_cols=None, nnz=None) -> np.ndarray:
    """Call the HLS top function directly (no emulator, no driver)."""
    fn = csim.load_library(M).spmv
    y = np.full(A.shape[0], -7.0, np.float32)
    pad = np.zeros(1, np.int32)
    args = [np.ascontiguousarray(A.indptr, np.int32),
            np.ascontiguousarray(A.indices, np.int32) if A.nnz else pad,
            np.ascontiguousarray(A.data, np.float32) if A.nnz else pad.view(np.float32),
            np.ascontiguousarray(x, np.float32), y]
    fn(*map(_p, args), *(ctypes.c_uint32(v) for v in (
        A.shape[0] if n_rows is None else n_rows, A.shape[1] if n_cols is None else n_cols,
        A.nnz if nnz is None else nnz)))
    return y


@st.composite
def problems(draw):
    n_rows, n_cols = draw(st.integers(1, 60)), draw(st.integers(1, 60))
    density = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal((n_rows, n_cols)) * (rng.random((n_rows, n_cols)) < density)
    scale = draw(st.sampled_from([1e-20, 1.0, 1e15]))
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
    A = CSR(indptr, cols, (dense[rows, cols] * scale).astype(np.float32), (n_rows, n_cols))
    x = (rng.random(n_cols) * 2 - 1).astype(np.float32)
    return A, x


@FAST
@given(problems())
def test_csim_equals_the_row_order_datapath_bit_for_bit_and_the_reference_within_tolerance(p):
    A, x = p
    got = csim_spmv(A, x)
    np.testing.assert_array_equal(got.view(np.uint32), spmv_f32(A, x).view(np.uint32))
    assert SPMV.error(got, reference.spmv(A, x)) <= SPMV.tolerance


def test_empty_rows_give_positive_zero_and_cancellation_keeps_row_order():
    big = np.float32(1e8)
    A = CSR([0, 0, 3, 3, 4], [0, 1, 2, 3], np.array([big, 1, -big, 5], np.float32), (4, 4))
    x = np.ones(4, np.float32)
    got = csim_spmv(A, x)
    # row 1: (0 + 1e8) + 1 rounds back to 1e8, then - 1e8 = 0 (storage order, float32)
    np.testing.assert_array_equal(got, [0.0, 0.0, 0.0, 5.0])
    assert not np.signbit(got[0]) and not np.signbit(got[2])


def test_invalid_scalars_write_nothing(rng):
    A = make_matrix(8, rng, nnz_per_row=3).astype(np.float32)
    x = np.ones(A.shape[1], np.float32)
    for n_rows, n_cols, nnz in [(0, 8, A.nnz), (8, 0, A.nnz), (LIM["max_rows"] + 1, 8, A.nnz),
                                (8, LIM["max_cols"] + 1, A.nnz), (8, 8, LIM["max_nnz"] + 1)]:
        assert (csim_spmv(A, x, n_rows, n_cols, nnz) == -7.0).all()


def test_malformed_columns_read_zero_instead_of_out_of_bounds():
    A = CSR([0, 2], [0, 1], np.array([2, 3], np.float32), (1, 2), check=False)
    A_bad = CSR(A.indptr, np.array([0, 40000], np.int32), A.data, (1, 2), check=False)
    assert csim_spmv(A_bad, np.ones(2, np.float32)).tolist() == [2.0]


def test_limits_equal_the_hls_constants():
    header = M.path("hls/spmv.h").read_text()
    for macro, key in [("SPMV_MAX_COLS", "max_cols"), ("SPMV_MAX_ROWS", "max_rows"),
                       ("SPMV_MAX_NNZ", "max_nnz")]:
        assert re.search(rf"#define {macro} (\d+)", header)[1] == str(LIM[key]), macro
    src = M.path("hls/spmv.cpp").read_text()
    depths = dict(re.findall(r"m_axi port = (\w+) .*?depth = (\d+)", src))
    assert int(depths["x"]) == LIM["max_cols"] and int(depths["data"]) == LIM["max_nnz"]
    assert int(depths["indptr"]) == LIM["max_rows"] + 1


# ---- driver on the emulator ------------------------------------------------------------


def test_driver_equals_the_datapath_and_writes_the_documented_registers(rng):
    emu = Emulator("pynq-z2")
    drv = SpmvDriver(emu)
    A = make_matrix(70, rng, kind="powerlaw", nnz_per_row=6).astype(np.float32)
    x = (rng.random(A.shape[1]) * 2 - 1).astype(np.float32)
    got = drv(A, x)
    assert got.dtype == np.float32 and got.shape == (A.shape[0],)
    np.testing.assert_array_equal(got.view(np.uint32), spmv_f32(A, x).view(np.uint32))
    writes = [(off, v) for kind, off, v in drv.ip.log if kind == "w"]
    args = drv.ip.arguments()
    want = []
    for name in ("indptr", "indices", "data", "x", "y"):
        off = M.arg(name)["offset"]
        want += [(off, args[name] & 0xFFFFFFFF), (off + 4, args[name] >> 32)]
    want += [(0x4C, A.shape[0]), (0x54, A.shape[1]), (0x5C, A.nnz), (0x00, 1)]
    assert writes == want and len(writes) == M.data["launch"]["mmio_writes"]
    assert emu.memory.regions() == []


def test_int64_indices_nnz_zero_and_empty_shapes(rng):
    drv = SpmvDriver(Emulator("kv260"))
    A = make_matrix(30, rng, nnz_per_row=4).astype(np.float32).with_index_dtype(np.int64)
    x = rng.random(A.shape[1]).astype(np.float32)
    np.testing.assert_array_equal(drv(A, x), spmv_f32(A, x))
    Z = CSR(np.zeros(6, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32), (5, 3))
    assert drv(Z, np.ones(3, np.float32)).tolist() == [0.0] * 5
    E = CSR(np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32), (0, 3))
    assert drv(E, np.ones(3, np.float32)).shape == (0,)


def test_missing_invalidate_leaves_the_host_with_stale_y(rng, monkeypatch):
    from hetlab.fpga.memory import EmuBuffer

    drv = SpmvDriver(Emulator("pynq-z2"))
    A = make_matrix(20, rng, nnz_per_row=4).astype(np.float32)
    x = np.ones(A.shape[1], np.float32)
    assert np.any(drv(A, x) != 0)
    monkeypatch.setattr(EmuBuffer, "invalidate", lambda self: None)
    assert drv(A, x).tolist() == [0.0] * A.shape[0]  # the host's own zeros


def test_stalled_ip_times_out(rng):
    emu = Emulator("pynq-z2")
    drv = SpmvDriver(emu)
    drv.ip.stalled = True
    A = make_matrix(5, rng, nnz_per_row=2).astype(np.float32)
    with pytest.raises(FpgaTimeout, match=r"spmv: .*never took the start"):
        drv(A, np.ones(A.shape[1], np.float32), timeout_s=0.02)
    assert emu.memory.regions() == []


def test_refuses_float64_and_oversized_matrices(rng):
    drv = SpmvDriver(Emulator("pynq-z2"))
    A = make_matrix(5, rng, nnz_per_row=2)
    with pytest.raises(hl.KernelNotSupported, match=r"float32 and A is float64.*astype"):
        drv(A, np.ones(A.shape[1]))
    wide = CSR(np.zeros(2, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32),
               (1, LIM["max_cols"] + 1))
    with pytest.raises(hl.KernelNotSupported, match="32768 columns"):
        drv(wide, np.ones(LIM["max_cols"] + 1, np.float32))
    with pytest.raises(hl.KernelNotSupported, match="float32"):
        hl.spmv(A, np.ones(A.shape[1]), device="fpga")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_hl_spmv_on_the_fpga_equals_the_reference(p):
    A, x = p
    got = hl.spmv(A, x, device="fpga")
    assert got.dtype == np.float32
    assert SPMV.error(got, reference.spmv(A, x)) <= SPMV.tolerance


def test_modeled_entry_and_compare_on_the_specs_case():
    from hetlab.kernels.sparse.fpga import spmv

    rng = np.random.default_rng(0)
    A = make_matrix(200, rng, kind="powerlaw", nnz_per_row=16).astype(np.float32)
    x = (rng.random(A.shape[1]) * 2 - 1).astype(np.float32)
    run = spmv.modeled(A, x)
    t = model(M, "pynq-z2", n_rows=A.shape[0], n_cols=A.shape[1], nnz=A.nnz)
    assert run.compute_s == pytest.approx(t.compute_s + t.launch_s)
    assert run.transfer_in_s == pytest.approx(t.transfer_in_s)
    np.testing.assert_array_equal(run.result, spmv_f32(A, x))
    # the spmv spec generates float32 matrices: compare shows the fpga row beside the CPU's,
    # verified and labeled modeled
    ds = hl.compare(hl.spmv, sizes=[64], devices=["numpy", "fpga"], repeats=1, progress=False)
    assert str(ds["status"].sel(device="fpga", size=64).item()) == "ok"
    assert bool(ds["verified"].sel(device="fpga", size=64))
    assert str(ds["source"].sel(device="fpga").item()) == "modeled"
    # float64 input is refused with the fix rather than computed in another precision
    with pytest.raises(hl.KernelNotSupported, match=r"astype\(np.float32\)"):
        hl.spmv(A.astype(np.float64), x, device="fpga")


# ---- timing model ----------------------------------------------------------------------


def test_model_by_hand_on_pynq_z2():
    n_rows, n_cols, nnz = 10_000, 10_000, 160_000
    t = model(M, "pynq-z2", n_rows=n_rows, n_cols=n_cols, nnz=nnz)
    stream = 76 + 4 * (nnz + n_rows - 1)
    assert t.loops[1].cycles == stream and t.loops[1].bound == "cycles"
    assert t.compute_s == pytest.approx(stream / 100e6)
    assert t.transfer_in_s == pytest.approx((70 + n_cols - 1) / 100e6)
    assert t.transfer_out_s == 0.0  # y leaves inside the stream loop
    assert t.launch_s == pytest.approx(15 * 30e-6)
    assert t.source == "modeled" and "not measured" in str(t)


def test_compute_scales_with_nnz_plus_rows_and_a_slow_port_bounds_it():
    a = model(M, "pynq-z2", n_rows=1000, n_cols=1000, nnz=100_000)
    b = model(M, "pynq-z2", n_rows=2000, n_cols=1000, nnz=200_000)
    assert b.compute_s / a.compute_s == pytest.approx(2.0, rel=1e-3)
    from hetlab.fpga.manifest import Manifest

    slow = Manifest(M.root, {**M.data, "boards": {"slow": {**M.board("pynq-z2"),
                                                             "hp_port_mbps": 20.0}}})
    t = model(slow, "slow", n_rows=1000, n_cols=1000, nnz=100_000)
    assert t.loops[1].bound == "bandwidth"
    assert t.compute_s == pytest.approx((8 * 100_000 + 4 * 1001 + 4 * 1000) / 20e6)


def test_virtual_time_matches_the_timing_model(rng):
    emu = Emulator("pynq-z2")
    drv = SpmvDriver(emu)
    A = make_matrix(300, rng, nnz_per_row=8).astype(np.float32)
    t0 = emu.now_s
    drv(A, np.ones(A.shape[1], np.float32))
    t = model(M, "pynq-z2", n_rows=A.shape[0], n_cols=A.shape[1], nnz=A.nnz)
    assert drv.ip.last_model == t
    read_s = M.board("pynq-z2")["mmio_read_us"] * 1e-6
    # the final poll overlaps the kernel by at most one MMIO read
    assert t.total_s - read_s <= emu.now_s - t0 <= t.total_s + read_s
