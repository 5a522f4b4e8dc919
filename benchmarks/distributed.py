"""Per-task overhead of running comparison units on Dask vs in-process.

Runs the same sweep of tiny units (fps on 16 points, numpy, 1 repeat — the measurement itself
takes microseconds) in-process and through a Dask cluster on loopback, and prints the extra
wall time per unit. Target: under 10 ms per task on loopback.

    python benchmarks/distributed.py             # LocalCluster with 2 worker processes
    python benchmarks/distributed.py --units 50  # a shorter run
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# this file is named like the `distributed` package: keep its folder off the import path
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]


def sweep_seconds(sizes: list[int], client=None) -> float:
    import hetlab as hl

    t0 = time.perf_counter()
    ds = hl.compare("fps", sizes=sizes, devices=["numpy"], repeats=1, progress=False,
                    client=client)
    elapsed = time.perf_counter() - t0
    if not bool(ds["verified"].all()):
        raise SystemExit("a unit returned a wrong result")
    return elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--units", type=int, default=200)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()

    from distributed import Client, LocalCluster

    sizes = list(range(16, 16 + args.units))  # distinct sizes: one unit each
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=":0",
                      resources={"cpu-bench": 1}) as cluster, Client(cluster) as client:
        sweep_seconds(sizes[:4], client)  # warm the workers (imports)
        sweep_seconds(sizes[:4])
        local = min(sweep_seconds(sizes) for _ in range(2))
        remote = min(sweep_seconds(sizes, client) for _ in range(2))
    per_task_ms = (remote - local) / args.units * 1e3
    print(f"{'path':<28}{'units':>7}{'wall s':>10}{'ms/unit':>10}")
    print(f"{'in-process':<28}{args.units:>7}{local:>10.3f}{local / args.units * 1e3:>10.2f}")
    print(f"{'dask, ' + str(args.workers) + ' workers (loopback)':<28}{args.units:>7}"
          f"{remote:>10.3f}{remote / args.units * 1e3:>10.2f}")
    verdict = "meets" if per_task_ms < 10 else "misses"
    print(f"dask overhead per task: {per_task_ms:.2f} ms ({verdict} the < 10 ms target); "
          f"ratio dask/in-process wall time: {remote / local:.2f}x")


if __name__ == "__main__":
    main()
