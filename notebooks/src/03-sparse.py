# %% [markdown]
# # 03 · Sparse: formats, the SpMV roofline, einsum over fiber trees, sparse convolution
#
# **You will learn** what each sparse format costs in bytes per nonzero and why that byte count
# — not the arithmetic — sets the speed of a sparse matrix-vector product (SpMV); how to place
# measured runs of every device on a *memory roofline* next to this machine's measured
# bandwidth; how a sparse Einstein sum is planned as *joins* and *merges* of fibers (the view of
# FEASTA); and how a sparse 3-D convolution on a voxelized point cloud picks between two
# dataflows by measuring them (the autotuner of TorchSparse++).
#
# **You need** hetlab (`pip install -e ".[lab]"`); a GPU is optional — devices that are not here
# are listed with the reason. **Run time:** about 30 seconds on 2 CPU cores.

# %%
# NBVAL_IGNORE_OUTPUT
import numpy as np

import hetlab as hl
from hetlab import sparse
from hetlab.kernels.sparseconv import autotune_table, voxelize

hl.devices()

# %% [markdown]
# ## Formats and their bytes per nonzero
#
# A sparse matrix stores its nonzeros plus enough indices to find them. **CSR** keeps, per
# nonzero, its value (8 B in float64) and its column (4 B while indices fit in int32), plus one
# row pointer per row: about 12 B per nonzero. **COO** stores the row of every nonzero too
# (16 B). The blocked formats trade padding for regular access: **BSR** stores dense 4×4 tiles
# wherever any entry is nonzero, **ELL** pads every row to the longest one, and **SELL-C-σ**
# sorts rows by length inside windows of σ rows and pads only within slices of C rows.
#
# Here is CSR's anatomy on a tiny matrix:

# %%
tiny = sparse.csr(np.array([[5.0, 0, 0, 1], [0, 0, 0, 0], [0, 2, 3, 0], [0, 0, 0, 4]]))
print(tiny)
print("indptr :", tiny.indptr, "  (row i is data[indptr[i]:indptr[i+1]]; row 1 is empty)")
print("indices:", tiny.indices)
print("data   :", tiny.data)

# %% [markdown]
# The same three matrices in every format (seeded, 4,096 rows each): a banded matrix, the
# 7-point Laplacian of a 16×16×16 grid, and a *power-law* matrix whose row lengths are skewed —
# a few rows hold many entries, as in graphs.

# %%
rng = np.random.default_rng(3)
matrices = {kind: sparse.make_matrix(4_096, rng, kind=kind)
            for kind in ("banded", "laplacian3d", "powerlaw")}
formats = {
    "CSR": lambda A: A,
    "COO": lambda A: A.tocoo(),
    "BSR 4x4": lambda A: sparse.BSR.from_csr(A, (4, 4)),
    "ELL": sparse.ELL.from_csr,
    "SELL-8-64": lambda A: sparse.SELL.from_csr(A, C=8, sigma=64),
}
print(f"{'bytes/nonzero':14s}" + "".join(f"{kind:>13s}" for kind in matrices))
print(f"{'(nonzeros)':14s}" + "".join(f"{A.nnz:>13,}" for A in matrices.values()))
for name, build in formats.items():
    print(f"{name:14s}" + "".join(f"{build(A).bytes_per_nonzero:13.1f}"
                                  for A in matrices.values()))

# %% [markdown]
# CSR and COO do not care about structure. BSR pays for the zeros inside its tiles: cheap on the
# banded matrix, ruinous where nonzeros are scattered. ELL is fine while rows are equally long
# (banded, Laplacian) and explodes on the power-law matrix, where one long row sets the width
# of all; SELL-C-σ's sorting recovers most of that. For SpMV every one of these bytes must be
# read once per product — which is the next section.
#
# ## The SpMV roofline
#
# `y = A @ x` does 2 flops per nonzero (a multiply and an add) and must read at least the
# nonzero's value and column: 2 flops for ≥ 12 bytes, an *arithmetic intensity* below
# 1/6 flop/byte. A device moving `B` GB/s can therefore do at most `B × intensity` GFLOP/s,
# whatever its compute peak: SpMV sits on the sloped, bandwidth-bound part of the roofline.
# The cost model of `hl.spmv` counts the CSR arrays, `x` and `y` once:

# %%
case = matrices["powerlaw"]
model_bytes = case.nbytes + 8 * (case.shape[0] + case.shape[1])
print(f"flops {2 * case.nnz:,}  bytes {model_bytes:,}  "
      f"intensity {2 * case.nnz / model_bytes:.3f} flop/B")

# %% [markdown]
# `hl.compare` runs every device on the same seeded power-law matrices, times compute apart from
# transfers and from the first (JIT-compiling) call, and checks every result against the NumPy
# reference. It also records each device's bandwidth roof: for the CPU backends a STREAM triad
# *measured on this machine* in the same process (NumPy single-threaded; Numba with all its
# threads), for a GPU the datasheet figure.

# %%
# NBVAL_IGNORE_OUTPUT
ds = hl.compare(hl.spmv, sizes=[20_000, 200_000], devices=["numpy", "numba", "cupy"],
                repeats=5, include_recorded=True)
