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
from .drivers import FpsDriver, GemvQDriver, SpmvDriver
from .emulator import Emulator
from .manifest import load_manifest

__all__ = ["main", "CASES"]


def _fps_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    out = []
    for n in sizes:
        rng = np.random.default_rng([7, n])
        pts = rng.random((n, 3), dtype=np.float32)
        s = max(1, min(n, n // 8))
        out.append(({"points": pts, "n_samples": s, "start": 0},
                    {"n": n, "n_samples": s, "start": 0}))
    return out


def _gemv_q_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    from ..kernels.quant.spec import make_quantized

    out = []
    for n in sizes:
        rng = np.random.default_rng([11, n])
        cols = min(n, 8192)
        qw = make_quantized(n, cols, rng)
        x = rng.standard_normal(cols).astype(np.float32)
        out.append(({"qw": qw, "x": x},
                    {"rows": n, "cols": qw.padded_in, "group_size": qw.group_size}))
    return out


def _spmv_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    from ..sparse import make_matrix

    out = []
    for n in sizes:
        rng = np.random.default_rng([13, n])
        A = make_matrix(n, rng, kind="powerlaw", nnz_per_row=16).astype(np.float32)
        x = (rng.random(A.shape[1]) * 2 - 1).astype(np.float32)
        out.append(({"A": A, "x": x},
                    {"n_rows": A.shape[0], "n_cols": A.shape[1], "nnz": A.nnz}))
    return out


#: overlay name → (driver class, case generator)
CASES: dict[str, tuple[type, Callable[[Sequence[int]], list]]] = {
    "fps": (FpsDriver, _fps_cases),
    "gemv_q": (GemvQDriver, _gemv_q_cases),
    "spmv": (SpmvDriver, _spmv_cases),
}


def run(board_device: Any, board: str, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Run every overlay on ``board_device`` and on the emulator; one record per case."""
    emu = Emulator(board)
    records = []
    for name, (driver_cls, cases) in CASES.items():
        on_board, emulated = driver_cls(board_device), driver_cls(emu)
        for kwargs, scalars in cases(sizes):
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
