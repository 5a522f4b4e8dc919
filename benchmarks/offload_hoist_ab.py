"""A/B of the index-hoist fixed pass on kernels with invariant ``%``/``//`` subscripts.

The numba target computes loop-invariant index arithmetic holding ``%`` or ``//`` once before
its loop (``hetlab/offload/analysis/transforms/hoist.py``). This times the serial njit of each
kernel as written, the serial variant with the fixed passes with and without that pass, and
the same two with ``L1`` in parallel (``benchmarks/_pass_ab.py``).

    PYTHONPATH=. python benchmarks/offload_hoist_ab.py [--rounds 9] [--n 600]
"""

from __future__ import annotations

import argparse


def main() -> None:
    import numpy as np

    from benchmarks._pass_ab import run_ab
    from tests.offload_corpus import heldout_probe5 as hp
    from tests.test_offload_hoist import blocked_columns  # block rows, wrapped columns

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=600)
    a = ap.parse_args()
    g, n = np.random.default_rng(0), a.n
    kernels = {
        f"conv2d_periodic_mod (probe 5, n={n})": (
            hp.conv2d_periodic_mod, (g.random((n, n)), g.random((3, 3)), np.zeros((n, n)))),
        f"blocked_columns (n={n})": (blocked_columns,
                                     (g.random((n // 4, n)), np.zeros((n, n)), 4)),
    }
    run_ab(kernels, "hoist_invariant_indices", ("kept in place", "hoisted"), a.rounds)


if __name__ == "__main__":
    main()
