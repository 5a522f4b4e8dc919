"""hetlab.fpga: FPGA overlays on a PYNQ board or in the emulator, and their timing model.

>>> from hetlab.fpga import Emulator, FpsDriver
>>> import numpy as np
>>> pts = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0, 0], [0, 2, 0]], dtype=np.float32)
>>> FpsDriver(Emulator("pynq-z2"))(pts, 3)
array([0, 3, 1])

Nothing here imports ``pynq`` or compiles anything until a device is created.
Timing from the emulator is modeled (:mod:`hetlab.fpga.timing`), never measured.
"""

from .drivers import FpsDriver, GemvQDriver, SpmvDriver
from .emulator import EmuIP, Emulator
from .manifest import Manifest, load_manifest, overlay_names
from .protocol import BusError, DeviceBuffer, FpgaDevice, FpgaTimeout, IpHandle
from .pynq_adapter import PynqDevice
from .timing import ModeledTime, model

__all__ = [
    "Emulator", "EmuIP", "PynqDevice", "FpsDriver", "GemvQDriver", "SpmvDriver", "Manifest",
    "load_manifest",
    "overlay_names", "model", "ModeledTime", "BusError", "FpgaTimeout", "FpgaDevice",
    "IpHandle", "DeviceBuffer",
]
