"""Checks every overlay shares: overlay.toml agrees with its HLS source (interface pragmas,
loop labels), with the Vitis HLS register layout and with the build it generates
(hetlab.fpga.buildgen feeding overlays/_build), fits each board, and gives a source for every
figure; every overlay's HLS testbench builds and passes with the host compiler. (fps-specific
checks: test_fpga_manifest.py; the generator itself: test_fpga_buildgen.py.)"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from hetlab.fpga import buildgen, csim, load_manifest

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


def _tcl_values(text: str) -> dict[str, object]:
    """``set x v`` / ``set x {a b}`` -> str / list; ``array set x {k v ...}`` -> dict."""
    out: dict[str, object] = {}
    for line in text.splitlines():
        if mt := re.fullmatch(r"array set (\w+) \{(.*)\}", line):
            words = mt[2].split()
            out[mt[1]] = dict(zip(words[::2], words[1::2], strict=True))
        elif mt := re.fullmatch(r"set (\w+) \{(.*)\}", line):
            out[mt[1]] = mt[2].split()
        elif mt := re.fullmatch(r"set (\w+) (\S+)", line):
            out[mt[1]] = mt[2]
    return out


@pytest.mark.parametrize("board", ["pynq-z2", "kv260"])
def test_generated_build_parameters_are_the_manifest_values(m, board, tmp_path):
    buildgen.write(m.root, tmp_path)
    mk = (tmp_path / "overlay.mk").read_text()
    tcl = _tcl_values((tmp_path / "overlay.tcl").read_text())
    b, ov = m.board(board), m.data["overlay"]
    assert tcl["part"][board] == b["part"] and tcl["board_part"][board] == b["board_part"]
    assert float(tcl["clock_mhz"][board]) == b["clock_mhz"]
    assert float(tcl["clock_period_ns"][board]) == pytest.approx(1e3 / b["clock_mhz"])
    assert (tcl["top"], tcl["vlnv"], tcl["ip_instance"]) == (m.top, ov["vlnv"],
                                                             ov["ip_instance"])
    assert tcl["m_axi_ports"] == [f"m_axi_{a['bundle']}" for a in m.args
                                  if a["kind"] == "pointer"]
    # sources: relative to the build folder, naming the overlay's files
    for key in ("hls_sources", "hls_headers"):
        assert [(tmp_path / p).resolve() for p in tcl[key]] == [
            m.path(p).resolve() for p in ov[key]]
    assert (tmp_path / tcl["testbench"]).resolve() == m.path(ov["testbench"]).resolve()
    inputs = re.search(r"^HLS_INPUTS := (.*)$", mk, re.M)[1].split()
    assert [(tmp_path / p).resolve() for p in inputs] == [
        m.path(p).resolve() for p in [*ov["hls_sources"], *ov["hls_headers"], ov["testbench"]]]
    # results: where [boards.<b>].bitstream says, relative to the overlay's build folder
    assert b["bitstream"] == f"build/{tcl['bitstream'][board]}"
    assert f"BIT_{board} := {tcl['bitstream'][board]}" in mk
    assert tcl["hwh"][board] == tcl["bitstream"][board].removesuffix(".bit") + ".hwh"
    assert re.search(r"^BOARDS := (.*)$", mk, re.M)[1].split() == m.boards
    assert "-ffp-contract=off" in tcl["hls_cflags"] and "-ffp-contract=off" in ov["cflags"]
    assert m.data["m_axi"]["data_bits"] == 32  # hls.tcl keeps ports unwidened (32-bit beats)


_STUB = """proc unknown args { puts "CALL $args"; return "" }
proc exec args { puts "CALL exec $args" }
proc glob args { return [lindex $args end] }
rename file _file
proc file {cmd args} {
    if {$cmd eq "copy"} { puts "CALL file copy $args" } else { _file $cmd {*}$args } }
set script [lindex $argv 0]
set argv [lrange $argv 1 end]
source $script
"""


@pytest.mark.skipif(shutil.which("tclsh") is None, reason="needs tclsh")
@pytest.mark.parametrize("board", ["pynq-z2", "kv260"])
def test_shared_build_scripts_issue_the_manifest_values(m, board, tmp_path):
    """Run the shared hls.tcl and vivado.tcl under tclsh with every Vitis/Vivado command
    stubbed to print itself: the commands name this overlay's part, clock, VLNV, ports…"""
    buildgen.write(m.root, tmp_path)
    (tmp_path / "stub.tcl").write_text(_STUB)

    def calls(script: str, *args: str) -> str:
        run = subprocess.run(["tclsh", "stub.tcl", str(buildgen.SHARED_DIR / script), *args],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60,
                             check=False)
        assert run.returncode == 0, run.stderr
        return run.stdout

    b, ov = m.board(board), m.data["overlay"]
    clock = f"{b['clock_mhz']:g}"
    hls_log = calls("hls.tcl", board, "ip")
    vendor, library, name, version = ov["vlnv"].split(":")
    for line in (f"set_top {m.top}", f"set_part {b['part']}",
                 f"create_clock -period {1e3 / b['clock_mhz']:g} -name default",
                 "config_interface -m_axi_max_widen_bitwidth 0", "config_op fmadd -impl none",
                 f"export_design -format ip_catalog -vendor {vendor} -library {library} "
                 f"-ipname {name} -version {version}"):
        assert f"CALL {line}\n" in hls_log, line
    added = re.findall(r"^CALL add_files (?:-tb )?(\S+)", hls_log, re.M)
    assert [(tmp_path / p).resolve() for p in added] == [
        m.path(p).resolve() for p in [*ov["hls_sources"], *ov["hls_headers"], ov["testbench"]]]
    assert hls_log.count("-cflags -ffp-contract=off") == len(ov["hls_sources"]) + 1

    viv = calls("vivado.tcl", board, f"hls_{board}/solution1/impl/export.zip")
    assert f"-part {b['part']}\n" in viv and f"set_property board_part {b['board_part']}" in viv
    assert re.search(rf"FREQMHZ {clock} ", viv)
    assert f"CALL create_bd_cell -type ip -vlnv {ov['vlnv']} {ov['ip_instance']}\n" in viv
    ports = re.findall(rf"Master /{ov['ip_instance']}/(m_axi_\w+)", viv)
    assert ports == [f"m_axi_{a['bundle']}" for a in m.args if a["kind"] == "pointer"]
    result = b["bitstream"].removeprefix("build/")
    assert re.search(rf"file copy -force \S+\.bit {re.escape(result)}$", viv, re.M)
    assert re.search(rf"file copy -force \S+\.hwh {re.escape(result[:-4])}\.hwh$", viv, re.M)


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
