"""Real-GPU checks of the CuPy point-cloud kernels (skipped, with the reason, without a GPU).

Run on a machine with an NVIDIA GPU: ``scripts/gpu_check.sh`` (or ``pytest -m gpu tests/gpu``).
Every result is compared with the numpy reference on clouds larger than the simulator tests
(tests/test_pointcloud_cudasim.py) can afford.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import hetlab as hl
from hetlab.core.registry import get_backend
from hetlab.kernels.pointcloud import reference

_REASON = get_backend("cupy").why_not()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=f"cupy: {_REASON}"),
]

DTYPES = [np.float32, np.float64]
KINDS = ["uniform", "clustered"]


def cloud(n: int, kind: str, dtype, seed: int = 0) -> np.ndarray:
    return hl.make_cloud(n, np.random.default_rng([seed, n]), kind=kind).astype(dtype)


def host_equal(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            host_equal(g, e)
        return
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fps(kind, dtype):
    pts = cloud(30_000, kind, dtype)
    host_equal(hl.fps(pts, 2048, start=17, device="cupy"), reference.fps(pts, 2048, 17))


def test_fps_ties_and_all_samples():
    pts = np.random.default_rng(1).integers(0, 4, (3000, 3)).astype(np.float32)  # 64 distinct
    host_equal(hl.fps(pts, 3000, device="cupy"), reference.fps(pts, 3000, 0))
    pts = cloud(700, "uniform", np.float64)  # fewer points than threads
    host_equal(hl.fps(pts, 700, start=699, device="cupy"), reference.fps(pts, 700, 699))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 16, 64, 100])  # 100: the sorted (large-k) path
def test_knn(kind, dtype, k):
    pts = cloud(20_000, kind, dtype)
    q = cloud(1500, kind, dtype, seed=1)
    host_equal(hl.knn(pts, q, k, device="cupy"), reference.knn(pts, q, k))


def test_knn_ties_and_edges():
    grid = np.random.default_rng(2).integers(-3, 4, (5000, 3)).astype(np.float32)
    host_equal(hl.knn(grid, grid[:700], 40, device="cupy"), reference.knn(grid, grid[:700], 40))
    small = grid[:90]
    host_equal(hl.knn(small, grid[:50], 90, device="cupy"), reference.knn(small, grid[:50], 90))
    idx, d2 = hl.knn(grid, np.zeros((0, 3), np.float32), 5, device="cupy")
    assert idx.shape == (0, 5) and idx.dtype == np.int64 and d2.dtype == np.float32


def test_overflowing_and_no_fma_distances():
    """Clouds whose float32 distances would overflow are refused before reaching the GPU;
    values where a fused multiply-add would round differently from NumPy: the GPU must still
    equal the reference bit for bit."""
    rng = np.random.default_rng(5)
    big = (rng.normal(size=(4000, 3)) * 1e19).astype(np.float32)
    with pytest.raises(hl.InvalidInputError, match="coordinates"):
        hl.fps(big, 300, device="cupy")
    odd = (rng.random((20_000, 3)) * 3 + 1 / 3).astype(np.float32)  # inexact products
    host_equal(hl.knn(odd, odd[:500], 8, device="cupy"), reference.knn(odd, odd[:500], 8))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ball_query(kind, dtype):
    pts = cloud(20_000, kind, dtype)
    c = cloud(2000, kind, dtype, seed=3)
    r = dtype(0.04)
    for k in (1, 32, 200):
        got = hl.ball_query(pts, c, 0.04, k, device="cupy")
        host_equal(got, reference.ball_query(pts, c, r * r, k))
    assert (got == -1).any() or kind == "uniform"  # clustered: some centres hit nothing


@pytest.mark.parametrize("dtype", DTYPES)
def test_fps_knn(dtype):
    pts = cloud(20_000, "clustered", dtype)
    host_equal(hl.fps_knn(pts, 512, 16, device="cupy"), reference.fps_knn(pts, 512, 16, 0))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_voxel_downsample(kind, dtype):
    pts = cloud(50_000, kind, dtype)
    for vs in (0.01, 0.05, 0.3):
        got = hl.voxel_downsample(pts, vs, device="cupy")
        exp = reference.voxel_downsample(pts, vs)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-6 * np.abs(exp).max())


def test_keep_on_device_and_device_inputs():
    import cupy

    pts = cloud(5000, "uniform", np.float32)
    idx = hl.fps(pts, 64, device="cupy", keep_on_device=True)
    assert isinstance(idx, cupy.ndarray) and idx.dtype == cupy.int64
    np.testing.assert_array_equal(cupy.asnumpy(idx), reference.fps(pts, 64, 0))
    d_pts = cupy.asarray(pts)
    res = hl.knn(d_pts, d_pts[:100], 8)  # device inputs run on their device, stay there
    assert all(isinstance(r, cupy.ndarray) for r in res)
    host_equal(tuple(cupy.asnumpy(r) for r in res), reference.knn(pts, pts[:100], 8))
    vox = hl.voxel_downsample(d_pts, 0.1, device="cupy")
    assert isinstance(vox, cupy.ndarray)


def test_host_device_mismatch_errors():
    import cupy

    pts = cloud(1000, "uniform", np.float32)
    d_pts = cupy.asarray(pts)
    with pytest.raises(hl.DeviceMismatchError, match="points is a cupy array"):
        hl.fps(d_pts, 10, device="numpy")
    with pytest.raises(hl.DeviceMismatchError, match="different devices"):
        hl.knn(d_pts, pts[:5], 3, device="cupy")
    with pytest.raises(hl.DeviceMismatchError, match="different devices"):
        hl.ball_query(pts, d_pts[:5], 0.1, 3)
    with pytest.raises(hl.InvalidInputError, match="n_samples"):
        hl.fps(d_pts, 0, device="cupy")
    bad = d_pts.copy()
    bad[3, 1] = cupy.nan
    with pytest.raises(hl.InvalidInputError, match="finite"):
        hl.knn(bad, d_pts[:2], 2)


def test_backend_info():
    info = get_backend("cupy").info()
    assert info["device_name"] and info["threads"] > 0
    assert info["compute_capability"].count(".") == 1
    # memory clock × bus width: 4814 GB/s on an H200 (2026-11-30); NaN where the CUDA
    # runtime no longer reports the memory clock, never zero or negative
    bw = info["peak_bandwidth_gbps_datasheet"]
    assert np.isnan(bw) or bw > 0
    np.testing.assert_equal(get_backend("cupy").peaks()["peak_bandwidth_gbps"], bw)


def test_compare_fps_verified():
    devices = ["numpy", "numba", "cupy"]
    if importlib.util.find_spec("hetlab.kernels.pointcloud.numba") is None:
        devices.remove("numba")  # the numba CPU kernels live in another module
    ds = hl.compare(hl.fps, sizes=[10_000, 100_000], devices=devices, repeats=2)
    for dev in devices:
        status = ds["status"].sel(device=dev).values.tolist()
        assert bool(ds["verified"].sel(device=dev).all()), (dev, status)
        assert np.isfinite(ds["time_s"].sel(device=dev).values).all()
    assert ds["source"].sel(device="cupy").item() == "measured"
    assert (ds["transfer_in_s"].sel(device="cupy") > 0).all()
