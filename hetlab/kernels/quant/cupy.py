"""GPU kernels of the quantized GEMV/GEMM (numba.cuda), run on CuPy arrays.

Blocks of :data:`THREADS` threads, ``rows`` output rows per block (default 1): the
``THREADS / rows`` threads of a row stride over its first-plane words, each decoding one word
(4–16 codes) and accumulating ``s_g · Σ q·x`` for the word's group; the zero-point term
``s_g · z_g · Σ_g x`` is added per group, then each row's threads reduce in shared memory.
``x`` is read in natural order (value ``j`` of first-plane word ``i`` of a group is weight
``per·i + j``; for 3-bit its high bit is bit ``16·(i % 2) + j`` of high-plane word
``i // 2``). Float32 accumulation, float16 scales decoded through a lookup table.

Tested without a GPU under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), where
:func:`launch_gemv` / :func:`launch_gemm` take NumPy arrays, and on a GPU by tests/gpu.
``benchmarks/gpu.py`` times them against cuBLAS on the float16 matrix (``make gpu-check``
writes its report to benchmarks/results/). The arrays go through
:func:`~hetlab.kernels._cuda_launch.launch_setup`, not Numba's synchronizing array import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, float32, int32, uint32

from ...errors import InvalidInputError
from .._cuda_launch import launch_setup
from .formats import F16_TO_F32 as _F16
from .formats import QuantizedMatrix
from .reference import quantize_activations

__all__ = ["gemv_q", "gemm_q", "gemv_w4a8", "launch_gemv", "launch_gemm", "launch_w4a8",
           "THREADS", "MAX_M"]

THREADS = 128
MAX_M = 64


@cuda.jit(device=True, inline=True)
def _words(qweight, r, g, i, wpg, nwp, bits):  # pragma: no cover - device code
    """First-plane word i of group g of row r, and for 3-bit its 16 high bits in place."""
    w = uint32(qweight[r, g * wpg + i])
    hi = uint32(0)
    if bits == 3:
        hi = uint32(qweight[r, g * wpg + nwp + i // 2]) >> uint32(16 * (i % 2))
    return w, hi


@cuda.jit(device=True, inline=True)
def _code(w, hi, j, bits):  # pragma: no cover - device code
    """Code j (uint32) of a word pair from :func:`_words`."""
    pb = 2 if bits == 3 else bits
    q = (w >> uint32(pb * j)) & uint32((1 << pb) - 1)
    if bits == 3:
        q |= ((hi >> uint32(j)) & uint32(1)) << uint32(2)
    return q


@cuda.jit(device=True, inline=True)
def _word_dot(qweight, r, g, i, wpg, nwp, bits, x, xb):  # pragma: no cover - device code
    """Σ_j q_j x_j over the codes of first-plane word i of group g (natural x order)."""
    per = 32 // (2 if bits == 3 else bits)
    w, hi = _words(qweight, r, g, i, wpg, nwp, bits)
    acc = float32(0)
    for j in range(per):
        acc += float32(_code(w, hi, j, bits)) * x[xb + per * i + j]
    return acc


@cuda.jit(device=True, inline=True)
def _word_idot(qweight, r, g, i, wpg, nwp, bits, xq, xb):  # pragma: no cover - device code
    """Σ_j q_j · xq_j over the codes of first-plane word i of group g, in int32 (exact)."""
    per = 32 // (2 if bits == 3 else bits)
    w, hi = _words(qweight, r, g, i, wpg, nwp, bits)
    acc = int32(0)
    for j in range(per):
        acc += int32(_code(w, hi, j, bits)) * int32(xq[xb + per * i + j])
    return acc


@cuda.jit(device=True, inline=True)
def _row_total(acc, lane, lanes):  # pragma: no cover - device code
    """Sum of ``acc`` over the ``lanes`` threads of this thread's row (a tree in shared
    memory); every thread of the block must call it (it holds barriers)."""
    tid = cuda.threadIdx.x
    sm = cuda.shared.array(THREADS, float32)
    sm[tid] = acc
    cuda.syncthreads()
    step = lanes // 2
    while step > 0:  # uniform over the block: every thread reaches each barrier
        if lane < step:
            sm[tid] += sm[tid + step]
        cuda.syncthreads()
        step //= 2
    return sm[tid]


@cuda.jit
def _gemm_kernel(qweight, scales, zeros, zsym, X, xsum, table, gs, bits, rows, out
                 ):  # pragma: no cover - device code
    lanes = THREADS // rows  # threads per output row; ``rows`` output rows per block
    tid = cuda.threadIdx.x
    lane = tid % lanes
    r = cuda.blockIdx.x * rows + tid // lanes
    t = cuda.blockIdx.y  # activation row
    n_out = qweight.shape[0]
    ng = scales.shape[1]
    pb = 2 if bits == 3 else bits
    nwp = gs * pb // 32
    wpg = gs * bits // 32
    x = X[t]
    acc = float32(0)
    if r < n_out:
        for k in range(lane, ng * nwp, lanes):
            g = k // nwp
            acc += table[scales[r, g]] * _word_dot(qweight, r, g, k % nwp, wpg, nwp, bits, x,
                                                   g * gs)
        for g in range(lane, ng, lanes):
            z = table[zeros[r, g]] if zeros.shape[0] > 0 else zsym
            acc -= table[scales[r, g]] * z * xsum[t, g]
    total = _row_total(acc, lane, lanes)
    if lane == 0 and r < n_out:
        out[t, r] = total


@cuda.jit
def _w4a8_kernel(qweight, scales, zeros, zsym, xq, xsum, table, gs, bits, sx, rows, out
                 ):  # pragma: no cover - device code
    """W4A8 GEMV: per word an exact int32 dot with the int8 activations, rescaled by its
    group's scale in float32; the zero-point term ``z · Σ_g xq`` exact in int32 (group size
    ≤ 65536), rescaled once per group; ``sx`` applied at the end. Layout as :func:`_gemm_kernel`."""
    lanes = THREADS // rows
    tid = cuda.threadIdx.x
    lane = tid % lanes
    r = cuda.blockIdx.x * rows + tid // lanes
    n_out = qweight.shape[0]
    ng = scales.shape[1]
    pb = 2 if bits == 3 else bits
    nwp = gs * pb // 32
    wpg = gs * bits // 32
    acc = float32(0)
    if r < n_out:
        for k in range(lane, ng * nwp, lanes):
            g = k // nwp
            d = _word_idot(qweight, r, g, k % nwp, wpg, nwp, bits, xq, g * gs)
            acc += table[scales[r, g]] * float32(d)
        for g in range(lane, ng, lanes):
            z = int32(table[zeros[r, g]]) if zeros.shape[0] > 0 else int32(zsym)
            acc -= table[scales[r, g]] * float32(z * xsum[g])
    total = _row_total(acc, lane, lanes)
    if lane == 0 and r < n_out:
        out[r] = total * sx


_DEVICE_TABLES: dict[tuple[int, int], Any] = {}


def _f16_table(xp: Any) -> Any:
    """The float16 → float32 decode table in ``xp``'s memory: copied to each GPU once (256
    KiB), not at every call; NumPy's own under the simulator."""
    if xp is np:
        return _F16
    key = (id(xp), xp.cuda.Device().id)
    if key not in _DEVICE_TABLES:
        _DEVICE_TABLES[key] = xp.asarray(_F16)
    return _DEVICE_TABLES[key]


