"""Containers that own their arrays: read-only after construction, after a copy and a pickle.

hetlab's containers (the sparse formats, ``QuantizedMatrix``) validate their arrays once and
keep private copies that are read-only (NumPy's ``writeable`` flag), so the arrays a kernel
reads are the arrays that were checked. ``copy.deepcopy`` and ``pickle`` rebuild NumPy arrays
writable; this mixin puts the flag back, so a copied container is as safe as its original.
(CuPy arrays have no such flag: they are private copies, but writable.)
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

__all__ = ["OwnsArrays"]


def _seal(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value.flags.writeable = False
    return value


class OwnsArrays:
    """Mixin: every NumPy array attribute stays read-only through copies and pickles."""

    __slots__ = ()

    def _attribute_names(self) -> list[str]:
        names: list[str] = []
        for klass in type(self).__mro__:
            names += [n for n in getattr(klass, "__slots__", ()) if n not in names]
        names += [n for n in getattr(self, "__dict__", {}) if n not in names]
        return names

    def _seal_arrays(self) -> None:
        for name in self._attribute_names():
            _seal(getattr(self, name, None))

    def __copy__(self) -> Any:
        new = object.__new__(type(self))
        for name in self._attribute_names():
            if hasattr(self, name):
                object.__setattr__(new, name, getattr(self, name))
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        # the arrays are private and read-only: a copy may share them (as tuples share items)
        new = self.__copy__()
        for name in new._attribute_names():
            value = getattr(new, name, None)
            if isinstance(value, np.ndarray) and value.flags.writeable:
                object.__setattr__(new, name, _seal(value.copy()))
            elif not isinstance(value, np.ndarray) and value is not None:
                object.__setattr__(new, name, copy.deepcopy(value, memo))
        return new

    def __getstate__(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self._attribute_names() if hasattr(self, n)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, _seal(value))
