"""hetlab: one kernel API over numpy, numba, cupy and FPGA backends, one measurement harness.

>>> import hetlab as hl
>>> {"fps", "knn", "spmv", "gemv_q", "sparse_conv3d"} <= set(hl.kernel_names())
True
>>> all(getattr(hl, name).spec.name == name for name in hl.kernel_names())
True

Importing hetlab imports neither numba kernels, cupy nor pynq: backends are probed, and
implementations imported, on first use. Every registered kernel is ``hetlab.<name>``: the
explicit imports below are for static tools; a kernel family added to
``hetlab.kernels.FAMILIES`` is found through the registry (module ``__getattr__``).
"""

from . import accessor as _accessor  # noqa: F401  (registers ds.hetlab)
from . import auto, offload, quant, sparse, viz
from . import backends as _backends  # noqa: F401  (registers the backends)
from ._version import __version__ as __version__  # written once, in _version.py
from .auto import explain
from .check import check
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
from .kernels import kernel_function as _kernel_function
from .kernels.pointcloud import ball_query, fps, fps_knn, knn, make_cloud, voxel_downsample
from .kernels.quant import gemm_q, gemv_q, gemv_w4a8
from .kernels.sparse import sddmm, spmm, spmv
from .kernels.sparseconv import sparse_conv3d
from .recorded import record
from .results import load, save
from .sweep import compare


def _document_devices() -> None:
    from .core.docs import document_devices

    for name in kernel_names():  # every registered kernel is public as hetlab.<name>
        document_devices(_kernel_function(name))


_document_devices()


def __getattr__(name: str):
    # ipywidgets is imported only when the dashboard is asked for; offload_memory on first use
    if name in ("widgets", "offload_memory"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in kernel_names():  # a kernel of a family this file does not name
        return _kernel_function(name)
    raise AttributeError(f"module 'hetlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(kernel_names()) | {"widgets", "offload_memory"})


__all__ = [
    "viz", "widgets", "offload_memory", "auto", "explain", "check", "record", "devices",
    "set_threads", "compare",
    "load", "save",
    "available_backends", "backend_names", "kernel_names",
    "fps", "knn", "ball_query", "fps_knn", "voxel_downsample", "make_cloud",
    "offload", "quant", "gemv_q", "gemm_q", "gemv_w4a8",
    "sparse", "spmv", "spmm", "sddmm", "sparse_conv3d",
    "HetlabError", "InvalidInputError", "DeviceMismatchError", "BackendUnavailable",
    "KernelNotSupported", "VerificationError",
]
