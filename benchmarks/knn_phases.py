"""Where hetlab's numba kNN spends its time: build, bucketing, seed, bucket walk, bounds,
leaf scan, insertions.

Plain script; run from the repository root::

    PYTHONPATH=$PWD python benchmarks/knn_phases.py            # N = M = 100k, k = 16
    PYTHONPATH=$PWD python benchmarks/knn_phases.py --quick    # seconds

Method: the bucketed search of :mod:`hetlab.kernels.pointcloud._knn` is run whole and
stopped after each of its phases (its ``stop`` argument); each column is the difference
between two consecutive stops:

* ``build``: the point tree (:func:`._kdtree.build`, serial);
* ``bucket``: split planes, every query's descent to its leaf, the counting sort;
* ``seed``: the search's setup (outputs, work arrays); per bucket, the seed node's points
  ordered by distance to the bucket's centre; per query, their distances, sorted first k;
* ``walk``: one tree walk per bucket listing the candidate leaves;
* ``bounds``: each query's bound to every candidate box;
* ``leaf scan``: the distances to the points of the leaves the bounds admit;
* ``insert``: the compares against the running k-th and the sorted insertions (the rest of
  the full search).

Times are CPU seconds of one numba thread (``time.process_time``, best of the rounds, every
phase serial), so other jobs on a shared machine disturb them less than wall times; they
are still noisy.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numba
import numpy as np

import hetlab as hl
from hetlab import machine
from hetlab.kernels.pointcloud import _kdtree, _knn, reference
from hetlab.kernels.pointcloud import numba as nb_kernels

COLUMNS = ("build", "bucket", "seed", "walk", "bounds", "leaf scan", "insert")


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
    b = _knn.bucket_queries(tree, q, k, False)
    got = _knn.search(tree, b, q, k, False)
    head = slice(0, 200)
    exp = reference.knn(pts, q[head], k)
    if not (np.array_equal(got[0][head], exp[0]) and np.array_equal(got[1][head], exp[1])):
        raise AssertionError("the search differs from the reference")
    for stop in range(1, 5):
        _knn.search(tree, b, q, k, False, stop)
    t = {"build": cpu_ms(lambda: _kdtree.build(pts, nb_kernels.SEARCH_LEAF, parallel=False),
                         rounds),
         "bucket": cpu_ms(lambda: _knn.bucket_queries(tree, q, k, False), rounds)}
    stops = [cpu_ms(lambda s=s: _knn.search(tree, b, q, k, False, s), rounds)
             for s in range(1, 6)]
    t["seed"] = stops[0]
    for name, (a, z) in zip(COLUMNS[3:], itertools.pairwise(stops), strict=True):
        t[name] = z - a
    t["total"] = t["build"] + t["bucket"] + stops[-1]
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
          f"leaf {nb_kernels.SEARCH_LEAF}, seed ≥ {_knn.SEED_MIN} points; CPU ms of one "
          f"numba thread ({numba.config.THREADING_LAYER} layer), best of {a.rounds}")
    print("  " + f"{'cloud':<19}" + "".join(f"{c:>10}" for c in (*COLUMNS, "total")))
    rng = np.random.default_rng(0)
    for kind in ("uniform", "clustered"):
        both = hl.make_cloud(2 * a.n, rng, kind=kind)
        for dtype in (np.float32, np.float64):
            pts = np.ascontiguousarray(both[: a.n], dtype=dtype)
            q = np.ascontiguousarray(both[a.n:], dtype=dtype)
            t = phases(pts, q, a.k, a.rounds)
            print("  " + f"{kind + ' ' + np.dtype(dtype).name:<19}"
                  + "".join(f"{t[c]:>10.1f}" for c in (*COLUMNS, "total")))
    print("Differences of noisy minima: a small phase can come out slightly negative.")


if __name__ == "__main__":
    main()
