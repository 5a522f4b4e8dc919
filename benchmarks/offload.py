"""Offload extraction on every example kernel: loops found, plan, speedups, GA vs exhaustive.

For each kernel in ``hetlab.offload.examples`` at a benchmark size: loops found and
parallelizable, the plan ``offload.search`` chooses (numba target), the plan's time against the
original under serial ``numba.njit`` and under ``numba.njit(parallel=True)`` left to find
parallelism itself, the function blocks (library calls) tried first with their time and
the one kept, and the GA's evaluations against the exhaustive search (run when the gene count
is small). Verification: NPBench's rule against the serial njit of the original (Python would
take minutes at these sizes).

    python benchmarks/offload.py                 # full sizes (several minutes on 2 cores)
    python benchmarks/offload.py --quick         # small sizes, a few kernels: a smoke run
    python benchmarks/offload.py --only matmul,jacobi_2d

``--suite`` runs the evaluation suite of benchmarks/offload_suite instead (loop kernels not
written for the tool, each with a hand-written numba answer key; issue 17):

    python benchmarks/offload.py --suite [--quick] [--kernels a,b] [--budget N] [--out f.json]
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time

#: benchmark size per kernel (argument of its make_args) — serial njit ~10–100 ms on 2 cores
SIZES = {
    "matmul": 300, "matvec": 3000, "axpy": 4_000_000, "dot": 4_000_000, "covariance": 500,
    "lu": 400, "trisolv": 3000, "floyd_warshall": 250, "transpose": 2500, "jacobi_1d": 2_000_000,
    "jacobi_2d": 1000, "seidel_2d": 400, "heat_3d": 100, "himeno": 96, "nbody_forces": 3000,
    "histogram": 2_000_000, "prefix_sum": 2_000_000, "running_sum": 2_000_000,
    "array_max": 4_000_000, "row_norms": 3000, "collatz_steps": 20_000, "blur_rows": 2000,
    "first_crossing": 4_000_000,
}
QUICK = ["matvec", "jacobi_2d", "prefix_sum", "collatz_steps"]


def _evals_to_optimum(plan, within: float = 0.0) -> str:
    """GA evaluations until it measured the exhaustive optimum's gene (``within=0``), or a
    gene whose fitness is within ``within`` (a fraction) of the optimum's: two plans whose
    times differ by less than this machine's run-to-run noise (~5%) cannot be told apart."""
    if plan.exhaustive is None:
        return "-"
    order = list(plan.ga.cache)  # the serial run measured before the GA, then its genes
    if within == 0.0:
        best = plan.exhaustive.best
        return str(order.index(best) + 1) if best in order else "not reached"
    bar = plan.exhaustive.fitness * (1.0 - within)
    hits = [k for k, g in enumerate(order, 1) if plan.ga.cache[g] >= bar]
    return str(hits[0]) if hits else "not reached"


def _search_cost(plan) -> dict:
    """Columns of the search's cost and of the plan among other work (issue 17, parts 5-6):
    ``among_ms``, the plan's median time when each call follows NumPy/BLAS work on fresh
    inputs (``plan_ms`` is the quiet figure), and with the BLAS held to one thread
    (threadpoolctl; NaN without it); candidates measured and pruned; measured
    candidates and seconds until the chosen one; whether the machine was busy."""
    return {"among_ms": plan.among_work_s * 1e3, "among_blas1_ms": plan.among_work_blas1_s * 1e3,
            "evals": plan.evaluations,
            "pruned": plan.pruned,
            "to_best": f"{plan.evaluations_to_best} / {plan.seconds_to_best:.3g} s"
            if plan.evaluations_to_best else "serial kept",
            "busy": plan.load.busy if plan.load is not None else "-"}


