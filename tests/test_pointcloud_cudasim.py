"""The GPU point-cloud kernels, checked without a GPU.

* Their logic: tests/_cudasim_cases.py runs every kernel against the numpy reference under
  Numba's CUDA simulator, in a subprocess (``NUMBA_ENABLE_CUDASIM=1`` must be set before Numba
  is imported, and this process has imported it already).
* Their compiled form: every kernel, float32 and float64, compiles to PTX for sm_90 with
  NVVM, and the distance code has no fused multiply-add (which would round differently from
  NumPy). Skipped with the reason when no CUDA toolkit (libNVVM) is found.
* The voxel path, pure array operations, on NumPy in this process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hetlab.kernels.pointcloud import reference
from tests.cudasim import nvvm_or_skip, run_cases_under_simulator

CASES = Path(__file__).with_name("_cudasim_cases.py")


def test_kernels_under_cuda_simulator():
    run_cases_under_simulator(CASES)


# --- PTX compile check -------------------------------------------------------------------


def _signatures(dtype):
    from numba import types

    from hetlab.kernels.pointcloud import _cuda_kernels as ck

    f = types.float32 if dtype == np.float32 else types.float64
    pts, vec = types.Array(f, 2, "C"), types.Array(f, 1, "C")
    i1, i2 = types.Array(types.int64, 1, "C"), types.Array(types.int64, 2, "C")
    k = ck.kernels(dtype)
    sigs = {
        "fps": (k.fps, (pts, types.int64, types.int64, vec, i1)),
        "ball_query": (k.ball_query, (pts, pts, f, i2)),
        "dist_matrix": (k.dist_matrix, (pts, pts, types.int64, pts)),
    }
    for cap in ck.KNN_CAPACITIES:
        sigs[f"knn{cap}"] = (ck.knn_kernel(dtype, cap), (pts, pts, i2, pts))
    return sigs


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_kernels_compile_for_sm90_without_fma(dtype):
    cuda, _ = nvvm_or_skip()
    width = "f32" if dtype == np.float32 else "f64"
    for name, (kernel, sig) in _signatures(dtype).items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        assert ".target sm_90" in ptx, name
        assert f"mul.rn.{width}" in ptx, f"{name}: distance products not explicitly rounded"
        assert "fma.rn" not in ptx, f"{name}: fused multiply-add in the PTX"


def test_fma_check_can_fail():
    """The same distance expression with plain ``*`` is contracted to FMA by NVVM: the check
    above would see it."""
    cuda, types = nvvm_or_skip()

    def plain(points, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            dx, dy, dz = points[i, 0], points[i, 1], points[i, 2]
            out[i] = (dx * dx + dy * dy) + dz * dz

    sig = (types.Array(types.float32, 2, "C"), types.Array(types.float32, 1, "C"))
    ptx, _ = cuda.compile_ptx(plain, sig, cc=(9, 0))
    assert "fma.rn" in ptx


# --- voxel downsampling: array operations, NumPy here -------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_voxel_array_path_on_numpy(dtype):
    from hetlab.kernels.pointcloud import cupy as gpu

    rng = np.random.default_rng(11)
    pts = (rng.normal(size=(3000, 3)) * 3).astype(dtype)
    for vs in (0.05, 0.5, 4.0):
        got = gpu.voxel_downsample(pts, vs)
        exp = reference.voxel_downsample(pts, vs)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-6 * np.abs(exp).max())
