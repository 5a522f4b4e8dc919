"""Offload destinations: one module (or folder) per target, found through the registry.

:mod:`.base` holds the :class:`~.base.Target` protocol, :class:`~.base.Variant` and the codegen
helpers targets share; :mod:`.registry` resolves names (``get_target("gpu")`` → the GPU
target); :mod:`.generate` is ``offload.transform``. Targets: :mod:`.numba` (CPU ``prange``),
:mod:`.cuda` (numba.cuda kernels, CuPy), :mod:`.fpga` (HLS C++, modeled time).
"""

from __future__ import annotations

from .base import Target, TargetBase, Variant
from .generate import transform
from .registry import describe_names, get_target, register_target, target_names

__all__ = ["Target", "TargetBase", "Variant", "transform", "register_target", "get_target",
           "target_names", "describe_names"]
