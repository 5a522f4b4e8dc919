"""The masked panel form (:mod:`hetlab.offload.analysis.masked`) against the split form, by height.

``unit_tri_product`` of the offload suite (``benchmarks/offload_suite/linalg.py``, B = αUB in
place) is compiled with its block ``B1`` in the split form (each panel: one GEMM for the rows
below it, the in-panel triangle as numba loops, :data:`~hetlab.offload.analysis.panels.
PANEL_SPLIT` rows) and in the masked form (one GEMM per panel on a masked copy of the panel's
block) at several panel heights, checked against the answer key, then timed with the key,
interleaved round-robin on fresh inputs: min of ``--rounds`` calls, in ms.

    PYTHONPATH=. python benchmarks/offload_masked_panels.py [--n 340] [--heights 32,48,64,96]

Set ``OPENBLAS_NUM_THREADS=1`` to time the BLAS calls on one thread (on a shared machine,
two-thread OpenBLAS calls wait for descheduled threads).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from benchmarks.offload_suite import linalg
from hetlab import offload
from hetlab.offload.analysis import panels


def _compiled(fn, height: int, masked: bool):
    keep = panels.masked_form, panels.PANEL_MASKED
    panels.PANEL_MASKED = height
    if not masked:
        panels.masked_form = lambda *a, **k: None  # the split form
    try:
        return offload.transform(fn, blocks=["B1"]).compile()
    finally:
        panels.masked_form, panels.PANEL_MASKED = keep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=340)
    ap.add_argument("--heights", default="32,48,64,96,128")
    ap.add_argument("--rounds", type=int, default=25)
    a = ap.parse_args()
    (k,) = [k for k in linalg.KERNELS if k.name == "unit_tri_product"]
    args = k.make_args(a.n, 0)
    want = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    k.hand(*want)
    fs = {f"split{panels.PANEL_SPLIT}": _compiled(k.fn, 0, False)}
    for h in (int(x) for x in a.heights.split(",")):
        fs[f"masked{h}"] = _compiled(k.fn, h, True)
    fs["hand"] = k.hand
    for name, f in fs.items():  # compiled, and equal to the key
        got = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        f(*got)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-10, err_msg=name)
    best = dict.fromkeys(fs, float("inf"))
    for _ in range(a.rounds):
        for name, f in fs.items():
            work = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
            t0 = time.perf_counter()
            f(*work)
            best[name] = min(best[name], time.perf_counter() - t0)
    print(f"unit_tri_product n={a.n}, B {args[2].shape}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, load {os.getloadavg()[0]:.2f}, "
          f"min of {a.rounds} calls (ms), vs hand = hand / form")
    for name, t in best.items():
        print(f"  {name:>10}: {t * 1e3:8.3f} ms  vs hand {best['hand'] / t:5.2f}x")


if __name__ == "__main__":
    main()
