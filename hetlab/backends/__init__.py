"""Backends: device detection and explicit array movement. See :class:`Backend`."""

from ..core.registry import register_backend
from .base import Backend
from .cupy import CupyBackend
from .fpga import FpgaBackend
from .numba import NumbaBackend
from .numpy import NumpyBackend

__all__ = ["Backend", "NumpyBackend", "NumbaBackend", "CupyBackend", "FpgaBackend"]

for _cls in (NumpyBackend, NumbaBackend, CupyBackend, FpgaBackend):
    register_backend(_cls())
