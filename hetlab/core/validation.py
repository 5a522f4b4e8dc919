"""Boundary checks shared by every kernel: shapes, dtypes, finiteness, integer ranges.

Messages follow one shape: ``"<kernel>: <argument> must be …; got …."``. Arrays may be NumPy
or CuPy; checks use the array's own namespace and never copy to another device.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..errors import InvalidInputError

__all__ = ["array_module", "as_array", "as_float_array", "cast_finite", "check_int",
           "check_positive", "check_bool", "check_points", "check_axes_nonempty", "owned_copy",
           "read_only", "check_allocation", "physical_memory"]


def array_module(a: Any) -> Any:
    """Return ``numpy`` or ``cupy`` for an array (without importing cupy for host arrays)."""
    if isinstance(a, np.ndarray) or type(a).__module__.split(".")[0] != "cupy":
        return np
    import cupy

    return cupy


def as_array(kernel: str, name: str, a: Any) -> Any:
    """``a`` as a NumPy/CuPy array, or InvalidInputError when it cannot be one (ragged lists,
    objects NumPy refuses).

    Arrays in the other byte order (big-endian data read from a file) are converted to the
    native one: compiled kernels read raw memory and would see byte-swapped values.
    """
    xp = array_module(a)
    try:
        arr = xp.asarray(a)
    except Exception as exc:
        raise InvalidInputError(
            f"{kernel}: {name} must be a numeric array; got {type(a).__name__} ({exc})."
        ) from None
    if xp is np and not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def as_float_array(kernel: str, name: str, a: Any) -> Any:
    """Return ``a`` as a float32/float64 array: float kept, integers and bools to float64.

    Complex, object and string arrays are refused. Floats wider than float64 (longdouble)
    are narrowed to float64 after checking they fit (finite values that would overflow are
    refused).
    """
    xp = array_module(a)
    arr = as_array(kernel, name, a)
    kind = arr.dtype.kind
    if kind == "f":
        if arr.dtype.itemsize < 4:
            return arr.astype(xp.float32)
        if arr.dtype.itemsize > 8:
            return cast_finite(kernel, name, arr, xp.float64, check_nan=False)
        return arr
    if kind in "iub":
        return arr.astype(xp.float64)
    raise InvalidInputError(
        f"{kernel}: {name} must hold real numbers (float32/float64, or integers to convert); "
        f"got dtype {arr.dtype}."
    )


def cast_finite(kernel: str, name: str, arr: Any, dtype: Any, *,
                check_nan: bool = True) -> Any:
    """``arr`` cast to the float ``dtype`` the kernel will use, checked finite *after* the cast.

    A value finite in its own dtype can overflow a narrower one (``1e300`` becomes inf in
    float32), so finiteness is judged on what the kernel will read. With ``check_nan=False``
    only values that the cast itself turned into inf are refused (NaN/inf already in ``arr``
    are left to the caller's own check).

    Parameters
    ----------
    kernel, name : str
        For the message: ``"<kernel>: <name> …"``.
    arr : ndarray (NumPy or CuPy), real dtype
    dtype : float dtype
        The target, e.g. ``numpy.float32``.

    Returns
    -------
    ndarray of ``dtype`` (``arr`` itself when it has that dtype already)

    Raises
    ------
    InvalidInputError
        NaN/inf in ``arr`` (``check_nan``), or finite values beyond ``dtype``'s range.
    """
    xp = array_module(arr)
    dt = np.dtype(dtype)
    if arr.dtype == dt:
        out = arr
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = arr.astype(dt)
    if out.size == 0 or dt.kind != "f" or bool(xp.isfinite(out).all()):
        return out
    src_finite = xp.isfinite(arr) if arr.dtype.kind in "fc" else xp.ones(arr.shape, bool)
    bad_src = int((~src_finite).sum())
    if bad_src and check_nan:
        raise InvalidInputError(
            f"{kernel}: {name} must be finite; got {bad_src} NaN/inf value(s)."
        )
    overflow = src_finite & ~xp.isfinite(out)
    n_over = int(overflow.sum())
    if n_over:
        biggest = xp.abs(arr[overflow]).max()
        limit = float(np.finfo(dt).max)
        raise InvalidInputError(
            f"{kernel}: {name} must fit in {dt} (|value| <= {limit:.4g}), the dtype the kernel "
            f"computes in; got {n_over} value(s) that overflow it (largest |value| "
            f"{biggest}). Scale the values down or use float64 data."
        )
    return out


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


def check_axes_nonempty(kernel: str, name: str, arr: Any, axes: dict[int, str]) -> None:
    """Refuse an array with a zero-length axis among ``axes`` (axis → what it counts).

    A length-0 feature, column or channel axis makes a kernel's output empty or meaningless
    (a convolution with no input channels, a dot product over nothing): it is a mistake, not
    an edge case. Axes that may be empty (points, queries) are simply not listed.

    >>> import numpy as np
    >>> check_axes_nonempty("k", "X", np.zeros((4, 2)), {1: "column"})
    >>> check_axes_nonempty("k", "X", np.zeros((4, 0)), {1: "row"})
    Traceback (most recent call last):
    ...
    hetlab.errors.InvalidInputError: k: X must have at least one row (axis 1); got shape (4, 0).
    """
    for axis, what in axes.items():
        if arr.shape[axis] == 0:
            raise InvalidInputError(
                f"{kernel}: {name} must have at least one {what} (axis {axis}); got shape "
                f"{tuple(arr.shape)}."
            )


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


def check_bool(kernel: str, name: str, value: Any) -> bool:
    """``value`` as a bool; Python or NumPy bools only (1, "True", None and arrays are
    refused: their truth is not what the caller meant, or raises inside NumPy).

    >>> check_bool("k", "causal", True)
    True
    >>> check_bool("k", "causal", "False")
    Traceback (most recent call last):
    ...
    hetlab.errors.InvalidInputError: k: causal must be True or False; got 'False' (str).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(
            f"{kernel}: {name} must be True or False; got {value!r} ({type(value).__name__})."
        )
    return bool(value)


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


def read_only(a: Any) -> Any:
    """A read-only view of a NumPy array (other objects, e.g. CuPy arrays, returned as is).

    The view shares memory with ``a``: use it for arrays nobody else holds (fresh results of
    hetlab's own conversions), or after :func:`owned_copy`.
    """
    if isinstance(a, np.ndarray):
        if not a.flags.writeable:
            return a
        v = a.view()
        v.flags.writeable = False
        return v
    return a


def owned_copy(a: Any) -> Any:
    """A private, C-contiguous copy of an array, read-only when it is a NumPy array.

    What a container keeps of a caller's array: later writes to the caller's array (or to
    anything sharing its memory) cannot change it. CuPy arrays are copied on their device
    (CuPy has no read-only flag).
    """
    xp = array_module(a)
    out = xp.array(a, copy=True, order="C")
    return read_only(out)


def physical_memory() -> int:
    """Bytes of physical memory of this machine (0 when unknown)."""
    import os

    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def check_allocation(who: str, nbytes: float, what: str, fix: str) -> None:
    """Refuse, before allocating, an array larger than this machine's physical memory.

    Parameters
    ----------
    who : str
        The function, for the message.
    nbytes : float
        Bytes the allocation would take (computed in Python ints/floats: never overflows).
    what : str
        What would be allocated, e.g. ``"the dense grid of shape (…)"``.
    fix : str
        How to avoid it (a sentence).
    """
    limit = physical_memory()
    if limit and nbytes > limit:
        raise InvalidInputError(
            f"{who}: {what} would take {_gib(nbytes)}, more than this machine's "
            f"{_gib(limit)} of memory. {fix}"
        )


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"
