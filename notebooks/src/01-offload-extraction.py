# %% [markdown]
# # 01 · Offload extraction: from plain Python loops to parallel code
#
# **You will learn** how a plain Python function made of `for … in range(…)` loops can be offloaded
# automatically: `hetlab.offload` reads its loops, proves which ones may run in parallel (and
# says why the others may not), generates Numba `prange` and CUDA variants, searches which loops
# to offload with a genetic algorithm on *measured and verified* run times, and hands back a
# callable with the original's signature — the idea of environment-adaptive offloading (Yamato et
# al., NTT, 2018–2024), in Python.
#
# **You need** hetlab (`pip install -e ".[lab]"`); no GPU: without one, the CUDA variant runs in
# Numba's CUDA simulator, which is enough to check its results and count its host↔device
# copies (not to time it). **Run time:** under a minute on 2 CPU cores.

# %%
# NBVAL_IGNORE_OUTPUT
import inspect
import os

import numpy as np

import hetlab as hl

# Numba reads NUMBA_ENABLE_CUDASIM when it is first imported: decide before anything imports it.
if "cupy" not in hl.available_backends():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.targets.cuda import gpu_loops

print("CUDA variants run", "in the simulator" if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
      else "on the GPU")

# %% [markdown]
# ## Four steps
#
# 1. **analyze** — find the loop tree, every array access and scalar, and decide per loop:
#    *parallel*, *reduction* (parallel once a scalar like `s += …` is combined per thread),
#    *sequential* (with the dependence that forbids it) or *unsupported*.
# 2. **transform** — write the variant's source: `range` → `prange` under
#    `@njit(parallel=True)` for the CPU, or one `numba.cuda` kernel per chosen nest for the GPU;
#    nests that compute a library routine can become one call (a *function block*), and loops
#    are reordered for the memory (*interchange*) before they run in parallel.
# 3. **search** — one gene per parallelizable loop (1 = offload it); a GA measures candidates,
#    fitness = serial-`njit` time / candidate time, and a wrong result scores 0.
# 4. **verify** — every candidate is checked against the original function, and so is the
#    final plan.
#
# Two kernels from `hetlab.offload.examples`, both plain Python: a matrix product and a
# Himeno-like Poisson solver (Jacobi sweeps of a 7-point stencil, returning the residual `gosa`).

# %%
matmul = EXAMPLES["matmul"].fn
himeno = EXAMPLES["himeno"].fn
print(inspect.getsource(matmul))
print(inspect.getsource(himeno))

# %% [markdown]
# ## 1 · Analyze
#
# The matrix product: `i` and `j` write distinct elements `C[i, j]` (`s` is private: written
# before it is read in each iteration); `k` accumulates `s +=` — a reduction.

# %%
print(offload.analyze(matmul))

# %% [markdown]
# The Himeno-like solver has a time loop `it` around two nests. The first nest's three loops
# are reductions (all add to `gosa`); the copy nest is plainly parallel. The time loop must stay
# **sequential**:

# %%
report = offload.analyze(himeno)
print(report)
print()
time_loop = report.loop("L1")
print(f"{time_loop.id} ({time_loop.var}) is {time_loop.verdict} because of "
      f"{len(time_loop.reasons)} reasons, among them:")
for why in time_loop.reasons[:2] + [r for r in time_loop.reasons if r.startswith("flow")][:1]:
    print("  -", why)

# %% [markdown]
# Sweep `it + 1` reads the `p` that sweep `it` wrote (a *flow* dependence carried by `it`;
# `(*)` means some positive distance), and `gosa` keeps only the last sweep's value, which the
# function returns. Running sweeps at the same time would read stale values — the analysis refuses.
#
# Your own functions are analyzed the same way. A first-order recurrence is the classic loop
# that must stay sequential: iteration `i` reads what iteration `i − 1` wrote (distance 1).

# %%
def smooth_then_scale(x, y):
    n = x.shape[0]
    for i in range(1, n):
        x[i] = 0.5 * (x[i] + x[i - 1])
    for i in range(n):
        y[i] = 2.0 * x[i]


print(offload.analyze(smooth_then_scale))

