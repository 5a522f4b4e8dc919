"""A/B of the slice-loop fixed pass on row-slice kernels.

The numba target runs a one-axis slice statement inside a loop (``A[i, :] += u[i] * v``) as an
element loop with no temporary (``hetlab/offload/analysis/transforms/slices.py``). This times
the serial njit of each kernel as written, the serial variant with the fixed passes with and
without that pass, and the same two with the row loop ``L1`` in parallel, each checked against
the serial njit (bit for bit), then timed in interleaved rounds (``confirm_times``: median of
3 calls per round, the rounds' ratios to the serial njit's time of the same round).

    PYTHONPATH=. python benchmarks/offload_slice_ab.py [--rounds 9] [--n 1500]
"""

from __future__ import annotations

import argparse


def row_rank2(A, u1, v1, u2, v2):
    """A += u1 v1ᵀ + u2 v2ᵀ a row at a time (A (n, n), the vectors (n,), float64)."""
    for i in range(A.shape[0]):
        A[i, :] += u1[i] * v1 + u2[i] * v2


def scaled_rows(P, a, x, y):
    """P[i, :] = a x[i] y: an outer product a row at a time."""
    for i in range(x.shape[0]):
        P[i] = a * x[i] * y


def main() -> None:
    import numpy as np

    from benchmarks._pass_ab import run_ab
    from tests.offload_corpus import heldout_probe5 as hp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=1500)
    a = ap.parse_args()
    g, n = np.random.default_rng(0), a.n
    kernels = {
        f"rank1_slice_update (probe 5, n={n})": (hp.rank1_slice_update,
                                                 (g.random((n, n)), g.random(n), g.random(n))),
        f"row_rank2 (n={n})": (row_rank2, (g.random((n, n)), *(g.random(n) for _ in range(4)))),
        f"scaled_rows (n={n})": (scaled_rows, (np.zeros((n, n)), 1.5, g.random(n), g.random(n))),
    }
    run_ab(kernels, "slice_loops", ("as slices", "slice loops"), a.rounds)


if __name__ == "__main__":
    main()
