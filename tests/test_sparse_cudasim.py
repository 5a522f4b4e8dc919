"""The GPU sparse kernels, checked without a GPU: tests/_cudasim_sparse_cases.py runs them
against the numpy reference under Numba's CUDA simulator, in a subprocess
(``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is imported; this process has already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("index", [np.int32, np.int64], ids=["i32", "i64"])
def test_kernels_compile_to_ptx_for_sm90(dtype, index):
    """The kernels compile for an H100-class GPU (sm_90) here, without a driver; skipped with
    the reason when no CUDA toolkit (libNVVM) is usable."""
    from numba import cuda, types

    def probe(a):
        a[0] = 1.0

    try:
        cuda.compile_ptx(probe, (types.float32[::1],), cc=(9, 0))
    except Exception as exc:  # NvvmSupportError, missing libdevice, …
        pytest.skip(f"no usable CUDA toolkit (libNVVM) to compile PTX: {exc}".strip()[:300])
    from hetlab.kernels.sparse import _cuda_kernels as ck

    f = types.float32 if dtype == np.float32 else types.float64
    i = types.int32 if index == np.int32 else types.int64
    iv, v, m = types.Array(i, 1, "C"), types.Array(f, 1, "C"), types.Array(f, 2, "C")
    sigs = {
        "spmv": (ck.spmv_kernel, (iv, iv, v, v, v, types.int64)),
        "spmm": (ck.spmm_kernel, (iv, iv, v, m, m, types.int64)),
        "sddmm": (ck.sddmm_kernel, (iv, iv, v, m, m, v)),
    }
    for name, (kernel, sig) in sigs.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        assert ".target sm_90" in ptx, name
        if name != "sddmm":
            assert "atom.global.add" in ptx or "red.global.add" in ptx, name
