"""SpMV and SpMM: hetlab's numba kernels vs scipy.sparse CSR ``@``, side by side, one run.

Prints, per matrix, the best of ``--repeats`` timings of each, the speedup (scipy time / numba
time), the bandwidth each reaches on the compulsory bytes of the cost model (matrix arrays +
vector in + vector out) and that bandwidth as a fraction of a STREAM triad (numba ``prange``
loop, all numba threads) measured in the same run. Scipy, numba and the triad are timed
round-robin (best of each), so each row compares figures taken under the same machine load.

Targets (issue 7, 2 cores): spmv ≥ 90% of the triad on the banded and Laplacian matrices;
numba no slower than scipy on any matrix; spmm ≥ 2× scipy at 16 columns. Reached vs target
is printed, never asserted.

    python benchmarks/sparse.py            # 2M×2M matrices (~32M nonzeros), ~2 GB of memory
    python benchmarks/sparse.py --quick    # 200k rows: seconds (the smoke test runs this)
    python benchmarks/sparse.py --only spmv,laplacian3d,banded   # a subset (kernel, matrices)

Every numba result is checked against scipy's before it is timed.

Threading layer: ``--threading-layer`` (default ``workqueue``) is set before numba loads. On
this machine, with its 2 cores shared by other jobs, an empty ``prange`` region took 4–24 ms
with the ``omp`` layer (libgomp's sleeping workers wake late) and 0.025 ms with
``workqueue``; pass ``--threading-layer omp`` to see the other figure.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

SPMV_TARGET_FRACTION = 0.90  # banded and Laplacian, of the measured triad
SPMM16_TARGET_SPEEDUP = 2.0


def interleaved(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Best wall time of each function, called round-robin ``repeats`` times after one
    untimed round, so a change of machine load hits all of them alike (seconds)."""
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


class Triad:
    """STREAM triad ``a = b + 3c`` with the numba prange loop (24 bytes per element)."""

    def __init__(self, n: int) -> None:
        from hetlab.backends._triad import triad

        self.n, self._triad = n, triad
        self.b, self.c, self.a = np.ones(n), np.ones(n), np.empty(n)

    def __call__(self) -> None:
        self._triad(self.a, self.b, self.c, 3.0)

    def gbps(self, seconds: float) -> float:
        return 24 * self.n / seconds / 1e9


