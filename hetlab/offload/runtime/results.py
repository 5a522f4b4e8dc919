"""The types of a function's returned scalars, kept as Python gives them.

numba boxes a returned scalar as a Python ``float``/``int``/``bool``/``complex``; the plain
function may return a NumPy scalar instead (``best = x[0]`` is an ``np.float64``; ``s = 0.0;
s += x32[i]`` is an ``np.float32`` under NumPy 2's promotion). :class:`ResultTypes` records,
from the plain function's result on the search's arguments, which returned leaves were NumPy
scalars and of what type, and gives a compiled variant's result those types back — only on
arguments of the same types and dtypes as the search's (other dtypes may give other result
types; those results are returned as numba gives them).

>>> import numpy as np
>>> x = np.arange(3, dtype=np.float32)
>>> rt = ResultTypes.of((1, np.float32(2.0)), (x,))
>>> got = rt.restore((1, 2.0), (x,))
>>> type(got[0]).__name__, type(got[1]).__name__
('int', 'float32')
>>> type(rt.restore((1, 2.0), (x.astype(np.float64),))[1]).__name__  # other dtypes: as given
'float'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ResultTypes"]

_PY_SCALARS = (bool, int, float, complex)


def _kinds(value: Any) -> Any:
    """The NumPy scalar type of each leaf of ``value`` (None where not a NumPy scalar)."""
    if isinstance(value, tuple):
        return tuple(_kinds(v) for v in value)
    return type(value) if isinstance(value, np.generic) else None


def _signature(args: tuple) -> tuple:
    return tuple((type(a), a.dtype if isinstance(a, np.ndarray) else None) for a in args)


def _restore(value: Any, kinds: Any) -> Any:
    if kinds is None:
        return value
    if isinstance(kinds, tuple):
        if not isinstance(value, tuple) or len(value) != len(kinds):
            return value
        return tuple(_restore(v, k) for v, k in zip(value, kinds, strict=True))
    if isinstance(value, _PY_SCALARS) and not isinstance(value, np.generic):
        try:
            return kinds(value)
        except (TypeError, ValueError, OverflowError):
            return value
    return value


@dataclass(frozen=True)
class ResultTypes:
    """NumPy scalar types of a result (``kinds``) on arguments of ``signature``."""

    kinds: Any
    signature: tuple

    @classmethod
    def of(cls, result: Any, args: tuple) -> ResultTypes:
        """The types of ``result``, the plain function's return value on ``args``."""
        return cls(_kinds(result), _signature(args))

    def restore(self, result: Any, args: tuple) -> Any:
        """``result`` of a compiled call on ``args``, its Python scalars cast back to the
        NumPy scalar types the plain function returned, when ``args`` have the search's
        types and dtypes; otherwise ``result`` as it is."""
        if self.kinds is None or _signature(args) != self.signature:
            return result
        return _restore(result, self.kinds)

    def wrap(self, impl: Callable[..., Any]) -> Callable[..., Any]:
        """``impl`` (positional arguments) with its results restored."""

        def call(*args: Any) -> Any:
            return self.restore(impl(*args), args)

        return call
