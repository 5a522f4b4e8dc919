# %% [markdown]
# # 00 · A tour of hetlab
#
# **You will learn** what hetlab is, which devices this machine offers, how one kernel call runs
# on each of them, and how to read a comparison: compute time, transfer time, correctness and
# whether a figure was measured, modeled or recorded.
#
# **You need** hetlab with its lab extras (`make lab` sets everything up). A GPU or an FPGA board
# is optional. **Run time:** about 30 seconds on 2 CPU cores.

# %% [markdown]
# ## The devices
#
# hetlab has one kernel API over four backends: `numpy` (the reference every other backend is
# checked against), `numba` (multithreaded CPU), `cupy` (NVIDIA GPU) and `fpga` (PYNQ overlays on
# a board, or an emulator whose timings are *modeled*). `hl.devices()` says which ones run here,
# why the others don't, and their peak figures (measured here, or from a datasheet).

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np

import hetlab as hl

hl.devices()

# %% [markdown]
# ## One call, any device
#
# A kernel runs where its input lives unless you ask for a device. Asking for a device that is
# not here is an error that says why — hetlab never falls back silently.

# %%
rng = np.random.default_rng(0)
points = hl.make_cloud(10_000, rng)
samples = hl.fps(points, 256)                    # the NumPy reference
same = hl.fps(points, 256, device="numba")       # multithreaded CPU
print(samples[:6], np.array_equal(samples, same))

# %%
for device in hl.backend_names():
    try:
        hl.fps(points, 4, device=device)
        print(f"{device:6s} ran")
    except hl.HetlabError as exc:
        print(f"{device:6s} {type(exc).__name__}")

# %% [markdown]
# ## A comparison, live
#
# The dashboard runs `hl.compare` on the devices you tick: the same seeded case everywhere,
# warm-up first (JIT compilation reported apart), device synchronization around every timed call,
# transfers timed apart, and every result checked against the reference. Unavailable devices are
# greyed out with their reason. The chart uses log axes; modeled figures are dashed and recorded
# ones dotted. Press **Run** again after changing the settings.

# %%
# NBVAL_IGNORE_OUTPUT
dash = hl.widgets.Comparison("fps", sizes="1000,10000", include_recorded=True)
dash.run()
dash

# %% [markdown]
# The numbers behind the chart are an `xarray.Dataset` with dims `(device, size, repeat)` and its
# provenance in `attrs`; `dash.dataset.hetlab.table()` shows it as a table and `hl.save` writes
# it as netCDF.

# %%
ds = dash.dataset
live = ds.sel(device=ds["source"] == "measured", size=[1_000, 10_000])
print(dict(live.sizes))
print("verified:", {d: bool(v) for d, v in live["verified"].all("size").to_series().items()})

# %% [markdown]
# ## Exercises
#
# Each exercise is a function for you to fill in — it starts as a stub that raises
# `NotImplementedError("your code here")` — and a checker from `hetlab.exercises`. The checker
# runs your function on small hand-made inputs first and stops at the first wrong one with a
# **hint**: which input, what was expected, what came back, and what to look at. Where speed is
# the point it then runs `hl.check`'s generated cases and shows your time beside hetlab's.
# Below, each checker is called with `raise_on_fail=False` so the stub's verdict is shown rather
# than raised; run the cell again after filling in the function. Solutions are in
# `notebooks/solutions/` — try first.
#
# ### Exercise 00.1 · Your own FPS
#
# Fill in `my_fps`: start from `start`, then repeatedly pick the point farthest from all points
# picked so far (lowest index on ties, never the same point twice).

# %%
from hetlab.exercises import check_fastest_verified, check_fps


def my_fps(points, n_samples, start=0):
    """(n, 3) float32 points → (n_samples,) indices of farthest point sampling."""
    raise NotImplementedError("your code here")


check_fps(my_fps, raise_on_fail=False)

# %% [markdown]
# ### Exercise 00.2 · Read a comparison
#
# A comparison Dataset holds `time_s` with dims `(device, size, repeat)` and `verified` with
# dims `(device, size)`. Fill in `fastest_verified(ds, size)`: the name of the device with the
# least *median* time over the repeats among the devices whose result was verified at that
# size, or `None` when none was. Try it on the dashboard's Dataset above once it passes:
# `fastest_verified(dash.dataset, 10_000)`.

# %%
def fastest_verified(ds, size):
    """Comparison Dataset, size → name of the fastest verified device, or None."""
    raise NotImplementedError("your code here")


check_fastest_verified(fastest_verified, raise_on_fail=False)

# %% [markdown]
# ## Where to go next
#
# * **01 · Offload extraction** — plain Python loops → dependence verdicts → `prange`/CUDA
#   variants → a genetic search on measured, verified times.
# * **02 · Quantization** — group-wise INT8/4/3/2 formats, their true bits per weight, MiniLM's
#   error vs bits, mixed precision, MBQ and GPTQ calibration, a fused W4 GEMV on the roofline.
# * **03 · Sparse** — formats and bytes per nonzero, the SpMV roofline, sparse einsum, sparse
#   3-D convolution with a measured dataflow choice.
# * **04 · Point clouds** — distribution-aware FPS, kNN, ball query and the fused
#   transition-down.
# * **05 · FPGA overlays** — registers, buffers, cache coherency and the modeled clock.
# * **06 · Scaling out** — comparison sweeps on a Dask cluster, checkpoints and resumption.
# * **07 · Attention** — why decode is memory-bound and prefill compute-bound, online softmax,
#   the unified-max trick, PARO's reordered block-sparse INT8/INT4 attention.
# * **08 · Which device pays?** — break-even sizes, `device="auto"` against the oracle, and
#   the time/energy front (CPU energy modeled, and labelled so).
#
# ## Shutting down
#
# This notebook's kernel keeps the cloud and the dashboard's Dataset in memory until it stops.
# The cell below frees them; then choose **Kernel → Shut Down Kernel** (or, in the *Running
# Terminals and Kernels* panel on the left, **Shut Down** beside this notebook) before opening
# the next one, so that several notebooks never hold memory at once.

# %%
import gc  # noqa: E402

del dash, ds, live, points, samples, same
print("freed; objects collected:", gc.collect() >= 0)
