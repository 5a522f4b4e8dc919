"""Outlining on the corpus of functions numba cannot compile as a whole
(``tests/offload_corpus/outlining.py``: prints, dicts, ``try``, timers, ``assert`` messages
around loops): per function the loops ``offload.search`` compiled alone, and the function as
written, the plan and the answer key (the loops compiled by hand) timed in the same interleaved
rounds (``confirm_times``), at the corpus's moderate sizes. Ratios > 1: the plan is faster.

    PYTHONPATH=. python benchmarks/offload_outline.py [--budget N] [--scale F] [--only a,b]

Every line names the CPU; the functions' prints are swallowed while timing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _row(name: str, case, budget: int, scale: float) -> dict:
    import numpy as np

    from hetlab import offload
    from hetlab.offload.runtime.measure import confirm_times, copy_args, outputs_of, verify

    n = max(3, int(case.moderate * scale))
    args = case.make(np.random.default_rng(0), n)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        plan = offload.search(case.fn, args, budget=budget, progress=False)
    search_s = time.perf_counter() - t0
    fast = plan.compile()
    with contextlib.redirect_stdout(io.StringIO()):
        want_args, got_args, key_args = copy_args(args), copy_args(args), copy_args(args)
        want = outputs_of(case.fn(*want_args), want_args)
        ok, _ = verify(outputs_of(fast(*got_args), got_args), want)
        key_ok, _ = verify(outputs_of(case.key(*key_args), key_args), want)
        t = confirm_times({"python": (case.fn, None), "plan": (fast, None),
                           "key": (case.key, None)}, args, 3, rounds=3)
    loops = ", ".join(o.label() for o in plan.outlined) or "-"
    return {"function": name, "n": n, "outlined": loops, "ok": ok and key_ok,
            "python_ms": t["python"] * 1e3, "plan_ms": t["plan"] * 1e3, "key_ms": t["key"] * 1e3,
            "speedup": t["python"] / t["plan"], "vs_key": t["key"] / t["plan"],
            "search_s": search_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    args = parser.parse_args()

    import numba
    from offload_suite.run import machine

    from tests.offload_corpus import outlining as corpus

    names = [n for n in corpus.CASES if not args.only or n in args.only.split(",")]
    meta = machine()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"offload outlining corpus: {len(names)} functions, budget {args.budget}, scale "
          f"{args.scale}; CPU {meta['cpu']} ({meta['cores']} cores), numba {numba.__version__}, "
          f"{meta['threads']} threads; load average {load} at start")
    print(f"{'function':22s} {'n':>8s} {'outlined loops (line: plan)':44s} {'ok':3s} "
          f"{'python ms':>10s} {'plan ms':>9s} {'key ms':>9s} {'plan/py':>8s} {'plan/key':>8s} "
          f"{'search s':>8s}")
    rows = []
    for name in names:
        r = _row(name, corpus.CASES[name], args.budget, args.scale)
        rows.append(r)
        print(f"{r['function']:22s} {r['n']:8d} {r['outlined'][:44]:44s} "
              f"{'yes' if r['ok'] else 'NO':3s} {r['python_ms']:10.2f} {r['plan_ms']:9.3f} "
              f"{r['key_ms']:9.3f} {r['speedup']:8.1f} {r['vs_key']:8.2f} {r['search_s']:8.1f}",
              flush=True)
    import statistics

    outlined = [r for r in rows if r["outlined"] != "-"]
    geo = statistics.geometric_mean
    print(f"{len(rows)} functions: {len(outlined)} with outlined loops, "
          f"{sum(not r['ok'] for r in rows)} wrong; geometric mean plan vs as written "
          f"{geo([r['speedup'] for r in rows]):.1f}×, plan vs key "
          f"{geo([r['vs_key'] for r in rows]):.2f}×; median search "
          f"{statistics.median(r['search_s'] for r in rows):.1f} s; CPU {meta['cpu']}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
