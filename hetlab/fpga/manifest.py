"""Overlay manifests (``overlays/<name>/overlay.toml``): parsing, lookup, safe expressions.

A manifest describes an overlay once for every consumer: the emulator (register map, pointer
extents), the timing model (loops, clocks, bandwidths), the drivers (argument offsets) and the
build (top, sources, part, clock, VLNV, ports: :mod:`hetlab.fpga.buildgen` generates the build
parameters from it). See ``overlays/README.md``.
"""

from __future__ import annotations

import ast
import functools
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .._resources import resource_dir
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

    def div(op: Any, a: Any, b: Any) -> Any:
        if b == 0:
            zero = ", ".join(f"{k}={v}" for k, v in names.items() if v == 0) or "a zero term"
            raise InvalidInputError(
                f"overlay manifest: expression {expr!r} divides by zero ({zero}); the value "
                "that names the divisor must be > 0."
            )
        return op(a, b)

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
            op = _BINOPS[type(node.op)]
            if isinstance(node.op, ast.Div | ast.FloorDiv):
                return div(op, ev(node.left), ev(node.right))
            return op(ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCS and not node.keywords):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise InvalidInputError(
            f"overlay manifest: expression {expr!r} must use numbers, names, + - * / // and "
            f"ceil/floor/min/max only; got {ast.dump(node)[:60]}."
        )

    return ev(_parsed(str(expr)))


#: CPython 3.11 can fail when two threads build ASTs at once ("SystemError: AST constructor
#: recursion depth mismatch", fixed in later releases): expressions are parsed once, under a lock
_PARSE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> ast.Expression:
    with _PARSE_LOCK:
        return ast.parse(text, mode="eval")


def overlays_dir() -> Path:
    """The folder holding ``<name>/overlay.toml``: ``$HETLAB_OVERLAYS``, else the ``overlays/``
    this installation holds (the checkout's, or the wheel's copy: :mod:`hetlab._resources`)."""
    env = os.environ.get("HETLAB_OVERLAYS")
    if env:
        return Path(env)
    return resource_dir("overlays")


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

    def power(self, board: str) -> tuple[float, str]:
        """Whole-board power while the overlay runs (W) and its cited source, from
        ``[power.<board>]``; ``(nan, "")`` when the manifest gives none for ``board``."""
        entry = self.data.get("power", {}).get(board, {})
        if "board_w" not in entry:
            return float("nan"), ""
        return float(entry["board_w"]), str(entry.get("source", "estimate"))

    def path(self, relative: str) -> Path:
        """A path inside the overlay folder."""
        return self.root / relative

    def check_scalars(self, scalars: Mapping[str, Any]) -> None:
        """Refuse scalar register values this overlay's IP cannot take.

        Every scalar argument must be given as an int in ``[0, 2**32)`` and satisfy its
        manifest bounds: ``min``, ``max`` and ``multiple_of`` (numbers or expressions over the
        scalars and ``[limits]``). The HLS kernel returns without writing its output for such
        values, which would leave stale memory as the "result"; a driver therefore checks them
        before programming the IP, and the emulator again at ``ap_start``.

        Raises
        ------
        InvalidInputError
            Naming every offending register, its value and the bound it breaks.
        """
        scalar_args = [a for a in self.args if a["kind"] == "scalar"]
        known = {a["name"] for a in scalar_args}
        problems = [f"{k} is not a scalar register of this overlay (registers: "
                    f"{sorted(known)})" for k in scalars if k not in known]
        values: dict[str, int] = {}
        for a in scalar_args:
            v = scalars.get(a["name"])
            if (not isinstance(v, int | np.integer) or isinstance(v, bool | np.bool_)
                    or not 0 <= int(v) < 2**32):
                problems.append(f"{a['name']} must be an int in [0, 2**32); got {v!r}")
            else:
                values[a["name"]] = int(v)
        if not problems:
            names = self.names_for(values)
            for a in scalar_args:
                problems += self._bound_problems(a, values[a["name"]], names)
        if problems:
            raise InvalidInputError(
                f"{self.name}: register values the IP cannot take: {'; '.join(problems)}. "
                f"Program values within the bounds of overlays/{self.name}/overlay.toml "
                "(the IP would return without writing its output)."
            )

    @staticmethod
    def _bound_problems(arg: Mapping[str, Any], value: int,
                        names: Mapping[str, float]) -> list[str]:
        out = []
        name = arg["name"]
        for key, ok, word in (("min", lambda v, b: v >= b, ">="),
                              ("max", lambda v, b: v <= b, "<=")):
            if key not in arg:
                continue
            try:
                bound = evaluate(arg[key], names)
            except InvalidInputError as exc:
                out.append(f"{name}'s {key} cannot be evaluated ({exc})")
                continue
            if not ok(value, bound):
                shown = arg[key] if isinstance(arg[key], int) else f"{arg[key]} = {bound:g}"
                out.append(f"{name} must be {word} {shown}; got {value}")
        if "multiple_of" in arg:
            try:
                m = evaluate(arg["multiple_of"], names)
            except InvalidInputError as exc:
                out.append(f"{name}'s multiple_of cannot be evaluated ({exc})")
            else:
                shown = (arg["multiple_of"] if isinstance(arg["multiple_of"], int)
                         else f"{arg['multiple_of']} = {m:g}")
                if m <= 0 or value % m:
                    out.append(f"{name} must be a multiple of {shown} (> 0); got {value}")
        return out

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
