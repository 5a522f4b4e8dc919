"""The timing model: formulas, composition over loops, bandwidth bounds, scaling, labels."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from hetlab.fpga import load_manifest, model
from hetlab.fpga.manifest import Manifest
from hetlab.fpga.timing import loop_cycles, pipelined_cycles, port_bandwidth

M = load_manifest("fps")


def test_pipelined_loop_formula():
    assert pipelined_cycles(depth=20, ii=1, trip=1) == 20
    assert pipelined_cycles(depth=20, ii=1, trip=100) == 119
    assert pipelined_cycles(depth=5, ii=3, trip=10) == 32
    assert pipelined_cycles(depth=5, ii=1, trip=0) == 0


def test_nested_loops_compose():
    loop = {"trip": "n - 1", "pipelined": False, "overhead": 2, "inner": [
        {"trip": "ceil(n / lanes)", "pipelined": True, "depth": 10, "ii": 2},
        {"trip": "lanes", "pipelined": True, "depth": 3, "ii": 1},
    ]}
    n, lanes = 10, 4
    assert loop_cycles(loop, {"n": n, "lanes": lanes}) == (n - 1) * (2 + (10 + 2 * 2) + (3 + 3))


def test_fps_model_by_hand_on_pynq_z2():
    n, s = 1000, 100
    t = model("fps", "pynq-z2", n=n, n_samples=s, start=0)
    f = 100e6
    scan = 20 + (math.ceil(n / 4) - 1)
    sample = (s - 1) * (6 + scan + (3 + 3))
    assert t.loops[1].cycles == sample
    assert t.compute_s == pytest.approx(sample / f)
    # load: 3n beats at 4 B/cycle = 400 MB/s < HP port 800 MB/s < DDR 2.1 GB/s
    assert port_bandwidth(M, "pynq-z2") == pytest.approx(400e6)
    assert t.transfer_in_s == pytest.approx(max((70 + 3 * n - 1) / f, 12 * n / 400e6))
    assert t.transfer_out_s == pytest.approx((68 + s - 1) / f)
    assert t.launch_s == pytest.approx((8 + 1) * 30e-6)
    assert t.total_s == pytest.approx(t.launch_s + t.transfer_in_s + t.compute_s
                                      + t.transfer_out_s)
    assert t.source == "modeled" and str(t).startswith("MODELED")
    assert "not measured" in str(t)


def test_compute_scales_with_samples_times_points_over_lanes():
    a = model("fps", "pynq-z2", n=4096, n_samples=257, start=0)
    b = model("fps", "pynq-z2", n=8192, n_samples=513, start=0)
    # (s-1)·(n/4 + const): doubling both about quadruples compute
    assert 3.9 < b.compute_s / a.compute_s < 4.1
    c = model("fps", "pynq-z2", n=4096, n_samples=513, start=0)
    assert c.compute_s / a.compute_s == pytest.approx(2.0)
    assert b.transfer_in_s / a.transfer_in_s == pytest.approx(2.0, rel=0.01)


def test_bandwidth_bound_wins_when_the_port_is_slower_than_the_pipeline():
    data = {**M.data, "boards": {"slow": {**M.board("pynq-z2"), "hp_port_mbps": 40.0}}}
    slow = Manifest(M.root, data)
    t = model(slow, "slow", n=1000, n_samples=10, start=0)
    assert t.loops[0].bound == "bandwidth"
    assert t.transfer_in_s == pytest.approx(12_000 / 40e6)
    assert model(M, "pynq-z2", n=1000, n_samples=10, start=0).loops[0].bound == "cycles"


def test_boards_differ_only_where_their_figures_do():
    z2 = model("fps", "pynq-z2", n=2000, n_samples=100, start=0)
    kv = model("fps", "kv260", n=2000, n_samples=100, start=0)
    assert kv.compute_s == z2.compute_s  # same clock, same loops
    assert kv.launch_s == pytest.approx(z2.launch_s / 2)  # 15 us vs 30 us per MMIO access
    assert kv.as_dict()["source"] == "modeled"


def test_dataclass_is_frozen():
    t = model("fps", "pynq-z2", n=10, n_samples=2, start=0)
    with pytest.raises(AttributeError):
        t.compute_s = 0.0  # type: ignore[misc]
    assert replace(t, launch_s=0.0).total_s == t.kernel_s
