"""GPU attention: the numba.cuda flash kernel (:mod:`._cuda_kernels`) launched on CuPy arrays.

Receives the validated keyword arguments (already on the device, see
:mod:`hetlab.core.dispatch`). The array namespace comes from the arguments, so the same
driver runs on NumPy arrays under Numba's CUDA simulator (tests/_cudasim_attention_cases.py).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ...core.validation import array_module
from .._cuda_launch import launch_setup
from . import _cuda_kernels as ck

__all__ = ["attention", "decode_attention"]


def attention(q: Any, k: Any, v: Any, causal: bool = False) -> Any:
    """CUDA implementation of :func:`hetlab.attention` (validated arguments on the device)."""
    xp = array_module(q)
    h, n_q, d = q.shape
    out = xp.empty((h, n_q, v.shape[2]), dtype=q.dtype)
    stream, w = launch_setup(xp)
    blocks = (-(-n_q // ck.BLOCK_Q), h)
    ck.flash_kernel[blocks, ck.BLOCK_Q, stream](w(q), w(k), w(v), w(out), bool(causal),
                                               1.0 / math.sqrt(d))
    return out


def decode_attention(q1: Any, k_cache: Any, v_cache: Any, softmax: str = "synchronized",
                     parts: int = 0) -> Any:
    """GPU implementation of :func:`hetlab.decode_attention` as array code on the device
    (CuPy: cuBLAS batched GEMVs and elementwise kernels; NumPy stands in for the array-code
    check, tests/test_attention_decode_cupy.py).

    Split-KV as the numba kernel (:mod:`.numba_decode`): the cache cut into ``parts`` per
    head; each part's weights are ``exp(s − r_p)`` with ``r_p`` its own maximum
    (``"synchronized"``) or the head's unified ``φ`` (``"unified-max"``, mean + 3·std of a
    strided sample of scores, :func:`.numba_decode.unified_phi`), a part whose maximum
    leaves ``[φ − UNDERFLOW_MARGIN, φ + OVERFLOW_MARGIN]`` falling back to its own maximum;
    the combine rescales each part by ``exp(r_p − max r)`` (1 for every part that used φ).
    Sums in float64. The value checks :func:`.spec.check_cache` defers run here as two
    device reductions (max |k|, max |v|); a fault is named on the host.
    """
    from .numba_decode import OVERFLOW_MARGIN, UNDERFLOW_MARGIN, auto_parts, unified_phi
    from .spec import check_cache, check_ranges

    xp = array_module(q1)
    h, n, d = k_cache.shape
    peaks = [float(xp.abs(a).max()) for a in (q1, k_cache, v_cache)]
    if not all(math.isfinite(p) for p in peaks):
        host = [a.get() if hasattr(a, "get") else a for a in (q1, k_cache, v_cache)]
        check_cache(*host)  # raises, naming the argument and the fault
    check_ranges("decode_attention", ("q1", "k_cache", "v_cache"), q1, k_cache, v_cache,
                 tuple(peaks))
    scale = 1.0 / math.sqrt(d)
    s = xp.matmul(k_cache, q1[:, :, None])[:, :, 0].astype(xp.float64) * scale  # (h, n)
    p = max(1, min(n, parts or auto_parts(h, n)))
    cuts = [n * i // p for i in range(p + 1)]
    m = xp.stack([s[:, a:b].max(axis=1) for a, b in itertools.pairwise(cuts)], 1)
    ref = m
    if softmax == "unified-max":
        phi = xp.asarray(unified_phi(q1, k_cache))[:, None]  # NumPy calls dispatch to CuPy
        fallback = (m > phi + OVERFLOW_MARGIN) | (m < phi - UNDERFLOW_MARGIN)
        ref = xp.where(fallback, m, phi)
    top = ref.max(axis=1, keepdims=True)
    num = xp.zeros((h, v_cache.shape[2]), dtype=xp.float64)
    den = xp.zeros((h, 1), dtype=xp.float64)
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        w = xp.exp(s[:, a:b] - ref[:, i:i + 1])  # (h, part)
        c = xp.exp(ref[:, i:i + 1] - top)  # the combine's rescale (1 for a part on φ)
        num += c * xp.matmul(w[:, None, :], v_cache[:, a:b].astype(xp.float64))[:, 0]
        den += c * w.sum(axis=1, keepdims=True)
    return (num / den).astype(q1.dtype)
