"""Argument checks for hetlab's public functions outside the kernel registry.

Kernels validate through their specs (:mod:`.validation`); the rest of the public API
(quantization helpers, sweeps, energy, memory offload) uses these small checks, so every
refusal is an :class:`~hetlab.errors.InvalidInputError` whose message names the argument,
says what came and how to fix it: ``"<where>: <name> must be …; got …."``.

>>> from hetlab.core.args import number
>>> number("f", "read_s", 0.5, lo=0.0)
0.5
>>> number("f", "read_s", "0.5")
Traceback (most recent call last):
...
hetlab.errors.InvalidInputError: f: read_s must be a real number; got '0.5' (str).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .validation import as_array, cast_finite, check_int

__all__ = ["number", "integer", "flag", "choice", "real_array", "sequence", "path_arg"]


def _show(value: Any) -> str:
    text = repr(value)
    return (text[:60] + "…") if len(text) > 60 else text


def number(where: str, name: str, value: Any, *, lo: float | None = None,
           hi: float | None = None, lo_open: bool = False) -> float:
    """``value`` as a finite float after checking it is a real number in ``[lo, hi]``
    (``(lo, hi]`` with ``lo_open``); bools, strings, complex and NaN/inf are refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidInputError(
            f"{where}: {name} must be a real number; got {_show(value)} "
            f"({type(value).__name__}).")
    v = float(value)
    low = "" if lo is None else f" {'>' if lo_open else '>='} {lo:g}"
    high = "" if hi is None else f" <= {hi:g}"
    if (not math.isfinite(v) or (lo is not None and (v < lo or (lo_open and v == lo)))
            or (hi is not None and v > hi)):
        rng = (low + (" and" if low and high else "") + high) if (low or high) else ""
        raise InvalidInputError(f"{where}: {name} must be a finite number{rng}; got {value!r}.")
    return v


def integer(where: str, name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as int after checking it is an integer (not a bool) in ``[lo, hi]``."""
    return check_int(where, name, value, lo, hi)


def flag(where: str, name: str, value: Any) -> bool:
    """``value`` as bool after checking it is ``True`` or ``False`` (NumPy bools too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(
            f"{where}: {name} must be True or False; got {_show(value)} "
            f"({type(value).__name__}).")
    return bool(value)


def choice(where: str, name: str, value: Any, options: Sequence[Any]) -> Any:
    """``value`` after checking it is one of ``options`` (compared only with strings/ints)."""
    ok = isinstance(value, (str, int)) and not isinstance(value, bool) and value in options
    if not ok:
        raise InvalidInputError(
            f"{where}: {name} must be one of {tuple(options)}; got {_show(value)}.")
    return value


def real_array(where: str, name: str, a: Any, *, ndim: int | None = None,
               dtype: Any = np.float64, nonempty: bool = True, nonneg: bool = False) -> np.ndarray:
    """A host array of real numbers cast to ``dtype`` and checked finite after the cast.

    Refuses what is not an array of numbers (str, dict, None, ragged lists), complex,
    string, object and bool dtypes, the wrong number of axes, empty arrays (``nonempty``),
    NaN/inf and values that overflow ``dtype``, and negative values (``nonneg``).
    """
    if a is None or isinstance(a, (str, bytes, dict, set)):
        raise InvalidInputError(
            f"{where}: {name} must be an array of real numbers; got {type(a).__name__}.")
    arr = as_array(where, name, a)
    if not isinstance(arr, np.ndarray):
        arr = arr.get()
    if arr.dtype.kind not in "iuf":
        raise InvalidInputError(
            f"{where}: {name} must hold real numbers (float or int); got dtype {arr.dtype}. "
            f"Convert it, e.g. np.asarray({name}, dtype=np.float64).")
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInputError(
            f"{where}: {name} must be a {ndim}-D array; got shape {arr.shape}.")
    if nonempty and arr.size == 0:
        raise InvalidInputError(f"{where}: {name} must not be empty; got shape {arr.shape}.")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise InvalidInputError(
            f"{where}: {name} must be finite; got {int((~np.isfinite(arr)).sum())} NaN/inf "
            f"value(s).")
    out = cast_finite(where, name, arr, dtype)
    if nonneg and out.size and (out < 0).any():
        raise InvalidInputError(
            f"{where}: {name} must be >= 0; got {int((out < 0).sum())} negative value(s) "
            f"(smallest {float(out.min()):g}).")
    return out


def sequence(where: str, name: str, value: Any, *, nonempty: bool = True) -> list[Any]:
    """``value`` as a list after checking it is a list/tuple (or 1-D array), not a str/dict."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = list(value)
    if not isinstance(value, (list, tuple)):
        raise InvalidInputError(
            f"{where}: {name} must be a list or tuple; got {_show(value)} "
            f"({type(value).__name__}).")
    if nonempty and len(value) == 0:
        raise InvalidInputError(f"{where}: {name} must not be empty; got {_show(value)}.")
    return list(value)


def path_arg(where: str, name: str, value: Any, *, existing: bool = False) -> str:
    """``value`` as a str path after checking it is a non-empty str/PathLike without NUL
    bytes; with ``existing``, a file that exists (a writable parent directory otherwise)."""
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInputError(
            f"{where}: {name} must be a str or os.PathLike; got {type(value).__name__}.")
    p = os.fspath(value)
    if not isinstance(p, str) or not p or "\x00" in p:
        raise InvalidInputError(
            f"{where}: {name} must be a non-empty text path without NUL bytes; got {p!r}.")
    if existing and not os.path.isfile(p):
        raise InvalidInputError(f"{where}: {name} must be an existing file; got {p!r}.")
    if not existing:
        parent = os.path.dirname(os.path.abspath(p))
        if os.path.isdir(p) or not os.path.isdir(parent):
            raise InvalidInputError(
                f"{where}: {name} must be a file path in an existing directory; got {p!r}.")
    return p
