"""Build parameters of an overlay, generated from its ``overlay.toml``.

The Vitis HLS / Vivado build is one shared set of scripts (``overlays/_build/``: ``Makefile``,
``hls.tcl``, ``vivado.tcl``) that names no overlay. Everything particular to an overlay — top
function, sources, VLNV, IP cell name, m_axi ports, and per board the part, board part, clock
and bitstream path — is read from the manifest and written into the overlay's build folder as

* ``overlay.mk``: what ``make`` needs (boards, HLS inputs, result paths), included by the
  shared ``Makefile``, which remakes it whenever ``overlay.toml`` changes;
* ``overlay.tcl``: Tcl variables the shared ``hls.tcl`` and ``vivado.tcl`` ``source``.

Neither file is committed (``build/`` holds tool outputs only). Usage::

    python -m hetlab.fpga.buildgen fps                 # writes overlays/fps/build/overlay.{mk,tcl}
    python -m hetlab.fpga.buildgen fps --out DIR       # elsewhere (paths are made relative to DIR)
    python -m hetlab.fpga.buildgen fps --check         # validate the manifest, write nothing

See ``overlays/README.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._resources import resource_dir
from ..errors import InvalidInputError
from .manifest import Manifest, load_manifest

__all__ = ["BuildParams", "BoardBuild", "build_params", "render", "write", "main", "SHARED_DIR"]

#: The shared build scripts (``Makefile``, ``hls.tcl``, ``vivado.tcl``).
SHARED_DIR = resource_dir("overlays") / "_build"

#: g++-only flags of ``[overlay] cflags`` (optimisation, warnings, language standard, PIC);
#: the rest (``-ffp-contract=off``, ``-D…``) also go to Vitis HLS.
_HOST_ONLY = re.compile(r"-(O\w*|W.*|std=.*|fPIC|g\d?)$")
_BARE = re.compile(r"[A-Za-z0-9_.:/+=,@%-]+")
_HEADER = "generated from {src} by `python -m hetlab.fpga.buildgen`; do not edit"


def _word(value: object, what: str) -> str:
    """``value`` as one shell/make/Tcl word; refuses anything needing quotes."""
    text = str(value)
    if not _BARE.fullmatch(text):
        raise InvalidInputError(
            f"overlay build: {what} must be letters, digits and _.:/+=,@%- only (it becomes "
            f"a make and Tcl word); got {text!r}."
        )
    return text


def _number(x: float) -> str:
    """A clock figure without a needless ``.0`` (Vivado's PS clock fields take ``100``)."""
    return f"{float(x):.6g}"


@dataclass(frozen=True)
class BoardBuild:
    """One board's build figures; result paths are relative to the build folder."""

    part: str
    board_part: str
    clock_mhz: str
    clock_period_ns: str
    bitstream: str
    hwh: str


@dataclass(frozen=True)
class BuildParams:
    """Everything the shared build scripts need for one overlay, as make/Tcl words."""

    name: str
    top: str
    vlnv: str
    ip_instance: str
    hls_sources: tuple[str, ...]
    hls_headers: tuple[str, ...]
    testbench: str
    hls_cflags: tuple[str, ...]
    m_axi_ports: tuple[str, ...]
    boards: Mapping[str, BoardBuild]


def build_params(m: Manifest, out: str | os.PathLike[str]) -> BuildParams:
    """The build parameters of overlay ``m`` built in folder ``out``.

    Source paths are relative to ``out``; result paths (``[boards.<b>].bitstream``, which must
    lie in the overlay's ``build/`` folder, and the ``.hwh`` PYNQ reads beside it) are relative
    to the build folder. Raises :class:`InvalidInputError` on a missing or unusable field.
    """
    ov = m.data["overlay"]
    out_dir = Path(out).resolve()

    def rel(p: str) -> str:
        return _word(os.path.relpath(m.root.resolve() / p, out_dir), f"path {p!r}")

    try:
        vendor, library, ipname, version = (_word(v, "vlnv") for v in ov["vlnv"].split(":"))
        boards: dict[str, BoardBuild] = {}
        for b in m.boards:
            fig = m.board(b)
            bit = Path(fig["bitstream"])
            if bit.parts[0] != "build" or bit.suffix != ".bit":
                raise InvalidInputError(
                    f"{m.name}: [boards.{b}] bitstream must be build/<…>.bit (the build "
                    f"folder is where the tools run); got {fig['bitstream']!r}."
                )
            result = Path(*bit.parts[1:])
            boards[_word(b, "board name")] = BoardBuild(
                part=_word(fig["part"], f"[boards.{b}] part"),
                board_part=_word(fig["board_part"], f"[boards.{b}] board_part"),
                clock_mhz=_number(fig["clock_mhz"]),
                clock_period_ns=_number(1e3 / fig["clock_mhz"]),
                bitstream=_word(result.as_posix(), f"[boards.{b}] bitstream"),
                hwh=_word(result.with_suffix(".hwh").as_posix(), f"[boards.{b}] bitstream"),
            )
        return BuildParams(
            name=_word(m.name, "[overlay] name"),
            top=_word(m.top, "[overlay] top"),
            vlnv=":".join((vendor, library, ipname, version)),
            ip_instance=_word(ov["ip_instance"], "[overlay] ip_instance"),
            hls_sources=tuple(rel(p) for p in ov["hls_sources"]),
            hls_headers=tuple(rel(p) for p in ov["hls_headers"]),
            testbench=rel(ov["testbench"]),
            hls_cflags=tuple(_word(f, "cflags") for f in ov["cflags"]
                             if not _HOST_ONLY.match(f)),
            m_axi_ports=tuple(_word(f"m_axi_{a['bundle']}", "bundle")
                              for a in m.args if a["kind"] == "pointer"),
            boards=boards,
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise InvalidInputError(
            f"{m.name}: overlay.toml lacks or mistypes a build field ({exc!r}); the build needs "
            f"[overlay] top, vlnv (vendor:library:name:version), ip_instance, hls_sources, "
            f"hls_headers, testbench, cflags and [boards.<b>] part, board_part, clock_mhz, "
            f"bitstream."
        ) from exc


_PER_BOARD = ("part", "board_part", "clock_mhz", "clock_period_ns", "bitstream", "hwh")


def render(m: Manifest, out: str | os.PathLike[str]) -> dict[str, str]:
    """The text of ``overlay.mk`` and ``overlay.tcl`` for overlay ``m`` built in ``out``."""
    p = build_params(m, out)
    src = os.path.relpath(m.root.resolve() / "overlay.toml", Path(out).resolve())
    head = "# " + _HEADER.format(src=src)
    mk = [head, f"OVERLAY_NAME := {p.name}", f"BOARDS := {' '.join(p.boards)}",
          f"HLS_INPUTS := {' '.join([*p.hls_sources, *p.hls_headers, p.testbench])}"]
    for b, fig in p.boards.items():
        mk += [f"BIT_{b} := {fig.bitstream}", f"HWH_{b} := {fig.hwh}"]
    tcl = [head, *(f"set {k} {getattr(p, k)}"
                   for k in ("name", "top", "vlnv", "ip_instance", "testbench"))]
    tcl += [f"set {k} {{{' '.join(getattr(p, k))}}}"
            for k in ("hls_sources", "hls_headers", "hls_cflags", "m_axi_ports")]
    tcl.append(f"set boards {{{' '.join(p.boards)}}}")
    for k in _PER_BOARD:
        pairs = " ".join(f"{b} {getattr(fig, k)}" for b, fig in p.boards.items())
        tcl.append(f"array set {k} {{{pairs}}}")
    return {"overlay.mk": "\n".join(mk) + "\n", "overlay.tcl": "\n".join(tcl) + "\n"}


def write(overlay: str | os.PathLike[str],
          out: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write ``overlay.mk`` and ``overlay.tcl`` for ``overlay`` (a name or folder) into ``out``
    (default: the overlay's ``build/``); returns the paths written (unchanged files are left
    alone so ``make`` does not rebuild for nothing)."""
    m = load_manifest(overlay)
    out_dir = Path(out) if out is not None else m.root / "build"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, text in render(m, out_dir).items():
        path = out_dir / fname
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m hetlab.fpga.buildgen <overlay> [--out DIR] [--check]``."""
    ap = argparse.ArgumentParser(prog="python -m hetlab.fpga.buildgen", description=__doc__
                                 .split("\n\n")[0])
    ap.add_argument("overlay", help="overlay name (fps) or folder")
    ap.add_argument("--out", help="build folder (default: overlays/<name>/build)")
    ap.add_argument("--check", action="store_true",
                    help="only check that overlay.toml has every build field; write nothing")
    args = ap.parse_args(argv)
    try:
        if args.check:
            m = load_manifest(args.overlay)
            render(m, Path(args.out) if args.out else m.root / "build")
            print(f"{m.name}: build parameters OK")
        else:
            for path in write(args.overlay, args.out):
                print(f"wrote {path}")
    except InvalidInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
