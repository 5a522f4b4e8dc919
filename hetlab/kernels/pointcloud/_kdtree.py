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
def n_nodes(c, leaf_size):  # pragma: no cover - compiled
    """Nodes of the tree over ``c ≥ 1`` points: 2 · leaves − 1 (sizes halve exactly, so each
    level holds at most two distinct sizes, ``a`` and ``a + 1``)."""
    a = c
    ca = 1  # nodes of size a
    cb = 0  # nodes of size a + 1
    leaves = 0
    while ca + cb > 0:
        half = a // 2
        nca = 0
        ncb = 0
        if a <= leaf_size:
            leaves += ca
        else:
            for h in (a // 2, a - a // 2):
                if h == half:
                    nca += ca
                else:
                    ncb += ca
        if cb > 0:
            if a + 1 <= leaf_size:
                leaves += cb
            else:
                for h in ((a + 1) // 2, a + 1 - (a + 1) // 2):
                    if h == half:
                        nca += cb
                    else:
                        ncb += cb
        a = half
        ca = nca
        cb = ncb
    return 2 * leaves - 1


@numba.njit(**JIT_OPTIONS)
def _grow(perm, w, first, last, left, right, nbox, root, leaf_size, max_depth, pend,
          seen):  # pragma: no cover - compiled
    """Split the subtree at ``root`` (its ``first``/``last``/``nbox`` set) depth first.

    Node ids are preorder (left child ``node + 1``, right child after the whole left
    subtree), so every subtree owns a contiguous id range. Nodes at ``max_depth`` that still
    need splitting go to ``pend``; processed nodes go to ``seen`` when it has room. The split
    axis is the longest side of the *nominal* box (the parent's, cut at the median).
    Returns (pending count, seen count).
    """
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    depth = np.empty(STACK_SIZE, dtype=np.int64)
    stack[0] = root
    depth[0] = 0
    sp = 1
    npend = 0
    nseen = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        dep = depth[sp]
        s = first[node]
        e = last[node]
        if e - s > leaf_size and dep == max_depth:
            pend[npend] = node
            npend += 1
            continue
        if nseen < seen.shape[0]:
            seen[nseen] = node
            nseen += 1
        if e - s <= leaf_size:
            left[node] = -1
            right[node] = -1
            _sort_leaf(perm, w, s, e)
            continue
        ext0 = nbox[node, 3] - nbox[node, 0]
        ext1 = nbox[node, 4] - nbox[node, 1]
        ext2 = nbox[node, 5] - nbox[node, 2]
        axis = 0
        if ext1 > ext0 and ext1 >= ext2:
            axis = 1
        elif ext2 > ext0 and ext2 > ext1:
            axis = 2
        m = (s + e) >> 1
        _select(perm, w, axis, s, e, m)
        lc = node + 1
        rc = node + 1 + n_nodes(m - s, leaf_size)
        first[lc] = s
        last[lc] = m
        first[rc] = m
        last[rc] = e
        left[node] = lc
        right[node] = rc
        cut = np.float64(w[m, axis])
        for c in range(6):
            nbox[lc, c] = nbox[node, c]
            nbox[rc, c] = nbox[node, c]
        nbox[lc, 3 + axis] = cut
        nbox[rc, axis] = cut
        stack[sp] = rc
        depth[sp] = dep + 1
        stack[sp + 1] = lc
        depth[sp + 1] = dep + 1
        sp += 2
    return npend, nseen


@numba.njit(**JIT_OPTIONS)
def _tighten(perm, w, first, last, left, right, box, minidx, node):  # pragma: no cover
    """Tight float64 box and smallest index of ``node`` (its children already done)."""
    lc = left[node]
    if lc >= 0:
        rc = right[node]
        for c in range(3):
            box[node, c] = min(box[lc, c], box[rc, c])
            box[node, 3 + c] = max(box[lc, 3 + c], box[rc, 3 + c])
        minidx[node] = min(minidx[lc], minidx[rc])
        return
    s = first[node]
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    for p in range(s, last[node]):
        x = np.float64(w[p, 0])
        y = np.float64(w[p, 1])
        z = np.float64(w[p, 2])
        lo0 = min(lo0, x)
        hi0 = max(hi0, x)
        lo1 = min(lo1, y)
        hi1 = max(hi1, y)
        lo2 = min(lo2, z)
        hi2 = max(hi2, z)
    box[node, 0] = lo0
    box[node, 1] = lo1
    box[node, 2] = lo2
    box[node, 3] = hi0
    box[node, 4] = hi1
    box[node, 5] = hi2
    minidx[node] = perm[s]  # leaves are in index order


@numba.njit(**JIT_OPTIONS)
def _build_top(pts, leaf_size, top_depth):  # pragma: no cover - compiled
    """Allocate the tree and split its top ``top_depth`` levels; returns the arrays plus the
    pending subtree roots and the nodes processed so far."""
    n = pts.shape[0]
    nodes = n_nodes(n, leaf_size)
    perm = np.arange(n)
    w = pts.copy()  # the points, reordered along with perm (sequential scans)
    box = np.empty((nodes, 6), dtype=np.float64)
    nbox = np.empty((nodes, 6), dtype=np.float64)
    first = np.empty(nodes, dtype=np.int64)
    last = np.empty(nodes, dtype=np.int64)
    left = np.empty(nodes, dtype=np.int64)
    right = np.empty(nodes, dtype=np.int64)
    minidx = np.empty(nodes, dtype=np.int64)
    first[0] = 0
    last[0] = n
    for c in range(3):
        nbox[0, c] = np.float64(pts[:, c].min())
        nbox[0, 3 + c] = np.float64(pts[:, c].max())
    pend = np.empty(1 << top_depth, dtype=np.int64)
    seen = np.empty(1 << (top_depth + 1), dtype=np.int64)  # ≥ nodes at depth ≤ top_depth
    npend, nseen = _grow(perm, w, first, last, left, right, nbox, 0, leaf_size, top_depth,
                         pend, seen)
    return perm, w, box, nbox, first, last, left, right, minidx, pend[:npend], seen[:nseen]


@numba.njit(**JIT_OPTIONS)
def _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, root,
                   leaf_size):  # pragma: no cover - compiled
    """Split and tighten the whole subtree at ``root`` (a contiguous id range)."""
    none = np.empty(0, dtype=np.int64)
    _grow(perm, w, first, last, left, right, nbox, root, leaf_size, -1, none, none)
    end = root + n_nodes(last[root] - first[root], leaf_size)
    for node in range(end - 1, root - 1, -1):
        _tighten(perm, w, first, last, left, right, box, minidx, node)


@numba.njit(**JIT_OPTIONS)
def _build_serial(pts, leaf_size):  # pragma: no cover - compiled
    perm, w, box, nbox, first, last, left, right, minidx, pend, seen = _build_top(
        pts, leaf_size, 0)
    for root in pend:
        _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, root, leaf_size)
    for j in range(seen.shape[0] - 1, -1, -1):
        _tighten(perm, w, first, last, left, right, box, minidx, seen[j])
    return perm, w, box, first, last, left, right, minidx


@numba.njit(parallel=True, **JIT_OPTIONS)
def _build_parallel(pts, leaf_size, top_depth):  # pragma: no cover - compiled
    perm, w, box, nbox, first, last, left, right, minidx, pend, seen = _build_top(
        pts, leaf_size, top_depth)
    for j in numba.prange(pend.shape[0]):
        _build_subtree(perm, w, box, nbox, first, last, left, right, minidx, pend[j],
                       leaf_size)
    for j in range(seen.shape[0] - 1, -1, -1):
        _tighten(perm, w, first, last, left, right, box, minidx, seen[j])
    return perm, w, box, first, last, left, right, minidx


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
