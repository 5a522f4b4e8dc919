"""GPU figures in one run: the card's bandwidth, host↔device transfers, hetlab's CUDA kernels
against NVIDIA's libraries through CuPy (cuSPARSE for SpMV/SpMM, cuBLAS for the quantized
GEMV/GEMM), and offloaded loop nests against the CPU.

Every figure is measured on the GPU of this run (CUDA events; median of ``--repeats``
samples, each the mean of ``--inner`` back-to-back calls, after warm-up calls that also
compile the kernels). Every hetlab result is checked against the library's (or the numpy
reference) before it is timed. Bandwidth fractions are against the device-to-device copy
measured first (bytes read + bytes written), on the compulsory bytes of each kernel's cost
model (the arrays read once, the output written once).

    python benchmarks/gpu.py                    # gpu_check.sh gives it 200 s
    python benchmarks/gpu.py --quick            # small sizes: a smoke run
    python benchmarks/gpu.py --only sparse,quant
    python benchmarks/gpu.py --record-dir data/recorded --machine "NVIDIA H200"
                                                # also writes the offload search's plans as
                                                # offload-search-<machine>-<date>.json

Columns: ``hetlab`` is the kernel launch alone (the backend function on device-resident
operands), ``hl.api`` the public call (``hl.spmv`` …: validation included), ``lib`` the NVIDIA
library through CuPy. ``lib/hetlab`` > 1 means hetlab's kernel is faster. Without a usable GPU
the script says why and exits with status 2: nothing is measured, nothing is made up.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

SECTIONS = ("sparse", "quant", "offload")
#: launch parameters timed beside the defaults, to choose them on the next GPU run
MERGE_ITEMS = (4, 8, 32)
QUANT_ROWS = (4, 16)


class Mismatch(RuntimeError):
    """A GPU result differs from the library's or the reference's: nothing is timed."""


def gpu_ms(fn: Callable[[], Any], repeats: int, inner: int) -> float:
    """Median GPU time of one call of ``fn`` (ms): CUDA events around ``inner`` back-to-back
    calls, ``repeats`` samples, after two untimed calls."""
    import cupy

    for _ in range(2):
        fn()
    cupy.cuda.Device().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    samples = []
    for _ in range(repeats):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / inner)
    return float(np.median(samples))


def wall_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Median wall time of ``fn`` (ms), synchronized after each call (host↔device copies)."""
    import cupy

    fn()
    samples = []
    for _ in range(repeats):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        samples.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(samples))


def rel_err(got: Any, want: Any) -> float:
    """:func:`hetlab.core.metrics.relative_error` of two device (or host) arrays."""
    import cupy

    from hetlab.core.metrics import relative_error

    return relative_error(cupy.asnumpy(got), cupy.asnumpy(want))


def bandwidth(args: argparse.Namespace) -> dict[str, float]:
    """Device-to-device copy (GB/s, read + write) and pageable host↔device copies (GB/s)."""
    import cupy

    n = (64 if args.quick else 512) * 2**20 // 4  # float32 elements: 64 MiB or 512 MiB
    a = cupy.random.random(n, dtype=cupy.float32)
    b = cupy.empty_like(a)
    t = gpu_ms(lambda: cupy.copyto(b, a), args.repeats, 5)
    d2d = 2 * a.nbytes / t / 1e6
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    h2d = host.nbytes / wall_ms(lambda: cupy.asarray(host), args.repeats) / 1e6
    d2h = a.nbytes / wall_ms(lambda: cupy.asnumpy(a), args.repeats) / 1e6
    print(f"device copy {d2d:8.1f} GB/s (read + write, {a.nbytes / 2**20:.0f} MiB)   "
          f"host→device {h2d:6.1f} GB/s   device→host {d2h:6.1f} GB/s (pageable memory)")
    return {"d2d": d2d, "h2d": h2d, "d2h": d2h}


