"""The benchmark scripts still run (a --quick smoke run each; figures are not checked)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pointcloud_benchmark_quick():
    for name in ("fpsample", "pykdtree", "scipy"):
        pytest.importorskip(name)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "pointcloud.py"), "--quick"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "= exact FPS" in out and "Targets" in out
    assert "= exact reference" in out  # hetlab knn checked against the brute-force reference
    for line in ("fps uniform", "fps clustered", "knn uniform"):
        assert line in out


def test_gpu_benchmark_says_why_without_a_gpu():
    """benchmarks/gpu.py measures nothing without a usable GPU: status 2 and the reason."""
    from hetlab.core.registry import get_backend

    why = get_backend("cupy").why_not()
    if why is None:
        pytest.skip("a GPU is present: scripts/gpu_check.sh runs the benchmark there")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick", "--only", "sparse"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stdout.startswith("no usable GPU, nothing measured:") and why in proc.stdout
    bad = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--only", "sparse,bogus"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert bad.returncode == 2 and "unknown sections ['bogus']" in bad.stderr
