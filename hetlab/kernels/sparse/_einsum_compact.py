"""Compaction of a sparse einsum output written into per-row reserved slots (numba).

Row ``i`` of a sparse output was written at ``off[i] … off[i] + counts[i] - 1`` (``off``: the
offsets of per-row upper bounds); :func:`compact` moves every row to ``indptr[i] …`` with
``indptr`` the running sum of ``counts``. Imported only when a sparse einsum needs it.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ...backends.numba import JIT_OPTIONS

__all__ = ["compact"]


def _copy_rows(off, indptr, cols_in, vals_in, cols_out, vals_out):  # pragma: no cover
    for i in prange(indptr.shape[0] - 1):
        src = off[i]
        for t in range(indptr[i + 1] - indptr[i]):
            cols_out[indptr[i] + t] = cols_in[src + t]
            vals_out[indptr[i] + t] = vals_in[src + t]


_serial = numba.njit(**JIT_OPTIONS)(_copy_rows)
_parallel = numba.njit(parallel=True, **JIT_OPTIONS)(_copy_rows)


def compact(off: np.ndarray, counts: np.ndarray, cols: np.ndarray, vals: np.ndarray, *,
            parallel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, cols, vals)`` of the rows stored from ``off`` with ``counts`` entries each.

    Parameters
    ----------
    off : ndarray of shape (n_rows + 1,), int64
        Reserved slot offsets (``off[-1]`` = slots in all).
    counts : ndarray of shape (n_rows,), int64
        Entries written per row (``counts[i] <= off[i + 1] - off[i]``).
    cols, vals : ndarray of shape (off[-1],)
        Column and value of each slot.
    parallel : bool
        Copy rows in a ``prange`` loop.
    """
    indptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    if nnz == int(off[-1]):  # every slot used: already compact
        return indptr, cols, vals
    cols_out = np.empty(nnz, dtype=cols.dtype)
    vals_out = np.empty(nnz, dtype=vals.dtype)
    (_parallel if parallel else _serial)(off, indptr, cols, vals, cols_out, vals_out)
    return indptr, cols_out, vals_out
