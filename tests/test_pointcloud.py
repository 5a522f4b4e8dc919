"""Every point-cloud kernel × backend equals the numpy reference on generated and edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hetlab as hl
from hetlab.kernels.pointcloud import reference
from tests.conftest import backend_params

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def clouds(min_n: int = 1, max_n: int = 60):
    """Hypothesis clouds (n, 3): float32/float64, small integer grids so ties and duplicates
    are common (the hard cases for exact tie-breaking)."""
    return st.tuples(st.integers(min_n, max_n), st.sampled_from([np.float32, np.float64])).flatmap(
        lambda t: hnp.arrays(t[1], (t[0], 3), elements=st.integers(-4, 4).map(float))
        | hnp.arrays(t[1], (t[0], 3), elements=st.floats(-100, 100, width=32))
    )


def _run_or_skip(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except hl.KernelNotSupported as exc:
        pytest.skip(str(exc))


def assert_same(result, expected):
    if isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected)
        for r, e in zip(result, expected, strict=True):
            assert_same(r, e)
        return
    assert isinstance(result, np.ndarray), type(result)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("device", backend_params("fps"))
@FAST
@given(pts=clouds(), data=st.data())
def test_fps_equals_reference(device, pts, data):
    n = pts.shape[0]
    s = data.draw(st.integers(1, n))
    start = data.draw(st.integers(0, n - 1))
    got = _run_or_skip(hl.fps, pts, s, start=start, device=device)
    assert_same(got, reference.fps(pts, s, start))
    assert len(set(got.tolist())) == s  # never a point twice


@pytest.mark.parametrize("device", backend_params("knn"))
@FAST
@given(pts=clouds(), q=clouds(0, 20), data=st.data())
def test_knn_equals_reference(device, pts, q, data):
    k = data.draw(st.integers(1, pts.shape[0]))
    got = _run_or_skip(hl.knn, pts, q, k, device=device)
    assert_same(got, reference.knn(pts, q.astype(pts.dtype), k))


@pytest.mark.parametrize("device", backend_params("ball_query"))
@FAST
@given(pts=clouds(), c=clouds(0, 20), data=st.data())
def test_ball_query_equals_reference(device, pts, c, data):
    k = data.draw(st.integers(1, pts.shape[0]))
    radius = data.draw(st.sampled_from([0.5, 1.0, 2.5, 50.0]))
    got = _run_or_skip(hl.ball_query, pts, c, radius, k, device=device)
    r = pts.dtype.type(radius)
    assert_same(got, reference.ball_query(pts, c.astype(pts.dtype), r * r, k))


@pytest.mark.parametrize("device", backend_params("fps_knn"))
@FAST
@given(pts=clouds(), data=st.data())
def test_fps_knn_equals_fps_then_knn(device, pts, data):
    n = pts.shape[0]
    s, k = data.draw(st.integers(1, n)), data.draw(st.integers(1, n))
    got = _run_or_skip(hl.fps_knn, pts, s, k, device=device)
    centres = reference.fps(pts, s, 0)
    assert_same(got, (centres, *reference.knn(pts, pts[centres], k)))


@pytest.mark.parametrize("device", backend_params("voxel_downsample"))
@FAST
@given(pts=clouds(), vs=st.sampled_from([0.3, 1.0, 7.0]))
def test_voxel_downsample_matches_reference(device, pts, vs):
    got = _run_or_skip(hl.voxel_downsample, pts, vs, device=device)
    exp = reference.voxel_downsample(pts, vs)
    assert got.dtype == exp.dtype and got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-6 * np.abs(exp).max())


@pytest.mark.parametrize("device", backend_params())
@pytest.mark.parametrize("kind", ["uniform", "clustered"])
def test_larger_clouds_all_kernels(device, kind):
    """Sizes where spatial structures (buckets, grids) have many cells."""
    rng = np.random.default_rng(7)
    pts = hl.make_cloud(5000, rng, kind=kind)
    q = hl.make_cloud(300, rng, kind=kind)
    cases = [
        (hl.fps, (pts, 300), reference.fps(pts, 300, 0)),
        (hl.knn, (pts, q, 16), reference.knn(pts, q, 16)),
        (hl.ball_query, (pts, q, 0.05, 32),
         reference.ball_query(pts, q, np.float32(0.05) ** 2, 32)),
        (hl.fps_knn, (pts, 100, 8), reference.fps_knn(pts, 100, 8, 0)),
    ]
    ran = 0
    for fn, args, expected in cases:
        try:
            got = fn(*args, device=device)
        except hl.KernelNotSupported:
            continue
        assert_same(got, expected)
        ran += 1
    try:
        vox = hl.voxel_downsample(pts, 0.05, device=device)
    except hl.KernelNotSupported:
        vox = None  # e.g. the fpga backend: an overlay for fps only
    if vox is not None:
        np.testing.assert_allclose(vox, reference.voxel_downsample(pts, 0.05), rtol=1e-6)


def test_reference_semantics_by_hand():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0, 0], [0, 2, 0]], dtype=np.float32)
    assert hl.fps(pts, 4).tolist() == [0, 3, 1, 2]
    # all points equal: index order, no repeats
    same = np.zeros((5, 3))
    assert hl.fps(same, 5, start=2).tolist() == [2, 0, 1, 3, 4]
    # ties in knn go to the lowest index
    line = np.array([[1, 0, 0], [-1, 0, 0], [0, 0, 0], [0, 1, 0]], dtype=np.float64)
    idx, d2 = hl.knn(line, [[0, 0, 0]], 4)
    assert idx.tolist() == [[2, 0, 1, 3]] and d2.tolist() == [[0, 1, 1, 1]]
    # ball query: strict inequality, padding with the first hit, -1 when empty
    got = hl.ball_query(line, [[0, 0, 0], [9, 9, 9]], radius=1.0, k=3)
    assert got.tolist() == [[2, 2, 2], [-1, -1, -1]]
    vox = hl.voxel_downsample(np.array([[0.5, 0, 0], [-0.5, 0, 0], [0.7, 0, 0]]), 1.0)
    np.testing.assert_allclose(vox, [[-0.5, 0, 0], [0.6, 0, 0]])
