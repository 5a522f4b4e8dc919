"""GPU attention: the numba.cuda flash kernel (:mod:`._cuda_kernels`) launched on CuPy arrays.

Receives the validated keyword arguments (already on the device, see
:mod:`hetlab.core.dispatch`). The array namespace comes from the arguments, so the same
driver runs on NumPy arrays under Numba's CUDA simulator (tests/_cudasim_attention_cases.py).
"""

from __future__ import annotations

import math
from typing import Any

from ...core.validation import array_module
from .._cuda_launch import launch_setup
from . import _cuda_kernels as ck

__all__ = ["attention"]


def attention(q: Any, k: Any, v: Any, causal: bool = False) -> Any:
    """CUDA implementation of :func:`hetlab.attention` (validated arguments on the device)."""
    xp = array_module(q)
    h, n_q, d = q.shape
    out = xp.empty((h, n_q, v.shape[2]), dtype=q.dtype)
    stream, w = launch_setup(xp)
    blocks = (-(-n_q // ck.BLOCK_Q), h)
    ck.flash_kernel[blocks, ck.BLOCK_Q, stream](w(q), w(k), w(v), w(out), bool(causal),
                                               1.0 / math.sqrt(d))
    return out
