"""One layer's forward pass written against an array module (CuPy on a GPU), for the GPU tier.

The same mathematics as :mod:`.blocks` (Llama-style decoder block, BERT encoder block), in
array code: matrix products are ``xp.matmul`` (cuBLAS under CuPy), W8/W4 weights are
dequantized on the device from hetlab's packed format (:mod:`hetlab.kernels.quant.formats`:
group-wise codes in uint32 words, float16 scales and zero points) into a float32 scratch matrix
and multiplied; float16 weights are widened to float32. Results equal the numba path up to
float32 summation order (cuBLAS sums in another order), not bit for bit.

``ops`` is any object with ``xp`` (the array module) and ``erf`` (elementwise, for GELU):
:class:`~.gpu_exec.CupyDevice` on a GPU, NumPy with SciPy's erf in the tests, which check the
mathematics here against the in-memory model on the CPU (no GPU figure comes from that).

>>> import numpy as np, scipy.special
>>> from types import SimpleNamespace
>>> from hetlab.kernels.quant.formats import quantize
>>> ops = SimpleNamespace(xp=np, erf=scipy.special.erf)
>>> w = np.random.default_rng(0).standard_normal((8, 64), dtype=np.float32)
>>> q = quantize(w, bits=4, group_size=32)
>>> d = DeviceQuant(q.qweight, q.scales, q.zeros, 4, 32, 64)
>>> bool(np.array_equal(dequantize(ops, d), q.dequantize()))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernels.quant.formats import planes

__all__ = ["DeviceQuant", "dequantize", "device_weights", "linear", "decoder_block",
           "encoder_block", "scratch_nbytes"]


@dataclass(frozen=True)
class DeviceQuant:
    """A W8/W4 matrix's arrays where ``xp`` lives (codes, float16 scales/zeros) and its format."""

    qweight: Any
    scales: Any
    zeros: Any
    bits: int
    group_size: int
    in_features: int


def device_weights(arrays: dict[str, Any], meta: dict[str, np.ndarray]) -> dict[str, Any]:
    """A blob's arrays (see :func:`.model.to_blob`) as layer weights; ``meta`` holds the host
    copies of the ``#meta`` entries (bits, group_size, in_features), read without a sync."""
    out: dict[str, Any] = {k: v for k, v in arrays.items() if "#" not in k}
    for name, m in meta.items():
        base = name[: -len("#meta")]
        bits, gs, n_in = (int(v) for v in m)
        out[base] = DeviceQuant(arrays[base + "#qweight"], arrays[base + "#scales"],
                                arrays.get(base + "#zeros"), bits, gs, n_in)
    return out


def dequantize(ops: Any, q: DeviceQuant) -> Any:
    """(out, in_features) float32 weights ``(code − zero) · scale``, computed with ``ops.xp``."""
    xp = ops.xp
    out = q.qweight.shape[0]
    wpg = q.group_size * q.bits // 32
    ng = q.qweight.shape[1] // wpg
    words = q.qweight.reshape(out, ng, wpg)
    codes = xp.zeros((out, ng, q.group_size), dtype=xp.uint32)
    start = 0
    for pb, shift in planes(q.bits):
        per = 32 // pb
        n_words = q.group_size // per
        w = words[..., start : start + n_words]
        shifts = xp.arange(per, dtype=xp.uint32) * xp.uint32(pb)
        vals = (w[..., None] >> shifts) & xp.uint32((1 << pb) - 1)
        codes |= vals.reshape(out, ng, q.group_size) << xp.uint32(shift)
        start += n_words
    s = q.scales.astype(xp.float32)[:, :, None]
    z = (xp.float32(2.0 ** (q.bits - 1)) if q.zeros is None
         else q.zeros.astype(xp.float32)[:, :, None])
    w32 = (codes.astype(xp.float32) - z) * s
    return w32.reshape(out, -1)[:, : q.in_features]


def scratch_nbytes(weights: dict[str, Any]) -> int:
    """Bytes of the float32 matrix :func:`linear` builds for the largest non-float32 weight."""
    sizes = [4 * (w.qweight.shape[0] * w.in_features if isinstance(w, DeviceQuant)
                  else int(np.prod(w.shape)))
             for w in weights.values()
             if isinstance(w, DeviceQuant) or getattr(w, "dtype", None) == np.float16]
    return max(sizes, default=0)


