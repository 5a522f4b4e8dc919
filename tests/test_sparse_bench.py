"""Smoke test of benchmarks/sparse.py: a tiny --quick run prints its full table and targets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sparse_benchmark_quick_smoke():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sparse.py"), "--quick", "--rows", "20000",
         "--repeats", "1"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "STREAM triad" in out and "workqueue layer" in out
    for kernel, matrix in [("spmv", "banded"), ("spmv", "laplacian3d"), ("spmv", "powerlaw"),
                           ("spmv", "uniform"), ("spmm16", "banded"), ("spmm64", "uniform")]:
        line = next(ln for ln in out.splitlines() if ln.startswith(kernel + " ") and matrix in ln)
        assert line.rstrip().endswith("%"), line
    assert "spmv no slower than scipy" in out and "spmm 16 columns" in out


def test_sparse_conv_benchmark_quick_smoke():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sparse_conv.py"), "--quick", "--repeats",
         "1"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.rstrip().endswith("x")]
    assert len(rows) == 6, proc.stdout
    assert all(("gather_scatter" in r) or ("fetch_on_demand" in r) for r in rows)
    assert "autotuned choice within 5% of the best dataflow" in proc.stdout


def test_sparse_einsum_benchmark_quick_smoke():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sparse_einsum.py"), "--rows", "3000",
         "--repeats", "1"],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [ln for ln in proc.stdout.splitlines() if ln.rstrip().endswith("x")]
    assert len(rows) == 5, proc.stdout
