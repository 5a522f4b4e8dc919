"""One layer's q, k, v of all-MiniLM-L6-v2, reading only the weights that layer needs.

:func:`hetlab.kernels.quant.minilm.load_minilm` keeps the whole model (``model.safetensors``,
91 MB, as float32). Layer ``L``'s inputs need only the embeddings (of the tokens of the text,
not all 30,522 rows of the vocabulary) and layers ``0…L``. :func:`load_for_layer` streams the
file out of the package's zip (:mod:`hetlab.kernels.quant.safetensors_zip`) and keeps just
those (about 8 MB per layer, plus a few hundred KB of embedding rows); the arithmetic is
:func:`hetlab.kernels.quant.minilm.encode`'s own, on a model cut after layer ``L``.
"""

from __future__ import annotations

import json
import zipfile

import numpy as np

from ...errors import InvalidInputError
from ..quant.minilm import MiniLM, _zip_path, tokenize, tokenizer_of
from ..quant.safetensors_zip import read_float_tensors

__all__ = ["load_for_layer", "layer_inputs"]

_WORDS = "embeddings.word_embeddings.weight"


def _wanted(name: str, layer: int) -> bool:
    if name.startswith("embeddings."):
        return name != "embeddings.position_ids"
    parts = name.split(".")
    return name.startswith("encoder.layer.") and int(parts[2]) <= layer


def load_for_layer(text: str, layer: int) -> MiniLM:
    """all-MiniLM-L6-v2 cut after layer ``layer``, with only the embedding rows of ``text``.

    Parameters
    ----------
    text : str
        The text whose tokens' embedding rows are read (the others stay zero).
    layer : int
        Last encoder layer kept, in ``[0, num_hidden_layers)``.

    Returns
    -------
    MiniLM
        float32 tensors of the embeddings and layers ``0…layer``; its config says
        ``num_hidden_layers = layer + 1``. Encoding any other text with it is wrong.

    Examples
    --------
    >>> m = load_for_layer("Blocks of tokens.", 0)
    >>> m.n_layers, m.weight("L0.q").shape, m.weight("L0.q").dtype
    (1, (384, 384), dtype('float32'))
    """
    with zipfile.ZipFile(_zip_path()) as zf:
        config = json.loads(zf.read("config.json"))
        n_layers = int(config["num_hidden_layers"])
        if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < n_layers:
            raise InvalidInputError(
                f"minilm_qkv: layer must be an int in [0, {n_layers}); got {layer!r}. "
                f"all-MiniLM-L6-v2 has {n_layers} encoder layers.")
        tok = tokenizer_of(zf)
        ids, _ = tokenize(MiniLM({}, config, tok), [text])
        with zf.open("model.safetensors") as f:  # only the rows of the text's tokens
            tensors = read_float_tensors(f, lambda name, _dtype: _wanted(name, layer),
                                         {_WORDS: np.unique(ids)}, where="minilm_qkv")
    return MiniLM(tensors, {**config, "num_hidden_layers": layer + 1}, tok)


def layer_inputs(text: str, layer: int) -> tuple[MiniLM, np.ndarray]:
    """The cut model and layer ``layer``'s input hidden states for ``text``, (tokens, 384)
    float32 (the inputs its q, k and v projections see)."""
    from ..quant.minilm import encode

    model = load_for_layer(text, layer)
    cap: dict[str, list[np.ndarray]] = {}
    encode(model, [text], capture=cap, capture_only=(f"L{layer}.q",))
    return model, cap[f"L{layer}.q"][0]
