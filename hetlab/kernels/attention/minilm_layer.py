"""One layer's q, k, v of all-MiniLM-L6-v2, reading only the weights that layer needs.

:func:`hetlab.kernels.quant.minilm.load_minilm` reads the whole model (``model.safetensors``,
91 MB, read into memory and then copied into float32 arrays): about 180 MB pass through
memory, and the process keeps much of it as freed but unreturned heap. Layer ``L``'s inputs
need only the embeddings (of the tokens of the text, not all 30,522 rows of the vocabulary)
and layers ``0…L``. :func:`load_for_layer` streams the file out of the package's zip and keeps
just those (about 8 MB per layer, plus a few hundred KB of embedding rows); the arithmetic is
:func:`hetlab.kernels.quant.minilm.encode`'s own, on a model cut after layer ``L``.
"""

from __future__ import annotations

import json
import struct
import zipfile
from typing import IO, Any

import numpy as np

from ...errors import HetlabError, InvalidInputError
from ..quant.minilm import MAX_TOKENS, MiniLM, _zip_path, tokenize

__all__ = ["load_for_layer", "layer_inputs"]

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
_WORDS = "embeddings.word_embeddings.weight"
_CHUNK = 1 << 20  # bytes read at a time from the (deflated) zip member


def _tokenizer(zf: zipfile.ZipFile) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(zf.read("tokenizer.json").decode())
    tok.no_padding()  # as load_minilm: the shipped tokenizer.json pads to 128
    tok.enable_truncation(MAX_TOKENS)
    return tok


def _wanted(name: str, layer: int) -> bool:
    if name.startswith("embeddings."):
        return name != "embeddings.position_ids"
    parts = name.split(".")
    return name.startswith("encoder.layer.") and int(parts[2]) <= layer


def _read_rows(f: IO[bytes], shape: tuple[int, ...], dtype: np.dtype,
               rows: np.ndarray) -> np.ndarray:
    """The table (rows, cols) with only ``rows`` filled, read chunk by chunk from ``f``.

    The table is ``np.zeros`` of the full shape: zeroed memory from the allocator (calloc /
    fresh pages) is not resident until written, so only the pages of the rows kept count.
    """
    n, cols = shape
    table = np.zeros((n, cols), np.float32)
    row_bytes = cols * dtype.itemsize
    per_chunk = max(1, _CHUNK // row_bytes)
    for r0 in range(0, n, per_chunk):
        r1 = min(n, r0 + per_chunk)
        chunk = np.frombuffer(f.read((r1 - r0) * row_bytes), dtype).reshape(r1 - r0, cols)
        mine = rows[(rows >= r0) & (rows < r1)]
        table[mine] = chunk[mine - r0]
    return table


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
        tok = _tokenizer(zf)
        ids, _ = tokenize(MiniLM({}, config, tok), [text])
        rows = np.unique(ids)
        tensors: dict[str, np.ndarray] = {}
        with zf.open("model.safetensors") as f:
            (head_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(head_len))
            header.pop("__metadata__", None)
            pos = 0  # position in the data section
            for name, meta in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
                if not _wanted(name, layer):
                    continue
                if meta["dtype"] not in _DTYPES:
                    raise HetlabError(f"minilm_qkv: tensor {name} has dtype {meta['dtype']}; "
                                      f"expected one of {sorted(_DTYPES)}.")
                begin, end = meta["data_offsets"]
                f.seek(begin - pos, 1)  # forward only: the entries are sorted by offset
                dtype, shape = np.dtype(_DTYPES[meta["dtype"]]).newbyteorder("<"), meta["shape"]
                if name == _WORDS:
                    tensors[name] = _read_rows(f, tuple(shape), dtype, rows)
                else:
                    tensors[name] = np.frombuffer(f.read(end - begin), dtype).reshape(
                        shape).astype(np.float32)
                pos = end
    return MiniLM(tensors, {**config, "num_hidden_layers": layer + 1}, tok)


def layer_inputs(text: str, layer: int) -> tuple[MiniLM, np.ndarray]:
    """The cut model and layer ``layer``'s input hidden states for ``text``, (tokens, 384)
    float32 (the inputs its q, k and v projections see)."""
    from ..quant.minilm import encode

    model = load_for_layer(text, layer)
    cap: dict[str, list[np.ndarray]] = {}
    encode(model, [text], capture=cap, capture_only=(f"L{layer}.q",))
    return model, cap[f"L{layer}.q"][0]
