"""Differential fuzzing of outlining (:mod:`hetlab.offload.searching.outline`) on generated
kernels (``offload_programs``) that numba cannot compile as a whole.

Each generated kernel gets one or two "breakers" — ``_note = f"{n:d}"``, a formatted string
numba cannot compile — inserted at random statement positions, at any depth: before a loop,
between two nests, inside a loop body (then that loop stays Python and the loops inside it are
outlined). ``offload.search`` (budget 3) must return a plan whose ``compile()`` gives Python's
outputs (each array argument, the return value) on fresh inputs of two other sizes; findings:
``wrong`` (a plan differs), ``crash`` (search or the plan raised where Python did not).

    python -m tests.fuzz.outline_differential --seed 0 --count 60
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
import traceback
import warnings

from hetlab import offload
from tests.fuzz.offload_differential import compare, references, run
from tests.fuzz.offload_programs import generate, load

BREAKER = '_note = f"{n:d}"'


def broken_source(source: str, rnd: random.Random, count: int = 2) -> str:
    """``source`` with ``count`` breakers inserted before statements of its body (never
    before an ``else``/``elif``, which would separate it from its ``if``)."""
    lines = source.splitlines()
    spots = [k for k in range(1, len(lines))
             if not lines[k].lstrip().startswith(("else", "elif", "return"))]
    for k in sorted(rnd.sample(spots, min(count, len(spots))), reverse=True):
        pad = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
        lines.insert(k, pad + BREAKER)
    return "\n".join(lines) + "\n"


def check(seed: int, sizes=(2, 17, 40)) -> tuple[str, int, str]:
    """One kernel: ``(finding or "", loops outlined, source)``; "skip" when Python raises
    on every size."""
    prog = generate(seed)
    source = broken_source(prog.source(), random.Random(seed))
    fn = load(prog, "outline-fuzz", source)
    refs = references(fn, seed, sizes)
    if len(refs) < 2:
        return "skip", 0, source
    *others, n0 = sorted(refs)  # searched on the largest size, checked on the others
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = offload.search(fn, copy.deepcopy(refs[n0][0]), budget=3, progress=False)
            pf = plan.compile()
            for n in others:
                args, ref = refs[n]
                err = compare(ref, run(pf, args))
                if err is not None:
                    return f"wrong (n={n}, error {err:.3g})", len(plan.outlined), source
    except Exception as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        return f"crash ({type(exc).__name__}: {first})", 0, source
    return "", len(plan.outlined), source


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=40)
    a = ap.parse_args(argv)
    import numba

    numba.set_num_threads(2)
    t0 = time.time()
    kernels = skipped = outlined = 0
    findings = []
    for seed in range(a.seed, a.seed + a.count):
        try:
            what, loops, source = check(seed)
        except Exception:
            traceback.print_exc()
            what, loops, source = "crash (driver)", 0, ""
        if what == "skip":
            skipped += 1
            continue
        kernels += 1
        outlined += bool(loops)
        if what:
            findings.append(seed)
            print(f"seed {seed}: {what}\n{source}", flush=True)
    print(f"kernels {kernels} (seeds {a.seed}..{a.seed + a.count - 1}, {skipped} skipped: "
          f"Python raises), with outlined loops {outlined}, findings {len(findings)} "
          f"{findings}, {time.time() - t0:.0f} s", flush=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
