"""The ``hetlab`` command: ``devices``, ``bench``, ``lab``, ``notebooks``, ``offload``.

``hetlab devices``                       table of backends: available, why not, peak figures
``hetlab bench fps --sizes 10000,100000 --devices numpy,numba [--out fps.nc]``
                                         runs :func:`hetlab.compare`, prints a table, writes netCDF
``hetlab lab``                           JupyterLab on notebooks/, bound to 127.0.0.1, token auth
``hetlab notebooks DEST [--force]``      copies the notebook series into DEST (never overwrites
                                         a notebook there without --force)
``hetlab offload file.py:function --targets numba,cupy,fpga``
                                         offload extraction: analysis, GA search, generated code
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(float(v)) for v in text.split(",") if v.strip()]
    except ValueError:
        msg = f"expected comma-separated integers; got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers; got {text!r}")
    return values


def _str_list(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _cmd_devices(args: argparse.Namespace) -> int:
    import pandas as pd

    import hetlab as hl

    table = hl.devices(peaks=not args.no_peaks)
    with pd.option_context("display.max_colwidth", 60, "display.width", 160):
        print(table.drop(columns=["peak_source"]).to_string())
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    import pandas as pd

    import hetlab as hl

    ds = hl.compare(args.kernel, sizes=args.sizes, devices=args.devices, repeats=args.repeats,
                    warmup=args.warmup, seed=args.seed, progress=not args.quiet)
    table = ds.hetlab.table()
    with pd.option_context("display.max_colwidth", 50, "display.width", 160,
                           "display.float_format", "{:.4g}".format):
        print(table.to_string())
    if (ds["source"] == "modeled").any():
        print("note: rows with source=modeled come from a timing model, not a measurement")
    out = args.out or f"{ds.attrs['kernel']}-bench.nc"
    hl.save(ds, out)
    print(f"wrote {out}")
    if args.record:
        print(f"recorded {hl.record(ds)}")
    bad = [str(s) for s in ds["status"].values.ravel() if s.startswith(("wrong", "failed"))]
    return 1 if bad else 0


def lab_command(notebooks: str, port: int, ip: str = "127.0.0.1") -> list[str]:
    """The JupyterLab command line ``hetlab lab`` runs (token auth always on)."""
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.ip={ip}", f"--ServerApp.port={port}",
           f"--ServerApp.root_dir={notebooks}", "--ServerApp.open_browser=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd


def _cmd_lab(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("jupyterlab") is None:
        print("hetlab lab: jupyterlab is not installed; pip install 'hetlab[lab]'", file=sys.stderr)
        return 2
    notebooks = os.path.abspath(args.notebooks)
    if not os.path.isdir(notebooks):
        print(f"hetlab lab: --notebooks must be a folder; got {notebooks!r}", file=sys.stderr)
        return 2
    cmd = lab_command(notebooks, args.port, args.ip)
    if args.ip != "127.0.0.1":
        print(f"hetlab lab: listening on {args.ip} (token auth stays on; share the token only "
              "with people you trust)", file=sys.stderr)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    return subprocess.call(cmd)


def _cmd_notebooks(args: argparse.Namespace) -> int:
    from ._resources import copy_notebooks

    written = copy_notebooks(args.dest, force=args.force)
    for path in written:
        print(path)
    print(f"copied {len(written)} notebooks; open them with: hetlab lab --notebooks {args.dest}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hetlab`` command."""
    p = argparse.ArgumentParser(prog="hetlab", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("devices", help="list backends: available, why not, peak figures")
    d.add_argument("--no-peaks", action="store_true", help="skip measuring host peak figures")
    d.set_defaults(func=_cmd_devices)

    b = sub.add_parser("bench", help="compare a kernel across devices and sizes")
    b.add_argument("kernel", help="kernel name, e.g. fps, knn, ball_query, fps_knn")
    b.add_argument("--sizes", type=_int_list, default=[10_000], help="e.g. 10000,100000")
    b.add_argument("--devices", type=_str_list, default=None, help="e.g. numpy,numba,cupy")
    b.add_argument("--repeats", type=int, default=5)
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", help="netCDF path (default: <kernel>-bench.nc)")
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.add_argument("--record", action="store_true",
                   help="also save the measured devices as a recording in data/recorded/")
    b.set_defaults(func=_cmd_bench)

    lab = sub.add_parser("lab", help="open JupyterLab on the notebook series (127.0.0.1, token)")
    default_nb = "notebooks" if os.path.isdir("notebooks") else "."
    lab.add_argument("--notebooks", default=default_nb)
    lab.add_argument("--port", type=int, default=8888)
    lab.add_argument("--ip", default="127.0.0.1",
                     help="interface to bind; anything but 127.0.0.1 exposes the server "
                          "(token auth stays on)")
    lab.add_argument("--dry-run", action="store_true", help="print the command, do not run it")
    lab.set_defaults(func=_cmd_lab)

    nb = sub.add_parser("notebooks", help="copy the notebook series into a folder")
    nb.add_argument("dest", nargs="?", default="hetlab-notebooks",
                    help="folder to copy into (default: hetlab-notebooks)")
    nb.add_argument("--force", action="store_true",
                    help="overwrite notebooks of the series already in DEST")
    nb.set_defaults(func=_cmd_notebooks)

    from .offload import register_offload_cli

    register_offload_cli(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hetlab`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    from .errors import HetlabError

    try:
        return int(args.func(args))
    except HetlabError as exc:
        print(f"hetlab: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
