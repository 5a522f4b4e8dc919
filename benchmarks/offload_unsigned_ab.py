"""The unsigned-subscripts pass (:func:`hetlab.offload.analysis.transforms.unsigned.
unsigned_subscripts`) on and off, on the offload suite's one-loop kernels.

Each kernel's outermost parallel loops are compiled twice — the variant as the search builds it,
and the same variant with the pass switched off — checked against each other, then timed
interleaved round-robin on fresh copies of the arguments (``--rounds`` rounds): min and median
in ms, and off/on (> 1: the pass helps). The CPU, thread count and load are printed first.

    PYTHONPATH=. python benchmarks/offload_unsigned_ab.py [--rounds 11]
        [--kernels smooth_1d,axpy_loop,scal_loop,dot_loop,outer_scaled]

``NUMBA_NUM_THREADS=1`` times one thread (less disturbed by other jobs on a shared machine).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import time

import numpy as np

from benchmarks.offload_suite import SUITE
from benchmarks.offload_suite.run import size_of
from hetlab import offload
from hetlab.offload.analysis.transforms import rewrite


def _variants(fn, loops):
    on = offload.transform(fn, loops)
    keep = rewrite.unsigned_subscripts
    rewrite.unsigned_subscripts = lambda func: []
    try:
        off = offload.transform(fn, loops)
    finally:
        rewrite.unsigned_subscripts = keep
    return on, off


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--kernels", default="smooth_1d,axpy_loop,scal_loop,dot_loop,outer_scaled")
    a = ap.parse_args()
    import numba

    print(f"# {_cpu()}; numba {numba.__version__}, {numba.get_num_threads()} threads; "
          f"load {os.getloadavg()}")
    for name in a.kernels.split(","):
        k = SUITE[name]
        rep = offload.analyze(k.fn)
        loops = [lp.id for lp in rep.parallelizable
                 if lp.parent is None or not rep.loops[lp.parent].parallelizable]
        args = k.make_args(size_of(k, False), 0)
        on_v, off_v = _variants(k.fn, loops)
        if on_v.source == off_v.source:
            print(f"{name:14s} {'+'.join(loops)}: the pass changes nothing")
            continue
        on, off = on_v.compile(), off_v.compile()
        w_on, w_off = copy.deepcopy(args), copy.deepcopy(args)
        r_on, r_off = on(*w_on), off(*w_off)
        for x, y in zip((r_on, *w_on), (r_off, *w_off), strict=True):
            np.testing.assert_allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                                       rtol=1e-10)
        t: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(a.rounds):
            for label, f in (("on", on), ("off", off)):
                w = copy.deepcopy(args)
                t0 = time.perf_counter()
                f(*w)
                t[label].append(time.perf_counter() - t0)
        on_ms, off_ms = min(t["on"]) * 1e3, min(t["off"]) * 1e3
        print(f"{name:14s} {'+'.join(loops):6s} on min {on_ms:7.2f} med "
              f"{np.median(t['on']) * 1e3:7.2f} ms | off min {off_ms:7.2f} med "
              f"{np.median(t['off']) * 1e3:7.2f} ms | off/on (min) {off_ms / on_ms:.2f}")
    print(f"# load after {os.getloadavg()}")


if __name__ == "__main__":
    main()
