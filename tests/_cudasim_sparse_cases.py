"""GPU sparse kernels under Numba's CUDA simulator, against the numpy reference.

Not collected by a plain ``pytest`` run: tests/test_sparse_cudasim.py runs this file in a
subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (set before Numba is imported). The drivers of
:mod:`hetlab.kernels.sparse.cupy` then run their real kernels as Python threads on NumPy
arrays. Sizes stay small: every simulated thread is a Python thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import config

from hetlab import sparse
from hetlab.kernels.sparse import cupy as gpu
from hetlab.kernels.sparse import reference
from hetlab.kernels.sparse.spec import rel_diff

if not config.ENABLE_CUDASIM:
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 before numba is imported (run through "
                "tests/test_sparse_cudasim.py)", allow_module_level=True)


@pytest.fixture(autouse=True)
def _small_launches(monkeypatch):
    monkeypatch.setattr(gpu, "THREADS", 16)  # several blocks per launch
    monkeypatch.setattr(gpu, "ITEMS_PER_THREAD", 3)  # rows split between threads


def _matrices():
    rng = np.random.default_rng(5)
    out = {
        "1x1": sparse.csr(np.array([[2.5]])),
        "no-nonzeros": sparse.csr(np.zeros((4, 3))),
        "one-huge-row": sparse.csr(np.vstack([np.zeros((2, 40)), rng.random((1, 40)),
                                              np.zeros((2, 40))])),
    }
    for kind in ("mixed", "powerlaw", "banded"):
        out[kind] = sparse.make_matrix(24, rng, kind=kind, nnz_per_row=4)
    return [pytest.param(A.with_index_dtype(idx).astype(dt), id=f"{k}-{np.dtype(idx)}-"
                         f"{np.dtype(dt)}")
            for k, A in out.items() for idx in (np.int32, np.int64)
            for dt in (np.float64, np.float32)]


@pytest.mark.parametrize("A", _matrices())
def test_kernels_equal_reference(A):
    rng = np.random.default_rng(0)
    tol = 1e-12 if A.dtype == np.float64 else 1e-5
    x = rng.random(A.shape[1]).astype(A.dtype)
    assert rel_diff(gpu.spmv(A, x), reference.spmv(A, x)) <= tol
    for items in (1, 7):  # segments shorter and longer than rows
        assert rel_diff(gpu.spmv_merge(A, x, items), reference.spmv(A, x)) <= tol, items
    for lanes in (None, 1, 2, 8, 32):  # row groups within, across and wider than a block
        assert rel_diff(gpu.spmv_rows(A, x, lanes), reference.spmv(A, x)) <= tol, lanes
    X = rng.random((A.shape[1], 3)).astype(A.dtype)
    got = gpu.spmm(A, X)
    assert got.dtype == A.dtype and rel_diff(got, reference.spmm(A, X)) <= tol
    Q = rng.random((A.shape[0], 2)).astype(A.dtype)
    K = rng.random((A.shape[1], 2)).astype(A.dtype)
    assert rel_diff(gpu.sddmm(A, Q, K), reference.sddmm(A, Q, K)) <= tol
