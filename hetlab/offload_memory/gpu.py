"""The GPU tier: host memory copied to the device on a separate CUDA stream (cupy).

On a GPU the fast memory is device memory and the slow tier is host memory: each item's arrays
sit in page-locked (pinned) host buffers, and :meth:`HostToDevice.fetch` copies them on a
dedicated copy stream, recording an event that the compute stream waits on — so the copy of
layer i+1 runs on the copy engine while layer i computes. Written against cupy's stream and
event API; no GPU is present where this was written, so it is import-checked only (tests skip
with the reason :func:`require_gpu` gives). The executor does not run the layers' compute on the
GPU yet: ``stream(tier="gpu")`` says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BackendUnavailable

__all__ = ["require_gpu", "HostToDevice"]


def require_gpu() -> Any:
    """cupy, if it imports and sees a GPU; else :class:`BackendUnavailable` saying why."""
    try:
        import cupy
    except Exception as exc:
        raise BackendUnavailable(
            f"tier='gpu' needs cupy and an NVIDIA GPU: cupy does not import ({exc}). "
            "Install hetlab[gpu] on a GPU machine, or use tier='disk'."
        ) from exc
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise BackendUnavailable(f"tier='gpu': no CUDA device ({exc}); use tier='disk'.") from exc
    if n < 1:
        raise BackendUnavailable("tier='gpu': no CUDA device; use tier='disk'.")
    return cupy


class HostToDevice:
    """Items held in pinned host memory, copied to the device on a separate stream."""

    def __init__(self) -> None:
        self.cp = require_gpu()
        self.copy_stream = self.cp.cuda.Stream(non_blocking=True)
        self._host: dict[str, dict[str, np.ndarray]] = {}
        self._pinned: list[Any] = []

    def put(self, item: str, arrays: dict[str, np.ndarray]) -> None:
        """Keep ``arrays`` in page-locked host buffers (the slow tier)."""
        held = {}
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            mem = self.cp.cuda.alloc_pinned_memory(max(a.nbytes, 1))
            self._pinned.append(mem)
            h = np.frombuffer(mem, a.dtype, a.size).reshape(a.shape)
            h[...] = a
            held[name] = h
        self._host[item] = held

    def nbytes(self, item: str) -> int:
        return sum(a.nbytes for a in self._host[item].values())

    def fetch(self, item: str) -> tuple[dict[str, Any], Any]:
        """Start copying ``item`` to the device; returns the device arrays and an event the
        compute stream must wait on (``cupy.cuda.get_current_stream().wait_event(ev)``)."""
        out = {}
        with self.copy_stream:
            for name, h in self._host[item].items():
                d = self.cp.empty(h.shape, h.dtype)
                d.set(h, stream=self.copy_stream)
                out[name] = d
            ev = self.cp.cuda.Event()
            ev.record(self.copy_stream)
        return out, ev
