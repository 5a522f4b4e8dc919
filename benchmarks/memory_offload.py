"""Memory offloading (issue 21): overlapped vs synchronous streaming, W4 vs fp16/fp32, the disk.

Run::

    PYTHONPATH=$PWD python benchmarks/memory_offload.py [--quick] [--dir /path/on/the/disk]

What it prints (one run, ratios; figures on a shared machine are noisy):

1. the slow tier: the file system and block device the tier file lives on (``findmnt``,
   ``/sys/block``), the I/O mode used, and the measured read bandwidth of direct I/O (or its
   fallback) against the device's rated figure where the device names one;
2. overlapped (prefetch 1, 2) vs synchronous (prefetch 0) streaming of a decoder with seeded
   weights at one budget: wall time, reads, compute, stalls, and the fraction of
   min(read, compute) hidden (the issue's goal: ≥ 80 %);
3. W4 vs W8 vs fp16 vs fp32 streaming at the same budget: bytes read and wall time;
4. the cost model: predicted per-pass time (Σ max(read, compute), Σ read + compute) next to the
   measured one, and the break-even budget of :func:`hetlab.offload_memory.break_even_budget`;
5. resident layers: the second pass of a budget that holds half the layers besides the
   pipeline, with ``pin=True`` (the first layers stay) and ``pin=False`` (every layer streamed),
   against ``max(L·c, (L−k)·r)``;
6. KV read-back: a decode whose KV cache spills to the slow tier (a small ``kv_budget``),
   prefetch 0 vs 1 vs 2 — one line: the share of the KV read-back time hidden under compute
   (``kv_overlap_s`` over the KV read-back seconds, prefetched and synchronous, summed over the
   decode steps; at prefetch 0 every read-back runs on the compute thread, so none is hidden),
   with the disk named (``--kv-only`` prints the disk and this line alone);
7. the GIL probe: Python-loop iterations per second on one thread while another runs a W4/W8
   layer product (one numba thread), over the same with the other thread asleep — near 1 when
   the product releases the GIL.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from hetlab import offload_memory as om
from hetlab.offload_memory.tiers import TierFile


def _sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"({cmd[0]} failed: {exc})"


def describe_disk(directory: str) -> list[str]:
    """The file system and block device under ``directory``, as the system names them."""
    fs = _sh(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "-T", directory])
    lines = [f"file system of {directory}: {fs or 'unknown'}"]
    source = fs.split()[0] if fs else ""
    dev = Path(source).name
    sys_dev = Path("/sys/block") / dev
    if sys_dev.exists():
        facts = {}
        for key in ("device/vendor", "device/model", "queue/rotational",
                    "queue/logical_block_size", "queue/max_hw_sectors_kb", "size"):
            p = sys_dev / key
            facts[key] = p.read_text().strip() if p.exists() else "—"
        vendor = {"0x1af4": "Red Hat virtio (a virtual disk: the host's storage is not visible)"}
        size = f"{int(facts['size']) * 512 / 1e9:.0f} GB" if facts["size"].isdigit() else "—"
        lines.append(
            f"block device {dev}: vendor {facts['device/vendor']} "
            f"{vendor.get(facts['device/vendor'], '')}, model {facts['device/model']}, "
            f"rotational={facts['queue/rotational']}, logical block "
            f"{facts['queue/logical_block_size']} B, size {size}")
        lines.append("rated bandwidth: none published for this device (no model string); the "
                     "figure below is the only one")
    lines.append("lsblk: " + " | ".join(_sh(["lsblk", "-d", "-n", "-o",
                                             "NAME,SIZE,ROTA,MODEL"]).splitlines()))
    return lines


def disk_name(directory: str) -> str:
    """A short name of the device under ``directory``: source, file system, lsblk's line."""
    fs = _sh(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", directory]).split()
    if not fs:
        return f"{directory} (device unknown)"
    info = _sh(["lsblk", "-d", "-n", "-o", "NAME,SIZE,ROTA,MODEL", fs[0]]).split()
    if len(info) < 3:
        return f"{fs[0]} ({' '.join(fs[1:])})"
    model = " ".join(info[3:]) or "no model string"
    return f"{fs[0]} ({' '.join(fs[1:])}, {info[1]}, rotational={info[2]}, {model})"


def kv_readback(model: om.Model, store: TierFile, directory: str, weights: int, bits: int,
                prompt: int = 8, steps: int = 16, kv_block: int = 4) -> dict[int, dict[str, float]]:
    """Decode ``steps`` tokens after a ``prompt`` with a KV cache that spills, at prefetch 0, 1,
    2; per depth the decode steps' KV read-back summed: seconds, seconds under compute, bytes.

    The KV share is 4 × the cache of the whole sequence: half of it holds the recent tokens
    (a quarter of the sequence per layer at most), so older blocks spill and are read back
    every step.
    """
    d = int(model.config["d_model"])
    seq = np.random.default_rng(5).integers(0, int(model.config["vocab"]), prompt + steps)
    kv = 4 * (prompt + steps) * 2 * d * 4
    out = {}
    for p in (0, 1, 2):
        with om.stream(model, weights + kv, kv_budget=kv, prefetch=p, bits=bits, store=store,
                       path=directory, pin=False, kv_block=kv_block) as run:
            run.forward(seq[:prompt])
            for i in range(prompt, prompt + steps):
                run.forward(seq[i:i + 1])
            reps = run.reports[1:]  # the decode steps
        sync_s = sum(t.kv_read_s for r in reps for t in r.items)
        out[p] = {"kv_s": sum(r.kv_prefetch_s for r in reps) + sync_s,
                  "hidden_s": sum(r.kv_overlap_s for r in reps),
                  "bytes": sum(r.kv_prefetch_bytes + sum(t.kv_bytes_read for t in r.items)
                               for r in reps),
                  "step_ms": 1e3 * float(np.median([r.wall_s for r in reps]))}
    return out


def kv_line(res: dict[int, dict[str, float]], disk: str, steps: int) -> str:
    """The one line of section 6."""
    def ratio(v: dict[str, float]) -> str:
        return f"{v['hidden_s'] / v['kv_s']:.0%}" if v["kv_s"] > 0 else "n/a (no read-back)"

    return ("KV read-back hidden under compute (decode, spilled cache, "
            f"{steps} steps, disk {disk}): " + ", ".join(
                f"prefetch {p}: {ratio(v)} of {v['kv_s'] * 1e3:.1f} ms "
                f"({v['bytes'] / 1e6:.2f} MB; step {v['step_ms']:.1f} ms)"
                for p, v in res.items()))


def tier_bandwidth(directory: str, io: str, mb: int, repeats: int = 3) -> tuple[str, float]:
    """Median GB/s of reading one ``mb`` MB blob with the tier's own reads."""
    fd, path = tempfile.mkstemp(prefix="hetlab-bw-", dir=directory)
    os.close(fd)
    t = TierFile(path, io=io)
    try:
        t.write("blob", {"x": np.random.default_rng(0).integers(0, 255, mb * 10**6, np.uint8)})
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, nbytes = t.read("blob")
            times.append(time.perf_counter() - t0)
        return t.io_mode, nbytes / float(np.median(times)) / 1e9
    finally:
        t.close()


def run_one(model: om.Model, tokens: np.ndarray, budget: int, prefetch: int, bits: int,
            store: TierFile, directory: str, repeats: int) -> om.Report:
    reports = []
    for _ in range(repeats):
        with om.stream(model, budget, prefetch=prefetch, bits=bits, store=store,
                       path=directory) as run:
            run.forward(tokens)
            reports.append(run.report)
    return sorted(reports, key=lambda r: r.wall_s)[len(reports) // 2]  # the median pass


def gil_probe(fn, seconds: float = 0.4) -> float:
    """Iterations/s of a Python loop here while ``fn`` loops on another thread (numba threads
    there set to 1), over the same with that thread asleep. ~1: ``fn`` releases the GIL."""
    import numba

    def count() -> int:
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            n += 1
        return n

    def rate(work) -> float:
        stop = threading.Event()

        def loop() -> None:
            numba.set_num_threads(1)
            while not stop.is_set():
                work()

        th = threading.Thread(target=loop, daemon=True)
        th.start()
        time.sleep(0.05)
        n = count()
        stop.set()
        th.join()
        return n / seconds

    return rate(fn) / rate(lambda: time.sleep(0.01))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small model (smoke test)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the tier files go")
    ap.add_argument("--tokens", type=int, default=None, help="tokens per forward (prefill)")
    ap.add_argument("--kv-only", action="store_true",
                    help="print the disk and the KV read-back line (section 6) only")
    args = ap.parse_args(argv)
    if args.quick:
        shapes = {"d_model": 256, "n_heads": 4, "d_ff": 688, "n_layers": 4, "vocab": 1000}
        n_tok, bw_mb, repeats = args.tokens or 8, 32, 1
    else:
        shapes = {"d_model": 1024, "n_heads": 16, "d_ff": 2816, "n_layers": 8, "vocab": 8000}
        n_tok, bw_mb, repeats = args.tokens or 16, 256, 3
    if args.kv_only:
        return kv_only(shapes, args.dir)
    print("== slow tier ==")
    for line in describe_disk(args.dir):
        print(line)
    for io in ("auto", "buffered"):
        mode, gbps = tier_bandwidth(args.dir, io, bw_mb)
        print(f"read bandwidth, {mode:18s}: {gbps:6.2f} GB/s ({bw_mb} MB blob, median of 3)")

    model = om.Model.decoder(**shapes, seed=0)
    tokens = np.random.default_rng(1).integers(0, shapes["vocab"], n_tok)
    print(f"\nmodel: {model.name}; {model.label}; {n_tok} tokens per forward (prefill)")
    stores = {b: om.executor.write_store(model, b, directory=args.dir) for b in (32, 16, 8, 4)}
    try:
        for b, s in stores.items():  # warm-up: numba compiles (or loads) every kernel once
            with om.stream(model, "4GB", prefetch=1, bits=b, store=s, path=args.dir) as run:
                run.forward(tokens[:2])
        layer = {b: s.nbytes("L0") for b, s in stores.items()}
        print("layer bytes: " + ", ".join(f"bits={b}: {n / 1e6:.1f} MB" for b, n in layer.items()))
        budget = int(3.2 * layer[32])  # room for 3 fp32 layers: prefetch 2 fits, barely
        kv = budget // 4
        budget += kv  # the default kv share (a quarter) comes on top
        print(f"budget: {budget / 1e6:.1f} MB (model at fp32: "
              f"{sum(stores[32].nbytes(n) for n in stores[32].names()) / 1e6:.0f} MB on disk)")

        print("\n== overlapped vs synchronous (fp32) ==")
        print(f"{'prefetch':>8} {'wall ms':>8} {'read ms':>8} {'compute':>8} {'stall':>7} "
              f"{'hidden':>7} {'speedup':>8} {'io':>18}")
        base = None
        results = {}
        for p in (0, 1, 2):
            r = run_one(model, tokens, budget, p, 32, stores[32], args.dir, repeats)
            results[p] = r
            base = base or r.wall_s
            hidden = "—" if p == 0 else f"{r.hidden_fraction:.0%}"
            print(f"{p:>8} {r.wall_s * 1e3:8.1f} {r.read_s * 1e3:8.1f} {r.compute_s * 1e3:8.1f} "
                  f"{r.stall_s * 1e3:7.1f} {hidden:>7} {base / r.wall_s:7.2f}x {r.io_mode:>18}")
        best = max(results[1].hidden_fraction, results[2].hidden_fraction)
        print(f"goal: overlap hides >= 80% of min(read, compute): best {best:.0%} "
              f"({'met' if best >= 0.8 else 'NOT met'})")

        print("\n== W4 vs W8 vs fp16 vs fp32 at the same budget (prefetch 2) ==")
        print(f"{'bits':>5} {'MB read':>8} {'wall ms':>8} {'read ms':>8} {'compute':>8} "
              f"{'hidden':>7} {'vs fp16':>8}")
        per_bits = {b: run_one(model, tokens, budget, 2, b, stores[b], args.dir, repeats)
                    for b in (32, 16, 8, 4)}
        for b, r in per_bits.items():
            print(f"{b:>5} {r.bytes_read / 1e6:8.1f} {r.wall_s * 1e3:8.1f} {r.read_s * 1e3:8.1f} "
                  f"{r.compute_s * 1e3:8.1f} {r.hidden_fraction:7.0%} "
                  f"{per_bits[16].wall_s / r.wall_s:7.2f}x")

        print("\n== cost model ==")
        for p, r in results.items():
            a = om.predict(r).attrs
            print(f"prefetch {p}: measured {a['measured_s'] * 1e3:.1f} ms; predicted overlapped "
                  f"{a['predicted_overlap_s'] * 1e3:.1f} ms, synchronous "
                  f"{a['predicted_serial_s'] * 1e3:.1f} ms")
        df = om.predict(results[2])
        lay = df.loc[[i for i in df.index if i.startswith("L")]]
        r_med, c_med = float(lay["read_s"].median()), float(lay["compute_s"].median())
        be = om.break_even_budget(layer[32], shapes["n_layers"], r_med, c_med)
        print(f"per layer (median): read {r_med * 1e3:.1f} ms, compute {c_med * 1e3:.1f} ms; "
              f"break-even budget {be / 1e6:.0f} MB (below it a pass is read-bound)")

        print("\n== resident layers: second pass, fp32, prefetch 2 ==")
        n_layers = shapes["n_layers"]
        act = model.activation_nbytes(tokens.shape, n_tok)
        weights = (2 + n_layers // 2) * layer[32] + act + layer[32] // 2
        print(f"budget: {(weights + kv) / 1e6:.1f} MB ({n_layers // 2} of {n_layers} layers fit "
              "besides the pipeline's room)")
        for pin in (False, True):
            with om.stream(model, weights + kv, kv_budget=kv, prefetch=2, bits=32,
                           store=stores[32], path=args.dir, pin=pin) as run:
                run.forward(tokens)
                run.reset()
                run.forward(tokens)
                r, k = run.report, len(run.resident)
            lay = [t for t in r.items if t.item.startswith("L")]
            c = float(np.median([t.compute_s for t in lay]))
            rd = [t.read_s for t in lay if t.bytes_read]
            rr = float(np.median(rd)) if rd else 0.0
            pred = om.costmodel.pass_time(n_layers, k, rr, c)
            print(f"pin={pin!s:5}: resident {k}, MB read {r.bytes_read / 1e6:6.1f}, wall "
                  f"{r.wall_s * 1e3:7.1f} ms; model max(L·c, (L−k)·r) = {pred * 1e3:7.1f} ms "
                  f"(measured / model {r.wall_s / pred:.2f})")

        print("\n== KV read-back: decode with a spilling KV cache, fp32, pin=False ==")
        print(kv_line(kv_readback(model, stores[32], args.dir, budget - kv, 32),
                      disk_name(args.dir), 16))

        print("\n== GIL probe (1.00 = the GIL is free while the product runs) ==")
        from hetlab.offload_memory.kernels import linear
        from hetlab.quant import quantize

        rng = np.random.default_rng(3)
        w = rng.standard_normal((shapes["d_ff"], shapes["d_model"]), dtype=np.float32)
        x = rng.standard_normal((n_tok, shapes["d_model"]), dtype=np.float32)
        for b in (8, 4):
            qw = quantize(w, bits=b, group_size=128)
            print(f"W{b} linear ({n_tok}×{shapes['d_model']} @ {shapes['d_ff']}×"
                  f"{shapes['d_model']}): {gil_probe(lambda qw=qw: linear(x, qw)):.2f}")
        print(f"fp32 linear (the same shapes): {gil_probe(lambda: linear(x, w)):.2f}")
    finally:
        for s in stores.values():
            s.close()
    return 0


def kv_only(shapes: dict[str, int], directory: str) -> int:
    """Section 6 alone: the KV read-back line (disk named) at a 3.2-layer fp32 budget."""
    model = om.Model.decoder(**shapes, seed=0)
    store = om.executor.write_store(model, 32, directory=directory)
    try:
        with om.stream(model, "4GB", prefetch=1, bits=32, store=store, path=directory) as run:
            run.forward(np.arange(2))  # warm-up: numba compiles (or loads) the kernels
        weights = int(3.2 * store.nbytes("L0"))
        print(f"model: {model.name}; weights budget {weights / 1e6:.1f} MB")
        print(kv_line(kv_readback(model, store, directory, weights, 32), disk_name(directory),
                      16))
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
