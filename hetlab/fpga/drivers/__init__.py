"""Overlay drivers: one per overlay, written once against :mod:`hetlab.fpga.protocol`."""

from .fps import FpsDriver
from .gemv_q import GemvQDriver
from .spmv import SpmvDriver

__all__ = ["FpsDriver", "GemvQDriver", "SpmvDriver"]
