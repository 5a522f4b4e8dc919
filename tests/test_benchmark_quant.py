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
    # issue 18: the CPU, its instruction sets and the path on every result line; every path
    # of this CPU side by side; W3/W8 GEMV and the fused mixed-bit plan timed
    assert out.startswith("CPU: ")
    results = [ln for ln in out.splitlines()
               if (" ms" in ln or "GB/s " in ln or "×" in ln) and not ln.startswith("shape ")]
    assert results and all(" | path " in ln for ln in results)
    from hetlab.kernels.quant.numba import w4_paths

    assert all(f"gemv_q W4 g128 [{p}]" in out for p in w4_paths())
    assert "gemv_q W3 g128" in out and "gemv_q W8 g128" in out
    assert "mixed plan" in out and "FusedPlan [" in out
