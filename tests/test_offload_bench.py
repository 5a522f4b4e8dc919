"""Smoke test of benchmarks/offload.py in its quick mode (two kernels, tiny sizes)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("numba")
BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "offload.py"


def test_quick_benchmark_prints_its_table(capsys):
    spec = importlib.util.spec_from_file_location("offload_bench", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--quick", "--only", "axpy,histogram", "--budget", "4"]) == 0
    out = capsys.readouterr().out
    assert "vs_serial" in out and "axpy" in out and "nothing parallelizable" in out
    assert "geometric mean plan speedup" in out
