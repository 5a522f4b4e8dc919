"""``hetlab offload path/to/file.py:function --targets numba,cupy,fpga``: analyze, search, print
the plan (and, with several targets, what each destination did per nest).

The arguments come from a function in the same file returning the argument tuple, by default
``args_<function>`` (``--args NAME`` to name another one).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

from ..errors import InvalidInputError

__all__ = ["register_offload_cli", "load_target"]


def load_target(spec: str, args_name: str | None = None) -> tuple[Any, Any]:
    """``"path.py:function"`` → (the function, its argument generator)."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise InvalidInputError(f"offload: target must look like path/to/file.py:function; "
                                f"got {spec!r}.")
    if not os.path.isfile(path):
        raise InvalidInputError(f"offload: file {path!r} not found.")
    mod_name = f"hetlab_offload_target_{abs(hash(os.path.abspath(path)))}"
    loader = importlib.util.spec_from_file_location(mod_name, path)
    if loader is None or loader.loader is None:
        raise InvalidInputError(f"offload: cannot import {path!r} as a Python file.")
    module = importlib.util.module_from_spec(loader)
    sys.modules[mod_name] = module  # inspect.getsource needs the module registered
    loader.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise InvalidInputError(f"offload: {path} has no function {name!r}.")
    gen_name = args_name or f"args_{name}"
    gen = getattr(module, gen_name, None)
    if gen is None:
        raise InvalidInputError(f"offload: {path} has no {gen_name}() returning the arguments of "
                                f"{name}; add one or pass --args NAME.")
    return fn, gen


def _cmd_offload(args: argparse.Namespace) -> int:
    from . import FpgaOptions, MeasureOptions, analyze, search

    fn, gen = load_target(args.target, args.args)
    print(analyze(fn))
    if args.analyze_only:
        return 0
    call_args = gen()
    if not isinstance(call_args, tuple):
        call_args = (call_args,)
    plan = search(fn, call_args, targets=args.targets, budget=args.budget, seed=args.seed,
                  reference=args.reference, progress=not args.quiet,
                  measure=MeasureOptions(repeats=args.repeats),
                  fpga=FpgaOptions(threshold=args.fpga_threshold, board=args.board))
    print()
    print(repr(plan))
    if len(args.targets) > 1 or "fpga" in args.targets:
        import pandas as pd

        print()
        print("destinations per nest (CPU, then GPU, then FPGA; fpga_s is MODELED):")
        with pd.option_context("display.width", 200, "display.max_colwidth", 80):
            print(plan.destinations().to_string())
    if args.show_source:
        print()
        print(plan.source(plan.target))
        if plan.fpga is not None and plan.fpga.kernels and not plan.modeled:
            print()
            print(plan.source("fpga"))
    return 0 if plan.verified else 1


def register_offload_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``offload`` sub-command to the ``hetlab`` command's sub-parsers."""
    p = subparsers.add_parser("offload", help="find loops worth offloading and search a plan")
    p.add_argument("target", help="path/to/file.py:function")
    p.add_argument("--targets", type=lambda t: [v.strip() for v in t.split(",") if v.strip()],
                   default=["numba"], help="destinations, e.g. numba,cupy,fpga (tried in "
                   "that order; fpga times are modeled)")
    p.add_argument("--fpga-threshold", type=float, default=2.0,
                   help="arithmetic intensity (flop/B) from which a nest is an FPGA candidate")
    p.add_argument("--board", default=None, help="modeled FPGA board: pynq-z2 or kv260")
    p.add_argument("--args", default=None,
                   help="function in the same file returning the argument tuple "
                        "(default args_<function>)")
    p.add_argument("--budget", type=int, default=64, help="most candidates the GA measures")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", choices=["python", "njit"], default="python",
                   help="ground truth for verification")
    p.add_argument("--analyze-only", action="store_true", help="print the analysis and stop")
    p.add_argument("--show-source", action="store_true", help="print the generated code")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_offload)
    return p
