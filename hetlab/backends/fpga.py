"""The FPGA backend: PYNQ overlays on a board, or the bit-accurate emulator elsewhere.

Like every backend, this one only detects the device and moves arrays: each overlay is an
implementation its kernel family registers (``hetlab/kernels/<family>/fpga.py``, a
``"module:function"`` string imported on first use), so ``import hetlab`` neither imports pynq
nor compiles anything. Without a board the emulator runs each overlay's HLS C++ (built with
g++) and its timings are *modeled*, never measured, and say so. Kernels without an overlay
raise :class:`~hetlab.errors.KernelNotSupported` ("fpga: no overlay for this kernel yet").
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import Any

import numpy as np

from .base import Backend

__all__ = ["FpgaBackend", "board_present"]


def board_present() -> bool:
    """Return True when a PYNQ board looks reachable (pynq installed and XRT or a Zynq device)."""
    if importlib.util.find_spec("pynq") is None:
        return False
    return bool(os.environ.get("XILINX_XRT")) or os.path.exists("/dev/xclmgmt") or os.path.exists(
        "/sys/class/fpga_manager/fpga0"
    )


class FpgaBackend(Backend):
    """FPGA overlays: a real PYNQ board when present, otherwise the emulator (modeled timing).

    Thread safety: ``device="fpga"`` calls may come from any number of threads. There is one
    device (board or emulator) per process, and access to it is **serialized**: every overlay
    call holds the device's lock from its first buffer write through ``ap_start``, the
    ``ap_done`` polls and the read-back to its last free (:mod:`hetlab.fpga.protocol`), as
    one board with one IP instance per overlay needs. Concurrent calls therefore take turns
    and each returns its own, correct result (on the emulator the C-simulation of an overlay
    is also serialized, since its on-chip buffers are shared by the whole process).
    """

    name = "fpga"
    kind = "fpga"

    @property
    def timing_source(self) -> str:  # type: ignore[override]
        return "measured" if board_present() else "modeled"

    def why_not(self) -> str | None:
        if board_present():
            return None
        if shutil.which(os.environ.get("CXX", "g++")) is None:
            return ("no PYNQ board, and the emulator needs a C++ compiler to build the overlays' "
                    "C-simulation (install g++ or set CXX)")
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
        board = os.environ.get("HETLAB_FPGA_BOARD", "pynq-z2")
        return {
            "device_name": f"{board} (PYNQ board)" if on_board
            else f"{board} emulator (no board; timing modeled)",
            "threads": 1,
        }

    def peaks(self) -> dict[str, Any]:
        return {"peak_bandwidth_gbps": float("nan"), "peak_gflops": float("nan"),
                "peak_source": "per overlay (overlays/<name>/overlay.toml)"}