# %% [markdown]
# Asking to parallelize it anyway is an error that names the dependence:

# %%
try:
    offload.transform(smooth_then_scale, ["L1"])
except hl.InvalidInputError as err:
    print(err)

# %% [markdown]
# ## 2 · Transform
#
# A variant is the function's own source, rewritten. For the CPU, `prange` on the chosen loops
# (Numba recognizes the `s +=` reduction by itself):

# %%
variant = offload.transform(matmul, ["L1"])
print(variant.source)

# %% [markdown]
# For the GPU, each chosen nest becomes a `numba.cuda` kernel — here a 2-D grid over `i, j`, with
# the `k` reduction running inside each thread — launched from the host code:

# %%
gpu_variant = offload.transform(matmul, ["L1", "L2"], target="cuda")
print(gpu_variant.source)

# %% [markdown]
# Both give the original's answer (on small arrays, fresh copies each):

# %%
A, B, C = EXAMPLES["matmul"].make_args(24)
expected = C.copy()
matmul(A, B, expected)
for v in (variant, gpu_variant):
    out = C.copy()
    v.compile()(A, B, out)
    print(f"{v.target:5s} variant of {v.loops}: equal to the original:", np.allclose(out, expected))

# %% [markdown]
# Before offloading loops, the papers replace whole *function blocks* by a library call: this
# matmul nest is exactly `C = A @ B`, which a BLAS usually computes far faster than a loop.
# `analyze` finds such blocks by the shape of the computation, conservatively (when unsure: no
# block), and `transform(..., blocks=[...])` swaps the nest for the call:

# %%
mm_report = offload.analyze(matmul)
for block in mm_report.blocks:
    print(f"B{block.index + 1}: {block.pattern} at {block.nest} -> {block.call}")
block_variant = offload.transform(mm_report, [], blocks=["B1"])
out = C.copy()
block_variant.compile()(A, B, out)
print("block variant equal to the original:", np.allclose(out, expected))

# %% [markdown]
# ### A block in code that does not look like a matmul
#
# Few people write `C[i, j] += A[i, k] * B[k, j]` in real code. Here is the scaled product
# `C = β·C + α·A·Bᵀ` the way it often arrives: the shape unpacked into a tuple, `range(0, n)`,
# β applied first, α in the middle of the product, `B` stored transposed (`Bt[j, k]`), and a
# running sum `tmp = tmp + …` written back at the end. The analysis reads each nest as tensor
# statements (index sets, bounds, accesses, scalar factors, a prior scaling of the output) and
# matches their *shape* against a catalogue of library routines, so none of this spelling matters
# (docs/offload.md, "Contraction recognition"):

# %%
def scaled_product(alpha, beta, C, A, Bt):
    n, m = C.shape
    for i in range(0, n):
        for j in range(0, m):
            C[i, j] = beta * C[i, j]
            tmp = 0.0
            for k in range(0, A.shape[1]):
                tmp = tmp + A[i, k] * alpha * Bt[j, k]
            C[i, j] = C[i, j] + tmp


sp_report = offload.analyze(scaled_product)
print(sp_report)
print()
for block in sp_report.blocks:
    print(f"B{block.index + 1}: {block.pattern} at {block.nest}")

# %% [markdown]
# The emitted code: the whole nest becomes the β scaling and one `@` with α outside it and
# `.T` on the transposed operand (BLAS GEMM), inside the same `njit` function. An operand goes
# to the GEMM as it is when, at run time, it covers every column of its array (the `if … else`:
# `Bt[:m]` when the product runs over all of `Bt`'s columns); a part of an array is first
# copied contiguous:

# %%
sp_block = offload.transform(sp_report, [], blocks=["B1"])
sp_loops = offload.transform(sp_report, [])               # the serial njit of the loops
print(sp_block.source)

# %% [markdown]
# Verified like every candidate: against the original Python on small non-square shapes (so a
# swapped index would show), and against NumPy's own formula.

