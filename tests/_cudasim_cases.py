"""GPU point-cloud kernels under Numba's CUDA simulator, against the numpy reference.

Not collected by a plain ``pytest`` run (the name does not start with ``test_``):
tests/test_pointcloud_cudasim.py runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``, which must be set before Numba is imported. The functions of
:mod:`hetlab.kernels.pointcloud.cupy` then run their real kernels as Python threads on NumPy
arrays. Sizes stay small: every simulated thread is a Python thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numba import config

from hetlab.errors import InvalidInputError
from hetlab.kernels.pointcloud import cupy as gpu
from hetlab.kernels.pointcloud import reference
from hetlab.kernels.pointcloud.spec import BALL_QUERY, FPS, FPS_KNN, KNN, VOXEL_DOWNSAMPLE

if not config.ENABLE_CUDASIM:
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba is imported (run through "
                "tests/test_pointcloud_cudasim.py)", allow_module_level=True)

SIM = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


def clouds(min_n: int = 1, max_n: int = 24):
    """Small float32/float64 clouds; integer grids make ties and duplicates common."""
    return st.tuples(st.integers(min_n, max_n), st.sampled_from([np.float32, np.float64])).flatmap(
        lambda t: hnp.arrays(t[1], (t[0], 3), elements=st.integers(-2, 2).map(float))
        | hnp.arrays(t[1], (t[0], 3), elements=st.floats(-100, 100, width=32))
    )


def same(got, expected):
    """Exact equality, dtypes included, of arrays or tuples of arrays."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            same(g, e)
        return
    assert isinstance(got, np.ndarray) and got.dtype == expected.dtype, (type(got), got.dtype)
    np.testing.assert_array_equal(got, expected)


def both(spec, impl, **kwargs):
    """(simulated GPU result, reference result) for the same validated arguments."""
    args = spec.validate(**kwargs)
    return impl(**args), spec.reference(**args)


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    monkeypatch.setattr(gpu, "FPS_THREADS", 8)  # fewer simulated threads; still strided
    monkeypatch.setattr(gpu, "QUERY_THREADS", 8)  # several blocks per launch


# --- fps ---------------------------------------------------------------------------------


@SIM
@given(pts=clouds(), data=st.data())
def test_fps(pts, data):
    n = pts.shape[0]
    s = data.draw(st.integers(1, min(n, 12)))
    start = data.draw(st.integers(0, n - 1))
    got, exp = both(FPS, gpu.fps, points=pts, n_samples=s, start=start)
    same(got, exp)
    assert len(set(got.tolist())) == s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fps_all_points_and_duplicates(dtype, monkeypatch):
    rng = np.random.default_rng(3)
    pts = rng.integers(0, 2, (20, 3)).astype(dtype)  # at most 8 distinct points: many ties
    got, exp = both(FPS, gpu.fps, points=pts, n_samples=20, start=5)  # n_samples == n
    same(got, exp)
    monkeypatch.setattr(gpu, "FPS_THREADS", 1024)  # the production block size (32 threads)
    same(gpu.fps(np.zeros((20, 3), dtype), 20, 4), reference.fps(np.zeros((20, 3), dtype), 20, 4))
    same(gpu.fps(pts[:1], 1, 0), np.array([0]))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # simulated threads
def test_overflowing_distances():
    """float32 squared distances that overflow to inf: the public API refuses such clouds
    (hetlab.InvalidInputError), and the kernels, called past validation, still tie infs like
    any other equal values, as the reference does."""
    rng = np.random.default_rng(5)
    pts = (rng.normal(size=(24, 3)) * 1e19).astype(np.float32)
    with pytest.raises(InvalidInputError, match="coordinates"):
        FPS.validate(points=pts, n_samples=10)
    with np.errstate(over="ignore"):
        assert np.isinf(reference.sq_dist_to(pts, pts[0])).any()
        fps_args = {"points": pts, "n_samples": 10, "start": 0}
        same(gpu.fps(**fps_args), FPS.reference(**fps_args))
        knn_args = {"points": pts, "queries": pts[:4], "k": 9}
        same(gpu.knn(**knn_args), KNN.reference(**knn_args))


# --- knn ---------------------------------------------------------------------------------


@SIM
@given(pts=clouds(), q=clouds(0, 8), data=st.data())
def test_knn(pts, q, data):
    k = data.draw(st.integers(1, pts.shape[0]))
    same(*both(KNN, gpu.knn, points=pts, queries=q, k=k))


