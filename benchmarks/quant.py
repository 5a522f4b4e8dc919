"""W4 g128 GEMV: hetlab numba ``gemv_q`` vs numpy fp32 ``W @ x`` vs torch's int4 CPU kernel,
and as a fraction of the STREAM-triad bandwidth measured in the same run; plus hetlab's W4A8
``gemv_w4a8`` (int8 activations, integer group dots) on the same weights.

Run::

    PYTHONPATH=$PWD python benchmarks/quant.py            # 4096×4096 and 4096×11008
    PYTHONPATH=$PWD python benchmarks/quant.py --quick    # small shapes, a few seconds
    PYTHONPATH=$PWD python benchmarks/quant.py --gemv-only  # the W4 GEMV lines and ratios only

torch (``pip install torch==2.13.0``, CPU build) is optional: without it its column is
skipped. Every result is checked against the numpy reference. Times are medians of ``--repeats``
calls (best in brackets): each library's calls run back to back in blocks (its worker
threads stay awake between calls, as in a decode loop), the libraries' blocks in turn so
that they share the same background load; this machine is shared, so compare the ratios
printed in one run, not absolute times across runs (``--threads 1`` is the least disturbed;
``--passive`` makes every call wake sleeping workers, as the figures before 2026-11-30 did).
The flat-GEMM lines time the flat GEMM (``gemm_q``, 16 activation rows; ``--gemm-rows 16,64``
for more lines) the same way.

The numba W4 GEMV runs on every path this CPU has (``w4_paths()``, the default first: VNNI
where the CPU has it — AMX tiles measured no faster for one vector — then AVX2 integer dots,
the default on CPUs with AVX2 but no AVX512-VNNI, then float32 vectors), side by side in one
run. Every result line ends with ``| CPU model | instruction sets found | path``. The flat
GEMM lines compare the GEMM's paths (AMX first where present); then W3 and W8 GEMV on their
paths (AVX2 integer dots, float32) and a mixed-bit plan (``allocate_bits``) run by
``quant.FusedPlan`` in one call, against one ``gemv_q`` call per unit.

Targets (issue 18), judged on the CPU's default path: on AVX2-only CPUs the W4 GEMV at ≥ 60%
of the triad bandwidth and ≥ 2× torch's int4 kernel; on VNNI/AMX CPUs at ≥ 70% of the floor.
A CPU with AVX-512 runs the AVX2 code too, but that does not check the AVX2-only target
(other cores, other memory system): the benchmark says so instead of a verdict.
"Floor" is the time to read the packed codes once on the same threads with no arithmetic
(``read_words``): no W4 GEMV can beat it, so a target below it is beyond the machine. The
floor is a direct numba call, so the default path is judged twice: through ``hl.gemv_q``
(whose dispatch, validation included, took 60–90 µs right after a 4096² W4 GEMV had streamed
the caches, against 15 µs warm) and through ``quant.GemvPlan`` (the matrix checked once, each
call checks ``x`` and makes one numba call, as the floor does).

"Weight stream" bandwidth = bytes of the stored weights (codes + scales + zero points for
the quantized kernels, the fp32 matrix for numpy) / median time.
"""

from __future__ import annotations

import os
import sys

# Idle OpenMP threads (numba's "omp" layer, torch) spin for a while after each parallel
# region (libgomp's default), so back-to-back calls of one library find its workers awake,
# as in a decode loop; but spinning workers of one library steal the 2 cores from the next
# library's call. The default here: each library's calls run back to back in blocks, after
# a pause that lets the other libraries' workers go to sleep (SETTLE_S). ``--passive`` sets
# OMP_WAIT_POLICY=PASSIVE instead (workers sleep at once: every call pays a wake-up, ~30–100
# µs on this VM), the condition of the figures before 2026-11-30.
if "--passive" in sys.argv:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant import reference
from hetlab.kernels.quant.spec import TOLERANCE

