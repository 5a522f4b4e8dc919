"""Compute of the streamed layers: numba kernels that release the GIL (``nogil=True``).

The executor's reader thread spends its time in ``preadv`` (which releases the GIL); these
kernels release it too, so reading the next layer and computing this one run at the same time
on two cores. Float32 weights take :func:`linear_f32`, float16 weights :func:`linear_f16`
(decoded through hetlab's exact float16 → float32 table), W8/W4 weights hetlab's fused
:func:`hetlab.gemm_q` / :func:`hetlab.gemv_q` on the numba backend (nogil as well). Each output
row is one sequential dot product, so results are deterministic: the in-memory model and the
streamed one compute bit for bit the same thing.

The GIL, checked (``tests/test_offload_memory_pinning.py``): every numba kernel a streamed
layer reaches — these, and those of :mod:`hetlab.kernels.quant` behind ``gemm_q``/``gemv_q``
(``numba``, ``_numba_w4``, ``_numba_w4_amx``, ``_numba_avx2``) — is compiled ``nogil=True``.
What holds the GIL per quantized product is the Python around the kernel: argument checks, the
dispatch, and for W8 (and W4 off the 128-multiple group sizes) the activations' permutation and
group sums in NumPy: a small part of each call, not the product. Longer W8/W4 read times under
overlap then point at shared cores rather than the GIL (the quantized kernels run on all of
numba's threads and the reader waits for a core); ``benchmarks/memory_offload.py`` prints a GIL
probe for W8, W4 and the float32 kernel, which holds no GIL either, side by side.

>>> import numpy as np
>>> x = np.ones((2, 3), np.float32); w = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> linear(x, w, np.zeros(2, np.float32)).tolist()
[[3.0, 12.0], [3.0, 12.0]]
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..kernels.quant.api import gemm_q, gemv_q
from ..kernels.quant.formats import F16_TO_F32, QuantizedMatrix

__all__ = ["linear", "attention", "rms_norm", "layer_norm", "gelu", "silu_mul"]

_OPTS = {"nogil": True, "cache": True}
#: activation rows per gemm_q call (its flat-GEMM limit)
_GEMM_ROWS = 64


def _linear_f32(x, w, out):  # pragma: no cover - compiled
    """out (m, n) = x (m, k) @ w (n, k)ᵀ, float32, one sequential dot per output."""
    m, k = x.shape
    n = w.shape[0]
    for r in prange(n):
        for t in range(m):
            acc = np.float32(0)
            for j in range(k):
                acc += x[t, j] * w[r, j]
            out[t, r] = acc
    return out


def _linear_f16(x, w16, table, out):  # pragma: no cover - compiled
    """As :func:`linear_f32` with float16 weights given as their uint16 bit patterns."""
    m, k = x.shape
    n = w16.shape[0]
    for r in prange(n):
        for t in range(m):
            acc = np.float32(0)
            for j in range(k):
                acc += x[t, j] * table[w16[r, j]]
            out[t, r] = acc
    return out


def _twice(fn):
    """The kernel compiled serial and parallel (prange runs as range in the serial one)."""
    return numba.njit(**_OPTS)(fn), numba.njit(parallel=True, **_OPTS)(fn)


#: multiply-adds from which a kernel runs in parallel: below, a parallel region's start (a few
#: ms when the machine's cores are busy, measured here) costs more than it saves
PARALLEL_FROM = 1 << 22
_LIN32 = _twice(_linear_f32)
_LIN16 = _twice(_linear_f16)


def linear_f32(x: np.ndarray, w: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out (m, n) = x (m, k) @ w (n, k)ᵀ, float32 (serial or parallel by size)."""
    return _LIN32[x.size * w.shape[0] >= PARALLEL_FROM](x, w, out)


def linear_f16(x: np.ndarray, w16: np.ndarray, table: np.ndarray, out: np.ndarray
               ) -> np.ndarray:
    """As :func:`linear_f32` with float16 weights as uint16 bit patterns."""
    return _LIN16[x.size * w16.shape[0] >= PARALLEL_FROM](x, w16, table, out)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, key_ok: np.ndarray, q_pos0: int,
              causal: bool) -> np.ndarray:
    """Softmax attention of one sequence, every head (see :func:`_attention`)."""
    work = q.size * k.shape[0]
    return _ATT[work >= PARALLEL_FROM](q, k, v, key_ok, q_pos0, causal)


