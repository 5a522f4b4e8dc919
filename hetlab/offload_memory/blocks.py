"""One layer's forward pass, shared by the in-memory model and the streaming executor.

Both call these functions with the same arrays (the in-memory model with weights it holds, the
executor with weights it has just read), so the streamed output equals the in-memory one bit
for bit in float32.

* :func:`decoder_block` — a Llama-style pre-norm block: RMSNorm, q/k/v/o projections,
  causal attention over the KV cache, RMSNorm, SwiGLU MLP (gate, up, down). No positional
  encoding and no grouped-query attention: the layer shapes, bytes and FLOPs are Llama's, the
  weights are seeded, not trained.
* :func:`encoder_block` — a BERT post-norm block (MiniLM): q/k/v/o with biases, padding-masked
  attention, LayerNorm, GELU MLP, LayerNorm.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .kernels import attention, gelu, layer_norm, linear, rms_norm, silu_mul

__all__ = ["decoder_block", "encoder_block", "KVStore", "MemoryKV"]


class KVStore(Protocol):
    """What a block needs of a KV cache: append this layer's new keys/values, get them all."""

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> None: ...

    def get(self, layer: int) -> tuple[np.ndarray, np.ndarray]: ...

    def length(self, layer: int) -> int: ...

    def done(self, layer: int) -> None: ...


class MemoryKV:
    """A KV cache held in memory (the in-memory model's): per layer, (T, H, d) arrays.

    >>> kv, z = MemoryKV(), np.zeros((2, 1, 4), np.float32)
    >>> kv.append(0, z, z)
    >>> kv.length(0), kv.get(0)[0].shape
    (2, (2, 1, 4))
    """

    def __init__(self) -> None:
        self._k: dict[int, list[np.ndarray]] = {}
        self._v: dict[int, list[np.ndarray]] = {}

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> None:
        self._k.setdefault(layer, []).append(k)
        self._v.setdefault(layer, []).append(v)

    def get(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(self._k[layer]), np.concatenate(self._v[layer])

    def length(self, layer: int) -> int:
        return sum(len(a) for a in self._k.get(layer, []))

    def done(self, layer: int) -> None:
        """Nothing to release: everything stays in memory."""


def decoder_block(x: np.ndarray, w: dict[str, Any], kv: KVStore, layer: int, n_heads: int,
                  eps: float) -> np.ndarray:
    """x (n, d) float32 → (n, d): one decoder layer over n new tokens (appended to ``kv``)."""
    n, d = x.shape
    dh = d // n_heads
    pos0 = kv.length(layer)
    h = rms_norm(x, w["attn_norm"], np.float32(eps))
    q = linear(h, w["wq"]).reshape(n, n_heads, dh)
    kv.append(layer, linear(h, w["wk"]).reshape(n, n_heads, dh),
              linear(h, w["wv"]).reshape(n, n_heads, dh))
    keys, values = kv.get(layer)
    a = attention(q, keys, values, np.ones(len(keys), np.bool_), pos0, True)
    del keys, values
    kv.done(layer)
    x = x + linear(a.reshape(n, d), w["wo"])
    h = rms_norm(x, w["ffn_norm"], np.float32(eps))
    return x + linear(silu_mul(linear(h, w["w_gate"]), linear(h, w["w_up"])), w["w_down"])


def encoder_block(x: np.ndarray, w: dict[str, Any], mask: np.ndarray, n_heads: int,
                  eps: float) -> np.ndarray:
    """x (batch, length, d) float32 → same shape: one BERT layer; mask (batch, length) bool."""
    bsz, length, d = x.shape
    dh = d // n_heads
    flat = x.reshape(-1, d)
    q = linear(flat, w["q"], w["q.b"]).reshape(bsz, length, n_heads, dh)
    k = linear(flat, w["k"], w["k.b"]).reshape(bsz, length, n_heads, dh)
    v = linear(flat, w["v"], w["v.b"]).reshape(bsz, length, n_heads, dh)
    ctx = np.stack([attention(q[i], k[i], v[i], mask[i], 0, False) for i in range(bsz)])
    eps32 = np.float32(eps)
    flat = layer_norm(flat + linear(ctx.reshape(-1, d), w["o"], w["o.b"]), w["ln1.g"],
                      w["ln1.b"], eps32)
    ff = linear(gelu(linear(flat, w["ff1"], w["ff1.b"])), w["ff2"], w["ff2.b"])
    return layer_norm(flat + ff, w["ln2.g"], w["ln2.b"], eps32).reshape(bsz, length, d)