ds.hetlab.table()

# %%
here = ds.sel(device=["numpy", "numba"])
for (device, size), status in here["status"].to_series().items():
    verdict = "verified" if ds["verified"].sel(device=device, size=size) else status[:60]
    print(f"{device:6s} {size:>7,} rows: {verdict}")

# %% [markdown]
# Each point is one run: intensity from the cost model, GFLOP/s from the median time. The thin
# line of the same colour is that device's roof (its measured bandwidth × intensity); the
# fraction is how much of it the run reached.

# %%
# NBVAL_IGNORE_OUTPUT
print("bandwidth roofs (GB/s):", ds["peak_gbps"].round(1).to_series().to_dict())
ds.hetlab.roofline_points().round(3)

# %%
# NBVAL_IGNORE_OUTPUT
ds.hetlab.roofline()

# %% [markdown]
# The small matrix fits in the caches, so it can land *above* the DRAM roof; the large one
# cannot, and a well-balanced kernel gets close to the roof. The Numba kernel splits rows among
# threads by nonzeros, not by row count, so the power-law matrix's long rows do not leave one
# thread working alone. `python benchmarks/sparse.py` runs the full-size comparison against
# `scipy.sparse` (2M rows, banded, Laplacian, power-law and uniform matrices).
#
# **On a GPU.** No GPU recording is committed to this repository yet, so this notebook states
# no GPU figure. When `scripts/gpu_check.sh` has been run on a GPU machine and its recordings
# are committed under `data/recorded/`, they are shown here beside the live devices (dotted,
# labelled with the machine and the date); on a machine with a GPU, the `cupy` rows above are
# measured live. What to look for then: a GPU moves far more bytes per second, so the same
# intensity reaches a far higher roof — but a matrix copied to the GPU for one product pays
# the copy every time; an iterative solver that keeps it there for hundreds of products does not.

# %%
# NBVAL_IGNORE_OUTPUT
hl.save(ds, "spmv-compare.nc")

# %% [markdown]
# ## Sparse einsum: joins and merges over fiber trees
#
# FEASTA treats every sparse operand as a *fiber tree*: CSR is a dense level (rows) over a
# compressed level (each row's columns). A contraction then becomes a loop nest in which each
# index is either a dense loop, a walk along one fiber, a **join** (co-iterate two fibers and
# keep only common coordinates: a product is zero where either factor is) or a **merge** (the
# union of fibers, where sums meet). `sparse.explain` shows the plan `sparse.einsum` compiles
# (indices renamed by first appearance, so `ik,kj->ij` prints as `ij,jk->ik`):

# %%
A = sparse.make_matrix(300, np.random.default_rng(7), kind="uniform", nnz_per_row=6)
B = sparse.make_matrix(300, np.random.default_rng(8), kind="powerlaw", nnz_per_row=6)
print(sparse.explain("ik,kj->ij", A, B))

# %% [markdown]
# That is Gustavson's sparse × sparse product: row `i` of the result is the *merge* of the rows
# `B[k, :]` selected by row `i` of `A`. The elementwise product of two sparse matrices is
# instead a *join* of their column fibers:

# %%
print(sparse.explain("ij,ij->ij", A, B))

# %% [markdown]
# Both are generated as Numba code once per expression and operand kinds and cached; here they
# are checked against `numpy.einsum` on the densified operands:

# %%
dense_A, dense_B = A.toarray(), B.toarray()
C = sparse.einsum("ik,kj->ij", A, B)
H = sparse.einsum("ij,ij->ij", A, B)
print(C, "equals numpy:", np.allclose(C.toarray(), np.einsum("ik,kj->ij", dense_A, dense_B)))
print(H, "equals numpy:", np.allclose(H.toarray(), dense_A * dense_B))
print("sparse × dense, ij,j->i:",
      np.allclose(sparse.einsum("ij,j->i", A, np.ones(300)), dense_A.sum(axis=1)))

# %% [markdown]
# ## Sparse 3-D convolution on a voxelized point cloud
#
# Point-cloud networks convolve features that live on occupied voxels only. We voxelize a
# clustered cloud (the point-cloud family's rule, `floor(p / voxel_size)`) and look at how
# empty the grid is:

# %%
points = hl.make_cloud(20_000, np.random.default_rng(11), kind="clustered")
vox = voxelize(points, 1 / 32)
extent = vox.max(axis=0) - vox.min(axis=0) + 1
print(f"{len(points):,} points → {len(vox):,} occupied voxels of a "
      f"{extent[0]}×{extent[1]}×{extent[2]} grid ({len(vox) / extent.prod():.1%} occupied)")

# %% [markdown]
# For every output voxel and each of the 3×3×3 kernel offsets, the *kernel map* (built by
# hashing voxel coordinates) holds the input voxel found there, if any. Two dataflows use it:
#
# * **gather–GEMM–scatter**: per offset, gather the matched input rows, one dense matrix product
#   (BLAS) with that offset's weights, scatter-add into the outputs — efficient GEMMs, but
#   27 gathered copies of the features;
# * **fetch-on-demand**: per output voxel, fetch its few neighbours and accumulate in registers
#   — no copies, but small scalar loops instead of a GEMM.
#
# Which wins depends on the layer (channels against neighbours per output and voxel count), so
# `dataflow="auto"` measures both on the layer's own kernel map and caches the choice per layer
# class. Three layers: narrow, wide, and a strided (downsampling) one; each is checked against
# the dense-grid NumPy reference.

