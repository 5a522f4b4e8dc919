"""NumPy references of the point-cloud kernels: the ground truth every backend must equal.

Shared semantics (every backend follows them exactly):

* squared distance between ``p`` and ``q`` is ``((dx*dx) + dy*dy) + dz*dz`` in the points'
  dtype, with ``d = p - q`` — no fused multiply-add, so backends agree bit for bit;
* ties are broken by the lowest point index.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fps", "knn", "ball_query", "fps_knn", "voxel_downsample", "sq_dist_to"]

# queries per block in the brute-force references (bounds memory to ~block × n distances)
_BLOCK_ELEMS = 1 << 24


def sq_dist_to(points: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Squared distances of shape (n,) from every point (n, 3) to one point ``q`` (3,)."""
    d = points[:, 0] - q[0]
    out = d * d
    d = points[:, 1] - q[1]
    out += d * d
    d = points[:, 2] - q[2]
    out += d * d
    return out


def _sq_dist_block(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Squared distances of shape (m, n) from queries (m, 3) to points (n, 3)."""
    d = queries[:, None, 0] - points[None, :, 0]
    out = d * d
    d = queries[:, None, 1] - points[None, :, 1]
    out += d * d
    d = queries[:, None, 2] - points[None, :, 2]
    out += d * d
    return out


def fps(points: np.ndarray, n_samples: int, start: int) -> np.ndarray:
    """Farthest point sampling: indices (n_samples,) int64, first ``start``.

    Each step picks the point whose distance to the chosen set is largest, lowest index on
    ties; chosen points are never picked again (duplicates of chosen points, at distance 0,
    come in index order once everything else is at distance 0).
    """
    n = points.shape[0]
    out = np.empty(n_samples, dtype=np.int64)
    dist = np.full(n, np.inf, dtype=points.dtype)
    last = start
    out[0] = last
    for i in range(1, n_samples):
        np.minimum(dist, sq_dist_to(points, points[last]), out=dist)
        dist[last] = -1  # chosen: never again
        last = int(np.argmax(dist))
        out[i] = last
    return out


def _select_k(d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise k smallest of ``d`` (m, n) sorted by (value, column): (idx int64, values)."""
    m, n = d.shape
    if k == n:
        idx = np.argsort(d, axis=1, kind="stable")
    else:
        kth = np.partition(d, k - 1, axis=1)[:, k - 1]
        rows, cols = np.nonzero(d <= kth[:, None])  # at least k per row, rows ascending
        vals = d[rows, cols]
        order = np.lexsort((cols, vals, rows))
        rows, cols = rows[order], cols[order]
        starts = np.searchsorted(rows, np.arange(m))
        take = starts[:, None] + np.arange(k)[None, :]
        idx = cols[take]
    return idx.astype(np.int64), np.take_along_axis(d, idx, axis=1)


def knn(points: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k nearest points of each query: (indices (m, k) int64, squared distances (m, k)).

    Rows are sorted by ascending distance, ties by ascending point index.
    """
    m, n = queries.shape[0], points.shape[0]
    idx = np.empty((m, k), dtype=np.int64)
    dist = np.empty((m, k), dtype=points.dtype)
    block = max(1, _BLOCK_ELEMS // max(n, 1))
    for s in range(0, m, block):
        d = _sq_dist_block(points, queries[s : s + block])
        idx[s : s + block], dist[s : s + block] = _select_k(d, k)
    return idx, dist


def ball_query(points: np.ndarray, centers: np.ndarray, radius2: np.floating, k: int) -> np.ndarray:
    """First ``k`` points (index order) with squared distance < ``radius2`` of each center.

    Returns (m, k) int64; a row with fewer than k hits is padded with its first hit, a row
    with none is all -1 (PointNet++ semantics, with -1 instead of a silent 0).
    """
    m, n = centers.shape[0], points.shape[0]
    out = np.full((m, k), -1, dtype=np.int64)
    block = max(1, _BLOCK_ELEMS // max(n, 1))
    for s in range(0, m, block):
        inside = _sq_dist_block(points, centers[s : s + block]) < radius2
        for r, row in enumerate(inside):
            hits = np.flatnonzero(row)[:k]
            if hits.size:
                out[s + r, : hits.size] = hits
                out[s + r, hits.size :] = hits[0]
    return out


def fps_knn(
    points: np.ndarray, n_samples: int, k: int, start: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FPS centres and their k nearest neighbours: (centres (s,), idx (s, k), sq. dist (s, k)).

    Equal to ``c = fps(points, n_samples, start); knn(points, points[c], k)``.
    """
    centres = fps(points, n_samples, start)
    idx, dist = knn(points, points[centres], k)
    return centres, idx, dist


def voxel_keys(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """Integer voxel coordinates (n, 3) int64: ``floor(p / voxel_size)`` in float64."""
    return np.floor(points.astype(np.float64) / voxel_size).astype(np.int64)


def voxel_downsample(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """One centroid per occupied voxel, shape (v, 3) in the points' dtype.

    Voxels are ordered by their integer coordinates (x, then y, then z); each centroid is the
    float64 mean of its points, rounded to the points' dtype.
    """
    keys = voxel_keys(points, voxel_size)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=uniq.shape[0]).astype(np.float64)
    out = np.empty((uniq.shape[0], 3), dtype=np.float64)
    for c in range(3):
        out[:, c] = np.bincount(inverse, weights=points[:, c].astype(np.float64),
                                minlength=uniq.shape[0]) / counts
    return out.astype(points.dtype)