def _spmv_row(kind: str, A: Any, x: np.ndarray, args: argparse.Namespace,
              bw: dict[str, float]) -> None:
    import cupy

    import hetlab as hl
    from hetlab.kernels.sparse import cupy as gpu
    from hetlab.kernels.sparse.spec import SPMV

    t_h2d = wall_ms(lambda: A.map_arrays(cupy.asarray), 3)
    dA, dx, lib = A.map_arrays(cupy.asarray), cupy.asarray(x), A.to_cupy()
    want = lib @ dx
    for name, fn in (("merge", gpu.spmv_merge), ("rows", gpu.spmv_rows)):
        err = rel_err(fn(dA, dx), want)
        if not err <= 1e-10:
            raise Mismatch(f"spmv {kind} ({name}): differs from cuSPARSE ({err:.3g})")
    t = {"lib": gpu_ms(lambda: lib @ dx, args.repeats, args.inner),
         "merge": gpu_ms(lambda: gpu.spmv_merge(dA, dx), args.repeats, args.inner),
         "rows": gpu_ms(lambda: gpu.spmv_rows(dA, dx), args.repeats, args.inner),
         "api": gpu_ms(lambda: hl.spmv(dA, dx), args.repeats, args.inner)}
    sweep = {}
    for items in MERGE_ITEMS:  # merge-path segment length (the default is ITEMS_PER_THREAD)
        if rel_err(gpu.spmv_merge(dA, dx, items), want) > 1e-10:
            raise Mismatch(f"spmv {kind} (merge, {items} items): differs from cuSPARSE")
        sweep[items] = gpu_ms(lambda i=items: gpu.spmv_merge(dA, dx, i), args.repeats,
                              args.inner)
    best = min(t["merge"], t["rows"])
    gbps = SPMV.cost({"A": A, "x": x}).bytes / best / 1e6
    lanes = f"({gpu.row_lanes(A)})"
    print(f"{'spmv':<8}{kind:<12}{t['lib']:9.3f}{t['merge']:8.3f}{t['rows']:8.3f}{lanes:>8}"
          f"{t['api']:8.3f}{t['lib'] / best:8.2f}x{gbps:8.0f}{gbps / bw['d2d']:8.0%}"
          f"{t_h2d:9.1f}ms", flush=True)
    print(f"{'':<20}merge-path items per thread: " + ", ".join(
        f"{k} → {v:.3f} ms" for k, v in sweep.items()), flush=True)


def _spmm_row(kind: str, A: Any, X: np.ndarray, args: argparse.Namespace,
              bw: dict[str, float]) -> None:
    import cupy

    import hetlab as hl
    from hetlab.kernels.sparse import cupy as gpu
    from hetlab.kernels.sparse.spec import SPMM

    dA, dX, lib = A.map_arrays(cupy.asarray), cupy.asarray(X), A.to_cupy()
    err = rel_err(gpu.spmm(dA, dX), lib @ dX)
    name = f"spmm{X.shape[1]}"
    if not err <= 1e-10:
        raise Mismatch(f"{name} {kind}: differs from cuSPARSE ({err:.3g})")
    tl = gpu_ms(lambda: lib @ dX, args.repeats, args.inner)
    th = gpu_ms(lambda: gpu.spmm(dA, dX), args.repeats, args.inner)
    ta = gpu_ms(lambda: hl.spmm(dA, dX), args.repeats, args.inner)
    gbps = SPMM.cost({"A": A, "X": X}).bytes / th / 1e6
    print(f"{name:<8}{kind:<12}{tl:9.3f}{th:8.3f}{'-':>8}{'':>8}{ta:8.3f}"
          f"{tl / th:8.2f}x{gbps:8.0f}{gbps / bw['d2d']:8.0%}", flush=True)


