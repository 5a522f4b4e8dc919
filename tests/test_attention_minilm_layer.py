"""The lean MiniLM reader of the attention study (hetlab/kernels/attention/minilm_layer.py):
same q, k, v as the whole model, while reading only one layer's weights and the text's rows."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import evaluate

pytest.importorskip("all_minilm_l6_v2")
pytest.importorskip("safetensors")

from hetlab.kernels.attention import minilm_layer
from hetlab.kernels.quant.minilm import encode, load_minilm, tokenize

TEXT = "Attention is where the effort goes, and the cache is where the bytes go."


@pytest.fixture(scope="module")
def full_model():
    return load_minilm()


@pytest.mark.parametrize("layer", [0, 3])
def test_qkv_equal_the_whole_models(full_model, layer):
    cap: dict = {}
    encode(full_model, [TEXT], capture=cap)
    got = evaluate.minilm_qkv(TEXT, layer=layer)
    heads = int(full_model.config["num_attention_heads"])
    for kind, g in zip("qkv", got, strict=True):
        name = f"L{layer}.{kind}"
        x = cap[name][0] @ full_model.weight(name).T + full_model.bias(name)
        want = x.reshape(x.shape[0], heads, -1).transpose(1, 0, 2).astype(np.float32)
        assert g.dtype == np.float32 and g.flags.c_contiguous
        np.testing.assert_array_equal(g, want)


def test_reads_only_the_layers_and_rows_it_needs(full_model):
    model = minilm_layer.load_for_layer(TEXT, 1)
    assert model.n_layers == 2
    layers = {int(n.split(".")[2]) for n in model.tensors if n.startswith("encoder.layer.")}
    assert layers == {0, 1}
    words = model.tensors["embeddings.word_embeddings.weight"]
    ids = np.unique(tokenize(model, [TEXT])[0])
    kept = np.flatnonzero(np.any(words != 0, axis=1))
    np.testing.assert_array_equal(kept, ids)
    np.testing.assert_array_equal(words[ids],
                                  full_model.tensors["embeddings.word_embeddings.weight"][ids])
    for name, t in model.tensors.items():
        if name != "embeddings.word_embeddings.weight":
            np.testing.assert_array_equal(t, full_model.tensors[name])


@pytest.mark.parametrize("layer", [-1, 6, 1.0, True])
def test_bad_layer_is_refused(layer):
    with pytest.raises(hl.InvalidInputError, match="layer"):
        evaluate.minilm_qkv(TEXT, layer=layer)


def test_error_report_on_the_reference_matches_numba():
    q, k, v = evaluate.synthetic_grid_qkv((2, 4, 4), heads=2, d=8, rng=np.random.default_rng(2))
    kw = dict(grid=(2, 4, 4), densities=(0.25, 0.5), bits=(8, None), block=8)
    ref = evaluate.error_report(q, k, v, device="numpy", **kw)
    fast = evaluate.error_report(q, k, v, **kw)
    assert ref.attrs["device"] == "numpy" and fast.attrs["device"] == "numba"
    np.testing.assert_allclose(ref.error.values, fast.error.values, rtol=1e-4, atol=1e-6)
