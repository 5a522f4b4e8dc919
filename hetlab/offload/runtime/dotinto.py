"""``dot_into(a, b, out)``: a library product written straight into its output array.

A function block whose statement is ``C[:ni, :nj] = A @ B`` (a matmul or matvec assigned to
the whole output) costs, in numba, a fresh array for the product and a second pass copying it
into ``C``. When ``C`` is the whole array at run time, the generated numba code
(:mod:`hetlab.offload.analysis.catalogue`) calls ``dot_into(A, B, C)`` instead, and BLAS
writes ``C`` itself (``np.dot(a, b, out)``): on three chained 220 × 230 products the temporaries
cost ~25 % of the time (the chain3 answer key's notes in
``benchmarks/offload_suite/designs_dense.py``: 1.09 ms with them, 0.87 ms without).

numba's ``np.dot(a, b, out)`` is only safe for an ``out`` typed C-contiguous (an ``out`` of
any other layout is copied, written, and the copy dropped: the result would be lost), with
``a``, ``b`` and ``out`` of one float or complex dtype, and never when ``out`` shares memory
with an operand (BLAS reads what it is writing). The overload below checks the first two at
compile time and the third on every call; in every other case it does what the statement
did, ``out[...] = a @ b`` (with the same casting).

Shapes: ``a`` (m, k) and ``b`` (k, n) → ``out`` (m, n); ``a`` (m, k) and ``b`` (k,) → ``out``
(m,); ``a`` (k,) and ``b`` (k, n) → ``out`` (n,). Returns ``out``.

Importing this module imports numba; only generated offload code imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, types
from numba.extending import overload

__all__ = ["dot_into"]

_BLAS_DTYPES = (types.float32, types.float64, types.complex64, types.complex128)


def dot_into(a: Any, b: Any, out: Any) -> Any:
    """``out[...] = a @ b`` (pure Python form; compiled code uses the overload)."""
    out[...] = a @ b
    return out


@njit(cache=True)
def _span(x: Any) -> tuple[int, int]:
    """Byte range [lo, hi) that ``x``'s elements occupy (any strides, either sign)."""
    lo = hi = x.ctypes.data
    for d in range(x.ndim):
        reach = (x.shape[d] - 1) * x.strides[d]
        if reach < 0:
            lo += reach
        else:
            hi += reach
    return lo, hi + x.itemsize


@njit(cache=True)
def _overlap(x: Any, out: Any) -> bool:
    if x.size == 0 or out.size == 0:
        return False
    xl, xh = _span(x)
    ol, oh = _span(out)
    return xl < oh and ol < xh


def _fits_blas(a: Any, b: Any, out: Any) -> bool:
    """Whether numba's ``np.dot(a, b, out)`` writes ``out`` itself for these types."""
    if not all(isinstance(t, types.Array) for t in (a, b, out)):
        return False
    if out.layout != "C" or out.dtype not in _BLAS_DTYPES or not out.mutable:
        return False
    if a.dtype != out.dtype or b.dtype != out.dtype:
        return False
    return (a.ndim, b.ndim, out.ndim) in ((2, 2, 2), (2, 1, 1), (1, 2, 1))


@overload(dot_into, jit_options={"cache": True})
def _dot_into_overload(a, b, out):  # numba compares these names without annotations
    if _fits_blas(a, b, out):
        def blas(a, b, out):  # pragma: no cover - compiled
            if _overlap(a, out) or _overlap(b, out):
                out[...] = a @ b
            else:
                np.dot(a, b, out)
            return out
        return blas

    def plain(a, b, out):  # pragma: no cover - compiled
        out[...] = a @ b
        return out
    return plain