def _args(qw: QuantizedMatrix, xp: Any) -> tuple:
    scales = qw.scales.view(xp.uint16)
    zeros = (xp.zeros((0, 0), xp.uint16) if qw.zeros is None else qw.zeros.view(xp.uint16))
    return (qw.qweight, scales, zeros, np.float32(2 ** (qw.bits - 1)))


def _check_rows(kernel: str, rows: int) -> None:
    if rows < 1 or THREADS % rows:
        raise InvalidInputError(f"{kernel}: rows must be a power of two from 1 to {THREADS}; "
                                f"got {rows}.")


def launch_gemv(qw: QuantizedMatrix, x: Any, xp: Any = np, rows: int = 1) -> Any:
    """Run the GEMV (the GEMM kernel on one activation row); ``x`` (padded_in,) float32 in
    module ``xp``."""
    return launch_gemm(qw, x.reshape(1, -1), xp, rows).reshape(-1)


def launch_gemm(qw: QuantizedMatrix, X: Any, xp: Any = np, rows: int = 1) -> Any:
    """Run the GEMM kernel; ``X`` (m, padded_in) float32 in module ``xp``; ``rows`` output
    rows per block of :data:`THREADS` threads (1, 2, 4 … 128: ``THREADS / rows`` threads
    share a row; ``benchmarks/gpu.py`` times several)."""
    _check_rows("gemm_q", rows)
    m = X.shape[0]
    xsum = X.reshape(m, -1, qw.group_size).sum(axis=2, dtype=xp.float32)
    out = xp.empty((m, qw.out_features), dtype=xp.float32)
    stream, arg = launch_setup(xp)
    qweight, scales, zeros, zsym = _args(qw, xp)
    blocks = (qw.out_features + rows - 1) // rows
    _gemm_kernel[(blocks, m), THREADS, stream](
        arg(qweight), arg(scales), arg(zeros), zsym, arg(X), arg(xsum), arg(_f16_table(xp)),
        qw.group_size, qw.bits, rows, arg(out))
    return out


def launch_w4a8(qw: QuantizedMatrix, x: Any, xp: Any = np, rows: int = 1) -> Any:
    """Run the W4A8 GEMV; ``x`` (padded_in,) float32 in module ``xp``.

    The activations are quantized on the host with the reference's
    :func:`~hetlab.kernels.quant.reference.quantize_activations` (the int8 values and their
    scale must equal every other backend's): a device ``x`` is copied to the host and its
    int8 copy back, a few KiB per call."""
    _check_rows("gemv_w4a8", rows)
    xq, sx = quantize_activations(x if xp is np else xp.asnumpy(x))
    xsum = xq.reshape(-1, qw.group_size).sum(axis=1, dtype=np.int32)
    xq, xsum = xp.asarray(xq), xp.asarray(xsum)
    out = xp.empty(qw.out_features, dtype=xp.float32)
    stream, arg = launch_setup(xp)
    qweight, scales, zeros, zsym = _args(qw, xp)
    _w4a8_kernel[(qw.out_features + rows - 1) // rows, THREADS, stream](
        arg(qweight), arg(scales), arg(zeros), zsym, arg(xq), arg(xsum), arg(_f16_table(xp)),
        qw.group_size, qw.bits, np.float32(sx), rows, arg(out))
    return out


def gemv_q(qw: QuantizedMatrix, x: Any) -> Any:
    """CuPy implementation of ``hl.gemv_q`` (arrays already on the GPU)."""
    import cupy

    return launch_gemv(qw, x, cupy)


def gemm_q(qw: QuantizedMatrix, X: Any) -> Any:
    """CuPy implementation of ``hl.gemm_q`` (arrays already on the GPU)."""
    import cupy

    return launch_gemm(qw, X, cupy)


def gemv_w4a8(qw: QuantizedMatrix, x: Any) -> Any:
    """CuPy implementation of ``hl.gemv_w4a8`` (arrays already on the GPU)."""
    import cupy

    return launch_w4a8(qw, x, cupy)
