"""The shipped-files finder (hetlab._resources), ``hetlab notebooks``, the version in one place
and the project files a user expects (LICENSE, CITATION.cff, CHANGELOG.md, CONTRIBUTING.md)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

import hetlab
from hetlab import _resources
from hetlab.cli import main
from hetlab.errors import HetlabError, InvalidInputError

REPO = Path(__file__).resolve().parents[1]


def test_checkout_reads_the_top_level_folders() -> None:
    assert _resources.checkout_dir() == REPO
    for folder in _resources.FOLDERS:
        assert _resources.resource_dir(folder) == REPO / folder


def test_unknown_folder_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError, match=r"folder must be one of .*got 'overlay'"):
        _resources.resource_dir("overlay")


def test_installed_layout_reads_the_packaged_copy(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "site-packages" / "hetlab"
    (pkg / "_data" / "data").mkdir(parents=True)
    monkeypatch.setattr(_resources, "_PACKAGE", pkg)
    assert _resources.checkout_dir() is None
    assert _resources.resource_dir("data") == pkg / "_data" / "data"
    # a missing folder still names the place this installation should hold it
    assert _resources.resource_dir("overlays") == pkg / "_data" / "overlays"


def test_checkout_wins_over_a_stale_packaged_copy(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "repo" / "hetlab"
    (pkg / "_data" / "overlays").mkdir(parents=True)
    (tmp_path / "repo" / "overlays").mkdir()
    (tmp_path / "repo" / "pyproject.toml").write_text("")
    monkeypatch.setattr(_resources, "_PACKAGE", pkg)
    assert _resources.resource_dir("overlays") == tmp_path / "repo" / "overlays"
    assert _resources.resource_dir("data") == pkg / "_data" / "data"


def test_every_reader_of_the_shipped_folders_uses_the_finder(monkeypatch) -> None:
    from hetlab.fpga import buildgen, manifest
    from hetlab.kernels.quant import minilm_eval
    from hetlab.recorded import recorded_dir

    monkeypatch.delenv("HETLAB_OVERLAYS", raising=False)
    monkeypatch.delenv("HETLAB_RECORDED", raising=False)
    assert manifest.overlays_dir() == _resources.resource_dir("overlays")
    assert buildgen.SHARED_DIR == _resources.resource_dir("overlays") / "_build"
    assert recorded_dir() == _resources.resource_dir("data") / "recorded"
    assert minilm_eval.SENTENCES.parent == _resources.resource_dir("data")
    assert minilm_eval.CALIBRATION.parent == _resources.resource_dir("data")
    # no other module locates files from its own path (the way a wheel breaks)
    users = sorted(str(p.relative_to(REPO)) for p in (REPO / "hetlab").rglob("*.py")
                   if "__file__" in p.read_text(encoding="utf-8"))
    assert users == ["hetlab/_resources.py"]


def test_copy_notebooks_never_overwrites_without_force(tmp_path) -> None:
    series = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    written = _resources.copy_notebooks(tmp_path / "a" / "b")
    assert [p.name for p in written] == series
    (tmp_path / "a" / "b" / series[-1]).write_text("mine")
    with pytest.raises(InvalidInputError, match=rf"already holds .*{series[-1]}.*--force"):
        _resources.copy_notebooks(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b" / series[-1]).read_text() == "mine"
    _resources.copy_notebooks(tmp_path / "a" / "b", force=True)
    assert (tmp_path / "a" / "b" / series[-1]).read_bytes() == \
        (REPO / "notebooks" / series[-1]).read_bytes()


def test_copy_notebooks_refuses_a_file_and_an_empty_installation(tmp_path, monkeypatch) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(InvalidInputError, match="dest must be a folder"):
        _resources.copy_notebooks(tmp_path / "f")
    monkeypatch.setattr(_resources, "_PACKAGE", tmp_path / "site-packages" / "hetlab")
    with pytest.raises(HetlabError, match="holds no notebooks"):
        _resources.copy_notebooks(tmp_path / "g")


def test_cli_notebooks(tmp_path, capsys) -> None:
    n = len(list((REPO / "notebooks").glob("*.ipynb")))
    assert main(["notebooks", str(tmp_path / "nb")]) == 0
    assert f"copied {n} notebooks" in capsys.readouterr().out
    assert main(["notebooks", str(tmp_path / "nb")]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["notebooks", str(tmp_path / "nb"), "--force"]) == 0


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_version_is_written_once() -> None:
    proj = _pyproject()
    assert "version" not in proj["project"] and "version" in proj["project"]["dynamic"]
    assert proj["tool"]["setuptools"]["dynamic"]["version"] == \
        {"attr": "hetlab._version.__version__"}
    from hetlab._version import __version__

    assert hetlab.__version__ is __version__
    # the installed metadata (make reinstalls when hetlab/_version.py changes)
    assert importlib.metadata.version("hetlab") == hetlab.__version__


def test_license_matches_the_spdx_expression() -> None:
    assert _pyproject()["project"]["license"] == "BSD-3-Clause"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, the hetlab authors" in text
    assert "Neither the name of the copyright holder" in text  # clause 3


def test_citation_cff() -> None:
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert {"message", "title", "authors"} <= set(cff)
    assert cff["type"] in {"software", "dataset"}
    assert cff["version"] == hetlab.__version__
    assert cff["license"] == _pyproject()["project"]["license"]
    assert all(("name" in a) or ("family-names" in a) for a in cff["authors"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"]))


def test_changelog_has_this_version() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    assert "keepachangelog.com" in text
    assert re.search(rf"^## \[{re.escape(hetlab.__version__)}\]", text, re.MULTILINE)


def test_contributing_names_files_that_exist() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text()
    for ref in re.findall(r"`((?:docs|scripts|tests|notebooks|hetlab)/[\w./-]+)`", text):
        assert (REPO / ref.split("::")[0]).exists(), ref
    assert "docs/ARCHITECTURE.md" in text and "make test" in text


def test_record_names_the_machine(tmp_path) -> None:
    from hetlab.recorded import record, recordings

    ds = hetlab.compare(hetlab.fps, sizes=[200], devices=["numpy"], repeats=1, progress=False)
    path = record(ds, folder=tmp_path, machine="NVIDIA H200 (lent)")
    assert path.name == f"fps-cpu-nvidia-h200-lent-{ds.attrs['created'][:10]}.nc"
    assert "machine" not in ds.attrs  # the caller's Dataset is unchanged
    (rec,) = recordings("fps", tmp_path)
    assert rec.attrs["machine"] == "NVIDIA H200 (lent)"
    with pytest.raises(InvalidInputError, match="machine must be a non-empty string"):
        record(ds, folder=tmp_path, machine=" ")


def test_gpu_benchmark_offload_recording_names_the_machine(tmp_path) -> None:
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("gpu_bench", REPO / "benchmarks" / "gpu.py")
    gpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu)
    rows = [{"kernel": "matmul", "size": 100, "notes": ["no cuda plan"]}]
    path = Path(gpu.write_offload_recording(rows, str(tmp_path / "rec"), "NVIDIA H200",
                                            "NVIDIA H200 NVL"))
    assert path.parent == tmp_path / "rec"
    assert re.fullmatch(r"offload-search-nvidia-h200-\d{4}-\d{2}-\d{2}\.json", path.name)
    doc = json.loads(path.read_text())
    assert doc["machine"] == "NVIDIA H200" and doc["device_name"] == "NVIDIA H200 NVL"
    assert doc["rows"] == rows and doc["hetlab"] == hetlab.__version__


@pytest.mark.slow
def test_gpu_check_without_a_gpu_writes_nothing(tmp_path) -> None:
    import os
    import subprocess
    import sys

    from hetlab.core.registry import get_backend

    if get_backend("cupy").why_not() is None:
        pytest.skip("a GPU is present: make gpu-check runs for real there")
    before = set((REPO / "data" / "recorded").glob("*")) | set(REPO.glob("benchmarks/results/*"))
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    run = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh")], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    assert "no usable GPU" in run.stdout
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["env.txt", "logs"]
    after = set((REPO / "data" / "recorded").glob("*")) | set(REPO.glob("benchmarks/results/*"))
    assert after == before


def test_every_cited_results_file_is_committed() -> None:
    """A report or recording a doc or docstring cites exists (the lost H200 file did not)."""
    texts = [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("hetlab/**/*.py"),
             *REPO.glob("benchmarks/*.py")]
    cited = {(p.relative_to(REPO), m) for p in texts
             for m in re.findall(r"(?:benchmarks/results|data/recorded)/[\w.-]+\.(?:md|nc|json)",
                                 p.read_text(encoding="utf-8"))}
    missing = sorted((str(p), m) for p, m in cited if not (REPO / m).is_file())
    assert missing == []
