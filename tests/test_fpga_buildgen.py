"""The overlay build generator (hetlab.fpga.buildgen) and the shared build in overlays/_build.
What each overlay's generated parameters hold is checked in test_fpga_manifests.py."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys

import pytest

from hetlab.errors import InvalidInputError
from hetlab.fpga import buildgen, load_manifest, overlay_names
from hetlab.fpga.manifest import Manifest

REPO = buildgen.SHARED_DIR.parents[1]


def test_shared_build_names_no_overlay_and_overlays_keep_no_build_copy():
    scripts = ("Makefile", "hls.tcl", "vivado.tcl")
    for f in scripts:
        lines = (buildgen.SHARED_DIR / f).read_text().splitlines()
        code = "\n".join(ln for ln in lines if not ln.lstrip().startswith("#"))
        for name in overlay_names():
            assert not re.search(rf"\b{name}\b", code), (f, name)
    copies = [p for name in overlay_names() for p in (REPO / "overlays" / name / "build").glob("*")
              if p.name in scripts]
    assert copies == []


def test_write_leaves_unchanged_files_alone(tmp_path):
    assert {p.name for p in buildgen.write("fps", tmp_path)} == {"overlay.mk", "overlay.tcl"}
    assert buildgen.write("fps", tmp_path) == []


def test_bad_build_fields_are_refused_naming_the_field(tmp_path):
    m = load_manifest("fps")
    boards = {**m.data["boards"], "kv260": {**m.board("kv260"), "bitstream": "fps.bit"}}
    bad = dataclasses.replace(m, data={**m.data, "boards": boards})
    with pytest.raises(InvalidInputError, match=r"\[boards.kv260\] bitstream must be build/"):
        buildgen.render(bad, tmp_path)
    overlay = {**m.data["overlay"], "ip_instance": "fps 0"}
    with pytest.raises(InvalidInputError, match="ip_instance"):
        buildgen.render(Manifest(m.root, {**m.data, "overlay": overlay}), tmp_path)
    overlay = {k: v for k, v in m.data["overlay"].items() if k != "vlnv"}
    with pytest.raises(InvalidInputError, match="lacks or mistypes"):
        buildgen.render(Manifest(m.root, {**m.data, "overlay": overlay}), tmp_path)


def test_cli_check_writes_nothing(tmp_path, capsys):
    assert buildgen.main(["spmv", "--check", "--out", str(tmp_path)]) == 0
    assert "spmv: build parameters OK" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    assert buildgen.main(["nope", "--check"]) == 1


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_generates_the_parameters_and_runs_the_shared_scripts(tmp_path):
    cmd = ["make", "-n", "-C", str(buildgen.SHARED_DIR), "OVERLAY=gemv_q", "BOARD=kv260",
           f"BUILD={tmp_path}", f"PYTHON={sys.executable}"]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "overlay.mk").is_file() and (tmp_path / "overlay.tcl").is_file()
    hls, viv = buildgen.SHARED_DIR / "hls.tcl", buildgen.SHARED_DIR / "vivado.tcl"
    assert f"cd {tmp_path} && vitis_hls -f {hls} -tclargs kv260 ip" in run.stdout
    assert (f"vivado -mode batch -source {viv} -tclargs kv260 "
            "hls_kv260/solution1/impl/export.zip") in run.stdout
    bad = subprocess.run([*cmd[:-2], "BOARD=zcu104", *cmd[-2:]], capture_output=True,
                         text=True, check=False)
    assert bad.returncode != 0 and "BOARD must be one of pynq-z2 kv260" in bad.stderr