def linear(ops: Any, x: Any, w: Any, b: Any = None) -> Any:
    """``x @ wᵀ + b``: x (m, k) float32; w (n, k) float32/float16 or DeviceQuant → (m, n)."""
    xp = ops.xp
    if isinstance(w, DeviceQuant):
        w = dequantize(ops, w)
    elif w.dtype != xp.float32:
        w = w.astype(xp.float32)
    y = xp.matmul(x, w.T)
    return y if b is None else y + b


def _rms_norm(xp: Any, x: Any, g: Any, eps: float) -> Any:
    return x / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + xp.float32(eps)) * g


def _layer_norm(xp: Any, x: Any, g: Any, b: Any, eps: float) -> Any:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + xp.float32(eps)) * g + b


def _attention(xp: Any, q: Any, k: Any, v: Any, key_ok: Any, q_pos0: int, causal: bool) -> Any:
    """q (n, H, d), k/v (T, H, d) → (n, H, d); query i at position q_pos0 + i."""
    n, t_len = q.shape[0], k.shape[0]
    s = xp.matmul(q.transpose(1, 0, 2), k.transpose(1, 2, 0)) * xp.float32(
        1 / math.sqrt(q.shape[2]))
    ok = xp.broadcast_to(key_ok[None, :], (n, t_len))
    if causal:
        ok = ok & (xp.arange(t_len)[None, :] <= (q_pos0 + xp.arange(n))[:, None])
    s = xp.where(ok[None], s, xp.float32(-xp.inf))
    p = xp.exp(s - s.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    return xp.matmul(p, v.transpose(1, 0, 2)).transpose(1, 0, 2)


def decoder_block(ops: Any, x: Any, w: dict[str, Any], kv: Any, layer: int, n_heads: int,
                  eps: float) -> Any:
    """As :func:`.blocks.decoder_block`, with ``ops.xp`` arrays; ``kv`` as there."""
    xp = ops.xp
    n, d = x.shape
    dh = d // n_heads
    pos0 = kv.length(layer)
    h = _rms_norm(xp, x, w["attn_norm"], eps)
    q = linear(ops, h, w["wq"]).reshape(n, n_heads, dh)
    kv.append(layer, linear(ops, h, w["wk"]).reshape(n, n_heads, dh),
              linear(ops, h, w["wv"]).reshape(n, n_heads, dh))
    keys, values = kv.get(layer)
    a = _attention(xp, q, keys, values, xp.ones(keys.shape[0], dtype=bool), pos0, True)
    del keys, values
    kv.done(layer)
    x = x + linear(ops, a.reshape(n, d), w["wo"])
    h = _rms_norm(xp, x, w["ffn_norm"], eps)
    g = linear(ops, h, w["w_gate"])
    return x + linear(ops, g / (1 + xp.exp(-g)) * linear(ops, h, w["w_up"]), w["w_down"])


def encoder_block(ops: Any, x: Any, w: dict[str, Any], mask: Any, n_heads: int,
                  eps: float) -> Any:
    """As :func:`.blocks.encoder_block`, with ``ops.xp`` arrays; mask (batch, length) bool."""
    xp = ops.xp
    bsz, length, d = x.shape
    dh = d // n_heads
    flat = x.reshape(-1, d)
    q = linear(ops, flat, w["q"], w["q.b"]).reshape(bsz, length, n_heads, dh)
    k = linear(ops, flat, w["k"], w["k.b"]).reshape(bsz, length, n_heads, dh)
    v = linear(ops, flat, w["v"], w["v.b"]).reshape(bsz, length, n_heads, dh)
    ctx = xp.stack([_attention(xp, q[i], k[i], v[i], mask[i], 0, False) for i in range(bsz)])
    flat = _layer_norm(xp, flat + linear(ops, ctx.reshape(-1, d), w["o"], w["o.b"]),
                       w["ln1.g"], w["ln1.b"], eps)
    f = linear(ops, flat, w["ff1"], w["ff1.b"])
    f = xp.float32(0.5) * f * (1 + ops.erf(f / xp.float32(math.sqrt(2.0))))
    ff = linear(ops, f, w["ff2"], w["ff2.b"])
    return _layer_norm(xp, flat + ff, w["ln2.g"], w["ln2.b"], eps).reshape(bsz, length, d)


def rms_norm(ops: Any, x: Any, g: Any, eps: float) -> Any:
    """Llama's RMSNorm (the decoder's final norm)."""
    return _rms_norm(ops.xp, x, g, eps)


def layer_norm(ops: Any, x: Any, g: Any, b: Any, eps: float) -> Any:
    """BERT's LayerNorm (the encoder's embedding norm)."""
    return _layer_norm(ops.xp, x, g, b, eps)
