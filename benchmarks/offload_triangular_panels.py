"""Triangular suite kernels: the per-row form, the panel form, the hand-written key, serial njit.

For each triangular kernel of the offload suite (``benchmarks/offload_suite/linalg.py``) the
block ``B1`` is compiled twice — as one library call per row (the form before
:mod:`hetlab.offload.analysis.panels`) and in panels — and timed with the answer key and the
plain loops under serial ``numba.njit``, interleaved round-robin on fresh inputs; min and
median of ``--rounds`` calls, in ms. Panel heights come from ``--panel`` / ``--panel-split``.

    PYTHONPATH=. python benchmarks/offload_triangular_panels.py [--rounds 9] [--panel 64]

Set ``OPENBLAS_NUM_THREADS=1`` to time the BLAS calls on one thread (on a shared machine,
two-thread OpenBLAS calls wait for descheduled threads: medians then measure the load).
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from benchmarks.offload_suite import linalg
from hetlab import offload
from hetlab.offload.analysis import panels, triangular

KERNELS = ("sym_rank2k_lower", "sym_lower_matmul", "unit_tri_product")


def _forms(fn):
    keep = triangular.panel_form
    triangular.panel_form = lambda *a, **k: None  # the per-row form
    try:
        rows = offload.transform(fn, blocks=["B1"]).compile()
    finally:
        triangular.panel_form = keep
    return rows, offload.transform(fn, blocks=["B1"]).compile()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--panel", type=int, default=panels.PANEL)
    ap.add_argument("--panel-split", type=int, default=panels.PANEL_SPLIT)
    a = ap.parse_args()
    panels.PANEL, panels.PANEL_SPLIT = a.panel, a.panel_split
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
          f"panel {a.panel}, split panel {a.panel_split}, load {os.getloadavg()[0]:.2f}, "
          f"{a.rounds} rounds; ms min / median")
    for k in linalg.KERNELS:
        if k.name not in a.kernels.split(","):
            continue
        rows, fast = _forms(k.fn)
        fs = {"serial njit": numba.njit(k.fn), "per-row": rows, "panels": fast, "hand": k.hand}
        want = k.make_args(k.full, 0)
        fs["serial njit"](*want)
        for f in fs.values():  # compiled, and equal to the loops
            got = k.make_args(k.full, 0)
            f(*got)
            for x, y in zip(got, want, strict=True):
                if isinstance(x, np.ndarray):
                    np.testing.assert_allclose(x, y, rtol=1e-10)
        ts: dict[str, list[float]] = {x: [] for x in fs}
        for r in range(a.rounds):
            for lab, f in fs.items():
                args = k.make_args(k.full, r + 1)
                t = time.perf_counter()
                f(*args)
                ts[lab].append(time.perf_counter() - t)
        m = {x: (min(v) * 1e3, float(np.median(v)) * 1e3) for x, v in ts.items()}
        cells = "  ".join(f"{x} {lo:.2f}/{med:.2f}" for x, (lo, med) in m.items())
        print(f"{k.name:18s} {cells}  panels vs hand (min) {m['hand'][0] / m['panels'][0]:.2f}x"
              f", per-row vs hand {m['hand'][0] / m['per-row'][0]:.2f}x")


if __name__ == "__main__":
    main()
