"""Boundary checks shared by every kernel: shapes, dtypes, finiteness, integer ranges.

Messages follow one shape: ``"<kernel>: <argument> must be …; got …."``. Arrays may be NumPy
or CuPy; checks use the array's own namespace and never copy to another device.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..errors import InvalidInputError

__all__ = ["array_module", "as_float_array", "check_int", "check_positive", "check_points"]


def array_module(a: Any) -> Any:
    """Return ``numpy`` or ``cupy`` for an array (without importing cupy for host arrays)."""
    if isinstance(a, np.ndarray) or type(a).__module__.split(".")[0] != "cupy":
        return np
    import cupy

    return cupy


def as_float_array(kernel: str, name: str, a: Any) -> Any:
    """Return ``a`` as a float32/float64 array: float kept, integers and bools to float64.

    Complex, object and string arrays are refused.
    """
    xp = array_module(a)
    try:
        arr = xp.asarray(a)
    except Exception as exc:
        raise InvalidInputError(
            f"{kernel}: {name} must be a numeric array; got {type(a).__name__} ({exc})."
        ) from None
    kind = arr.dtype.kind
    if kind == "f":
        if arr.dtype.itemsize < 4:
            return arr.astype(xp.float32)
        if arr.dtype.itemsize > 8:
            return arr.astype(xp.float64)
        return arr
    if kind in "iub":
        return arr.astype(xp.float64)
    raise InvalidInputError(
        f"{kernel}: {name} must hold real numbers (float32/float64, or integers to convert); "
        f"got dtype {arr.dtype}."
    )


def check_points(kernel: str, name: str, a: Any, *, allow_empty: bool = False) -> Any:
    """Validate a point cloud: array of shape (n, 3), real dtype, finite; returns it as float."""
    arr = as_float_array(kernel, name, a)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InvalidInputError(
            f"{kernel}: {name} must have shape (n, 3); got shape {tuple(arr.shape)}."
        )
    if arr.shape[0] == 0 and not allow_empty:
        raise InvalidInputError(f"{kernel}: {name} must hold at least one point; got 0 points.")
    xp = array_module(arr)
    if not bool(xp.isfinite(arr).all()):
        bad = int((~xp.isfinite(arr)).any(axis=1).sum())
        raise InvalidInputError(
            f"{kernel}: {name} must be finite; got {bad} point(s) with NaN or inf. Drop them "
            f"first, e.g. {name}[np.isfinite({name}).all(axis=1)]."
        )
    return xp.ascontiguousarray(arr)


def check_int(kernel: str, name: str, value: Any, lo: int, hi: int) -> int:
    """Return ``value`` as int after checking it is an integer in ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"{kernel}: {name} must be an int in [{lo}, {hi}]; got {value!r} "
            f"({type(value).__name__})."
        )
    if not lo <= int(value) <= hi:
        raise InvalidInputError(f"{kernel}: {name} must be an int in [{lo}, {hi}]; got {value}.")
    return int(value)


def check_positive(kernel: str, name: str, value: Any) -> float:
    """Return ``value`` as float after checking it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(
            f"{kernel}: {name} must be a positive number; got {value!r} ({type(value).__name__})."
        )
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise InvalidInputError(f"{kernel}: {name} must be a finite number > 0; got {value}.")
    return v
