"""The pynq adapter against a stand-in ``pynq`` module that records calls (its IP and buffers
are the emulator's), the "no board found" path, the self-test, and import hygiene."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

import hetlab as hl
from hetlab.fpga import Emulator, PynqDevice, csim, load_manifest, selftest
from hetlab.fpga.manifest import overlay_names
from hetlab.kernels.pointcloud import reference
from hetlab.kernels.pointcloud.fpga_driver import FpsDriver

needs_cxx = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")


class RecordingIP:
    """What ``getattr(overlay, "fps_0")`` is on a board: MMIO read/write."""

    def __init__(self, ip, calls):
        self._ip, self._calls = ip, calls

    def read(self, offset):
        value = self._ip.read(offset)
        self._calls.append(("read", offset, value))
        return value

    def write(self, offset, value):
        self._calls.append(("write", offset, value))
        self._ip.write(offset, value)


def fake_pynq(devices=("board0",)) -> types.ModuleType:
    """A stand-in for ``pynq``: Device.devices, Overlay, allocate — backed by the emulator."""
    mod = types.ModuleType("pynq")
    mod.calls = []
    emu = Emulator("pynq-z2")
    mod.emulator = emu

    class Device:
        pass

    Device.devices = list(devices)

    class Overlay:
        def __init__(self, bitfile):
            mod.calls.append(("Overlay", bitfile))
            name = os.path.splitext(os.path.basename(bitfile))[0]  # build/out/<board>/<name>.bit
            self.ip_dict = {f"{name}_0": {}}
            setattr(self, f"{name}_0", RecordingIP(emu.load(name), mod.calls))

    def allocate(shape, dtype):
        mod.calls.append(("allocate", tuple(np.atleast_1d(shape)), np.dtype(dtype)))
        buf = emu.allocate(shape, dtype)
        buf.freebuffer = lambda: (mod.calls.append(("freebuffer",)), emu.free(buf))
        return buf

    mod.Device, mod.Overlay, mod.allocate = Device, Overlay, allocate
    return mod


@pytest.fixture
def overlays_with_bitstreams(tmp_path, monkeypatch):
    """A copy of overlays/ where every pynq-z2 bitstream exists (empty stand-in files);
    returns the fps one."""
    root = tmp_path / "overlays"
    for name in overlay_names():
        src = load_manifest(name).root
        shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("out", "hls_*"))
        bit = root / name / "build" / "out" / "pynq-z2" / f"{name}.bit"
        bit.parent.mkdir(parents=True)
        bit.write_bytes(b"")
    monkeypatch.setenv("HETLAB_OVERLAYS", str(root))
    return root / "fps" / "build" / "out" / "pynq-z2" / "fps.bit"


@needs_cxx
def test_driver_on_the_pynq_adapter_makes_the_calls_a_board_needs(
        monkeypatch, overlays_with_bitstreams, rng):
    pynq = fake_pynq()
    monkeypatch.setitem(sys.modules, "pynq", pynq)
    dev = PynqDevice("pynq-z2")
    assert dev.timing_source == "measured"
    pts = rng.random((40, 3), dtype=np.float32)
    got = FpsDriver(dev)(pts, 12, start=3)
    np.testing.assert_array_equal(got, reference.fps(pts, 12, 3))
    calls = pynq.calls
    assert calls[0] == ("Overlay", str(overlays_with_bitstreams.resolve()))
    assert calls[1:3] == [("allocate", (40, 3), np.dtype(np.float32)),
                          ("allocate", (12,), np.dtype(np.uint32))]
    writes = [c[1:] for c in calls if c[0] == "write"]
    assert [w[0] for w in writes] == [0x10, 0x14, 0x1C, 0x20, 0x28, 0x30, 0x38, 0x00]
    assert writes[-1] == (0x00, 1) and writes[4:7] == [(0x28, 40), (0x30, 12), (0x38, 3)]
    assert calls[-2:] == [("freebuffer",), ("freebuffer",)]
    assert pynq.emulator.memory.regions() == []


def test_no_board_found_says_how_to_fix_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynq", fake_pynq(devices=()))
    monkeypatch.delenv("XILINX_XRT", raising=False)
    with pytest.raises(hl.BackendUnavailable, match=r"no board found.*XILINX_XRT is not set") as e:
        PynqDevice("pynq-z2")
    assert "xrt_setup.sh" in str(e.value)

    class NoXrtDevice:  # what pynq 3.1 does without XRT: Device.devices raises
        @property
        def devices(self):
            raise RuntimeError("No devices found, is the XRT environment sourced?")

    broken = fake_pynq()
    broken.Device = NoXrtDevice()
    monkeypatch.setitem(sys.modules, "pynq", broken)
    with pytest.raises(hl.BackendUnavailable, match=r"XRT environment sourced.*XILINX_XRT"):
        PynqDevice("pynq-z2")


def test_pynq_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynq", None)  # import pynq → ImportError
    with pytest.raises(hl.BackendUnavailable, match="no board found: pynq is not installed"):
        PynqDevice("kv260")


@needs_cxx
def test_missing_bitstream_says_how_to_build_it(monkeypatch, overlays_with_bitstreams):
    monkeypatch.setitem(sys.modules, "pynq", fake_pynq())
    with pytest.raises(hl.HetlabError, match=r"make -C .*BOARD=kv260"):
        PynqDevice("kv260").load("fps")


def test_selftest_without_a_board_explains_and_exits_nonzero():
    proc = subprocess.run([sys.executable, "-m", "hetlab.fpga.selftest", "--board", "pynq-z2"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert proc.returncode == 2
    assert "no board found" in proc.stderr and "emulator" in proc.stderr
    assert "Traceback" not in proc.stderr


@needs_cxx
def test_selftest_on_a_stand_in_board_writes_calibration(
        monkeypatch, overlays_with_bitstreams, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "pynq", fake_pynq())
    out = tmp_path / "cal.json"
    assert selftest.main(["--board", "pynq-z2", "--out", str(out), "--sizes", "64", "300"]) == 0
    data = json.loads(out.read_text())
    assert [r["n"] for r in data["records"] if r["overlay"] == "fps"] == [64, 300]
    assert {r["overlay"] for r in data["records"]} == set(overlay_names())
    assert all(r["identical"] and r["modeled_source"] == "modeled" for r in data["records"])
    assert "modeled" in capsys.readouterr().out


def test_import_hetlab_imports_neither_pynq_nor_the_emulator():
    code = ("import sys, hetlab; "
            "print(sorted(m for m in sys.modules if m == 'pynq' or m.startswith('hetlab.fpga')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True, env={"PYTHONPATH": ":".join(sys.path),
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "[]"


@needs_cxx
def test_dispatch_gives_plain_indices_and_bench_labels_figures_modeled():
    from hetlab.fpga import model

    pts = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0, 0], [0, 2, 0]], dtype=np.float32)
    got = hl.fps(pts, 3, device="fpga")
    assert isinstance(got, np.ndarray) and got.tolist() == [0, 3, 1]
    with pytest.raises(hl.KernelNotSupported, match="float32"):
        hl.fps(pts.astype(np.float64), 3, device="fpga")
    ds = hl.compare(hl.fps, sizes=[300], devices=["numpy", "fpga"], repeats=2, progress=False)
    assert ds["source"].sel(device="fpga").item() == "modeled"
    assert ds["source"].sel(device="numpy").item() == "measured"
    assert bool(ds["verified"].sel(device="fpga", size=300))
    t = model("fps", "pynq-z2", n=300, n_samples=300, start=0)
    assert ds["time_s"].sel(device="fpga", size=300).values.tolist() == [
        t.compute_s + t.launch_s] * 2
    assert ds["transfer_in_s"].sel(device="fpga", size=300).item() == t.transfer_in_s
