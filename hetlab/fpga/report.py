"""Print each overlay's modeled time at given sizes, broken down, with the cited parameters.

    python -m hetlab.fpga.report [--board pynq-z2] [--overlay gemv_q spmv fps]

Every figure printed is **modeled** (:mod:`hetlab.fpga.timing`), never measured; each
parameter is printed with the source its manifest gives. Sizes per overlay are two
representative calls (:func:`sizes`, from each overlay's kernel family).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .device import overlay_modules
from .manifest import load_manifest, overlay_names
from .timing import model, port_bandwidth

__all__ = ["sizes", "describe", "main"]

def sizes() -> dict[str, list[dict[str, int]]]:
    """Overlay → two representative calls (scalar arguments): each family's ``REPORT_SIZES``,
    beside its overlay implementation (``hetlab/kernels/<family>/fpga.py``)."""
    return {name: list(m.REPORT_SIZES) for name, m in overlay_modules().items()}


def __getattr__(name: str) -> Any:
    if name == "SIZES":  # the table of old, now gathered from the families
        return sizes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def describe(overlay: str, board: str) -> str:
    """The report for one overlay on one board (text)."""
    m = load_manifest(overlay)
    b = m.board(board)
    lines = [f"== {overlay} on {board} (MODELED, not measured) =="]
    for scalars in sizes().get(overlay, []):
        t = model(m, board, **scalars)
        args = ", ".join(f"{k}={v}" for k, v in scalars.items())
        lines.append(f"  {args}:")
        lines.append(f"    {t}")
    bw = port_bandwidth(m, board)
    lines += [
        "  parameters:",
        f"    clock {b['clock_mhz']:g} MHz  <- {b['clock_source']}",
        f"    port bandwidth {bw / 1e6:g} MB/s = min(m_axi {m.data['m_axi']['data_bits']} bit x "
        f"clock, HP {b['hp_port_mbps']:g} MB/s, DDR {b['ddr_gbps']:g} GB/s)",
        f"      m_axi <- {m.data['m_axi']['source']}",
        f"      HP    <- {b['hp_port_source']}",
        f"      DDR   <- {b['ddr_source']}",
        f"    launch {m.data['launch']['mmio_writes']} writes x {b['mmio_write_us']:g} us + "
        f"{m.data['launch']['mmio_reads']} read x {b['mmio_read_us']:g} us  <- {b['mmio_source']}",
    ]
    for lp in m.data["loops"]:
        for x in [lp, *lp.get("inner", ())]:
            shape = (f"depth {x['depth']} + II {x['ii']} x (trip {x['trip']} - 1)"
                     if x.get("pipelined") else f"trip {x['trip']} x (overhead "
                     f"{x.get('overhead', 0)} + inner)")
            lines.append(f"    loop {x['name']}: {shape}  <- {x['source']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(prog="python -m hetlab.fpga.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", default="pynq-z2", choices=["pynq-z2", "kv260"])
    p.add_argument("--overlay", nargs="+", default=overlay_names())
    args = p.parse_args(argv)
    print("\n\n".join(describe(o, args.board) for o in args.overlay))
    return 0


if __name__ == "__main__":
    sys.exit(main())
