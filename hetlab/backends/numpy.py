"""The NumPy backend: the reference every other backend is checked against."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import machine
from .base import Backend

__all__ = ["NumpyBackend"]


class HostBackend(Backend):
    """What the CPU backends share: arrays are NumPy arrays, nothing to copy or wait for."""

    kind = "cpu"

    def why_not(self) -> str | None:
        return None

    def owns(self, array: Any) -> bool:
        return isinstance(array, np.ndarray)

    def to_device(self, array: Any) -> Any:
        return array

    def from_device(self, array: Any) -> Any:
        return array

    def synchronize(self) -> None:
        return None

    def threads(self) -> int:
        """Return how many threads this backend's kernels use."""
        return 1

    def info(self) -> dict[str, Any]:
        return {"device_name": machine.cpu_model(), "threads": self.threads()}

    def peaks(self) -> dict[str, Any]:
        return {
            "peak_bandwidth_gbps": machine.stream_triad_gbps(),
            "peak_gflops": machine.matmul_gflops(),
            "peak_source": "measured: numpy STREAM triad (1 thread), numpy float32 matmul (BLAS)",
        }


class NumpyBackend(HostBackend):
    """Plain NumPy on the host, single-threaded apart from what NumPy's BLAS does."""

    name = "numpy"
