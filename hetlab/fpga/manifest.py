"""Overlay manifests (``overlays/<name>/overlay.toml``): parsing, lookup, safe expressions.

A manifest describes an overlay once for every consumer: the emulator (register map, pointer
extents), the timing model (loops, clocks, bandwidths), the drivers (argument offsets) and the
build (top, sources, part, clock, VLNV, ports: :mod:`hetlab.fpga.buildgen` generates the build
parameters from it). See ``overlays/README.md``.
"""

from __future__ import annotations

import ast
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["Manifest", "overlays_dir", "load_manifest", "overlay_names", "evaluate"]

_FUNCS = {"ceil": math.ceil, "floor": math.floor, "min": min, "max": max}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
}


def evaluate(expr: str | int | float, names: Mapping[str, float]) -> float:
    """Evaluate a manifest expression (``"ceil(n / lanes)"``) with ``names`` bound.

    Only numbers, names, ``+ - * / //``, unary minus and ``ceil/floor/min/max`` calls are
    allowed; anything else raises :class:`InvalidInputError`.
    """
    if isinstance(expr, int | float):
        return expr

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise InvalidInputError(
                    f"overlay manifest: expression {expr!r} uses unknown name {node.id!r}; "
                    f"known: {', '.join(sorted(names))}."
                )
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCS and not node.keywords):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise InvalidInputError(
            f"overlay manifest: expression {expr!r} must use numbers, names, + - * / // and "
            f"ceil/floor/min/max only; got {ast.dump(node)[:60]}."
        )

    return ev(ast.parse(str(expr), mode="eval"))


def overlays_dir() -> Path:
    """The folder holding ``<name>/overlay.toml``: ``$HETLAB_OVERLAYS``, else the repository's
    ``overlays/`` beside the ``hetlab`` package."""
    env = os.environ.get("HETLAB_OVERLAYS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "overlays"


def overlay_names() -> list[str]:
    """Names of the overlays found in :func:`overlays_dir`."""
    root = overlays_dir()
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob("*/overlay.toml"))


@dataclass(frozen=True)
class Manifest:
    """A parsed ``overlay.toml`` and the folder it came from.

    Attributes
    ----------
    root : Path
        ``overlays/<name>``.
    data : dict
        The TOML document as parsed.
    """

    root: Path
    data: Mapping[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["overlay"]["name"])

    @property
    def top(self) -> str:
        return str(self.data["overlay"]["top"])

    @property
    def limits(self) -> Mapping[str, Any]:
        return self.data["limits"]

    @property
    def registers(self) -> dict[str, int]:
        """Control registers by name (``ap_ctrl``, ``gie``, ``ier``, ``isr``)."""
        return dict(self.data["control"]["registers"])

    @property
    def bits(self) -> dict[str, int]:
        """Bit positions in ``ap_ctrl``."""
        return dict(self.data["control"]["bits"])

    @property
    def args(self) -> list[Mapping[str, Any]]:
        """Kernel arguments in register order (``name``, ``kind``, ``offset``, …)."""
        return list(self.data["args"])

    def arg(self, name: str) -> Mapping[str, Any]:
        """The argument called ``name``."""
        for a in self.data["args"]:
            if a["name"] == name:
                return a
        raise InvalidInputError(
            f"{self.name}: argument must be one of {[a['name'] for a in self.args]}; "
            f"got {name!r}."
        )

    @property
    def boards(self) -> list[str]:
        return list(self.data["boards"])

    def board(self, name: str) -> Mapping[str, Any]:
        """Per-board figures (part, clock, bandwidths, MMIO cost) for ``name``."""
        try:
            return self.data["boards"][name]
        except KeyError:
            raise InvalidInputError(
                f"{self.name}: board must be one of {self.boards}; got {name!r}."
            ) from None

    def path(self, relative: str) -> Path:
        """A path inside the overlay folder."""
        return self.root / relative

    def names_for(self, scalars: Mapping[str, int]) -> dict[str, float]:
        """Names an expression may use: the kernel's scalar arguments and ``[limits]``."""
        out = {k: v for k, v in self.limits.items() if isinstance(v, int | float)}
        out.update(scalars)
        return out


@cache
def _load(path: str) -> Manifest:
    with open(path, "rb") as fh:
        return Manifest(Path(path).parent, tomllib.load(fh))


def load_manifest(overlay: str | os.PathLike[str]) -> Manifest:
    """Load an overlay manifest by name (``"fps"``), folder or ``overlay.toml`` path."""
    p = Path(overlay)
    if p.suffix == ".toml":
        candidate = p
    elif p.is_dir():
        candidate = p / "overlay.toml"
    else:
        candidate = overlays_dir() / str(overlay) / "overlay.toml"
    if not candidate.is_file():
        raise InvalidInputError(
            f"fpga: overlay must be one of {overlay_names()} (in {overlays_dir()}) or a path "
            f"to an overlay.toml; got {overlay!r}."
        )
    return _load(str(candidate.resolve()))
