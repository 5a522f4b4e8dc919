"""A k-d tree with tight float64 bounding boxes, built by Numba; shared by the numba FPS, kNN,
ball-query and fused kernels.

Layout (all arrays indexed by node id; children always have larger ids than their parent, so
a reverse sweep over ids visits children before parents):

* ``perm`` (n,) int64: original point index at each tree position; ``pts_t`` (n, 3): the
  points in tree order (a contiguous copy, the points' dtype);
* ``box`` (nodes, 6) float64: tight bounds ``lo0 lo1 lo2 hi0 hi1 hi2`` of the node's points;
* ``first``/``last`` (nodes,) int64: the node's tree positions ``[first, last)``;
* ``left``/``right`` (nodes,) int64: children, ``-1`` for a leaf;
* ``minidx`` (nodes,) int64: the smallest original index in the node.

Nodes split at the median position along the axis of largest extent until at most
``leaf_size`` points remain; inside a leaf, positions follow the original index order.

Exact pruning: a kernel may skip a node only when *every* distance it would compute there,
in the points' dtype with ``((dx*dx) + dy*dy) + dz*dz``, is known to be at least (or above) a
threshold. :func:`box_lower_bound` returns a float64 bound that is safely below any such
computed distance: the exact box distance shrunk by a relative margin far above the dtype's
worst-case rounding of the formula (~6 ulps) and an absolute margin covering underflow.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS

__all__ = ["KDTree", "build", "box_lower_bound", "margins", "STACK_SIZE"]

#: explicit traversal stacks hold this many node ids (depth ≤ 63 for any n < 2**63)
STACK_SIZE = 256

_F64_MAX = float(np.finfo(np.float64).max)


class KDTree(NamedTuple):
    """The arrays of one tree (see the module docstring)."""

    perm: np.ndarray
    pts_t: np.ndarray
    box: np.ndarray
    first: np.ndarray
    last: np.ndarray
    left: np.ndarray
    right: np.ndarray
    minidx: np.ndarray


def margins(dtype: np.dtype) -> tuple[float, float]:
    """(relative, absolute) safety margins of :func:`box_lower_bound` for a points dtype."""
    if np.dtype(dtype) == np.float32:
        return 1e-5, 1e-35  # float32 formula error ≤ ~6 · 2**-24 ≈ 3.6e-7 relative
    return 1e-13, 1e-300  # float64: ≤ ~6 · 2**-53 ≈ 6.7e-16 relative


@numba.njit(**JIT_OPTIONS)
def box_lower_bound(box, node, q0, q1, q2, rel, absm):  # pragma: no cover - compiled
    """A float64 value ≤ the computed squared distance from (q0, q1, q2) to any point of
    ``node``; negative when the query lies inside the node's box."""
    # branch-free: the gap along an axis is max(lo - q, q - hi, 0)
    g0 = max(max(box[node, 0] - q0, q0 - box[node, 3]), 0.0)
    g1 = max(max(box[node, 1] - q1, q1 - box[node, 4]), 0.0)
    g2 = max(max(box[node, 2] - q2, q2 - box[node, 5]), 0.0)
    s = (g0 * g0 + g1 * g1) + g2 * g2
    s = s * (1.0 - rel) - absm
    if s > _F64_MAX:  # overflow in float64: still a valid bound, but keep it finite
        s = _F64_MAX
    return s


@numba.njit(**JIT_OPTIONS)
def _select(perm, w, axis, lo, hi, kth):  # pragma: no cover - compiled
    """Reorder rows ``lo:hi`` of ``w`` (and ``perm`` alike) so row ``kth`` has no larger key
    (column ``axis``) above it and no smaller key below it (Hoare quickselect, median of
    three; fine with many equal keys)."""
    left = lo
    right = hi - 1
    while right > left:
        mid = (left + right) >> 1
        a = w[left, axis]
        b = w[mid, axis]
        c = w[right, axis]
        if a > b:
            a, b = b, a
        if b > c:
            b = c
            if a > b:
                b = a
        pivot = b
        i = left
        j = right
        while i <= j:
            while w[i, axis] < pivot:
                i += 1
            while w[j, axis] > pivot:
                j -= 1
            if i <= j:
                tmp = perm[i]
                perm[i] = perm[j]
                perm[j] = tmp
                for c3 in range(3):
                    t = w[i, c3]
                    w[i, c3] = w[j, c3]
                    w[j, c3] = t
                i += 1
                j -= 1
        if kth <= j:
            right = j
        elif kth >= i:
            left = i
        else:
            return


