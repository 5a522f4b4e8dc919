"""Real-GPU checks of the sparse kernels (skipped, with the reason, without a GPU).

Every result is compared with the numpy reference and, for spmv/spmm, with cuSPARSE through
``cupyx.scipy.sparse`` on matrices larger than the simulator tests can afford; a matrix passed
as a cupyx matrix or as a CSR of CuPy arrays stays on the device.
"""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import sparse
from hetlab.core.registry import get_backend
from hetlab.kernels.sparse import reference
from hetlab.kernels.sparse.spec import rel_diff

_REASON = get_backend("cupy").why_not()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=f"cupy: {_REASON}"),
]


@pytest.mark.parametrize("kind", ["banded", "powerlaw", "mixed", "uniform"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_equal_reference_and_cusparse(kind, dtype):
    import cupy

    rng = np.random.default_rng(0)
    A = sparse.make_matrix(20_000, rng, kind=kind, nnz_per_row=12, dtype=dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    x = rng.random(A.shape[1]).astype(dtype)
    y = hl.spmv(A, x, device="cupy")
    assert isinstance(y, np.ndarray) and rel_diff(y, reference.spmv(A, x)) <= tol
    dA = A.to_cupy()
    assert rel_diff(y, cupy.asnumpy(dA @ cupy.asarray(x))) <= tol
    from hetlab.kernels.sparse import cupy as gpu

    on_device = A.map_arrays(cupy.asarray)
    for lanes in (None, 1, 4, 32):  # the row-group kernel the GPU benchmark times too
        got = cupy.asnumpy(gpu.spmv_rows(on_device, cupy.asarray(x), lanes))
        assert rel_diff(got, reference.spmv(A, x)) <= tol, lanes
    for k in (1, 16, 64):
        X = rng.random((A.shape[1], k)).astype(dtype)
        Y = hl.spmm(A, X, device="cupy")
        assert rel_diff(Y, reference.spmm(A, X)) <= tol
        assert rel_diff(Y, cupy.asnumpy(dA @ cupy.asarray(X))) <= tol
    Q, K = rng.random((A.shape[0], 32)), rng.random((A.shape[1], 32))
    S = hl.sddmm(A, Q, K, device="cupy")
    assert isinstance(S.data, np.ndarray)
    assert rel_diff(S, reference.sddmm(A, Q.astype(dtype), K.astype(dtype))) <= tol


def test_device_matrices_stay_on_the_device():
    import cupy

    A = sparse.make_matrix(1000, np.random.default_rng(1), kind="uniform")
    x = cupy.ones(A.shape[1])
    for dev_A in (A.to_cupy(), A.map_arrays(cupy.asarray)):
        y = hl.spmv(dev_A, x)  # device chosen from where the arrays live
        assert isinstance(y, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(y), reference.spmv(A, np.ones(A.shape[1])))