def linear(x: np.ndarray, w: np.ndarray | QuantizedMatrix, b: np.ndarray | None = None
           ) -> np.ndarray:
    """``x @ wᵀ + b`` for float32, float16 or quantized ``w`` of shape (n, k).

    Parameters
    ----------
    x : ndarray (m, k), float32
    w : ndarray (n, k) float32 / float16, or QuantizedMatrix (n, k)
    b : ndarray (n,), float32, optional

    Returns
    -------
    ndarray (m, n), float32
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    if isinstance(w, QuantizedMatrix):
        if x.shape[0] == 1:
            out = gemv_q(w, x[0], device="numba")[None]
        else:
            out = np.concatenate([gemm_q(w, x[i : i + _GEMM_ROWS], device="numba")
                                  for i in range(0, x.shape[0], _GEMM_ROWS)])
    elif w.dtype == np.float16:
        out = linear_f16(x, w.view(np.uint16), F16_TO_F32,
                         np.empty((x.shape[0], w.shape[0]), np.float32))
    else:
        out = linear_f32(x, w, np.empty((x.shape[0], w.shape[0]), np.float32))
    if b is not None:
        _add_bias(out, b)
    return out


@numba.njit(**_OPTS)
def _add_bias(out, b):  # pragma: no cover - compiled
    for t in range(out.shape[0]):
        for r in range(out.shape[1]):
            out[t, r] += b[r]


def _attention(q, k, v, key_ok, q_pos0, causal):  # pragma: no cover - compiled
    """Softmax attention of one sequence, every head.

    q (n, H, d), k and v (T, H, d) float32; key_ok (T,) bool (padding mask); query i sits at
    position ``q_pos0 + i`` and, if ``causal``, sees keys ``0 … q_pos0 + i`` only.
    Returns (n, H, d) float32.
    """
    n, heads, d = q.shape
    t_len = k.shape[0]
    out = np.zeros((n, heads, d), np.float32)
    scale = np.float32(1.0 / math.sqrt(d))
    for h in prange(heads):
        s = np.empty(t_len, np.float32)
        for i in range(n):
            limit = min(t_len, q_pos0 + i + 1) if causal else t_len
            mx = np.float32(-np.inf)
            for j in range(limit):
                if key_ok[j]:
                    acc = np.float32(0)
                    for c in range(d):
                        acc += q[i, h, c] * k[j, h, c]
                    s[j] = acc * scale
                    mx = max(mx, s[j])
            tot = np.float32(0)
            for j in range(limit):
                if key_ok[j]:
                    s[j] = math.exp(s[j] - mx)
                    tot += s[j]
            for j in range(limit):
                if key_ok[j]:
                    p = s[j] / tot
                    for c in range(d):
                        out[i, h, c] += p * v[j, h, c]
    return out


@numba.njit(**_OPTS)
def rms_norm(x, g, eps):  # pragma: no cover - compiled
    """x (m, d) / rms(x) * g, float32 (Llama's RMSNorm)."""
    out = np.empty_like(x)
    for t in range(x.shape[0]):
        ss = np.float32(0)
        for j in range(x.shape[1]):
            ss += x[t, j] * x[t, j]
        inv = np.float32(1.0) / np.float32(math.sqrt(ss / x.shape[1] + eps))
        for j in range(x.shape[1]):
            out[t, j] = x[t, j] * inv * g[j]
    return out


@numba.njit(**_OPTS)
def layer_norm(x, g, b, eps):  # pragma: no cover - compiled
    """(x − mean) / std * g + b over the last axis of x (m, d), float32 (BERT's LayerNorm)."""
    out = np.empty_like(x)
    d = x.shape[1]
    for t in range(x.shape[0]):
        mu = np.float32(0)
        for j in range(d):
            mu += x[t, j]
        mu /= d
        var = np.float32(0)
        for j in range(d):
            var += (x[t, j] - mu) ** 2
        inv = np.float32(1.0) / np.float32(math.sqrt(var / d + eps))
        for j in range(d):
            out[t, j] = (x[t, j] - mu) * inv * g[j] + b[j]
    return out


@numba.njit(**_OPTS)
def gelu(x):  # pragma: no cover - compiled
    """Exact GELU x·Φ(x) (BERT's), elementwise on (m, d) float32."""
    out = np.empty_like(x)
    for t in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[t, j] = 0.5 * x[t, j] * (1.0 + math.erf(x[t, j] / math.sqrt(2.0)))
    return out


@numba.njit(**_OPTS)
def silu_mul(gate, up):  # pragma: no cover - compiled
    """silu(gate) * up elementwise, (m, d) float32 (Llama's SwiGLU)."""
    out = np.empty_like(gate)
    for t in range(gate.shape[0]):
        for j in range(gate.shape[1]):
            gv = gate[t, j]
            out[t, j] = gv / (1.0 + math.exp(-gv)) * up[t, j]
    return out


_ATT = _twice(_attention)
