"""Exact, distribution-aware farthest point sampling over a k-d tree (QuickFPS-style).

Every tree node keeps the largest current distance among its points (``maxd``) and where it
is (``argp``, a tree position; ties to the lowest original index). After a new sample ``q``
the update descends only into nodes whose box lower bound to ``q`` is *below* ``maxd``: in any
other node ``min(dist, d(p, q))`` cannot change a single point (see
:func:`._kdtree.box_lower_bound` for why this survives float rounding). Visited internal
nodes then recombine their children's maxima bottom-up, and the root holds the next sample.

The work per step shrinks with the sampling radius (roughly n / step points), instead of
the n points every step of the textbook algorithm touches. The loop is serial on purpose:
a step is a few microseconds of work, less than starting a numba parallel region costs
(~80 µs per region measured on the shared, loaded 2-core machine); the tree build is what
runs in parallel.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS
from ._kdtree import STACK_SIZE, KDTree, box_lower_bound, margins

__all__ = ["fps_on_tree", "fps_positions"]


@numba.njit(**JIT_OPTIONS)
def _better(d1, i1, d2, i2):  # pragma: no cover - compiled
    """(d1, i1) ranks before (d2, i2) for FPS: larger distance, then lower index."""
    return d1 > d2 or (d1 == d2 and i1 < i2)


@numba.njit(**JIT_OPTIONS)
def fps_positions(tree, n_samples, start, rel, absm, out_pos):  # pragma: no cover - compiled
    """Run FPS on ``tree``; fill ``out_pos`` (n_samples,) with tree positions of the picks.

    Returns the number of point distances computed (the work the bounds did not skip).
    """
    perm, pts_t, box, first, last, left, right, _ = tree
    n = pts_t.shape[0]
    nodes = box.shape[0]
    dtype_inf = pts_t.dtype.type(np.inf)
    dist = np.full(n, dtype_inf)
    maxd = np.full(nodes, dtype_inf)
    argp = np.empty(nodes, dtype=np.int64)
    # initial argmax: every distance is inf, so the lowest original index of each node
    for node in range(nodes - 1, -1, -1):
        if left[node] < 0:
            bp = first[node]
            for p in range(first[node] + 1, last[node]):
                if perm[p] < perm[bp]:
                    bp = p
            argp[node] = bp
        else:
            a = argp[left[node]]
            b = argp[right[node]]
            argp[node] = a if perm[a] < perm[b] else b
    pos = 0
    for p in range(n):
        if perm[p] == start:
            pos = p
    out_pos[0] = pos
    stack = np.empty(STACK_SIZE, dtype=np.int64)
    visited = np.empty(nodes, dtype=np.int64)
    touched = 0
    for it in range(1, n_samples):
        qx = pts_t[pos, 0]
        qy = pts_t[pos, 1]
        qz = pts_t[pos, 2]
        q0 = np.float64(qx)
        q1 = np.float64(qy)
        q2 = np.float64(qz)
        dist[pos] = -1  # chosen: never again (its leaf is visited: its bound is < 0)
        nv = 0
        stack[0] = 0  # the root holds the new sample: its bound (< 0) always passes
        sp = 1
        while sp > 0:  # nodes on the stack passed their bound test
            sp -= 1
            node = stack[sp]
            lc = left[node]
            if lc >= 0:
                visited[nv] = node
                nv += 1
                rc = right[node]
                if box_lower_bound(box, rc, q0, q1, q2, rel, absm) < maxd[rc]:
                    stack[sp] = rc
                    sp += 1
                if box_lower_bound(box, lc, q0, q1, q2, rel, absm) < maxd[lc]:
                    stack[sp] = lc
                    sp += 1
                continue
            s = first[node]
            e = last[node]
            touched += e - s
            best = -dtype_inf
            bp = s
            tie = False
            for p in range(s, e):
                dx = pts_t[p, 0] - qx
                dy = pts_t[p, 1] - qy
                dz = pts_t[p, 2] - qz
                v = min(dist[p], ((dx * dx) + dy * dy) + dz * dz)
                dist[p] = v
                tie |= v == best
                if v > best:
                    best = v
                    bp = p
            if tie:  # the maximum may occur twice: the lowest original index wins
                for p in range(bp + 1, e):
                    if dist[p] == best and perm[p] < perm[bp]:
                        bp = p
            maxd[node] = best
            argp[node] = bp
        for j in range(nv - 1, -1, -1):
            node = visited[j]
            a = left[node]
            b = right[node]
            if _better(maxd[a], perm[argp[a]], maxd[b], perm[argp[b]]):
                maxd[node] = maxd[a]
                argp[node] = argp[a]
            else:
                maxd[node] = maxd[b]
                argp[node] = argp[b]
        pos = argp[0]
        out_pos[it] = pos
    return touched


def fps_on_tree(tree: KDTree, n_samples: int, start: int) -> tuple[np.ndarray, np.ndarray, int]:
    """FPS on a built tree: (original indices int64, tree positions int64, points touched)."""
    rel, absm = margins(tree.pts_t.dtype)
    pos = np.empty(n_samples, dtype=np.int64)
    touched = fps_positions(tree, n_samples, start, rel, absm, pos)
    return tree.perm[pos], pos, int(touched)
