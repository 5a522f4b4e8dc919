"""Quantization study on all-MiniLM-L6-v2: every format, calibration and mixed precision.

For each configuration the 36 linear layers (6 × q, k, v, o, ff1, ff2) are quantized, the
NumPy encoder runs with their effective (dequantized) weights, and the table reports:

* ``bits``: storage bits per weight over all linear layers (scales, zeros, AWQ input scales);
* ``L0 … L5``: relative weight error ‖W_q − W‖_F / ‖W‖_F of each transformer layer;
* ``cos``: mean cosine similarity of the sentence embeddings to the fp32 ones over the
  evaluation sentences (and its minimum and per-group means).

Evaluation: the odd lines of each group of ``data/sentences.tsv`` (20 sentences).
Calibration never sees them: ``calibration="split"`` uses the even lines (20 sentences,
≈ 450 tokens); ``calibration="extended"`` (the default) adds ``data/calibration.tsv``
(329 more sentences of the same two groups: 349 sentences, 8,464 tokens in all). GPTQ
needs the larger set: a layer with 1,536 inputs has a 1,536 × 1,536 Hessian; on the 451
tokens of the split set W4 GPTQ reaches 0.979 mean cosine on the evaluation sentences, 0.990
on the extended set (measured with ``benchmarks/quant_minilm.py``). GPTQ's options were
chosen on other sentences (``benchmarks/quant_gptq_options.py``). :func:`calibration_set`
refuses a calibration set that shares a sentence with the evaluation set.

Methods (``"W{bits} {method}"``): ``RTN`` round-to-nearest; ``AWQ`` scale search + clip
search (:func:`~hetlab.quant.calibrate_awq`); ``MBQ`` the same with MBQ token weights;
``GPTQ`` :func:`~hetlab.quant.gptq` with act-order and the per-group clip search
(:data:`~hetlab.kernels.quant.gptq.CLIP_RATIOS`) — plain format, no input scales; ``AWQ+GPTQ`` the
AWQ scale search, then GPTQ (act-order, clip) on the scaled weights.

Mixed precision: 3 or 4 bits per block of 128 output rows, chosen by
:func:`~hetlab.quant.allocate_bits` with the Hessian-diagonal importance of the calibration
inputs and relative errors (measured here: candidates (2, 3, 4, 8) or whole layers did worse,
0.79–0.87 mean cosine, than this choice).

MBQ sensitivity (loss-based): every linear weight gets Gaussian noise of 2% of its RMS;
a group's sensitivity is the mean ``1 − cos`` of its calibration sentences' embeddings
(noisy vs fp32), averaged over two noise draws.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..._resources import resource_dir
from ...errors import HetlabError
from .calibrate import calibrate_awq, mbq_token_weights
from .formats import quantize
from .gptq import CLIP_RATIOS, gptq
from .minilm import MiniLM, encode, linear_names, load_minilm, tokenize
from .mixed import allocate_bits

__all__ = ["Row", "load_sentences", "split_sentences", "calibration_set", "token_labels",
           "group_sensitivity", "run_study", "format_table", "SENTENCES", "CALIBRATION",
           "GROUPS", "METHODS"]

SENTENCES = resource_dir("data") / "sentences.tsv"
CALIBRATION = SENTENCES.parent / "calibration.tsv"
METHODS = ("RTN", "AWQ", "MBQ", "GPTQ", "AWQ+GPTQ")
GROUPS = ("passage", "query")


@dataclass
class Row:
    """One configuration of the study."""

    name: str
    bits: float
    layer_error: list[float]
    cos_mean: float
    cos_min: float
    cos_by_group: dict[str, float]
    seconds: float = 0.0  # time to quantize the 36 layers (calibration searches included)


def load_sentences(path: str | Path = SENTENCES) -> tuple[list[str], np.ndarray]:
    """Sentences and their group labels (0 = passage, 1 = query) from a TSV file."""
    sents, labels = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        group, text = line.split("\t", 1)
        sents.append(text)
        labels.append(GROUPS.index(group))
    return sents, np.array(labels)


def split_sentences(labels: np.ndarray) -> tuple[list[int], list[int]]:
    """Calibration and evaluation indices: even / odd occurrences within each group.

    Parameters
    ----------
    labels : ndarray of shape (n,), int
        Group of each sentence (0 = passage, 1 = query), as from :func:`load_sentences`.

    Returns
    -------
    (cal, ev) : two disjoint lists of int covering ``range(n)``, group by group.
    """
    cal, ev = [], []
    for g in range(len(GROUPS)):
        idx = np.flatnonzero(labels == g)
        cal += idx[0::2].tolist()
        ev += idx[1::2].tolist()
    return cal, ev


def calibration_set(kind: str = "extended") -> tuple[list[str], np.ndarray, list[str],
                                                     np.ndarray]:
    """Calibration and evaluation sentences with their group labels.

    Parameters
    ----------
    kind : {"extended", "split"}
        "split": the even lines of each group of ``sentences.tsv``; "extended": those and
        every sentence of ``calibration.tsv``. Evaluation is always the odd lines.

    Returns
    -------
    (cal, cal_labels, ev, ev_labels)

    Raises
    ------
    HetlabError
        ``kind`` unknown, or a calibration sentence is also an evaluation sentence.
    """
    if kind not in ("extended", "split"):
        raise HetlabError(f"calibration_set: kind must be 'extended' or 'split'; got {kind!r}.")
    sents, labels = load_sentences()
    cal_i, ev_i = split_sentences(labels)
    cal, cal_labels = [sents[i] for i in cal_i], labels[cal_i]
    ev, ev_labels = [sents[i] for i in ev_i], labels[ev_i]
    if kind == "extended":
        extra, extra_labels = load_sentences(CALIBRATION)
        cal, cal_labels = cal + extra, np.concatenate([cal_labels, extra_labels])
    shared = {s.strip().lower() for s in cal} & {s.strip().lower() for s in ev}
    if shared:
        raise HetlabError(
            f"calibration_set: calibration and evaluation share {len(shared)} sentence(s), "
            f"e.g. {sorted(shared)[0]!r}; remove them from {CALIBRATION.name}."
        )
    return cal, cal_labels, ev, ev_labels


def token_labels(model: MiniLM, sents: list[str], labels: np.ndarray) -> np.ndarray:
    """Group label of every real token, in the order :func:`~hetlab.kernels.quant.minilm.encode`
    captures layer inputs (sentence by sentence); shape (real tokens,), int."""
    _, mask = tokenize(model, sents)
    return np.repeat(np.asarray(labels), mask.sum(axis=1))


def group_sensitivity(model: MiniLM, sents: list[str], labels: np.ndarray, *,
                      ref: np.ndarray | None = None, rng: np.random.Generator | None = None,
                      draws: int = 2, rel: float = 0.02) -> np.ndarray:
    """Loss-based sensitivity of each sentence group to weight noise (MBQ's ``σ_g``).

    Every linear weight gets Gaussian noise of ``rel`` × its RMS; a group's sensitivity is
    the mean ``1 − cos`` between its sentences' noisy and fp32 embeddings, averaged over
    ``draws`` noise draws.

    Parameters
    ----------
    model : MiniLM
    sents : list of str
    labels : ndarray of shape (len(sents),), int in ``range(len(GROUPS))``
    ref : ndarray of shape (len(sents), 384), optional
        fp32 embeddings of ``sents`` (computed when omitted).
    rng : numpy.random.Generator, optional
        Noise source; default ``default_rng(0)``.
    draws : int, default 2
    rel : float, default 0.02

    Returns
    -------
    ndarray of shape (len(GROUPS),), float64, ≥ 0 up to rounding
    """
    rng = np.random.default_rng(0) if rng is None else rng
    ref = encode(model, sents) if ref is None else ref
    labels = np.asarray(labels)
    loss = np.zeros(len(GROUPS))
    for _ in range(draws):
        noisy = {}
        for name in linear_names(model.n_layers):
            w = model.weight(name)
            noisy[name] = w + rng.normal(0, rel * float(np.sqrt((w**2).mean())), w.shape)
        cos = (encode(model, sents, weights=noisy) * ref).sum(axis=1)
        loss += np.array([np.mean(1 - cos[labels == g]) for g in range(len(GROUPS))])
    return loss / draws


def _row(name: str, model: MiniLM, eff: dict[str, np.ndarray], bits: float, ev: list[str],
         ev_labels: np.ndarray, ref: np.ndarray, seconds: float) -> Row:
    layer_err = []
    for i in range(model.n_layers):
        num = den = 0.0
        for n in linear_names(model.n_layers):
            if n.startswith(f"L{i}."):
                w = model.weight(n).astype(np.float64)
                num += float(((eff[n] - w) ** 2).sum())
                den += float((w**2).sum())
        layer_err.append(float(np.sqrt(num / den)))
    cos = (encode(model, ev, weights=eff) * ref).sum(axis=1)
    by_group = {g: float(cos[ev_labels == i].mean()) for i, g in enumerate(GROUPS)}
    return Row(name, bits, layer_err, float(cos.mean()), float(cos.min()), by_group, seconds)


def _calibrated(method: str, w: np.ndarray, X: np.ndarray, p_mbq: np.ndarray, *, bits: int,
                group_size: int, grid: int) -> Any:
    """One layer quantized by a calibrated method of :data:`METHODS`."""
    if method == "GPTQ":
        return gptq(w, X, bits=bits, group_size=group_size, act_order=True,
                    clip_ratios=CLIP_RATIOS)
    tw = p_mbq if method == "MBQ" else None
    quantizer = "gptq" if method == "AWQ+GPTQ" else "rtn"
    return calibrate_awq(w, X, bits=bits, group_size=group_size, token_weights=tw, grid=grid,
                         quantizer=quantizer)


def run_study(configs: tuple[str, ...] = ("W8 RTN", "W4 RTN", "W4 AWQ", "W4 MBQ", "W3 RTN",
                                          "W3 AWQ", "W3 MBQ", "W2 RTN", "mixed 3.45"),
              *, group_size: int = 128, grid: int = 10, seed: int = 0,
              calibration: str = "extended", progress: bool = False
              ) -> tuple[list[Row], dict[str, float]]:
    """Run the study; returns the rows and the measured MBQ group sensitivities.

    ``configs`` are ``"W{bits} {method}"`` (method in :data:`METHODS`) or ``"mixed {avg}"``;
    ``calibration`` picks the calibration set (:func:`calibration_set`).
    """
    for cfg in configs:
        parts = cfg.split()
        if len(parts) != 2 or not (parts[0] == "mixed" or parts[1] in METHODS):
            raise HetlabError(
                f"run_study: configs must be 'W<bits> <method>' with method in {METHODS}, or "
                f"'mixed <bits>'; got {cfg!r}."
            )
    model = load_minilm()
    cal, cal_labels, ev, ev_labels = calibration_set(calibration)
    ref = encode(model, ev)
    capture: dict[str, list[np.ndarray]] = {}
    cal_ref = encode(model, cal, capture=capture)
    X = {n: np.concatenate(v) for n, v in capture.items()}
    tok_labels = token_labels(model, cal, cal_labels)
    sens = group_sensitivity(model, cal, cal_labels, ref=cal_ref,
                             rng=np.random.default_rng(seed))
    p_mbq = mbq_token_weights(tok_labels, sens)
    names = linear_names(model.n_layers)
    n_weights = sum(model.weight(n).size for n in names)
    rows = []
    for cfg in configs:
        if progress:
            print(f"  {cfg} …", flush=True)
        t0 = time.perf_counter()
        eff, nbits = {}, 0.0
        if cfg.startswith("mixed"):
            target = float(cfg.split()[1])
            plan = allocate_bits([model.weight(n) for n in names], target,
                                 importance=[X[n] for n in names], group_size=group_size,
                                 candidates=(3, 4), relative=True, block_rows=128)
            for li, n in enumerate(names):
                eff[n] = plan.dequantize(li).astype(np.float64)
            nbits = plan.average_bits * n_weights
        else:
            fmt, method = cfg.split()
            bits = int(fmt[1:])
            for n in names:
                w = model.weight(n)
                if method == "RTN":
                    q = quantize(w, bits=bits, group_size=group_size)
                else:
                    q = _calibrated(method, w, X[n], p_mbq, bits=bits, group_size=group_size,
                                    grid=grid)
                eff[n] = q.dequantize(np.float64)
                nbits += q.bits_per_weight * w.size
        seconds = time.perf_counter() - t0
        rows.append(_row(cfg, model, eff, nbits / n_weights, ev, ev_labels, ref, seconds))
    return rows, dict(zip(GROUPS, map(float, sens), strict=True))


def format_table(rows: list[Row]) -> str:
    """The study as a fixed-width text table."""
    head = (f"{'config':<12} {'bits/w':>6} " + " ".join(f"{f'L{i}':>6}" for i in range(6))
            + f" {'cos mean':>9} {'cos min':>8} {'passage':>8} {'query':>8} {'quant s':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.name:<12} {r.bits:6.3f} " + " ".join(f"{e:6.4f}" for e in r.layer_error)
            + f" {r.cos_mean:9.5f} {r.cos_min:8.5f} {r.cos_by_group['passage']:8.5f} "
            f"{r.cos_by_group['query']:8.5f} {r.seconds:7.1f}"
        )
    return "\n".join(lines)
