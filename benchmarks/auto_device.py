"""How good is ``device="auto"``? Its picks against the oracle (the measured best device).

Every kernel (``--quick``: one per family) over sizes from 16 items up (×2 steps, between the
calibration's ×4 grid, on another seed) until the reference's call passes ``--limit`` seconds;
each case runs on every measured device here (numpy, numba; cupy with a GPU) through
``hetlab.bench.measure_unit``, the devices interleaved (``--rounds`` rounds of ``--repeats``
calls per device, 3 warm-up calls first, the device order rotated each round, so a burst of
load on a shared machine hits every device); ``--stat`` min by default (preemption only adds
time) or median; the chooser decides from the same case's validated arguments with the
models of its variant (host data: home is numpy). Then a user's program: ``--calls`` (16)
real ``device="auto"`` calls of the case in a fresh history (``hl.auto.forget_history``):
the first call runs the model's pick; in an ambiguous case (another device predicted within
the margin) the next calls explore, and auto then picks by measured times
(``hetlab.auto.history``). Reported for both the **first call** (the model alone) and the
**steady state** (the device auto picks after the ``--calls`` calls): fraction of cases where
auto picked the best device, geometric-mean and worst-case regret (time of auto's pick /
best time, both the oracle's measured times); apart, the **exploration's cost**: per case
the calls' time beyond as many calls of the best device, in best-device calls (``extra``),
and the number of exploring calls (``expl``) — never hidden in the regret. Also: every case
over 1.25× with the reason and each device's predicted/measured time, the model's error on
all these held-out cases, and the noise: the spread max/min of each device's per-round
minima. Goal: >= 90% best picks, worst regret <= 1.25×.

    python benchmarks/auto_device.py --quick      # 4 kernels, about a minute on 2 cores
    python benchmarks/auto_device.py              # every kernel
    python benchmarks/auto_device.py --refresh    # calibrate again first
    python benchmarks/auto_device.py --quick --threading-layer default   # numba's omp

numba runs on its ``workqueue`` threading layer and the numpy reference on one BLAS thread by
default here (set through ``hl.auto.configure_threads``, which keeps the user's own
environment settings): on a shared 2-core machine OpenMP's and OpenBLAS's workers woke a
scheduler slice (~10 ms) late on whole runs of calls, so a case's fastest call could be 10 ms
one minute and 0.3 ms the next, which no calibration can predict (runs and their outputs:
docs/auto.md and benchmarks/results/auto_device_*.txt).

Calibration comes from the cache (hl.auto.cache_path()); the first run calibrates.
"""

from __future__ import annotations

import argparse
import math
import time

QUICK = ("fps", "spmv", "gemv_q", "sparse_conv3d")
EVAL_SEED = 1


def cases(kernel: str, limit: float, max_size: int) -> list[int]:
    from hetlab.bench import measure_unit

    sizes, size = [], 32
    while size <= max_size:
        u = measure_unit(kernel, "numpy", size, seed=EVAL_SEED, repeats=1)
        if u.status != "ok":
            break
        sizes.append(size)
        if min(u.times_s) > limit:
            break
        size *= 2
    return sizes


def program(spec, raw: dict, args: dict, calls: int) -> tuple[list[str], list[str], object]:
    """A user's program: ``calls`` real ``device="auto"`` calls of one case in a fresh
    history (:func:`hetlab.auto.forget_history`), as ``hl.<kernel>(..., device="auto")``
    runs them with the case's user arguments ``raw`` (``args``: validated); returns each
    call's device, what decided it, and the decision auto would take on the next call (its
    steady state)."""
    import hetlab as hl
    from hetlab.auto.chooser import decide_call
    from hetlab.core.dispatch import run

    hl.auto.forget_history()
    used, by = [], []
    for _ in range(calls):
        run(spec, "auto", False, **raw)
        d = hl.auto.last_choice()
        used.append(d.device)
        by.append(d.by)
    return used, by, decide_call(spec, args, "host", commit=False)[1]