TARGET_VS_TORCH = 2.0
#: pause before each block of calls (s): the other libraries' spinning workers go to sleep
SETTLE_S = 0.2
TARGET_BW_FRACTION = 0.60
#: VNNI/AMX CPUs: the default W4 GEMV path's time as a fraction of the floor's
TARGET_FLOOR_FRACTION = 0.70
#: the features (llvmlite names) the benchmark reports
ISA_SHOWN = ("avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avxvnni", "amx-int8")


def cpu_tag() -> tuple[str, str]:
    """(CPU model, the instruction sets found that the quant paths use, '+'-joined)."""
    from hetlab.kernels.quant._simd import host_features
    from hetlab.machine import cpu_model

    feats = host_features()
    return cpu_model(), "+".join(f for f in ISA_SHOWN if f in feats) or "none of " + "/".join(
        ISA_SHOWN)


def tag(path: str) -> str:
    """The suffix of every result line: ``| CPU | ISA | path``."""
    model, isa = cpu_tag()
    return f"| {model} | {isa} | path {path}"


def timeit(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(median, best) seconds of ``repeats`` calls after two warm-up calls."""
    return time_alternating({"f": fn}, repeats)["f"]


def time_alternating(fns: dict[str, Callable[[], Any]], repeats: int, rounds: int = 5
                     ) -> dict[str, tuple[float, float]]:
    """(median, best) seconds per function over ``repeats`` calls, taken in ``rounds``
    blocks per function in turn, so that every function sees the same background load
    (this machine is shared). Each block starts with one untimed call: libraries whose
    idle threads spin (OpenBLAS, OpenMP) otherwise slow the first call of the next one."""
    ts: dict[str, list[float]] = {k: [] for k in fns}
    per = max(1, repeats // rounds)
    for _ in range(rounds):
        for k, fn in fns.items():
            time.sleep(SETTLE_S)
            fn()
            for _ in range(per):
                t0 = time.perf_counter()
                fn()
                ts[k].append(time.perf_counter() - t0)
    return {k: (statistics.median(v), min(v)) for k, v in ts.items()}


def triad_gbps(n: int, repeats: int) -> float:
    """STREAM triad a = b + 3c with a numba prange loop on all numba threads, GB/s (best)."""
    from hetlab.backends._triad import triad

    b, c, a = np.ones(n), np.ones(n), np.empty(n)
    _, best = timeit(lambda: triad(a, b, c, 3.0), repeats)
    return 24 * n / best / 1e9


def torch_int4(qw: quant.QuantizedMatrix, threads: int) -> tuple[Callable[..., Any], int] | None:
    """torch's int4 CPU GEMV on the same codes/scales/zeros, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    codes = torch.from_numpy(qw.codes()[:, : qw.in_features].astype(np.int32))
    packed = torch._convert_weight_to_int4pack_for_cpu(codes, 1)
    s = qw.scales.astype(np.float32)
    z = qw.zeros.astype(np.float32)
    # torch dequantizes (q - 8) * scale + zero; ours is (q - z) * s, so zero = (8 - z) * s
    sz = np.ascontiguousarray(np.stack([s.T, ((8 - z) * s).T], axis=-1))
    sz_t = torch.from_numpy(sz).to(torch.bfloat16)

    def run(x: np.ndarray) -> np.ndarray:  # x (in,) or (m, in)
        xb = torch.from_numpy(np.atleast_2d(x)).to(torch.bfloat16)
        return torch._weight_int4pack_mm_for_cpu(xb, packed, qw.group_size, sz_t)

    return run, int(packed.numel() * packed.element_size() + sz_t.numel() * 2)


def _on_path(path: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` run with the numba W4 kernels forced onto ``path`` (see ``use_w4_path``)."""
    from hetlab.kernels.quant import numba as qn

    def run() -> Any:
        qn.use_w4_path(path)
        try:
            return fn()
        finally:
            qn.use_w4_path(None)

    return run


def bench_shape(out: int, n_in: int, repeats: int, threads: int, bw: float) -> list[dict]:
    from hetlab.kernels.quant import numba as qn
    from hetlab.kernels.quant._numba_w4 import read_words

    rng = np.random.default_rng([out, n_in])
    w = rng.normal(0.0, 0.02, (out, n_in)).astype(np.float32)
    x = rng.standard_normal(n_in).astype(np.float32)
    qw = quant.quantize(w, bits=4, group_size=128)
    ref = reference.gemv_q(qw, x)
    err = hl.gemv_q.spec.error
    rows = []

    paths = qn.w4_paths()
    fns: dict[str, Callable[[], Any]] = {}
    for path in paths:  # every path of this CPU, the default first
        fns[path] = _on_path(path, lambda: hl.gemv_q(qw, x, device="numba"))
        rows.append(dict(kernel=f"hetlab numba gemv_q W4 g128 [{path}]", bytes=qw.nbytes,
                         err=err(fns[path](), ref), path=path))
    plan = quant.GemvPlan(qw)  # the default path, prepared once (a decode loop's call)
    fns["plan"] = lambda: plan(x)
    rows.append(dict(kernel=f"hetlab quant.GemvPlan W4 g128 [{paths[0]}]", bytes=qw.nbytes,
                     err=err(fns["plan"](), ref), shown_path=paths[0]))
    fns["w4a8"] = lambda: hl.gemv_w4a8(qw, x, device="numba")
    y8 = fns["w4a8"]()
    # its error column is against the A16 reference (int8 activations); its own check is
    # against the W4A8 reference (int8 activations, exact integer dots)
    p8 = {"amx": "vnni", "float32": "int loop"}.get(paths[0], paths[0])
    rows.append(dict(kernel=f"hetlab numba gemv_w4a8 W4A8 g128 [{p8}]", bytes=qw.nbytes,
                     err=err(y8, ref), own_err=err(y8, reference.gemv_w4a8(qw, x)),
                     shown_path=p8))
    fns["numpy"] = lambda: w @ x
    rows.append(dict(kernel="numpy fp32 W @ x", bytes=w.nbytes, err=err(w @ x, ref)))
    t = torch_int4(qw, threads)
    if t is not None:
        fns["torch"] = lambda: t[0](x)
        rows.append(dict(kernel="torch _weight_int4pack_mm_for_cpu", bytes=t[1],
                         err=err(t[0](x).float().numpy()[0], ref)))
    qflat = qw.qweight.reshape(-1)
    fns["floor"] = lambda: read_words(qflat, qw.qweight.shape[1], out, threads)
    rows.append(dict(kernel="read the W4 codes once (floor)", bytes=qw.qweight.nbytes,
                     err=float("nan")))
    times = time_alternating(fns, repeats)
    for r, key in zip(rows, fns, strict=True):
        r["med"], r["best"] = times[key]
        r["key"] = key
    for r in rows:
        r.update(shape=f"{out}×{n_in}", gbps=r["bytes"] / r["med"] / 1e9)
        r["bw_frac"] = r["gbps"] / bw
    return rows


def bench_gemm(out: int, n_in: int, m: int, repeats: int, threads: int) -> dict[str, float]:
    """Flat GEMM, ``m`` activation rows: median seconds of hetlab ``gemm_q`` on each of its
    paths (keys ``hetlab [path]``, the default first), numpy fp32 ``X @ Wᵀ`` and torch's int4
    kernel (if installed); every hetlab path is checked against the reference first."""
    from hetlab.kernels.quant import numba as qn

    rng = np.random.default_rng([out, n_in, m])
    w = rng.normal(0.0, 0.02, (out, n_in)).astype(np.float32)
    X = rng.standard_normal((m, n_in)).astype(np.float32)
    qw = quant.quantize(w, bits=4, group_size=128)
    ref = reference.gemm_q(qw, X)
    fns: dict[str, Callable[[], Any]] = {}
    for path in qn.w4_paths("gemm"):
        fns[f"hetlab [{path}]"] = _on_path(path, lambda: hl.gemm_q(qw, X, device="numba"))
        if not hl.gemm_q.spec.error(fns[f"hetlab [{path}]"](), ref) <= TOLERANCE:
            raise SystemExit(f"gemm_q [{path}] {out}×{n_in} m={m}: differs from the reference")
    fns["numpy"] = lambda: X @ w.T
    t = torch_int4(qw, threads)
    if t is not None:
        fns["torch"] = lambda: t[0](X)
    return {k: v[0] for k, v in time_alternating(fns, repeats).items()}


#: a median more than this times its best: the machine was too busy for a verdict
NOISE_LIMIT = 1.5


def noisy(*rows: dict) -> str:
    """Why medians of these result rows cannot judge a target ('' when they can)."""
    bad = [f"{r['key']} median {r['med'] / r['best']:.1f}× its best" for r in rows
           if r["med"] > NOISE_LIMIT * r["best"]]
    return ("not judged (busy machine: " + ", ".join(bad) + "; run again in a quiet moment)"
            if bad else "")


def verdict(path: str, default: str, h: dict, by: dict, floor: float) -> str:
    """The issue-18 target of ``path`` on this CPU, met or not, or why it is not checked."""
    busy = noisy(h, by["floor"], *([by["torch"]] if "torch" in by else []))
    if busy and (path == default or path == "avx2"):
        return busy
    if path == "avx2" and default == "avx2":  # an AVX2-only CPU: the target is checkable
        ok_bw = h["bw_frac"] >= TARGET_BW_FRACTION
        if "torch" not in by:
            return (f"AVX2-only ≥ {TARGET_BW_FRACTION:.0%} of triad: "
                    f"{'met' if ok_bw else 'NOT met'}; ≥ {TARGET_VS_TORCH:g}× torch: not checked "
                    "(torch not installed)")
        ok_t = by["torch"]["med"] / h["med"] >= TARGET_VS_TORCH
        return (f"AVX2-only ≥ {TARGET_BW_FRACTION:.0%} of triad and ≥ {TARGET_VS_TORCH:g}× "
                f"torch: {'met' if ok_bw and ok_t else 'NOT met'}")
    if path == "avx2":
        return ("AVX2-only target NOT checkable here (this CPU has AVX-512: the AVX2 code "
                "runs, on other cores and memory than an AVX2-only CPU's)")
    if path == default and path in ("vnni", "amx"):
        met = floor / h["med"] >= TARGET_FLOOR_FRACTION
        return f"≥ {TARGET_FLOOR_FRACTION:.0%} of the floor: {'met' if met else 'NOT met'}"
    if path == default:
        return "none (this CPU lacks AVX2: the float32 path)"
    return "none (not this CPU's default path)"


def bench_bits(out: int, n_in: int, bits: int, repeats: int, threads: int, bw: float) -> None:
    """W3/W8 g128 GEMV on each of its paths (AVX2 integer dots, float32), one line each."""
    from hetlab.kernels.quant import numba as qn
    from hetlab.kernels.quant._numba_w4 import read_words

    rng = np.random.default_rng([out, n_in, bits])
    w = rng.normal(0.0, 0.02, (out, n_in)).astype(np.float32)
    x = rng.standard_normal(n_in).astype(np.float32)
    qw = quant.quantize(w, bits=bits, group_size=128)
    ref = reference.gemv_q(qw, x)
    paths = ["avx2", "float32"] if "avx2" in qn.w4_paths() else ["float32"]
    fns = {p: _on_path(p, lambda: hl.gemv_q(qw, x, device="numba")) for p in paths}
    for p in paths:
        if not hl.gemv_q.spec.error(fns[p](), ref) <= TOLERANCE:
            raise SystemExit(f"gemv_q W{bits} [{p}] {out}×{n_in}: differs from the reference")
    qflat = qw.qweight.reshape(-1)
    fns["floor"] = lambda: read_words(qflat, qw.qweight.shape[1], out, threads)
    t = {k: v[0] for k, v in time_alternating(fns, repeats).items()}
    for p in paths:
        print(f"gemv_q W{bits} g128 {out}×{n_in} [{p}] {t[p] * 1e3:.3f} ms (median), "
              f"{qw.nbytes / t[p] / 1e9:.1f} GB/s = {qw.nbytes / t[p] / 1e9 / bw:.0%} of triad, "
              f"{t['floor'] / t[p]:.0%} of the floor ({t['floor'] * 1e3:.3f} ms) {tag(p)}")


def bench_plan(quick: bool, repeats: int, threads: int, bw: float) -> None:
    """A mixed-bit plan (``allocate_bits`` over 3/4/8 bits, units of 256 rows) run by
    ``FusedPlan`` in one call against one numba ``gemv_q`` per unit and numpy fp32."""
    from hetlab.kernels.quant._numba_w4 import read_words

    shapes = [(512, 512), (1024, 512)] if quick else [(4096, 4096), (1024, 4096), (4096, 1024)]
    rng = np.random.default_rng(18)
    ws = [rng.normal(0.0, 0.02, s).astype(np.float32) for s in shapes]
    # layer importances far apart, so the plan mixes widths: 8 bits for (rows of) the first
    # layer, 3 for the last, 4 between
    lam = [30.0, 0.03] if quick else [30.0, 1.0, 0.03]
    plan = quant.allocate_bits(ws, 4.6, candidates=(3, 4, 8), block_rows=256, importance=lam)
    xs = [rng.standard_normal(s[1]).astype(np.float32) for s in shapes]
    run = quant.FusedPlan(plan)
    refs = [reference.gemv_q(qw, np.pad(xs[li], (0, qw.padded_in - qw.in_features)))
            for qw, (li, _) in zip(plan.matrices, plan.units, strict=True)]
    ys = run(xs)
    for ref, (li, rows) in zip(refs, plan.units, strict=True):
        if not hl.gemv_q.spec.error(ys[li][rows], ref) <= TOLERANCE:
            raise SystemExit("FusedPlan: differs from the reference")

    def per_unit() -> list[np.ndarray]:
        return [hl.gemv_q(qw, xs[li], device="numba")
                for qw, (li, _) in zip(plan.matrices, plan.units, strict=True)]

    nbytes = sum(qw.nbytes for qw in plan.matrices)
    q = np.concatenate([qw.qweight.reshape(-1) for qw in plan.matrices])
    q = q[: q.size - q.size % 512]
    fns = {"fused": lambda: run(xs), "units": per_unit,
           "numpy": lambda: [w @ x for w, x in zip(ws, xs, strict=True)],
           "floor": lambda: read_words(q, 512, q.size // 512, threads)}
    t = {k: v[0] for k, v in time_alternating(fns, repeats).items()}
    counts = {b: plan.bits.count(b) for b in sorted(set(plan.bits))}
    print(f"mixed plan {len(shapes)} layers {shapes}, {len(plan.units)} units {counts} (bits: "
          f"units), {plan.average_bits:.2f} bits/weight: FusedPlan [{run.path}] "
          f"{t['fused'] * 1e3:.3f} ms (median), {nbytes / t['fused'] / 1e9:.1f} GB/s = "
          f"{nbytes / t['fused'] / 1e9 / bw:.0%} of triad, {t['floor'] / t['fused']:.0%} of the "
          f"floor; one gemv_q per unit {t['units'] * 1e3:.3f} ms "
          f"({t['units'] / t['fused']:.2f}×); numpy fp32 {t['numpy'] * 1e3:.3f} ms "
          f"({t['numpy'] / t['fused']:.2f}×) {tag(run.path)}")


def bench_dispatch(shapes: list[tuple[int, int]], repeats: int, threads: int) -> None:
    """``hl.gemv_q`` against its default W4 kernel called directly (validated arguments, output
    reused): the per-call cost of dispatch (validation, backend and path choice, allocation),
    on a tiny matrix where it dominates and on the benchmark's shapes."""
    from hetlab.kernels.quant import numba as qn
    from hetlab.kernels.quant.formats import F16_TO_F32

    path = qn.w4_paths()[0]
    for out, n_in in shapes:
        rng = np.random.default_rng([out, n_in, 7])
        qw = quant.quantize(rng.normal(0.0, 0.02, (out, n_in)).astype(np.float32), bits=4,
                            group_size=128)
        x = rng.standard_normal(n_in).astype(np.float32)
        head, _ = qn._common(qw)
        y = np.empty(out, np.float32)
        kern = qn._W4_KERNELS["gemv"][path]
        args = (*head, x, F16_TO_F32, qw.group_size, y, threads)
        fns = {"api": lambda qw=qw, x=x: hl.gemv_q(qw, x, device="numba"),
               "kernel": lambda kern=kern, args=args: kern(*args)}
        if not np.array_equal(fns["api"](), fns["kernel"]()):
            raise SystemExit(f"dispatch {out}×{n_in}: hl.gemv_q differs from its kernel")
        t = time_alternating(fns, repeats)
        (api, api_best), (kern_t, kern_best) = t["api"], t["kernel"]
        print(f"dispatch W4 g128 {out}×{n_in}: hl.gemv_q {api * 1e6:.1f} µs, its kernel alone "
              f"{kern_t * 1e6:.1f} µs (median): {(api - kern_t) * 1e6:+.1f} µs per call; best "
              f"{api_best * 1e6:.1f} vs {kern_best * 1e6:.1f} µs: "
              f"{(api_best - kern_best) * 1e6:+.1f} {tag(path)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes, few repeats")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None, help="default: all numba threads")
    ap.add_argument("--gemm-rows", type=lambda v: [int(r) for r in v.split(",")],
                    default=None, help="activation rows of the flat-GEMM lines, e.g. 16,64 "
                    "(default 16; 4 with --quick)")
    ap.add_argument("--gemv-only", action="store_true",
                    help="only the W4 GEMV table and its ratios (no GEMM, dispatch, W3/W8, plan)")
    ap.add_argument("--passive", action="store_true",
                    help="OMP_WAIT_POLICY=PASSIVE: every call wakes sleeping workers")
    args = ap.parse_args(argv)

    import numba

    from hetlab.kernels.quant import numba as qn

    threads = args.threads or numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(threads)
    shapes = [(1024, 1024), (1024, 2816)] if args.quick else [(4096, 4096), (4096, 11008)]
    repeats = args.repeats or (5 if args.quick else 50)
    bw = triad_gbps(2_000_000 if args.quick else 8_000_000, 3 if args.quick else 10)
    model, isa = cpu_tag()
    print(f"CPU: {model}; instruction sets found: {isa}; W4 paths: GEMV "
          f"{qn.w4_paths('gemv')}, GEMM {qn.w4_paths('gemm')} (default first)")
    print(f"threads {threads}; STREAM triad (numba prange, measured now): {bw:.1f} GB/s "
          f"{tag('-')}")
    print(f"{'shape':<11} {'kernel':<40} {'median ms':>9} {'(best)':>8} {'GB/s':>6} "
          f"{'of triad':>8} {'error':>8}")
    print("(error: max |y − y_ref| / max |y_ref| against the numpy reference of the W4 matrix;"
          " [path]: the numba W4 kernel's instruction set)")
    all_rows = []
    for out, n_in in shapes:
        rows = bench_shape(out, n_in, repeats, threads, bw)
        all_rows += rows
        for r in rows:
            wrong = "  (WRONG: above the kernel's tolerance)"
            if "fp32" in r["kernel"]:
                ok = "  (unquantized W)"
            elif "torch" in r["kernel"]:
                ok = "  (bf16 activations)"
            elif r["key"] == "floor":
                ok = "  (no arithmetic)"
            elif "own_err" in r:  # W4A8: checked against its own reference
                ok = "  (int8 activations)" if r["own_err"] <= TOLERANCE else wrong
            else:
                ok = "" if r["err"] <= TOLERANCE else wrong
            shown = r.get("path") or r.get("shown_path") or "-"
            print(f"{r['shape']:<11} {r['kernel']:<40} {r['med'] * 1e3:9.3f} "
                  f"({r['best'] * 1e3:6.3f}) {r['gbps']:6.1f} {r['bw_frac']:8.0%} "
                  f"{r['err']:8.1e}{ok} {tag(shown)}")
    print("\nratios (median times; > 1 means hetlab is faster; floor: reading the codes alone):")
    default = qn.w4_paths()[0]
    for out, n_in in shapes:
        shape = f"{out}×{n_in}"
        by = {r["key"]: r for r in all_rows if r["shape"] == shape}
        paths = [r["key"] for r in all_rows if r["shape"] == shape and "path" in r]
        floor = by["floor"]["med"]
        for p in paths:
            h = by[p]
            line = f"  {shape:<11} [{p}] vs numpy fp32 {by['numpy']['med'] / h['med']:5.2f}×"
            if "torch" in by:
                line += f"   vs torch int4 {by['torch']['med'] / h['med']:5.2f}×"
            else:
                line += "   vs torch int4: skipped (torch not installed)"
            line += (f"   weight stream {h['bw_frac']:4.0%} of triad   {floor / h['med']:4.0%} "
                     f"of the floor (best: {by['floor']['best'] / h['best']:4.0%})   target: "
                     f"{verdict(p, default, h, by, floor)}"
                     f"{' (hl.gemv_q: its dispatch included)' if p == default else ''} {tag(p)}")
            print(line)
        pl = by["plan"]
        print(f"  {shape:<11} [{paths[0]}] via quant.GemvPlan (prepared once; the floor is a "
              f"direct call too): {floor / pl['med']:4.0%} of the floor (best: "
              f"{by['floor']['best'] / pl['best']:4.0%}), {by[paths[0]]['med'] / pl['med']:.2f}× "
              f"hl.gemv_q's speed   target: {verdict(paths[0], default, pl, by, floor)} "
              f"{tag(paths[0])}")
        h = by[paths[0]]
        line = (f"  {shape:<11} W4A8 vs W4A16 {h['med'] / by['w4a8']['med']:5.2f}× (hl.gemv_w4a8 "
                f"takes the dispatch on every call, hl.gemv_q its kept kernel call); "
                f"reading the codes alone takes {floor * 1e3:.3f} ms")
        if "torch" in by:
            need = by["torch"]["med"] / TARGET_VS_TORCH
            how = ("impossible: faster than reading the weights" if need < floor
                   else f"a kernel at {floor / need:.0%} of the floor")
            line += (f"; torch at {floor / by['torch']['med']:.0%} of it; {TARGET_VS_TORCH:g}× "
                     f"torch = {need * 1e3:.3f} ms ({how})")
        print(f"{line} {tag(default)}")
    if args.gemv_only:
        return 0
    out, n_in = shapes[0]
    print()
    for m in args.gemm_rows or ([4] if args.quick else [16]):
        g = bench_gemm(out, n_in, m, max(repeats // 5, 5), threads)
        paths = [k for k in g if k.startswith("hetlab")]
        h = g[paths[0]]
        line = (f"flat GEMM gemm_q W4 g128, {m} rows × {out}×{n_in} (median ms): {paths[0]} "
                f"{h * 1e3:.3f} ({h * 1e3 / m:.3f} per row)")
        for key in paths[1:]:
            line += f", {key} {g[key] * 1e3:.3f} ({g[key] / h:.2f}× {paths[0]}'s time)"
        line += f", numpy fp32 {g['numpy'] * 1e3:.3f} ({g['numpy'] / h:.2f}×)"
        if "torch" in g:
            line += f", torch int4 {g['torch'] * 1e3:.3f} ({g['torch'] / h:.2f}×)"
        print(f"{line} {tag(qn.w4_paths('gemm')[0])}")
    print()
    bench_dispatch([(128, 128), shapes[0]], repeats, threads)
    print()
    for bits in (3, 8):
        bench_bits(out, n_in, bits, repeats, threads, bw)
    bench_plan(args.quick, max(repeats // 2, 3), threads, bw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
