"""Which loop transformations fire on the offload evaluation suite, and what they change.

Per kernel of ``benchmarks/offload_suite`` (issue 17, part 3): the loop verdicts, the
transformations ``offload.analyze`` reports (interchange, privatized reductions and
temporaries, scalar replacement), the loops parallel before and after, and a check that the
variant offloading every such loop, with all transformations, equals the plain function at
the suite's test size. ``--before ROOT`` also prints the verdicts of another checkout's
hetlab (e.g. main before this work), run in a subprocess. ``--time`` adds, for kernels with an
interchange, serial njit as written vs serial njit with the fixed passes, and the variant with
the outermost loops in parallel vs serial (one shared machine: indicative, not clean figures).
``--tiling`` times the tiling gene on a transpose copy and a matmul nest written as loops
(function blocks not used): the fixed passes alone vs the same plus tiling by 32/64/128,
serial and with the outer loop in ``prange``, printed as ratios (shared machine: noisy).

Run from the repository root::

    PYTHONPATH=. python benchmarks/offload_transforms.py [--before /path/to/main] [--time]
    PYTHONPATH=. python benchmarks/offload_transforms.py --tiling [--tiling-n 3000]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _suite(suite_dir: Path) -> dict[str, Any]:
    sys.path.insert(0, str(suite_dir))
    from offload_suite import SUITE

    return SUITE


def verdicts(suite_dir: Path) -> dict[str, list[str]]:
    """Kernel → ``["L1 parallel", …]`` with this process's hetlab."""
    from hetlab.offload import analyze

    out = {}
    for name, k in _suite(suite_dir).items():
        rep = analyze(k.fn)
        out[name] = [f"{lp.id} {lp.verdict}" for lp in rep.loops]
    return out


def _equal(fn: Any, variant: Any, args: tuple) -> bool:
    want, got = copy.deepcopy(args), copy.deepcopy(args)
    r1, r2 = fn(*want), variant(*got)
    pairs = [(w, g) for w, g in zip(want, got, strict=True) if isinstance(w, np.ndarray)]
    if r1 is not None:
        pairs.append((np.asarray(r1), np.asarray(r2)))
    return all(np.allclose(g, w, rtol=1e-7, atol=1e-9) for w, g in pairs)


def _best(fn: Any, args: tuple, repeats: int = 5) -> float:
    fn(*copy.deepcopy(args))
    times = []
    for _ in range(repeats):
        work = copy.deepcopy(args)
        t0 = time.perf_counter()
        fn(*work)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def report(suite_dir: Path, before: dict[str, list[str]] | None, timing: bool,
           only: list[str] | None = None) -> None:
    from hetlab.offload import analyze
    from hetlab.offload.targets.registry import get_target

    numba_t = get_target("numba")
    fired: dict[str, int] = {}
    for name, k in _suite(suite_dir).items():
        if only and name not in only:
            continue
        rep = analyze(k.fn)
        genes = numba_t.genes(rep)
        par = [lp.id for lp in rep.parallelizable]
        priv = rep.transforms.privatizable()
        print(f"\n== {name} ({k.family}; expert parallel: {', '.join(k.parallel) or '-'})")
        for lp in rep.loops:
            after = "parallel (privatized " + ", ".join(
                p.array for p in rep.transforms.private[lp.id]) + ")" \
                if lp.id in priv else lp.verdict
            was = ""
            if before is not None and name in before:
                old = dict(x.split(" ", 1) for x in before[name]).get(lp.id, "?")
                was = f"  before: {old}"
            print(f"   {lp.id:>4} {'  ' * lp.depth}for {lp.var:<6} {after:<28}{was}")
        for line in rep.transforms.lines():
            kind = line.split(": ", 1)[1].split(" ")[0] if ": " in line else line
            kind = ("interchange" if "interchanged" in line else "privatized reduction"
                    if "array reduction" in line else "privatized temporary"
                    if "per thread" in line else "scalar replacement"
                    if "scalar replacement" in line else kind)
            fired[kind] = fired.get(kind, 0) + 1
            print(f"   transform {line}")
        print(f"   parallel loops: {len(par)} as analyzed; {len(genes)} with privatized arrays")
        if not genes:
            continue
        outer = [g for g, bit in zip(genes, rep.outermost(genes), strict=True) if bit]
        tiny = k.make_args(k.tiny, 0)
        v_all = numba_t.generate(rep, genes).compile()
        v_out = numba_t.generate(rep, outer).compile()
        ok = _equal(k.fn, v_all, tiny) and _equal(k.fn, v_out, tiny)
        print(f"   variants (all {len(genes)} loops; outermost {', '.join(outer)}) equal to "
              f"the plain function at size {k.tiny}: {ok}")
        if timing:
            full = k.make_args(k.full, 0)
            plain = numba_t.generate(rep, (), transforms=False).compile()
            fixed = numba_t.generate(rep, (), transforms=True).compile()
            t0, t1, t2 = _best(plain, full), _best(fixed, full), _best(v_out, full)
            print(f"   size {k.full}: serial njit {t0 * 1e3:.1f} ms; with fixed passes "
                  f"{t1 * 1e3:.1f} ms ({t0 / t1:.2f}x); outermost parallel + transforms "
                  f"{t2 * 1e3:.1f} ms ({t0 / t2:.2f}x)")
    print("\ntransformations fired over the suite: "
          + ", ".join(f"{k} {n}" for k, n in sorted(fired.items())))


