"""Argument checks shared by the sweep, bench, check and results helpers (private).

Each check raises :class:`~hetlab.errors.InvalidInputError` naming the function and the
argument, in hetlab's "what was wrong — what was given — how to fix" shape, and returns the
normalized value (Python ints, device names).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .errors import InvalidInputError

__all__ = ["is_int", "check_int", "check_sizes", "check_devices", "check_kernel",
           "check_optional_bool", "check_optional_callable", "check_path"]


#: the largest size a Dataset's int64 ``size`` coordinate holds
_MAX_SIZE = 2**63 - 1


def is_int(value: Any) -> bool:
    """True for Python and NumPy integers (``bool`` and ``np.bool_`` excluded)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


#: most timed (or warm-up) calls of one unit: beyond it a sweep would run for days
MAX_REPEATS = 100_000


def check_int(fn: str, name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """``value`` as a Python int, or an error when it is not an int in
    ``[minimum, maximum]``."""
    if (not is_int(value) or (minimum is not None and int(value) < minimum)
            or (maximum is not None and int(value) > maximum)):
        bound = f" >= {minimum}" if minimum is not None else ""
        bound += (" and" if bound else "") + f" <= {maximum}" if maximum is not None else ""
        raise InvalidInputError(f"{fn}: {name} must be an int{bound}; got {value!r}.")
    return int(value)


def _as_list(fn: str, name: str, value: Any, example: str) -> list[Any]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidInputError(
            f"{fn}: {name} must be a list such as {example}; got {value!r}."
        )
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise InvalidInputError(
            f"{fn}: {name} must be a 1-D list such as {example}; got an array of shape "
            f"{value.shape}."
        )
    return list(value)


def check_sizes(fn: str, sizes: Any, name: str = "sizes") -> list[int]:
    """A non-empty list of distinct ints ≥ 1 (NumPy integers accepted), as Python ints."""
    items = _as_list(fn, name, sizes, "[1000, 10000]")
    if not items or not all(is_int(s) and 1 <= int(s) <= _MAX_SIZE for s in items):
        raise InvalidInputError(
            f"{fn}: {name} must be a non-empty list of ints >= 1 (e.g. [1000, 10000], each "
            f"below 2**63); got {sizes!r}."
        )
    out = [int(s) for s in items]
    dupes = sorted({s for s in out if out.count(s) > 1})
    if dupes:
        raise InvalidInputError(
            f"{fn}: {name} must not repeat a size; got {out} ({dupes} more than once). Pass "
            "each size once."
        )
    return out


def check_devices(fn: str, devices: Any, name: str = "devices") -> list[str]:
    """Registered backend names (``None``: every registered backend), distinct, non-empty."""
    from .backends.base import Backend
    from .core.registry import backend_names, resolve_name

    known = backend_names()
    if devices is None:
        return known
    items = _as_list(fn, name, devices, f"[{known[0]!r}]" if known else "['numpy']")
    names = [d.name if isinstance(d, Backend) else d for d in items]
    if not names:
        raise InvalidInputError(
            f"{fn}: {name} must name at least one device from {known}; got {devices!r}."
        )
    resolved = []
    for d in names:
        try:
            resolved.append(resolve_name(d))  # "cuda"/"gpu" → "cupy"
        except InvalidInputError as e:
            raise InvalidInputError(f"{fn}: in {name}={devices!r}: {e}") from None
    names = resolved
    dupes = sorted({d for d in names if names.count(d) > 1})
    if dupes:
        raise InvalidInputError(
            f"{fn}: {name} must not repeat a device; got {names} ({dupes} more than once)."
        )
    return names


def check_kernel(fn: str, kernel: Any) -> Any:
    """The :class:`~hetlab.core.spec.KernelSpec` of ``kernel`` (name, spec or ``hl.fps``)."""
    from .core.registry import get_kernel, kernel_names

    try:
        return get_kernel(kernel)
    except InvalidInputError:
        raise InvalidInputError(
            f"{fn}: kernel must be one of {', '.join(map(repr, kernel_names()))} or a hetlab "
            f"kernel function such as hl.fps; got {kernel!r}."
        ) from None


def check_optional_bool(fn: str, name: str, value: Any, *, allow_none: bool = True) -> Any:
    """``value`` when it is a bool (or None when allowed)."""
    if (value is None and allow_none) or isinstance(value, bool | np.bool_):
        return None if value is None else bool(value)
    choices = "True, False or None" if allow_none else "True or False"
    raise InvalidInputError(f"{fn}: {name} must be {choices}; got {value!r}.")


def check_optional_callable(fn: str, name: str, value: Any) -> Any:
    """``value`` when it is callable or None."""
    if value is None or callable(value):
        return value
    raise InvalidInputError(
        f"{fn}: {name} must be a callable or None; got {type(value).__name__} {value!r}."
    )


def check_path(fn: str, name: str, path: Any, *, must_exist: bool = False,
               parent_must_exist: bool = False) -> str:
    """``path`` as a str, checked to be a path (and an existing file, or in an existing
    folder)."""
    if not isinstance(path, str | os.PathLike) or not os.fspath(path):
        raise InvalidInputError(
            f"{fn}: {name} must be a file path (str or pathlib.Path); got {path!r}."
        )
    out = os.fspath(path)
    if isinstance(out, bytes):
        out = os.fsdecode(out)
    if "\x00" in out:  # C libraries (netCDF, HDF5) would cut the name at the NUL byte
        raise InvalidInputError(
            f"{fn}: {name} must not contain NUL bytes; got {out!r}. Pass a plain file name."
        )
    if must_exist and not os.path.isfile(out):
        what = "a folder" if os.path.isdir(out) else "missing"
        raise InvalidInputError(
            f"{fn}: {name} must name an existing netCDF file; got {out!r} ({what})."
        )
    if parent_must_exist:
        parent = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(parent):
            raise InvalidInputError(
                f"{fn}: {name} must be in an existing folder; got {out!r} ({parent} does not "
                "exist). Create the folder first."
            )
        if os.path.isdir(out):
            raise InvalidInputError(f"{fn}: {name} must be a file, not a folder; got {out!r}.")
    return out
