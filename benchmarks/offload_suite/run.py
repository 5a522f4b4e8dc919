"""Run ``hetlab.offload.search`` on the suite: verdicts, blocks, plan vs serial njit and vs the
hand-written answer key, search wall time, wrong results; the issue-17 targets at the end.

Used by ``benchmarks/offload.py --suite``. Figures are medians of interleaved rounds
(``hetlab.offload.runtime.measure.confirm_times``: serial njit, plan and hand-written version
measured back to back each round, ratios to the serial of the same round), so load that drifts
between rounds cancels out; they are still only as quiet as the machine was.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

from ._spec import SuiteKernel

__all__ = ["QUICK", "size_of", "run_suite", "summarize", "machine", "write"]

#: the kernels of ``--suite --quick`` (a smoke run): one product, one matvec, a stencil, a scan
QUICK = ("gemm_alpha_inside", "normal_matvec", "smooth_2d", "prefix_scan")
#: issue 17, part 4: per kernel with a parallel loop, and in geometric mean, plan vs hand-written
TARGET_EACH, TARGET_GEOMEAN = 0.7, 1.3
#: a plan below this × serial njit counts as slower than serial (beyond ~5% noise)
SLOWER = 0.95


def size_of(k: SuiteKernel, quick: bool) -> int:
    """The size a run uses: ``k.full``, or for a quick run a small one (timings meaningless)."""
    return max(k.tiny * 3, k.full // 8) if quick else k.full


def machine() -> dict[str, Any]:
    """CPU model, cores, numba version, threads and threading layer (after a parallel call)."""
    import numba
    import numpy as np

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass

    @numba.njit(parallel=True)
    def _touch(x):
        s = 0.0
        for i in numba.prange(x.shape[0]):
            s += x[i]
        return s

    _touch(np.ones(64))
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "unknown"
    return {"cpu": model, "cores": os.cpu_count(), "numba": numba.__version__,
            "threads": numba.get_num_threads(), "threading_layer": layer,
            "load_before": round(os.getloadavg()[0], 2)}


def _verdicts(report: Any) -> str:
    counts: dict[str, int] = {}
    for lp in report.loops:
        counts[lp.verdict] = counts.get(lp.verdict, 0) + 1
    order = ("parallel", "reduction", "sequential", "unsupported")
    return " ".join(f"{counts[v]}{v[0]}" for v in order if counts.get(v))


def _check_against_python(k: SuiteKernel, plan_fn: Any, seed: int = 7) -> bool:
    """The plan's compiled function against the plain function run as Python (small size)."""
    from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

    args = k.make_args(k.tiny * 3, seed)
    w_ref, w_plan = copy_args(args), copy_args(args)
    ok, _ = verify(outputs_of(plan_fn(*w_plan), w_plan), outputs_of(k.fn(*w_ref), w_ref))
    return ok


