"""The fps overlay's C-simulation (HLS C++ built by g++) equals the numpy reference (the HLS
testbench of every overlay: test_fpga_manifests.py)."""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hetlab.fpga import csim, load_manifest
from hetlab.kernels.pointcloud import reference

pytestmark = pytest.mark.skipif(csim.compiler() is None, reason="no C++ compiler (g++) here")

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
M = load_manifest("fps")
LANES = M.limits["lanes"]


def csim_fps(points: np.ndarray, n_samples: int, start: int) -> np.ndarray:
    """Call the HLS top function directly (no emulator, no driver)."""
    fn = csim.load_library(M).fps
    pts = np.ascontiguousarray(points, dtype=np.float32)
    out = np.full(n_samples, 0xFFFFFFFF, dtype=np.uint32)
    fn(pts.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
       ctypes.c_uint32(pts.shape[0]), ctypes.c_uint32(n_samples), ctypes.c_uint32(start))
    return out.astype(np.int64)


def clouds(max_n: int = 70):
    """float32 clouds: integer grids (ties, duplicates) or wide-range floats."""
    return st.integers(1, max_n).flatmap(
        lambda n: hnp.arrays(np.float32, (n, 3), elements=st.integers(-3, 3).map(float))
        | hnp.arrays(np.float32, (n, 3), elements=st.floats(-1e4, 1e4, width=32))
    )


@FAST
@given(pts=clouds(), data=st.data())
def test_csim_equals_reference(pts, data):
    n = pts.shape[0]
    s = data.draw(st.integers(1, n))
    start = data.draw(st.integers(0, n - 1))
    np.testing.assert_array_equal(csim_fps(pts, s, start), reference.fps(pts, s, start))


@pytest.mark.parametrize("n", [1, 2, LANES - 1, LANES, LANES + 1, 2 * LANES + 3, 97])
def test_sizes_around_the_unroll_factor_and_n_samples_equal_n(n, rng):
    pts = rng.random((n, 3), dtype=np.float32)
    for start in {0, n - 1}:
        np.testing.assert_array_equal(csim_fps(pts, n, start), reference.fps(pts, n, start))


def test_duplicates_come_in_index_order_after_everything_else():
    pts = np.zeros((9, 3), dtype=np.float32)
    pts[4] = [1, 0, 0]
    got = csim_fps(pts, 9, 2)
    np.testing.assert_array_equal(got, reference.fps(pts, 9, 2))
    assert got.tolist() == [2, 4, 0, 1, 3, 5, 6, 7, 8]


def test_extreme_values_overflow_to_inf_like_the_reference():
    big = np.float32(3e38)
    pts = np.array([[-big, 0, 0], [big, 0, 0], [0, big, 0], [0, 0, 0], [1, 1, 1]], np.float32)
    with np.errstate(over="ignore"):
        want = reference.fps(pts, 5, 0)
    np.testing.assert_array_equal(csim_fps(pts, 5, 0), want)


def test_invalid_scalars_write_nothing(rng):
    pts = rng.random((8, 3), dtype=np.float32)
    fn = csim.load_library(M).fps
    out = np.full(4, 7, dtype=np.uint32)
    for n, s, start in [(0, 1, 0), (8, 9, 0), (8, 2, 8), (8, 0, 0)]:
        fn(pts.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
           ctypes.c_uint32(n), ctypes.c_uint32(s), ctypes.c_uint32(start))
    assert out.tolist() == [7, 7, 7, 7]


def test_library_is_cached_by_source_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("HETLAB_CACHE", str(tmp_path / "cache"))
    first = csim.build(M)
    assert first.parent == tmp_path / "cache" / "csim" and first.exists()
    mtime = first.stat().st_mtime_ns
    assert csim.build(M) == first and first.stat().st_mtime_ns == mtime  # not rebuilt
    # a changed source gets a new name
    src = tmp_path / "fps"
    shutil.copytree(M.root, src, ignore=shutil.ignore_patterns("build"))
    (src / "hls" / "fps.cpp").write_text((src / "hls" / "fps.cpp").read_text() + "\n// edit\n")
    edited = load_manifest(src / "overlay.toml")
    assert csim.library_path(edited) != first
