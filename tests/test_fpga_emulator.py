"""The fps driver on the emulator: register traffic, pointer split, coherency, control
semantics, bus errors and timeouts — what a board would do, checked without one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hetlab as hl
from hetlab.fpga import BusError, Emulator, FpgaTimeout, csim, load_manifest, model
from hetlab.fpga.memory import PhysicalMemory
from hetlab.kernels.pointcloud import reference
from hetlab.kernels.pointcloud.fpga_driver import FpsDriver

pytestmark = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")

M = load_manifest("fps")
R = M.registers
CTRL, START, DONE, IDLE, READY = R["ap_ctrl"], 1, 2, 4, 8


@pytest.fixture
def emu() -> Emulator:
    return Emulator("pynq-z2")


@pytest.fixture
def cloud(rng) -> np.ndarray:
    return rng.random((50, 3), dtype=np.float32)


def program(ip, pts_buf, out_buf, n, s, start=0):
    for name, buf in (("points", pts_buf), ("out", out_buf)):
        off = M.arg(name)["offset"]
        ip.write(off, buf.device_address & 0xFFFFFFFF)
        ip.write(off + 4, buf.device_address >> 32)
    for name, v in (("n", n), ("n_samples", s), ("start", start)):
        ip.write(M.arg(name)["offset"], v)


def test_driver_equals_reference_and_writes_the_documented_registers(emu, cloud):
    drv = FpsDriver(emu)
    got = drv(cloud, 20, start=5)
    np.testing.assert_array_equal(got, reference.fps(cloud, 20, 5))
    assert got.dtype == np.int64
    writes = [(off, v) for kind, off, v in drv.ip.log if kind == "w"]
    pts_addr, out_addr = (drv.ip.arguments()[k] for k in ("points", "out"))
    assert writes == [
        (0x10, pts_addr & 0xFFFFFFFF), (0x14, pts_addr >> 32),
        (0x1C, out_addr & 0xFFFFFFFF), (0x20, out_addr >> 32),
        (0x28, 50), (0x30, 20), (0x38, 5), (0x00, 1),
    ]
    assert len(writes) == M.data["launch"]["mmio_writes"]
    reads = [(off, v) for kind, off, v in drv.ip.log if kind == "r"]
    assert all(off == CTRL for off, _ in reads) and reads[-1][1] & DONE
    assert all(not v & DONE for _, v in reads[:-1])


def test_64_bit_pointers_split_into_two_words():
    emu = Emulator("kv260")
    emu.memory = PhysicalMemory(base=0x8_0000_1000, strict=True)  # above 4 GiB
    pts = np.random.default_rng(1).random((9, 3), dtype=np.float32)
    drv = FpsDriver(emu)
    np.testing.assert_array_equal(drv(pts, 9), reference.fps(pts, 9, 0))
    words = {off: v for kind, off, v in drv.ip.log if kind == "w"}
    assert words[0x14] == 0x8 and words[0x20] == 0x8
    assert (words[0x14] << 32 | words[0x10]) == drv.ip.arguments()["points"] >= 1 << 32


def test_strict_coherency_missing_flush_or_invalidate_breaks_the_result(emu, cloud):
    ip = emu.load("fps")
    want = reference.fps(cloud, 10, 0)

    def run(flush: bool, invalidate: bool) -> np.ndarray:
        inp, out = emu.allocate((50, 3), np.float32), emu.allocate(10, np.uint32)
        inp[:] = cloud
        if flush:
            inp.flush()
        program(ip, inp, out, 50, 10)
        ip.write(CTRL, START)
        while not ip.read(CTRL) & DONE:
            pass
        if invalidate:
            out.invalidate()
        return np.array(out, dtype=np.int64)

    np.testing.assert_array_equal(run(True, True), want)
    assert not np.array_equal(run(False, True), want)  # the IP read stale (poisoned) DRAM
    assert run(True, False).tolist() == [0] * 10  # the host still sees its own zeros


def test_coherent_mode_needs_no_cache_maintenance(cloud):
    emu = Emulator("pynq-z2", strict=False)
    ip = emu.load("fps")
    inp, out = emu.allocate((50, 3), np.float32), emu.allocate(10, np.uint32)
    inp[:] = cloud
    program(ip, inp, out, 50, 10)
    ip.write(CTRL, START)
    while not ip.read(CTRL) & DONE:
        pass
    np.testing.assert_array_equal(out, reference.fps(cloud, 10, 0))


def test_ap_done_and_ap_ready_clear_on_read_ap_idle_follows_the_kernel(emu, rng):
    ip = emu.load("fps")
    inp, out = emu.allocate((2000, 3), np.float32), emu.allocate(200, np.uint32)
    inp[:] = rng.random((2000, 3), dtype=np.float32)
    inp.flush()
    assert ip.read(CTRL) == IDLE
    program(ip, inp, out, 2000, 200)
    ip.write(CTRL, START)
    first = ip.read(CTRL)
    assert not first & IDLE and not first & DONE  # ~1 ms modeled > one 30 us MMIO read
    while not (v := ip.read(CTRL)) & DONE:
        pass
    assert v & IDLE and v & READY and not v & START
    assert ip.read(CTRL) == IDLE  # done and ready cleared by the previous read


def test_interrupt_status_is_set_when_enabled_and_toggles_on_write(emu, cloud):
    ip = emu.load("fps")
    inp, out = emu.allocate((50, 3), np.float32), emu.allocate(4, np.uint32)
    program(ip, inp, out, 50, 4)
    ip.write(R["gie"], 1)
    ip.write(R["ier"], 1)
    ip.write(CTRL, START)
    while not ip.read(CTRL) & DONE:
        pass
    assert ip.read(R["isr"]) == 1 and ip.interrupt
    ip.write(R["isr"], 1)
    assert ip.read(R["isr"]) == 0 and not ip.interrupt


def test_kernel_that_never_starts_times_out(emu, cloud):
    drv = FpsDriver(emu)
    drv.ip.stalled = True  # as if the PL clock were not running
    try:
        with pytest.raises(FpgaTimeout, match="never took the start"):
            drv(cloud, 5, timeout_s=0.05)
        assert drv.ip.read(CTRL) & START  # ap_start still pending
    finally:
        drv.ip.stalled = False
    assert emu.memory.regions() == []  # the driver freed its buffers anyway


@pytest.mark.parametrize("offset", [0x18, 0x24, 0x2C, 0x40, 0x11, -4])
def test_unknown_register_offsets_raise(emu, offset):
    ip = emu.load("fps")
    with pytest.raises(BusError, match="register offset"):
        ip.read(offset)
    with pytest.raises(BusError, match="register offset"):
        ip.write(offset, 0)


def test_register_values_must_fit_32_bits(emu):
    with pytest.raises(BusError, match=r"\[0, 2\*\*32\)"):
        emu.load("fps").write(0x28, 1 << 32)


@pytest.mark.parametrize("bad", ["outside", "too_short", "freed"])
def test_out_of_range_pointers_are_bus_errors(emu, cloud, bad):
    ip = emu.load("fps")
    inp = emu.allocate((50, 3), np.float32)
    out = emu.allocate(10, np.uint32)
    program(ip, inp, out, 50, 10)
    if bad == "outside":
        ip.write(0x10, 0x100)
        ip.write(0x14, 0)
    elif bad == "too_short":
        ip.write(0x30, 20)  # 20 samples into a 10-entry buffer
    else:
        emu.free(out)
    with pytest.raises(BusError, match="outside every allocated buffer"):
        ip.write(CTRL, START)


def test_driver_refuses_float64_and_too_many_points(emu):
    drv = FpsDriver(emu)
    with pytest.raises(hl.KernelNotSupported, match="float32"):
        drv(np.zeros((4, 3)), 2)
    big = np.zeros((M.limits["max_points"] + 1, 3), np.float32)
    with pytest.raises(hl.KernelNotSupported, match="at most 16384 points"):
        drv(big, 2)
    with pytest.raises(hl.InvalidInputError, match="n_samples"):
        drv(np.zeros((4, 3), np.float32), 5)


def test_virtual_time_matches_the_timing_model(emu, cloud):
    drv = FpsDriver(emu)
    t0 = emu.now_s
    drv(cloud, 30)
    elapsed = emu.now_s - t0
    t = model(M, "pynq-z2", n=50, n_samples=30, start=0)
    assert drv.ip.last_model == t
    read_s = M.board("pynq-z2")["mmio_read_us"] * 1e-6
    # the final poll overlaps the kernel by at most one MMIO read
    assert t.total_s - read_s <= elapsed <= t.total_s + read_s


def test_buffers_know_their_device_address_views_too(emu):
    buf = emu.allocate((10, 3), np.float32)
    assert buf.device_address == emu.memory.regions()[0].base
    assert buf[2:].device_address == buf.device_address + 2 * 12
    assert type(buf + 1) is np.ndarray  # arithmetic results are not device buffers
    with pytest.raises(hl.InvalidInputError, match="copy"):
        _ = buf.copy().device_address
    emu.free(buf)
    assert emu.memory.regions() == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pts=st.integers(1, 40).flatmap(
    lambda n: hnp.arrays(np.float32, (n, 3), elements=st.integers(-3, 3).map(float))
    | hnp.arrays(np.float32, (n, 3), elements=st.floats(-100, 100, width=32))),
    data=st.data())
def test_hl_fps_on_the_fpga_equals_the_reference(pts, data):
    """Through dispatch (hl.fps → driver → emulator → C-sim), float32 clouds."""
    n = pts.shape[0]
    s, start = data.draw(st.integers(1, n)), data.draw(st.integers(0, n - 1))
    got = hl.fps(pts, s, start=start, device="fpga")
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, reference.fps(pts, s, start))
