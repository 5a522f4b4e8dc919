"""Exact attention in float64: the ground truth every backend is checked against.

Softmax with the row maximum subtracted, computed over chunks of at most :data:`CHUNK` query
rows, so a chunk × n_k block of scores is the largest temporary (never n_q × n_k at once).
Receives validated keywords (see :mod:`.spec`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["attention", "decode_attention", "softmax_rows", "CHUNK"]

#: query rows per chunk of scores
CHUNK = 256


def softmax_rows(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax of float64 scores (−inf entries get weight 0)."""
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """``softmax(q kᵀ / √d [+ causal mask]) v`` per head, float64 accumulation.

    Parameters
    ----------
    q : ndarray (heads, n_q, d); k : ndarray (heads, n_k, d); v : ndarray (heads, n_k, d_v)
    causal : bool
        Key ``j`` is visible to query ``i`` when ``j ≤ i + n_k − n_q`` (n_q = n_k: the usual
        lower triangle; n_q = 1: every key).

    Returns
    -------
    ndarray (heads, n_q, d_v), the inputs' dtype

    Examples
    --------
    >>> import numpy as np
    >>> q = np.zeros((1, 2, 4)); v = np.arange(8.0).reshape(1, 2, 4)
    >>> attention(q, q, v, causal=True)   # query 0 sees key 0; query 1 averages both
    array([[[0., 1., 2., 3.],
            [2., 3., 4., 5.]]])
    """
    h, n_q, d = q.shape
    n_k = k.shape[1]
    scale = 1.0 / np.sqrt(d)
    k64, v64 = k.astype(np.float64), v.astype(np.float64)
    out = np.empty((h, n_q, v.shape[2]), np.float64)
    offset = n_k - n_q
    for i0 in range(0, n_q, CHUNK):
        i1 = min(i0 + CHUNK, n_q)
        s = np.einsum("hid,hjd->hij", q[:, i0:i1].astype(np.float64), k64) * scale
        if causal:
            rows = np.arange(i0, i1)[:, None] + offset
            s = np.where(np.arange(n_k)[None, :] <= rows, s, -np.inf)
        out[:, i0:i1] = np.einsum("hij,hjd->hid", softmax_rows(s), v64)
    return out.astype(q.dtype)


def decode_attention(q1: np.ndarray, k_cache: np.ndarray, v_cache: np.ndarray,
                     softmax: str = "synchronized", parts: int = 0) -> np.ndarray:
    """One query per head against the whole cache, exactly (``softmax`` and ``parts`` only
    change how a backend splits the work, never the result).

    Returns
    -------
    ndarray (heads, d_v), the inputs' dtype

    Examples
    --------
    >>> import numpy as np
    >>> k = np.zeros((1, 3, 2)); v = np.array([[[3.0, 0.0], [0.0, 3.0], [3.0, 3.0]]])
    >>> decode_attention(np.ones((1, 2)), k, v)
    array([[2., 2.]])
    """
    return attention(q1[:, None, :], k_cache, v_cache)[:, 0, :]
