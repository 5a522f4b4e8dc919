"""Voxel-grid downsampling by sorting: integer voxel keys, one stable sort, segment means.

Keys are ``floor(p / voxel_size)`` in float64 (as in the reference). When the key ranges fit,
the three coordinates pack into one int64 whose order is the lexicographic (x, y, z) order;
otherwise ``numpy.lexsort`` orders the rows. A stable sort keeps each voxel's points in index
order, so the float64 sums add in the reference's order.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS

__all__ = ["voxel_downsample_sorted"]


@numba.njit(**JIT_OPTIONS)
def _keys(points, voxel_size):  # pragma: no cover - compiled
    n = points.shape[0]
    keys = np.empty((n, 3), dtype=np.int64)
    for i in range(n):
        for c in range(3):
            keys[i, c] = np.int64(np.floor(np.float64(points[i, c]) / voxel_size))
    return keys


@numba.njit(**JIT_OPTIONS)
def _packed(keys, lo, span1, span2):  # pragma: no cover - compiled
    n = keys.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = ((keys[i, 0] - lo[0]) * span1 + (keys[i, 1] - lo[1])) * span2 + (
            keys[i, 2] - lo[2])
    return out


@numba.njit(**JIT_OPTIONS)
def _segment_means(points, keys, order, out_dtype_probe):  # pragma: no cover - compiled
    """Mean of each run of equal keys along ``order``, float64 sums, rounded to the dtype."""
    n = order.shape[0]
    out = np.empty((n, 3), dtype=out_dtype_probe.dtype)
    v = 0
    s = 0
    while s < n:
        a = order[s]
        e = s + 1
        while (e < n and keys[order[e], 0] == keys[a, 0] and keys[order[e], 1] == keys[a, 1]
               and keys[order[e], 2] == keys[a, 2]):
            e += 1
        for c in range(3):
            acc = 0.0
            for t in range(s, e):
                acc += np.float64(points[order[t], c])
            out[v, c] = acc / np.float64(e - s)
        v += 1
        s = e
    return out[:v].copy()


def voxel_downsample_sorted(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """Centroids (v, 3) in the points' dtype, voxels in lexicographic key order."""
    keys = _keys(points, float(voxel_size))
    lo = keys.min(axis=0)
    span = keys.max(axis=0) - lo + 1
    if float(span[0]) * float(span[1]) * float(span[2]) < 2.0**62:
        order = np.argsort(_packed(keys, lo, span[1], span[2]), kind="stable")
    else:
        order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0]))
    return _segment_means(points, keys, order, points[:0])
