"""CUDA kernels of the sparse family, written with Numba's CUDA target.

Never imports CuPy: the kernels take CuPy arrays on a GPU and NumPy arrays under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1`` set before Numba is imported), which is how they are
tested without a GPU (tests/_cudasim_sparse_cases.py). Launches live in :mod:`.cupy`.

Load balance as on the CPU (:mod:`.numba`): the merge path of row ends and nonzeros is cut
into equal segments of ``items`` steps, one per thread (spmv) or per (segment, column) thread
(spmm, column fastest so a warp reads consecutive columns of a row of X). A thread adds every
row sum it finishes, and the partial sum of a row it leaves unfinished, into the zeroed output
with ``cuda.atomic.add``: a row split between threads (a huge row) is summed in parts. SDDMM
runs one thread per nonzero, finding its row by binary search.

The merge-path search is :func:`._merge_path.merge_path_row`, the source the CPU kernels
compile too, here as an inlined device function. Numba compiles a device function for the
current GPU's compute capability, so checking the PTX without a GPU
(tests/test_sparse_cudasim.py, sm_90) names that capability for it.
"""

from __future__ import annotations

from numba import cuda, float64

from ._merge_path import merge_path_row

__all__ = ["spmv_kernel", "spmv_rows_kernel", "spmm_kernel", "sddmm_kernel", "ROWS_BLOCK"]

#: the merge-path search, compiled from the source the CPU kernels share (inlined)
_merge_path_row = cuda.jit(device=True, inline=True)(merge_path_row)

#: most threads per block of :func:`spmv_rows_kernel` (its shared-memory scratch)
ROWS_BLOCK = 256


@cuda.jit
def spmv_kernel(indptr, indices, data, x, y, items):  # pragma: no cover - device code
    t = cuda.grid(1)
    n_rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    total = n_rows + nnz
    d0 = t * items
    if d0 >= total:
        return
    d1 = d0 + items if d0 + items < total else total
    i = _merge_path_row(d0, indptr, n_rows, nnz)
    i_end = _merge_path_row(d1, indptr, n_rows, nnz)
    j = d0 - i
    j_end = d1 - i_end
    acc = 0.0
    while i < i_end:
        end = indptr[i + 1]
        while j < end:
            acc += data[j] * x[indices[j]]
            j += 1
        cuda.atomic.add(y, i, acc)
        acc = 0.0
        i += 1
    while j < j_end:
        acc += data[j] * x[indices[j]]
        j += 1
    if i_end < n_rows and acc != 0.0:
        cuda.atomic.add(y, i_end, acc)


@cuda.jit
def spmv_rows_kernel(indptr, indices, data, x, y, lanes):  # pragma: no cover - device code
    """``lanes`` consecutive threads per row ("CSR-vector"): the row's entries strided by
    ``lanes``, so a warp reads ``32 / lanes`` runs of consecutive entries (coalesced), then a
    tree sum in shared memory. ``lanes`` is a power of two ≤ 32 dividing the block; no
    atomics, every row written once. Suits rows of similar length (one long row keeps its
    group busy alone: the merge-path kernel is for skewed matrices)."""
    tid = cuda.threadIdx.x
    t = cuda.blockIdx.x * cuda.blockDim.x + tid
    n_rows = indptr.shape[0] - 1
    row = t // lanes
    lane = t - row * lanes
    acc = 0.0
    if row < n_rows:
        for j in range(indptr[row] + lane, indptr[row + 1], lanes):
            acc += data[j] * x[indices[j]]
    sm = cuda.shared.array(ROWS_BLOCK, float64)
    sm[tid] = acc
    cuda.syncthreads()
    step = lanes >> 1
    while step > 0:  # uniform over the block: every thread reaches each barrier
        if lane < step:
            sm[tid] += sm[tid + step]
        cuda.syncthreads()
        step >>= 1
    if lane == 0 and row < n_rows:
        y[row] = sm[tid]


@cuda.jit
def spmm_kernel(indptr, indices, data, X, Y, items):  # pragma: no cover - device code
    g = cuda.grid(1)
    k = X.shape[1]
    t = g // k
    c = g - t * k
    n_rows = indptr.shape[0] - 1
    nnz = indices.shape[0]
    total = n_rows + nnz
    d0 = t * items
    if d0 >= total:
        return
    d1 = d0 + items if d0 + items < total else total
    i = _merge_path_row(d0, indptr, n_rows, nnz)
    i_end = _merge_path_row(d1, indptr, n_rows, nnz)
    j = d0 - i
    j_end = d1 - i_end
    acc = 0.0
    while i < i_end:
        end = indptr[i + 1]
        while j < end:
            acc += data[j] * X[indices[j], c]
            j += 1
        cuda.atomic.add(Y, (i, c), acc)
        acc = 0.0
        i += 1
    while j < j_end:
        acc += data[j] * X[indices[j], c]
        j += 1
    if i_end < n_rows and acc != 0.0:
        cuda.atomic.add(Y, (i_end, c), acc)


@cuda.jit
def sddmm_kernel(indptr, indices, data, X, Y, out):  # pragma: no cover - device code
    j = cuda.grid(1)
    if j >= indices.shape[0]:
        return
    lo = 0
    hi = indptr.shape[0] - 1
    while hi - lo > 1:  # the row r with indptr[r] <= j < indptr[r + 1]
        mid = (lo + hi) >> 1
        if indptr[mid] <= j:
            lo = mid
        else:
            hi = mid
    col = indices[j]
    acc = 0.0
    for c in range(X.shape[1]):
        acc += X[lo, c] * Y[col, c]
    out[j] = data[j] * acc
