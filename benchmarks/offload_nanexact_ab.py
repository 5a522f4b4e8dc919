"""A/B of NumPy's NaN rule in parallel numba variants (``transforms/nanexact.py``).

Under ``parallel=True`` numba compiles ``np.max``/``np.min`` as reductions that skip NaN; the
numba target calls ``runtime/nanexact.py``'s ``nan_max``/``nan_min`` instead. This builds the
``L1`` (row loop in ``prange``) variant of two row-extrema kernels (probe 6's
``weighted_row_spread`` and ``row_ranges_counter``) with and without that rewrite, checks both
against the Python function on data with a NaN in some rows (the rewrite must match it, and
numba's own forms are shown to differ), then times both on NaN-free data in interleaved rounds
(``confirm_times``: median of 3 calls per round, ratios to numba's forms' time of the same
round).

    PYTHONPATH=. python benchmarks/offload_nanexact_ab.py [--rounds 9] [--n 1000]
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    import numba
    import numpy as np

    from hetlab import offload
    from hetlab.machine import cpu_model
    from hetlab.offload.analysis.transforms import nanexact
    from hetlab.offload.runtime.measure import confirm_times, copy_args, outputs_of
    from tests.offload_corpus import heldout_probe6 as hp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=1000)
    a = ap.parse_args()
    print(f"# CPU {cpu_model()}, numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    g, n = np.random.default_rng(0), a.n
    w = g.random(n)
    kernels = {
        "weighted_row_spread": (hp.weighted_row_spread, lambda A: (A, w, np.zeros(n))),
        "row_ranges_counter": (hp.row_ranges_counter, lambda A: (A, np.zeros(n))),
    }
    real = nanexact.nan_exact_calls
    print(f"{'kernel':22s} {'numba np.max/np.min':>22s} {'nan-exact forms':>18s}  "
          "NaN rows: numba / nan-exact equal to Python")
    for name, (fn, make) in kernels.items():
        report = offload.analyze(fn)
        variants = {}
        for label, rewrite in (("numba", False), ("exact", True)):
            nanexact_pass = real if rewrite else (lambda tree, ns, par: [])
            # the numba target imports the pass by name: swap it for the A/B build only
            from hetlab.offload.targets import base
            base.nan_exact_calls = nanexact_pass
            try:
                variants[label] = offload.transform(report, ["L1"]).compile()
            finally:
                base.nan_exact_calls = real
        A = g.standard_normal((n, n))
        A[::7, 3] = np.nan
        want = make(A.copy())
        want_out = outputs_of(fn(*want), want)
        same = {}
        for label, f in variants.items():
            got = make(A.copy())
            got_out = outputs_of(f(*got), got)
            same[label] = all((x is None and y is None) or np.array_equal(x, y, equal_nan=True)
                              for x, y in zip(got_out, want_out, strict=True))
        args = make(g.standard_normal((n, n)))
        for f in variants.values():  # compiled before timing
            f(*copy_args(args))
        times = confirm_times({k: (f, None) for k, f in variants.items()}, args, repeats=3,
                              rounds=a.rounds)
        print(f"{name:22s} {times['numba'] * 1e3:19.3f} ms {times['exact'] * 1e3:15.3f} ms  "
              f"({times['numba'] / times['exact']:.2f}× the speed)  "
              f"{same['numba']} / {same['exact']}")


if __name__ == "__main__":
    main()