def run(names: list[str], quick: bool, budget: int, exhaustive_max: int) -> list[dict]:
    from hetlab import offload
    from hetlab.offload import GAOptions, MeasureOptions
    from hetlab.offload.examples import EXAMPLES

    rows = []
    for name in names:
        ex = EXAMPLES[name]
        report = offload.analyze(ex.fn)
        n_par = len(report.parallelizable)
        size = max(SIZES[name] // 20, 8) if quick else SIZES[name]
        row = {"kernel": name, "size": size, "loops": len(report.loops), "parallel": n_par}
        if n_par == 0:
            row.update(plan="(none: nothing parallelizable)", verified="-")
            rows.append(row)
            continue
        t0 = time.perf_counter()
        plan = offload.search(ex.fn, ex.make_args(size), budget=budget, reference="njit",
                              progress=False,
                              ga=GAOptions(population=6, exhaustive=n_par <= exhaustive_max),
                              measure=MeasureOptions(repeats=2 if quick else 5))
        row.update(
            plan="+".join([*plan.blocks, *plan.loops, *plan.options]) or "(serial)",
            blocks=", ".join(f"{'+'.join(bs)} {m.time_s * 1e3:.3g} ms"
                             for bs, m in plan.block_trials.items()) or "-",
            serial_ms=plan.serial_s * 1e3,
            auto_ms=plan.auto_s * 1e3, plan_ms=plan.time_s * 1e3,
            vs_serial=plan.speedup, vs_auto=plan.auto_s / plan.time_s,
            ga_evals=plan.ga.evaluations, ga_best=plan.ga.fitness,
            exhaustive=2 ** n_par if plan.exhaustive else "-",
            evals_to_opt=_evals_to_optimum(plan),
            evals_to_5pct=_evals_to_optimum(plan, within=0.05), threads=plan.thread_choice or "-",
            verified=plan.verified, wrong=sum(m.status == "wrong"
                                               for m in plan.measurements.values()),
            search_s=time.perf_counter() - t0, **_search_cost(plan))
        rows.append(row)
        print(f"  {name}: {row['plan']} {row['vs_serial']:.2f}× serial njit", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, a few kernels")
    p.add_argument("--only", default=None, help="comma-separated kernel names")
    p.add_argument("--budget", type=int, default=None,
                   help="GA budget per kernel (default 64; --suite: 32, quick 4)")
    p.add_argument("--exhaustive-max", type=int, default=5,
                   help="run the exhaustive search up to this many genes")
    p.add_argument("--suite", action="store_true",
                   help="run the evaluation suite (benchmarks/offload_suite) instead")
    p.add_argument("--kernels", default=None, help="--suite: comma-separated suite kernels")
    p.add_argument("--out", default=None, help="--suite: write rows to this .json or .csv")
    args = p.parse_args(argv)
    if args.suite:
        return suite_main(args, p)
    import numba
    import pandas as pd

    from hetlab.offload.examples import EXAMPLES

    names = args.only.split(",") if args.only else (QUICK if args.quick else list(EXAMPLES))
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        p.error(f"unknown kernels {unknown}; choose among {', '.join(EXAMPLES)}")
    print(f"offload benchmark: numba {numba.__version__}, {numba.get_num_threads()} threads, "
          f"{'quick' if args.quick else 'full'} sizes; times are medians of measured runs")
    rows = run(names, args.quick, args.budget or 64, args.exhaustive_max)
    df = pd.DataFrame(rows).set_index("kernel")
    with pd.option_context("display.width", 220, "display.max_columns", 30,
                           "display.float_format", "{:.3g}".format):
        print(df.to_string(na_rep="-"))
    par = df[df["parallel"] > 0]
    if len(par):
        geo = math.exp(sum(math.log(v) for v in par["vs_serial"]) / len(par))
        print(f"geometric mean plan speedup over serial njit (kernels with parallel loops): "
              f"{geo:.2f}×")
    bad = [k for k, v in df["verified"].items() if v is False]
    if bad:
        print(f"WRONG RESULTS from the chosen plan: {bad}")
        return 1
    return 0


_SUITE_COLUMNS = ["family", "size", "verdicts", "blocks_found", "plan", "threads", "search_x",
                  "serial_ms", "plan_ms", "hand_ms", "plan_vs_serial", "plan_vs_hand",
                  "search_s", "wrong", "load", "status"]


def suite_main(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    """``--suite``: search every suite kernel, print the table, the geometric means, targets."""
    import pandas as pd

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import offload_suite.run as suite_run
    from offload_suite import SUITE

    names = args.kernels.split(",") if args.kernels else \
        (list(suite_run.QUICK) if args.quick else list(SUITE))
    unknown = [n for n in names if n not in SUITE]
    if unknown:
        p.error(f"unknown suite kernels {unknown}; choose among {', '.join(SUITE)}")
    budget = args.budget or (4 if args.quick else 32)
    meta = suite_run.machine()
    print(f"offload suite: {len(names)} kernels, {'quick' if args.quick else 'full'} sizes, "
          f"budget {budget}; CPU {meta['cpu']} ({meta['cores']} cores), numba {meta['numba']}, "
          f"{meta['threads']} threads, threading layer {meta['threading_layer']}, "
          f"load {meta['load_before']}", flush=True)

    done: list[dict] = []

    def progress(row: dict) -> None:
        done.append(row)
        if args.out:  # rewritten after every kernel: a stopped run keeps what it measured
            suite_run.write(args.out, done, suite_run.summarize(done), meta)
        fig = (f"{row['plan_vs_serial']:.2f}× serial, {row['plan_vs_hand']:.2f}× hand"
               if "plan_vs_hand" in row else row["status"])
        print(f"  {row['kernel']}: {row.get('plan', '-')} {fig}", file=sys.stderr, flush=True)

    rows = suite_run.run_suite([SUITE[n] for n in names], quick=args.quick, budget=budget,
                     progress=progress)
    summary = suite_run.summarize(rows)
    df = pd.DataFrame(rows).set_index("kernel")
    cols = [c for c in _SUITE_COLUMNS if c in df.columns]
    with pd.option_context("display.width", 250, "display.max_columns", 30,
                           "display.max_colwidth", 40, "display.float_format", "{:.3g}".format):
        print(df[cols].to_string(na_rep="-"))
    s = summary
    print(f"kernels with a parallel loop: {s['with_parallel_loop']} "
          f"({s['timed_with_parallel']} timed)")
    print(f"geometric mean over them: plan vs hand-written {s['geomean_plan_vs_hand']:.2f}× "
          f"(target ≥ {suite_run.TARGET_GEOMEAN}×), "
          f"plan vs serial njit {s['geomean_plan_vs_serial']:.2f}×, "
          f"hand-written vs serial njit {s['geomean_hand_vs_serial']:.2f}×")
    below = s["below_target_each"]
    print(f"below {suite_run.TARGET_EACH}× the hand-written version: {len(below)} {below}")
    print(f"plans slower than serial njit (< 0.95×): {len(s['slower_than_serial'])} "
          f"{s['slower_than_serial']}")
    print(f"wrong results: {len(s['wrong'])} {s['wrong']}; engine failures: "
          f"{len(s['failed'])} {s['failed']}")
    print(f"kernels with a recognized function block: {s['blocks_recognized']}; median search "
          f"{s['median_search_s']:.1f} s")
    print(f"CPU: {meta['cpu']}; numba threading layer: {meta['threading_layer']}")
    if args.out:
        suite_run.write(args.out, rows, summary, meta)
        print(f"rows written to {args.out}")
    return 1 if s["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
