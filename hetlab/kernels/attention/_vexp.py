"""A float32 ``exp`` that vectorizes, for numba kernels: ``exp(x)`` as ``2^t``, ``t = x·log₂e``
split as ``n + f``, ``2^f`` from a degree-6 polynomial, ``2^n`` written into the exponent bits.

libm's ``expf`` is one scalar call per value; this loop compiles to a few SIMD instructions
per 16 values. ``t`` is clamped to [−127, 127]: values whose exp underflows float32's normal
range become exactly 0 (−inf included), values above ``e^88`` saturate at ``2^127·2^f`` —
callers keep their arguments ≤ ~88 where the value matters (the decode kernel recomputes
any part whose arguments exceeded its margin). Relative error ≤ 3e-7 + |x|·2⁻²³ (the second
term: ``t`` rounded to float32, as in any float32 exp).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["EXP2_POLY", "exp_shifted"]

#: 2^f ≈ Σ EXP2_POLY[i]·f^i on [0, 1): least-squares degree 6, relative error ≤ 6.1e-9
EXP2_POLY = (1.0000000061006686, 0.693146838839268, 0.24023109004394078, 0.05547892877882392,
             0.00968616939752204, 0.0012382470445335384, 0.00021871340717184224)

_FM = {"reassoc", "contract", "nsz", "arcp"}


@njit(fastmath=_FM, cache=True, inline="always")
def exp_shifted(s, cols, ref, ebits, fbits):  # pragma: no cover - compiled
    """``s[:cols] = exp(s[:cols] − ref)`` in float32, in place; returns their sum.

    ``ebits`` is an int32 scratch array of at least ``cols`` and ``fbits`` its float32 view
    (``ebits.view(np.float32)``). NaN arguments give a finite weight: callers that must see
    NaN check their arguments themselves.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([0.0, 1.0, -200.0, 2.0], np.float32); e = np.empty(4, np.int32)
    >>> total = exp_shifted(s, 4, np.float32(1.0), e, e.view(np.float32))
    >>> bool(np.allclose(s, np.exp(np.array([-1.0, 0.0, -201.0, 1.0])), rtol=1e-6))
    True
    """
    for c in range(cols):
        t = (s[c] - ref) * np.float32(1.4426950408889634)
        t = min(max(t, np.float32(-127.0)), np.float32(127.0))
        n = np.floor(t)  # float32 (math.floor would give int64 and promote f to float64)
        f = t - n
        p = np.float32(EXP2_POLY[6])
        p = p * f + np.float32(EXP2_POLY[5])
        p = p * f + np.float32(EXP2_POLY[4])
        p = p * f + np.float32(EXP2_POLY[3])
        p = p * f + np.float32(EXP2_POLY[2])
        p = p * f + np.float32(EXP2_POLY[1])
        p = p * f + np.float32(EXP2_POLY[0])
        ebits[c] = (np.int32(n) + 127) << 23
        s[c] = p
    total = np.float32(0.0)
    for c in range(cols):
        w = s[c] * fbits[c]
        s[c] = w
        total += w
    return total