@numba.njit(**JIT_OPTIONS)
def _sort_leaf(perm, w, s, e):  # pragma: no cover - compiled
    """Insertion-sort rows ``s:e`` of ``w`` and ``perm`` by original index (ties in a leaf
    then resolve by position)."""
    for a in range(s + 1, e):
        i = perm[a]
        x = w[a, 0]
        y = w[a, 1]
        z = w[a, 2]
        b = a
        while b > s and perm[b - 1] > i:
            perm[b] = perm[b - 1]
            w[b, 0] = w[b - 1, 0]
            w[b, 1] = w[b - 1, 1]
            w[b, 2] = w[b - 1, 2]
            b -= 1
        perm[b] = i
        w[b, 0] = x
        w[b, 1] = y
        w[b, 2] = z


@numba.njit(**JIT_OPTIONS)
def _build(pts, leaf_size):  # pragma: no cover - compiled
    n = pts.shape[0]
    cap = 2 * n  # a binary tree with ≥ 1 point per leaf has < 2n nodes
    perm = np.arange(n)
    w = pts.copy()  # the points, reordered along with perm (sequential scans)
    box = np.empty((cap, 6), dtype=np.float64)
    first = np.empty(cap, dtype=np.int64)
    last = np.empty(cap, dtype=np.int64)
    left = np.empty(cap, dtype=np.int64)
    right = np.empty(cap, dtype=np.int64)
    minidx = np.empty(cap, dtype=np.int64)
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    first[0] = 0
    last[0] = n
    nodes = 1
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        s = first[node]
        e = last[node]
        lo0 = lo1 = lo2 = np.inf
        hi0 = hi1 = hi2 = -np.inf
        mi = n
        for p in range(s, e):
            i = perm[p]
            x = np.float64(w[p, 0])
            y = np.float64(w[p, 1])
            z = np.float64(w[p, 2])
            lo0 = min(lo0, x)
            hi0 = max(hi0, x)
            lo1 = min(lo1, y)
            hi1 = max(hi1, y)
            lo2 = min(lo2, z)
            hi2 = max(hi2, z)
            mi = min(mi, i)
        box[node, 0] = lo0
        box[node, 1] = lo1
        box[node, 2] = lo2
        box[node, 3] = hi0
        box[node, 4] = hi1
        box[node, 5] = hi2
        minidx[node] = mi
        if e - s <= leaf_size:
            left[node] = -1
            right[node] = -1
            _sort_leaf(perm, w, s, e)
            continue
        ext0 = hi0 - lo0
        ext1 = hi1 - lo1
        ext2 = hi2 - lo2
        axis = 0
        if ext1 > ext0 and ext1 >= ext2:
            axis = 1
        elif ext2 > ext0 and ext2 > ext1:
            axis = 2
        m = (s + e) >> 1
        _select(perm, w, axis, s, e, m)
        lc = nodes
        rc = nodes + 1
        nodes += 2
        first[lc] = s
        last[lc] = m
        first[rc] = m
        last[rc] = e
        left[node] = lc
        right[node] = rc
        stack[sp] = rc
        stack[sp + 1] = lc
        sp += 2
    return (perm, w, box[:nodes], first[:nodes], last[:nodes], left[:nodes],
            right[:nodes], minidx[:nodes])


def build(points: np.ndarray, leaf_size: int = 16) -> KDTree:
    """Build the tree of a contiguous (n ≥ 1, 3) float32/float64 cloud."""
    if leaf_size < 1:
        raise ValueError(f"build: leaf_size must be ≥ 1; got {leaf_size}.")
    return KDTree(*_build(points, leaf_size))
