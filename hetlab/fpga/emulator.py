"""The FPGA emulator: an overlay's register file with HLS control semantics, over fake
physical memory, running the overlay's C-simulation and keeping modeled (virtual) time.

What a driver sees is what a Vitis HLS ``ap_ctrl_hs`` IP does on a board:

* argument registers from 0x10 (a 64-bit pointer is two words), read back as written;
* writing ``ap_start`` assembles the arguments, bounds-checks every pointer against the
  allocated buffers (an out-of-range pointer is a :class:`~.protocol.BusError`, as a bus
  error would be), runs the C-simulation on the *device* side of memory and schedules
  ``ap_done`` at the modeled completion time;
* ``ap_done`` and ``ap_ready`` clear on read; ``ap_idle`` is high when not running; ISR bits
  toggle on write; offsets that are not registers raise :class:`~.protocol.BusError`;
* a virtual clock advances by the board's MMIO cost on every access and reaches ``ap_done``
  when the modeled kernel time has passed, so a driver polls as often as it would on a board.

``stalled=True`` emulates an IP whose clock is not running: ``ap_start`` is never taken.

Like a careful overlay driver, the emulator refuses at ``ap_start`` what the IP cannot do:
scalar register values outside the manifest's bounds (``group_size = 0``, zero or too many
rows/columns/points, …; :meth:`~.manifest.Manifest.check_scalars`, an
:class:`~hetlab.errors.InvalidInputError`), pointers not aligned to their element size and
extents beyond the allocated buffers (:class:`~.protocol.BusError`).

Threads: an :class:`Emulator` has one re-entrant ``lock`` (its board's), which the drivers
hold for a whole call (see :mod:`hetlab.fpga.protocol`); every call into an overlay's
C-simulation also holds that overlay's :func:`~.csim.call_lock`, because the library's
``static`` on-chip buffers are shared by every emulator in the process.
"""

from __future__ import annotations

import collections
import ctypes
import threading
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from . import csim, timing
from .manifest import Manifest, evaluate, load_manifest
from .memory import EmuBuffer, PhysicalMemory
from .protocol import BusError

__all__ = ["Emulator", "EmuIP"]

_MASK32 = 0xFFFF_FFFF


class EmuIP:
    """The register file and control FSM of one emulated IP instance."""

    def __init__(self, emulator: Emulator, manifest: Manifest) -> None:
        self.emulator, self.manifest = emulator, manifest
        self.stalled = False
        #: recent accesses as ("r" | "w", offset, value), oldest first
        self.log: collections.deque[tuple[str, int, int]] = collections.deque(maxlen=4096)
        regs = manifest.registers
        self._ctrl, self._gie, self._ier, self._isr = (regs["ap_ctrl"], regs["gie"],
                                                      regs["ier"], regs["isr"])
        self._bit = {k: 1 << v for k, v in manifest.bits.items()}
        words = manifest.data["control"]["pointer_bits"] // 32
        self._arg_words: dict[int, tuple[str, int]] = {}
        for a in manifest.args:
            n = words if a["kind"] == "pointer" else 1
            for w in range(n):
                self._arg_words[a["offset"] + 4 * w] = (a["name"], w)
        self._values = dict.fromkeys(self._arg_words, 0)
        self._start = self._done = self._ready = self._auto = False
        self._gie_v = self._ier_v = self._isr_v = 0
        self._busy_until: float | None = None
        #: the last call's modeled figures (None before the first start)
        self.last_model: timing.ModeledTime | None = None
        self._fn: Any = None

    # -- registers -----------------------------------------------------------------------
    def _check(self, offset: int) -> None:
        known = {self._ctrl, self._gie, self._ier, self._isr, *self._arg_words}
        if not isinstance(offset, int | np.integer) or offset not in known:
            listing = ", ".join(f"{o:#04x}" for o in sorted(known))
            raise BusError(
                f"{self.manifest.name}: register offset must be one of {listing}; got "
                f"{offset!r} (AXI SLVERR)."
            )

    def read(self, offset: int) -> int:
        """Read a 32-bit register (advances the virtual clock by one MMIO read)."""
        with self.emulator.lock:  # one access at a time, as on the AXI4-Lite bus
            return self._read(offset)

    def _read(self, offset: int) -> int:
        self._check(offset)
        self.emulator.advance(self.emulator.mmio_read_s)
        self._update()
        if offset == self._ctrl:
            value = ((self._bit["ap_start"] if self._start else 0)
                     | (self._bit["ap_done"] if self._done else 0)
                     | (self._bit["ap_idle"] if self._busy_until is None else 0)
                     | (self._bit["ap_ready"] if self._ready else 0)
                     | (self._bit["auto_restart"] if self._auto else 0))
            self._done = self._ready = False  # clear on read
        elif offset == self._gie:
            value = self._gie_v
        elif offset == self._ier:
            value = self._ier_v
        elif offset == self._isr:
            value = self._isr_v
        else:
            value = self._values[offset]
        self.log.append(("r", int(offset), value))
        return value

    def write(self, offset: int, value: int) -> None:
        """Write a 32-bit register (advances the virtual clock by one MMIO write)."""
        with self.emulator.lock:  # one access at a time, as on the AXI4-Lite bus
            self._write(offset, value)

    def _write(self, offset: int, value: int) -> None:
        self._check(offset)
        if not isinstance(value, int | np.integer) or not 0 <= int(value) <= _MASK32:
            raise BusError(
                f"{self.manifest.name}: register value must be an int in [0, 2**32); got "
                f"{value!r} at offset {offset:#04x}."
            )
        value = int(value)
        self.log.append(("w", int(offset), value))
        self.emulator.advance(self.emulator.mmio_write_s)
        self._update()
        if offset == self._ctrl:
            self._auto = bool(value & self._bit["auto_restart"])
            if value & self._bit["ap_start"]:
                self._start = True
                self._try_start()
        elif offset == self._gie:
            self._gie_v = value & 1
        elif offset == self._ier:
            self._ier_v = value & 3
        elif offset == self._isr:
            self._isr_v ^= value & 3  # toggle on write
        else:
            self._values[offset] = value

    @property
    def interrupt(self) -> bool:
        """The IP's interrupt line: GIE and any enabled ISR bit."""
        with self.emulator.lock:
            self._update()
            return bool(self._gie_v and (self._isr_v & self._ier_v))

    # -- control FSM ---------------------------------------------------------------------
    def _update(self) -> None:
        if self._busy_until is not None and self.emulator.now_s >= self._busy_until:
            self._busy_until = None
            self._done = self._ready = True
            self._isr_v |= self._ier_v & 3
            if self._auto or self._start:  # auto-restart, or ap_start held high meanwhile
                self._start = True
                self._try_start()

    def _try_start(self) -> None:
        if self.stalled or self._busy_until is not None:
            return  # ap_start stays high: the handshake never happens
        self._start = False
        self.last_model = self._run()
        self._busy_until = self.emulator.now_s + self.last_model.kernel_s

    def arguments(self) -> dict[str, int]:
        """The argument values the registers hold now (pointers assembled from two words)."""
        out: dict[str, int] = {}
        for off, (name, word) in self._arg_words.items():
            out[name] = out.get(name, 0) | (self._values[off] << (32 * word))
        return out

    def _run(self) -> timing.ModeledTime:
        args = self.arguments()
        scalars = {a["name"]: args[a["name"]] for a in self.manifest.args
                   if a["kind"] == "scalar"}
        self.manifest.check_scalars(scalars)  # what the IP would not compute: refuse it
        names = self.manifest.names_for(scalars)
        c_args: list[Any] = []
        for a in self.manifest.args:
            if a["kind"] == "pointer":
                address = args[a["name"]]
                align = np.dtype(a.get("dtype", "uint8")).itemsize
                if address % align:
                    raise BusError(
                        f"{self.manifest.name}: {a['name']} = {address:#x} is not aligned to "
                        f"its {align}-byte {a.get('dtype')} elements (misaligned AXI burst); "
                        "pass a buffer's device_address (allocate() aligns it)."
                    )
                nbytes = max(int(evaluate(a["bytes"], names)), 0)
                mem = self.emulator.memory.resolve(address, nbytes, a["name"])
                c_args.append(ctypes.c_void_p(mem.ctypes.data))
            else:
                c_args.append(ctypes.c_uint32(args[a["name"]]))
        if self._fn is None:
            self._fn = getattr(csim.load_library(self.manifest), self.manifest.top)
            self._fn.restype = None
        with csim.call_lock(self.manifest):
            self._fn(*c_args)
        return timing.model(self.manifest, self.emulator.board, **scalars)


