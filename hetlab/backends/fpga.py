"""The FPGA backend: PYNQ overlays on a board, or the bit-accurate emulator elsewhere.

Until overlays land, every kernel on this backend raises :class:`KernelNotSupported`
("fpga: no overlay for this kernel yet"). The emulator needs no board, so the backend itself
is available; its timings are *modeled*, never measured, and say so.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np

from .base import Backend

__all__ = ["FpgaBackend"]


def board_present() -> bool:
    """Return True when a PYNQ board looks reachable (pynq installed and XRT or a Zynq device)."""
    if importlib.util.find_spec("pynq") is None:
        return False
    return bool(os.environ.get("XILINX_XRT")) or os.path.exists("/dev/xclmgmt") or os.path.exists(
        "/sys/class/fpga_manager/fpga0"
    )


class FpgaBackend(Backend):
    """FPGA overlays: a real PYNQ board when present, otherwise the emulator (modeled timing)."""

    name = "fpga"
    kind = "fpga"

    @property
    def timing_source(self) -> str:  # type: ignore[override]
        return "measured" if board_present() else "modeled"

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

    def info(self) -> dict[str, Any]:
        on_board = board_present()
        return {
            "device_name": "PYNQ board" if on_board else "emulator (no board; timing modeled)",
            "threads": 1,
        }
