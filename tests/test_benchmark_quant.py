"""Smoke test of benchmarks/quant.py --quick: it runs, checks results and prints its ratios."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quant_benchmark_quick_runs():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "quant.py"), "--quick", "--repeats", "2",
         "--threads", "1", "--gemm-rows", "2,4"],
        capture_output=True, text=True, env=env, timeout=300, check=True,
    ).stdout
    assert "STREAM triad" in out
    assert out.count("hetlab numba gemv_q W4 g128") >= 2 and "floor" in out
    assert out.count("hetlab numba gemv_w4a8 W4A8 g128") == 2 and "WRONG" not in out
    assert "W4A8 vs W4A16" in out
    assert "vs numpy fp32" in out and "of triad" in out
    assert ("vs torch int4" in out) or ("skipped (torch not installed)" in out)
    assert "flat GEMM gemm_q W4 g128, 2 rows" in out and "flat GEMM gemm_q W4 g128, 4 rows" in out
