"""A k-d tree with tight float64 bounding boxes, built by Numba; shared by the numba FPS, kNN,
ball-query and fused kernels.

Layout (all arrays indexed by node id, numbered in preorder: a left child is ``node + 1``,
children always have larger ids than their parent, so a reverse sweep over ids visits
children before parents):

* ``perm`` (n,) int64: original point index at each tree position; ``pts_t`` (n, 3): the
  points in tree order (a contiguous copy, the points' dtype);
* ``box`` (nodes, 6) float64: tight bounds ``lo0 lo1 lo2 hi0 hi1 hi2`` of the node's points;
* ``first``/``last`` (nodes,) int64: the node's tree positions ``[first, last)``;
* ``left``/``right`` (nodes,) int64: children, ``-1`` for a leaf;
* ``minidx`` (nodes,) int64: the smallest original index in the node.

Nodes split near the median of their longest side until at most ``leaf_size`` points
remain (:mod:`._kdsplit`); every child holds at most 3/4 of its parent.

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
from ._kdsplit import STACK_SIZE, grow, tighten

__all__ = ["KDTree", "build", "box_lower_bound", "margins", "STACK_SIZE"]

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
def _build_top(pts, leaf_size, top_depth):  # pragma: no cover - compiled
    """Allocate, then split the top ``top_depth`` levels. Returns the arrays, the pending
    subtree roots, the nodes processed and where each pending subtree's ids start."""
    n = pts.shape[0]
    top = 1 << (top_depth + 1)  # ids of the nodes at depth ≤ top_depth
    cap = top + 2 * n
    perm = np.arange(n)
    w = pts.copy()  # the points, reordered along with perm (sequential scans)
    box = np.empty((cap, 6), dtype=np.float64)
    nbox = np.empty((cap, 6), dtype=np.float64)
    first = np.empty(cap, dtype=np.int64)
    last = np.empty(cap, dtype=np.int64)
    left = np.empty(cap, dtype=np.int64)
    right = np.empty(cap, dtype=np.int64)
    minidx = np.empty(cap, dtype=np.int64)
    used = np.zeros(cap, dtype=np.bool_)
    used[0] = True
    first[0] = 0
    last[0] = n
    for c in range(3):
        nbox[0, c] = np.float64(pts[:, c].min())
        nbox[0, 3 + c] = np.float64(pts[:, c].max())
    pend = np.empty(1 << top_depth, dtype=np.int64)
    seen = np.empty(top, dtype=np.int64)
    npend, nseen, _ = grow(perm, w, first, last, left, right, nbox, used, 0, 1, leaf_size,
                           top_depth, pend, seen)
    base = np.empty(npend + 1, dtype=np.int64)
    base[0] = top
    for j in range(npend):  # a subtree of c points: ≤ 2c − 2 ids below its root
        base[j + 1] = base[j] + 2 * (last[pend[j]] - first[pend[j]]) - 2
    return (perm, w, box, nbox, first, last, left, right, minidx, used, pend[:npend],
            seen[:nseen], base)


@numba.njit(**JIT_OPTIONS)
def _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, used, root, base,
                   leaf_size):  # pragma: no cover - compiled
    """Split and tighten the whole subtree at ``root``, its other ids from ``base`` on."""
    none = np.empty(0, dtype=np.int64)
    _, _, end = grow(perm, w, first, last, left, right, nbox, used, root, base, leaf_size,
                     -1, none, none)
    for node in range(end - 1, base - 1, -1):
        if used[node]:
            tighten(perm, w, first, last, left, right, box, minidx, node)
    tighten(perm, w, first, last, left, right, box, minidx, root)


@numba.njit(**JIT_OPTIONS)
def _finish(perm, w, box, first, last, left, right, minidx, used, seen):  # pragma: no cover
    """Tighten the top nodes, then renumber the nodes densely in preorder."""
    for j in range(seen.shape[0] - 1, -1, -1):
        tighten(perm, w, first, last, left, right, box, minidx, seen[j])
    cap = used.shape[0]
    new = np.full(cap, -1, dtype=np.int64)  # preorder ids: a left child follows its parent
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    stack[0] = 0
    sp = 1
    k = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        new[node] = k
        k += 1
        if left[node] >= 0:
            stack[sp] = right[node]
            stack[sp + 1] = left[node]
            sp += 2
    o_box = np.empty((k, 6), dtype=np.float64)
    o_first = np.empty(k, dtype=np.int64)
    o_last = np.empty(k, dtype=np.int64)
    o_left = np.empty(k, dtype=np.int64)
    o_right = np.empty(k, dtype=np.int64)
    o_min = np.empty(k, dtype=np.int64)
    for i in range(cap):
        if used[i]:
            j = new[i]
            for c in range(6):
                o_box[j, c] = box[i, c]
            o_first[j] = first[i]
            o_last[j] = last[i]
            o_left[j] = new[left[i]] if left[i] >= 0 else -1
            o_right[j] = new[right[i]] if right[i] >= 0 else -1
            o_min[j] = minidx[i]
    return perm, w, o_box, o_first, o_last, o_left, o_right, o_min


@numba.njit(**JIT_OPTIONS)
def _build_serial(pts, leaf_size):  # pragma: no cover - compiled
    perm, w, box, nbox, first, last, left, right, minidx, used, pend, seen, base = _build_top(
        pts, leaf_size, 0)
    for j in range(pend.shape[0]):
        _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, used, pend[j],
                       base[j], leaf_size)
    return _finish(perm, w, box, first, last, left, right, minidx, used, seen)


@numba.njit(parallel=True, **JIT_OPTIONS)
def _build_parallel(pts, leaf_size, top_depth):  # pragma: no cover - compiled
    perm, w, box, nbox, first, last, left, right, minidx, used, pend, seen, base = _build_top(
        pts, leaf_size, top_depth)
    for j in numba.prange(pend.shape[0]):
        _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, used, pend[j],
                       base[j], leaf_size)
    return _finish(perm, w, box, first, last, left, right, minidx, used, seen)


#: below this many points the build runs on one thread (a parallel region costs more)
PARALLEL_MIN_POINTS = 50_000


def build(points: np.ndarray, leaf_size: int = 16, *, parallel: bool | None = None) -> KDTree:
    """Build the tree of a contiguous (n ≥ 1, 3) float32/float64 cloud.

    ``parallel`` (default: n ≥ :data:`PARALLEL_MIN_POINTS` and more than one numba thread)
    splits the top levels serially, one per doubling of the thread count, then builds the
    subtrees below them in parallel. Both ways give the same tree.
    """
    if leaf_size < 1:
        raise ValueError(f"build: leaf_size must be ≥ 1; got {leaf_size}.")
    threads = numba.get_num_threads()
    if parallel is None:
        parallel = threads > 1 and points.shape[0] >= PARALLEL_MIN_POINTS
    if not parallel:
        return KDTree(*_build_serial(points, leaf_size))
    top_depth = max(1, (threads - 1).bit_length())
    return KDTree(*_build_parallel(points, leaf_size, top_depth))
