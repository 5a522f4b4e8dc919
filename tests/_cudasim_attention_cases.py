"""The CUDA flash attention under Numba's CUDA simulator, against the numpy reference.

Not collected by a plain ``pytest`` run: tests/test_attention_cudasim.py runs this file in a
subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (set before Numba is imported). Sizes stay small:
every simulated thread is a Python thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import config

from hetlab.kernels.attention import cupy as gpu
from hetlab.kernels.attention import reference

if not config.ENABLE_CUDASIM:
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba is imported (run through "
                "tests/test_attention_cudasim.py)", allow_module_level=True)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1, False), (2, 5, 5, 3, 2, True),
                                   (1, 1, 11, 4, 4, True), (1, 35, 35, 8, 4, True),
                                   (2, 3, 20, 6, 5, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flash_kernel_equals_reference(shape, dtype):
    h, n_q, n_k, d, dv, causal = shape
    rng = np.random.default_rng(n_q * n_k)
    q = rng.standard_normal((h, n_q, d)).astype(dtype)
    k = rng.standard_normal((h, n_k, d)).astype(dtype)
    v = rng.standard_normal((h, n_k, dv)).astype(dtype)
    got = gpu.attention(q, k, v, causal)
    ref = reference.attention(q, k, v, causal)
    assert got.dtype == dtype
    assert np.abs(got - ref).max() / np.abs(ref).max() < (1e-5 if dtype == np.float32 else 1e-12)
