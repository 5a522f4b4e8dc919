"""The CUDA flash attention, checked without a GPU: tests/_cudasim_attention_cases.py runs it
against the numpy reference under Numba's CUDA simulator, in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cudasim import compile_ptx_for, nvvm_or_skip, run_cases_under_simulator

CASES = Path(__file__).with_name("_cudasim_attention_cases.py")


def test_flash_kernel_under_cuda_simulator():
    run_cases_under_simulator(CASES)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_flash_kernel_compiles_to_ptx_for_sm90(dtype):
    """Skipped with the reason when no CUDA toolkit (libNVVM) is usable here."""
    cuda, types = nvvm_or_skip()
    from hetlab.kernels.attention import _cuda_kernels as ck

    f = getattr(types, dtype)
    a = types.Array(f, 3, "C")
    ptx = compile_ptx_for(cuda, ck.flash_kernel.py_func, (a, a, a, a, types.boolean, types.float64))
    assert ".target sm_90" in ptx and ".shared" in ptx
