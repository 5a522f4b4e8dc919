"""CUDA flash attention, written with Numba's CUDA target (launched from :mod:`.cupy`).

Never imports CuPy: the kernel takes CuPy arrays on a GPU and NumPy arrays under Numba's CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``), which is how it is tested without a GPU
(tests/_cudasim_attention_cases.py).

One thread block per (query tile of :data:`BLOCK_Q` rows, head), one thread per query row.
The block walks the keys in tiles of :data:`BLOCK_K`: the threads load a tile of k and v
into shared memory together, then each thread scores its query against the tile, takes the
tile's maximum, rescales its running sum and accumulator once (online softmax) and adds the
tile's weighted values. Scores exist per thread and tile only, never n × n. Shared tiles and
accumulators are float64 whatever the inputs' dtype (one kernel for float32 and float64,
head dims up to 256 within 48 KiB of shared memory) — written to be checked, not yet tuned
on a GPU. The kernel avoids the ``min`` builtin: numba-cuda compiles it as a device
function for the current GPU, which the sm_90 PTX check without a GPU cannot name.
"""

from __future__ import annotations

import math

from numba import cuda, float64

__all__ = ["flash_kernel", "BLOCK_Q", "BLOCK_K", "MAX_D"]

BLOCK_Q = 32
BLOCK_K = 8
MAX_D = 256


@cuda.jit
def flash_kernel(q, k, v, out, causal, scale):  # pragma: no cover - device code
    ks = cuda.shared.array((BLOCK_K, MAX_D), float64)
    vs = cuda.shared.array((BLOCK_K, MAX_D), float64)
    qr = cuda.local.array(MAX_D, float64)
    acc = cuda.local.array(MAX_D, float64)
    sc = cuda.local.array(BLOCK_K, float64)
    hh = cuda.blockIdx.y
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK_Q + tid
    n_q, d = q.shape[1], q.shape[2]
    n_k, dv = k.shape[1], v.shape[2]
    active = i < n_q
    offset = n_k - n_q
    if active:
        for e in range(d):
            qr[e] = q[hh, i, e] * scale
        for e in range(dv):
            acc[e] = 0.0
    m = -math.inf
    lsum = 0.0
    tile_last = cuda.blockIdx.x * BLOCK_Q + BLOCK_Q - 1 + offset  # last key any row sees
    j_end = n_k
    if causal and tile_last + 1 < n_k:
        j_end = tile_last + 1
    for j0 in range(0, j_end, BLOCK_K):
        cuda.syncthreads()
        for x in range(tid, BLOCK_K * MAX_D, BLOCK_Q):
            r = x // MAX_D
            e = x % MAX_D
            if j0 + r < n_k:
                if e < d:
                    ks[r, e] = k[hh, j0 + r, e]
                if e < dv:
                    vs[r, e] = v[hh, j0 + r, e]
        cuda.syncthreads()
        if active:
            cols = BLOCK_K if j0 + BLOCK_K <= n_k else n_k - j0  # (no min(): see below)
            mx = m
            for c in range(cols):
                s = 0.0
                for e in range(d):
                    s += qr[e] * ks[c, e]
                if causal and j0 + c > i + offset:
                    s = -math.inf
                sc[c] = s
                if s > mx:
                    mx = s
            if mx != -math.inf:
                alpha = math.exp(m - mx)
                lsum *= alpha
                for e in range(dv):
                    acc[e] *= alpha
                for c in range(cols):
                    p = math.exp(sc[c] - mx)
                    lsum += p
                    for e in range(dv):
                        acc[e] += p * vs[c, e]
                m = mx
    if active:
        for e in range(dv):
            out[hh, i, e] = acc[e] / lsum
