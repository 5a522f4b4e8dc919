"""The GPU sparse kernels, checked without a GPU: tests/_cudasim_sparse_cases.py runs them
against the numpy reference under Numba's CUDA simulator, in a subprocess
(``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is imported; this process has already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).with_name("_cudasim_sparse_cases.py")


def test_sparse_kernels_under_cuda_simulator():
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", str(CASES)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    last = proc.stdout.strip().splitlines()[-1]
    assert "passed" in last and "failed" not in last and "skipped" not in last, report
