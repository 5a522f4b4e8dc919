# %% [markdown]
# # 09 · Memory offload: running a model that does not fit
#
# **You will learn** how a model whose weights do not fit a memory budget still runs: its
# layers live on a slower tier (here a file on disk, read with direct I/O) and are streamed into
# an enforced byte budget one at a time, the next layers **prefetched** on a reader thread while
# the current one computes; what the prefetch depth and the weight width (16, 8, 4 bits) buy;
# which layers stay resident when the budget allows some; and how well the cost model
# `max(read, compute)` predicts each layer.
#
# **You need** notebook 02 (W8/W4 formats) and 08 (cost models). No GPU: the GPU version of
# this notebook has no recording (said below), never an invented one. **Run time:** about
# 30 seconds on 2 CPU cores.

# %% [markdown]
# ## Setting up
#
# The model is a Llama-style decoder with **seeded weights** (a random network of real layer
# structure, *not a trained model*): six layers of width 384 and MLP width 1024 — 45 MB in
# float32, small enough for a notebook, larger than the 24 MB budget we give it. Numba's
# workqueue threading layer avoids OpenMP's sleeping workers on a shared machine (notebook 08).

# %%
import os

os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from hetlab import offload_memory as om  # noqa: E402
from hetlab.offload_memory.budget import format_bytes  # noqa: E402

model = om.Model.decoder(d_model=384, n_heads=6, d_ff=1024, n_layers=6, vocab=2000, seed=0)
tokens = np.random.default_rng(1).integers(0, 2000, 8)
size = {b: sum(model.item_nbytes(i, b) for i in model.items) for b in (32, 16, 8, 4)}
BUDGET = "24MB"
print(model)
print("model bytes by width:", {b: format_bytes(n) for b, n in size.items()})
print("budget:", format_bytes(om.parse_budget(BUDGET)), "— fits at 32 bits:",
      size[32] <= om.parse_budget(BUDGET))

# %% [markdown]
# ## 1 · Streaming it, and the budget held
#
# `om.stream` writes the model to a file on the slow tier, then every `forward` reads each item
# (the token rows of the embedding, each layer, the final norm) into page-aligned buffers
# accounted in the budget *before* they are allocated. A quarter of the budget is the KV
# cache's share; the rest holds the layers in flight, the activations of the pass
# (`Model.activation_nbytes`, a bound from the shapes), and the layers kept resident. The
# output is the in-memory model's, bit for bit in float32.

# %%
ref = model.forward(tokens)
run = om.stream(model, budget=BUDGET, prefetch=2, bits=32)
run.forward(tokens)                  # first pass: numba compiles or loads its kernels
run.reset()
y = run.forward(tokens)
print("same output as the in-memory model:", np.array_equal(y, ref))
print("I/O mode of the slow tier:", run.io_mode)
print("peak held ≤ budget:", run.budget.peak <= run.budget.total)
print("layers resident between passes:", run.resident or "none (no room besides the pipeline)")

# %%
# NBVAL_IGNORE_OUTPUT
print(f"peak held {format_bytes(run.budget.peak)} of {format_bytes(run.budget.total)}")
run.report

# %% [markdown]
# `io_mode` is `direct` where Linux accepts `O_DIRECT` on this file system: every read goes to
# the device, not the page cache. Where it is refused (tmpfs, macOS) the run says
# `buffered+dontneed` or `buffered` instead — the timings below are then of a cache, not a disk.
#
# ## 2 · The timeline: reads and compute, layer by layer
#
# Each bar is one interval of the pass just run: the reader thread's read of an item (upper
# row of each item) and the main thread's compute of it (lower row). With prefetch the read of
# layer *i+1* runs under the compute of layer *i*; a gap before a compute bar is a **stall**
# (the data was not there yet). When the KV cache has spilled, the reader thread also reads
# layer *i+1*'s spilled keys and values back while layer *i* computes: those reads are their
# own bar kind, **KV read-back (prefetch)**, on the reader's row; a gap *inside* a compute bar
# is the KV cache's own I/O, or a wait for that read-back, cut out of the compute time.

# %%
# NBVAL_IGNORE_OUTPUT
import holoviews as hv  # noqa: E402
import hvplot.pandas  # noqa: E402,F401  (registers DataFrame.hvplot)

import hetlab as hl  # noqa: E402

hl.viz.ensure_extension()


KV_READ = "KV read-back (prefetch)"


