"""One energy table for the closing note of issue 20: ``hl.compare(..., energy=True)`` on
every device present, per kernel and size, with each figure's source.

    PYTHONPATH=. python benchmarks/energy_table.py [--sizes 4096,65536] [--repeats 5]

Each line: kernel, size, device, time per call (s, measured or modeled as the device says),
energy per call (J), mean power (W) and ``energy_source`` — ``measured`` (NVML/RAPL counters),
``modeled`` (no counter: busy threads × a per-thread power share on this CPU, or the FPGA
overlay manifest's cited figures) or ``recorded``. Then the time/energy Pareto front per
kernel and size. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import platform

import hetlab as hl
from hetlab.machine import cpu_model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1024,16384")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--kernels", default="spmv,knn,gemv_q")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"CPU: {cpu_model()} ({platform.machine()}); devices: "
          f"{', '.join(d for d, ok in hl.devices(peaks=False)['available'].items() if ok)}")
    for name in args.kernels.split(","):
        kernel = getattr(hl, name)
        ds = hl.compare(kernel, sizes=sizes, energy=True, repeats=args.repeats, progress=False)
        print(f"\n{name}: {ds.attrs.get('energy_note', '')}")
        print(f"  {'size':>7} {'device':<7} {'time_s':>10} {'energy_j':>10} {'power_w':>8}  "
              "energy source / time source")
        for size in ds["size"].values:
            for dev in ds["device"].values:
                sel = ds.sel(size=size, device=dev)
                t = float(sel["time_s"].median()) if "repeat" in sel["time_s"].dims \
                    else float(sel["time_s"])
                e = sel["energy_j"]
                e = float(e.median()) if "repeat" in e.dims else float(e)
                p = sel["power_w"]
                p = float(p.median()) if "repeat" in p.dims else float(p)
                if t != t:  # nan: the device is not present here
                    continue
                src = str(sel["energy_source"].values)
                timing = str(sel["source"].values) if "source" in sel else ""
                print(f"  {int(size):>7} {dev:<7} {t:10.3g} {e:10.3g} {p:8.3g}  {src} / {timing}")
        front = ds.hetlab.pareto("time_s", "energy_j")
        print("  time/energy front:")
        print("  " + front.to_string().replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