class Emulator:
    """An emulated board: fake contiguous memory, emulated IPs, a virtual clock.

    Parameters
    ----------
    board : str, default "pynq-z2"
        Whose clock, bandwidth and MMIO figures the timing model uses (a board in each
        overlay's manifest: ``"pynq-z2"`` or ``"kv260"``).
    strict : bool, default True
        Non-coherent memory: host writes reach the IP only after ``flush()``, IP writes reach
        the host only after ``invalidate()`` (as through the HP ports of both boards).
    """

    timing_source = "modeled"

    def __init__(self, board: str = "pynq-z2", *, strict: bool = True) -> None:
        self.board = board
        #: held by drivers for a whole call (see :mod:`hetlab.fpga.protocol`); re-entrant
        self.lock = threading.RLock()
        self.memory = PhysicalMemory(strict=strict)
        self.now_s = 0.0
        self.mmio_read_s = self.mmio_write_s = 0.0
        self._ips: dict[str, EmuIP] = {}

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward."""
        self.now_s += seconds

    def load(self, overlay: str) -> EmuIP:
        """Emulate ``overlay``: parse its manifest, build its C-simulation, return its IP."""
        m = load_manifest(overlay)
        b = m.board(self.board)  # unknown board → InvalidInputError listing the choices
        with self.lock:
            self.mmio_read_s = b["mmio_read_us"] * 1e-6
            self.mmio_write_s = b["mmio_write_us"] * 1e-6
            if m.name not in self._ips:
                csim.build(m)
                self._ips[m.name] = EmuIP(self, m)
            return self._ips[m.name]

    def allocate(self, shape: Any, dtype: Any) -> EmuBuffer:
        """A zeroed host array in contiguous emulated memory, with ``device_address``."""
        shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
        if any(int(s) < 0 for s in shape):
            raise InvalidInputError(f"fpga: shape must be non-negative; got {shape}.")
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        with self.lock:
            return EmuBuffer(self.memory.allocate(nbytes), shape, dtype)

    def free(self, buffer: Any) -> None:
        """Release a buffer from :meth:`allocate`."""
        region = getattr(buffer, "_region", None)
        if region is not None:
            with self.lock:
                self.memory.free(region)
