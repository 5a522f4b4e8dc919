"""Numba (multithreaded CPU) point-cloud kernels.

Thin wrappers over the jitted cores beside this module; each receives the arguments already
validated by :mod:`.spec` (contiguous float32/float64 arrays, python ints) and returns exactly
what :mod:`.reference` returns: int64 indices, distances and centroids in the points' dtype.

* FPS and the fused FPS+kNN walk a k-d tree with tight boxes and skip every subtree whose
  distances cannot shrink (:mod:`._fps_tree`), QuickFPS/PTrAcc style;
* kNN sorts the queries into the tree's leaves and serves them a bucket at a time, in
  parallel over buckets (:mod:`._knn`); the ball query walks the tree per query, in parallel
  (:mod:`._search`);
* voxel downsampling sorts integer voxel keys (:mod:`._voxel`).
"""

from __future__ import annotations

import numpy as np

from . import _kdtree
from ._fps_tree import fps_on_tree
from ._knn import knn_tree
from ._search import ball_query_tree
from ._voxel import voxel_downsample_sorted

__all__ = ["fps", "knn", "ball_query", "fps_knn", "voxel_downsample"]

#: points per leaf: FPS scans whole leaves, the searches prune finer
FPS_LEAF = 64
SEARCH_LEAF = 32
FUSED_LEAF = 48


def fps(points: np.ndarray, n_samples: int, start: int) -> np.ndarray:
    """Exact farthest point sampling: (n_samples,) int64 indices, equal to the reference."""
    idx, _, _ = fps_on_tree(_kdtree.build(points, FPS_LEAF), n_samples, start)
    return idx


def knn(points: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k nearest neighbours: (indices (m, k) int64, squared distances (m, k) points' dtype)."""
    return knn_tree(_kdtree.build(points, SEARCH_LEAF), queries, k)


def ball_query(points: np.ndarray, centers: np.ndarray, radius2: np.floating, k: int) -> np.ndarray:
    """First k hits (index order) with squared distance < radius2: (m, k) int64, -1 if none."""
    return ball_query_tree(_kdtree.build(points, SEARCH_LEAF), centers, radius2, k)


def fps_knn(
    points: np.ndarray, n_samples: int, k: int, start: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fused transition-down: FPS centres and their kNN, sharing one k-d tree.

    The centres' coordinates come straight from the tree's reordered copy, so the kNN
    queries need no gather from the original cloud.
    """
    tree = _kdtree.build(points, FUSED_LEAF)
    centres, pos, _ = fps_on_tree(tree, n_samples, start)
    idx, dist = knn_tree(tree, tree.pts_t[pos], k)
    return centres, idx, dist


def voxel_downsample(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """One centroid per occupied voxel, (v, 3) in the points' dtype, lexicographic voxel order."""
    return voxel_downsample_sorted(points, voxel_size)
