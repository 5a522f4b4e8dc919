"""hetlab: one kernel API over numpy, numba, cupy and FPGA backends, one measurement harness.

>>> import hetlab as hl
>>> sorted(hl.kernel_names())
['ball_query', 'fps', 'fps_knn', 'gemm_q', 'gemv_q', 'knn', 'voxel_downsample']

Importing hetlab imports neither numba kernels, cupy nor pynq: backends are probed, and
implementations imported, on first use.
"""

from . import backends as _backends  # noqa: F401  (registers the backends)
from .bench import compare
from .core.registry import available_backends, backend_names, kernel_names
from .devices import devices, set_threads
from .errors import (
    BackendUnavailable,
    DeviceMismatchError,
    HetlabError,
    InvalidInputError,
    KernelNotSupported,
    VerificationError,
)
from .kernels.pointcloud import ball_query, fps, fps_knn, knn, make_cloud, voxel_downsample
from .results import load, save

__version__ = "0.1.0"

__all__ = [
    "devices", "set_threads", "compare", "load", "save",
    "available_backends", "backend_names", "kernel_names",
    "fps", "knn", "ball_query", "fps_knn", "voxel_downsample", "make_cloud",
    "HetlabError", "InvalidInputError", "DeviceMismatchError", "BackendUnavailable",
    "KernelNotSupported", "VerificationError",
]

# quantization family (formats in hetlab.quant, fused kernels hl.gemv_q / hl.gemm_q)
from . import quant
from .kernels.quant import gemm_q, gemv_q

__all__ += ["quant", "gemv_q", "gemm_q"]