def _one(k: SuiteKernel, quick: bool, budget: int) -> dict[str, Any]:
    import numba

    from hetlab import offload
    from hetlab.offload import GAOptions, MeasureOptions
    from hetlab.offload.runtime.measure import confirm_times, copy_args, measure, outputs_of

    size = size_of(k, quick)
    row: dict[str, Any] = {"kernel": k.name, "family": k.family, "size": size,
                           "has_parallel": k.has_parallel, "status": "ok"}
    try:
        report = offload.analyze(k.fn)
    except Exception as exc:  # an engine failure is a result of the suite, recorded
        row["status"] = f"analyze failed: {type(exc).__name__}: {exc}"
        return row
    row["verdicts"] = _verdicts(report)
    row["parallel_loops"] = " ".join(lp.id for lp in report.parallelizable) or "-"
    row["blocks_found"] = ", ".join(b.pattern for b in report.blocks) or "-"
    args = k.make_args(size, 0)
    repeats = 2 if quick else 5
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        plan = offload.search(k.fn, args, targets=("numba",), budget=budget, reference="njit",
                              progress=False, ga=GAOptions(population=6),
                              measure=MeasureOptions(repeats=repeats))
    except Exception as exc:
        row["status"] = "search failed: " + traceback.format_exception_only(
            type(exc), exc)[-1].strip()
        row["search_s"] = time.perf_counter() - t0
        return row
    row["search_s"] = time.perf_counter() - t0
    row["load"] = round(max(load0, os.getloadavg()[0]), 2)
    fixed = any(ln.startswith("# transform:") and "fastmath" not in ln
                for ln in plan.source().splitlines())  # the fixed loop passes (interchange, …)
    row["plan"] = ("+".join([*plan.blocks, *plan.loops, *plan.options]) or "(serial)") + \
        (" +passes" if fixed else "")
    row["blocks_used"] = ", ".join(report.block(b).pattern for b in plan.blocks) or "-"
    row["threads"] = plan.thread_choice or "-"
    row["search_x"] = plan.speedup
    serial_fn, plan_fn = numba.njit(k.fn), plan.compile()
    work = copy_args(args)
    expected = outputs_of(serial_fn(*work), work)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m_plan = measure(plan_fn, args, expected, repeats=1)
        m_hand = measure(k.hand, args, expected, repeats=1)
    try:
        small_ok = _check_against_python(k, plan_fn)
    except Exception as exc:
        small_ok = False
        row["status"] = f"plan failed at the check size: {type(exc).__name__}: {exc}"
    row["wrong"] = int(not (plan.verified and m_plan.verified and small_ok))
    row["hand_ok"] = m_hand.verified
    if not (m_plan.verified and m_hand.verified):
        row["status"] = (f"plan {m_plan.status}, hand {m_hand.status}"
                         if row["status"] == "ok" else row["status"])
        return row
    t = confirm_times({"serial": (serial_fn, None), "plan": (plan_fn, None),
                       "hand": (k.hand, None)}, args, repeats)
    row.update(serial_ms=t["serial"] * 1e3, plan_ms=t["plan"] * 1e3, hand_ms=t["hand"] * 1e3,
               plan_vs_serial=t["serial"] / t["plan"], plan_vs_hand=t["hand"] / t["plan"],
               hand_vs_serial=t["serial"] / t["hand"])
    return row


def run_suite(kernels: Sequence[SuiteKernel], quick: bool = False, budget: int = 32,
              progress: Any = None) -> list[dict[str, Any]]:
    """One row per kernel (see the module docstring); ``progress(row)`` after each kernel."""
    rows = []
    for k in kernels:
        row = _one(k, quick, budget)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Geometric means over the kernels with a parallel loop, counts against the targets."""
    par = [r for r in rows if r["has_parallel"]]
    timed = [r for r in par if "plan_vs_hand" in r]
    vs_hand = [r["plan_vs_hand"] for r in timed]
    timed_all = [r for r in rows if "plan_vs_serial" in r]
    return {
        "kernels": len(rows), "with_parallel_loop": len(par), "timed_with_parallel": len(timed),
        "geomean_plan_vs_hand": _geomean(vs_hand),
        "geomean_plan_vs_serial": _geomean([r["plan_vs_serial"] for r in timed]),
        "geomean_hand_vs_serial": _geomean([r["hand_vs_serial"] for r in timed]),
        "below_target_each": sorted(r["kernel"] for r in timed
                                    if r["plan_vs_hand"] < TARGET_EACH),
        "slower_than_serial": sorted(r["kernel"] for r in timed_all
                                     if r["plan_vs_serial"] < SLOWER),
        "wrong": sorted(r["kernel"] for r in rows if r.get("wrong")),
        "failed": sorted(r["kernel"] for r in rows if r["status"] != "ok"),
        "blocks_recognized": sum(r.get("blocks_found", "-") != "-" for r in rows),
        "median_search_s": sorted(r["search_s"] for r in rows if "search_s" in r)[
            len([r for r in rows if "search_s" in r]) // 2] if any("search_s" in r for r in rows)
        else math.nan,
    }


def write(path: str, rows: Sequence[dict[str, Any]], summary: dict[str, Any],
          meta: dict[str, Any]) -> None:
    """Rows to ``path``: JSON (rows, summary, machine) when it ends in .json, else CSV (rows)."""
    if path.endswith(".json"):
        with open(path, "w") as f:
            json.dump({"machine": meta, "summary": summary, "rows": list(rows)}, f, indent=1,
                      default=str)
        return
    import pandas as pd

    pd.DataFrame(list(rows)).to_csv(path, index=False)