def evaluate(kernel: str, sizes: list[int], devices: list[str], repeats: int,
             stat: str = "min", rounds: int = 3, calls: int = 16) -> list[dict]:
    """Each size on every device, the devices interleaved: ``rounds`` rounds of ``repeats``
    calls per device, the device order rotated each round (a burst of load hits them all);
    a device's time is the min (or median) over all its calls, its noise the spread
    max/min of its per-round minima (how far a min of ``repeats`` calls moves). Then
    :func:`program` runs ``calls`` auto calls of the case: the first call's device (the
    model's pick), the steady state's (after history), and the cost of every call spent off
    the best device, in the oracle's times."""
    import numpy as np

    from hetlab.auto.calibrate import fits_for_call
    from hetlab.auto.chooser import predict
    from hetlab.bench import case_args, measure_unit
    from hetlab.core.registry import get_kernel

    spec = get_kernel(kernel)
    rows = []
    for size in sizes:
        per: dict[str, list[float]] = {d: [] for d in devices}
        mins: dict[str, list[float]] = {d: [] for d in devices}
        for rnd in range(rounds):
            shift = rnd % len(devices)
            for d in devices[shift:] + devices[:shift]:
                if rnd and not per[d]:
                    continue
                u = measure_unit(kernel, d, size, seed=EVAL_SEED, repeats=repeats,
                                 warmup=3 if rnd == 0 else 1)
                if u.status == "ok" and u.times_s:
                    per[d] += list(u.times_s)
                    mins[d].append(float(np.min(u.times_s)))
        times = {d: float(np.min(c) if stat == "min" else np.median(c))
                 for d, c in per.items() if c}
        spread = {d: max(m) / min(m) for d, m in mins.items() if m}
        if not times:
            continue
        args = case_args(kernel, size, EVAL_SEED)
        preds = predict(spec, args, "host", fits_for_call(spec, args))
        raw = spec.make_case(size, np.random.default_rng([EVAL_SEED, size]))  # as case_args
        used, by, steady = program(spec, raw, args, calls)
        # the model's error on this held-out case: predicted / measured, per device
        error = {p.device: p.total_s / times[p.device] for p in preds
                 if p.device in times and math.isfinite(p.total_s)}
        best = min(times, key=times.get)
        rows.append({"kernel": kernel, "size": size, "best": best, "first": used[0],
                     "pick": steady.device, "by": steady.by,
                     "regret1": times.get(used[0], math.inf) / times[best],
                     "regret": times.get(steady.device, math.inf) / times[best],
                     "explored": sum(b == "exploring" for b in by),
                     "off": sum(u != steady.device for u in used),
                     # the calls' time beyond `calls` calls on the best device, in best calls
                     "extra": sum(times.get(u, math.inf) for u in used) / times[best] - calls,
                     "times": times, "spread": spread, "error": error,
                     "reason": steady.reason})
    return rows


