"""GPU point-cloud kernels: Numba CUDA kernels launched on CuPy arrays.

The functions here receive the validated keyword arguments of the kernel specs (see
:mod:`.spec`) with arrays already on the device and return device arrays equal to
:mod:`.reference`'s results (indices int64, distances in the points' dtype, voxel centroids
within 1e-6 relative). They allocate outputs, size grids and launch the kernels of
:mod:`._cuda_kernels`.

Nothing here imports CuPy at module level: the array namespace is taken from the arguments
(:func:`hetlab.core.validation.array_module`), so the same drivers run on NumPy arrays under
Numba's CUDA simulator, which is how they are tested without a GPU.

Limits and choices
------------------
* ``fps``: one block of up to 1024 threads loops over the samples (distance update, block
  argmax with lowest-index tie-break); one launch per call.
* ``knn``: one thread per query with a sorted candidate list in local memory for
  ``k <= 64``; larger ``k`` takes an exact but slower path (distance matrix in row chunks,
  stable sort per row).
* ``ball_query``: one thread per center, points scanned in index order.
* ``fps_knn``: ``fps`` then ``knn`` on the device (no host round trip).
* ``voxel_downsample``: array operations only (keys, lexicographic sort, segment sums).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from ...core.validation import array_module
from .._cuda_launch import launch_setup
from . import _cuda_kernels as ck

__all__ = ["fps", "knn", "ball_query", "fps_knn", "voxel_downsample", "KNN_LOCAL_MAX_K"]

#: largest k served by the local-memory kNN kernel; larger k sorts distance rows instead
KNN_LOCAL_MAX_K = ck.KNN_CAPACITIES[-1]
#: threads per block of the one-thread-per-query kernels (knn, ball_query); small launches
#: use one warp per block so that the few blocks spread over more multiprocessors
QUERY_THREADS = 128
#: elements of one distance-matrix chunk of the large-k kNN path (bounds device memory)
KNN_CHUNK_ELEMS = 1 << 25
#: threads of the single FPS block (a power of two ≤ 1024; fewer for small clouds)
FPS_THREADS = ck.FPS_MAX_THREADS


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence Numba's low-occupancy warning (FPS is one block on purpose)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(under-utilization|low occupancy).*")
        yield


def _blocks(count: int, threads: int) -> int:
    return (count + threads - 1) // threads


def _query_threads(m: int) -> int:
    """Threads per block for ``m`` one-thread-per-query threads."""
    if m >= QUERY_THREADS * 512:  # enough blocks to fill a large GPU at full block size
        return QUERY_THREADS
    return min(QUERY_THREADS, 32)


def fps(points: Any, n_samples: int, start: int) -> Any:
    """Farthest point sampling on the device: indices of shape (n_samples,), int64.

    ``points`` (n, 3) float32/float64 on the device; exact (equals the reference).
    """
    xp = array_module(points)
    n = points.shape[0]
    out = xp.empty(n_samples, dtype=xp.int64)
    dist = xp.full(n, np.inf, dtype=points.dtype)
    threads = 1
    while threads < min(n, FPS_THREADS):
        threads *= 2
    stream, arg = launch_setup(xp)
    kern = ck.kernels(points.dtype).fps
    with _quiet():
        kern[1, threads, stream](arg(points), np.int64(n_samples), np.int64(start), arg(dist),
                                 arg(out))
    return out


def _knn_local(xp: Any, points: Any, queries: Any, k: int) -> tuple[Any, Any]:
    m = queries.shape[0]
    idx = xp.empty((m, k), dtype=xp.int64)
    dist = xp.empty((m, k), dtype=points.dtype)
    if m == 0:
        return idx, dist
    cap = next(c for c in ck.KNN_CAPACITIES if c >= k)
    stream, arg = launch_setup(xp)
    kern = ck.knn_kernel(points.dtype, cap)
    threads = _query_threads(m)
    with _quiet():
        kern[_blocks(m, threads), threads, stream](arg(points), arg(queries), arg(idx), arg(dist))
    return idx, dist


def _knn_sorted(xp: Any, points: Any, queries: Any, k: int) -> tuple[Any, Any]:
    """Exact kNN for any k: squared-distance rows in chunks, stable sort (ties by index)."""
    m, n = queries.shape[0], points.shape[0]
    idx = xp.empty((m, k), dtype=xp.int64)
    dist = xp.empty((m, k), dtype=points.dtype)
    rows = max(1, KNN_CHUNK_ELEMS // n)
    stream, arg = launch_setup(xp)
    kern = ck.kernels(points.dtype).dist_matrix
    tx, ty = 32, 8
    for r0 in range(0, m, rows):
        r1 = min(m, r0 + rows)
        d = xp.empty((r1 - r0, n), dtype=points.dtype)
        with _quiet():
            kern[(_blocks(n, tx), _blocks(r1 - r0, ty)), (tx, ty), stream](
                arg(points), arg(queries), np.int64(r0), arg(d)
            )
        order = xp.argsort(d, axis=1, kind="stable")[:, :k]
        idx[r0:r1] = order
        dist[r0:r1] = xp.take_along_axis(d, order, axis=1)
    return idx, dist


def knn(points: Any, queries: Any, k: int) -> tuple[Any, Any]:
    """k nearest neighbours on the device.

    Returns ``(indices (m, k) int64, squared distances (m, k) in the points' dtype)``, rows
    sorted by distance, ties by index. ``k <= KNN_LOCAL_MAX_K`` (64) uses one thread per query;
    larger ``k`` sorts full distance rows (exact, slower, ~12 bytes × n per query in flight).
    """
    xp = array_module(points)
    if k <= KNN_LOCAL_MAX_K:
        return _knn_local(xp, points, queries, k)
    return _knn_sorted(xp, points, queries, k)


def ball_query(points: Any, centers: Any, radius2: Any, k: int) -> Any:
    """First ``k`` points (index order) with squared distance < ``radius2`` of each center.

    Returns (m, k) int64; rows with fewer hits are padded with the first, empty rows are -1.
    """
    xp = array_module(points)
    m = centers.shape[0]
    out = xp.empty((m, k), dtype=xp.int64)
    if m == 0:
        return out
    stream, arg = launch_setup(xp)
    kern = ck.kernels(points.dtype).ball_query
    threads = _query_threads(m)
    with _quiet():
        kern[_blocks(m, threads), threads, stream](
            arg(points), arg(centers), points.dtype.type(radius2), arg(out)
        )
    return out


def fps_knn(points: Any, n_samples: int, k: int, start: int) -> tuple[Any, Any, Any]:
    """FPS centres and their k nearest neighbours, all on the device.

    Returns ``(centres (s,) int64, indices (s, k) int64, squared distances (s, k))``.
    """
    xp = array_module(points)
    centres = fps(points, n_samples, start)
    idx, dist = knn(points, xp.ascontiguousarray(points[centres]), k)
    return centres, idx, dist


def voxel_downsample(points: Any, voxel_size: float) -> Any:
    """One centroid per occupied voxel, ordered by voxel coordinates (x, then y, then z).

    Array operations in the points' namespace (NumPy or CuPy): float64 keys
    ``floor(p / voxel_size)``, a stable lexicographic sort, segment boundaries, float64
    segment sums and means rounded to the points' dtype. Returns (v, 3).
    """
    xp = array_module(points)
    p64 = points.astype(xp.float64)
    keys = xp.floor(p64 / voxel_size).astype(xp.int64)
    order = xp.lexsort(xp.stack([keys[:, 2], keys[:, 1], keys[:, 0]]))
    sk = keys[order]
    new = xp.ones(sk.shape[0], dtype=xp.bool_)
    new[1:] = (sk[1:] != sk[:-1]).any(axis=1)
    seg = xp.cumsum(new) - 1
    v = int(seg[-1]) + 1
    counts = xp.bincount(seg, minlength=v).astype(xp.float64)
    sp = p64[order]
    out = xp.empty((v, 3), dtype=xp.float64)
    for c in range(3):
        out[:, c] = xp.bincount(seg, weights=sp[:, c], minlength=v) / counts
    return out.astype(points.dtype)
