"""Exact ball queries over a k-d tree, parallel over queries (kNN: :mod:`._knn`, re-exported
here as :func:`knn_tree`).

The ball query walks the tree with an explicit stack, keeps the k smallest indices among
hits (squared distance < radius²) and skips a node when its box lower bound
(:func:`._kdtree.box_lower_bound`, safe under float rounding) is ≥ radius², or when the row
is full and the node's smallest index is above every kept index.

Queries are split into chunks, run in parallel (``prange``) when there are enough of them;
each chunk allocates its stack once.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS
from ._kdtree import STACK_SIZE, KDTree, box_lower_bound, margins
from ._knn import knn_tree

__all__ = ["knn_tree", "ball_query_tree"]

_CHUNK = 256  # queries per parallel chunk
#: fewer queries than this run on one thread (a parallel region costs more than it saves)
PARALLEL_MIN_QUERIES = 2048


def _use_threads(m: int) -> bool:
    return m >= PARALLEL_MIN_QUERIES and numba.get_num_threads() > 1


@numba.njit(**JIT_OPTIONS)
def _ball_one(tree, qx, qy, qz, r2, r2_64, k, rel, absm, out, row, stack):  # pragma: no cover
    perm, pts_t, box, first, last, left, right, minidx = tree
    q0 = np.float64(qx)
    q1 = np.float64(qy)
    q2 = np.float64(qz)
    count = 0  # hits kept in out[row, :count], ascending
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if count == k and minidx[node] > out[row, k - 1]:
            continue
        if box_lower_bound(box, node, q0, q1, q2, rel, absm) >= r2_64:
            continue
        lc = left[node]
        if lc >= 0:
            # lower indices first: the row fills with small indices sooner
            if minidx[lc] <= minidx[right[node]]:
                stack[sp] = right[node]
                stack[sp + 1] = lc
            else:
                stack[sp] = lc
                stack[sp + 1] = right[node]
            sp += 2
            continue
        for p in range(first[node], last[node]):
            i = perm[p]
            if count == k and i > out[row, k - 1]:
                continue
            dx = qx - pts_t[p, 0]
            dy = qy - pts_t[p, 1]
            dz = qz - pts_t[p, 2]
            d = ((dx * dx) + dy * dy) + dz * dz
            if not d < r2:
                continue
            j = count if count < k else k - 1
            if count < k:
                count += 1
            while j > 0 and out[row, j - 1] > i:
                out[row, j] = out[row, j - 1]
                j -= 1
            out[row, j] = i
    if count == 0:
        for j in range(k):
            out[row, j] = -1
    else:
        for j in range(count, k):
            out[row, j] = out[row, 0]


@numba.njit(**JIT_OPTIONS)
def _ball_chunk(tree, centers, r2, r2_64, k, rel, absm, out, c):  # pragma: no cover
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    for r in range(c * _CHUNK, min(centers.shape[0], (c + 1) * _CHUNK)):
        _ball_one(tree, centers[r, 0], centers[r, 1], centers[r, 2], r2, r2_64, k, rel,
                  absm, out, r, stack)


@numba.njit(parallel=True, **JIT_OPTIONS)
def _ball_parallel(tree, centers, r2, r2_64, k, rel, absm, out):  # pragma: no cover
    for c in numba.prange((centers.shape[0] + _CHUNK - 1) // _CHUNK):
        _ball_chunk(tree, centers, r2, r2_64, k, rel, absm, out, c)


@numba.njit(**JIT_OPTIONS)
def _ball_serial(tree, centers, r2, r2_64, k, rel, absm, out):  # pragma: no cover
    for c in range((centers.shape[0] + _CHUNK - 1) // _CHUNK):
        _ball_chunk(tree, centers, r2, r2_64, k, rel, absm, out, c)


def ball_query_tree(tree: KDTree, centers: np.ndarray, radius2, k: int) -> np.ndarray:
    """First ``k`` point indices with squared distance < ``radius2`` per center, (m, k) int64;
    padded with the first hit, -1 rows without hits."""
    rel, absm = margins(tree.pts_t.dtype)
    r2 = tree.pts_t.dtype.type(radius2)
    out = np.empty((centers.shape[0], k), dtype=np.int64)
    m = centers.shape[0]
    if _use_threads(m):
        _ball_parallel(tree, centers, r2, float(r2), k, rel, absm, out)
    elif m:
        _ball_serial(tree, centers, r2, float(r2), k, rel, absm, out)
    return out
