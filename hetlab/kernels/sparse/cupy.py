"""GPU sparse kernels: Numba CUDA kernels (:mod:`._cuda_kernels`) launched on CuPy arrays.

Receives the validated keyword arguments (matrix and dense operands already on the device,
see :mod:`hetlab.core.dispatch`), allocates zeroed outputs and launches. The array namespace
comes from the arguments, so the same drivers run on NumPy arrays under Numba's CUDA
simulator. Sums are added in another order than the reference's (atomics): results match it
within the specs' tolerance, not bit for bit. On a GPU, tests/gpu also compares with cuSPARSE
through ``cupyx.scipy.sparse``.
"""

from __future__ import annotations

from typing import Any

from ...core.validation import array_module
from ...errors import InvalidInputError
from .._cuda_launch import launch_setup
from . import _cuda_kernels as ck
from .formats import CSR

__all__ = ["spmv", "spmv_merge", "spmv_rows", "row_lanes", "spmm", "sddmm", "ITEMS_PER_THREAD",
           "THREADS"]

#: merge-path steps per thread (rows + nonzeros)
ITEMS_PER_THREAD = 16
#: threads per block
THREADS = 256


def _grid(count: int) -> tuple[int, int]:
    threads = min(THREADS, max(count, 1))
    return max((count + threads - 1) // threads, 1), threads


def spmv(A: CSR, x: Any) -> Any:
    """CUDA implementation of :func:`hetlab.spmv` (validated arguments on the device): the
    merge-path kernel (balanced on any row-length distribution), chosen over the row-group
    kernel :func:`spmv_rows`, whose work per thread follows the row lengths. ``benchmarks/gpu.py``
    times both beside cuSPARSE on a GPU (``make gpu-check`` writes its report to
    benchmarks/results/)."""
    return spmv_merge(A, x)


def spmv_merge(A: CSR, x: Any, items: int | None = None) -> Any:
    """SpMV with the merge-path kernel: ``items`` rows + nonzeros per thread (default
    :data:`ITEMS_PER_THREAD`), atomics for rows split between threads."""
    items = ITEMS_PER_THREAD if items is None else int(items)
    if items < 1:
        raise InvalidInputError(f"spmv_merge: items must be >= 1; got {items}.")
    xp = array_module(A.data)
    y = xp.zeros(A.shape[0], dtype=A.dtype)
    steps = A.shape[0] + A.nnz
    if steps and A.nnz:
        stream, w = launch_setup(xp)
        blocks, threads = _grid(-(-steps // items))
        ck.spmv_kernel[blocks, threads, stream](w(A.indptr), w(A.indices), w(A.data), w(x),
                                                w(y), items)
    return y


def row_lanes(A: CSR) -> int:
    """Threads per row for :func:`spmv_rows`: the power of two nearest the mean row length
    (nonzeros / rows), between 2 and 32."""
    mean = A.nnz / max(A.shape[0], 1)
    lanes = 2
    while lanes < 32 and lanes * 1.5 < mean:
        lanes *= 2
    return lanes


def spmv_rows(A: CSR, x: Any, lanes: int | None = None) -> Any:
    """SpMV with ``lanes`` threads per row (CSR-vector, :func:`._cuda_kernels.spmv_rows_kernel`);
    ``lanes`` defaults to :func:`row_lanes`. Each row written once, no atomics."""
    lanes = row_lanes(A) if lanes is None else int(lanes)
    if lanes not in (1, 2, 4, 8, 16, 32):
        raise InvalidInputError(f"spmv_rows: lanes must be a power of two <= 32; got {lanes}.")
    xp = array_module(A.data)
    y = xp.zeros(A.shape[0], dtype=A.dtype)
    if A.shape[0] and A.nnz:
        stream, w = launch_setup(xp)
        threads = min(THREADS, ck.ROWS_BLOCK)
        threads = max(threads - threads % lanes, lanes)  # whole row groups per block
        blocks = -(-A.shape[0] * lanes // threads)
        ck.spmv_rows_kernel[blocks, threads, stream](w(A.indptr), w(A.indices), w(A.data),
                                                     w(x), w(y), lanes)
    return y


def spmm(A: CSR, X: Any) -> Any:
    """CUDA implementation of :func:`hetlab.spmm` (validated arguments on the device)."""
    xp = array_module(A.data)
    k = X.shape[1]
    Y = xp.zeros((A.shape[0], k), dtype=A.dtype)
    steps = A.shape[0] + A.nnz
    if steps and A.nnz:
        stream, w = launch_setup(xp)
        blocks, threads = _grid(-(-steps // ITEMS_PER_THREAD) * k)
        ck.spmm_kernel[blocks, threads, stream](w(A.indptr), w(A.indices), w(A.data), w(X),
                                                w(Y), ITEMS_PER_THREAD)
    return Y


def sddmm(S: CSR, X: Any, Y: Any) -> CSR:
    """CUDA implementation of :func:`hetlab.sddmm` (validated arguments on the device)."""
    xp = array_module(S.data)
    out = xp.zeros(S.nnz, dtype=S.dtype)
    if S.nnz:
        stream, w = launch_setup(xp)
        blocks, threads = _grid(S.nnz)
        ck.sddmm_kernel[blocks, threads, stream](w(S.indptr), w(S.indices), w(S.data), w(X),
                                                 w(Y), w(out))
    return CSR(S.indptr, S.indices, out, S.shape, check=False)