# %%
rng = np.random.default_rng(7)
small = (1.5, 0.5, rng.random((20, 16)), rng.random((20, 12)), rng.random((16, 12)))
want = [a.copy() if isinstance(a, np.ndarray) else a for a in small]
got = [a.copy() if isinstance(a, np.ndarray) else a for a in small]
scaled_product(*want)
fast_sp = sp_block.compile()
fast_sp(*got)
print("block equal to the original loops:", np.allclose(got[2], want[2]))
print("equal to beta*C + alpha*A@Bt.T:   ",
      np.allclose(got[2], 0.5 * small[2] + 1.5 * small[3] @ small[4].T))

# %% [markdown]
# Loops against the block, both compiled by numba, on the same 256 × 256 inputs (fresh copies
# per call, median of 5 after a warm-up call): the loops run serially, the block's `@` on the
# BLAS's own threads — and once more with the BLAS held to one thread, because on a machine
# whose cores are busy with other work the BLAS's threads wait for each other (more on that in
# "A plan among other work" below). The figures are measured live on the machine named in the
# first line, so they differ from run to run and machine to machine; `offload.search` keeps a
# block only when it measures faster than the loops.

# %%
# NBVAL_IGNORE_OUTPUT
import copy  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from threadpoolctl import threadpool_limits  # noqa: E402

from hetlab.machine import cpu_model  # noqa: E402