# %%
rng = np.random.default_rng(12)
layers = {"narrow 16→32": (16, 32, 1), "wide 64→64": (64, 64, 1), "strided 16→32": (16, 32, 2)}
for name, (c_in, c_out, stride) in layers.items():
    feats = rng.standard_normal((len(vox), c_in)).astype(np.float32)
    weights = (rng.standard_normal((27, c_in, c_out)) / np.sqrt(27 * c_in)).astype(np.float32)
    out_vox, out = hl.sparse_conv3d(vox, feats, weights, stride=stride, device="numba",
                                    dataflow="auto")
    ref_vox, ref = hl.sparse_conv3d(vox, feats, weights, stride=stride, device="numpy")
    same = np.array_equal(out_vox, ref_vox) and np.allclose(out, ref, atol=1e-4)
    print(f"{name:14s} {len(vox):,} → {len(out_vox):,} voxels × {c_out} channels; "
          f"equals the reference: {same}")

# %% [markdown]
# What the autotuner measured (best time of each dataflow on each layer class, this run) and
# what it chose:

# %%
# NBVAL_IGNORE_OUTPUT
autotune_table().round(3)

# %% [markdown]
# Read the table with the kernel map in mind. A surface-like cloud gives each voxel only a
# handful of its 26 neighbours (`neighbours`), so gather–GEMM–scatter runs 27 small GEMMs over
# few rows each and pays a gather per offset, while fetch-on-demand does only the useful
# products in one pass. As channels grow, each matched pair carries `c_in × c_out` work and
# BLAS's blocked GEMM pulls ahead of fetch-on-demand's scalar loops; a strided layer has fewer
# outputs and fewer matches per output. Which side of that line a layer falls on depends on
# this machine (cores, caches, BLAS), which is why the choice is measured, not modeled. It is
# cached by layer class, so a network reuses it for every layer of the same shape.
#
# ## Exercises
#
# Each exercise is a stub for you to fill in and a checker from `hetlab.exercises` that stops at
# the first wrong case with a hint (which input, what was expected, what came, what to look at).
# The checkers are called with `raise_on_fail=False`, so the stub's verdict is shown, not raised.
# Solutions are in `notebooks/solutions/` — try first.
#
# ### Exercise 03.1 · CSR's three arrays
#
# Fill in `csr_arrays(dense)`: return `(indptr, indices, data)` of a dense matrix as CSR stores
# them (see the tiny matrix's anatomy above) — rows in order, columns ascending within a row.

# %%
from hetlab.exercises import check_csr_arrays, check_spmv  # noqa: E402


def csr_arrays(dense):
    """(n_rows, n_cols) array → (indptr (n_rows + 1,), indices (nnz,), data (nnz,))."""
    raise NotImplementedError("your code here")


check_csr_arrays(csr_arrays, raise_on_fail=False)

# %% [markdown]
# ### Exercise 03.2 · SpMV, one row at a time
#
# Fill in `my_spmv(A, x)` for a `sparse.CSR` matrix: `y[i]` is the sum of
# `A.data[p] * x[A.indices[p]]` over `p` in `A.indptr[i] : A.indptr[i + 1]`. Once it passes,
# the checker times it beside hetlab's NumPy and Numba SpMV on generated power-law matrices:
# a Python row loop against a compiled, nonzero-balanced one.

# %%
def my_spmv(A, x):
    """CSR matrix (n_rows, n_cols), x (n_cols,) → y (n_rows,) = A @ x."""
    raise NotImplementedError("your code here")


check_spmv(my_spmv, raise_on_fail=False)

# %% [markdown]
# ## Try it
#
# * Raise the SpMV sizes to `[20_000, 200_000, 2_000_000]` and watch the large point settle
#   under the roof; compare `hl.set_threads(1)` with the default.
# * Add `kind="uniform"` to the formats table: where does BSR stand when nonzeros are
#   scattered but rows are equally long? Try `SELL.from_csr(A, C=8, sigma=1)` (no sorting) on
#   the power-law matrix.
# * Use `voxel_size=1/64` (finer voxels, fewer neighbours per voxel) or 128 channels and see
#   whether the autotuner changes its mind.
# * From a shell: `python benchmarks/sparse.py` for the full-size comparison against scipy.
#
# ## Shutting down
#
# The cell below frees the matrices, the comparison and the voxelized cloud; then choose
# **Kernel → Shut Down Kernel** (or **Shut Down** beside this notebook in the *Running
# Terminals and Kernels* panel) before opening the next notebook.

# %%
import gc  # noqa: E402

del matrices, case, ds, here, A, B, C, H, dense_A, dense_B, points, vox, feats, out, ref
print("freed; objects collected:", gc.collect() >= 0)
