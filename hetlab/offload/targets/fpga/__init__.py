"""The FPGA target: Vitis-HLS C++ kernels for high-intensity nests, run through the emulator's
C-simulation, their time **modeled** by :mod:`hetlab.fpga.timing`."""

from __future__ import annotations

from .nests import Nest, find_nests
from .variant import BOARD_OVERLAY, FpgaVariant, fits, fpga_variant, model_nest

__all__ = ["BOARD_OVERLAY", "FpgaVariant", "Nest", "find_nests", "fits", "fpga_variant",
           "model_nest"]