def _transpose_copy(A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            B[j, i] = A[i, j]


def _matmul_loops(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def tiling_demo(n: int, n_mm: int) -> None:
    """Untiled vs tiled variants (same fixed passes), serial and outer loop in prange."""
    from hetlab.offload import analyze
    from hetlab.offload.searching.model import StaticModel
    from hetlab.offload.targets.registry import get_target

    numba_t = get_target("numba")
    rng = np.random.default_rng(0)
    cases = [("transpose copy", _transpose_copy, (rng.random((n, n + 7)), np.zeros((n + 7, n)))),
             ("matmul as loops", _matmul_loops,
              (rng.random((n_mm, n_mm + 3)), rng.random((n_mm + 3, n_mm + 5)),
               np.zeros((n_mm, n_mm + 5))))]
    print("tiling (one shared machine, other jobs running: noisy, indicative only)")
    for name, fn, args in cases:
        rep = analyze(fn)
        genes = numba_t.option_genes(rep, args, trips=StaticModel(rep, args, 1).trips)
        shape = " x ".join(str(a.shape) for a in args)
        print(f"== {name} {shape}: tile genes offered by the search: {genes or 'none'}")
        for par in ([], ["L1"]):
            base = numba_t.generate(rep, par, transforms=True).compile()
            t0 = _best(base, args, repeats=3)
            ref = copy.deepcopy(args)
            base(*ref)
            row = [f"{'prange L1' if par else 'serial':<9} untiled {t0 * 1e3:8.1f} ms"]
            for bits, size in ((["L1:t1"], 32), (["L1:t2"], 64), (["L1:t1", "L1:t2"], 128)):
                v = numba_t.generate(rep, par + bits, transforms=True).compile()
                out = copy.deepcopy(args)
                v(*out)
                same = all(np.array_equal(a, b) for a, b in zip(ref, out, strict=True))
                t = _best(v, args, repeats=3)
                row.append(f"T={size}: {t0 / t:.2f}x{'' if same else ' (DIFFERS)'}")
            print("   " + "; ".join(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite-dir", type=Path, default=HERE,
                    help="folder holding the offload_suite package (default: benchmarks/)")
    ap.add_argument("--before", type=Path, help="root of another checkout to compare with")
    ap.add_argument("--time", action="store_true", help="also time the kernels (full size)")
    ap.add_argument("--kernels", nargs="*", help="only these kernels (names)")
    ap.add_argument("--tiling", action="store_true",
                    help="time the tiling gene (transpose copy, matmul as loops) and stop")
    ap.add_argument("--tiling-n", type=int, default=3000, help="transpose size (rows)")
    ap.add_argument("--tiling-mm", type=int, default=400, help="matmul size")
    ap.add_argument("--verdicts-json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.tiling:
        tiling_demo(a.tiling_n, a.tiling_mm)
        return
    if a.verdicts_json:
        print(json.dumps(verdicts(a.suite_dir)))
        return
    before = None
    if a.before is not None:
        env = dict(os.environ, PYTHONPATH=str(a.before))
        out = subprocess.run([sys.executable, __file__, "--verdicts-json", "--suite-dir",
                              str(a.suite_dir)], env=env, capture_output=True, text=True,
                             check=True, cwd=str(a.before))
        before = json.loads(out.stdout.strip().splitlines()[-1])
    report(a.suite_dir, before, a.time, a.kernels)


if __name__ == "__main__":
    main()
