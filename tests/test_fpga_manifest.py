"""overlay.toml agrees with the HLS source, the build scripts and the Vitis HLS register
layout, fits each board, and gives a source for every figure."""

from __future__ import annotations

import re

import pytest

from hetlab.errors import InvalidInputError
from hetlab.fpga import load_manifest
from hetlab.fpga.manifest import evaluate, overlay_names

M = load_manifest("fps")
BUILD = M.root / "build"
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


def test_every_argument_has_its_interface_pragma():
    for a in M.args:
        assert re.search(rf"s_axilite port = {a['name']} bundle = control", HLS), a["name"]
        if a["kind"] == "pointer":
            assert re.search(rf"m_axi port = {a['name']} offset = slave bundle = {a['bundle']}",
                             HLS)
    assert re.search(r"void fps\(const float \*points, uint32_t \*out, uint32_t n, "
                     r"uint32_t n_samples, uint32_t start\)", HEADER)
    assert [a["name"] for a in M.args] == ["points", "out", "n", "n_samples", "start"]


def test_register_map_follows_the_vitis_hls_layout():
    assert M.registers == {"ap_ctrl": 0x00, "gie": 0x04, "ier": 0x08, "isr": 0x0C}
    assert M.bits == {"ap_start": 0, "ap_done": 1, "ap_idle": 2, "ap_ready": 3,
                      "auto_restart": 7}
    assert M.data["control"]["pointer_bits"] == 64
    offset = 0x10
    for a in M.args:  # pointer: lo, hi, reserved; scalar: data, reserved
        assert a["offset"] == offset, a["name"]
        offset += 12 if a["kind"] == "pointer" else 8
    assert offset <= M.data["control"]["span"]


def test_loop_labels_exist_in_the_source():
    names = [lp["name"] for lp in M.data["loops"]]
    names += [i["name"] for lp in M.data["loops"] for i in lp.get("inner", ())]
    for name in names:
        assert re.search(rf"^\s*{name}:", HLS, re.M), name


@pytest.mark.parametrize("board", M.boards)
def test_makefile_and_tcl_agree_with_the_manifest(board):
    mk = (BUILD / "Makefile").read_text()
    b = M.board(board)
    assert f"PART_{board} := {b['part']}" in mk
    assert f"BOARD_PART_{board} := {b['board_part']}" in mk
    period = float(re.search(r"CLOCK_PERIOD_NS := ([\d.]+)", mk)[1])
    assert period == pytest.approx(1e3 / b["clock_mhz"])
    viv = (BUILD / "vivado.tcl").read_text()
    assert float(re.search(r"set pl_clock_mhz (\d+)", viv)[1]) == b["clock_mhz"]
    assert f"create_bd_cell -type ip -vlnv {M.data['overlay']['vlnv']} " \
           f"{M.data['overlay']['ip_instance']}" in viv
    assert b["bitstream"] == f"build/out/{board}/fps.bit"
    assert "OUT := out/$(BOARD)" in mk and "$(OUT)/fps.bit" in viv.replace("$outdir", "$(OUT)")


def test_hls_script_exports_the_manifests_vlnv_and_top():
    tcl = (BUILD / "hls.tcl").read_text()
    vendor, library, name, version = M.data["overlay"]["vlnv"].split(":")
    assert (f"export_design -format ip_catalog -vendor {vendor} -library {library} "
            f"-ipname {name} -version {version}") in tcl
    assert f"set_top {M.top}" in tcl
    for rel in [*M.data["overlay"]["hls_sources"], M.data["overlay"]["testbench"]]:
        assert f"../{rel}" in tcl
    assert "-ffp-contract=off" in tcl and "fmadd -impl none" in tcl
    assert "-ffp-contract=off" in M.data["overlay"]["cflags"]  # the C-sim rounds the same way
    assert "m_axi_max_widen_bitwidth 0" in tcl and M.data["m_axi"]["data_bits"] == 32


@pytest.mark.parametrize("board", M.boards)
def test_resources_fit_the_board(board):
    r, b = M.data["resources"], M.board(board)
    assert r["dsp"] <= b["dsp"] and r["bram36"] <= b["bram36"] and r["lut"] <= b["lut"]
    # 4 on-chip arrays of max_points 32-bit words plus the pick buffer, 1024 words per BRAM36
    assert r["bram36"] >= 5 * M.limits["max_points"] // 1024


def test_every_number_has_a_source():
    for section in ("limits", "control", "m_axi", "launch", "resources"):
        assert M.data[section]["source"].strip(), section
    for lp in M.data["loops"]:
        assert lp["source"].strip()
        for inner in lp.get("inner", ()):
            assert inner["source"].strip()
    for board in M.boards:
        b = M.board(board)
        for key in ("clock", "hp_port", "ddr", "mmio", "coherent", "capacity"):
            assert b[f"{key}_source"].strip(), (board, key)


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
