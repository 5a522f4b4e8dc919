"""What a W4 GEMV loses when its packed codes do not start on a cache line.

Plain script; run from the repository root::

    PYTHONPATH=$PWD python benchmarks/w4_align_ab.py            # ~1 minute
    PYTHONPATH=$PWD python benchmarks/w4_align_ab.py --rows 11008 --rounds 20

The W4 kernels load a row's codes 64 bytes at a time. ``QuantizedMatrix`` keeps NumPy codes
on a 64-byte boundary (:mod:`hetlab.core.aligned`); here the same matrix's codes are also
placed 16, 32 and 48 bytes past a boundary (a copy set into the matrix behind its back, as a
plain ``np.empty`` would have placed them), and ``hl.gemv_q`` runs on each, on every W4 path
of this CPU, the calls interleaved so each placement sees the same background. Results are
checked identical; each line gives the median over rounds of the best of 10 calls and its
ratio to the aligned codes. The CPU, its instruction sets and the path close every line.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time

import numba
import numpy as np

# benchmarks/quant.py (this script's folder is first on sys.path): same tags, same forcing
from quant import _on_path, tag

import hetlab as hl
from hetlab import quant
from hetlab.core.aligned import aligned_empty
from hetlab.kernels.quant import numba as qn


def placed(qw: quant.QuantizedMatrix, offset: int) -> quant.QuantizedMatrix:
    """A shallow copy of ``qw`` whose codes start ``offset`` bytes past a 64-byte boundary."""
    raw = aligned_empty(qw.qweight.nbytes + 64, np.uint8)
    codes = raw[offset:offset + qw.qweight.nbytes].view(np.uint32).reshape(qw.qweight.shape)
    codes[...] = qw.qweight
    codes.flags.writeable = False
    out = copy.copy(qw)
    object.__setattr__(out, "qweight", codes)  # behind the constructor's back, on purpose
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=4096)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    a = p.parse_args(argv)
    numba.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    qw = quant.quantize(rng.normal(0, 0.02, (a.rows, a.cols)).astype(np.float32), 4, 128)
    x = rng.standard_normal(a.cols).astype(np.float32)
    mats = {off: placed(qw, off) for off in (0, 16, 32, 48)}
    print(f"{a.rows}×{a.cols} W4 g128, {a.threads} threads, median over {a.rounds} rounds of "
          f"the best of 10 calls")
    for path in qn.w4_paths():
        fns = {off: _on_path(path, lambda m=m: hl.gemv_q(m, x, device="numba"))
               for off, m in mats.items()}
        ref = fns[0]()
        for off, fn in fns.items():
            if not np.array_equal(fn(), ref):
                raise SystemExit(f"[{path}] codes at +{off} B: result differs from aligned")
        best: dict[int, list[float]] = {off: [] for off in fns}
        for _ in range(a.rounds):
            for off, fn in fns.items():
                ts = []
                for _ in range(10):
                    t0 = time.perf_counter()
                    fn()
                    ts.append(time.perf_counter() - t0)
                best[off].append(min(ts))
        base = statistics.median(best[0])
        for off in fns:
            med = statistics.median(best[off])
            print(f"  codes at +{off:2d} B  {med * 1e6:8.1f} µs  {med / base:4.2f}× aligned  "
                  f"{tag(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