def timeline(report, title):
    """Gantt-style bars of a report: the reader's row (weights, and the KV read-back prefetch
    when the run has one) and the compute row (KV I/O and waits cut out) of each item."""
    rows = []
    for n, t in enumerate(report.items):
        if t.bytes_read:
            rows.append({"item": t.item, "what": "read", "y": n + 0.2,
                         "start_ms": t.read_start * 1e3, "end_ms": t.read_end * 1e3})
        if t.kv_prefetch_bytes:
            rows.append({"item": t.item, "what": KV_READ, "y": n + 0.2,
                         "start_ms": t.kv_prefetch_start * 1e3,
                         "end_ms": t.kv_prefetch_end * 1e3})
        for a, b in t.compute_intervals():
            rows.append({"item": t.item, "what": "compute", "y": n - 0.2,
                         "start_ms": a * 1e3, "end_ms": b * 1e3})
    df = pd.DataFrame(rows)
    ticks = [(n, t.item) for n, t in enumerate(report.items)]
    kinds = [("read", "#d95f02"), ("compute", "#1b9e77")]
    if report.kv_prefetch_bytes:
        kinds.append((KV_READ, "#7570b3"))
    bars = [hv.Segments(df[df.what == w], kdims=["start_ms", "y", "end_ms", "y"],
                        vdims=["item"], label=w).opts(line_width=9, color=c)
            for w, c in kinds]
    return hv.Overlay(bars).opts(title=title, yticks=ticks, xlabel="ms from the pass's start",
                                 ylabel="", width=330, height=260, legend_position="top_left")


# %% [markdown]
# Prefetch 0, 1, 2 side by side at 16 bits, then 16, 8, 4 bits at prefetch 2, on one model
# file per width (`om.executor.write_store`), each run's second pass (the first compiles).
# `pin=False` streams every layer on every pass — at 8 and 4 bits the whole model would
# otherwise fit this budget and stay resident (section 4), and nothing would be read.

# %%
stores = {b: om.executor.write_store(model, b) for b in (16, 8, 4)}
reports = {}
for b in (16, 8, 4):
    for p in ((0, 1, 2) if b == 16 else (2,)):
        with om.stream(model, BUDGET, prefetch=p, bits=b, store=stores[b], pin=False) as r:
            r.forward(tokens)
            r.reset()
            r.forward(tokens)
            reports[(p, b)] = r.report
summary = pd.DataFrame([{
    "prefetch": p, "bits": b, "MB read": rep.bytes_read / 1e6, "wall ms": rep.wall_s * 1e3,
    "read ms": rep.read_s * 1e3, "compute ms": rep.compute_s * 1e3,
    "stall ms": rep.stall_s * 1e3, "hidden": rep.hidden_fraction,
    "peak ≤ budget": rep.peak_bytes <= rep.budget} for (p, b), rep in reports.items()])
print("every run within its budget:", bool(summary["peak ≤ budget"].all()))
print("MB read per pass, 16/8/4 bits:",
      [round(summary.query("prefetch == 2 and bits == @b")["MB read"].item(), 1)
       for b in (16, 8, 4)])

# %%
# NBVAL_IGNORE_OUTPUT
(timeline(reports[(0, 16)], "prefetch 0 · 16 bits") + timeline(reports[(1, 16)], "prefetch 1")
 + timeline(reports[(2, 16)], "prefetch 2")).cols(3)

# %%
# NBVAL_IGNORE_OUTPUT
(timeline(reports[(2, 16)], "16 bits · prefetch 2") + timeline(reports[(2, 8)], "8 bits")
 + timeline(reports[(2, 4)], "4 bits")).cols(3)

# %%
# NBVAL_IGNORE_OUTPUT
summary.round(3)

# %% [markdown]
# A decode whose KV cache spills: a small `kv_budget` keeps only the latest tokens of each
# layer in fast memory, the older ones go to the slow tier in blocks of `kv_block` tokens, and
# every decode step reads them back for attention — with prefetch, on the reader thread while
# the layer before computes. The plot is the last step's timeline (16 bits, prefetch 2).

# %%
seq = np.random.default_rng(2).integers(0, 2000, 40)
with om.stream(model, BUDGET, prefetch=2, bits=16, store=stores[16], pin=False,
               kv_budget="400kB", kv_block=8) as r:
    r.forward(seq[:8])
    for i in range(8, 40):
        r.forward(seq[i:i + 1])
    kv_rep = r.report
