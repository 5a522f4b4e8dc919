"""sparse.einsum: the generated numba code serial vs row-parallel (prange), side by side.

The same expression and operands, compiled twice (``range`` or ``prange`` over the output
rows, chosen through ``hetlab.kernels.sparse.einsum.PARALLEL_WORK``); best of ``--repeats``, timed
round-robin, printed as a ratio (serial time / parallel time). Each result is checked against
scipy (or numpy) before it is timed. Expected on 2 cores: up to ~2×; dense × sparse
``ik,kj->ij`` has no parallel variant (its outer loop is the contracted index).

    python benchmarks/sparse_einsum.py            # 200k-row matrices, seconds
    python benchmarks/sparse_einsum.py --quick    # 20k rows (the smoke test)
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from typing import Any

import numpy as np


def _close(got: Any, expected: Any) -> bool:
    """Equal within 1e-10 relative (sparse results compared as scipy matrices)."""
    if hasattr(got, "to_scipy"):
        got = got.to_scipy()
    if hasattr(expected, "tocsr"):
        scale = max(abs(expected).max(), 1e-300)
        return got.shape == expected.shape and abs(got - expected).max() <= 1e-10 * scale
    return bool(np.allclose(got, expected, rtol=1e-10, atol=1e-10))


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="20k-row matrices")
    p.add_argument("--rows", type=int, default=None)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
    n = args.rows or (20_000 if args.quick else 200_000)
    import numba

    from hetlab import sparse

    mod = importlib.import_module("hetlab.kernels.sparse.einsum")
    rng = np.random.default_rng(2026)
    A = sparse.make_matrix(n, rng, kind="powerlaw", nnz_per_row=16)
    B = sparse.make_matrix(n, rng, kind="uniform", nnz_per_row=16)
    G = sparse.make_matrix(n, rng, kind="uniform", nnz_per_row=4)
    x, D = rng.random(n), rng.random((n, 8))
    SA, SB, SG = A.to_scipy(), B.to_scipy(), G.to_scipy()
    cases = [("ij,j->i", "sparse × vector", (A, x), SA @ x),
             ("ik,kj->ij", "sparse × dense(8)", (A, D), SA @ D),
             ("ik,kj->ij", "Gustavson S × S", (G, G), SG @ SG),
             ("ij,ij->ij", "join S ⊙ S", (A, B), SA.multiply(SB)),
             ("ij,ij->", "sum of S ⊙ S", (A, B), SA.multiply(SB).sum())]
    print(f"numba {numba.__version__} ({numba.get_num_threads()} threads), {n} rows, load "
          f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print(f"{'expression':<12}{'operands':<20}{'serial ms':>10}{'parallel ms':>12}{'speedup':>9}")
    out = []
    saved = mod.PARALLEL_WORK
    try:
        def run(parallel: bool, expr: str, ops: tuple) -> Any:
            mod.PARALLEL_WORK = 0 if parallel else 1 << 62
            return mod.einsum(expr, *ops)

        for expr, what, ops, expected in cases:
            for parallel in (False, True):
                if not _close(run(parallel, expr, ops), expected):
                    raise SystemExit(f"{expr} ({what}): result differs from scipy's")
            best = {False: float("inf"), True: float("inf")}
            for _ in range(args.repeats):
                for parallel in (False, True):
                    t0 = time.perf_counter()
                    run(parallel, expr, ops)
                    best[parallel] = min(best[parallel], time.perf_counter() - t0)
            r = {"expr": expr, "operands": what, "serial_s": best[False],
                 "parallel_s": best[True], "speedup": best[False] / best[True]}
            out.append(r)
            print(f"{expr:<12}{what:<20}{best[False] * 1e3:>10.2f}{best[True] * 1e3:>12.2f}"
                  f"{r['speedup']:>8.2f}x", flush=True)
    finally:
        mod.PARALLEL_WORK = saved
    return out


if __name__ == "__main__":
    main()
