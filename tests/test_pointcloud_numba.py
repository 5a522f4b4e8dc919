"""Internals of the numba point-cloud kernels: the k-d tree, exact pruning, the FPS work it
saves, parallel vs serial paths, and hard clouds (duplicates, clusters, float64, k = n)."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.pointcloud import _kdtree, _knn, _search, _voxel, reference
from hetlab.kernels.pointcloud import numba as nb
from hetlab.kernels.pointcloud._fps_tree import fps_on_tree, fps_positions


def sq_dist(points: np.ndarray, q: np.ndarray) -> np.ndarray:
    return reference.sq_dist_to(points, q)


def clouds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    dup = np.repeat(rng.integers(0, 4, (60, 3)), 25, axis=0).astype(np.float32)
    return {
        "uniform": hl.make_cloud(3000, rng),
        "clustered": hl.make_cloud(3000, rng, kind="clustered"),
        "duplicates": rng.permutation(dup),
        "identical": np.zeros((500, 3)),
        "line64": np.c_[rng.random(800), np.zeros(800), np.zeros(800)],
        "one": np.ones((1, 3), dtype=np.float32),
    }


def check_tree(t: _kdtree.KDTree, pts: np.ndarray, leaf: int) -> None:
    n = pts.shape[0]
    assert np.array_equal(np.sort(t.perm), np.arange(n))
    assert np.array_equal(t.pts_t, pts[t.perm])
    assert t.first[0] == 0 and t.last[0] == n
    for node in range(t.box.shape[0]):
        s, e = t.first[node], t.last[node]
        assert e > s
        seg = t.pts_t[s:e].astype(np.float64)
        np.testing.assert_array_equal(t.box[node, :3], seg.min(axis=0))  # tight boxes
        np.testing.assert_array_equal(t.box[node, 3:], seg.max(axis=0))
        assert t.minidx[node] == t.perm[s:e].min()
        lc, rc = t.left[node], t.right[node]
        if lc < 0:
            assert rc < 0 and e - s <= leaf
            continue
        assert lc == node + 1 and rc > lc  # preorder: children after their parent
        assert t.first[lc] == s and t.last[lc] == t.first[rc] and t.last[rc] == e
        for child in (lc, rc):  # no child keeps more than 3/4 of its parent (+ rounding)
            assert t.last[child] - t.first[child] <= 0.75 * (e - s) + 1


@pytest.mark.parametrize("name", list(clouds()))
@pytest.mark.parametrize("leaf", [1, 8, 64])
def test_tree_invariants(name, leaf):
    pts = clouds()[name]
    serial = _kdtree.build(pts, leaf, parallel=False)
    check_tree(serial, pts, leaf)
    parallel = _kdtree.build(pts, leaf, parallel=True)
    for a, b in zip(serial, parallel, strict=True):  # same tree both ways
        np.testing.assert_array_equal(a, b)


def test_build_rejects_bad_leaf_size():
    with pytest.raises(ValueError, match="leaf_size"):
        _kdtree.build(np.zeros((3, 3)), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_lower_bound_is_below_every_computed_distance(dtype):
    """Adversarial queries: on box faces and corners, far away, and at underflow scales."""
    rng = np.random.default_rng(5)
    rel, absm = _kdtree.margins(dtype)
    for scale in (1.0, 1e-20, 1e15):
        pts = (rng.random((400, 3)) * scale).astype(dtype)
        t = _kdtree.build(pts, 16)
        queries = np.concatenate([
            pts[rng.integers(0, 400, 50)],
            t.box[rng.integers(0, t.box.shape[0], 50)][:, [0, 4, 2]].astype(dtype),
            ((rng.random((50, 3)) * 3 - 1) * scale).astype(dtype),
        ])
        for q in queries:
            d = sq_dist(t.pts_t, q)
            for node in range(t.box.shape[0]):
                lb = _kdtree.box_lower_bound(t.box, node, float(q[0]), float(q[1]),
                                             float(q[2]), rel, absm)
                assert lb <= float(d[t.first[node]:t.last[node]].min())


@pytest.mark.parametrize("kind", ["uniform", "clustered"])
def test_fps_skips_most_points(kind):
    """The bounds prune: far fewer distances than the n · samples of plain FPS."""
    pts = hl.make_cloud(20_000, np.random.default_rng(11), kind=kind)
    idx, pos, touched = fps_on_tree(_kdtree.build(pts, 64), 1000, 7)
    assert np.array_equal(idx, reference.fps(pts, 1000, 7))
    assert np.array_equal(idx, _kdtree.build(pts, 64).perm[pos])
    assert touched < 0.1 * 20_000 * 999


def test_fps_py_func_matches_compiled():
    """The interpreted algorithm and the compiled one agree (and both equal the reference)."""
    pts = hl.make_cloud(300, np.random.default_rng(2), kind="clustered")
    t = _kdtree.build(pts, 8)
    rel, absm = _kdtree.margins(pts.dtype)
    a = np.empty(40, dtype=np.int64)
    b = np.empty(40, dtype=np.int64)
    assert fps_positions(t, 40, 3, rel, absm, a) == fps_positions.py_func(t, 40, 3, rel, absm, b)
    assert np.array_equal(a, b)
    assert np.array_equal(t.perm[a], reference.fps(pts, 40, 3))


@pytest.mark.parametrize("name", list(clouds()))
def test_all_kernels_on_hard_clouds(name):
    pts = clouds()[name]
    n = pts.shape[0]
    rng = np.random.default_rng(4)
    q = np.concatenate([pts[rng.integers(0, n, 40)], rng.random((40, 3)) * 4]).astype(pts.dtype)
    k = min(n, 20)
    assert np.array_equal(nb.fps(pts, n, n // 2), reference.fps(pts, n, n // 2))  # s == n
    for got, exp in zip(nb.knn(pts, q, k), reference.knn(pts, q, k), strict=True):
        assert got.dtype == exp.dtype and np.array_equal(got, exp)
    for r in (0.3, 1.0, 1.5):
        r2 = pts.dtype.type(r) * pts.dtype.type(r)
        assert np.array_equal(nb.ball_query(pts, q, r2, k), reference.ball_query(pts, q, r2, k))
    s = min(n, 50)
    for got, exp in zip(nb.fps_knn(pts, s, k, 0), reference.fps_knn(pts, s, k, 0), strict=True):
        assert np.array_equal(got, exp)
    np.testing.assert_array_equal(nb.voxel_downsample(pts, 0.7),
                                  reference.voxel_downsample(pts, 0.7))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_knn_k_equals_n_and_float64(dtype):
    pts = hl.make_cloud(200, np.random.default_rng(8)).astype(dtype)
    q = hl.make_cloud(30, np.random.default_rng(9)).astype(dtype)
    got = hl.knn(pts, q, 200, device="numba")
    exp = reference.knn(pts, q, 200)
    assert got[1].dtype == dtype
    for a, b in zip(got, exp, strict=True):
        np.testing.assert_array_equal(a, b)


def test_parallel_and_serial_query_paths_agree():
    """Enough queries to take the prange path; the serial path on the same rows agrees."""
    rng = np.random.default_rng(6)
    pts = hl.make_cloud(5000, rng, kind="clustered")
    q = hl.make_cloud(max(_search.PARALLEL_MIN_QUERIES, _knn.PARALLEL_MIN_QUERIES) + 100, rng,
                      kind="clustered")
    t = _kdtree.build(pts, 32)
    idx, d2 = _search.knn_tree(t, q, 8)
    s_idx, s_d2 = _knn.knn_tree(t, q, 8, parallel=False)
    assert np.array_equal(idx, s_idx) and np.array_equal(d2, s_d2)
    head = slice(0, 300)
    for a, b in zip((idx[head], d2[head]), reference.knn(pts, q[head], 8), strict=True):
        assert np.array_equal(a, b)
    r2 = np.float32(0.03) ** 2
    bq = _search.ball_query_tree(t, q, r2, 16)
    assert np.array_equal(bq[head], reference.ball_query(pts, q[head], r2, 16))


def test_ball_query_many_hits_keeps_smallest_indices():
    pts = hl.make_cloud(2000, np.random.default_rng(1))
    c = pts[:50]
    r2 = np.float32(0.8) ** 2  # most points inside: the index bound must prune correctly
    got = hl.ball_query(pts, c, 0.8, 5, device="numba")
    assert np.array_equal(got, reference.ball_query(pts, c, r2, 5))


def test_voxel_lexsort_fallback_for_huge_key_ranges():
    """Key ranges too wide to pack in one int64 take the lexsort path; same result."""
    rng = np.random.default_rng(10)
    pts = np.concatenate([rng.random((300, 3)), [[1e13, -1e13, 1e13]]])
    keys = reference.voxel_keys(pts, 0.25)
    span = keys.max(axis=0) - keys.min(axis=0) + 1
    assert float(np.prod(span.astype(float))) >= 2.0**62  # really the fallback
    got = _voxel.voxel_downsample_sorted(pts, 0.25)
    np.testing.assert_array_equal(got, reference.voxel_downsample(pts, 0.25))
