"""GPU reductions: scalar ``+``/min/max reductions and array-element updates (``h[b] += 1``)
as numba.cuda kernels with atomics, run in numba's CUDA simulator (a subprocess) against the
original function; the generated kernels compile to PTX where a CUDA toolkit is present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.targets.cuda import gpu_loops, gpu_offloadable
from tests.cudasim import nvvm_or_skip, run_cases_under_simulator

numba = pytest.importorskip("numba")


def test_reduction_cases_in_the_cuda_simulator():
    run_cases_under_simulator(Path(__file__).with_name("_offload_gpu_reduction_cases.py"))


def test_which_loops_the_gpu_can_take():
    assert gpu_loops(offload.analyze(EXAMPLES["dot"].fn)) == ["L1"]
    assert gpu_loops(offload.analyze(EXAMPLES["histogram"].fn)) == ["L1"]
    assert gpu_loops(offload.analyze(EXAMPLES["matmul"].fn)) == ["L1", "L2", "L3"]
    # recurrences and carried scalars stay off the GPU
    for name in ("prefix_sum", "running_sum", "seidel_2d", "floyd_warshall", "collatz_steps"):
        rep = offload.analyze(EXAMPLES[name].fn)
        seq = [lp.id for lp in rep.loops if lp.verdict in ("sequential", "unsupported")]
        assert not set(seq) & set(gpu_loops(rep)), name
    hist = gpu_offloadable(offload.analyze(EXAMPLES["histogram"].fn))["L1"]
    assert hist.arrays == {"counts": "+"} and "counts" in hist.describe()


def product(x):
    p = 1.0
    for i in range(x.shape[0]):
        p *= x[i]
    return p


def read_and_update(x, h):
    for i in range(x.shape[0]):
        h[i % 3] += h[0] * x[i]


def test_loops_without_an_atomic_are_refused():
    with pytest.raises(hl.InvalidInputError, match=r"reduction.*cuda target offloads"):
        offload.transform(product, ["L1"], target="cuda")
    with pytest.raises(hl.InvalidInputError, match=r"sequential.*offloadable loops: none"):
        offload.transform(read_and_update, ["L1"], target="cuda")
    with pytest.raises(hl.InvalidInputError, match="offloadable loops"):
        offload.transform(EXAMPLES["prefix_sum"].fn, ["L1"], target="cuda")


def _sig(kernel, ex_args: dict, types):
    out = []
    for p in kernel.py_func.__code__.co_varnames[:kernel.py_func.__code__.co_argcount]:
        a = ex_args.get(p)
        if p.startswith("_r_"):
            out.append(types.float64[::1])
        elif isinstance(a, np.ndarray):
            out.append(types.Array(numba.from_dtype(a.dtype), a.ndim, "C"))
        elif isinstance(a, float):
            out.append(types.float64)
        else:
            out.append(types.int64)
    return tuple(out)


# numba's compile_ptx without a driver cannot lower builtins min/max/int() (it asks the
# driver for the compute capability): kernels calling them (array_max, histogram) are run in
# the simulator above instead.
@pytest.mark.parametrize("name", ["dot", "matvec", "row_norms", "himeno", "covariance"])
def test_generated_reduction_kernels_compile_to_ptx(name):
    cuda, types = nvvm_or_skip()
    ex = EXAMPLES[name]
    rep = offload.analyze(ex.fn)
    args = dict(zip(rep.params, ex.make_args(5), strict=True))
    red = [lp.id for lp in rep.loops if lp.verdict == "reduction"]
    v = offload.transform(rep, red[:1], target="cuda")
    v.compile()
    kernels = [o for k, o in v.namespace.items() if k.startswith("_hetlab_")]
    assert kernels
    for k in kernels:
        ptx, _ = cuda.compile_ptx(k.py_func, _sig(k, args, types), cc=(9, 0))
        assert "atom" in ptx or "red." in ptx
