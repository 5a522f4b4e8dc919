"""Function blocks on the GPU: each recognized nest becomes a CuPy call (``@`` → cuBLAS,
``dot``, axpy, transpose copy) on the device arrays of the cuda variant's transfer plan.

Without a GPU the generated code is checked by the **array-code check with NumPy standing in
for CuPy**: the very same generated function runs with ``_xp = numpy`` and NumPy copies as the
"device" arrays. It checks the generated code and its transfer plan, not the GPU; its
timings are never reported as GPU timings. The real CuPy run is skipped with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.core.registry import get_backend
from hetlab.offload import MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

BLOCKS = {"matmul": "_d_C[:_d_A.shape[0], :_d_B.shape[1]] = _d_A @ ",
          "matvec": "_d_y[:_d_A.shape[0]] = _d_A @ ",
          "dot": "s += _rt.to_scalar(_xp.dot(_d_x, ",
          "axpy": "_d_y[:_d_x.shape[0]] += a * _d_x",
          "transpose": "_d_B[:_d_A.shape[1], :_d_A.shape[0]] = _d_A.T"}


def _expected(fn, args):
    w = copy_args(args)
    return outputs_of(fn(*w), w)


@pytest.mark.parametrize("name", sorted(BLOCKS))
@pytest.mark.parametrize("transfers", ["reduced", "naive"])
def test_array_code_check_with_numpy_standing_in_for_cupy(name, transfers):
    ex = EXAMPLES[name]
    args = ex.make_args()
    v = offload.transform(ex.fn, [], target="cupy", blocks=["B1"], array_module=np,
                          transfers=transfers)
    assert v.target == "cuda" and v.blocks == ("B1",)
    src = v.source
    if transfers == "reduced":
        assert BLOCKS[name] in src, src
    assert "range(" not in src  # the nest is gone
    w = copy_args(args)
    ok, err = verify(outputs_of(v.compile()(*w), w), _expected(ex.fn, args))
    assert ok, err
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    written = 0 if name == "dot" else 1
    assert v.transfers.copies_in == len(arrays)
    assert v.transfers.copies_out == (1 if name == "dot" else written)
    assert v.transfers.bytes_in == sum(a.nbytes for a in arrays)


def test_block_ids_and_refusals_on_the_gpu_target():
    ex = EXAMPLES["matmul"]
    with pytest.raises(hl.InvalidInputError, match="inside function block B1"):
        offload.transform(ex.fn, ["L1"], target="cuda", blocks=["B1"], array_module=np)
    with pytest.raises(hl.InvalidInputError, match="no function block 'B2'"):
        offload.transform(ex.fn, [], target="cuda", blocks=["B2"], array_module=np)
    by_nest = offload.transform(ex.fn, [], target="cuda", blocks=["L1"], array_module=np)
    assert by_nest.blocks == ("B1",)


def test_search_in_the_simulator_says_blocks_were_not_tried_on_the_gpu():
    import os
    import subprocess
    import sys

    code = (
        "from hetlab import offload\n"
        "from hetlab.offload import MeasureOptions\n"
        "from hetlab.offload.examples import EXAMPLES\n"
        "ex = EXAMPLES['matvec']\n"
        "p = offload.search(ex.fn, ex.make_args(20), targets=['numba', 'cupy'], budget=3,\n"
        "                   progress=False, measure=MeasureOptions(repeats=1, confirm=0))\n"
        "print(sorted(p.alternatives)); print(p.notes)\n"
        "print(p.alternatives['cuda'].target, bool(p.source('cupy')))\n")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "['cuda', 'numba']" in out.stdout
    assert "function blocks not tried" in out.stdout
    assert "cuda True" in out.stdout


def _need_gpu():
    why = get_backend("cupy").why_not()
    if why is not None:
        pytest.skip(f"real CuPy run needs a GPU: {why}")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_cupy_blocks_on_a_gpu(name):
    _need_gpu()
    ex = EXAMPLES[name]
    args = ex.make_args()
    v = offload.transform(ex.fn, [], target="cupy", blocks=["B1"])
    w = copy_args(args)
    assert verify(outputs_of(v.compile()(*w), w), _expected(ex.fn, args))[0]


@pytest.mark.gpu
def test_search_tries_gpu_blocks_first_on_a_gpu():
    _need_gpu()
    ex = EXAMPLES["matmul"]
    plan = offload.search(ex.fn, ex.make_args(64), targets=["numba", "cupy"], budget=4,
                          progress=False, measure=MeasureOptions(repeats=1))
    assert plan.alternatives["cuda"].block_trials
