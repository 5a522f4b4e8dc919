"""Exact k-nearest neighbours by buckets: queries are served a tree leaf at a time.

Instead of one tree walk per query, the queries are sorted into the point tree's leaves
(a query's bucket is the leaf its descent by the split planes ends in; a counting sort) and
each bucket is served at once, in parallel over buckets (``prange``):

1. **seed**: the bucket's seed node is the deepest ancestor-or-self of its leaf with at
   least ``max(k, SEED_MIN)`` points; its points are ordered once by distance to the
   bucket's centre, so each query of the bucket computes their distances in one
   vectorizable loop, places the first k by their ranks among themselves (a branch-free
   count per pair; insertion when k > :data:`RANK_K`) and compares the rest against its
   k-th (those within it are listed branch-free, then inserted) — its row starts with a
   radius close to the final one;
2. **bucket walk**: one walk of the tree with the box-to-box bound between the bucket's
   query box and each node's box, against the largest radius in the bucket, lists the
   candidate leaves and copies their boxes side by side (a per-bucket cost);
3. **bounds**: each query computes its bound to every candidate box in one vectorizable
   loop;
4. **scan**: for each leaf its radius still admits, the distances in one vectorizable loop
   (the points' coordinates side by side) that also counts those within the k-th; in the
   few leaves with any, they are listed branch-free and inserted into the sorted output
   row.

Exactness: distances are computed as the reference does (``((dx*dx) + dy*dy) + dz*dz`` in the
points' dtype, ``d = q - p``, no fastmath); every point is considered at most once per
query; a leaf or node is skipped only when its float64 bound, safe under rounding
(:func:`._kdtree.box_lower_bound`'s margins), is above the radius, so no point at distance
≤ the final k-th is lost; rows are kept sorted by (distance, original index), the
reference's tie rule, and a point equal to the k-th in distance enters only with a lower
index.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backends.numba import JIT_OPTIONS
from ._kbuckets import SEED_MIN, Buckets, bucket_queries
from ._kdtree import STACK_SIZE, KDTree, margins

__all__ = ["knn_tree", "bucket_queries", "search", "Buckets", "SEED_MIN", "PARALLEL_MIN_QUERIES"]

#: up to this k, a seed's first k are placed by rank (k² compares, no branches), beyond it
#: by insertion
RANK_K = 64
#: buckets per parallel task (buffers are allocated once per task)
_TASK = 32
#: fewer queries than this run on one thread (a parallel region costs more than it saves)
PARALLEL_MIN_QUERIES = 2048
_F64_MAX = float(np.finfo(np.float64).max)


@numba.njit(**JIT_OPTIONS)
def _pair_bound(box, node, qb, rel, absm):  # pragma: no cover - compiled
    """A float64 value ≤ the computed squared distance from any query in the box ``qb``
    (lo0 lo1 lo2 hi0 hi1 hi2) to any point of ``node`` (margins as in box_lower_bound)."""
    g0 = max(max(box[node, 0] - qb[3], qb[0] - box[node, 3]), 0.0)
    g1 = max(max(box[node, 1] - qb[4], qb[1] - box[node, 4]), 0.0)
    g2 = max(max(box[node, 2] - qb[5], qb[2] - box[node, 5]), 0.0)
    s = (g0 * g0 + g1 * g1) + g2 * g2
    s = s * (1.0 - rel) - absm
    if s > _F64_MAX:
        s = _F64_MAX
    return s


@numba.njit(inline="always", **JIT_OPTIONS)
def _insert(out_d, out_i, q, u, d, i):  # pragma: no cover - compiled
    """Put (d, i) into row q's sorted prefix ``[:u + 1]``, shifting larger pairs right (the
    pair at u is dropped); pairs compare by distance, then index."""
    while u > 0 and (out_d[q, u - 1] > d or (out_d[q, u - 1] == d and out_i[q, u - 1] > i)):
        out_d[q, u] = out_d[q, u - 1]
        out_i[q, u] = out_i[q, u - 1]
        u -= 1
    out_d[q, u] = d
    out_i[q, u] = i


@numba.njit(inline="always", **JIT_OPTIONS)
def _insert_listed(out_d, out_i, q, k, tj, m, dl, ids, off, wd, wi):  # pragma: no cover
    """Insert the ``m`` candidates listed in ``tj`` (positions; distance ``dl[p - off]``,
    point index ``ids[p]``) into query ``q``'s sorted row, skipping those beyond the current
    k-th ``(wd, wi)`` (ties: lower index first); the new k-th."""
    for u in range(m):
        p = tj[u]
        d = dl[p - off]
        i = ids[p]
        if d > wd or (d == wd and i > wi):
            continue
        _insert(out_d, out_i, q, k - 1, d, i)
        wd = out_d[q, k - 1]
        wi = out_i[q, k - 1]
    return wd, wi


@numba.njit(**JIT_OPTIONS)
def _bucket(tree, xs, ys, zs, seed, leaf, queries, order, qs, qe, k, rel, absm, out_i, out_d,
            w, stop):  # pragma: no cover - compiled
    """Serve the queries ``order[qs:qe]`` of the bucket at ``leaf`` (module docstring).

    ``stop`` < 5 ends after that many phases (for benchmarks/knn_phases.py; the rows are
    then not the answer): 1 seed, 2 bucket walk, 3 bounds, 4 leaf distances without
    insertions.
    """
    perm, pts_t, box, first, last, left, right, _ = tree
    cand, cb, lbq, stack, lbs, skey, sx, sy, sz, si, dl, tj = w
    qb = np.empty(6, dtype=np.float64)
    for c in range(3):
        qb[c] = np.inf
        qb[3 + c] = -np.inf
    for r in range(qe - qs):
        for c in range(3):
            x = np.float64(queries[order[qs + r], c])
            qb[c] = min(qb[c], x)
            qb[3 + c] = max(qb[3 + c], x)
    # 1. seed: the seed node's points, ordered by distance to the bucket's centre (so each
    #    query's first k are close to its nearest and few of the rest get in)
    sn = seed[leaf]
    ns = last[sn] - first[sn]
    c0 = 0.5 * (qb[0] + qb[3])
    c1 = 0.5 * (qb[1] + qb[4])
    c2 = 0.5 * (qb[2] + qb[5])
    for j in range(ns):
        p = first[sn] + j
        x = np.float64(pts_t[p, 0]) - c0
        y = np.float64(pts_t[p, 1]) - c1
        z = np.float64(pts_t[p, 2]) - c2
        skey[j] = x * x + y * y + z * z
    so = np.argsort(skey[:ns])
    for j in range(ns):
        p = first[sn] + so[j]
        sx[j] = pts_t[p, 0]
        sy[j] = pts_t[p, 1]
        sz[j] = pts_t[p, 2]
        si[j] = perm[p]
    radius = 0.0
    for r in range(qe - qs):
        q = order[qs + r]
        qx = queries[q, 0]
        qy = queries[q, 1]
        qz = queries[q, 2]
        for j in range(ns):  # the distance tile row (a vectorized loop)
            dx = qx - sx[j]
            dy = qy - sy[j]
            dz = qz - sz[j]
            dl[j] = ((dx * dx) + dy * dy) + dz * dz
        if k <= RANK_K:  # the first k: each one's rank among them, branch-free
            for j in range(k):
                dj = dl[j]
                ij = si[j]
                c = 0
                for t in range(k):
                    c += (dl[t] < dj) | ((dl[t] == dj) & (si[t] < ij))
                out_d[q, c] = dj
                out_i[q, c] = ij
        else:  # a large k: insertion sort (nearly in order already)
            for j in range(k):
                _insert(out_d, out_i, q, j, dl[j], si[j])
        wd = out_d[q, k - 1]
        wi = out_i[q, k - 1]
        m2 = 0
        for j in range(k, ns):  # the others: those within the k-th, listed branch-free
            tj[m2] = j
            m2 += dl[j] <= wd
        # then inserted (the k-th shrinks on the way)
        wd, wi = _insert_listed(out_d, out_i, q, k, tj, m2, dl, si, 0, wd, wi)
        radius = max(radius, np.float64(wd))
    if stop == 1:
        return
    # 2. candidate leaves of the bucket, their boxes side by side
    nc = 0
    stack[0] = 0
    lbs[0] = _pair_bound(box, 0, qb, rel, absm)
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if lbs[sp] > radius or node == sn:
            continue
        lc = left[node]
        if lc < 0:
            cand[nc] = node
            for c in range(6):
                cb[c, nc] = box[node, c]
            nc += 1
            continue
        rc = right[node]
        bl = _pair_bound(box, lc, qb, rel, absm)
        br = _pair_bound(box, rc, qb, rel, absm)
        if bl <= br:
            stack[sp] = rc
            lbs[sp] = br
            stack[sp + 1] = lc
            lbs[sp + 1] = bl
        else:
            stack[sp] = lc
            lbs[sp] = bl
            stack[sp + 1] = rc
            lbs[sp + 1] = br
        sp += 2
    if stop == 2:
        return
    # 3. each query: its bound to every candidate box, then the admitted leaves
    for r in range(qe - qs):
        q = order[qs + r]
        qx = queries[q, 0]
        qy = queries[q, 1]
        qz = queries[q, 2]
        q0 = np.float64(qx)
        q1 = np.float64(qy)
        q2 = np.float64(qz)
        for t in range(nc):
            g0 = max(max(cb[0, t] - q0, q0 - cb[3, t]), 0.0)
            g1 = max(max(cb[1, t] - q1, q1 - cb[4, t]), 0.0)
            g2 = max(max(cb[2, t] - q2, q2 - cb[5, t]), 0.0)
            lbq[t] = ((g0 * g0 + g1 * g1) + g2 * g2) * (1.0 - rel) - absm
        wd = out_d[q, k - 1]
        wi = out_i[q, k - 1]
        if stop == 3:
            continue
        for t in range(nc):
            if lbq[t] > wd:
                continue
            s = first[cand[t]]
            e = last[cand[t]]
            hits = 0
            for p in range(s, e):
                dx = qx - xs[p]
                dy = qy - ys[p]
                dz = qz - zs[p]
                d = ((dx * dx) + dy * dy) + dz * dz
                dl[p - s] = d
                hits += d <= wd
            if hits == 0 or stop == 4:  # the usual case: nothing in this leaf comes close
                continue
            m2 = 0
            for p in range(s, e):
                tj[m2] = p
                m2 += dl[p - s] <= wd
            wd, wi = _insert_listed(out_d, out_i, q, k, tj, m2, dl, perm, s, wd, wi)


@numba.njit(**JIT_OPTIONS)
def _task(tree, b, queries, t, k, rel, absm, out_i, out_d, stop):  # pragma: no cover
    xs, ys, zs, seed, leaves, starts, order, smax, lmax = b
    lo = t * _TASK
    hi = min(leaves.shape[0], lo + _TASK)
    nn = tree.left.shape[0]
    dt = tree.pts_t.dtype
    w = (np.empty(nn, dtype=np.int64), np.empty((6, nn), dtype=np.float64),
         np.empty(nn, dtype=np.float64), np.empty(STACK_SIZE, dtype=np.int64),
         np.empty(STACK_SIZE, dtype=np.float64), np.empty(smax, dtype=np.float64),
         np.empty(smax, dtype=dt), np.empty(smax, dtype=dt), np.empty(smax, dtype=dt),
         np.empty(smax, dtype=np.int64), np.empty(max(smax, lmax), dtype=dt),
         np.empty(max(smax, lmax), dtype=np.int64))
    for j in range(lo, hi):
        _bucket(tree, xs, ys, zs, seed, leaves[j], queries, order, starts[j], starts[j + 1], k,
                rel, absm, out_i, out_d, w, stop)


@numba.njit(parallel=True, **JIT_OPTIONS)
def _run_parallel(tree, b, queries, k, rel, absm, out_i, out_d, stop):  # pragma: no cover
    for t in numba.prange((b[4].shape[0] + _TASK - 1) // _TASK):
        _task(tree, b, queries, t, k, rel, absm, out_i, out_d, stop)


@numba.njit(**JIT_OPTIONS)
def _run_serial(tree, b, queries, k, rel, absm, out_i, out_d, stop):  # pragma: no cover
    for t in range((b[4].shape[0] + _TASK - 1) // _TASK):
        _task(tree, b, queries, t, k, rel, absm, out_i, out_d, stop)


def search(tree: KDTree, b: Buckets, queries: np.ndarray, k: int, parallel: bool,
           stop: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Serve every bucket of ``b`` (see :func:`knn_tree`); ``stop`` < 5 runs only the first
    phases (for profiling; the result is then not the answer)."""
    rel, absm = margins(tree.pts_t.dtype)
    m = queries.shape[0]
    out_i = np.zeros((m, k), dtype=np.int64)
    out_d = np.empty((m, k), dtype=tree.pts_t.dtype)
    run = _run_parallel if parallel else _run_serial
    run(tree, tuple(b), queries, k, rel, absm, out_i, out_d, stop)
    return out_i, out_d


