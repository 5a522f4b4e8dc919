# %% [markdown]
# # 08 · Which device pays?
#
# **You will learn** when moving work to another device starts to pay: the break-even size of a
# memory-bound kernel (`spmv`) and a compute-bound one (`gemm_q`) measured on this machine, what
# one host↔device transfer costs counted in kernel calls, how `device="auto"` decides (a
# calibrated cost model and a risk margin) and how often it is right against the measured best,
# and the time/energy front of a comparison.
#
# **You need** notebook 00 (devices, `hl.compare`) and 03 (SpMV). No GPU or board: absent
# devices are said so, never invented. **Run time:** about 30 seconds on 2 CPU cores.

# %% [markdown]
# ## Setting up
#
# Three settings come before `import hetlab`. Numba's **workqueue** threading layer, and one
# BLAS thread for the NumPy reference (the one thread its device declares): on a shared 2-core
# machine OpenMP's and OpenBLAS's sleeping workers can wake a scheduler slice (~10 ms) late on
# whole runs of calls, which no cost model can predict (`docs/auto.md` has the measured
# effect). And a **temporary calibration cache**: `device="auto"` keeps its calibrated model in
# `hl.auto.cache_path()` (by default under `~/.cache/hetlab`, one file per machine and library
# version); this notebook calibrates into a throw-away folder so it never reuses or overwrites
# yours.

# %%
import os
import tempfile

os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
CACHE = tempfile.mkdtemp(prefix="hetlab-08-")
os.environ["HETLAB_CACHE"] = CACHE

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import hetlab as hl  # noqa: E402
from hetlab.bench import case_args, measure_unit  # noqa: E402
from hetlab.core.registry import get_kernel  # noqa: E402

print("calibration cache in the temporary folder:", str(hl.auto.cache_path()).startswith(CACHE))

# %% [markdown]
# ## 1 · The break-even size, measured
#
# "Offloading" here is moving a call from the NumPy reference (one thread, where the data
# lives) to Numba (compiled, all cores). A call costs a fixed part (dispatch, waking threads,
# on a GPU a launch and the copies) plus a part that grows with the size; the device with the
# larger fixed part and the smaller slope pays from some size on — the **break-even size**.
#
# `fastest` times one case: 2 warm-up calls, then the fastest of 5 (on a shared machine other
# work only ever adds time). The arithmetic intensity (flops per byte moved, from the kernel's
# declared cost) says which kind of kernel each one is.

# %%
def fastest(kernel, device, size, repeats=5):
    """Fastest of `repeats` warm calls of the generated case (s); NaN if it did not run."""
    unit = measure_unit(kernel, device, size, seed=1, repeats=repeats, warmup=2)
    return min(unit.times_s) if unit.status == "ok" else float("nan")


def intensity(kernel, size):
    cost = get_kernel(kernel).cost(case_args(kernel, size, 1))
    return cost.flops / cost.bytes


SWEEPS = {"spmv": [32, 128, 512, 2048, 8192, 32768], "gemm_q": [16, 32, 64, 128, 256]}
rows = []
for kernel, sizes in SWEEPS.items():
    for size in sizes:
        t_np, t_nb = fastest(kernel, "numpy", size), fastest(kernel, "numba", size)
        rows.append({"kernel": kernel, "size": size, "flop/byte": intensity(kernel, size),
                     "numpy_s": t_np, "numba_s": t_nb, "numba speed-up": t_np / t_nb})
breakeven = pd.DataFrame(rows)
print("flop per byte, largest size:",
      {k: round(intensity(k, s[-1]), 2) for k, s in SWEEPS.items()})

# %%
# NBVAL_IGNORE_OUTPUT
breakeven.style.format({"numpy_s": "{:.3g}", "numba_s": "{:.3g}", "flop/byte": "{:.2f}",
                        "numba speed-up": "{:.2f}×"}).hide(axis="index")


# %% [markdown]
# The break-even size is the smallest measured size from which Numba is faster at that size and
# every larger one (a noisy win below a loss does not count).

# %%
# NBVAL_IGNORE_OUTPUT
def measured_break_even(table):
    """Smallest size from which the speed-up stays > 1; None if the last size loses."""
    wins = (table["numba speed-up"] > 1).to_numpy()
    if not wins[-1]:
        return None
    first = len(wins) - np.argmin(wins[::-1]) if not wins.all() else 0
    return int(table["size"].to_numpy()[first])


