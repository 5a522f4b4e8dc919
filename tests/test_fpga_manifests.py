"""Checks every overlay shares: overlay.toml agrees with its HLS source (interface pragmas,
loop labels), with the Vitis HLS register layout and with its build scripts, fits each board,
and gives a source for every figure; every overlay's HLS testbench builds and passes with the
host compiler. (fps-specific checks: test_fpga_manifest.py.)"""

from __future__ import annotations

import re
import subprocess

import pytest

from hetlab.fpga import csim, load_manifest

OVERLAYS = ["fps", "gemv_q", "spmv"]


@pytest.fixture(params=OVERLAYS)
def m(request):
    try:
        return load_manifest(request.param)
    except Exception as exc:  # pragma: no cover - an overlay not landed yet
        pytest.fail(f"{request.param}: {exc}")


def hls(m) -> str:
    return m.path(m.data["overlay"]["hls_sources"][0]).read_text()


def test_register_map_follows_the_vitis_hls_layout(m):
    assert m.registers == {"ap_ctrl": 0x00, "gie": 0x04, "ier": 0x08, "isr": 0x0C}
    assert m.bits == {"ap_start": 0, "ap_done": 1, "ap_idle": 2, "ap_ready": 3,
                      "auto_restart": 7}
    assert m.data["control"]["pointer_bits"] == 64
    offset = 0x10
    for a in m.args:  # pointer: lo, hi, reserved; scalar: data, reserved
        assert a["offset"] == offset, a["name"]
        offset += 12 if a["kind"] == "pointer" else 8
    assert offset <= m.data["control"]["span"]


def test_every_argument_has_its_interface_pragma_and_signature_order(m):
    src = hls(m)
    for a in m.args:
        assert re.search(rf"s_axilite port = {a['name']} bundle = control", src), a["name"]
        if a["kind"] == "pointer":
            assert re.search(rf"m_axi port = {a['name']} offset = slave bundle = {a['bundle']}",
                             src), a["name"]
    header = m.path(m.data["overlay"]["hls_headers"][0]).read_text()
    sig = re.search(rf"void {m.top}\(([^)]*)\)", header, re.S)[1]
    params = [re.split(r"[\s*]+", p.strip())[-1] for p in sig.split(",")]
    assert params == [a["name"] for a in m.args]
    bundles = [a["bundle"] for a in m.args if a["kind"] == "pointer"]
    assert len(set(bundles)) == len(bundles)


def test_loop_labels_exist_in_the_source(m):
    src = hls(m)
    names = [lp["name"] for lp in m.data["loops"]]
    names += [i["name"] for lp in m.data["loops"] for i in lp.get("inner", ())]
    for name in names:
        assert re.search(rf"^\s*{name}:", src, re.M), name
    # the II the model assumes is the II the pragma asks for (first pragma after the label)
    for lp in [*m.data["loops"], *(i for top in m.data["loops"] for i in top.get("inner", ()))]:
        if lp.get("pipelined"):
            after = src[re.search(rf"^\s*{lp['name']}:", src, re.M).end():]
            assert int(re.search(r"PIPELINE II = (\d+)", after)[1]) == lp["ii"], lp["name"]


@pytest.mark.parametrize("board", ["pynq-z2", "kv260"])
def test_makefile_and_tcl_agree_with_the_manifest(m, board):
    build = m.root / "build"
    mk, viv, tcl = ((build / f).read_text() for f in ("Makefile", "vivado.tcl", "hls.tcl"))
    b, ov = m.board(board), m.data["overlay"]
    assert f"PART_{board} := {b['part']}" in mk
    assert f"BOARD_PART_{board} := {b['board_part']}" in mk
    assert float(re.search(r"CLOCK_PERIOD_NS := ([\d.]+)", mk)[1]) == pytest.approx(
        1e3 / b["clock_mhz"])
    assert float(re.search(r"set pl_clock_mhz (\d+)", viv)[1]) == b["clock_mhz"]
    assert f"create_bd_cell -type ip -vlnv {ov['vlnv']} {ov['ip_instance']}" in viv
    assert b["bitstream"] == f"build/out/{board}/{m.name}.bit"
    assert f"$outdir/{m.name}.bit" in viv and f"TOP := {m.name}" in mk
    ports = re.search(r"foreach port \{([^}]*)\}", viv)[1].split()
    assert ports == [f"m_axi_{a['bundle']}" for a in m.args if a["kind"] == "pointer"]
    vendor, library, name, version = ov["vlnv"].split(":")
    assert (f"export_design -format ip_catalog -vendor {vendor} -library {library} "
            f"-ipname {name} -version {version}") in tcl
    assert f"set_top {m.top}" in tcl
    for rel in [*ov["hls_sources"], *ov["hls_headers"], ov["testbench"]]:
        assert f"../{rel}" in tcl and f"../{rel}" in mk
    assert "-ffp-contract=off" in tcl and "fmadd -impl none" in tcl
    assert "-ffp-contract=off" in ov["cflags"]
    assert "m_axi_max_widen_bitwidth 0" in tcl and m.data["m_axi"]["data_bits"] == 32


@pytest.mark.parametrize("board", ["pynq-z2", "kv260"])
def test_resources_fit_the_board(m, board):
    r, b = m.data["resources"], m.board(board)
    assert r["dsp"] <= b["dsp"] and r["bram36"] <= b["bram36"] and r["lut"] <= b["lut"]


def test_every_number_has_a_source(m):
    for section in ("limits", "control", "m_axi", "launch", "resources"):
        assert m.data[section]["source"].strip(), section
    for lp in m.data["loops"]:
        assert lp["source"].strip()
        for inner in lp.get("inner", ()):
            assert inner["source"].strip()
    for board in m.boards:
        for key in ("clock", "hp_port", "ddr", "mmio", "coherent", "capacity"):
            assert m.board(board)[f"{key}_source"].strip(), (board, key)
    # the launch cost counts the driver's register writes: two per pointer, one per scalar,
    # one ap_start (checked against the driver's log in each overlay's tests)
    n_ptr = sum(a["kind"] == "pointer" for a in m.args)
    assert m.data["launch"]["mmio_writes"] == 2 * n_ptr + (len(m.args) - n_ptr) + 1


def test_report_prints_modeled_figures_at_two_sizes_with_their_sources(m, capsys):
    from hetlab.fpga import report

    assert report.main(["--board", "kv260", "--overlay", m.name]) == 0
    out = capsys.readouterr().out
    assert out.count(f"MODELED {m.name} on kv260") == 2 and "not measured" in out
    writes = m.data["launch"]["mmio_writes"]
    assert "UG1399" in out and "DS987" in out and f"launch {writes} writes x 15 us" in out
    for lp in m.data["loops"]:
        assert f"loop {lp['name']}:" in out


def test_hls_testbench_builds_and_passes(m, tmp_path):
    ov = m.data["overlay"]
    exe = tmp_path / f"{m.name}_tb"
    cmd = [csim.compiler(), *[f for f in ov["cflags"] if f != "-fPIC"], "-o", str(exe),
           *[str(m.path(s)) for s in ov["hls_sources"]], str(m.path(ov["testbench"]))]
    build = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert build.returncode == 0 and "warning" not in build.stderr, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0 and "all cases passed" in run.stdout, run.stdout
