"""A/B of the collapse pass's run-time choice on 2-D nests whose inner loop vectorizes.

The collapse fixed pass (``hetlab/offload/analysis/transforms/rewrite.py``) turns ``for i in
prange: for j in range:`` into one ``prange`` over the pairs. It now runs that form only when
``i`` has fewer than ``ROWS_PER_THREAD`` iterations per thread, else the nest as written. This
times, on the fifth probe's two 3×3 convolutions, the serial njit, the variant with ``L1`` in
parallel as generated now (rows in parallel at these sizes) and the same variant forced to
its collapsed form, in interleaved rounds (min over rounds), each checked against the serial.

    PYTHONPATH=. python benchmarks/offload_collapse_ab.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    import numba
    import numpy as np

    from hetlab import offload
    from hetlab.machine import cpu_model
    from hetlab.offload.analysis.transforms import rewrite
    from tests.offload_corpus import heldout_probe5 as hp

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    print(f"# CPU {cpu_model()}, numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    for name in ("conv2d_clamped_edges", "conv2d_periodic_mod"):
        probe = hp.PROBES[name]
        args = probe.make(np.random.default_rng(0), probe.moderate)
        now = offload.transform(probe.fn, ["L1"]).compile()
        keep = rewrite.ROWS_PER_THREAD
        rewrite.ROWS_PER_THREAD = 1 << 30  # every outer loop "short": the collapsed form
        try:
            forced = offload.transform(probe.fn, ["L1"]).compile()
        finally:
            rewrite.ROWS_PER_THREAD = keep
        fns = {"serial njit": numba.njit(probe.fn), "L1 as generated": now,
               "L1 forced collapsed": forced}
        outs = {}
        for k, f in fns.items():
            work = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
            f(*work)
            outs[k] = work
        for k in fns:
            for w, r in zip(outs[k], outs["serial njit"], strict=True):
                if isinstance(w, np.ndarray):
                    np.testing.assert_allclose(w, r, rtol=1e-12)
        best = {k: float("inf") for k in fns}
        for _ in range(a.rounds):
            for k, f in fns.items():
                work = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                t0 = time.perf_counter()
                f(*work)
                best[k] = min(best[k], time.perf_counter() - t0)
        base = best["serial njit"]
        shape = "x".join(map(str, args[0].shape))
        print(f"{name} ({shape}): " + ", ".join(
            f"{k} {v * 1e3:.3f} ms ({base / v:.2f}x serial)" for k, v in best.items()))


if __name__ == "__main__":
    main()
