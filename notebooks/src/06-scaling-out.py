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

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
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
# timing at a time. Here both workers live on the notebook's machine, so their timings *can*
# overlap — fine for a demonstration, not for a paper.

# %%
sweep = dict(sizes=[1_000, 4_000], devices=["numpy", "numba"], repeats=3, progress=False)
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
# ## Try it
#
# Time the same sweep with `repeats=20` in-process and on the cluster; with `benchmarks/distributed.py`
# measure what one task costs on loopback.
