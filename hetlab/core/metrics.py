"""Error metrics shared by kernel specs: 0.0 means identical, compared with a tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["mismatch_fraction", "relative_error"]


def mismatch_fraction(result: Any, expected: Any) -> float:
    """Fraction of differing entries (exact kernels); 1.0 when shapes differ."""
    r, e = np.asarray(result), np.asarray(expected)
    if r.shape != e.shape:
        return 1.0
    return float(np.mean(r != e)) if e.size else 0.0


def relative_error(result: Any, expected: Any) -> float:
    """``max |result − expected| / max |expected|`` in float64; inf when shapes differ.

    When ``expected`` is all zeros the absolute difference is returned instead.
    """
    r, e = np.asarray(result, np.float64), np.asarray(expected, np.float64)
    if r.shape != e.shape:
        return float("inf")
    if not e.size:
        return 0.0
    diff = float(np.max(np.abs(r - e)))
    scale = float(np.max(np.abs(e)))
    return diff / scale if scale > 0 else diff
