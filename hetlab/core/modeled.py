"""What an implementation with modeled timing returns (the FPGA overlays on the emulator).

Lives in core so implementations (``hetlab/kernels/<family>/fpga.py``) can build it without
importing the measurement harness; :mod:`hetlab.bench` re-exports it and records its figures
labeled ``source="modeled"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ModeledRun"]


@dataclass(frozen=True)
class ModeledRun:
    """What a modeled implementation returns: the result and the model's times in seconds."""

    result: Any
    compute_s: float
    transfer_in_s: float = 0.0
    transfer_out_s: float = 0.0
