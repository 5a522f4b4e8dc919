"""CUDA kernels of the point-cloud family, written with Numba's CUDA target.

This module never imports CuPy: the kernels take any array Numba accepts — CuPy arrays
(through ``__cuda_array_interface__``) on a GPU, NumPy arrays under Numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1`` set before Numba is imported), which is how the very same kernel
code is tested on machines without a GPU. Allocation, grid sizing and launches live in
:mod:`hetlab.kernels.pointcloud.cupy`.

Exactness: squared distances are ``((dx*dx) + dy*dy) + dz*dz`` in the points' dtype, as in
:mod:`~hetlab.kernels.pointcloud.reference`. NVVM contracts a multiply feeding an add into a
fused multiply-add by default, which rounds once instead of twice and so differs from NumPy;
the products therefore go through libdevice's ``__nv_fmul_rn``/``__nv_dmul_rn`` (explicitly
rounded, never fused). Under the simulator the product is a plain NumPy multiply, which rounds
the same way. Kernels are built once per dtype (and per kNN list capacity) by the factories
below, so each compiled variant has a fixed dtype and fixed-size shared/local arrays.

The distance expression is written out in each kernel rather than in a device function:
Numba compiles device functions for the current GPU, which needs a driver, whereas whole
kernels compile to PTX anywhere with ``numba.cuda.compile_ptx`` — that is how
tests/test_pointcloud_cudasim.py checks every kernel for sm_90 (and for FMA) without a GPU.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import config, cuda, types

__all__ = ["FPS_MAX_THREADS", "KNN_CAPACITIES", "SIMULATED", "kernels", "knn_kernel"]

#: True when Numba's CUDA simulator is active (kernels run as Python threads on NumPy arrays)
SIMULATED = bool(config.ENABLE_CUDASIM)

#: threads of the single FPS block (size of its shared reduction arrays)
FPS_MAX_THREADS = 1024

#: capacities of the per-thread sorted candidate list of the kNN kernel (k ≤ the largest)
KNN_CAPACITIES = (8, 16, 32, 64)

_NB_TYPES = {np.dtype(np.float32): types.float32, np.dtype(np.float64): types.float64}


def _plain_mul(a, b):  # simulator: a NumPy scalar product, rounded once like NumPy's
    return a * b


if SIMULATED:
    _MULS = {np.dtype(np.float32): _plain_mul, np.dtype(np.float64): _plain_mul}
else:
    from numba.cuda import libdevice

    _MULS = {np.dtype(np.float32): libdevice.fmul_rn, np.dtype(np.float64): libdevice.dmul_rn}


@functools.cache
def kernels(dtype: np.dtype) -> SimpleNamespace:
    """The FPS, ball-query and distance-matrix kernels for float32 or float64 points.

    Returns a namespace with ``fps``, ``ball_query`` and ``dist_matrix`` (Numba CUDA
    dispatchers; ``.py_func`` is the Python source, used by the PTX compile check).
    """
    dtype = np.dtype(dtype)
    nb_dtype = _NB_TYPES[dtype]
    mul = _MULS[dtype]
    max_threads = FPS_MAX_THREADS
    chosen = dtype.type(-1)  # typed constant: keeps float32 kernels in float32

    @cuda.jit
    def fps(points, n_samples, start, dist, out):
        """One block; dist (n,) starts at +inf; out (n_samples,) int64."""
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        n = points.shape[0]
        best_v = cuda.shared.array(max_threads, nb_dtype)
        best_i = cuda.shared.array(max_threads, types.int64)
        last_sh = cuda.shared.array(1, types.int64)
        if tid == 0:
            out[0] = start
            last_sh[0] = start
        cuda.syncthreads()
        for s in range(1, n_samples):
            last = last_sh[0]
            x = points[last, 0]
            y = points[last, 1]
            z = points[last, 2]
            bv = dist[0]
            bi = n  # sentinel: loses every comparison
            for j in range(tid, n, nt):
                dj = dist[j]
                if j == last:
                    dj = chosen  # chosen: never again (d >= 0 keeps it at -1 afterwards)
                    dist[j] = dj
                else:
                    dx = points[j, 0] - x
                    dy = points[j, 1] - y
                    dz = points[j, 2] - z
                    d = (mul(dx, dx) + mul(dy, dy)) + mul(dz, dz)
                    if d < dj:
                        dj = d
                        dist[j] = dj
                if bi == n or dj > bv:  # strict: the lowest index of this thread wins ties
                    bv = dj
                    bi = j
            best_v[tid] = bv
            best_i[tid] = bi
            cuda.syncthreads()
            stride = nt // 2
            while stride > 0:
                if tid < stride:
                    ov = best_v[tid + stride]
                    oi = best_i[tid + stride]
                    mi = best_i[tid]
                    if mi == n or (oi != n and (ov > best_v[tid]
                                                or (ov == best_v[tid] and oi < mi))):
                        best_v[tid] = ov
                        best_i[tid] = oi
                cuda.syncthreads()
                stride //= 2
            if tid == 0:
                out[s] = best_i[0]
                last_sh[0] = best_i[0]
            cuda.syncthreads()

    @cuda.jit
    def ball_query(points, centers, radius2, out):
        """One thread per center; out (m, k) int64."""
        c = cuda.grid(1)
        if c >= centers.shape[0]:
            return
        k = out.shape[1]
        n = points.shape[0]
        x = centers[c, 0]
        y = centers[c, 1]
        z = centers[c, 2]
        cnt = 0
        first = -1
        for j in range(n):
            dx = points[j, 0] - x
            dy = points[j, 1] - y
            dz = points[j, 2] - z
            d = (mul(dx, dx) + mul(dy, dy)) + mul(dz, dz)
            if d < radius2:
                if cnt == 0:
                    first = j
                out[c, cnt] = j
                cnt += 1
                if cnt == k:
                    break
        for t in range(cnt, k):
            out[c, t] = first

    @cuda.jit
    def dist_matrix(points, queries, row0, out):
        """out[r, j] = squared distance of queries[row0 + r] to points[j]; 2-D grid (j, r)."""
        j, r = cuda.grid(2)
        if r < out.shape[0] and j < out.shape[1]:
            q = row0 + r
            dx = points[j, 0] - queries[q, 0]
            dy = points[j, 1] - queries[q, 1]
            dz = points[j, 2] - queries[q, 2]
            out[r, j] = (mul(dx, dx) + mul(dy, dy)) + mul(dz, dz)

    return SimpleNamespace(fps=fps, ball_query=ball_query, dist_matrix=dist_matrix,
                           nb_dtype=nb_dtype)


@functools.cache
def knn_kernel(dtype: np.dtype, capacity: int):
    """The kNN kernel for float32/float64 points keeping up to ``capacity`` candidates.

    One thread per query scans every point in index order and keeps a sorted list of the best
    ``k <= capacity`` (distance, index) pairs in local memory; a later point enters only when
    strictly closer than the current k-th, so ties stay in index order.
    """
    dtype = np.dtype(dtype)
    nb_dtype = _NB_TYPES[dtype]
    mul = _MULS[dtype]
    cap = int(capacity)

    @cuda.jit
    def knn(points, queries, out_idx, out_dist):
        """out_idx (m, k) int64, out_dist (m, k) in the points' dtype; k <= capacity."""
        q = cuda.grid(1)
        if q >= queries.shape[0]:
            return
        k = out_idx.shape[1]
        n = points.shape[0]
        bd = cuda.local.array(cap, nb_dtype)
        bi = cuda.local.array(cap, types.int64)
        x = queries[q, 0]
        y = queries[q, 1]
        z = queries[q, 2]
        cnt = 0
        for j in range(n):
            dx = points[j, 0] - x
            dy = points[j, 1] - y
            dz = points[j, 2] - z
            d = (mul(dx, dx) + mul(dy, dy)) + mul(dz, dz)
            if cnt < k:
                pos = cnt
                cnt += 1
            elif d < bd[k - 1]:
                pos = k - 1
            else:
                continue
            while pos > 0 and bd[pos - 1] > d:  # shift larger ones right; equal ones stay first
                bd[pos] = bd[pos - 1]
                bi[pos] = bi[pos - 1]
                pos -= 1
            bd[pos] = d
            bi[pos] = j
        for t in range(k):
            out_idx[q, t] = bi[t]
            out_dist[q, t] = bd[t]

    return knn