def knn_tree(tree: KDTree, queries: np.ndarray, k: int, *,
             parallel: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """k nearest tree points of each query, equal to :func:`.reference.knn`.

    Parameters
    ----------
    tree : KDTree
        The points' tree (:func:`._kdtree.build`), n ≥ k points, float32 or float64.
    queries : ndarray, shape (m, 3), the tree's dtype
    k : int
        Neighbours per query, 1 ≤ k ≤ n.
    parallel : bool, optional
        Threads over buckets; default: m ≥ :data:`PARALLEL_MIN_QUERIES` and more than one
        numba thread. Both ways give the same result.

    Returns
    -------
    idx : ndarray, shape (m, k), int64
        Original point indices, by ascending (squared distance, index).
    d2 : ndarray, shape (m, k), the points' dtype
        Squared distances.

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab.kernels.pointcloud import _kdtree
    >>> pts = np.array([[0, 0, 0], [2, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=np.float32)
    >>> idx, d2 = knn_tree(_kdtree.build(pts, 2), np.zeros((1, 3), np.float32), 3)
    >>> idx.tolist(), d2.tolist()
    ([[0, 2, 3]], [[0.0, 1.0, 1.0]])
    """
    m = queries.shape[0]
    if m == 0:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=tree.pts_t.dtype)
    if parallel is None:
        parallel = m >= PARALLEL_MIN_QUERIES and numba.get_num_threads() > 1
    queries = np.ascontiguousarray(queries, dtype=tree.pts_t.dtype)
    return search(tree, bucket_queries(tree, queries, k, parallel), queries, k, parallel)
