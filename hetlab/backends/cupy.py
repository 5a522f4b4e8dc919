"""The CuPy backend: NVIDIA GPUs through CuPy, detected at run time, never at import."""

from __future__ import annotations

import functools
import importlib.util
from typing import Any

from ..log import get_logger
from .base import Backend

_log = get_logger(__name__)

__all__ = ["CupyBackend"]


@functools.cache
def _probe() -> str | None:
    """Return why CuPy cannot run here (not installed, no driver, no device), or None."""
    if importlib.util.find_spec("cupy") is None:
        return "cupy is not installed (pip install 'hetlab[gpu]')"
    try:
        import cupy
    except Exception as exc:  # a broken install must not break hetlab
        return f"cupy failed to import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        text = str(exc)
        if "Driver" in text or "driver" in text:
            return f"no CUDA driver found ({text.split(':')[0]})"
        return f"CUDA runtime error ({text})"
    if count == 0:
        return "no CUDA device found"
    _numba_cuda_numpy_compat()
    return None


def _numba_cuda_numpy_compat() -> None:
    """Let numba-cuda builds that predate NumPy 2.5 compile kernels under NumPy 2.5.

    Those builds register an overload of ``np.row_stack``, an alias of ``np.vstack`` that
    NumPy 2.5 removed, when their CUDA typing context first loads; without it every kernel
    compile fails with "module 'numpy' has no attribute 'row_stack'" (seen on a lent H200
    image, numba-cuda on NumPy 2.5.2, 2026-11-30). Restores the alias, only where it is
    missing and numba-cuda is installed, before hetlab compiles any GPU kernel (every GPU
    path asks this probe first).
    """
    import numpy as np

    if not hasattr(np, "row_stack") and importlib.util.find_spec("numba_cuda") is not None:
        setattr(np, "row_stack", np.vstack)  # noqa: B010 (the alias NumPy 2.5 removed)
        _log.info("cupy: restored numpy.row_stack (an alias of vstack) for numba-cuda, which "
                  "predates NumPy %s's removal of it", np.__version__)


class CupyBackend(Backend):
    """CUDA kernels on CuPy arrays (device 0 unless CuPy's current device says otherwise)."""

    name = "cupy"
    kind = "gpu"

    def why_not(self) -> str | None:
        return _probe()

    def owns(self, array: Any) -> bool:
        mod = type(array).__module__
        return mod.startswith("cupy") and hasattr(array, "__cuda_array_interface__")

    def to_device(self, array: Any) -> Any:
        import cupy

        return cupy.asarray(array)

    def from_device(self, array: Any) -> Any:
        import cupy

        return cupy.asnumpy(array)

    def synchronize(self) -> None:
        import cupy

        cupy.cuda.get_current_stream().synchronize()

    def info(self) -> dict[str, Any]:
        import cupy

        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        # theoretical peak: memory clock (kHz) × 2 (DDR) × bus width (bytes); CUDA 13 dropped
        # memoryClockRate from the properties, then the figure is unknown (NaN)
        clock_khz = props.get("memoryClockRate")
        bw = (2 * clock_khz * 1e3 * props.get("memoryBusWidth", 0) / 8 / 1e9
              if clock_khz else float("nan"))
        name = props["name"]
        return {
            "device_name": name.decode() if isinstance(name, bytes) else str(name),
            "threads": int(props["multiProcessorCount"])
            * int(props["maxThreadsPerMultiProcessor"]),
            "compute_capability": f"{props['major']}.{props['minor']}",
            "driver": str(cupy.cuda.runtime.driverGetVersion()),
            "peak_bandwidth_gbps_datasheet": bw,
        }

    def peaks(self) -> dict[str, Any]:
        return {
            "peak_bandwidth_gbps": self.info()["peak_bandwidth_gbps_datasheet"],
            "peak_gflops": float("nan"),
            "peak_source": "datasheet: memory clock × bus width from cudaGetDeviceProperties",
        }
