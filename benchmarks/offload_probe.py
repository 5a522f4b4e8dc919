"""The held-out probe (tests/offload_corpus/heldout_probe.py) at moderate sizes: per kernel the
loops judged parallel, the function blocks found, the plan ``offload.search`` keeps (numba
target), and the plan against the plain function under serial ``numba.njit`` (interleaved
rounds, ``confirm_times``), with the plan checked against the serial njit at that size.

    PYTHONPATH=. python benchmarks/offload_probe.py [--probe2 | --probe3 | --probe4 | --probe5 |
                                                     --probe6 | --probe7 | --probe8 |
                                                     --probe9]
                                                    [--only a,b]
                                                    [--budget N] [--scale F]

``--probe2``: the second probe (tests/offload_corpus/heldout_probe2.py: the same computations
written the many ways Python is written), its keyword arguments passed on every call; a probe
whose arguments alias a written array is searched on copies and run on copies.

``--probe3``: the third probe (tests/offload_corpus/heldout_probe3.py: kinds of code the first
two lack — CSR rows, scatters, periodic stencils, images, escape time, scans, complex data).

``--probe4``: the fourth probe (tests/offload_corpus/heldout_probe4.py: classic dense, stencil,
data-mining and DP kernels spelled differently from the suite) WITH answer keys: each kernel's
expert numba version is checked against the serial njit at that size and timed in the same
interleaved rounds as the serial njit and the plan; the table adds plan/key (the suite's target
is >= 0.7 where the plan has a parallel loop).

``--probe5``: the fifth probe (tests/offload_corpus/heldout_probe5.py: float32/int64 data, Fortran
and strided arguments, ``while`` around nests, stepped and reverse ranges, scans, histograms, CSR
products, periodic and clamped convolutions, an early ``break``) with its answer keys, the same
table as ``--probe4``.

``--probe6``: the sixth probe (tests/offload_corpus/heldout_probe6.py: Python idioms — helpers
called from loops, constants and keyword defaults, ``continue``/``return``, ``while`` counters,
``reversed(range(n))``, buffer swaps, red-black and wavefront sweeps, scratch rows, 3-D arrays,
complex data, masks, bit operations, ternaries, returned tuples, a run-time lag) with its answer
keys, the same table as ``--probe4``.

``--probe7``: the seventh probe (tests/offload_corpus/heldout_probe7.py: index arithmetic and
in-place updates — doubled, halved, mirrored, offset, modular and negative subscripts, swaps,
gathers and scatters, chained ``A[i][j]``, row views, builtin ``sum``, ``round``, in-place
transposes — and novice Python: module tables and lambdas, recursion, lists, a dict, ``try``,
``print``, int32/float32 accumulators, views of one buffer) with its answer keys, the same table
as ``--probe4``; a kernel whose arguments alias is searched and run on copies.

``--probe8``: the eighth probe (tests/offload_corpus/heldout_probe8.py: flat buffers and named
indices — ``C[i * n + j]``, padded images, a flattened volume, ``base = i * n`` and
``idx = i * n + j`` named first, a leading dimension, rows overlapping by one element) with its
answer keys, the same table as ``--probe4``.

``--probe9``: the ninth probe (tests/offload_corpus/heldout_probe9.py: NumPy on rows inside
loops — ``np.sum((X[i] - C[k]) ** 2)``, ``.sum()``, ``np.linalg.norm``, ``np.dot`` and ``@`` of
rows, ``np.mean``, pure helpers returning such reductions, a helper writing its row, a scatter)
with its answer keys, the same table as ``--probe4``.

Figures from a shared, busy machine are only indicative (the first three probes have no answer
key: they measure generality, not tuning).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings


def _row(name: str, probe, budget: int, scale: float) -> dict:
    import numba
    import numpy as np

    from hetlab import offload
    from hetlab.offload import GAOptions, MeasureOptions
    from hetlab.offload.runtime.measure import confirm_times, copy_args, outputs_of, verify

    n = max(probe.small, int(probe.moderate * scale))
    args = probe.make(np.random.default_rng(0), n)
    if getattr(probe, "alias_refused", False):  # search refuses aliases of written arrays
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    kwargs = getattr(probe, "kwargs", {})
    if kwargs:  # compiled variants take positional arguments: bind the keywords once
        import inspect

        bound = inspect.signature(probe.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        args = tuple(bound.args)
    report = offload.analyze(probe.fn)
    row = {"kernel": name, "n": n,
           "parallel": " ".join(lp.id for lp in report.parallelizable) or "-",
           "blocks": ",".join(b.pattern for b in report.blocks) or "-"}
    t0 = time.perf_counter()
    plan = offload.search(probe.fn, args, targets=("numba",), budget=budget, reference="njit",
                          progress=False, ga=GAOptions(population=6),
                          measure=MeasureOptions(repeats=3))
    row["search_s"] = time.perf_counter() - t0
    row["plan"] = ("outlined " + ",".join(o.label().split(": ", 1)[1] for o in plan.outlined)
                   if plan.outlined else
                   "+".join([*plan.blocks, *plan.loops, *plan.options]) or "(serial)")
    serial_fn, plan_fn = numba.njit(probe.fn), plan.compile()
    want_args, got_args = copy_args(args), copy_args(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = outputs_of(serial_fn(*want_args), want_args)
        except numba.core.errors.TypingError:  # e.g. a Python helper plain njit cannot call
            serial_fn = offload.transform(report).compile()  # the engine's serial njit
            want_args = copy_args(args)
            try:
                want = outputs_of(serial_fn(*want_args), want_args)
                row["kernel"] += "*"
            except numba.core.errors.NumbaError:  # that one does not type either (an impure
                serial_fn = probe.fn              # helper left unjitted, reversed(range))
                row["kernel"] += "**"
                want_args = copy_args(args)
                want = outputs_of(serial_fn(*want_args), want_args)
        except (numba.core.errors.NumbaError,  # numba compiles no version (a global written)
                numba.core.errors.UnsupportedBytecodeError):
            serial_fn = probe.fn
            row["kernel"] += "**"
            want_args = copy_args(args)
            want = outputs_of(serial_fn(*want_args), want_args)
        ok, _ = verify(outputs_of(plan_fn(*got_args), got_args), want)
    row["ok"] = ok
    contenders = {"serial": (serial_fn, None), "plan": (plan_fn, None)}
    key = getattr(probe, "key", None)
    if key is not None:  # the answer key must give the serial njit's result too
        key_args = copy_args(args)
        key_ok, _ = verify(outputs_of(key(*key_args), key_args), want)
        row["ok"] = ok and key_ok
        row["key_ok"] = key_ok
        contenders["key"] = (key, None)
    t = confirm_times(contenders, args, 3, rounds=5 if key is not None else 3)
    row.update(serial_ms=t["serial"] * 1e3, plan_ms=t["plan"] * 1e3,
               speedup=t["serial"] / t["plan"])
    if key is not None:
        row.update(key_ms=t["key"] * 1e3, vs_key=t["key"] / t["plan"])
    return row


def _print_keyed(names: list[str], probes: dict, budget: int, scale: float,
                 which: int = 4) -> int:
    """A keyed probe's table (the fourth to the seventh): serial njit, plan and answer key per
    kernel, plan/serial and plan/key (figures are speedups: > 1 means the plan is faster)."""
    import contextlib
    import io
    import os

    load = os.getloadavg()
    print(f"# offload probe {which} (answer keys): budget {budget}, scale {scale}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start, {os.cpu_count()} cores")
    print("# figures are INDICATIVE: a shared machine (another engineer's jobs run on it); "
          "medians of interleaved rounds (confirm_times)")
    head = (f"{'kernel':22s} {'n':>6s} {'parallel':22s} {'blocks':20s} {'plan':24s} "
            f"{'ok':>3s} {'serial ms':>10s} {'plan ms':>9s} {'key ms':>9s} "
            f"{'plan/ser':>8s} {'plan/key':>8s} {'search s':>8s}")
    print(head)
    print("-" * len(head))
    wrong = slower = below = 0
    for name in names:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # a kernel that prints (probe 7)
                r = _row(name, probes[name], budget, scale)
        except Exception as exc:  # a failure is a result of the probe, printed
            print(f"{name:22s} FAILED: {type(exc).__name__}: {exc}")
            wrong += 1
            continue
        wrong += not r["ok"]
        slower += r["speedup"] < 0.95
        below += r["vs_key"] < 0.7 and r["parallel"] != "-"
        ok = "yes" if r["ok"] else ("KEY" if not r.get("key_ok", True) else "NO")
        print(f"{r['kernel']:22s} {r['n']:6d} {r['parallel'][:22]:22s} {r['blocks'][:20]:20s} "
              f"{r['plan'][:24]:24s} {ok:>3s} {r['serial_ms']:10.2f} {r['plan_ms']:9.2f} "
              f"{r['key_ms']:9.2f} {r['speedup']:8.2f} {r['vs_key']:8.2f} "
              f"{r['search_s']:8.1f}", flush=True)
    print(f"\n{len(names)} kernels: {wrong} wrong or failed, {slower} plans slower than serial "
          f"njit (< 0.95x), {below} plans with a parallel loop below 0.7x the key; load average "
          f"{os.getloadavg()[0]:.2f} at the end")
    return 1 if wrong else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated probe names")
    ap.add_argument("--budget", type=int, default=12, help="candidates per search")
    ap.add_argument("--scale", type=float, default=1.0, help="factor on the moderate sizes")
    ap.add_argument("--probe2", action="store_true",
                    help="the second probe (heldout_probe2.py: Python spelling variants)")
    ap.add_argument("--probe3", action="store_true",
                    help="the third probe (heldout_probe3.py: other kinds of computation)")
    ap.add_argument("--probe4", action="store_true",
                    help="the fourth probe (heldout_probe4.py) with its answer keys timed")
    ap.add_argument("--probe5", action="store_true",
                    help="the fifth probe (heldout_probe5.py) with its answer keys timed")
    for k, nth in ((6, "sixth"), (7, "seventh"), (8, "eighth"), (9, "ninth")):
        ap.add_argument(f"--probe{k}", action="store_true",
                        help=f"the {nth} probe (heldout_probe{k}.py) with its answer keys timed")
    a = ap.parse_args(argv)
    keyed = {4: a.probe4, 5: a.probe5, 6: a.probe6, 7: a.probe7, 8: a.probe8,
             9: a.probe9}
    if a.probe2 + a.probe3 + sum(keyed.values()) > 1:
        ap.error("--probe2 … --probe9 are exclusive")
    if any(keyed.values()):
        import importlib

        which = next(k for k, on in keyed.items() if on)
        PROBES = importlib.import_module(f"tests.offload_corpus.heldout_probe{which}").PROBES
        names = [s for s in a.only.split(",") if s] or list(PROBES)
        return _print_keyed(names, PROBES, a.budget, a.scale, which)
    if a.probe3:
        from tests.offload_corpus.heldout_probe3 import PROBES
    elif a.probe2:
        from tests.offload_corpus.heldout_probe2 import PROBES
    else:
        from tests.offload_corpus.heldout_probe import PROBES

    names = [s for s in a.only.split(",") if s] or list(PROBES)
    head = (f"{'kernel':22s} {'n':>6s} {'parallel':26s} {'blocks':24s} {'plan':24s} "
            f"{'ok':>3s} {'serial ms':>10s} {'plan ms':>9s} {'x':>6s} {'search s':>8s}")
    print(head)
    print("-" * len(head))
    slower = wrong = 0
    for name in names:
        try:
            r = _row(name, PROBES[name], a.budget, a.scale)
        except Exception as exc:  # a failure is a result of the probe, printed
            print(f"{name:22s} FAILED: {type(exc).__name__}: {exc}")
            wrong += 1
            continue
        wrong += not r["ok"]
        slower += r["speedup"] < 0.95
        print(f"{r['kernel']:22s} {r['n']:6d} {r['parallel'][:26]:26s} {r['blocks'][:24]:24s} "
              f"{r['plan'][:24]:24s} {'yes' if r['ok'] else 'NO':>3s} {r['serial_ms']:10.2f} "
              f"{r['plan_ms']:9.2f} {r['speedup']:6.2f} {r['search_s']:8.1f}", flush=True)
    print(f"\n{len(names)} kernels: {wrong} wrong or failed, {slower} plans slower than "
          "serial njit (< 0.95x; on a busy machine); * serial = the engine's serial njit "
          "(plain numba.njit does not compile it); ** serial = the plain Python function "
          "(numba compiles none)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
