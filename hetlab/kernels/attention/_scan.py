"""Input scan for attention's validation: max|x|, or NaN when any value is not finite, from
two read-only reductions (``max`` and ``min``: NumPy's are SIMD and allocate nothing; NaN
propagates through both, ±inf shows as the extreme). ``isfinite(x).all()`` and
``abs(x).max()`` would each write an array-sized temporary — for the decode kernel, which reads
K and V once, that validation cost several times the kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["max_abs"]


def max_abs(a: Any) -> float:
    """``max|a|`` of a NumPy or CuPy float array; NaN when ``a`` holds NaN or ±inf.

    >>> max_abs(np.array([[1.0, -3.0], [2.0, 0.5]], np.float32))
    3.0
    >>> bool(np.isnan(max_abs(np.array([1.0, -np.inf]))))
    True
    """
    if a.size == 0:
        return 0.0
    top = max(float(a.max()), -float(a.min()))
    return top if np.isfinite(top) else float("nan")