@SIM
@given(pts=clouds(), q=clouds(0, 6), data=st.data())
def test_knn_sorted_path(pts, q, data, monkeypatch):
    """The large-k path (distance rows + stable sort), forced for every k, in small chunks."""
    monkeypatch.setattr(gpu, "KNN_LOCAL_MAX_K", 0)
    monkeypatch.setattr(gpu, "KNN_CHUNK_ELEMS", 2 * pts.shape[0])  # 2 query rows a chunk
    k = data.draw(st.integers(1, pts.shape[0]))
    same(*both(KNN, gpu.knn, points=pts, queries=q, k=k))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_knn_edges(dtype):
    rng = np.random.default_rng(4)
    pts = rng.integers(-2, 3, (80, 3)).astype(dtype)
    q = rng.integers(-2, 3, (5, 3)).astype(dtype)
    for k in (1, 64, 65, 80):  # local kernel up to 64, sorted path above; k == n
        same(*both(KNN, gpu.knn, points=pts, queries=q, k=k))
    idx, d = gpu.knn(pts, q[:0], 3)  # no queries
    assert idx.shape == (0, 3) and idx.dtype == np.int64 and d.dtype == dtype
    line = np.array([[1, 0, 0], [-1, 0, 0], [0, 0, 0], [0, 1, 0]], dtype=dtype)
    same(gpu.knn(line, line[2:3].copy(), 4),
         (np.array([[2, 0, 1, 3]]), np.array([[0, 1, 1, 1]], dtype=dtype)))


# --- ball query --------------------------------------------------------------------------


@SIM
@given(pts=clouds(), c=clouds(0, 8), data=st.data())
def test_ball_query(pts, c, data):
    k = data.draw(st.integers(1, pts.shape[0]))
    radius = data.draw(st.sampled_from([0.5, 1.0, 2.5, 50.0]))
    same(*both(BALL_QUERY, gpu.ball_query, points=pts, centers=c, radius=radius, k=k))


def test_ball_query_edges():
    line = np.array([[1, 0, 0], [-1, 0, 0], [0, 0, 0], [0, 1, 0]], dtype=np.float64)
    got, exp = both(BALL_QUERY, gpu.ball_query, points=line,
                    centers=np.array([[0, 0, 0], [9, 9, 9]]), radius=1.0, k=3)
    same(got, exp)
    assert got.tolist() == [[2, 2, 2], [-1, -1, -1]]  # strict <, padding, empty row
    got, exp = both(BALL_QUERY, gpu.ball_query, points=line, centers=np.zeros((0, 3)),
                    radius=1.0, k=2)
    same(got, exp)


# --- fused fps + knn ---------------------------------------------------------------------


@SIM
@given(pts=clouds(max_n=16), data=st.data())
def test_fps_knn(pts, data):
    n = pts.shape[0]
    s = data.draw(st.integers(1, min(n, 8)))
    k = data.draw(st.integers(1, n))
    got, exp = both(FPS_KNN, gpu.fps_knn, points=pts, n_samples=s, k=k, start=0)
    same(got, exp)
    centres = reference.fps(pts, s, 0)
    same(got, (centres, *reference.knn(pts, pts[centres], k)))


# --- voxel downsampling (array operations: NumPy here, CuPy on a GPU) -------------------


@SIM
@given(pts=clouds(max_n=60), vs=st.sampled_from([0.3, 1.0, 7.0]))
def test_voxel_downsample(pts, vs):
    got, exp = both(VOXEL_DOWNSAMPLE, gpu.voxel_downsample, points=pts, voxel_size=vs)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    assert VOXEL_DOWNSAMPLE.verified(got, exp)[1]


def test_drivers_never_import_cupy():
    """On NumPy arrays the drivers stay in NumPy: CuPy is not even imported."""
    import sys

    gpu.fps(np.eye(3), 2, 0)
    gpu.knn(np.eye(3), np.eye(3), 2)
    assert "cupy" not in sys.modules


# --- through hetlab's dispatch and bench, with a simulated "device" ----------------------


def _register_simulated_gpu():
    """Register "cudasim": a stand-in GPU backend that copies arrays in and out and runs the
    cupy-module kernels on the simulator (dispatch and ``hl.compare`` end to end)."""
    import hetlab as hl
    from hetlab.backends.base import Backend
    from hetlab.core.registry import backend_names, register_backend, register_impl

    class SimGPU(Backend):
        name, kind = "cudasim", "gpu"

        def why_not(self):
            return None

        def owns(self, array):
            return False

        def to_device(self, array):
            return np.array(array, copy=True)

        def from_device(self, array):
            return np.array(array, copy=True)

        def synchronize(self):
            return None

        def info(self):
            return {"device_name": "numba CUDA simulator", "threads": 1,
                    "peak_bandwidth_gbps": float("nan")}

    if "cudasim" not in backend_names():
        register_backend(SimGPU())
        for name in hl.kernel_names():
            register_impl(name, "cudasim", f"hetlab.kernels.pointcloud.cupy:{name}")
    return hl


def test_dispatch_and_compare_on_simulated_device():
    hl = _register_simulated_gpu()
    rng = np.random.default_rng(9)
    pts = rng.integers(0, 3, (30, 3)).astype(np.float32)
    same(hl.fps(pts, 12, start=2, device="cudasim"), reference.fps(pts, 12, 2))
    same(hl.knn(pts, pts[:5], 7, device="cudasim"), reference.knn(pts, pts[:5], 7))
    same(hl.fps_knn(pts, 6, 4, device="cudasim"), reference.fps_knn(pts, 6, 4, 0))
    ds = hl.compare(hl.knn, sizes=[48], devices=["numpy", "cudasim"], repeats=1,
                    progress=False)
    assert ds["verified"].all(), ds["status"].values
    assert ds["source"].sel(device="cudasim").item() == "measured"
