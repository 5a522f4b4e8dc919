"""Time the answer-key designs of each suite kernel against each other (issue 17, part 3).

For each kernel: every design in the ``DESIGNS`` of ``designs_dense``, ``designs_vec`` and
``designs_grid``, plus
serial ``numba.njit`` of the plain function (``plain_njit``), each first checked against the
plain function's serial njit at a small size, then timed on the kernel's full size in
interleaved rounds (the designs in a rotated order each round, fresh inputs every call, min
over the rounds). The machine may be shared: interleaving makes the load hit every design alike.

    PYTHONPATH=. python benchmarks/offload_suite/compare_keys.py [--kernels a,b] [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
import time

import numba
import numpy as np

from offload_suite import SUITE
from offload_suite.designs_dense import DESIGNS as _DENSE
from offload_suite.designs_grid import DESIGNS as _GRID
from offload_suite.designs_vec import DESIGNS as _VEC

DESIGNS = {**_DENSE, **_VEC, **_GRID}


def _outputs(fn, args):
    work = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ret = fn(*work)
    return [ret] + [w for w in work if isinstance(w, np.ndarray)]


def _same(got, want) -> bool:
    return all(np.allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12)
               for g, w in zip(got, want, strict=True) if w is not None)


def compare(name: str, rounds: int) -> dict[str, float]:
    """Min time (s) per design of ``name`` at its full size; raises if a design is wrong."""
    k = SUITE[name]
    designs = {"plain_njit": numba.njit(k.fn), **DESIGNS[name]}
    small = k.make_args(k.tiny + 5, 11)
    want = _outputs(designs["plain_njit"], small)
    for label, fn in list(designs.items()):
        if not _same(_outputs(fn, small), want):
            print(f"  {name}: design {label} differs from the plain function: left out")
            del designs[label]
    labels = list(designs)
    best = dict.fromkeys(labels, np.inf)
    for r in range(rounds):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for label in order:
            args = k.make_args(k.full, r)
            t0 = time.perf_counter()
            designs[label](*args)
            best[label] = min(best[label], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", default=None)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args(argv)
    names = a.kernels.split(",") if a.kernels else [n for n in SUITE if n in DESIGNS]
    print(f"answer-key designs, min of {a.rounds} interleaved calls at full size (ms); "
          f"{numba.get_num_threads()} threads; shared machine", flush=True)
    for name in names:
        best = compare(name, a.rounds)
        win = min(best, key=best.get)
        cells = "  ".join(f"{lb} {t * 1e3:.3g}" for lb, t in best.items())
        print(f"{name:20s} {cells}  -> {win}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
