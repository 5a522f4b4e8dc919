"""Print each overlay's modeled time at given sizes, broken down, with the cited parameters.

    python -m hetlab.fpga.report [--board pynq-z2] [--overlay gemv_q spmv fps]

Every figure printed is **modeled** (:mod:`hetlab.fpga.timing`), never measured; each
parameter is printed with the source its manifest gives. Sizes per overlay are two
representative calls (:data:`SIZES`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .manifest import load_manifest, overlay_names
from .timing import model, port_bandwidth

__all__ = ["SIZES", "describe", "main"]

#: overlay → two representative calls (scalar arguments)
SIZES: dict[str, list[dict[str, int]]] = {
    "fps": [{"n": 4096, "n_samples": 512, "start": 0},
            {"n": 16384, "n_samples": 1024, "start": 0}],
    "gemv_q": [{"rows": 1024, "cols": 1024, "group_size": 128},
               {"rows": 4096, "cols": 4096, "group_size": 128}],
    "spmv": [{"n_rows": 4096, "n_cols": 4096, "nnz": 65536},
             {"n_rows": 32768, "n_cols": 32768, "nnz": 524288}],
}


def describe(overlay: str, board: str) -> str:
    """The report for one overlay on one board (text)."""
    m = load_manifest(overlay)
    b = m.board(board)
    lines = [f"== {overlay} on {board} (MODELED, not measured) =="]
    for scalars in SIZES.get(overlay, []):
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
