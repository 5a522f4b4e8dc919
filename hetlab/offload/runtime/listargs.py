"""Lists of numbers passed to a compiled variant as arrays (see
:mod:`hetlab.offload.analysis.listargs` for which parameters qualify)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["lists_as_arrays"]

#: the array kind a list must convert to, by the type of its first element (numba types a
#: list by that element too: floats with some ints is a float list, as here)
_KIND = {float: "f", int: "i", bool: "b", np.float64: "f", np.int64: "i"}


def as_array(value: Any) -> Any:
    """``value`` as a 1-D array for a non-empty list whose first item is a float (float64:
    every item converted with ``float()``, as numba's float list does), an int or a bool (the
    list must convert to that kind: ints within int64); ``value`` itself otherwise."""
    if type(value) is not list or not value:
        return value
    kind = _KIND.get(type(value[0]))
    if kind is None:
        return value
    try:
        if kind == "f":  # about 1.6x faster than np.asarray(value) on 200 000 floats
            arr = np.fromiter(value, np.float64, len(value))
            if not np.isnan(arr).any():  # fromiter also reads None as nan
                return arr
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        return value
    return arr if arr.dtype.kind == kind and arr.ndim == 1 else value


def lists_as_arrays(raw: Callable[..., Any], positions: tuple[int, ...]) -> Callable[..., Any]:
    """``raw`` with the arguments at ``positions`` converted by :func:`as_array`."""
    if not positions:
        return raw

    @functools.wraps(raw)
    def call(*args: Any) -> Any:
        if any(type(args[k]) is list for k in positions if k < len(args)):
            args = tuple(as_array(a) if k in positions else a for k, a in enumerate(args))
        return raw(*args)

    return call