def sparse_section(args: argparse.Namespace, bw: dict[str, float]) -> None:
    """SpMV (two hetlab kernels) and SpMM against cuSPARSE on the CPU benchmark's matrices."""
    from hetlab import sparse

    rows = 200_000 if args.quick else 2_000_000
    rng = np.random.default_rng(2026)
    print(f"\nSpMV / SpMM, float64 values, int32 indices, {rows} rows (spmm: a quarter), "
          "~16 nonzeros per row (the matrices of benchmarks/sparse.py); times in ms")
    head = (f"{'kernel':<8}{'matrix':<12}{'cuSPARSE':>9}{'merge':>8}{'rows':>8}{'(lanes)':>8}"
            f"{'hl.api':>8}{'lib/best':>9}{'GB/s':>8}{'of copy':>8}{'H2D of A':>11}")
    print(head + "\n" + "-" * len(head))
    for kind in ("banded", "laplacian3d", "powerlaw", "uniform"):
        A = sparse.make_matrix(rows, rng, kind=kind, nnz_per_row=16)
        _spmv_row(kind, A, rng.random(A.shape[1]) * 2 - 1, args, bw)
        if kind in ("banded", "powerlaw"):
            As = sparse.make_matrix(rows // 4, rng, kind=kind, nnz_per_row=16)
            for k in (16, 64):
                _spmm_row(kind, As, rng.random((As.shape[1], k)), args, bw)
    print("(merge: the merge-path kernel, hl.spmv's; rows: 'lanes' threads per row, "
          "CSR-vector; lib/best: cuSPARSE time over the faster hetlab kernel's; H2D of A: "
          "copying the host matrix to the GPU, wall time)")


def _quant_row(qw: Any, X: np.ndarray, w16: Any, w32: Any, args: argparse.Namespace,
               bw: dict[str, float]) -> None:
    import cupy

    import hetlab as hl
    from hetlab.kernels.quant import cupy as qk
    from hetlab.kernels.quant import reference
    from hetlab.kernels.quant.spec import GEMM_Q, TOLERANCE

    m = X.shape[0]
    dq, dX = qw.map_arrays(cupy.asarray), cupy.asarray(X)
    X16 = dX.astype(cupy.float16)
    want = reference.gemm_q(qw, X)
    err = hl.gemv_q.spec.error(cupy.asnumpy(qk.gemm_q(dq, dX)), want)
    shape = f"{qw.out_features}×{qw.in_features}"
    if not err <= TOLERANCE:
        raise Mismatch(f"W{qw.bits} {shape} m={m}: differs from the reference ({err:.3g})")
    if m == 1:
        x, x16 = dX[0], X16[0]
        fns = {"fp16": lambda: w16 @ x16, "fp32": lambda: w32 @ x,
               "hetlab": lambda: qk.gemv_q(dq, x), "api": lambda: hl.gemv_q(dq, x)}
    else:
        fns = {"fp16": lambda: X16 @ w16.T, "fp32": lambda: dX @ w32.T,
               "hetlab": lambda: qk.gemm_q(dq, dX), "api": lambda: hl.gemm_q(dq, dX)}
    t = {k: gpu_ms(f, args.repeats, args.inner) for k, f in fns.items()}
    sweep = {}
    for rows in QUANT_ROWS:  # output rows per 128-thread block (the default is 1)
        got = qk.launch_gemm(dq, dX, cupy, rows)
        if hl.gemv_q.spec.error(cupy.asnumpy(got), want) > TOLERANCE:
            raise Mismatch(f"W{qw.bits} {shape} m={m} rows={rows}: differs from the reference")
        sweep[f"{rows} rows/block"] = gpu_ms(lambda r=rows: qk.launch_gemm(dq, dX, cupy, r),
                                             args.repeats, args.inner)
    if m == 1:  # W4A8 on the same weights (int8 activations, checked against its reference)
        if hl.gemv_w4a8.spec.error(cupy.asnumpy(qk.gemv_w4a8(dq, dX[0])),
                                   reference.gemv_w4a8(qw, X[0])) > TOLERANCE:
            raise Mismatch(f"W{qw.bits}A8 {shape}: differs from the reference")
        sweep[f"W{qw.bits}A8"] = gpu_ms(lambda: qk.gemv_w4a8(dq, dX[0]), args.repeats, args.inner)
    gbps = GEMM_Q.cost({"qw": qw, "X": X}).bytes / t["hetlab"] / 1e6
    print(f"{shape:<11}{f'W{qw.bits}A16':<9}{m:>3}{t['fp16']:12.4f}{t['fp32']:12.4f}"
          f"{t['hetlab']:8.4f}{t['api']:8.4f}{t['fp16'] / t['hetlab']:11.2f}x{gbps:7.0f}"
          f"{gbps / bw['d2d']:8.0%}", flush=True)
    print(f"{'':<23}variants: " + ", ".join(f"{k} {v:.4f} ms" for k, v in sweep.items()),
          flush=True)


def quant_section(args: argparse.Namespace, bw: dict[str, float]) -> None:
    """Fused dequantize + GEMV/GEMM against cuBLAS on the dense float16 / float32 matrix."""
    import cupy

    from hetlab import quant

    shapes = [(1024, 1024), (1024, 2816)] if args.quick else [(4096, 4096), (4096, 11008)]
    rng = np.random.default_rng(4)
    print("\nQuantized GEMV (one token) and GEMM (16 tokens), group 128, float32 accumulate, "
          "against cuBLAS on the dense matrix; times in ms")
    head = (f"{'shape':<11}{'format':<9}{'m':>3}{'fp16 cuBLAS':>12}{'fp32 cuBLAS':>12}"
            f"{'hetlab':>8}{'hl.api':>8}{'fp16/hetlab':>12}{'GB/s':>7}{'of copy':>8}")
    print(head + "\n" + "-" * len(head))
    for out, n_in in shapes:
        w = rng.normal(0, 0.02, (out, n_in)).astype(np.float32)
        w16, w32 = cupy.asarray(w.astype(np.float16)), cupy.asarray(w)
        for bits in (4, 3, 8):
            qw = quant.quantize(w, bits=bits, group_size=128)
            for m in (1, 16):
                _quant_row(qw, rng.standard_normal((m, n_in)).astype(np.float32), w16, w32,
                           args, bw)
    print("(GB/s: the quantized matrix with its scales/zeros, activations in, outputs out)")


def offload_section(args: argparse.Namespace) -> list[dict[str, Any]]:
    """offload.search with the cuda target beside numba: plans, times, transfers (the rows)."""
    from hetlab import offload
    from hetlab.offload import MeasureOptions
    from hetlab.offload.examples import EXAMPLES

    # 4× the CPU benchmark's work per kernel (benchmarks/offload.py sizes: serial njit
    # 10–100 ms on 2 cores), so launches and copies weigh as they would in the CPU benchmark
    sizes = {"jacobi_2d": 2000, "heat_3d": 160, "matmul": 480}
    if args.quick:
        sizes = {"jacobi_2d": 200, "matmul": 100}
    print("\nOffload search, cuda and numba targets (wall times in ms, host arrays in and out: "
          "the cuda plan's times include its transfers)")
    head = (f"{'kernel':<14}{'size':>6}{'serial njit':>12}{'numba plan':>11}{'cuda plan':>10}"
            f"{'cuda/serial':>12}  {'cuda loops':<16}{'copies naive→reduced':>22}")
    print(head + "\n" + "-" * len(head))
    rows: list[dict[str, Any]] = []
    for name, size in sizes.items():
        ex = EXAMPLES[name]
        plan = offload.search(ex.fn, ex.make_args(size), targets=["cuda", "numba"], budget=4,
                              reference="njit", progress=False,
                              measure=MeasureOptions(repeats=3))
        cu, nb = plan.alternatives.get("cuda"), plan.alternatives.get("numba")
        if cu is None or nb is None:
            print(f"{name:<14}{size:>6}  no cuda plan: {'; '.join(plan.notes)}")
            rows.append({"kernel": name, "size": size, "notes": list(plan.notes)})
            continue
        tr = cu.transfers
        moved = (f"{tr['naive']['copies']}→{tr['reduced']['copies']}" if tr else "-")
        print(f"{name:<14}{size:>6}{plan.serial_s * 1e3:12.2f}{nb.time_s * 1e3:11.2f}"
              f"{cu.time_s * 1e3:10.2f}{plan.serial_s / cu.time_s:11.2f}x  "
              f"{'+'.join([*cu.blocks, *cu.loops]) or '(serial)':<16}{moved:>22}"
              f"{'' if cu.verified else '  NOT VERIFIED'}", flush=True)
        rows.append({"kernel": name, "size": size, "serial_njit_s": plan.serial_s,
                     "numba_plan_s": nb.time_s, "cuda_plan_s": cu.time_s,
                     "cuda_verified": bool(cu.verified), "numba_verified": bool(nb.verified),
                     "cuda_loops": [*cu.blocks, *cu.loops], "copies_naive_reduced": moved})
    return rows


def write_offload_recording(rows: list[dict[str, Any]], folder: str, machine: str,
                            device_name: str) -> str:
    """The offload search's rows as ``<folder>/offload-search-<machine>-<date>.json``, with
    the machine, GPU, date and versions as provenance; returns the path written."""
    import json
    import os

    import hetlab
    from hetlab.recorded import machine_slug

    date = time.strftime("%Y-%m-%d", time.gmtime())
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"offload-search-{machine_slug(machine)}-{date}.json")
    doc = {"kind": "offload search, cuda and numba targets (benchmarks/gpu.py)",
           "units": "seconds (median wall time, host arrays in and out)",
           "machine": machine, "device_name": device_name,
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "python": platform.python_version(),
           "hetlab": hetlab.__version__, "command": " ".join(sys.argv), "rows": rows}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    p.add_argument("--repeats", type=int, default=None, help="timed samples (median)")
    p.add_argument("--inner", type=int, default=10, help="back-to-back calls per sample")
    p.add_argument("--only", default=",".join(SECTIONS), help=f"sections of {SECTIONS}")
    p.add_argument("--record-dir", default=None,
                   help="also write the offload search's plans there as a JSON recording")
    p.add_argument("--machine", default=None,
                   help="the machine in words, for the recording (default: the GPU's name)")
    args = p.parse_args(argv)
    # numba-cuda warns of small grids at every small launch (the offload search's variants)
    warnings.filterwarnings("ignore", message=".*under-utilization.*")
    args.repeats = args.repeats or (3 if args.quick else 15)
    only = [s for s in args.only.split(",") if s]
    if unknown := set(only) - set(SECTIONS):
        p.error(f"--only: unknown sections {sorted(unknown)}; choose from {SECTIONS}")

    from hetlab.core.registry import get_backend

    backend = get_backend("cupy")
    if (why := backend.why_not()) is not None:
        print(f"no usable GPU, nothing measured: {why}")
        return 2
    import cupy

    info = backend.info()
    print(f"{info['device_name']} (compute capability {info['compute_capability']}) | "
          f"CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()} | "
          f"Python {platform.python_version()} | "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    status = 0
    bw = bandwidth(args)
    def offload() -> None:
        rows = offload_section(args)
        if args.record_dir:
            machine = args.machine or str(info["device_name"])
            print("recorded", write_offload_recording(rows, args.record_dir, machine,
                                                      str(info["device_name"])))

    for section, run in (("sparse", lambda: sparse_section(args, bw)),
                         ("quant", lambda: quant_section(args, bw)),
                         ("offload", offload)):
        if section not in only:
            continue
        try:
            run()
        except Exception as exc:  # one broken section must not hide the others' figures
            import traceback

            traceback.print_exc()
            print(f"section {section} FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
