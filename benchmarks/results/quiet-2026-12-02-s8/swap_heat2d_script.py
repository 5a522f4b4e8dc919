"""The swapped-names case (u, new = new, u) searched once: run from the repo root,
PYTHONPATH=. python benchmarks/results/quiet-2026-12-02-s8/swap_heat2d_script.py"""
import os

import numpy as np

from hetlab import offload
from tests.test_offload_swap import heat_2d_swap

g = np.random.default_rng(0)
args = (10, g.random((1000, 1000)), g.random((1000, 1000)))
plan = offload.search(heat_2d_swap, args, targets=("numba",), budget=16, progress=False)
print(plan.summary())
print("load average after:", os.getloadavg())
