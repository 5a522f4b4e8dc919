"""Sorting kNN queries into the leaves of a point k-d tree (the buckets of :mod:`._knn`).

Each internal node gets a separating plane between its children's tight boxes (the axis
with the widest gap, cut in its middle: any plane would do, it only decides which bucket
serves a query, never the answer), each leaf a seed node (its deepest ancestor-or-self with
enough points), and every query descends by the planes to its leaf; a counting sort groups
the queries by leaf.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS
from ._kdtree import KDTree

__all__ = ["Buckets", "bucket_queries", "SEED_MIN"]

#: the seed node of a bucket holds at least this many points (and at least k)
SEED_MIN = 32


@numba.njit(**JIT_OPTIONS)
def _planes(box, left, right, first, last, seed_min):  # pragma: no cover - compiled
    """Per node: a separating axis and cut between its children (for bucketing only), and
    the seed node of each leaf (deepest ancestor-or-self with ≥ ``seed_min`` points)."""
    nn = left.shape[0]
    axis = np.zeros(nn, dtype=np.int64)
    cut = np.zeros(nn, dtype=np.float64)
    seed = np.zeros(nn, dtype=np.int64)
    for node in range(nn):  # preorder: a parent comes before its children
        lc = left[node]
        if lc < 0:
            continue
        rc = right[node]
        best = -np.inf
        for a in range(3):
            gap = box[rc, a] - box[lc, 3 + a]
            if gap > best:
                best = gap
                axis[node] = a
        a = axis[node]
        cut[node] = 0.5 * (box[lc, 3 + a] + box[rc, a])
        for c in (lc, rc):
            seed[c] = c if last[c] - first[c] >= seed_min else seed[node]
    return axis, cut, seed


@numba.njit(**JIT_OPTIONS)
def _leaf_of(left, right, axis, cut, queries, r):  # pragma: no cover - compiled
    node = 0
    while left[node] >= 0:
        node = left[node] if queries[r, axis[node]] < cut[node] else right[node]
    return node


@numba.njit(parallel=True, **JIT_OPTIONS)
def _descend_parallel(left, right, axis, cut, queries, leaf_of):  # pragma: no cover
    for r in numba.prange(queries.shape[0]):
        leaf_of[r] = _leaf_of(left, right, axis, cut, queries, r)


@numba.njit(**JIT_OPTIONS)
def _descend_serial(left, right, axis, cut, queries, leaf_of):  # pragma: no cover
    for r in range(queries.shape[0]):
        leaf_of[r] = _leaf_of(left, right, axis, cut, queries, r)


@numba.njit(**JIT_OPTIONS)
def _buckets(leaf_of, nn):  # pragma: no cover - compiled
    """Counting sort of the queries by leaf: (order, bucket leaves, bucket starts)."""
    count = np.zeros(nn + 1, dtype=np.int64)
    for r in range(leaf_of.shape[0]):
        count[leaf_of[r] + 1] += 1
    nb = 0
    for node in range(nn):
        nb += count[node + 1] > 0
        count[node + 1] += count[node]
    order = np.empty(leaf_of.shape[0], dtype=np.int64)
    pos = count[:nn].copy()
    for r in range(leaf_of.shape[0]):
        order[pos[leaf_of[r]]] = r
        pos[leaf_of[r]] += 1
    leaves = np.empty(nb, dtype=np.int64)
    starts = np.empty(nb + 1, dtype=np.int64)
    j = 0
    for node in range(nn):
        if count[node + 1] > count[node]:
            leaves[j] = node
            starts[j] = count[node]
            j += 1
    starts[nb] = leaf_of.shape[0]
    return order, leaves, starts


class Buckets(NamedTuple):
    """The queries sorted into the tree's leaves (:func:`bucket_queries`)."""

    xs: np.ndarray  #: (n,) the tree's points, one coordinate per array, tree order
    ys: np.ndarray
    zs: np.ndarray
    seed: np.ndarray  #: (nodes,) int64: each leaf's seed node
    leaves: np.ndarray  #: (b,) int64: the leaves that got queries
    starts: np.ndarray  #: (b + 1,) int64: bucket j is order[starts[j]:starts[j + 1]]
    order: np.ndarray  #: (m,) int64: query indices, bucket by bucket
    smax: int  #: most points in a seed node
    lmax: int  #: most points in a leaf


def bucket_queries(tree: KDTree, queries: np.ndarray, k: int, parallel: bool) -> Buckets:
    """Sort the queries (m ≥ 1, 3) into the leaves of ``tree`` by its split planes (the
    descents in parallel with ``parallel``)."""
    axis, cut, seed = _planes(tree.box, tree.left, tree.right, tree.first, tree.last,
                              max(k, SEED_MIN))
    leaf_of = np.empty(queries.shape[0], dtype=np.int64)
    descend = _descend_parallel if parallel else _descend_serial
    descend(tree.left, tree.right, axis, cut, queries, leaf_of)
    order, leaves, starts = _buckets(leaf_of, tree.left.shape[0])
    is_leaf = tree.left < 0
    smax = int(np.max(tree.last[seed[is_leaf]] - tree.first[seed[is_leaf]]))
    lmax = int(np.max(tree.last[is_leaf] - tree.first[is_leaf]))
    xs, ys, zs = (np.ascontiguousarray(tree.pts_t[:, c]) for c in range(3))
    return Buckets(xs, ys, zs, seed, leaves, starts, order, smax, lmax)
