"""The numba sparse kernels' own code paths: software prefetch (rows longer than the prefetch
cap, the last rows where the x prefetch stops, float32 lines), on any number of parts."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from hetlab import sparse
from hetlab.kernels._prefetch import prefetch
from hetlab.kernels.sparse import numba as nb
from hetlab.kernels.sparse import reference
from hetlab.kernels.sparse.spec import rel_diff


def _skewed(rng: np.random.Generator, dtype, index_dtype) -> sparse.CSR:
    """Short rows (0–8 entries, a quarter empty), one row longer than the prefetch cap, a run
    of empty rows at the end (so the last rows sit within ``X_AHEAD`` of the end)."""
    n_rows, n_cols = 2500, 3 * nb.ROW_CAP + 11
    counts = rng.integers(0, 9, n_rows)
    counts[rng.random(n_rows) < 0.25] = 0
    counts[-40:] = 0
    counts[-45] = 2
    huge = 700
    counts[huge] = 0
    rows = np.repeat(np.arange(n_rows), counts)
    cols = rng.integers(0, n_cols, rows.size)
    long_cols = rng.choice(n_cols, 3 * nb.ROW_CAP, replace=False)
    rows = np.concatenate([rows, np.full(long_cols.size, huge)])
    cols = np.concatenate([cols, long_cols])
    vals = rng.random(rows.size) * 2 - 1
    A = sparse.csr(sparse.coo(rows, cols, vals, (n_rows, n_cols)))
    assert int(np.diff(A.indptr).max()) > nb.ROW_CAP
    return A.astype(dtype).with_index_dtype(index_dtype)


@pytest.mark.parametrize("n_parts", [1, 2, 3, 8])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_spmv_prefetch_paths_equal_reference(n_parts, dtype, index_dtype):
    rng = np.random.default_rng(n_parts)
    A = _skewed(rng, dtype, index_dtype)
    x = (rng.random(A.shape[1]) * 2 - 1).astype(dtype)
    got = nb.spmv_parts(A, x, n_parts)
    assert got.dtype == dtype
    assert rel_diff(got, reference.spmv(A, x)) <= (1e-12 if dtype == np.float64 else 2e-5)


def test_prefetch_changes_nothing_and_takes_indices_past_the_end():
    @numba.njit
    def touch(a, idx):
        s = 0.0
        for i in range(a.shape[0]):
            prefetch(a, idx[i])
            s += a[i]
        return s

    a = np.arange(10.0)
    idx = np.array([0, 9, 10, 64, 1000, 2**20, 3, 3, 5, 7], dtype=np.uint32)
    assert touch(a, idx) == 45.0
    assert touch(a, idx.astype(np.int64)) == 45.0


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"),
                    reason="checks x86 assembly")
def test_spmv_part_compiles_to_prefetch_instructions():
    """The intrinsic is not dropped: the compiled part holds prefetcht0 for its streams, and
    the x prefetch zero-extends the uint32 column (movl, no movslq sign extension)."""
    opts = {k: v for k, v in nb._FAST.items() if k != "cache"}  # inspect_asm needs no cache
    part = numba.njit(**opts)(nb._spmv_part.py_func)
    A = sparse.make_matrix(100, np.random.default_rng(0), kind="laplacian3d")
    y = np.empty(A.shape[0])
    part(0, 1, *nb._unsigned(A), A.data, np.ones(A.shape[1]), y)
    asm = "\n".join(part.inspect_asm().values())
    assert asm.count("prefetcht0") >= 4
    assert not re.search(r"movslq\s+-?\d*\(", asm)  # no sign-extending load of an index


@pytest.mark.parametrize("kind,local", [("banded", True), ("laplacian3d", True),
                                        ("uniform", False), ("powerlaw", False)])
def test_x_locality_picks_the_x_prefetch_only_for_scattered_columns(kind, local):
    n = 300_000 if kind == "laplacian3d" else 200_000  # a 67×67×67 grid: planes 4489 apart
    A = sparse.make_matrix(n, np.random.default_rng(0), kind=kind, nnz_per_row=16)
    indptr, indices = nb._unsigned(A)
    half = np.uint64(A.shape[0] // 2)
    assert nb._x_is_local(indptr, indices, np.uint64(0), half, A.shape[1]) == local
    assert nb._x_is_local(indptr, indices, half, np.uint64(A.shape[0]), A.shape[1]) == local


@pytest.mark.parametrize("kind", ["banded", "laplacian3d"])
@pytest.mark.parametrize("n_parts", [1, 2, 7])
def test_spmv_local_path_equals_reference(kind, n_parts):
    """Local columns: the unrolled 4/2/1 row loop, rows of every length 0–16."""
    rng = np.random.default_rng(n_parts)
    A = sparse.make_matrix(3000, rng, kind=kind, nnz_per_row=13)
    x = rng.random(A.shape[1]) * 2 - 1
    assert rel_diff(nb.spmv_parts(A, x, n_parts), reference.spmv(A, x)) <= 1e-12
