# %% [markdown]
# # 04 · Point clouds: farthest point sampling and neighbours on every device
#
# **You will learn** why farthest point sampling (FPS) and k-nearest-neighbour search (kNN)
# dominate the run time of point-cloud transformers, how a *distribution-aware* FPS avoids most of
# the work while returning exactly the same samples, and how the same call runs on the CPU
# (NumPy, Numba), an NVIDIA GPU (CuPy) and an FPGA overlay.
#
# **You need** hetlab (`pip install -e ".[lab]"`); a GPU or FPGA board is optional — devices that
# are not here are listed with the reason. **Run time:** under a minute on 2 CPU cores.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np

import hetlab as hl

hl.devices()

# %% [markdown]
# ## The PTrAcc story
#
# A Point Transformer block downsamples its input with a *transition-down* layer: FPS picks
# `n_samples` well-spread centres, then kNN gathers each centre's `k` neighbours. PTrAcc (a
# point-transformer accelerator) measured these two steps as most of the network's time on GPUs:
# FPS is sequential over samples (each pick depends on the previous one) and, done naively, reads
# every point at every step — `n × n_samples` distance updates. Two ideas fix that:
#
# * **distribution-aware FPS** (as in QuickFPS and PTrAcc): sort points into spatial buckets with
#   bounding boxes; a bucket whose box is farther from the new sample than its points' current
#   distances cannot change and is skipped. Exact — same indices as the naive loop.
# * **fusion**: FPS already visits the neighbourhoods kNN needs; doing both in one pass over a
#   shared spatial structure saves a second full traversal.
#
# Let us build a clustered cloud (LiDAR-like uneven density) with a fixed seed.

# %%
rng = np.random.default_rng(2024)
points = hl.make_cloud(20_000, rng, kind="clustered")
print(points.shape, points.dtype)

# %% [markdown]
# `hl.fps` runs the NumPy reference by default; `device="numba"` runs the distribution-aware,
# multithreaded version. Both return the same indices — ties go to the lowest index.

# %%
ref = hl.fps(points, 512)
fast = hl.fps(points, 512, device="numba")
print("first picks:", ref[:8])
print("numba equals the reference:", np.array_equal(ref, fast))

# %% [markdown]
# The samples spread over the whole cloud, dense blobs and sparse background alike
# (drag to rotate):

# %%
# NBVAL_IGNORE_OUTPUT
hl.viz.cloud3d(points, highlight=ref, title="512 FPS samples (red) of a clustered cloud")

# %% [markdown]
# ## Neighbours: kNN, ball query and the fused transition-down
#
# `hl.knn` returns indices and squared distances sorted nearest first; `hl.ball_query` the
# PointNet++ grouping (first `k` points inside a radius); `hl.fps_knn` both steps of the
# transition-down at once.

# %%
centres, nbr, d2 = hl.fps_knn(points, 512, 16, device="numba")
idx_ref, d2_ref = hl.knn(points, points[ref], 16)
print("fused centres equal FPS:", np.array_equal(centres, ref))
print("fused neighbours equal kNN:", np.array_equal(nbr, idx_ref) and np.array_equal(d2, d2_ref))
print(f"neighbourhood radius (median of the 16th distance): {np.sqrt(np.median(d2[:, -1])):.4f}")
groups = hl.ball_query(points, points[ref], radius=0.15, k=32, device="numba")
hits = [len(np.unique(row)) for row in groups]
print("ball query shape:", groups.shape, f"| mean hits per ball: {np.mean(hits):.1f} of 32")

# %% [markdown]
# ## A live comparison across the devices found here
#
# `hl.compare` runs every device on the same seeded case, times the compute apart from
# host↔device transfers and from the first (JIT-compiling) call, and checks every result against
# the NumPy reference. Devices that are absent appear with the reason.

# %%
# NBVAL_IGNORE_OUTPUT
ds = hl.compare(hl.fps, sizes=[2_000, 20_000], devices=["numpy", "numba", "cupy", "fpga"],
                repeats=3, include_recorded=True)
ds.hetlab.table()

# %% [markdown]
# Every unit that ran returned exactly the reference's samples; the others say why they did not
# run (the FPGA overlay holds at most 16,384 points on chip). Rows named "… · recorded on …"
# are replayed from the files in `data/recorded/` (machine and date in the name, `source =
# "recorded"`, dotted in charts): measured on that machine, not on yours. The CPU and
# FPGA-emulator rows of this run:

# %%
here = ds.sel(device=["numpy", "numba", "fpga"])
for (device, size), status in here["status"].to_series().items():
    verdict = "verified" if ds["verified"].sel(device=device, size=size) else status[:60]
    print(f"{device:6s} {size:>6}: {verdict}")

# %%
# NBVAL_IGNORE_OUTPUT
ds.hetlab.plot("time_s") + ds.hetlab.plot("throughput")

# %% [markdown]
# The Dataset keeps everything needed to reproduce the figure — the machine, versions, seed, and
# whether each figure was measured or modeled — and saves as netCDF:

# %%
# NBVAL_IGNORE_OUTPUT
hl.save(ds, "fps-compare.nc")
print(sorted(k for k in ds.attrs if k.startswith(("cpu", "version"))))

# %% [markdown]
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 04.1 · Ball query
#
# Fill in `my_ball_query(points, centers, radius, k)`, PointNet++'s grouping: for each centre,
# the first `k` points **in index order** whose squared distance is strictly below `radius²`;
# a row with fewer hits is padded with its first hit, a row with none is all `-1`. Once it
# passes, the checker times it beside hetlab's NumPy and Numba versions.

# %%
from hetlab.exercises import check_ball_query, check_knn  # noqa: E402


def my_ball_query(points, centers, radius, k):
    """(n, 3) points, (m, 3) centres, radius, k → (m, k) int64 point indices."""
    raise NotImplementedError("your code here")


check_ball_query(my_ball_query, raise_on_fail=False)

# %% [markdown]
# ### Exercise 04.2 · Brute-force kNN
#
# Fill in `my_knn(points, queries, k)`: for each query, the indices of its `k` nearest points
# and their squared distances, nearest first, equal distances to the lower index — what
# `hl.knn` returns. Then compare your time with hetlab's.

# %%
def my_knn(points, queries, k):
    """(n, 3) points, (m, 3) queries, k → (indices (m, k), squared distances (m, k))."""
    raise NotImplementedError("your code here")


check_knn(my_knn, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# * Raise the sizes to `[10_000, 100_000]` and watch the NumPy/Numba gap grow: the naive loop
#   does `n × n_samples` work, the bucketed one far less.
# * Compare `kind="uniform"` with `kind="clustered"`: which one lets FPS skip more buckets?
# * From a shell: `hetlab bench knn --sizes 10000,100000 --devices numpy,numba`.
#
# ## Shutting down
#
# The cell below frees the cloud, the neighbour arrays and the comparison; then choose **Kernel → Shut Down Kernel** (or **Shut Down**
# beside this notebook in the *Running Terminals and Kernels* panel) before opening the next
# notebook.

# %%
import gc  # noqa: E402

del points, ref, fast, centres, nbr, d2, idx_ref, d2_ref, groups, ds, here
print("freed; objects collected:", gc.collect() >= 0)