for kernel in SWEEPS:
    one = breakeven[breakeven["kernel"] == kernel]
    n = measured_break_even(one)
    unit = get_kernel(kernel).size_unit
    if n is None:
        print(f"{kernel}: numba never pays within the measured sizes")
    elif n == one["size"].iloc[0]:
        print(f"{kernel}: numba pays from the smallest size measured ({n} {unit}) — the "
              f"break-even is below it")
    else:
        print(f"{kernel}: numba pays from {n} {unit} on (measured here, now)")

# %% [markdown]
# **And a GPU?** This machine has none (`hl.devices()` says why). A GPU's break-even can be read
# from a *recording* of one (`data/recorded`), made on another machine and labelled with it: a
# GPU call on host data pays two copies, so its time is the recorded kernel time plus the
# recorded transfers. The cell below looks for GPU recordings of these two kernels and says
# plainly when none is committed.

# %%
from hetlab.recorded import recordings  # noqa: E402

for kernel in SWEEPS:
    found = False
    for rec in recordings(kernel):
        gpus = [str(d) for d, kind in zip(rec["device"].values, rec["kind"].values,
                                          strict=True) if kind == "gpu"]
        if not gpus or "numpy" not in rec["device"].values:
            continue
        found = True
        med = rec["time_s"].median("repeat")
        for gpu in gpus:
            g = (med.sel(device=gpu) + rec["transfer_in_s"].sel(device=gpu)
                 + rec["transfer_out_s"].sel(device=gpu))
            pays = (g < med.sel(device="numpy")).values
            sizes = rec["size"].values
            first = next((int(sizes[i]) for i in range(len(sizes)) if pays[i:].all()), None)
            print(f"{kernel} on {gpu} (recorded on {rec.attrs.get('host', '?')}, "
                  f"{rec.attrs.get('date', '?')}): pays from {first} (None: not in the recording)")
    if not found:
        print(f"{kernel}: no GPU recording is committed in data/recorded — no GPU break-even "
              f"is stated here (run `make gpu-check` on a machine with a GPU to add one)")

# %% [markdown]
# ## 2 · What a transfer costs, in kernel calls
#
# A device that does not hold the data pays a copy in and a copy out on every call. Counting
# that copy in **calls of the kernel on the CPU** makes the price concrete. Without a GPU and
# without a GPU recording (the machine that built this notebook had neither: see above), the
# host↔device figures at hand are the **FPGA emulator's**: its copies are *modeled* from the
# board's DMA figures (`overlays/spmv/overlay.toml`), not measured; the CPU call beside them is
# measured.

# %%
# NBVAL_IGNORE_OUTPUT
for size in (2048, 32768):
    board = measure_unit("spmv", "fpga", size, seed=1, repeats=1)
    copies = board.transfer_in_s + board.transfer_out_s
    cpu = fastest("spmv", "numba", size)
    print(f"spmv, {size} rows: one round of copies to the board {copies * 1e6:.0f} µs "
          f"(modeled) = {copies / cpu:.1f} numba calls of the same case "
          f"({cpu * 1e6:.0f} µs each, measured)")

# %% [markdown]
# With a GPU present (or recorded) `hl.explain` shows its modeled copies the same way, from the
# GPU's measured host↔device bandwidth and latency (`transfer_s` column); resident device
# arrays (CuPy arrays already on the GPU) pay none.
#
# ## 3 · `device="auto"` against the oracle
#
# `device="auto"` predicts each device's time from a model calibrated on this machine (a short
# run per kernel: sizes 16, 32, 64, … on every device), and leaves the device the data lives on
# only when the predicted gain beats the model's own error measured on held-out sizes (capped: a
# device predicted more than √1.25 ≈ 1.12× faster is always taken). The calibration below is
# limited to two kernels and small sizes so the notebook stays quick.

# %%
# NBVAL_IGNORE_OUTPUT
fits = hl.auto.calibrate(["spmv", "gemv_q"], budget_s=0.003, max_size=2**14)
{k: {d: f"margin ±{np.expm1(f.sigma):.0%}, overhead {f.overhead_s * 1e6:.1f} µs"
     for d, f in v.items()} for k, v in fits.items()}

# %% [markdown]
# `hl.explain` shows the numbers behind one choice, and `device="auto"` gives the reference's
# answer wherever it runs:

# %%
# NBVAL_IGNORE_OUTPUT
case = case_args("spmv", 20_000, 2)          # a generated power-law matrix and a vector
A, x = case["A"], case["x"]
hl.explain(hl.spmv, A, x)

# %%
y = hl.spmv(A, x, device="auto")
error, ok = get_kernel("spmv").verified(y, hl.spmv(A, x))   # the kernel's own tolerance
print("auto's answer matches the reference (float32 sums in another order):", ok)

