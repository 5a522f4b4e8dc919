"""FPGA implementations registered with dispatch (``device="fpga"``).

``fps`` returns plain indices (what ``hl.fps(..., device="fpga")`` gives the user);
``fps.modeled`` returns :class:`hetlab.bench.ModeledRun` with the timing model's figures,
and is what :mod:`hetlab.bench` calls when the FPGA backend's timing is modeled.

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
from .drivers import FpsDriver

__all__ = ["default_board", "default_device", "fps"]


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
