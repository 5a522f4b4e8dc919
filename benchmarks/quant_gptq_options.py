"""GPTQ's options on all-MiniLM-L6-v2, chosen without looking at the evaluation sentences.

Calibrates W4 g128 GPTQ on ``data/calibration.tsv`` alone and scores the mean embedding
cosine vs fp32 on the *even* lines of ``data/sentences.tsv`` — sentences that are neither in
that calibration set nor in the study's evaluation set (the odd lines). The study's
``W4 GPTQ`` uses the options that win here (act-order, clip search, damp 0.01).

Run::

    PYTHONPATH=$PWD python benchmarks/quant_gptq_options.py     # ~2 min on 2 cores
"""

from __future__ import annotations

import time

import numpy as np

from hetlab.kernels.quant.gptq import CLIP_RATIOS, gptq
from hetlab.kernels.quant.minilm import encode, linear_names, load_minilm
from hetlab.kernels.quant.minilm_eval import CALIBRATION, calibration_set, load_sentences

OPTIONS = {
    "plain": {},
    "act-order": dict(act_order=True),
    "act-order + clip": dict(act_order=True, clip_ratios=CLIP_RATIOS),
    "act-order + clip, damp 0.03": dict(act_order=True, clip_ratios=CLIP_RATIOS, damp=0.03),
}


def main() -> int:
    model = load_minilm()
    names = linear_names(model.n_layers)
    val, _, ev, _ = calibration_set("split")  # even lines (validation), odd lines (evaluation)
    cal, _ = load_sentences(CALIBRATION)
    assert not (set(val) & set(ev)) and not (set(cal) & set(val))
    ref = encode(model, val)
    capture: dict[str, list[np.ndarray]] = {}
    encode(model, cal, capture=capture)
    X = {n: np.concatenate(capture[n]) for n in names}
    print(f"W4 g128 GPTQ: calibration {len(cal)} sentences ({len(X[names[0]])} tokens), "
          f"validation {len(val)} other sentences")
    for label, opts in OPTIONS.items():
        t0 = time.perf_counter()
        eff = {n: gptq(model.weight(n), X[n], bits=4, group_size=128, **opts).dequantize()
               for n in names}
        cos = (encode(model, val, weights=eff) * ref).sum(axis=1)
        print(f"{label:<28} cos mean {cos.mean():.5f}  min {cos.min():.5f}  "
              f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
