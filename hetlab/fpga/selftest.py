"""Board self-test: every overlay on the board against the emulator, bit for bit, and
calibration data for the timing model.

    python -m hetlab.fpga.selftest --board pynq-z2 [--out calibration.json] [--sizes 1024 4096]

On a board (pynq installed, XILINX_XRT set) it runs each overlay's driver on the board and on
the emulator with the same seeded inputs, checks the results are identical, and writes, per
case, the wall-clock time measured on the board beside the modeled figures, so the manifest's
estimates can be corrected. Without a board it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import BackendUnavailable
from . import timing
from .device import overlay_modules
from .emulator import Emulator
from .manifest import load_manifest

__all__ = ["main", "cases", "run"]


def cases() -> dict[str, tuple[type, Callable[[Sequence[int]], list]]]:
    """Overlay name → (driver class, case generator), from the kernel families that register
    an ``fpga`` implementation (:func:`hetlab.fpga.device.overlay_modules`)."""
    return {name: (m.Driver, m.selftest_cases) for name, m in overlay_modules().items()}


def __getattr__(name: str) -> Any:
    if name == "CASES":  # the table of old, now found through the registry
        return cases()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run(board_device: Any, board: str, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Run every overlay on ``board_device`` and on the emulator; one record per case."""
    emu = Emulator(board)
    records = []
    for name, (driver_cls, make_cases) in cases().items():
        on_board, emulated = driver_cls(board_device), driver_cls(emu)
        for kwargs, scalars in make_cases(sizes):
            t0 = time.perf_counter()
            got = on_board(**kwargs)
            measured = time.perf_counter() - t0
            want = emulated(**kwargs)
            modeled = timing.model(load_manifest(name), board, **scalars)
            records.append({
                "overlay": name, "board": board, **scalars,
                "identical": bool(np.array_equal(got, want)),
                "measured_s": measured,
                "measured_source": "wall clock around the driver call on the board",
                **{f"modeled_{k}": v for k, v in modeled.as_dict().items()
                   if k not in ("overlay", "board")},
            })
    return records


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (0 ok, 1 mismatch, 2 no board)."""
    p = argparse.ArgumentParser(prog="python -m hetlab.fpga.selftest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--board", default="pynq-z2", choices=["pynq-z2", "kv260"])
    p.add_argument("--out", default="hetlab-fpga-calibration.json")
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    args = p.parse_args(argv)
    try:
        from .pynq_adapter import PynqDevice

        device = PynqDevice(args.board)
    except BackendUnavailable as exc:
        print(
            f"selftest: cannot run: {exc}\nThis command checks overlays on a PYNQ board. Without "
            "one, the emulator is what runs (its timings are modeled), and `pytest "
            "tests/test_fpga_*.py` checks it.",
            file=sys.stderr,
        )
        return 2
    records = run(device, args.board, args.sizes)
    for r in records:
        ok = "identical" if r["identical"] else "DIFFERENT"
        size = r.get("n", r.get("rows", r.get("n_rows")))
        print(f"{r['overlay']} n={size}: board vs emulator {ok}; measured "
              f"{r['measured_s'] * 1e3:.3f} ms, modeled {r['modeled_total_s'] * 1e3:.3f} ms "
              f"(ratio {r['measured_s'] / r['modeled_total_s']:.2f})")
    with open(args.out, "w") as fh:
        json.dump({"board": args.board, "records": records}, fh, indent=1)
    print(f"calibration written to {args.out}")
    return 0 if all(r["identical"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
