# %% [markdown]
# # 06 · Scaling out: comparison sweeps on a Dask cluster
#
# **You will learn** how to hand a sweep (sizes × devices) to a Dask cluster instead of running
# it in the notebook's process, why two timings must never share a machine, and what happens to
# a sweep when a worker dies.
#
# **You need** hetlab and `dask[distributed]`. **Run time:** about 30 seconds on 2 CPU cores.
#
# Every unit of a comparison — one kernel × device × size — is independent: it generates its
# seeded case, measures, and checks its result against the reference. hetlab makes each unit a
# Dask task; Dask does the scheduling, retries and data movement.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np
from dask.distributed import Client, LocalCluster

import hetlab as hl

cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                       dashboard_address=":0", resources={"cpu-bench": 1})
client = Client(cluster)
print("dashboard:", client.dashboard_link)
client

# %% [markdown]
# ## One timing per machine
#
# Two measurements on one machine at once distort each other. Each unit therefore asks Dask for
# one `cpu-bench` (or `gpu`) resource; start **one** worker per machine with
# `--resources cpu-bench=1` (and one per GPU with `--resources gpu=1`), and a machine runs one
# timing at a time. The cluster above follows the rule: one worker process on the notebook's
# machine. The notebook itself also measures (the in-process comparison below), one sweep after
# the other, never both at once.

# %%
# the numpy reference only: the worker process then needs no compiled kernels (it stays small);
# a numba or cupy unit is scheduled the same way, with its own resource
sweep = dict(sizes=[1_000, 4_000], devices=["numpy"], repeats=3, progress=False)
local = hl.compare(hl.knn, **sweep)
remote = hl.compare(hl.knn, client=client, **sweep)
print("same verdicts as in-process:",
      np.array_equal(local["verified"].values, remote["verified"].values),
      np.array_equal(local["status"].values, remote["status"].values))

# %% [markdown]
# Each figure records where it was measured — the `host` and Dask `worker` coordinates:

# %%
# NBVAL_IGNORE_OUTPUT
remote[["host", "worker"]].to_dataframe()[["host", "worker"]]

# %%
# NBVAL_IGNORE_OUTPUT
remote.hetlab.table()

# %% [markdown]
# ## Nothing finished is lost
#
# If a worker dies mid-sweep, Dask reschedules its task on another worker; a unit that still
# fails is reported in the Dataset (`status = "failed: …"`) while the others are kept. With a
# `checkpoint` file every finished unit is written to disk as it completes, so an interrupted
# sweep resumes where it stopped:

# %%
# NBVAL_IGNORE_OUTPUT
import os
import tempfile

ckpt = os.path.join(tempfile.mkdtemp(), "knn-sweep.jsonl")
first = hl.compare(hl.knn, client=client, checkpoint=ckpt, **sweep)
ran_again = []
resumed = hl.compare(hl.knn, checkpoint=ckpt, callback=lambda *a: ran_again.append(a), **sweep)
print("units measured again on resume:", len(ran_again))

# %%
client.close()
cluster.close()

# %% [markdown]
# The offload search (notebook 01) scales out the same way:
# `offload.search(fn, args, client=client)` measures each GA generation's new candidates as
# tasks, with the same one-timing-per-machine rule, and a candidate lost with a worker is
# rescheduled instead of stopping the search.
#
# ## On a real cluster
#
# ```bash
# dask scheduler                                              # on the head node (port 8786)
# dask worker tcp://head:8786 --nthreads 1 --resources cpu-bench=1    # one per machine
# dask worker tcp://head:8786 --nthreads 1 --resources gpu=1          # one per GPU
# ```
# then `hl.compare(..., client=Client("tcp://head:8786"))`. On an HPC scheduler,
# [dask-jobqueue](https://jobqueue.dask.org) starts the workers as batch jobs
# (`SLURMCluster(cores=1, processes=1, worker_extra_args=["--resources", "cpu-bench=1"])`).
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 06.1 · What a resumed sweep still runs
#
# A sweep's units are `(size, device)` pairs, run size by size with the devices in the given
# order. Fill in `units_to_run(sizes, devices, done)`: the units still to run when `done` (read
# back from a checkpoint) lists the finished ones — in sweep order, ignoring entries of `done`
# that belong to another sweep.

# %%
from hetlab.exercises import check_resources_for, check_units_to_run  # noqa: E402


def units_to_run(sizes, devices, done):
    """Sizes, devices, finished (size, device) units → the units left, in sweep order."""
    raise NotImplementedError("your code here")


check_units_to_run(units_to_run, raise_on_fail=False)

# %% [markdown]
# ### Exercise 06.2 · One timing per machine
#
# Fill in `resources_for(device, advertised)`: the Dask resource a timing unit on `device`
# asks for — `{"gpu": 1}` for the GPU backend (`"cupy"`), `{"cpu-bench": 1}` for every other —
# or `None` when no worker advertises that resource (`advertised` is the set of resource names
# the workers offer), since a task asking for an absent resource would wait forever.

# %%
def resources_for(device, advertised):
    """Device name, set of advertised resource names → {name: 1} or None."""
    raise NotImplementedError("your code here")


check_resources_for(resources_for, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# Time the same sweep with `repeats=20` in-process and on the cluster; with `benchmarks/distributed.py`
# measure what one task costs on loopback.
#
# ## Shutting down
#
# The cell below frees the sweeps' Datasets (the cluster is closed above); then choose **Kernel → Shut Down Kernel** (or **Shut Down**
# beside this notebook in the *Running Terminals and Kernels* panel) before opening the next
# notebook.

# %%
import gc  # noqa: E402

del local, remote, first, resumed, client, cluster
print("freed; objects collected:", gc.collect() >= 0)
