"""The GPU sparse kernels, checked without a GPU: tests/_cudasim_sparse_cases.py runs them
against the numpy reference under Numba's CUDA simulator, in a subprocess
(``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba is imported; this process has already)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from tests.cudasim import compile_ptx_for, nvvm_or_skip, run_cases_under_simulator

CASES = Path(__file__).with_name("_cudasim_sparse_cases.py")


def test_sparse_kernels_under_cuda_simulator():
    run_cases_under_simulator(CASES)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("index", [np.int32, np.int64], ids=["i32", "i64"])
def test_kernels_compile_to_ptx_for_sm90(dtype, index):
    """The kernels compile for an H100-class GPU (sm_90) here, without a driver; skipped with
    the reason when no CUDA toolkit (libNVVM) is usable."""
    cuda, types = nvvm_or_skip()
    from hetlab.kernels.sparse import _cuda_kernels as ck

    f = types.float32 if dtype == np.float32 else types.float64
    i = types.int32 if index == np.int32 else types.int64
    iv, v, m = types.Array(i, 1, "C"), types.Array(f, 1, "C"), types.Array(f, 2, "C")
    sigs = {
        "spmv": (ck.spmv_kernel, (iv, iv, v, v, v, types.int64)),
        "spmv_rows": (ck.spmv_rows_kernel, (iv, iv, v, v, v, types.int64)),
        "spmm": (ck.spmm_kernel, (iv, iv, v, m, m, types.int64)),
        "sddmm": (ck.sddmm_kernel, (iv, iv, v, m, m, v)),
    }
    for name, (kernel, sig) in sigs.items():
        ptx = compile_ptx_for(cuda, kernel.py_func, sig)
        assert ".target sm_90" in ptx, name
        if name in ("spmv", "spmm"):
            assert "atom.global.add" in ptx or "red.global.add" in ptx, name


@pytest.mark.parametrize(("per_row", "lanes"), [(1, 2), (7, 8), (16, 16), (100, 32)])
def test_row_lanes_follow_the_mean_row_length(per_row, lanes):
    from hetlab import sparse
    from hetlab.kernels.sparse import cupy as gpu

    A = sparse.make_matrix(1000, np.random.default_rng(0), kind="banded", nnz_per_row=per_row)
    assert gpu.row_lanes(A) == lanes
    with pytest.raises(hl.InvalidInputError, match="power of two"):
        gpu.spmv_rows(A, np.ones(A.shape[1]), lanes=3)
