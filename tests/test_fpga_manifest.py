"""What is particular to the fps manifest (its limits, its buffers) and to the manifest reader.
The checks every overlay shares — register layout, pragmas, loop labels, build scripts, board
fit, sources — are in test_fpga_manifests.py."""

from __future__ import annotations

import re

import pytest

from hetlab.errors import InvalidInputError
from hetlab.fpga import load_manifest
from hetlab.fpga.manifest import evaluate, overlay_names

M = load_manifest("fps")
HLS = (M.root / "hls" / "fps.cpp").read_text()
HEADER = (M.root / "hls" / "fps.h").read_text()


def test_overlays_are_found():
    assert "fps" in overlay_names()


def test_limits_equal_the_hls_constants_and_pragmas():
    assert re.search(r"#define FPS_MAX_POINTS (\d+)", HEADER)[1] == str(M.limits["max_points"])
    assert re.search(r"#define FPS_LANES (\d+)", HEADER)[1] == str(M.limits["lanes"])
    factors = set(re.findall(r"ARRAY_PARTITION variable = \w+ cyclic factor = (\d+)", HLS))
    assert factors == {str(M.limits["lanes"])}
    depths = dict(re.findall(r"m_axi port = (\w+) .*?depth = (\d+)", HLS))
    assert int(depths["points"]) == 3 * M.limits["max_points"]
    assert int(depths["out"]) == M.limits["max_points"]


def test_bram_estimate_holds_the_on_chip_buffers():
    r = M.data["resources"]
    # 4 on-chip arrays of max_points 32-bit words plus the pick buffer, 1024 words per BRAM36
    assert r["bram36"] >= 5 * M.limits["max_points"] // 1024


def test_expressions_are_safe():
    assert evaluate("ceil(n / lanes) + max(1, n_samples - 1)", {"n": 9, "lanes": 4,
                                                               "n_samples": 1}) == 4
    for bad in ("__import__('os')", "n.real", "[n]", "n ** 2"):
        with pytest.raises(InvalidInputError):
            evaluate(bad, {"n": 2})
    with pytest.raises(InvalidInputError, match="unknown name 'm'"):
        evaluate("m + 1", {"n": 2})


def test_unknown_board_and_overlay_list_the_choices():
    with pytest.raises(InvalidInputError, match="pynq-z2"):
        M.board("zcu104")
    with pytest.raises(InvalidInputError, match="'fps'"):
        load_manifest("nope")
