"""The PYNQ adapter: the FPGA protocol on a real board through ``pynq``.

``pynq`` is imported only when a :class:`PynqDevice` is created, never at ``import hetlab``.
It maps the protocol one to one: ``load`` → ``pynq.Overlay(bitstream)`` and the IP instance
named in the manifest, ``allocate`` → ``pynq.allocate`` (whose buffers already have
``device_address``, ``flush`` and ``invalidate``), register access → the IP's ``read`` and
``write`` (MMIO). Drivers start the kernel by writing ``ap_start`` and poll ``ap_done``
themselves: ``ip.call()``/``start()`` were never enabled on Zynq boards and are gone in 3.1.

Threads: every :class:`PynqDevice` on one board shares that board's re-entrant ``lock``, which
the drivers hold for a whole call (buffer writes, ``ap_start``, polling, read-back); see
:mod:`hetlab.fpga.protocol`. Downloading an overlay also holds it.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from ..errors import BackendUnavailable, HetlabError
from .manifest import load_manifest
from .protocol import shared_lock

__all__ = ["PynqDevice", "find_board"]

_HINT = (
    "PYNQ 3.1+ only finds boards when XILINX_XRT is set: run on the board, as root with "
    "`source /etc/profile.d/xrt_setup.sh` (or `sudo -E`), so that XILINX_XRT=/usr is in the "
    "environment. Without a board, use the emulator (hetlab.fpga.Emulator)."
)


def _import_pynq() -> Any:
    try:
        return importlib.import_module("pynq")
    except ImportError as exc:
        raise BackendUnavailable(
            f"fpga: no board found: pynq is not installed ({exc}); on a board: pip install "
            "'hetlab[fpga]' (pynq needs numpy<2, so give it its own environment)."
        ) from None


def find_board(pynq: Any) -> Any:
    """Return the first PYNQ device, or raise :class:`BackendUnavailable` with the XRT hint."""
    try:
        devices = list(pynq.Device.devices)
    except Exception as exc:  # pynq raises RuntimeError without XRT
        raise BackendUnavailable(f"fpga: no board found ({exc}). {_HINT}") from None
    if not devices:
        xrt = os.environ.get("XILINX_XRT")
        state = f"XILINX_XRT={xrt!r}" if xrt else "XILINX_XRT is not set"
        raise BackendUnavailable(f"fpga: no board found ({state}). {_HINT}")
    return devices[0]


class PynqDevice:
    """A PYNQ board behind the FPGA protocol.

    Parameters
    ----------
    board : str
        Which board this is (``"pynq-z2"``, ``"kv260"``): selects the bitstream listed under
        ``[boards.<board>]`` in each overlay's manifest.

    Raises
    ------
    BackendUnavailable
        pynq is not installed, or no board is found (with the XILINX_XRT hint).
    """

    timing_source = "measured"

    def __init__(self, board: str = "pynq-z2") -> None:
        self.board = board
        self._pynq = _import_pynq()
        self.device = find_board(self._pynq)
        #: the board's lock, shared by every PynqDevice on it (drivers hold it for a call)
        self.lock = shared_lock(self.device)
        self._overlays: dict[str, Any] = {}

    def load(self, overlay: str) -> Any:
        """Download the overlay's bitstream for this board and return its IP (MMIO)."""
        m = load_manifest(overlay)
        bit = m.path(m.board(self.board)["bitstream"])
        if not bit.is_file():
            raise HetlabError(
                f"fpga: the {m.name} bitstream for {self.board} is missing ({bit}); build it "
                f"with `make -C {m.path('build')} BOARD={self.board}` (Vivado/Vitis HLS) "
                "and copy the .bit and .hwh beside each other."
            )
        with self.lock:
            if m.name not in self._overlays:
                self._overlays[m.name] = self._pynq.Overlay(str(bit))
            ol = self._overlays[m.name]
        name = m.data["overlay"]["ip_instance"]
        try:
            return getattr(ol, name)
        except AttributeError:
            raise HetlabError(
                f"fpga: overlay {bit.name} has no IP named {name!r}; found "
                f"{sorted(getattr(ol, 'ip_dict', {}))}."
            ) from None

    def allocate(self, shape: Any, dtype: Any) -> Any:
        """``pynq.allocate(shape, dtype)``: a contiguous buffer with ``device_address``."""
        return self._pynq.allocate(shape=shape, dtype=dtype)

    def free(self, buffer: Any) -> None:
        """Release a ``pynq.allocate`` buffer (``freebuffer``)."""
        fb = getattr(buffer, "freebuffer", None)
        if fb is not None:
            fb()
