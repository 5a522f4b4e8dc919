"""Mixed destinations on the example kernels: CPU search first, then the FPGA on high-intensity
nests only. FPGA figures are MODELED (host part measured + kernels by hetlab.fpga.timing);
CPU figures are measured. Printed side by side, as ratios to the serial njit.

    python benchmarks/offload_fpga.py                    # nbody_forces, matmul, jacobi_2d
    python benchmarks/offload_fpga.py --only nbody_forces --size 600 --board kv260
"""

from __future__ import annotations

import argparse
import math
import sys

#: sizes where the serial njit takes a few ms and the nests fit the modeled board's BRAM
SIZES = {"nbody_forces": 1000, "matmul": 90, "jacobi_2d": 200, "heat_3d": 40, "himeno": 32,
         "covariance": 120}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="nbody_forces,matmul,jacobi_2d")
    p.add_argument("--size", type=int, default=None, help="one size for every kernel")
    p.add_argument("--board", default="pynq-z2")
    p.add_argument("--budget", type=int, default=8)
    p.add_argument("--threshold", type=float, default=2.0)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: one repeat, no exhaustive check, no confirmation round")
    a = p.parse_args(argv)

    import pandas as pd

    from hetlab import offload
    from hetlab.offload import FpgaOptions, GAOptions, MeasureOptions
    from hetlab.offload.examples import EXAMPLES

    rows = []
    for name in a.only.split(","):
        ex = EXAMPLES[name]
        size = a.size or SIZES.get(name, 64)
        plan = offload.search(ex.fn, ex.make_args(size), targets=["numba", "cupy", "fpga"],
                              budget=a.budget, reference="njit", progress=False,
                              function_blocks=False,
                              ga=GAOptions(exhaustive=False if a.quick else None),
                              measure=MeasureOptions(repeats=1 if a.quick else 3,
                                                     confirm=0 if a.quick else 3),
                              fpga=FpgaOptions(threshold=a.threshold, board=a.board))
        cpu = plan.alternatives.get("numba")
        fp = plan.alternatives.get("fpga")
        fpga_best = math.nan
        if fp is not None:
            ok = [m.time_s for g, m in fp.measurements.items()
                  if any(g) and m.verified and m.times_s]
            fpga_best = min(ok, default=math.nan)
        for nest, d in plan.destinations().iterrows():
            rows.append({
                "kernel": name, "size": size, "nest": nest,
                "intensity": d.get("intensity"),
                "serial_ms (measured)": plan.serial_s * 1e3,
                "cpu_plan_x (measured)": cpu.speedup if cpu is not None else math.nan,
                "fpga_call_ms (modeled)": (d.get("fpga_s") or math.nan) * 1e3,
                "fpga_plan_x (modeled)": plan.serial_s / fpga_best if fpga_best else math.nan,
                "fpga": d.get("fpga"), "chosen": plan.target,
            })
        print(f"{name}: {plan.summary().splitlines()[0][:160]}", file=sys.stderr)
    with pd.option_context("display.width", 220, "display.max_colwidth", 60,
                           "display.float_format", "{:.3g}".format):
        print(pd.DataFrame(rows).to_string(index=False))
    print("fpga columns are MODELED (no board): host part measured, kernels by the timing model "
          f"for {a.board}; x = serial njit time / plan time.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
