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
import os


def row_rank2(A, u1, v1, u2, v2):
    """A += u1 v1ᵀ + u2 v2ᵀ a row at a time (A (n, n), the vectors (n,), float64)."""
    for i in range(A.shape[0]):
        A[i, :] += u1[i] * v1 + u2[i] * v2


def scaled_rows(P, a, x, y):
    """P[i, :] = a x[i] y: an outer product a row at a time."""
    for i in range(x.shape[0]):
        P[i] = a * x[i] * y


def main() -> None:
    import numba
    import numpy as np

    from hetlab import offload
    from hetlab.machine import cpu_model
    from hetlab.offload.runtime.measure import confirm_times, copy_args, outputs_of
    from hetlab.offload.targets import base
    from hetlab.offload.targets.numba import NumbaTarget
    from tests.offload_corpus import heldout_probe5 as hp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--n", type=int, default=1500)
    a = ap.parse_args()
    print(f"# CPU {cpu_model()}, numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    g, n = np.random.default_rng(0), a.n
    kernels = {
        "rank1_slice_update (probe 5)": (hp.rank1_slice_update,
                                         (g.random((n, n)), g.random(n), g.random(n))),
        "row_rank2": (row_rank2, (g.random((n, n)), *(g.random(n) for _ in range(4)))),
        "scaled_rows": (scaled_rows, (np.zeros((n, n)), 1.5, g.random(n), g.random(n))),
    }
    target = NumbaTarget()
    for name, (fn, args) in kernels.items():
        ranks = {p: x.ndim for p, x in zip(offload.analyze(fn).params, args, strict=True)
                 if isinstance(x, np.ndarray)}
        report = offload.analyze(fn, arrays=ranks)
        report.float_arrays = frozenset(ranks)
        report.scalar_params = frozenset(p for p, x in zip(report.params, args, strict=True)
                                         if not isinstance(x, np.ndarray))
        fns = {"serial njit": numba.njit(fn)}
        keep = base.slice_loops
        for label, off in (("as slices", True), ("slice loops", False)):
            if off:
                base.slice_loops = lambda *_: []
            try:
                fns[f"serial, {label}"] = target.generate(report, (), transforms=True).compile()
                fns[f"L1, {label}"] = target.generate(report, ["L1"]).compile()
            finally:
                base.slice_loops = keep
        ref = copy_args(args)
        want = outputs_of(fns["serial njit"](*ref), ref)
        for k, f in fns.items():  # each gives the serial njit's result, bit for bit
            work = copy_args(args)
            got = outputs_of(f(*work), work)
            for w, r in zip(got, want, strict=True):
                np.testing.assert_array_equal(w, r, err_msg=k)
        best = confirm_times({k: (f, None) for k, f in fns.items()}, args, 3, rounds=a.rounds)
        base_t = best["serial njit"]
        print(f"{name} (n={n}): " + ", ".join(
            f"{k} {v * 1e3:.3f} ms ({base_t / v:.2f}x serial)" for k, v in best.items()))


if __name__ == "__main__":
    main()
