"""scripts/notebook_budget.py: memory of process trees, a series in one session, the verdict."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("notebook_budget",
                                               ROOT / "scripts" / "notebook_budget.py")
budget = importlib.util.module_from_spec(_spec)
sys.modules["notebook_budget"] = budget  # dataclasses look their module up there
_spec.loader.exec_module(budget)

ALLOC_MB = 200
_HOLD = f"held = bytearray(b'\\x01') * {ALLOC_MB * 1_000_000}  # touched pages\nlen(held)"


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def test_tree_memory_counts_a_child_process():
    before, kind = budget.tree_memory(os.getpid())
    assert kind in {"pss", "rss"} and before > 0
    child = subprocess.Popen(
        [sys.executable, "-c",
         f"import sys, time; b = bytearray(b'\\x01') * {ALLOC_MB * 1_000_000}; "
         "print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        with_child, _ = budget.tree_memory(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert with_child - before >= 0.9 * ALLOC_MB * budget.MB
    assert budget.tree_memory(child.pid)[0] == 0  # gone: nothing left to count


def test_sampler_keeps_the_peak_after_memory_is_freed():
    child = subprocess.Popen(
        [sys.executable, "-c",
         f"import time; b = bytearray(b'\\x01') * {ALLOC_MB * 1_000_000}; time.sleep(1.0); "
         "del b; print('freed', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        with budget.Sampler(interval=0.05) as sampler:
            sampler.watch(child.pid)
            assert child.stdout.readline().strip() == "freed"
            time.sleep(0.3)
            now, _ = budget.tree_memory(child.pid)
    finally:
        child.kill()
        child.wait()
    assert sampler.peak[child.pid] >= 0.9 * ALLOC_MB * budget.MB
    assert now < 0.5 * ALLOC_MB * budget.MB
    assert sampler.series_peak >= sampler.peak[child.pid]


@pytest.mark.slow
def test_series_measures_each_kernel_and_the_open_kernels_together(tmp_path):
    _notebook(tmp_path / "00-hold.ipynb", _HOLD)
    _notebook(tmp_path / "01-small.ipynb", "print(sum(range(10)))")
    _notebook(tmp_path / "02-broken.ipynb", "raise ValueError('on purpose')")
    rows, series_mb, kind = budget.run_series(sorted(tmp_path.glob("*.ipynb")), cwd=tmp_path,
                                              interval=0.05)
    hold, small, broken = rows
    assert [r.name for r in rows] == ["00-hold", "01-small", "02-broken"]
    assert hold.peak_mb >= 0.9 * ALLOC_MB and hold.after_mb >= 0.9 * ALLOC_MB
    assert small.peak_mb < hold.peak_mb - 0.5 * ALLOC_MB
    assert not hold.error and "on purpose" in broken.error
    # the first kernel stays open while the others run: the series holds both at once
    assert series_mb >= hold.after_mb + small.peak_mb * 0.9
    assert kind in {"pss", "rss"}
    assert all(r.wall_s > 0 for r in rows)
    nb = nbformat.read(tmp_path / "00-hold.ipynb", as_version=4)
    assert nb.cells[0].outputs == []  # the notebooks on disk are not changed


def test_table_fails_on_memory_only_and_says_why():
    fast_small = budget.Row("00-a", 10.0, 300.0, 200.0)
    slow_small = budget.Row("01-b", 90.0, 300.0, 200.0)
    text, ok = budget.table([fast_small, slow_small], 900.0, "pss")
    assert ok and "slow (> 45 s; not asserted)" in text and "PSS" in text
    text, ok = budget.table([fast_small, budget.Row("02-c", 5.0, 701.0, 10.0)], 900.0, "pss")
    assert not ok and "02-c" in text and "MEMORY OVER 700 MB" in text
    text, ok = budget.table([fast_small], 1801.0, "rss")
    assert not ok and "MEMORY OVER BUDGET" in text and "RSS" in text
    text, ok = budget.table([budget.Row("03-d", 1.0, 50.0, 50.0, "ValueError: x")], 50.0, "pss")
    assert not ok and "FAILED: ValueError: x" in text


@pytest.mark.slow
def test_main_exits_1_when_a_notebook_is_over_its_memory_budget(tmp_path, capsys):
    _notebook(tmp_path / "00-hold.ipynb", _HOLD)
    code = budget.main(["--notebooks", str(tmp_path), "--peak-budget-mb", str(ALLOC_MB / 2)])
    out = capsys.readouterr().out
    assert code == 1 and "MEMORY OVER" in out and "00-hold" in out
    assert budget.main(["--notebooks", str(tmp_path), "nothing-matches"]) == 1


def test_kernel_env_puts_this_tree_first_and_sets_the_numba_cache(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ".")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    env = budget.kernel_env()
    assert env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "."]
    assert "NUMBA_CACHE_DIR" not in env
    assert budget.kernel_env("/tmp/x")["NUMBA_CACHE_DIR"] == "/tmp/x"


@pytest.mark.slow
def test_kernels_import_this_tree_and_compile_with_a_cold_cache(tmp_path):
    check = ("import os, hetlab\n"
             f"assert hetlab.__file__.startswith({str(ROOT / 'hetlab')!r}), hetlab.__file__\n"
             "cache = os.environ['NUMBA_CACHE_DIR']\n"
             "assert os.path.isdir(cache) and os.listdir(cache) == [], cache")
    _notebook(tmp_path / "00-env.ipynb", check)
    _notebook(tmp_path / "01-env.ipynb", check)  # a cache of its own, empty again
    rows, _, _ = budget.run_series(sorted(tmp_path.glob("*.ipynb")), cwd=tmp_path,
                                   cold_numba_cache=True, shutdown_between=True)
    assert [r.error for r in rows] == ["", ""]
    rows, _, _ = budget.run_series([tmp_path / "00-env.ipynb"], cwd=tmp_path)
    assert rows[0].error  # without the option: no cache of its own (unset, or not empty)
