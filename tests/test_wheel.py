"""A wheel built from the repository works on its own, outside the checkout.

One module-scoped fixture builds the sdist and the wheel from it (``python -m build
--no-isolation``: no network), installs the wheel with ``--no-deps`` into a fresh venv in a
temporary folder, and gives that venv the project environment's packages through a ``.pth``
line (numpy, numba, xarray … without a download; the project's own editable ``hetlab`` is not
importable that way, since ``.pth`` files of an added folder are not processed). Then, with the
temporary folder as working directory and none of hetlab's environment overrides set, the
fresh interpreter runs the paths that read the shipped folders: the fpga emulator (overlay
manifests and HLS sources), ``include_recorded=True`` (data/recorded), the sentence loaders
(data/*.tsv), the build scripts' folder, and ``hetlab notebooks DEST``.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]

# run by the fresh venv's python; prints one JSON line of facts the tests check
PROBE = r"""
import importlib.metadata, json, sys
import numpy as np
import hetlab as hl
from hetlab._resources import checkout_dir
from hetlab.fpga import overlay_names
from hetlab.fpga.buildgen import SHARED_DIR
from hetlab.kernels.quant.minilm_eval import CALIBRATION, load_sentences

pts = hl.make_cloud(2000, np.random.default_rng(0))
fpga_idx = hl.fps(pts, 8, device="fpga")
ds = hl.compare(hl.fps, sizes=[10_000], devices=["numpy"], repeats=1, warmup=1,
                progress=False, include_recorded=True)
sents, labels = load_sentences()
cal, _ = load_sentences(CALIBRATION)
print(json.dumps({
    "file": hl.__file__,
    "version": hl.__version__,
    "metadata_version": importlib.metadata.version("hetlab"),
    "checkout": None if checkout_dir() is None else str(checkout_dir()),
    "overlays": overlay_names(),
    "fpga_equal": bool(np.array_equal(fpga_idx, hl.fps(pts, 8))),
    "sources": sorted({str(s) for s in ds["source"].values}),
    "recorded_devices": [str(d) for d, s in zip(ds["device"].values, ds["source"].values)
                         if s == "recorded"],
    "sentences": len(sents), "groups": sorted({int(g) for g in labels}),
    "calibration": len(cal),
    "build_scripts": sorted(p.name for p in SHARED_DIR.iterdir()),
}))
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 240):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | dict[str, str]]:
    pytest.importorskip("build", reason="the wheel test needs `build` (pip install -e '.[dev]')")
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "HETLAB_OVERLAYS", "HETLAB_RECORDED", "VIRTUAL_ENV"}}
    env["HETLAB_CACHE"] = str(tmp / "cache")  # the overlay is compiled from the wheel's sources
    dist = tmp / "dist"
    # sdist first, then the wheel from the unpacked sdist: MANIFEST.in is tested too
    built = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist),
                  str(REPO)], tmp, env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next(dist.glob("hetlab-*.whl"))

    venv = tmp / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    assert made.returncode == 0, made.stderr
    py = venv / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                   tmp, env).stdout.strip()
    # the project environment's packages, after the venv's own (so its hetlab wins)
    ours = {*site.getsitepackages(), sysconfig.get_path("purelib")}
    Path(purelib, "_project_env.pth").write_text("\n".join(sorted(ours)) + "\n")
    inst = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                 "--no-index", "--no-compile", "-q", str(wheel)], tmp, env)
    assert inst.returncode == 0, inst.stdout[-3000:] + inst.stderr[-3000:]
    return {"tmp": tmp, "venv": venv, "py": py, "env": env, "wheel": wheel}


def test_wheel_holds_the_shipped_folders(installed) -> None:
    import zipfile

    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for path in ["overlays/fps/overlay.toml", "overlays/spmv/hls/spmv.cpp",
                 "overlays/_build/Makefile", "data/sentences.tsv", "data/calibration.tsv",
                 "notebooks/00-tour.ipynb"]:
        assert f"hetlab/_data/{path}" in names
    recorded = sorted(REPO.glob("data/recorded/*.nc"))
    assert recorded
    assert all(f"hetlab/_data/data/recorded/{p.name}" in names for p in recorded)
    assert not any("/build/" in n and "_build" not in n for n in names)  # no build outputs
    assert "hetlab-{}.dist-info/licenses/LICENSE".format(
        installed["wheel"].name.split("-")[1]) in names


def test_installed_wheel_runs_outside_the_checkout(installed) -> None:
    out = _run([str(installed["py"]), "-c", PROBE], installed["tmp"], installed["env"])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(facts["file"]).is_relative_to(installed["venv"])  # not the checkout's hetlab
    assert facts["checkout"] is None
    assert facts["version"] == facts["metadata_version"]
    assert facts["overlays"] == sorted(p.parent.name for p in REPO.glob("overlays/*/overlay.toml"))
    assert facts["fpga_equal"]
    assert facts["sources"] == ["measured", "recorded"]
    assert facts["recorded_devices"]
    assert facts["sentences"] > 0 and facts["groups"] == [0, 1] and facts["calibration"] > 0
    assert {"Makefile", "hls.tcl", "vivado.tcl"} <= set(facts["build_scripts"])


def test_hetlab_notebooks_copies_the_series(installed) -> None:
    cli = str(installed["venv"] / "bin" / "hetlab")
    dest = installed["tmp"] / "my-notebooks"
    first = _run([cli, "notebooks", str(dest)], installed["tmp"], installed["env"])
    assert first.returncode == 0, first.stderr
    series = sorted(p.name for p in REPO.glob("notebooks/*.ipynb"))
    assert sorted(p.name for p in dest.iterdir()) == series
    assert all((dest / n).read_bytes() == (REPO / "notebooks" / n).read_bytes() for n in series)

    (dest / series[0]).write_text("my edits")
    again = _run([cli, "notebooks", str(dest)], installed["tmp"], installed["env"])
    assert again.returncode == 2
    assert "--force" in again.stderr and series[0] in again.stderr
    assert (dest / series[0]).read_text() == "my edits"  # nothing was overwritten

    forced = _run([cli, "notebooks", str(dest), "--force"], installed["tmp"], installed["env"])
    assert forced.returncode == 0, forced.stderr
    assert (dest / series[0]).read_bytes() == (REPO / "notebooks" / series[0]).read_bytes()