def _check(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    from hetlab.core.metrics import relative_error

    err = relative_error(got, expected)
    if not err <= 1e-10:
        raise SystemExit(f"{what}: numba result differs from scipy's (relative {err:.3g})")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="200k-row matrices, fewer repeats")
    p.add_argument("--rows", type=int, default=None, help="rows of the spmv matrices")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--only", default=None, metavar="KERNEL[,MATRIX...]",
                   help="run a subset, e.g. 'spmv' or 'spmv,laplacian3d,banded' (default: all)")
    p.add_argument("--threading-layer", default="workqueue",
                   choices=["workqueue", "omp", "tbb", "default"])
    args = p.parse_args(argv)
    if args.threading_layer != "default":
        os.environ["NUMBA_THREADING_LAYER"] = args.threading_layer
    only = args.only.split(",") if args.only else []
    want_kernel = only[0] if only else None
    want_matrices = set(only[1:])

    def wanted(kernel: str, matrix: str) -> bool:
        return ((want_kernel is None or kernel.startswith(want_kernel))
                and (not want_matrices or matrix in want_matrices))

    rows = args.rows or (200_000 if args.quick else 2_000_000)
    repeats = args.repeats or (3 if args.quick else 10)
    spmm_rows = rows // 4

    import numba
    import scipy

    from hetlab import sparse
    from hetlab.kernels.sparse import numba as kernels
    from hetlab.kernels.sparse.spec import SPMM, SPMV

    rng = np.random.default_rng(2026)
    threads = numba.get_num_threads()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"numba {numba.__version__} ({threads} threads), scipy {scipy.__version__}, "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    triad = Triad(8_000_000 if not args.quick else 4_000_000)
    bw0 = triad.gbps(interleaved({"triad": triad}, repeats)["triad"])
    print(f"STREAM triad (numba prange, {threads} threads, {numba.threading_layer()} layer): "
          f"{bw0:.1f} GB/s at the start; each row below is timed round-robin with its own "
          "triad (column 'triad'), and 'numba/triad' is against that one\n")

    rows_out: list[dict[str, Any]] = []
    head = (f"{'kernel':<7}{'matrix':<13}{'rows':>9}{'nnz':>11}{'scipy ms':>10}{'numba ms':>10}"
            f"{'speedup':>9}{'scipy GB/s':>11}{'numba GB/s':>11}{'triad':>7}{'numba/triad':>12}")
    print(head)
    print("-" * len(head))

    def report(kernel: str, name: str, A: Any, t: dict[str, float], nbytes: float) -> None:
        t_s, t_n, bw = t["scipy"], t["numba"], triad.gbps(t["triad"])
        r = {"kernel": kernel, "matrix": name, "rows": A.shape[0], "nnz": A.nnz,
             "scipy_s": t_s, "numba_s": t_n, "speedup": t_s / t_n, "triad_gbps": bw,
             "scipy_gbps": nbytes / t_s / 1e9, "numba_gbps": nbytes / t_n / 1e9}
        r["fraction"] = r["numba_gbps"] / bw
        rows_out.append(r)
        print(f"{kernel:<7}{name:<13}{A.shape[0]:>9}{A.nnz:>11}{t_s * 1e3:>10.1f}"
              f"{t_n * 1e3:>10.1f}{r['speedup']:>8.2f}x{r['scipy_gbps']:>11.1f}"
              f"{r['numba_gbps']:>11.1f}{bw:>7.1f}{r['fraction']:>11.0%}", flush=True)

    for kind in ("banded", "laplacian3d", "powerlaw", "uniform"):
        if not wanted("spmv", kind):
            continue
        A = sparse.make_matrix(rows, rng, kind=kind, nnz_per_row=16)
        S = A.to_scipy()
        x = rng.random(A.shape[1]) * 2 - 1
        _check(kernels.spmv(A, x), S @ x, f"spmv {kind}")
        t = interleaved({"triad": triad, "scipy": lambda S=S, x=x: S @ x,
                         "numba": lambda A=A, x=x: kernels.spmv(A, x)}, repeats)
        report("spmv", kind, A, t, SPMV.cost({"A": A, "x": x}).bytes)
        del A, S, x

    for kind in ("banded", "uniform"):
        if not wanted("spmm", kind):
            continue
        A = sparse.make_matrix(spmm_rows, rng, kind=kind, nnz_per_row=16)
        S = A.to_scipy()
        for k in (16, 64):
            X = rng.random((A.shape[1], k)) * 2 - 1
            _check(kernels.spmm(A, X), S @ X, f"spmm {kind} k={k}")
            t = interleaved({"triad": triad, "scipy": lambda S=S, X=X: S @ X,
                             "numba": lambda A=A, X=X: kernels.spmm(A, X)},
                            max(repeats // 3, 2))
            report(f"spmm{k}", kind, A, t, SPMM.cost({"A": A, "X": X}).bytes)

    print("\nTargets (reached vs target; measured on this run, not asserted):")
    for r in rows_out:
        if r["kernel"] == "spmv" and r["matrix"] in ("banded", "laplacian3d"):
            ok = r["fraction"] >= SPMV_TARGET_FRACTION
            print(f"  spmv {r['matrix']:<12} {r['fraction']:.0%} of triad "
                  f"(target ≥ {SPMV_TARGET_FRACTION:.0%}): {'met' if ok else 'MISSED'}")
    spmv_rows = [r for r in rows_out if r["kernel"] == "spmv"]
    if spmv_rows:
        slowest = min(spmv_rows, key=lambda r: r["speedup"])
        print(f"  spmv no slower than scipy: worst {slowest['speedup']:.2f}x on "
              f"{slowest['matrix']} (target ≥ 1.00x): "
              f"{'met' if slowest['speedup'] >= 1.0 else 'MISSED'}")
    for r in rows_out:
        if r["kernel"] == "spmm16":
            ok = r["speedup"] >= SPMM16_TARGET_SPEEDUP
            print(f"  spmm 16 columns {r['matrix']:<8} {r['speedup']:.2f}x scipy "
                  f"(target ≥ {SPMM16_TARGET_SPEEDUP:.1f}x): {'met' if ok else 'MISSED'}")
    if load > (os.cpu_count() or 1):
        print(f"  note: load average {load:.1f} exceeds the {os.cpu_count()} cores: other "
              "processes shared the cores and memory bus during this run.")
    return rows_out


if __name__ == "__main__":
    main()