def median_time(fn, args, repeats=5):
    """Median wall time (s) of fn on fresh copies of args, after one warm-up call."""
    fn(*copy.deepcopy(args))
    times = []
    for _ in range(repeats):
        work = copy.deepcopy(args)
        t0 = time.perf_counter()
        fn(*work)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def machine():
    """One line naming the machine the figures below were measured on."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{cpu_model()}, {os.cpu_count()} logical cores, load average {load:.2f} "
            f"(other work on the machine slows every figure)")


n = 256
sp_args = (1.5, 0.5, rng.random((n, n)), rng.random((n, n)), rng.random((n, n)))
t_loops = median_time(sp_loops.compile(), sp_args)
t_block = median_time(fast_sp, sp_args)
with threadpool_limits(limits=1, user_api="blas"):
    t_block1 = median_time(fast_sp, sp_args)
print("machine:", machine())
print(f"n = {n}: loops (serial njit) {t_loops * 1e3:.2f} ms | block {t_block * 1e3:.2f} ms "
      f"({t_loops / t_block:.1f}× the loops' speed) | block with the BLAS on one thread "
      f"{t_block1 * 1e3:.2f} ms ({t_loops / t_block1:.1f}×)")

# %% [markdown]
# ### Loop interchange: walk memory in the order it is stored
#
# NumPy arrays are row-major (C order): `X[r, c]` and `X[r, c + 1]` are neighbours in memory,
# `X[r, c]` and `X[r + 1, c]` a whole row apart. A scientist standardizing the columns of a
# data matrix naturally writes the column loop outside — so the inner loop jumps a row at every
# step. No dependence ties the two loops, so the analysis swaps them (a *fixed pass*: it helps
# every schedule, so it is not a gene of the search) and says so in the report's `transform`
# line:

# %%
def standardize(X, mu, sd, Z):
    rows = X.shape[0]
    cols = X.shape[1]
    for c in range(cols):
        for r in range(rows):
            Z[r, c] = (X[r, c] - mu[c]) / sd[c]


st_report = offload.analyze(standardize)
print(st_report)
print()
for line in st_report.transforms.lines():
    print("transform", line)

# %% [markdown]
# The serial `njit` with the fixed passes — the search measures it as a candidate of its own,
# beside the function as written — has the `r` loop outside and the comment saying why:

# %%
from hetlab.offload.targets.registry import get_target  # noqa: E402

numba_target = get_target("numba")
as_written = numba_target.generate(st_report, (), transforms=False)
interchanged = numba_target.generate(st_report, (), transforms=True)
print(interchanged.source)

X = rng.random((30, 20))
st_args = (X, X.mean(axis=0), X.std(axis=0), np.zeros((30, 20)))
z_ref, z_new = np.zeros((30, 20)), np.zeros((30, 20))
standardize(*st_args[:3], z_ref)
fast_written, fast_swapped = as_written.compile(), interchanged.compile()
fast_swapped(*st_args[:3], z_new)
print("interchanged equal to the original:", np.allclose(z_new, z_ref))

# %% [markdown]
# The effect on time, serial both (one thread: only the memory order differs), on a
# 1500 × 1500 matrix (18 MB per array, more than a core's private caches hold): as written,
# each step of the inner loop lands 12 kB further in memory, on a new cache line; interchanged,
# eight consecutive steps share one 64-byte cache line:

# %%
# NBVAL_IGNORE_OUTPUT
X = rng.random((1500, 1500))
st_args = (X, X.mean(axis=0), X.std(axis=0), np.empty_like(X))
t_written = median_time(fast_written, st_args)
t_swapped = median_time(fast_swapped, st_args)
print("machine:", machine())
print(f"column loop outside (as written) {t_written * 1e3:.1f} ms, interchanged "
      f"{t_swapped * 1e3:.1f} ms → {t_written / t_swapped:.1f}× the speed")
del X, st_args

# %% [markdown]
# ## 3 · Search
#
# Which loops pay off depends on the machine: an outer `prange` spreads the most work per
# thread, nested `prange`s add scheduling, and on a couple of busy cores a small problem may not
# gain at all — then the plan is "offload nothing", which is a valid answer.
# So `offload.search` measures. A small budget keeps this notebook quick: `budget` bounds the
# distinct candidates measured, `population` the GA's generation size. The search tries the
# function blocks first and keeps them when verified and faster; to watch the loop GA on matmul
# we switch that off here (`function_blocks=False`). With 3 genes (matmul) the search also
# measures all 2³ patterns to check the GA; Himeno has 6 genes (64 patterns), of which the GA
# measures 8.

# %%
# NBVAL_IGNORE_OUTPUT
mm_args = EXAMPLES["matmul"].make_args(96)
mm_plan = offload.search(matmul, mm_args, budget=8, progress=False, function_blocks=False,
                         ga=GAOptions(population=4))
mm_plan  # noqa: B018  (displayed)

# %%
# NBVAL_IGNORE_OUTPUT
him_args = EXAMPLES["himeno"].make_args(48)
him_plan = offload.search(himeno, him_args, budget=8, progress=False, ga=GAOptions(population=4))
him_plan  # noqa: B018  (displayed)

# %% [markdown]
# Every candidate measured, fastest first (status `ok` means it ran and matched the original):

# %%
# NBVAL_IGNORE_OUTPUT
him_plan.candidates()

# %% [markdown]
# The GA's progress: the best fitness (speedup over serial `njit`) found by each generation.
# The serial pattern is measured first, so the curve starts at 1×; it is the best so far, so it
# never drops. (With a small budget the GA stops after a few generations.)

# %%
# NBVAL_IGNORE_OUTPUT
import pandas as pd  # noqa: E402

hl.viz.ensure_extension()                                  # inlined BokehJS: renders offline
import hvplot.pandas  # noqa: E402,F401  (registers DataFrame.hvplot)

progress = pd.DataFrame(
    [{"kernel": name, "generation": g, "best speedup": f}
     for name, plan in (("matmul", mm_plan), ("himeno", him_plan))
     for g, f in enumerate(plan.ga.history)])
progress.hvplot.line(x="generation", y="best speedup", by="kernel", title="GA: best fitness "
                     "per generation", width=460, height=300) \
    * progress.hvplot.scatter(x="generation", y="best speedup", by="kernel")

# %% [markdown]
# The code the search chose (it depends on the timings, so it may differ from run to run):

# %%
# NBVAL_IGNORE_OUTPUT
print(mm_plan.source("numba"))

# %% [markdown]
# ## 4 · Verify
#
# `plan.compile()` is a drop-in replacement with the original's name and signature. Whatever
# the search chose, it must give the original's answer:

# %%
fast_matmul = mm_plan.compile()
fast_himeno = him_plan.compile()
print(fast_matmul.__name__, inspect.signature(fast_matmul), "verified:", mm_plan.verified)
print(fast_himeno.__name__, inspect.signature(fast_himeno), "verified:", him_plan.verified)

A, B, C = EXAMPLES["matmul"].make_args(96, seed=1)   # arguments the search never saw
C_ref, C_fast = C.copy(), C.copy()
matmul(A, B, C_ref)
fast_matmul(A, B, C_fast)
print("matmul:", np.allclose(C_fast, C_ref, rtol=1e-5, atol=1e-8))

ref_args = EXAMPLES["himeno"].make_args(24, seed=1)
fast_args = [a.copy() if isinstance(a, np.ndarray) else a for a in ref_args]
gosa_ref, gosa_fast = himeno(*ref_args), fast_himeno(*fast_args)
print("himeno: p equal:", np.allclose(fast_args[0], ref_args[0], rtol=1e-5, atol=1e-8),
      "| gosa equal:", np.isclose(gosa_fast, gosa_ref, rtol=1e-5))

# %% [markdown]
# ### A plan among other work: the BLAS threads
#
# A program calls a plan between other NumPy calls, and NumPy's BLAS (OpenBLAS here) keeps its
# worker threads spinning for a while after a multi-threaded call such as `a @ b` or
# `np.linalg.norm`; on a machine with few cores they compete with the plan's numba threads. So
# the search's confirmation also times the chosen plan the way a program calls it — each call
# right after such BLAS work, on fresh inputs — as `plan.among_work_s`, beside the quiet
# `plan.time_s`, and once more with the BLAS held to one thread (`plan.among_work_blas1_s`).
# The remedy is `threadpoolctl.threadpool_limits(limits=1, user_api="blas")` around the loop
# that calls the plan (or `OPENBLAS_NUM_THREADS=1` before NumPy is imported); it costs the
# BLAS calls their own parallelism, usually the better trade on a couple of cores when the plan
# does most of the work. The figures of the two searches above, measured live (a plan that kept
# serial `njit` has no numba threads to disturb):

# %%
# NBVAL_IGNORE_OUTPUT
print("machine:", machine())
for name, plan in (("matmul", mm_plan), ("himeno", him_plan)):
    print(f"{name:6s} plan {', '.join(plan.loops) or 'serial'} on "
          f"{plan.thread_choice or 1} thread(s): alone {plan.time_s * 1e3:.3g} ms | "
          f"among BLAS work {plan.among_work_s * 1e3:.3g} ms "
          f"({plan.among_work_s / plan.time_s:.2f}× alone) | the same with the BLAS on one "
          f"thread {plan.among_work_blas1_s * 1e3:.3g} ms | serial njit among BLAS work "
          f"{plan.serial_among_work_s * 1e3:.3g} ms")
    print(f"{'':6s} load during the search: {plan.load.describe()}")

# %% [markdown]
# In your own program: hold the BLAS to one thread around the loop that calls the plan
# (threadpoolctl comes with hetlab).

# %%
p, a, wrk, omega, nn = EXAMPLES["himeno"].make_args(24, seed=2)
with threadpool_limits(limits=1, user_api="blas"):
    for _ in range(3):
        scale = np.linalg.norm(p)                 # the program's other NumPy/BLAS work
        gosa = fast_himeno(p, a, wrk, omega, nn)  # the plan, on its own threads
print("3 steps with the BLAS on one thread; residual finite:", bool(np.isfinite(gosa)))

# %% [markdown]
# ### Code that is not only loops: outlining
#
# Real functions print, time themselves and return dicts. numba compiles none of that, so such a
# function cannot be compiled as a whole — its loops often can. `search` then cuts each loop out
# into a function of its own, searches it like any function (blocks, GA, verification), and
# rewrites the original to call the loops' plans where the loops were, the rest running in
# Python as written. Here a gradient-descent fit reports every epoch with a formatted `print`
# and returns a dict; its epoch loop stays Python, the loops inside it are compiled:

# %%
def fit(X, y, epochs, lr):
    w = np.zeros(X.shape[1])
    losses = []
    for epoch in range(epochs):
        grad = np.zeros(X.shape[1])
        loss = 0.0
        for i in range(X.shape[0]):
            r = -y[i]
            for j in range(X.shape[1]):
                r += X[i, j] * w[j]
            loss += r * r
            for j in range(X.shape[1]):
                grad[j] += r * X[i, j]
        for j in range(X.shape[1]):
            w[j] -= lr * grad[j] / X.shape[0]
        losses.append(loss)
        print(f"epoch {epoch}: loss {loss:.4f}")
    return {"w": w, "losses": losses}


# %%
# NBVAL_IGNORE_OUTPUT
import contextlib  # noqa: E402
import io  # noqa: E402

X_fit = rng.random((2000, 8))
y_fit = X_fit @ rng.random(8)
with contextlib.redirect_stdout(io.StringIO()):  # the search runs fit a few times
    fit_plan = offload.search(fit, (X_fit, y_fit, 3, 0.5), budget=4, progress=False)
print(fit_plan.summary().splitlines()[0][:400])
for note in fit_plan.notes[1:]:
    print("note:", note[:300])
fit_plan.table()

# %% [markdown]
# The rewritten function (the loops' own variants follow it in `fit_plan.source()`):

# %%
# NBVAL_IGNORE_OUTPUT
print(fit_plan.source().split("\n\n# ")[0])

# %%
fast_fit = fit_plan.compile()
with contextlib.redirect_stdout(io.StringIO()) as printed:
    got = fast_fit(X_fit, y_fit, 4, 0.5)
want = fit(X_fit, y_fit, 4, 0.5)
print("same weights and losses:", np.allclose(got["w"], want["w"], rtol=1e-10)
      and np.allclose(got["losses"], want["losses"], rtol=1e-10),
      "| epochs printed:", len(printed.getvalue().splitlines()))

# %% [markdown]
# ## The GPU variant: fewer host↔device copies
#
# A GPU kernel needs its arrays in device memory. Copying them around every launch is simple and
# slow; *data-transfer reduction* (Yamato 2018) keeps an array on the device across consecutive
# offloaded nests when no host code in between uses it — copied in once, out once. `Transfers`
# counts the copies of one call; the counts come from running the variant (on a GPU, or in the
# simulator here), so they need no GPU to check.
#
# Jacobi-2d (3 time steps, both nests offloaded) keeps `A` and `B` on the device for the whole
# time loop. Himeno's residual nest is a reduction (`gosa += ss * ss`): on the GPU each thread
# sums into a local accumulator and folds it into a 1-element device array with one
# `cuda.atomic.add`, so both nests run on the device and `p`, `a`, `wrk` stay there for the
# whole time loop — only `gosa` travels, once each way per sweep.

# %%
def same(x, y):
    """Equal results: both None (in-place kernels) or allclose."""
    return (x is None and y is None) or bool(np.allclose(x, y))


for name in ("jacobi_2d", "himeno"):
    ex = EXAMPLES[name]
    loops = gpu_loops(offload.analyze(ex.fn))   # parallel loops, reductions (atomics)
    counts = {}
    for mode in ("naive", "reduced"):
        v = offload.transform(ex.fn, loops, target="cuda", transfers=mode)
        gpu_args, host_args = ex.make_args(), ex.make_args()       # same seed: equal inputs
        ok = same(v.compile()(*gpu_args), ex.fn(*host_args)) and all(
            same(g, h) for g, h in zip(gpu_args, host_args, strict=True))
        counts[mode] = (v.transfers.copies, v.transfers.bytes, ok)
    (n_copies, n_bytes, n_ok), (r_copies, r_bytes, r_ok) = counts["naive"], counts["reduced"]
    print(f"{name:9s} kernels {'+'.join(loops)}: per-launch {n_copies:2d} copies ({n_bytes} B) "
          f"→ reduced {r_copies:2d} copies ({r_bytes} B); results equal the original: "
          f"{n_ok and r_ok}")

# %% [markdown]
# The reduced Jacobi-2d: device copies made before the time loop and copied back after it.

# %%
print(offload.transform(EXAMPLES["jacobi_2d"].fn, ["L2", "L3", "L4", "L5"], target="cuda").source)

# %% [markdown]
# ## Mixed destinations: CPU, then GPU, then FPGA
#
# The 2020 paper tries the many-core CPU first, then the GPU, and the FPGA last — and only for
# nests of high *arithmetic intensity* (flops per byte of distinct array traffic), because an
# FPGA build takes hours. There is no board here: an FPGA candidate's nest becomes a
# Vitis-HLS-style C++ kernel that the FPGA emulator's C-simulation runs (so its result is
# verified like every candidate), and its time is **modeled** by the emulator's timing model
# (pipeline cycles at 100 MHz, m_axi bursts, register writes) — never measured. The n-body
# forces nest does ~15 flops per byte, well above the threshold of 2:

# %%
# NBVAL_IGNORE_OUTPUT
nb = EXAMPLES["nbody_forces"]
mixed = offload.search(nb.fn, nb.make_args(48), targets=["numba", "cupy", "fpga"], budget=2,
                       progress=False, ga=GAOptions(population=4, exhaustive=False),
                       measure=MeasureOptions(repeats=1, confirm=0))
mixed.destinations()

# %% [markdown]
# Each column says what a destination did with the nest, in the order tried; `fpga_s` is one
# kernel call's modeled time (`source` says so). At this size the board's launch alone (Python
# register writes, ~30 µs each) costs more than the CPU's whole loop, so the plan keeps the CPU.
# The generated kernel is kept on the plan all the same:

# %%
kernel = mixed.source("fpga")
print(kernel[kernel.index('extern "C"'):])   # after the header and the helper functions

# %% [markdown]
# ## What the analysis cannot do (yet)
#
# It is conservative: when unsure, sequential. Floyd–Warshall's `i`, `j` loops are parallel in
# truth but stay sequential. Array-element reductions (`y[j] += …` inside an `i` loop) and
# indirect writes (`hist[b] += 1`) stay *sequential* in the verdicts; on the CPU the report's
# `transform` line offers them privatized (one copy of the array per thread, summed after),
# on the GPU they run with atomics. A `while` loop or an unknown call makes its loops
# *unsupported*. Contraction recognition matches whole nests only when every statement fits
# the catalogue (or is a fused elementwise epilogue), and triangular bounds are handled exactly
# or left as loops; loops are interchanged and collapsed but not tiled. FPGA times are modeled
# only.
# On the shell: `hetlab offload path/to/file.py:function --targets numba,cupy,fpga`.
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 01.1 · Predict the verdicts before `analyze` runs
#
# Here is a function with four loops. Without running `offload.analyze` on it, say for each
# loop whether it is `"parallel"`, a `"reduction"` or `"sequential"`.

# %%
from hetlab.exercises import PUZZLE, check_parallel_saxpy, check_verdicts  # noqa: E402

print(inspect.getsource(PUZZLE))

# %%
def predict_verdicts():
    """Your prediction: {"L1": "parallel" | "reduction" | "sequential", ..., "L4": ...}."""
    raise NotImplementedError("your code here")


check_verdicts(predict_verdicts, raise_on_fail=False)

# %% [markdown]
# ### Exercise 01.2 · Write a loop the analysis can prove parallel
#
# Fill in `saxpy_loop(a, x, y, out)` so that it writes `out = a * x + y` **with a plain
# `for i in range(...)` loop** — one that `offload.analyze` proves parallel, so that it could
# be offloaded. The checker runs it on a few vectors and then analyzes it.

# %%
def saxpy_loop(a, x, y, out):
    """Write a * x + y into out, element by element, in place; return nothing."""
    raise NotImplementedError("your code here")


check_parallel_saxpy(saxpy_loop, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# Write your own loop function — a 2-D blur, a histogram, a prefix sum — and run
# `offload.analyze` on it: which loops are parallel, and which dependence pins the others?
# Then raise `budget` and the problem size in `offload.search` and watch where offloading starts
# to pay on your machine.
#
# ## Shutting down
#
# The plans keep compiled variants and their measured candidates. The cell below frees them;
# then choose **Kernel → Shut Down Kernel** (or **Shut Down** beside this notebook in the
# *Running Terminals and Kernels* panel) before opening the next notebook.

# %%
import gc  # noqa: E402

del mm_plan, him_plan, mixed, fast_matmul, fast_himeno, progress
print("freed; objects collected:", gc.collect() >= 0)