# %% [markdown]
# The oracle is the measured best device of each case. The sweep uses sizes *between* the
# calibration's (×2) grid and another seed, so auto is judged on cases it has not seen. Regret is
# the time of auto's pick over the best time (1.00: auto picked the best).

# %%
# NBVAL_IGNORE_OUTPUT
from hetlab.auto.chooser import decide, predict  # noqa: E402

verdicts = []
for kernel, sizes in {"spmv": [40, 320, 2560], "gemv_q": [40, 160, 640]}.items():
    spec = get_kernel(kernel)
    for size in sizes:
        times = {d: fastest(kernel, d, size) for d in ("numpy", "numba")}
        pick, why = decide(predict(spec, case_args(kernel, size, 1), "host", fits[kernel]),
                           "host")
        best = min(times, key=times.get)
        verdicts.append({"kernel": kernel, "size": size, "auto": pick, "best": best,
                         "regret": times[pick] / times[best], "why": why})
oracle = pd.DataFrame(verdicts)
print(f"auto picked the best in {np.mean(oracle['regret'] <= 1.0):.0%} of {len(oracle)} cases; "
      f"worst regret {oracle['regret'].max():.2f}×")
oracle.style.format({"regret": "{:.2f}×"}).hide(axis="index")

# %% [markdown]
# The full evaluation over every kernel family is `python benchmarks/auto_device.py`.
#
# ## 4 · Energy beside time
#
# `hl.compare(..., energy=True)` adds joules per call. Where a counter exists it is read
# (NVML on NVIDIA GPUs, RAPL on CPUs that expose it); this machine exposes none, so **the CPU
# energy here is modeled** — busy threads × a per-thread power share, an estimate — and the
# Dataset, the table and the chart all say so. A point on the **Pareto front** is one no other
# device beats in both time and energy.

# %%
ds = hl.compare(hl.gemm_q, sizes=[64, 256], devices=["numpy", "numba"], repeats=3,
                energy=True, progress=False)
print(ds.attrs["energy_note"])
print("energy sources:", sorted(set(ds["energy_source"].values.ravel().tolist())))

# %%
# NBVAL_IGNORE_OUTPUT
front = ds.hetlab.pareto("time_s", "energy_j")
front.drop(columns="energy_how")

# %%
# NBVAL_IGNORE_OUTPUT
ds.hetlab.pareto_plot()

# %% [markdown]
# In this model Numba's two busy threads draw twice NumPy's one: Numba is on the front wherever
# it is faster, and it pushes NumPy off the front only where it is more than twice as fast.
# With real counters the front can move — that is why every figure carries its source.
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker that stops at the first wrong case
# with a hint. The checkers are called with `raise_on_fail=False`, so the stub's verdict is
# shown, not raised.
#
# ### Exercise 08.1 · Predict the break-even size
#
# Fill in `break_even(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s)`: each side
# costs `overhead + slope · n` seconds per call of size `n` (the cost model's fixed part and
# slope). Return the smallest integer `n >= 1` at which the device is **strictly** faster, or
# `None` if it never is.

# %%
def break_even(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s):
    """Two linear cost models → smallest size from which the device pays, or None."""
    raise NotImplementedError("your code here")


from hetlab.exercises import check_break_even, check_pareto_names  # noqa: E402

check_break_even(break_even, raise_on_fail=False)

# %% [markdown]
# ### Exercise 08.2 · Pick the Pareto front from a table
#
# Fill in `pareto_names(rows)`: `rows` is a list of `(device, time_s, energy_j)`; return the
# devices no other row beats — a row is beaten by one at least as good in both figures and
# better in one — in the order of `rows`.

# %%
def pareto_names(rows):
    """[(device, time_s, energy_j), ...] → devices on the time/energy front, in order."""
    raise NotImplementedError("your code here")


check_pareto_names(pareto_names, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# Run `python benchmarks/auto_device.py --quick` and then with `--threading-layer default`:
# how do the best picks and the worst regret move? Price the resources with
# `hl.compare(hl.gemm_q, sizes=[256], energy=True, objective={"thread": 1.0})` and read
# `ds["pick"]`.
#
# ## Shutting down
#
# The cell below frees the matrices, the Datasets and the temporary calibration cache; then
# choose **Kernel → Shut Down Kernel** (or **Shut Down** beside this notebook in the *Running
# Terminals and Kernels* panel) before opening the next notebook.

# %%
import gc  # noqa: E402
import shutil  # noqa: E402

del A, x, y, case, ds, front, breakeven, oracle, fits
shutil.rmtree(CACHE, ignore_errors=True)   # the temporary calibration cache
print("freed; objects collected:", gc.collect() >= 0)
