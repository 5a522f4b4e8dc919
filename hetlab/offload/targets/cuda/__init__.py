"""The GPU target: numba.cuda kernels for parallel loops (atomics for reductions and array
updates) and CuPy/cuBLAS calls for function blocks, launched on CuPy arrays."""

from __future__ import annotations

from .atomics import gpu_offloadable
from .kernels import Transfers, cuda_ready, cuda_source, gpu_loops

__all__ = ["Transfers", "cuda_ready", "cuda_source", "gpu_loops", "gpu_offloadable"]
