"""hetlab.fpga: FPGA overlays on a PYNQ board or in the emulator, and their timing model.

>>> from hetlab.fpga import Emulator, FpsDriver
>>> import numpy as np
>>> pts = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0, 0], [0, 2, 0]], dtype=np.float32)
>>> FpsDriver(Emulator("pynq-z2"))(pts, 3)
array([0, 3, 1])

Nothing here imports ``pynq`` or compiles anything until a device is created.
Timing from the emulator is modeled (:mod:`hetlab.fpga.timing`), never measured.

This package is the infrastructure every overlay shares (device protocol, emulator,
C-simulation, memory, timing model, manifests, PYNQ adapter, build generation, reports,
self-test, the driver base :class:`~hetlab.fpga.driver.OverlayDriver`). Each overlay's driver
and implementation live with its kernel family (``hetlab/kernels/<family>/fpga_driver.py`` and
``fpga.py``); the drivers are also reachable here by class name (``FpsDriver``,
``GemvQDriver``, ``SpmvDriver``), found through the registry on first access.
"""

from typing import Any

from .driver import OverlayDriver
from .emulator import EmuIP, Emulator
from .manifest import Manifest, load_manifest, overlay_names
from .protocol import BusError, DeviceBuffer, FpgaDevice, FpgaTimeout, IpHandle
from .pynq_adapter import PynqDevice
from .timing import ModeledTime, model

__all__ = [
    "Emulator", "EmuIP", "PynqDevice", "OverlayDriver", "Manifest", "load_manifest",
    "overlay_names", "model", "ModeledTime", "BusError", "FpgaTimeout", "FpgaDevice",
    "IpHandle", "DeviceBuffer",
]


def __getattr__(name: str) -> Any:
    # an overlay's driver class by name (FpsDriver, …), from the family that implements it
    if name.endswith("Driver"):
        from .device import overlay_modules

        for module in overlay_modules().values():
            if module.Driver.__name__ == name:
                return module.Driver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
