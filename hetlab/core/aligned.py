"""Host arrays whose data start on a cache-line boundary (64 bytes).

Why: the W4 kernels read each row's packed codes 64 bytes at a time. From a buffer that
starts 16 or 48 bytes into a cache line — what ``malloc`` gives a large NumPy array here —
every such load touches two lines: ``benchmarks/w4_align_ab.py`` times the W4 GEMV on the
same codes at each placement (figures: ``benchmarks/results/quiet-2026-12-02/``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CACHE_LINE", "aligned_empty", "is_aligned", "aligned_copy"]

#: bytes per cache line of the x86 and Arm server cores we run on
CACHE_LINE = 64


def aligned_empty(shape: int | tuple[int, ...], dtype: Any,
                  align: int = CACHE_LINE) -> np.ndarray:
    """An uninitialized C-ordered array whose first byte is ``align``-byte aligned.

    A view into a slightly larger byte buffer (``align`` bytes more), which it keeps alive.

    >>> a = aligned_empty((3, 5), np.uint32)
    >>> a.shape, a.dtype, a.ctypes.data % 64, a.flags.c_contiguous
    ((3, 5), dtype('uint32'), 0, True)
    """
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    buf = np.empty(nbytes + align, np.uint8)
    off = (-buf.ctypes.data) % align
    return buf[off:off + nbytes].view(dt).reshape(shape)


def is_aligned(a: np.ndarray, align: int = CACHE_LINE) -> bool:
    """Whether ``a``'s data start on an ``align``-byte boundary (empty arrays: True)."""
    return a.size == 0 or a.ctypes.data % align == 0


def aligned_copy(a: np.ndarray, align: int = CACHE_LINE) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose data are ``align``-byte aligned (same dtype and
    shape; writeable)."""
    out = aligned_empty(a.shape, a.dtype, align)
    out[...] = a
    return out
