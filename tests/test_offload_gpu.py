"""The cuda variant: generated kernels and transfer plan; run in numba's CUDA simulator in a
subprocess (NUMBA_ENABLE_CUDASIM must be set before numba is imported) on small sizes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload import MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.targets.cuda import gpu_loops

pytest.importorskip("numba")

SIM_SCRIPT = r'''
import json
from hetlab import offload
from hetlab.offload import MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.targets.cuda import gpu_loops
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

out = {}
for name in %(names)r:
    ex = EXAMPLES[name]
    rep = offload.analyze(ex.fn)
    args = ex.make_args(6)
    w = copy_args(args)
    want = outputs_of(ex.fn(*w), w)
    row = {}
    for mode in ("naive", "reduced"):
        v = offload.transform(rep, gpu_loops(rep), target="cuda", transfers=mode)
        w = copy_args(args)
        ok, err = verify(outputs_of(v.compile()(*w), w), want)
        row[mode] = [ok, v.transfers.copies, v.transfers.bytes]
    out[name] = row
ex = EXAMPLES["jacobi_1d"]
plan = offload.search(ex.fn, ex.make_args(12), targets=["cuda", "numba"], budget=4,
                      progress=False,
                      measure=MeasureOptions(repeats=1, timeout_factor=200.0))
cuda = plan.alternatives["cuda"]
out["search"] = {"targets": sorted(plan.alternatives), "notes": plan.notes,
                 "cuda_loops": cuda.loops, "cuda_verified": cuda.verified,
                 "transfers": cuda.transfers,
                 # a timeout or a pruned candidate is no wrong result (the simulator is slow)
                 "wrong": [m.status for m in cuda.measurements.values()
                           if m.status == "wrong" or m.status.startswith("failed")]}
print("RESULT " + json.dumps(out))
'''

NAMES = ["jacobi_2d", "matmul", "lu", "heat_3d", "covariance", "blur_rows", "transpose",
         "axpy", "nbody_forces"]


@pytest.fixture(scope="module")
def simulated():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run([sys.executable, "-c", SIM_SCRIPT % {"names": NAMES}],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("name", NAMES)
def test_cuda_variant_matches_the_original_in_the_simulator(simulated, name):
    naive, reduced = simulated[name]["naive"], simulated[name]["reduced"]
    assert naive[0] and reduced[0]
    assert reduced[1] <= naive[1] and reduced[2] <= naive[2]


def test_transfer_reduction_over_time_steps(simulated):
    naive, reduced = simulated["jacobi_2d"]["naive"], simulated["jacobi_2d"]["reduced"]
    # 3 time steps × 2 nests × (2 in + 1 out) per launch, against A and B in once, out once
    assert naive[1] == 18 and reduced[1] == 4
    assert reduced[2] * 4.5 == naive[2]


def test_search_with_cuda_target_in_the_simulator(simulated):
    s = simulated["search"]
    assert s["targets"] == ["cuda", "numba"]
    assert any("simulator" in n for n in s["notes"])
    assert s["cuda_verified"] and not s["wrong"]
    if s["cuda_loops"]:
        assert s["transfers"]["reduced"]["copies"] < s["transfers"]["naive"]["copies"]


def test_cuda_source_shape_without_a_gpu():
    rep = offload.analyze(EXAMPLES["jacobi_2d"].fn)
    assert gpu_loops(rep) == ["L2", "L3", "L4", "L5"]
    src = offload.transform(rep, ["L2", "L4"], target="cuda").source
    assert src.count("@cuda.jit") == 2 and "cuda.grid(1)" in src
    assert src.count("_rt.to_device(") == 2 and src.count("_rt.to_host(") == 2
    two_d = offload.transform(rep, ["L2", "L3"], target="cuda").source
    assert "cuda.grid(2)" in two_d
    naive = offload.transform(rep, ["L2", "L4"], target="cuda", transfers="naive").source
    assert "_d_A" not in naive and "pass" not in naive
    assert naive.count("_rt.to_device(") == 4  # A and B at each of the two launch sites
    with pytest.raises(hl.InvalidInputError, match=r"sequential.*the cuda target offloads"):
        offload.transform(EXAMPLES["prefix_sum"].fn, ["L1"], target="cuda")


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", reason="simulator is on")
def test_search_skips_cuda_without_a_gpu():
    from hetlab.core.registry import get_backend

    if get_backend("cupy").why_not() is None:
        pytest.skip("a GPU is present")
    ex = EXAMPLES["axpy"]
    plan = offload.search(ex.fn, ex.make_args(), targets=["numba", "cuda"], budget=2,
                          progress=False, measure=MeasureOptions(repeats=1))
    assert plan.target == "numba" and any(n.startswith("cuda: skipped") for n in plan.notes)
    assert np.isfinite(plan.time_s)
