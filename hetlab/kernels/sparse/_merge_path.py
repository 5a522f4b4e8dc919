"""The merge-path search, written once and compiled for the CPU (njit) and the GPU (CUDA).

A CSR product walks two sorted lists at once, the row ends ``indptr[1:]`` and the nonzeros
``0 … nnz-1``; their merge has ``n_rows + nnz`` steps (Merrill & Garland, SC'16). Step number
``diagonal`` of the merge has finished ``i`` rows and consumed ``diagonal - i`` nonzeros, where
``i`` is found by a binary search along that diagonal. :mod:`.numba` cuts the path into one part
per thread; :mod:`._cuda_kernels` into ``items`` steps per GPU thread.

The function is plain Python with no ``min``/``max`` builtins (conditional expressions only),
so Numba compiles the same source as a CPU function and as an inlined CUDA device function.
"""

from __future__ import annotations

__all__ = ["merge_path_row"]


def merge_path_row(diagonal, indptr, n_rows, nnz):  # pragma: no cover - compiled
    """Rows finished at merge-path step ``diagonal`` (``0 ≤ diagonal ≤ n_rows + nnz``).

    Parameters
    ----------
    diagonal : int
        The step of the merge path.
    indptr : array of shape (n_rows + 1,), integer
        CSR row offsets.
    n_rows, nnz : int
        Rows of the matrix and its stored entries (``indptr[n_rows]``).

    Returns
    -------
    int
        ``i``: the number of rows finished; ``diagonal - i`` nonzeros are consumed.
    """
    lo = diagonal - nnz if diagonal > nnz else 0
    hi = diagonal if diagonal < n_rows else n_rows
    while lo < hi:
        pivot = (lo + hi) >> 1
        if indptr[pivot + 1] <= diagonal - pivot - 1:
            lo = pivot + 1
        else:
            hi = pivot
    return lo
