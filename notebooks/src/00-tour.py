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
# ## Where to go next
#
# * **04 · Point clouds** — distribution-aware FPS, kNN and the fused transition-down.
# * More notebooks join the series as their kernel families land: offload extraction,
#   quantization, sparse algebra, FPGA overlays, scaling out.
#
# ## Try it: write your own FPS
#
# Fill in `my_fps` below — start from `start`, then repeatedly pick the point farthest from all
# points picked so far (lowest index on ties, never the same point twice). `hl.check` runs it on
# generated clouds against the reference and shows its speed beside hetlab's.

# %%
def my_fps(points, n_samples, start=0):
    dist = np.full(len(points), np.inf, dtype=points.dtype)
    picked = [start]
    for _ in range(n_samples - 1):
        d = points - points[picked[-1]]
        dist = np.minimum(dist, (d * d).sum(axis=1))
        dist[picked] = -1
        picked.append(int(np.argmax(dist)))
    return np.array(picked)


report = hl.check(my_fps, hl.fps, sizes=(1, 2, 17, 300), against=[])
print(report.passed)

# %%
# NBVAL_IGNORE_OUTPUT
hl.check(my_fps, hl.fps)
