"""FPGA implementations registered with dispatch (``device="fpga"``).

Each kernel returns its plain result (what ``hl.fps(..., device="fpga")`` gives the user);
its ``.modeled`` entry returns :class:`hetlab.bench.ModeledRun` with the timing model's
figures, and is what :mod:`hetlab.bench` calls when the FPGA backend's timing is modeled.
Overlays: ``fps``, ``gemv_q`` (4-bit weights), ``spmv`` (float32 CSR).

The device is chosen once per process: a PYNQ board when one is present, else the emulator
of ``$HETLAB_FPGA_BOARD`` (default ``"pynq-z2"``).

Threads: these functions may be called from any number of threads. There is one device and
one driver per overlay per process (created once, under a lock); every call holds the
device's lock from its first buffer write to its last read (see
:mod:`hetlab.fpga.protocol`), so concurrent calls run one after another and each returns its
own result, on the emulator and on a board alike.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..backends.fpga import board_present
from . import timing
from .drivers import FpsDriver, GemvQDriver, SpmvDriver

__all__ = ["default_board", "default_device", "fps", "gemv_q", "spmv"]


def default_board() -> str:
    """The board modeled or driven: ``$HETLAB_FPGA_BOARD`` or ``"pynq-z2"``."""
    return os.environ.get("HETLAB_FPGA_BOARD", "pynq-z2")


_T = TypeVar("_T")
_create_lock = threading.RLock()


def _once(make: Callable[[], _T]) -> Callable[[], _T]:
    """``make`` called once per process, thread-safely (``functools.cache`` may call it twice
    when two threads race on the first call)."""
    made: list[_T] = []

    def get() -> _T:
        if not made:
            with _create_lock:
                if not made:
                    made.append(make())
        return made[0]

    get.cache_clear = made.clear  # type: ignore[attr-defined]
    get.__doc__, get.__name__ = make.__doc__, make.__name__
    return get


@_once
def default_device() -> Any:
    """A :class:`PynqDevice` on a board, else an :class:`Emulator` (strict coherency)."""
    if board_present():
        from .pynq_adapter import PynqDevice

        return PynqDevice(default_board())
    from .emulator import Emulator

    return Emulator(default_board())


@_once
def _fps_driver() -> FpsDriver:
    return FpsDriver(default_device())


def fps(points: np.ndarray, n_samples: int, start: int) -> np.ndarray:
    """FPS on the ``fps`` overlay: indices (n_samples,) int64 (float32 points only)."""
    return _fps_driver()(points, n_samples, start)


def _fps_modeled(points: np.ndarray, n_samples: int, start: int) -> Any:
    """FPS plus its modeled timing, as :class:`hetlab.bench.ModeledRun` (seconds)."""
    from ..bench import ModeledRun

    drv = _fps_driver()
    result = drv(points, n_samples, start)
    t = timing.model(drv.manifest, drv.device.board, n=points.shape[0], n_samples=n_samples,
                     start=start)
    return ModeledRun(result, compute_s=t.compute_s + t.launch_s,
                      transfer_in_s=t.transfer_in_s, transfer_out_s=t.transfer_out_s)


fps.modeled = _fps_modeled  # type: ignore[attr-defined]


def _modeled_run(result: Any, t: timing.ModeledTime) -> Any:
    from ..bench import ModeledRun

    return ModeledRun(result, compute_s=t.compute_s + t.launch_s,
                      transfer_in_s=t.transfer_in_s, transfer_out_s=t.transfer_out_s)


@_once
def _gemv_q_driver() -> GemvQDriver:
    return GemvQDriver(default_device())


def gemv_q(qw: Any, x: np.ndarray) -> np.ndarray:
    """W4A16 GEMV on the ``gemv_q`` overlay: y (out,) float32 (4-bit ``qw`` only)."""
    return _gemv_q_driver()(qw, x)


def _gemv_q_modeled(qw: Any, x: np.ndarray) -> Any:
    """gemv_q plus its modeled timing, as :class:`hetlab.bench.ModeledRun` (seconds)."""
    drv = _gemv_q_driver()
    result = drv(qw, x)
    t = timing.model(drv.manifest, drv.device.board, rows=qw.out_features, cols=qw.padded_in,
                     group_size=qw.group_size)
    return _modeled_run(result, t)


gemv_q.modeled = _gemv_q_modeled  # type: ignore[attr-defined]


@_once
def _spmv_driver() -> SpmvDriver:
    return SpmvDriver(default_device())


def spmv(A: Any, x: np.ndarray) -> np.ndarray:
    """CSR SpMV on the ``spmv`` overlay: y (n_rows,) float32 (float32 ``A`` only)."""
    return _spmv_driver()(A, x)


def _spmv_modeled(A: Any, x: np.ndarray) -> Any:
    """spmv plus its modeled timing, as :class:`hetlab.bench.ModeledRun` (seconds)."""
    drv = _spmv_driver()
    result = drv(A, x)
    t = timing.model(drv.manifest, drv.device.board, n_rows=A.shape[0], n_cols=A.shape[1],
                     nnz=A.nnz)
    return _modeled_run(result, t)


spmv.modeled = _spmv_modeled  # type: ignore[attr-defined]
