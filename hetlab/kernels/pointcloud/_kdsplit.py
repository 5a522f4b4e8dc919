"""Splitting k-d tree nodes (used by :mod:`._kdtree`): pivots, partitions, subtree growth and
tight boxes.

A node splits along the longest side of its *nominal* box (the parent's box cut at the
split value) at a pivot near the median: the median of up to 31 evenly spaced keys, then
one branch-free partition pass. When duplicates or skew leave one side with less than a
quarter of the points, the node falls back to an exact median (quickselect), so every child
holds at most 3/4 of its parent and the depth stays below log(n) / log(4/3).
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS

__all__ = ["grow", "tighten"]

_SAMPLE = 31
STACK_SIZE = 256  # ≥ depth + 2 for any n < 2**63 at depth ≤ log(n) / log(4/3) ≈ 152


@numba.njit(**JIT_OPTIONS)
def _swap_rows(perm, w, i, j):  # pragma: no cover - compiled
    t = perm[i]
    perm[i] = perm[j]
    perm[j] = t
    for c in range(3):
        x = w[i, c]
        w[i, c] = w[j, c]
        w[j, c] = x


@numba.njit(**JIT_OPTIONS)
def _select(perm, w, axis, lo, hi, kth):  # pragma: no cover - compiled
    """Reorder rows ``lo:hi`` so row ``kth`` has no larger key (column ``axis``) above it and
    no smaller key below it (Hoare quickselect, median of three)."""
    left = lo
    right = hi - 1
    while right > left:
        a = w[left, axis]
        b = w[(left + right) >> 1, axis]
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
                _swap_rows(perm, w, i, j)
                i += 1
                j -= 1
        if kth <= j:
            right = j
        elif kth >= i:
            left = i
        else:
            return


@numba.njit(**JIT_OPTIONS)
def _partition(perm, w, s, e, axis, pivot, strict):  # pragma: no cover - compiled
    """Branch-free Lomuto pass: rows with key < pivot (``strict``) or ≤ pivot first; returns
    where the others start. Every row is swapped (a no-op while none is set aside)."""
    j = s
    for i in range(s, e):
        key = w[i, axis]
        take = (key < pivot) if strict else (key <= pivot)
        _swap_rows(perm, w, i, j)
        j += take
    return j


@numba.njit(**JIT_OPTIONS)
def _split(perm, w, s, e, axis, sample):  # pragma: no cover - compiled
    """Partition rows ``s:e`` along ``axis``; returns (cut position, cut value)."""
    c = e - s
    ns = min(_SAMPLE, c)
    for t in range(ns):  # insertion-sort evenly spaced keys
        key = w[s + (t * (c - 1)) // max(ns - 1, 1), axis]
        u = t
        while u > 0 and sample[u - 1] > key:
            sample[u] = sample[u - 1]
            u -= 1
        sample[u] = key
    pivot = sample[ns // 2]
    m = _partition(perm, w, s, e, axis, pivot, True)
    if m == s:  # the pivot is the smallest key: take its duplicates to the left
        m = _partition(perm, w, s, e, axis, pivot, False)
    if 4 * min(m - s, e - m) < c:
        m = (s + e) >> 1
        _select(perm, w, axis, s, e, m)
        pivot = w[m, axis]
    return m, np.float64(pivot)


@numba.njit(**JIT_OPTIONS)
def grow(perm, w, first, last, left, right, nbox, used, root, nxt, leaf_size, max_depth,
         pend, seen):  # pragma: no cover - compiled
    """Split the subtree at ``root`` (its ``first``/``last``/``nbox`` set) depth first.

    Children get ids ``nxt, nxt + 1, …`` (a counter), so they follow their parent and a
    subtree of c points needs at most 2c − 2 ids after its root. Nodes at ``max_depth`` that
    still need splitting go to ``pend``; processed nodes go to ``seen`` while it has room.
    Returns (pending count, seen count, next free id).
    """
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    depth = np.empty(STACK_SIZE, dtype=np.int64)
    sample = np.empty(_SAMPLE, dtype=w.dtype)
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
            continue
        ext0 = nbox[node, 3] - nbox[node, 0]
        ext1 = nbox[node, 4] - nbox[node, 1]
        ext2 = nbox[node, 5] - nbox[node, 2]
        axis = 0
        if ext1 > ext0 and ext1 >= ext2:
            axis = 1
        elif ext2 > ext0 and ext2 > ext1:
            axis = 2
        m, cut = _split(perm, w, s, e, axis, sample)
        lc = nxt
        rc = nxt + 1
        nxt += 2
        used[lc] = True
        used[rc] = True
        first[lc] = s
        last[lc] = m
        first[rc] = m
        last[rc] = e
        left[node] = lc
        right[node] = rc
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
    return npend, nseen, nxt


@numba.njit(**JIT_OPTIONS)
def tighten(perm, w, first, last, left, right, box, minidx, node):  # pragma: no cover
    """Tight float64 box and smallest original index of ``node`` (children done first)."""
    lc = left[node]
    if lc >= 0:
        rc = right[node]
        for c in range(3):
            box[node, c] = min(box[lc, c], box[rc, c])
            box[node, 3 + c] = max(box[lc, 3 + c], box[rc, 3 + c])
        minidx[node] = min(minidx[lc], minidx[rc])
        return
    lo0 = lo1 = lo2 = np.inf
    hi0 = hi1 = hi2 = -np.inf
    mi = perm[first[node]]
    for p in range(first[node], last[node]):
        x = np.float64(w[p, 0])
        y = np.float64(w[p, 1])
        z = np.float64(w[p, 2])
        lo0 = min(lo0, x)
        hi0 = max(hi0, x)
        lo1 = min(lo1, y)
        hi1 = max(hi1, y)
        lo2 = min(lo2, z)
        hi2 = max(hi2, z)
        mi = min(mi, perm[p])
    box[node, 0] = lo0
    box[node, 1] = lo1
    box[node, 2] = lo2
    box[node, 3] = hi0
    box[node, 4] = hi1
    box[node, 5] = hi2
    minidx[node] = mi
