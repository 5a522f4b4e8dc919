"""Docstring facts filled from the registry: the ``device`` line of every public kernel.

Each public kernel's docstring has a line ``device : str or Backend, optional (…)``; once
every backend and implementation is registered (end of ``import hetlab``),
:func:`document_devices` rewrites it to name the backends that implement that kernel, e.g.
``device : {"numpy", "numba", "cupy", "fpga"} or Backend, optional``. The list is never
typed by hand, so it cannot omit a backend registered later (the conformance suite checks).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .params import device_line
from .registry import backend_names, supported_backends

__all__ = ["document_devices", "devices_of"]

_DEVICE_LINE = re.compile(r"^(\s*device : ).*$", re.MULTILINE)


def devices_of(kernel: str) -> list[str]:
    """Backends implementing ``kernel``, in the order backends were registered."""
    have = set(supported_backends(kernel))
    return [b for b in backend_names() if b in have]


def document_devices(fn: Callable[..., Any]) -> None:
    """Rewrite the ``device :`` line of ``fn``'s docstring from the registry (in place)."""
    if not fn.__doc__:
        return
    line = device_line(devices_of(fn.spec.name))  # type: ignore[attr-defined]
    fn.__doc__ = _DEVICE_LINE.sub(lambda m: m.group(1) + line, fn.__doc__, count=1)