print("decode step within its budget:", kv_rep.peak_bytes <= kv_rep.budget)
print("spilled KV read back ahead, on the reader thread:", kv_rep.kv_prefetch_bytes > 0)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"KV read back ahead {kv_rep.kv_prefetch_bytes / 1e3:.0f} kB in "
      f"{kv_rep.kv_prefetch_s * 1e3:.2f} ms, {kv_rep.kv_overlap_s * 1e3:.2f} ms under compute; "
      f"hidden (all reads) {kv_rep.hidden_fraction:.0%}")
timeline(kv_rep, "decode step · spilled KV · prefetch 2").opts(width=500, height=300)

# %% [markdown]
# **What they buy.** Prefetch 0 reads and computes in turn: the pass is the sum. Prefetch ≥ 1
# hides the smaller of the two behind the larger (`hidden` is the time the reader and the
# compute both ran over the smaller of the two, each an interval union; KV read-back reads
# count as reads, KV I/O and waits on the compute thread do not count as compute — so it is at
# most 1.0, which hides all of it). Fewer bits cut the bytes read (the MB printed above, scales
# and zeros included), so reads shrink; whether the pass gets faster
# depends on whether reads were the longer part — on a fast disk with the quantized kernels'
# extra work the compute may be. Compare `compute ms` across prefetch depths too: where the
# reader and numba's threads share few cores, overlapped compute can run slower than the
# synchronous one. Read your own table: the figures are this machine's, this run.
#
# ## 3 · The cost model against the measured layers
#
# Per item the model predicts `max(read, compute)` with overlap and `read + compute` without;
# `om.predict` puts those next to the measured step (from the end of one item's compute to the
# end of the next). `om.costmodel.simulate` replays the whole pipeline from the measured reads
# and computes — depth limit included — to predict when each item ends.

# %%
rep = reports[(2, 16)]
pred = om.predict(rep)
sim = om.costmodel.simulate(list(pred["read_s"]), list(pred["compute_s"]), prefetch=2)
pred["simulated_end_s"] = sim["compute_end"].to_numpy()
pred["measured_end_s"] = [t.compute_end for t in rep.items]
print("items compared:", list(pred.index))

# %%
# NBVAL_IGNORE_OUTPUT
steps = (pred[["predicted_overlap_s", "predicted_serial_s", "measured_s"]] * 1e3).reset_index()
steps.melt(id_vars="item", var_name="series", value_name="ms").hvplot.bar(
    x="item", y="ms", by="series", width=650, height=280,
    title="predicted vs measured step per item (prefetch 2, 16 bits)")

# %%
# NBVAL_IGNORE_OUTPUT
(pred * 1e3).round(2)

# %% [markdown]
# The measured steps include what the model leaves out: the reader and the compute share two
# busy cores with everything else on the machine, and the first item's read has nothing to
# hide behind. `simulated_end_s` against `measured_end_s` shows where the pass drifts from the
# ideal pipeline.
#
# ## 4 · Resident layers: when the budget holds some
#
# The executor keeps the **first** layers resident when the budget holds them besides the
# pipeline's room (two items in flight and the activations): they are read on the first pass
# only. First rather than last: the reader then starts on the first streamed layer at once, behind
# the resident layers' compute, so a pass takes about `max(L·c, (L−k)·r)` — the formula of
# `om.break_even_budget`. Here at 16 bits with a 20 MB budget (the model is 24 MB at 16 bits):

# %%
with om.stream(model, "20MB", prefetch=2, bits=16, store=stores[16]) as r:
    r.forward(tokens)
    first = r.report
    r.reset()
    r.forward(tokens)
    second = r.report
    resident = r.resident
print("resident layers:", resident)
print("MB read, first pass vs second:", round(first.bytes_read / 1e6, 2), "→",
      round(second.bytes_read / 1e6, 2))
print("second pass reads only the streamed layers:",
      [t.item for t in second.items if t.bytes_read and t.item.startswith("L")])

# %%
# NBVAL_IGNORE_OUTPUT
layers = [t for t in second.items if t.item.startswith("L")]
r_s = float(np.median([t.read_s for t in layers if t.bytes_read] or [0.0]))
c_s = float(np.median([t.compute_s for t in layers]))
L, k = model.n_layers, len(resident)
print(f"per layer: read {r_s * 1e3:.2f} ms, compute {c_s * 1e3:.2f} ms; "
      f"model max(L·c, (L−k)·r) = {om.costmodel.pass_time(L, k, r_s, c_s) * 1e3:.1f} ms, "
      f"measured {second.wall_s * 1e3:.1f} ms")
