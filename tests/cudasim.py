"""Helpers for testing GPU kernels without a GPU: Numba's CUDA simulator in a subprocess, and
a probe for the CUDA toolkit that compiles PTX here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cases_under_simulator(cases: Path) -> None:
    """Run the pytest file ``cases`` with ``NUMBA_ENABLE_CUDASIM=1`` in a subprocess (it must be
    set before Numba is imported, and this process has imported it); every case must pass."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs", str(cases)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    last = proc.stdout.strip().splitlines()[-1]
    assert "passed" in last and "failed" not in last and "skipped" not in last, report


def nvvm_or_skip():
    """``(numba.cuda, numba.types)`` when a trivial kernel compiles to sm_90 PTX; else skip with
    NVVM's reason (no CUDA toolkit, or the simulator is enabled in this process)."""
    from numba import config, cuda, types

    if config.ENABLE_CUDASIM:
        pytest.skip("the CUDA simulator is enabled in this process: nothing to compile")

    def probe(a):
        a[0] = 1.0

    try:
        cuda.compile_ptx(probe, (types.float32[::1],), cc=(9, 0))
    except Exception as exc:  # NvvmSupportError, missing libdevice, …
        pytest.skip(f"no usable CUDA toolkit (libNVVM) to compile PTX: {exc}".strip()[:300])
    return cuda, types


class _Device:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc


def compile_ptx_for(cuda, kernel, sig, cc: tuple[int, int] = (9, 0)) -> str:
    """PTX of ``kernel`` for compute capability ``cc`` without a GPU.

    Numba compiles a *device function* that a kernel calls for the current GPU's capability, and
    asks the driver for it; here the driver's answer is replaced by ``cc`` for this compile only.
    """
    from unittest import mock

    with mock.patch("numba.cuda.dispatcher.get_current_device", lambda: _Device(cc)):
        ptx, _ = cuda.compile_ptx(kernel, sig, cc=cc)
    return ptx
