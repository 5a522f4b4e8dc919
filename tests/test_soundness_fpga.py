"""Soundness of the FPGA backend: every overlay is safe to call from several threads, and the
emulator (like a real overlay's driver) refuses register values the IP cannot honour."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

import hetlab as hl
from hetlab.core.registry import get_impl, get_kernel, kernel_names, supported_backends
from hetlab.fpga import (
    BusError,
    Emulator,
    PynqDevice,
    csim,
    load_manifest,
    model,
)
from hetlab.kernels.pointcloud import reference
from hetlab.kernels.pointcloud.fpga_driver import FpsDriver
from hetlab.kernels.quant.fpga_driver import GemvQDriver

pytestmark = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")

N_THREADS, N_CALLS = 4, 8
#: every kernel a family implements on the fpga backend (one overlay each)
FPGA_KERNELS = sorted(k for k in kernel_names() if "fpga" in supported_backends(k))


@pytest.fixture
def mmio_takes_time(monkeypatch):
    """Every emulated register access lets other threads run, as a ~30 us MMIO access on a
    board does: an unserialized call is then interleaved with the others almost surely."""
    advance = Emulator.advance

    def slow(self, seconds):
        time.sleep(0)
        advance(self, seconds)

    monkeypatch.setattr(Emulator, "advance", slow)


def _cases(kernel: str, thread: int) -> list[tuple[dict, object]]:
    """Small cases (the user's arguments), different per thread and call, with their numpy
    reference results."""
    spec = get_kernel(kernel)
    out = []
    for call in range(N_CALLS):
        size = 64 + 16 * thread + call  # a different shape per thread: mix-ups show
        case = spec.make_case(size, np.random.default_rng([thread, call]))
        out.append((case, spec.reference(**spec.validate(**case))))
    return out


def _hammer(kernel: str, call) -> list[str]:
    spec = get_kernel(kernel)
    cases = {t: _cases(kernel, t) for t in range(N_THREADS)}
    wrong: list[str] = []
    barrier = threading.Barrier(N_THREADS)

    def work(t: int) -> None:
        barrier.wait()
        for i, (args, expected) in enumerate(cases[t]):
            try:
                got = call(args)
            except Exception as exc:
                wrong.append(f"thread {t} call {i}: raised {type(exc).__name__}: {exc}")
                continue
            err, ok = spec.verified(np.asarray(got), expected)
            if not ok:
                wrong.append(f"thread {t} call {i}: error {err:.3g}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: races show in a few calls
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    return wrong


@pytest.mark.parametrize("kernel", FPGA_KERNELS)
def test_every_fpga_kernel_is_thread_safe_through_dispatch(kernel, mmio_takes_time):
    public = getattr(hl, kernel)
    wrong = _hammer(kernel, lambda args: public(**args, device="fpga"))
    assert not wrong, f"{len(wrong)} of {N_THREADS * N_CALLS} calls wrong: {wrong[:5]}"


@pytest.mark.parametrize("kernel", FPGA_KERNELS)
def test_every_modeled_fpga_entry_is_thread_safe(kernel, mmio_takes_time):
    """The ``.modeled`` entries (what hl.compare calls on the emulator) from several threads."""
    impl = get_impl(kernel, "fpga")
    spec = get_kernel(kernel)
    wrong = _hammer(kernel, lambda case: impl.modeled(**spec.validate(**case)).result)
    assert not wrong, f"{len(wrong)} of {N_THREADS * N_CALLS} calls wrong: {wrong[:5]}"


def test_separate_emulators_in_threads_do_not_share_the_csim_buffers():
    """The HLS top's static on-chip buffers live once per process: an emulator per thread must
    still not run two C-simulations of one overlay at once."""
    rng = np.random.default_rng(7)
    clouds = [rng.random((6000 + 1000 * t, 3), dtype=np.float32) for t in range(N_THREADS)]
    expected = [reference.fps(c, 96, 0) for c in clouds]
    wrong: list[str] = []

    def work(t: int) -> None:
        drv = FpsDriver(Emulator("pynq-z2"))
        for i in range(6):
            got = drv(clouds[t], 96, 0)
            if not np.array_equal(got, expected[t]):
                wrong.append(f"thread {t} call {i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong


def test_the_pynq_path_serializes_calls_on_one_board(monkeypatch, mmio_takes_time):
    from tests.test_fpga_pynq import fake_pynq

    pynq = fake_pynq()
    monkeypatch.setitem(sys.modules, "pynq", pynq)
    monkeypatch.setattr(PynqDevice, "load", lambda self, overlay: pynq.emulator.load(overlay))
    boards = [PynqDevice("pynq-z2") for _ in range(2)]
    assert boards[0].lock is boards[1].lock  # one board, one lock
    drivers = [FpsDriver(boards[t % 2]) for t in range(N_THREADS)]
    rng = np.random.default_rng(3)
    clouds = [rng.random((40 + 10 * t, 3), dtype=np.float32) for t in range(N_THREADS)]
    wrong: list[str] = []

    def work(t: int) -> None:
        for i in range(N_CALLS):
            try:
                got = drivers[t](clouds[t], 9, 1)
            except Exception as exc:
                wrong.append(f"thread {t} call {i}: {type(exc).__name__}: {exc}")
                continue
            if not np.array_equal(got, reference.fps(clouds[t], 9, 1)):
                wrong.append(f"thread {t} call {i}: wrong")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong, wrong[:5]
    assert pynq.emulator.memory.regions() == []


# ---- item 9: register values the IP cannot take ----------------------------------------------

VALID = {
    "fps": {"n": 8, "n_samples": 2, "start": 0},
    "gemv_q": {"rows": 2, "cols": 64, "group_size": 32},
    "spmv": {"n_rows": 2, "n_cols": 2, "nnz": 0},
}
BAD = [
    ("fps", {"n": 0}), ("fps", {"n": 16385}), ("fps", {"n_samples": 0}),
    ("fps", {"n_samples": 9}), ("fps", {"start": 8}),
    ("gemv_q", {"group_size": 0}), ("gemv_q", {"group_size": 48}),
    ("gemv_q", {"group_size": 16, "cols": 64}), ("gemv_q", {"rows": 0}),
    ("gemv_q", {"rows": 16385}), ("gemv_q", {"cols": 0}), ("gemv_q", {"cols": 8224}),
    ("gemv_q", {"cols": 96, "group_size": 64}),
    ("spmv", {"n_rows": 0}), ("spmv", {"n_rows": 1048577}), ("spmv", {"n_cols": 0}),
    ("spmv", {"n_cols": 32769}), ("spmv", {"nnz": 4194305}),
]


def _program(emu: Emulator, overlay: str, scalars: dict, *, offset: int = 0):
    """Allocate a 64 KiB buffer per pointer, program every register, return (ip, buffers)."""
    m = load_manifest(overlay)
    ip = emu.load(overlay)
    bufs = {}
    for a in m.args:
        if a["kind"] == "pointer":
            bufs[a["name"]] = buf = emu.allocate(1 << 16, np.uint8)
            buf.flush()
            addr = buf.device_address + offset
            ip.write(a["offset"], addr & 0xFFFF_FFFF)
            ip.write(a["offset"] + 4, addr >> 32)
        else:
            ip.write(a["offset"], scalars[a["name"]])
    return ip, bufs, m


@pytest.mark.parametrize("overlay", sorted(VALID))
def test_valid_register_values_run(overlay):
    emu = Emulator("pynq-z2")
    ip, _, m = _program(emu, overlay, VALID[overlay])
    ip.write(m.registers["ap_ctrl"], 1)
    assert ip.last_model is not None


@pytest.mark.parametrize("overlay,change", BAD, ids=[f"{o}-{c}" for o, c in BAD])
def test_emulator_refuses_register_values_the_ip_cannot_take(overlay, change):
    emu = Emulator("pynq-z2")
    ip, bufs, m = _program(emu, overlay, {**VALID[overlay], **change})
    out = next(a["name"] for a in m.args if a.get("direction") == "out")
    before = bufs[out].copy()
    bufs[out].invalidate()
    with pytest.raises(hl.InvalidInputError, match=rf"^{overlay}: register values") as info:
        ip.write(m.registers["ap_ctrl"], 1)
    assert any(name in str(info.value) for name in change)
    bufs[out].invalidate()
    np.testing.assert_array_equal(bufs[out], before)  # nothing written


@pytest.mark.parametrize("overlay", sorted(VALID))
def test_emulator_refuses_misaligned_pointers(overlay):
    emu = Emulator("pynq-z2")
    ip, _, m = _program(emu, overlay, VALID[overlay], offset=1)
    with pytest.raises(BusError, match="not aligned"):
        ip.write(m.registers["ap_ctrl"], 1)


#: valid values whose extents pass the 64 KiB buffers of _program
BEYOND_64K = {
    "fps": {"n": 16384, "n_samples": 1, "start": 0},
    "gemv_q": {"rows": 1024, "cols": 8192, "group_size": 32},
    "spmv": {"n_rows": 20000, "n_cols": 2, "nnz": 0},
}


@pytest.mark.parametrize("overlay", sorted(VALID))
def test_emulator_refuses_extents_beyond_the_buffers(overlay):
    emu = Emulator("pynq-z2")
    m = load_manifest(overlay)
    ip, _, _ = _program(emu, overlay, BEYOND_64K[overlay])
    with pytest.raises(BusError, match="outside every allocated buffer"):
        ip.write(m.registers["ap_ctrl"], 1)


def test_drivers_check_registers_before_touching_the_device():
    emu = Emulator("pynq-z2")
    drv = GemvQDriver(emu)
    with pytest.raises(hl.InvalidInputError, match="group_size"):
        drv.launch({"x": np.zeros(64, np.float32)}, {"y": (2, np.float32)},
                   {"rows": 2, "cols": 64, "group_size": 0}, 1.0)
    assert emu.memory.regions() == [] and not [e for e in drv.ip.log if e[0] == "w"]


def test_timing_model_with_a_zero_divisor_is_an_input_error():
    with pytest.raises(hl.InvalidInputError, match=r"divides by zero.*group_size=0"):
        model(load_manifest("gemv_q"), "pynq-z2", rows=4, cols=64, group_size=0)