print("break-even budget (below it a pass is read-bound):",
      format_bytes(om.break_even_budget(stores[16].nbytes("L0"), L, r_s, c_s)))

# %% [markdown]
# ## 5 · The GPU version
#
# On a GPU the fast memory is device memory and the slow tier is pinned host memory:
# `stream(model, tier="gpu")` copies each layer into a device slot on a separate CUDA stream
# while the compute stream runs the layer before (CuPy, cuBLAS; W8/W4 dequantized on the
# device), timed with CUDA events. `scripts/gpu_check.sh` records such a run — a model larger
# than its device budget — as `data/recorded/memory-offload-<machine>-<date>.nc`. When one is
# there, the cell below plots its timeline, labeled with its GPU and date; when there is none,
# this notebook shows none, and invents none.

# %%
from hetlab.offload_memory import recording  # noqa: E402
from hetlab.recorded import recorded_dir  # noqa: E402

found = recording.find_recordings()
if not found:
    held = sorted(p.name for p in recorded_dir().glob("*.nc"))
    print("there is no GPU recording of memory offload in data/recorded/; the folder holds:",
          held)
else:
    rec = recording.load_recording(found[-1])
    print(f"recorded on {rec.attrs['gpu']} ({rec.attrs['machine']}), {rec.attrs['created']}:",
          rec.attrs["model"], "·", rec.attrs["label"])

# %%
# NBVAL_IGNORE_OUTPUT
if found:
    df = recording.timeline_frame(rec)
    ticks = [(n, it) for n, it in enumerate(rec["item"].values.tolist())]
    bars = [hv.Segments(df[df.what == w], kdims=["start_ms", "y", "end_ms", "y"],
                        vdims=["item"], label=w).opts(line_width=9, color=c)
            for w, c in (("read", "#d95f02"), ("compute", "#1b9e77"))]
    gpu_plot = hv.Overlay(bars).opts(
        title=f"recorded on {rec.attrs['gpu']}, {rec.attrs['created'][:10]} (copy = read)",
        yticks=ticks, xlabel="ms from the pass's start", width=500, height=300)
else:
    gpu_plot = None
gpu_plot

# %% [markdown]
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker that stops at the first wrong case
# with a hint. The checkers are called with `raise_on_fail=False`, so the stub's verdict is
# shown, not raised.
#
# ### Exercise 09.1 · Predict a layer's time with and without overlap
#
# Fill in `layer_time(read_s, compute_s, overlap)`: the seconds one layer adds to a pass when
# its read runs behind the previous layer's compute (`overlap=True`), or before its own compute
# (`overlap=False`).

# %%
def layer_time(read_s, compute_s, overlap):
    """Seconds of one streamed layer, with or without overlap of its read."""
    raise NotImplementedError("your code here")


from hetlab.exercises import check_layer_time, check_smallest_prefetch  # noqa: E402

check_layer_time(layer_time, raise_on_fail=False)

# %% [markdown]
# ### Exercise 09.2 · The smallest prefetch depth that hides the reads
#
# Fill in `smallest_prefetch(read_s, compute_s)`: per item in pass order (a resident item reads
# 0 s), return the smallest depth `p` whose pass ends as early as with any deeper one. Depth 0
# reads an item only when the compute is idle; depth `p ≥ 1` lets the reader run ahead while
# fewer than `p + 1` streamed items are read and not yet computed; compute waits for its item's
# read. (Section 3's `simulate` is the rule; write your own replay.)

# %%
def smallest_prefetch(read_s, compute_s):
    """Per-item read and compute seconds → the smallest depth that hides the reads."""
    raise NotImplementedError("your code here")


check_smallest_prefetch(smallest_prefetch, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# Run `python benchmarks/memory_offload.py --quick` and read its table: the disk it names, the
# measured bandwidth against the rated one, overlap against synchronous streaming, and the
# resident layers' second pass. Then try `om.sweep(model, budgets=["24MB", "40MB"])`.
#
# ## Shutting down
#
# The cell below closes the runs and deletes their files on the slow tier; then choose
# **Kernel → Shut Down Kernel** before opening the next notebook.

# %%
import gc  # noqa: E402

run.close()
for s in stores.values():
    s.close()
del run, stores, reports, ref, y, kv_rep
print("freed; objects collected:", gc.collect() >= 0)