def summary(rows: list[dict], col: str, pick: str) -> str:
    hits = sum(r[pick] == r["best"] or r[col] <= 1.0 for r in rows)
    geo = math.exp(sum(math.log(r[col]) for r in rows) / len(rows))
    worst = max(rows, key=lambda r: r[col])
    return (f"cases {len(rows)}: best picks {hits / len(rows):.0%} (goal >= 90%), regret "
            f"geomean {geo:.3f}×, worst {worst[col]:.3f}× ({worst['kernel']} n="
            f"{worst['size']}: auto {worst[pick]}, best {worst['best']}; goal <= 1.25×)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one kernel per family, short cases")
    ap.add_argument("--kernels", default="", help="comma-separated kernel names")
    ap.add_argument("--repeats", type=int, default=3, help="calls per device and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds over the devices per case")
    ap.add_argument("--stat", choices=("min", "median"), default="min",
                    help="each device's time per case: the fastest repeat or the median")
    ap.add_argument("--limit", type=float, default=None,
                    help="largest case: the reference's call time (s); default 0.2 (quick 0.03)")
    ap.add_argument("--max-size", type=int, default=2**20)
    ap.add_argument("--calls", type=int, default=16,
                    help="device='auto' calls of each case in a fresh history (a user's "
                         "program): the first is the model's pick, the next decide the steady "
                         "state; every call off the best device is costed (default 16)")
    ap.add_argument("--refresh", action="store_true", help="calibrate again first")
    ap.add_argument("--blas-threads", default="1",
                    help="BLAS threads of the numpy reference (default 1, as the numpy device "
                         "declares: OpenBLAS workers also woke ~10 ms late on a shared "
                         "machine); 'default' for the library's own choice")
    ap.add_argument("--threading-layer", default="workqueue",
                    help="numba threading layer (default workqueue: no late omp wake-ups on a "
                         "shared machine; 'default' for numba's own choice); the calibration "
                         "cache is keyed by it")
    args = ap.parse_args()
    if args.calls < 1:
        ap.error(f"--calls must be an int >= 1; got {args.calls}")
    import hetlab as hl

    # through the library's opt-in (it keeps any setting of the user's environment, and says so)
    threads = hl.auto.configure_threads(
        numba_layer=None if args.threading_layer == "default" else args.threading_layer,
        blas_threads=None if args.blas_threads == "default" else int(args.blas_threads))
    print(f"threads: {threads or 'the libraries own defaults'}")
    from hetlab.core.registry import backend_names, get_backend, kernel_names, supported_backends

    kernels = [k for k in args.kernels.split(",") if k] or \
        (list(QUICK) if args.quick else kernel_names())
    limit = args.limit if args.limit is not None else (0.03 if args.quick else 0.2)
    t0 = time.perf_counter()
    hl.auto.calibrate(kernels, refresh=args.refresh, max_size=max(args.max_size, 16))
    print(f"calibration: {time.perf_counter() - t0:.1f} s (cache {hl.auto.cache_path()})")
    rows = []
    for k in kernels:
        devices = [d for d in backend_names() if d in supported_backends(k)
                   and get_backend(d).is_available() and get_backend(d).timing_source ==
                   "measured"]
        rows += evaluate(k, cases(k, limit, args.max_size), devices, args.repeats, args.stat,
                         args.rounds, args.calls)
    print(f"\n{'kernel':16s} {'size':>8s} {'best':>6s} {'first':>6s} {'auto':>6s} {'by':>9s} "
          f"{'regret1':>7s} {'regret':>7s} {'expl':>4s} {'extra':>6s}  {args.stat} times (s)")
    for r in rows:
        ts = "  ".join(f"{d} {t:.3g}" for d, t in r["times"].items())
        print(f"{r['kernel']:16s} {r['size']:8d} {r['best']:>6s} {r['first']:>6s} "
              f"{r['pick']:>6s} {r['by']:>9s} {r['regret1']:7.3f} {r['regret']:7.3f} "
              f"{r['explored']:4d} {r['extra']:6.2f}  {ts}")
    if not rows:
        print("no case ran")
        return
    print(f"\nfirst call (the model alone): {summary(rows, 'regret1', 'first')}")
    print(f"steady state (the pick after {args.calls} auto calls, history included): "
          f"{summary(rows, 'regret', 'pick')}")
    explored = [r for r in rows if r["explored"]]
    worst_x = max(rows, key=lambda r: r["extra"])
    print(f"exploration: {len(explored)} of {len(rows)} cases ambiguous; their {args.calls} "
          f"calls spent {sum(r['off'] for r in rows)} calls off the steady pick in all; the "
          f"cost of all {args.calls} calls beyond {args.calls} calls of the best device: "
          f"total {sum(r['extra'] for r in rows):.2f} best-device calls, worst "
          f"{worst_x['extra']:.2f} ({worst_x['kernel']} n={worst_x['size']}); "
          f"history decided {sum(r['by'] == 'history' for r in rows)} steady picks")
    worst = max(rows, key=lambda r: r["regret"])
    spreads = sorted(v for r in rows for v in r["spread"].values())
    print(f"noise: max/min of a device's per-round minima ({args.rounds} rounds of "
          f"{args.repeats} calls), median {spreads[len(spreads) // 2]:.2f}×, worst "
          f"{spreads[-1]:.2f}×; the worst case's: "
          + ", ".join(f"{d} {v:.2f}×" for d, v in worst["spread"].items()))
    errs = sorted(abs(math.log(v)) for r in rows for v in r["error"].values())
    if errs:
        print(f"model error on these held-out cases (predicted/measured, per device): median "
              f"{math.exp(errs[len(errs) // 2]):.2f}×, worst {math.exp(errs[-1]):.2f}×")
    for r in rows:
        if max(r["regret1"], r["regret"]) > 1.25:
            print(f"  over 1.25×: {r['kernel']} n={r['size']} first call {r['first']} "
                  f"{r['regret1']:.3f}, steady {r['pick']} {r['regret']:.3f} "
                  f"({r['by']}: {r['reason']}); predicted/measured "
                  + ", ".join(f"{d} {v:.2f}" for d, v in r["error"].items()))
    try:
        import numba

        print(f"numba threading layer: {numba.threading_layer()}")
    except (ImportError, ValueError):  # no numba, or no parallel region ran
        pass
    print("times measured on this machine now; a shared machine's load moves them — the lead "
          "measures final figures in a quiet window")


if __name__ == "__main__":
    main()
