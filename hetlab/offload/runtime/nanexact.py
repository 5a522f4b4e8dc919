"""``nan_max``/``nan_min``/``nan_median``: NumPy's extrema and median with NumPy's NaN rule.

numba 0.68 departs from NumPy on NaN in two places that generated offload code would inherit
(:mod:`hetlab.offload.analysis.transforms.nanexact` rewrites the calls to these functions):

- in a function compiled ``parallel=True``, ``np.max``/``np.min``/``np.amax``/``np.amin`` and
  the ``.max()``/``.min()`` methods become parfor reductions that skip NaN (numba's reduction
  takes ``max(acc, v)``), anywhere in the function, inside a ``prange`` loop or not:
  ``np.max([1., nan, 3.])`` gives 3.0 where NumPy gives nan, and an all-NaN array gives
  ``-inf``/``inf``;
- ``np.median`` (serial too) returns a number for some arrays holding a NaN, where NumPy
  returns nan.

Each function here returns what NumPy returns: nan as soon as one element is NaN (its first
NaN), else the extreme (the median). ``a``: an array of any shape, layout and real dtype, or a
number (returned as it is by ``nan_max``/``nan_min``). A zero-size array raises NumPy's
ValueError. Complex arrays are passed to numba's own serial ``np.max``/``np.min``/
``np.median``. The loops run serially: they are called inside the iteration of a ``prange``
loop (a row's maximum), where the row is short and the threads are already busy.

Importing this module imports numba; only generated offload code imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload

__all__ = ["nan_max", "nan_min", "nan_median"]


def nan_max(a: Any) -> Any:
    """``np.max(a)`` (pure Python form; compiled code uses the overload)."""
    return np.max(a)


def nan_min(a: Any) -> Any:
    """``np.min(a)`` (pure Python form; compiled code uses the overload)."""
    return np.min(a)


def nan_median(a: Any) -> Any:
    """``np.median(a)`` (pure Python form; compiled code uses the overload)."""
    return np.median(a)


def _real_array(a: Any) -> bool:
    return isinstance(a, types.Array) and not isinstance(a.dtype, types.Complex)


@overload(nan_max, jit_options={"cache": True})
def _nan_max_overload(a):  # numba compares these names without annotations
    if isinstance(a, types.Number) and not isinstance(a, types.Complex):
        return lambda a: a
    if not _real_array(a):
        return lambda a: np.max(a)

    def impl(a):  # pragma: no cover - compiled
        if a.size == 0:
            raise ValueError("zero-size array to reduction operation maximum which has no "
                             "identity")
        it = a.flat
        m = a.flat[0]
        for v in it:
            if not v <= m:  # larger, or NaN (m is never NaN here)
                m = v
                if m != m:
                    return m
        return m
    return impl


@overload(nan_min, jit_options={"cache": True})
def _nan_min_overload(a):  # numba compares these names without annotations
    if isinstance(a, types.Number) and not isinstance(a, types.Complex):
        return lambda a: a
    if not _real_array(a):
        return lambda a: np.min(a)

    def impl(a):  # pragma: no cover - compiled
        if a.size == 0:
            raise ValueError("zero-size array to reduction operation minimum which has no "
                             "identity")
        it = a.flat
        m = a.flat[0]
        for v in it:
            if not v >= m:  # smaller, or NaN (m is never NaN here)
                m = v
                if m != m:
                    return m
        return m
    return impl


@overload(nan_median, jit_options={"cache": True})
def _nan_median_overload(a):  # numba compares these names without annotations
    if not (isinstance(a, types.Array) and isinstance(a.dtype, types.Float)):
        return lambda a: np.median(a)

    def impl(a):  # pragma: no cover - compiled
        for v in a.flat:
            if v != v:
                return np.nan
        return np.median(a)
    return impl
