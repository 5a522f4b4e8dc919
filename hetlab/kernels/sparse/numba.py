"""Numba CPU sparse kernels: multithreaded, work split along the merge path.

Load balance: a CSR product walks two lists at once, the row ends (``indptr[1:]``) and the
nonzeros; the *merge path* of the two has ``n_rows + nnz`` steps. Each of ``n_parts`` parts takes
an equal share of steps (Merrill & Garland, SC'16), found by a binary search on its diagonal, so
a part gets the same work whether its rows are long, short or empty, and a huge row is split
between parts. A row split between parts is finished by one part (which writes it) while the
others leave their partial sums in a carry slot; a short serial pass adds the carries.

Sums accumulate in float64 (for float32 matrices too) within a part. ``prange`` bodies write
disjoint slots only. The ``*_parts`` functions take ``n_parts`` explicitly so tests can force
many splits on small matrices.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ...backends.numba import JIT_OPTIONS
from ...sparse import CSR

__all__ = ["spmv", "spmm", "sddmm", "spmv_parts", "spmm_parts", "sddmm_parts", "default_parts"]

#: below this many merge-path steps a product runs as one part (threads cost more than they win)
SERIAL_STEPS = 1 << 15


def default_parts(A: CSR) -> int:
    """One part per numba thread, or one for small matrices."""
    steps = A.shape[0] + A.nnz
    return 1 if steps < SERIAL_STEPS else int(numba.get_num_threads())


@numba.njit(**JIT_OPTIONS)
def _path_search(diagonal, indptr, n_rows, nnz):  # pragma: no cover - compiled
    """Merge-path coordinate (rows finished, nonzeros consumed) on ``diagonal``."""
    lo = max(diagonal - nnz, 0)
    hi = min(diagonal, n_rows)
    while lo < hi:
        pivot = (lo + hi) >> 1
        if indptr[pivot + 1] <= diagonal - pivot - 1:
            lo = pivot + 1
        else:
            hi = pivot
    return lo, diagonal - lo


@numba.njit(parallel=True, **JIT_OPTIONS)
def _spmv(indptr, indices, data, x, y, n_parts):  # pragma: no cover - compiled
    n_rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    total = n_rows + nnz
    carry_row = np.empty(n_parts, np.int64)
    carry_val = np.zeros(n_parts, np.float64)
    for t in prange(n_parts):
        i, j = _path_search(t * total // n_parts, indptr, n_rows, nnz)
        i_end, j_end = _path_search((t + 1) * total // n_parts, indptr, n_rows, nnz)
        while i < i_end:
            acc = 0.0
            end = indptr[i + 1]
            while j < end:
                acc += data[j] * x[indices[j]]
                j += 1
            y[i] = acc
            i += 1
        acc = 0.0
        while j < j_end:
            acc += data[j] * x[indices[j]]
            j += 1
        carry_row[t] = i_end
        carry_val[t] = acc
    for t in range(n_parts):
        if carry_row[t] < n_rows:
            y[carry_row[t]] += carry_val[t]


@numba.njit(parallel=True, **JIT_OPTIONS)
def _spmm(indptr, indices, data, X, Y, n_parts):  # pragma: no cover - compiled
    n_rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    k = X.shape[1]
    total = n_rows + nnz
    carry_row = np.empty(n_parts, np.int64)
    carry = np.zeros((n_parts, k), np.float64)
    for t in prange(n_parts):
        i, j = _path_search(t * total // n_parts, indptr, n_rows, nnz)
        i_end, j_end = _path_search((t + 1) * total // n_parts, indptr, n_rows, nnz)
        acc = np.empty(k, np.float64)
        while i < i_end:
            acc[:] = 0.0
            end = indptr[i + 1]
            while j < end:
                v = data[j]
                xr = X[indices[j]]
                for c in range(k):
                    acc[c] += v * xr[c]
                j += 1
            yr = Y[i]
            for c in range(k):
                yr[c] = acc[c]
            i += 1
        cr = carry[t]
        while j < j_end:
            v = data[j]
            xr = X[indices[j]]
            for c in range(k):
                cr[c] += v * xr[c]
            j += 1
        carry_row[t] = i_end
    for t in range(n_parts):
        if carry_row[t] < n_rows:
            for c in range(k):
                Y[carry_row[t], c] += carry[t, c]


@numba.njit(parallel=True, **JIT_OPTIONS)
def _sddmm(indptr, indices, data, X, Y, out, n_parts):  # pragma: no cover - compiled
    n_rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    k = X.shape[1]
    total = n_rows + nnz
    for t in prange(n_parts):
        row, j = _path_search(t * total // n_parts, indptr, n_rows, nnz)
        _, j_end = _path_search((t + 1) * total // n_parts, indptr, n_rows, nnz)
        while j < j_end:
            while indptr[row + 1] <= j:
                row += 1
            xr = X[row]
            yr = Y[indices[j]]
            acc = 0.0
            for c in range(k):
                acc += xr[c] * yr[c]
            out[j] = data[j] * acc
            j += 1


def spmv_parts(A: CSR, x: np.ndarray, n_parts: int) -> np.ndarray:
    """``A @ x`` split into ``n_parts`` merge-path parts."""
    y = np.empty(A.shape[0], dtype=A.dtype)
    _spmv(A.indptr, A.indices, A.data, x, y, n_parts)
    return y


def spmm_parts(A: CSR, X: np.ndarray, n_parts: int) -> np.ndarray:
    """``A @ X`` split into ``n_parts`` merge-path parts."""
    Y = np.empty((A.shape[0], X.shape[1]), dtype=A.dtype)
    _spmm(A.indptr, A.indices, A.data, X, Y, n_parts)
    return Y


def sddmm_parts(S: CSR, X: np.ndarray, Y: np.ndarray, n_parts: int) -> CSR:
    """``S ⊙ (X @ Y.T)`` split into ``n_parts`` merge-path parts."""
    out = np.empty(S.nnz, dtype=S.dtype)
    _sddmm(S.indptr, S.indices, S.data, X, Y, out, n_parts)
    return CSR(S.indptr, S.indices, out, S.shape, check=False)


def spmv(A: CSR, x: np.ndarray) -> np.ndarray:
    """Numba implementation of :func:`hetlab.spmv` (validated arguments)."""
    return spmv_parts(A, x, default_parts(A))


def spmm(A: CSR, X: np.ndarray) -> np.ndarray:
    """Numba implementation of :func:`hetlab.spmm` (validated arguments)."""
    return spmm_parts(A, X, default_parts(A))


def sddmm(S: CSR, X: np.ndarray, Y: np.ndarray) -> CSR:
    """Numba implementation of :func:`hetlab.sddmm` (validated arguments)."""
    return sddmm_parts(S, X, Y, default_parts(S))
