"""The FPGA timing model: cycles from the loop structure, bandwidth bounds, launch cost.

Every figure this module returns is **modeled**, never measured. The model, with every
parameter read from the overlay's manifest (where each carries its source):

* a pipelined loop takes ``depth + II·(trip − 1)`` cycles (``0`` when ``trip ≤ 0``), Xilinx
  UG1399; a loop that is not pipelined takes ``trip · (overhead + Σ inner loops)``;
* a loop that moves data through an AXI master port takes
  ``max(cycles / f_clk, bytes / B)`` with ``B = min(m_axi width · f_clk, HP port, DDR)``;
* each call adds the host's MMIO cost: ``writes · t_write + reads · t_read``.

The phases are summed per manifest ``phase`` (``transfer_in``, ``compute``,
``transfer_out``); the launch cost is kept apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .manifest import Manifest, evaluate, load_manifest

__all__ = ["LoopTime", "ModeledTime", "pipelined_cycles", "loop_cycles", "port_bandwidth",
           "model"]

PHASES = ("transfer_in", "compute", "transfer_out")


def pipelined_cycles(depth: float, ii: float, trip: float) -> float:
    """Cycles of a pipelined loop: ``depth + ii·(trip − 1)``, 0 for an empty loop."""
    return 0.0 if trip <= 0 else float(depth + ii * (trip - 1))


def loop_cycles(loop: Mapping[str, Any], names: Mapping[str, float]) -> float:
    """Cycles of one manifest loop (recursing into ``inner`` loops when not pipelined)."""
    trip = float(evaluate(loop["trip"], names))
    if loop.get("pipelined", False):
        return pipelined_cycles(loop["depth"], loop["ii"], trip)
    body = float(loop.get("overhead", 0)) + sum(
        loop_cycles(inner, names) for inner in loop.get("inner", ())
    )
    return max(trip, 0.0) * body


def port_bandwidth(manifest: Manifest, board: str) -> float:
    """Bytes/s one AXI master port sustains on ``board``: the narrowest of the kernel's port
    (``m_axi.data_bits`` per cycle), the board's HP port and its DDR."""
    b = manifest.board(board)
    f = b["clock_mhz"] * 1e6
    return min(manifest.data["m_axi"]["data_bits"] / 8 * f, b["hp_port_mbps"] * 1e6,
               b["ddr_gbps"] * 1e9)


@dataclass(frozen=True)
class LoopTime:
    """One top-level loop's modeled figures."""

    name: str
    phase: str
    cycles: float
    seconds: float
    bytes: float
    bound: str  # "cycles" or "bandwidth": which term of the max won


@dataclass(frozen=True)
class ModeledTime:
    """A modeled call: per-loop figures, phase totals and launch cost (seconds)."""

    overlay: str
    board: str
    clock_mhz: float
    loops: tuple[LoopTime, ...]
    launch_s: float
    transfer_in_s: float
    compute_s: float
    transfer_out_s: float

    source: str = "modeled"

    @property
    def kernel_s(self) -> float:
        """From ap_start to ap_done: the three phases, no launch cost."""
        return self.transfer_in_s + self.compute_s + self.transfer_out_s

    @property
    def total_s(self) -> float:
        """Launch cost plus kernel time."""
        return self.launch_s + self.kernel_s

    def as_dict(self) -> dict[str, Any]:
        """Flat figures for tables (seconds, cycles), with ``source="modeled"``."""
        out: dict[str, Any] = {"overlay": self.overlay, "board": self.board,
                               "clock_mhz": self.clock_mhz, "source": self.source}
        for k in ("launch_s", "transfer_in_s", "compute_s", "transfer_out_s", "total_s"):
            out[k] = getattr(self, k)
        for lp in self.loops:
            out[f"cycles_{lp.name}"] = lp.cycles
        return out

    def __str__(self) -> str:
        ms = 1e3
        loops = ", ".join(f"{lp.name} {lp.cycles:,.0f} cyc ({lp.bound})" for lp in self.loops)
        return (
            f"MODELED {self.overlay} on {self.board} @ {self.clock_mhz:g} MHz: total "
            f"{self.total_s * ms:.3f} ms = launch {self.launch_s * ms:.3f} + in "
            f"{self.transfer_in_s * ms:.3f} + compute {self.compute_s * ms:.3f} + out "
            f"{self.transfer_out_s * ms:.3f} ms [{loops}] (not measured)"
        )


def model(overlay: str | Manifest, board: str, **scalars: int) -> ModeledTime:
    """Model one call of ``overlay`` on ``board`` with the kernel's scalar arguments.

    Examples
    --------
    >>> t = model("fps", "pynq-z2", n=4096, n_samples=512, start=0)
    >>> round(t.compute_s * 1e3, 3), t.source
    (5.391, 'modeled')
    """
    m = overlay if isinstance(overlay, Manifest) else load_manifest(overlay)
    b = m.board(board)
    f = b["clock_mhz"] * 1e6
    bw = port_bandwidth(m, board)
    names = m.names_for(scalars)
    loops = []
    for lp in m.data["loops"]:
        cycles = loop_cycles(lp, names)
        t_pipe = cycles / f
        nbytes = float(evaluate(lp["bytes"], names)) if "port" in lp else 0.0
        t_bw = nbytes / bw
        loops.append(LoopTime(lp["name"], lp["phase"], cycles, max(t_pipe, t_bw), nbytes,
                              "bandwidth" if t_bw > t_pipe else "cycles"))
    per = {p: sum(lp.seconds for lp in loops if lp.phase == p) for p in PHASES}
    launch = m.data["launch"]
    launch_s = (launch["mmio_writes"] * b["mmio_write_us"]
                + launch["mmio_reads"] * b["mmio_read_us"]) * 1e-6
    return ModeledTime(m.name, board, b["clock_mhz"], tuple(loops), launch_s,
                       per["transfer_in"], per["compute"], per["transfer_out"])
