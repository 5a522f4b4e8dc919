"""The bucketed numba kNN (hetlab/kernels/pointcloud/_knn.py): bit-exact with the reference
(same neighbours, same distances, ties to the lowest index) on hard clouds, both dtypes,
serial and parallel, and through the public API's checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab.errors import InvalidInputError
from hetlab.kernels.pointcloud import _kbuckets, _kdtree, _knn, reference
from hetlab.kernels.pointcloud import numba as nb


def cloud(name: str, dtype, rng: np.random.Generator) -> np.ndarray:
    if name == "uniform":
        pts = hl.make_cloud(3000, rng)
    elif name == "clustered":
        pts = hl.make_cloud(3000, rng, kind="clustered")
    elif name == "duplicates":  # 60 distinct points, 25 copies each: ties everywhere
        pts = rng.permutation(np.repeat(rng.integers(0, 4, (60, 3)), 25, axis=0))
    elif name == "grid":  # integer lattice: many equal distances, exact in both dtypes
        g = np.arange(12)
        pts = rng.permutation(np.stack(np.meshgrid(g, g, g), -1).reshape(-1, 3))
    else:  # collinear
        pts = np.c_[rng.random(800), np.zeros(800), np.zeros(800)]
    return np.ascontiguousarray(pts, dtype=dtype)


def assert_exact(pts: np.ndarray, q: np.ndarray, k: int, **kw) -> None:
    got = _knn.knn_tree(_kdtree.build(pts, kw.pop("leaf", nb.SEARCH_LEAF)), q, k, **kw)
    exp = reference.knn(pts, q, k)
    assert got[0].dtype == np.int64 and got[1].dtype == pts.dtype
    np.testing.assert_array_equal(got[0], exp[0])
    np.testing.assert_array_equal(got[1], exp[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["uniform", "clustered", "duplicates", "grid", "line"])
def test_exact_on_hard_clouds(name, dtype):
    rng = np.random.default_rng(11)
    pts = cloud(name, dtype, rng)
    n = pts.shape[0]
    q = np.concatenate([pts[rng.integers(0, n, 300)],  # on points: distance-0 ties
                        rng.random((200, 3)) * 4 - 1,  # around and outside the cloud
                        [[1e3, -1e3, 50.0]]]).astype(dtype)
    for k in (1, 16, 40):
        assert_exact(pts, q, k, parallel=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parallel_equals_serial_and_reference(dtype):
    rng = np.random.default_rng(12)
    both = hl.make_cloud(9000, rng, kind="clustered").astype(dtype)
    pts, q = both[:5000], both[5000:]
    t = _kdtree.build(pts, 32)
    par = _knn.knn_tree(t, q, 16, parallel=True)
    ser = _knn.knn_tree(t, q, 16, parallel=False)
    for a, b in zip(par, ser, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(par, reference.knn(pts, q, 16), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_k_equals_n_and_seed_larger_than_a_leaf(dtype):
    """k = n (the seed is the root) and k between leaf size and n (seeds span subtrees)."""
    rng = np.random.default_rng(13)
    pts = hl.make_cloud(300, rng).astype(dtype)
    q = hl.make_cloud(50, rng).astype(dtype)
    for k in (300, 150, 33):
        assert_exact(pts, q, k, parallel=False)


def test_single_point_and_tiny_leaves():
    one = np.ones((1, 3), dtype=np.float32)
    q = np.array([[0, 0, 0], [1, 1, 1], [5, 5, 5]], dtype=np.float32)
    idx, d2 = hl.knn(one, q, 1, device="numba")
    assert idx.tolist() == [[0], [0], [0]]
    np.testing.assert_array_equal(d2, reference.knn(one, q, 1)[1])
    rng = np.random.default_rng(14)
    pts = hl.make_cloud(200, rng)
    assert_exact(pts, hl.make_cloud(40, rng), 5, leaf=1, parallel=False)


def test_no_queries():
    pts = hl.make_cloud(100, np.random.default_rng(15))
    idx, d2 = _knn.knn_tree(_kdtree.build(pts, 32), np.empty((0, 3), np.float32), 4)
    assert idx.shape == (0, 4) and d2.shape == (0, 4) and d2.dtype == np.float32


def test_bad_input_refused():
    pts = hl.make_cloud(50, np.random.default_rng(16))
    with pytest.raises(InvalidInputError, match="k"):
        hl.knn(pts, pts[:3], 51, device="numba")  # k > n
    bad = pts.copy()
    bad[7, 1] = np.nan
    with pytest.raises(InvalidInputError):
        hl.knn(bad, pts[:3], 4, device="numba")
    with pytest.raises(InvalidInputError):
        hl.knn(pts, bad[:10], 4, device="numba")


def test_seeds_hold_enough_points():
    """Every leaf's seed is an ancestor-or-self with ≥ max(k, SEED_MIN) points (or the root)."""
    pts = hl.make_cloud(4000, np.random.default_rng(17), kind="clustered")
    t = _kdtree.build(pts, 32)
    need = 40
    _, _, seed = _kbuckets._planes(t.box, t.left, t.right, t.first, t.last, need)
    for leaf in np.flatnonzero(t.left < 0):
        s = seed[leaf]
        assert t.first[s] <= t.first[leaf] and t.last[leaf] <= t.last[s]
        assert s == 0 or t.last[s] - t.first[s] >= need


FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(n=st.integers(1, 400), m=st.integers(1, 60), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64]), dup=st.booleans(),
       scale=st.sampled_from([1e-20, 1.0, 1e6]))
def test_random_clouds(n, m, data, dtype, dup, scale):
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    pts = rng.random((n, 3)) * scale
    if dup:  # snap to a coarse grid: equal points and equal distances
        pts = np.round(pts / scale * 3) * scale
    pts = pts.astype(dtype)
    q = (rng.random((m, 3)) * 1.4 - 0.2) * scale
    q[: m // 2] = pts[rng.integers(0, n, m // 2)]
    k = data.draw(st.integers(1, n))
    leaf = data.draw(st.sampled_from([1, 4, 32]))
    assert_exact(pts, q.astype(dtype), k, leaf=leaf, parallel=False)
