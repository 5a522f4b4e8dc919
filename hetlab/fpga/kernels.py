"""FPGA implementations registered with dispatch (``device="fpga"``).

Each kernel returns its plain result (what ``hl.fps(..., device="fpga")`` gives the user);
its ``.modeled`` entry returns :class:`hetlab.bench.ModeledRun` with the timing model's
figures, and is what :mod:`hetlab.bench` calls when the FPGA backend's timing is modeled.
Overlays: ``fps``, ``gemv_q`` (4-bit weights), ``spmv`` (float32 CSR).

The device is chosen once per process: a PYNQ board when one is present, else the emulator
of ``$HETLAB_FPGA_BOARD`` (default ``"pynq-z2"``).
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import numpy as np

from ..backends.fpga import board_present
from . import timing
from .drivers import FpsDriver, GemvQDriver, SpmvDriver

__all__ = ["default_board", "default_device", "fps", "gemv_q", "spmv"]


def default_board() -> str:
    """The board modeled or driven: ``$HETLAB_FPGA_BOARD`` or ``"pynq-z2"``."""
    return os.environ.get("HETLAB_FPGA_BOARD", "pynq-z2")


@cache
def default_device() -> Any:
    """A :class:`PynqDevice` on a board, else an :class:`Emulator` (strict coherency)."""
    if board_present():
        from .pynq_adapter import PynqDevice

        return PynqDevice(default_board())
    from .emulator import Emulator

    return Emulator(default_board())


@cache
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


@cache
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


@cache
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
