"""Numba CPU sparse kernels: multithreaded, work split along the merge path.

Load balance: a CSR product walks two lists at once, the row ends (``indptr[1:]``) and the
nonzeros; the *merge path* of the two has ``n_rows + nnz`` steps. Each of ``n_parts`` parts takes
an equal share of steps (Merrill & Garland, SC'16), found by a binary search on its diagonal, so
a part gets the same work whether its rows are long, short or empty, and a huge row is split
between parts. A row split between parts is finished by one part (which writes it) while the
others leave their partial sums in a carry slot; a short serial pass adds the carries.

Sums accumulate in float64 (for float32 matrices too; spmm accumulates in the output row, in
the matrix's dtype) within a part, and may be reassociated
(fastmath without the NaN/inf flags). Indices are read as unsigned integers so the compiled
loads skip numba's negative-index wraparound. ``prange`` bodies write
disjoint slots only. The ``*_parts`` functions take ``n_parts`` explicitly so tests can force
many splits on small matrices.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ...backends.numba import JIT_OPTIONS
from .._prefetch import prefetch
from ._merge_path import merge_path_row
from .formats import CSR

__all__ = ["spmv", "spmm", "sddmm", "spmv_parts", "spmm_parts", "sddmm_parts", "default_parts"]

#: numba options of these kernels: the project's, plus a fastmath set that keeps NaN/inf
#: semantics (sums may be reassociated: results match the reference within tolerance, not bit
#: for bit)
_FAST = {**JIT_OPTIONS, "fastmath": {"nsz", "arcp", "contract", "afn", "reassoc"}}

#: below this many merge-path steps (≈0.2 ms of serial work) a product runs as one part, outside
#: any parallel region: starting one costs ~10 µs on an idle machine but was measured at 4–24 ms
#: with numba's omp layer when other jobs share the cores
SERIAL_STEPS = 1 << 18

#: software prefetch of spmv: distance in entries of ``data``/``indices`` (and in rows of
#: ``indptr``), distance in nonzeros for ``x``, the most entries one row prefetches, and the
#: entries between two prefetches of a stream (a 64-byte line of float64; float32 values
#: and int32 indices get two prefetches per line). Measured on the 2M-row benchmark matrices
#: (2 threads, scipy timed in the same rounds): 64 entries ahead was 15% slower than 512;
#: 2048 beat 512 by ~7% on the Laplacian (rows of 7) and lost ~3% on the banded matrix
#: (rows of 16); prefetchnta and prefetcht1 instead of prefetcht0 were 15–50% slower. The x
#: prefetch took the uniform matrix from 24% to 33% of the triad,
#: but costs ~5–10% where x is read near the diagonal (banded, Laplacian), so it runs only
#: where the columns are scattered (see ``_x_is_local``).
AHEAD = 2048
X_AHEAD = 64
ROW_CAP = 4096
LINE = 8
#: x counts as local when sampled rows keep their columns within this many entries of the
#: diagonal (2**16 float64 = 512 KiB each side: the window of x stays in a 2 MiB L2)
LOCAL_SPAN = 1 << 16
LOCAL_SAMPLES = 64


def default_parts(A: CSR) -> int:
    """One part per numba thread, or one for small matrices."""
    steps = A.shape[0] + A.nnz
    return 1 if steps < SERIAL_STEPS else int(numba.get_num_threads())


#: the merge-path search, compiled from the source the CUDA kernels share
_merge_path_row = numba.njit(**_FAST)(merge_path_row)


@numba.njit(**_FAST)
def _bounds(t, n_parts, indptr):  # pragma: no cover - compiled
    """Unsigned merge-path start and end (row, nonzero) of part ``t``."""
    n_rows = indptr.shape[0] - 1
    nnz = np.int64(indptr[n_rows])
    total = n_rows + nnz
    d0 = t * total // n_parts
    d1 = (t + 1) * total // n_parts
    i = _merge_path_row(d0, indptr, n_rows, nnz)
    i_end = _merge_path_row(d1, indptr, n_rows, nnz)
    return np.uint64(i), np.uint64(d0 - i), np.uint64(i_end), np.uint64(d1 - i_end)


# Each part runs in its own compiled function: numba's parallel lowering of a prange body
# optimizes these loops worse (measured ~1.5x slower on SpMV) than a plain njit function.


@numba.njit(**_FAST)
def _x_is_local(indptr, indices, i, i_end, n_cols):  # pragma: no cover - compiled
    """Whether rows ``i … i_end-1`` read ``x`` near their diagonal: the first and last
    column of each of up to ``LOCAL_SAMPLES`` rows spread over the range lie within
    ``LOCAL_SPAN`` of the row's diagonal column (banded, stencil matrices: the window of
    ``x`` in use stays in L2 and the hardware prefetcher follows its fronts)."""
    one = np.uint64(1)
    n_rows = np.uint64(indptr.shape[0] - 1)
    span = np.int64(LOCAL_SPAN)
    stride = max((i_end - i) // np.uint64(LOCAL_SAMPLES), one)
    r = i
    while r < i_end:
        lo, hi = np.uint64(indptr[r]), np.uint64(indptr[r + one])
        if lo < hi:
            diag = np.int64(r * np.uint64(n_cols) // n_rows)
            if (abs(np.int64(indices[lo]) - diag) > span
                    or abs(np.int64(indices[hi - one]) - diag) > span):
                return False
        r += stride
    return True


@numba.njit(**_FAST)
def _spmv_part(t, n_parts, indptr, indices, data, x, y):  # pragma: no cover - compiled
    """Rows finished inside part ``t`` go to ``y``; returns (row, partial sum) of its tail.

    Software prefetch: ``data`` and ``indices`` ``AHEAD`` entries before they are read (a
    cursor ``pf`` that each row pushes to its end + ``AHEAD``, one prefetch per ``LINE``
    entries, at most ``ROW_CAP`` entries per row: a huge row leaves the rest to the hardware
    prefetcher) and ``indptr`` ``AHEAD`` rows ahead. Where the part's columns are scattered
    (:func:`_x_is_local` false) also ``x[indices[j + X_AHEAD]]``, the vector entry
    ``X_AHEAD`` nonzeros ahead (except in the last rows, where ``j + X_AHEAD`` would pass the
    end of ``indices``). Where they are local, the row loop runs in steps of 4 entries
    summed as a tree, then 2, then 1 (no loop branch per entry: measured ~10% faster than
    the plain loop on the Laplacian's rows of 7).
    """
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    ahead, x_ahead, cap, line = (np.uint64(AHEAD), np.uint64(X_AHEAD), np.uint64(ROW_CAP),
                                 np.uint64(LINE))
    nnz = np.uint64(indices.shape[0])
    i, j, i_end, j_end = _bounds(t, n_parts, indptr)
    x_prefetch = not _x_is_local(indptr, indices, i, i_end, x.shape[0])
    pf = j + ahead
    while i < i_end:
        end = np.uint64(indptr[i + one])
        hi = end + ahead
        if pf + cap < hi:
            pf = hi - cap
        while pf < hi:
            prefetch(data, pf)
            prefetch(indices, pf)
            pf += line
        prefetch(indptr, i + ahead)
        acc = 0.0
        if x_prefetch and end + x_ahead <= nnz:
            while j < end:
                prefetch(x, indices[j + x_ahead])
                acc += data[j] * x[indices[j]]
                j += one
        else:
            while j + four <= end:
                acc += ((data[j] * x[indices[j]] + data[j + one] * x[indices[j + one]])
                        + (data[j + two] * x[indices[j + two]]
                           + data[j + three] * x[indices[j + three]]))
                j += four
            if j + two <= end:
                acc += data[j] * x[indices[j]] + data[j + one] * x[indices[j + one]]
                j += two
            if j < end:
                acc += data[j] * x[indices[j]]
                j += one
        y[i] = acc
        i += one
    acc = 0.0
    while j < j_end:
        acc += data[j] * x[indices[j]]
        j += one
    return i_end, acc


@numba.njit(parallel=True, **_FAST)
def _spmv(indptr, indices, data, x, y, n_parts):  # pragma: no cover - compiled
    n_rows = np.uint64(indptr.shape[0] - 1)
    carry_row = np.empty(n_parts, np.uint64)
    carry_val = np.zeros(n_parts, np.float64)
    for t in prange(n_parts):
        carry_row[t], carry_val[t] = _spmv_part(t, n_parts, indptr, indices, data, x, y)
    for t in range(n_parts):
        if carry_row[t] < n_rows:
            y[carry_row[t]] += carry_val[t]


@numba.njit(**_FAST)
def _spmm_part(t, n_parts, indptr, indices, data, X, Y, carry):  # pragma: no cover - compiled
    """Rows finished inside part ``t`` go to ``Y``, its tail's partial row to ``carry``;
    returns the tail's row."""
    one = np.uint64(1)
    k = X.shape[1]
    i, j, i_end, j_end = _bounds(t, n_parts, indptr)
    while i < i_end:
        yr = Y[i]  # accumulated in place: the row stays in L1 (measured faster than a copy)
        yr[:] = 0.0
        end = np.uint64(indptr[i + one])
        while j < end:
            v = data[j]
            xr = X[indices[j]]
            for c in range(k):
                yr[c] += v * xr[c]
            j += one
        i += one
    while j < j_end:
        v = data[j]
        xr = X[indices[j]]
        for c in range(k):
            carry[c] += v * xr[c]
        j += one
    return i_end


@numba.njit(parallel=True, **_FAST)
def _spmm(indptr, indices, data, X, Y, n_parts):  # pragma: no cover - compiled
    n_rows = np.uint64(indptr.shape[0] - 1)
    k = X.shape[1]
    carry_row = np.empty(n_parts, np.uint64)
    carry = np.zeros((n_parts, k), np.float64)
    for t in prange(n_parts):
        carry_row[t] = _spmm_part(t, n_parts, indptr, indices, data, X, Y, carry[t])
    for t in range(n_parts):
        if carry_row[t] < n_rows:
            yr = Y[carry_row[t]]
            for c in range(k):
                yr[c] += carry[t, c]


@numba.njit(**_FAST)
def _sddmm_part(t, n_parts, indptr, indices, data, X, Y, out):  # pragma: no cover - compiled
    one = np.uint64(1)
    k = X.shape[1]
    row, j, _, j_end = _bounds(t, n_parts, indptr)
    while j < j_end:
        while np.uint64(indptr[row + one]) <= j:
            row += one
        xr = X[row]
        yr = Y[indices[j]]
        acc = 0.0
        for c in range(k):
            acc += xr[c] * yr[c]
        out[j] = data[j] * acc
        j += one


@numba.njit(parallel=True, **_FAST)
def _sddmm(indptr, indices, data, X, Y, out, n_parts):  # pragma: no cover - compiled
    for t in prange(n_parts):
        _sddmm_part(t, n_parts, indptr, indices, data, X, Y, out)


def _unsigned(A: CSR) -> tuple[np.ndarray, np.ndarray]:
    """``indptr`` and ``indices`` viewed as unsigned (no copy; they are validated >= 0), so
    compiled indexing skips the negative-index wraparound test (measured ~2x on SpMV)."""
    u = np.uint32 if A.index_dtype == np.int32 else np.uint64
    return A.indptr.view(u), A.indices.view(u)


def spmv_parts(A: CSR, x: np.ndarray, n_parts: int) -> np.ndarray:
    """``A @ x`` split into ``n_parts`` merge-path parts."""
    y = np.empty(A.shape[0], dtype=A.dtype)
    if n_parts == 1:  # no parallel region (its start-up can cost ms on a busy machine)
        _spmv_part(0, 1, *_unsigned(A), A.data, x, y)
    else:
        _spmv(*_unsigned(A), A.data, x, y, n_parts)
    return y


def spmm_parts(A: CSR, X: np.ndarray, n_parts: int) -> np.ndarray:
    """``A @ X`` split into ``n_parts`` merge-path parts."""
    Y = np.empty((A.shape[0], X.shape[1]), dtype=A.dtype)
    if n_parts == 1:
        _spmm_part(0, 1, *_unsigned(A), A.data, X, Y, np.zeros(X.shape[1]))
    else:
        _spmm(*_unsigned(A), A.data, X, Y, n_parts)
    return Y


def sddmm_parts(S: CSR, X: np.ndarray, Y: np.ndarray, n_parts: int) -> CSR:
    """``S ⊙ (X @ Y.T)`` split into ``n_parts`` merge-path parts."""
    out = np.empty(S.nnz, dtype=S.dtype)
    if n_parts == 1:
        _sddmm_part(0, 1, *_unsigned(S), S.data, X, Y, out)
    else:
        _sddmm(*_unsigned(S), S.data, X, Y, out, n_parts)
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
