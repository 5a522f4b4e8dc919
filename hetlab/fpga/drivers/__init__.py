"""Overlay drivers: one per overlay, written once against :mod:`hetlab.fpga.protocol`."""

from .fps import FpsDriver

__all__ = ["FpsDriver"]
