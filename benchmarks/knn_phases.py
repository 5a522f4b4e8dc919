"""Where hetlab's numba kNN spends its time: build, traversal, leaf scan, candidate list.

Plain script; run from the repository root::

    PYTHONPATH=$PWD python benchmarks/knn_phases.py            # N = M = 100k, k = 16
    PYTHONPATH=$PWD python benchmarks/knn_phases.py --quick    # seconds

Method: the search of :mod:`hetlab.kernels.pointcloud._search` is re-run in stripped
variants compiled here, each given every query's final k-th distance as a fixed radius
(so each prunes exactly as well as the real search does at its end):

* ``traversal``: the tree walk alone, leaves counted but not scanned;
* ``+ leaf scan``: the walk plus every scanned point's distance, counted if ≤ the radius;
* the real search, whose extra time over ``+ leaf scan`` is the sorted candidate list
  (insertions, and the looser running radius before the list holds its final k);
* ``writes``: copying k (index, distance) pairs into each output row, alone.

Times are CPU seconds of one numba thread (``time.process_time``, best of the rounds), so
other jobs on a shared machine disturb them less than wall times; they are still noisy.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import hetlab as hl
from hetlab import machine
from hetlab.kernels.pointcloud import _kdtree, _search
from hetlab.kernels.pointcloud import numba as nb_kernels
from hetlab.kernels.pointcloud._kdtree import box_lower_bound, margins


@numba.njit(nogil=True)
def _walk(tree, queries, kth, rel, absm, scan):  # pragma: no cover - compiled
    """Walk (and with ``scan``, scan) with each query's final radius; returns a count."""
    _, pts_t, box, first, last, left, right, _ = tree
    stack = np.empty(_kdtree.STACK_SIZE, dtype=np.int64)
    lbs = np.empty(_kdtree.STACK_SIZE, dtype=np.float64)
    hits = 0
    for r in range(queries.shape[0]):
        qx, qy, qz = queries[r, 0], queries[r, 1], queries[r, 2]
        q0, q1, q2 = np.float64(qx), np.float64(qy), np.float64(qz)
        wd = kth[r]
        stack[0] = 0
        lbs[0] = box_lower_bound(box, 0, q0, q1, q2, rel, absm)
        sp = 1
        while sp > 0:
            sp -= 1
            node = stack[sp]
            if lbs[sp] > wd:
                continue
            lc = left[node]
            if lc >= 0:
                rc = right[node]
                bl = box_lower_bound(box, lc, q0, q1, q2, rel, absm)
                br = box_lower_bound(box, rc, q0, q1, q2, rel, absm)
                if bl <= br:
                    stack[sp], lbs[sp], stack[sp + 1], lbs[sp + 1] = rc, br, lc, bl
                else:
                    stack[sp], lbs[sp], stack[sp + 1], lbs[sp + 1] = lc, bl, rc, br
                sp += 2
                continue
            if not scan:
                hits += 1
                continue
            for p in range(first[node], last[node]):
                dx = qx - pts_t[p, 0]
                dy = qy - pts_t[p, 1]
                dz = qz - pts_t[p, 2]
                hits += (((dx * dx) + dy * dy) + dz * dz) <= wd
    return hits


@numba.njit(nogil=True)
def _writes(src_i, src_d, out_i, out_d):  # pragma: no cover - compiled
    for r in range(out_i.shape[0]):
        for j in range(out_i.shape[1]):
            out_i[r, j] = src_i[r, j]
            out_d[r, j] = src_d[r, j]


def cpu_ms(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best * 1e3


def phases(pts: np.ndarray, q: np.ndarray, k: int, rounds: int) -> dict[str, float]:
    """CPU ms of each phase (one numba thread)."""
    tree = _kdtree.build(pts, nb_kernels.SEARCH_LEAF, parallel=False)
    rel, absm = margins(pts.dtype)
    out_i = np.empty((len(q), k), dtype=np.int64)
    out_d = np.empty((len(q), k), dtype=pts.dtype)
    _search._knn_serial(tree, q, k, rel, absm, out_i, out_d)
    kth = out_d[:, k - 1].astype(np.float64)
    src_i, src_d = out_i.copy(), out_d.copy()
    _walk(tree, q, kth, rel, absm, False)
    _walk(tree, q, kth, rel, absm, True)
    _writes(src_i, src_d, out_i, out_d)
    t = {
        "build": cpu_ms(lambda: _kdtree.build(pts, nb_kernels.SEARCH_LEAF, parallel=False),
                        rounds),
        "traversal": cpu_ms(lambda: _walk(tree, q, kth, rel, absm, False), rounds),
        "walk+scan": cpu_ms(lambda: _walk(tree, q, kth, rel, absm, True), rounds),
        "search": cpu_ms(lambda: _search._knn_serial(tree, q, k, rel, absm, out_i, out_d),
                         rounds),
        "writes": cpu_ms(lambda: _writes(src_i, src_d, out_i, out_d), rounds),
    }
    return t


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="points (and queries)")
    p.add_argument("--k", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="n = 5000, 2 rounds")
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.rounds = 5000, 2
    print(f"kNN time split — {machine.cpu_model()} ({', '.join(machine.cpu_isa()) or 'none'})"
          f"; {a.n:,} points, {a.n:,} queries from the same distribution, k={a.k}, "
          f"leaf {nb_kernels.SEARCH_LEAF}; CPU ms of one numba thread, best of {a.rounds}")
    print(f"  {'cloud':<19} {'build':>7} {'travers.':>9} {'leaf scan':>10} {'cand. list':>11}"
          f" {'(writes)':>9} {'search':>8}")
    rng = np.random.default_rng(0)
    for kind in ("uniform", "clustered"):
        both = hl.make_cloud(2 * a.n, rng, kind=kind)
        for dtype in (np.float32, np.float64):
            pts = np.ascontiguousarray(both[: a.n], dtype=dtype)
            q = np.ascontiguousarray(both[a.n:], dtype=dtype)
            t = phases(pts, q, a.k, a.rounds)
            print(f"  {kind + ' ' + np.dtype(dtype).name:<19} {t['build']:>7.1f}"
                  f" {t['traversal']:>9.1f} {t['walk+scan'] - t['traversal']:>10.1f}"
                  f" {t['search'] - t['walk+scan']:>11.1f} {t['writes']:>9.1f}"
                  f" {t['search']:>8.1f}")
    print("(writes) are part of the candidate list column: the search inserts into the "
          "output row itself.")


if __name__ == "__main__":
    main()
