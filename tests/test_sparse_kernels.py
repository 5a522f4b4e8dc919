"""Every sparse kernel × backend equals the numpy reference; the reference equals dense numpy;
edge cases (empty rows, one huge row, 1×1, no nonzeros, int32/int64 indices); bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import sparse
from hetlab.kernels.sparse import reference
from hetlab.kernels.sparse.generate import KINDS
from hetlab.kernels.sparse.spec import rel_diff
from tests.conftest import backend_params

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {np.float64: 1e-12, np.float32: 2e-5}


def _matrices():
    """(id, CSR) edge cases and generated matrices, both index dtypes."""
    rng = np.random.default_rng(3)
    out = [
        ("1x1", sparse.csr(np.array([[2.5]]))),
        ("1x1-empty", sparse.csr(np.zeros((1, 1)))),
        ("no-nonzeros", sparse.csr(np.zeros((7, 4)))),
        ("0x0", sparse.csr(np.zeros((0, 0)))),
        ("0-rows", sparse.csr(np.zeros((0, 5)))),
        ("0-cols", sparse.csr(np.zeros((3, 0)))),
        ("one-huge-row", sparse.csr(np.vstack([np.zeros((5, 900)), rng.random((1, 900)),
                                               np.zeros((5, 900))]))),
        ("wide", sparse.make_matrix(30, rng, kind="uniform").tocoo()),
    ]
    for kind in KINDS:
        for n in (3, 60, 500):
            out.append((f"{kind}-{n}", sparse.make_matrix(n, rng, kind=kind, nnz_per_row=7)))
    cases = []
    for name, A in out:
        A = sparse.csr(A)
        for idx in (np.int32, np.int64):
            for dt in (np.float64, np.float32):
                cases.append(pytest.param(A.with_index_dtype(idx).astype(dt),
                                          id=f"{name}-{np.dtype(idx)}-{np.dtype(dt)}"))
    return cases


MATRICES = _matrices()


def _close(got, expected, dtype):
    assert rel_diff(got, expected) <= TOL[np.dtype(dtype).type], rel_diff(got, expected)


@pytest.mark.parametrize("A", MATRICES)
def test_reference_equals_dense_numpy(A):
    rng = np.random.default_rng(0)
    D = A.toarray().astype(np.float64)
    x = rng.random(A.shape[1])
    X = rng.random((A.shape[1], 5))
    Q, K = rng.random((A.shape[0], 4)), rng.random((A.shape[1], 4))
    _close(reference.spmv(A, x.astype(A.dtype)), D @ x, A.dtype)
    _close(reference.spmm(A, X.astype(A.dtype)), D @ X, A.dtype)
    got = reference.sddmm(A, Q.astype(A.dtype), K.astype(A.dtype))
    _close(got.toarray(), D * (Q @ K.T), A.dtype)
    assert got.indices is A.indices


@pytest.mark.parametrize("device", backend_params("spmv"))
@pytest.mark.parametrize("A", MATRICES)
def test_kernels_equal_reference(device, A):
    rng = np.random.default_rng(1)
    x = rng.random(A.shape[1]).astype(A.dtype)
    if device == "fpga" and A.dtype != np.float32:  # the spmv overlay is float32 only
        with pytest.raises(hl.KernelNotSupported, match="astype"):
            hl.spmv(A, x, device=device)
        return
    got = hl.spmv(A, x, device=device)
    assert got.dtype == A.dtype and got.shape == (A.shape[0],)
    _close(got, reference.spmv(A, x), A.dtype)
    if device == "fpga":  # only spmv has an overlay
        return
    for k in (1, 3, 16):
        X = rng.random((A.shape[1], k)).astype(A.dtype)
        got = hl.spmm(A, X, device=device)
        assert got.dtype == A.dtype and got.shape == (A.shape[0], k)
        _close(got, reference.spmm(A, X), A.dtype)
    Q, K = rng.random((A.shape[0], 8)), rng.random((A.shape[1], 8))
    got = hl.sddmm(A, Q, K, device=device)
    assert isinstance(got, sparse.CSR) and got.dtype == A.dtype
    _close(got, reference.sddmm(A, Q.astype(A.dtype), K.astype(A.dtype)), A.dtype)


@pytest.mark.parametrize("kind", ["powerlaw", "mixed", "banded"])
@pytest.mark.parametrize("n_parts", [1, 2, 3, 7, 64, 1000])
def test_numba_merge_path_any_number_of_parts(kind, n_parts):
    """Parts that split rows anywhere (inside a huge row, across empty rows) add up."""
    from hetlab.kernels.sparse import numba as nb

    rng = np.random.default_rng(n_parts)
    A = sparse.make_matrix(200, rng, kind=kind, nnz_per_row=9)
    x = rng.random(A.shape[1])
    X = rng.random((A.shape[1], 6))
    Q, K = rng.random((200, 3)), rng.random((A.shape[1], 3))
    _close(nb.spmv_parts(A, x, n_parts), reference.spmv(A, x), np.float64)
    _close(nb.spmm_parts(A, X, n_parts), reference.spmm(A, X), np.float64)
    _close(nb.sddmm_parts(A, Q, K, n_parts), reference.sddmm(A, Q, K), np.float64)


@st.composite
def coo_matrices(draw):
    m, n = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    nnz = draw(st.integers(0, 40))
    row = draw(st.lists(st.integers(0, m - 1), min_size=nnz, max_size=nnz))
    col = draw(st.lists(st.integers(0, n - 1), min_size=nnz, max_size=nnz))
    val = draw(st.lists(st.integers(-3, 3).map(float), min_size=nnz, max_size=nnz))
    return sparse.coo(row, col, val, (m, n))


@pytest.mark.parametrize("device", backend_params("spmv"))
@FAST
@given(C=coo_matrices(), k=st.integers(1, 5), parts=st.integers(1, 9))
def test_random_coo_matrices_equal_dense(device, C, k, parts):
    rng = np.random.default_rng(k)
    D = C.toarray()  # repeats added up, as csr() does
    x = rng.integers(-3, 4, C.shape[1]).astype(float)
    X = rng.integers(-3, 4, (C.shape[1], k)).astype(float)
    Q, K = rng.random((C.shape[0], k)), rng.random((C.shape[1], k))
    if device == "fpga":  # float32 spmv only: the same matrix in float32
        A32, x32 = sparse.csr(C).astype(np.float32), x.astype(np.float32)
        got = hl.spmv(A32, x32, device=device)
        assert rel_diff(got, reference.spmv(A32, x32)) <= TOL[np.float32]
        return
    np.testing.assert_allclose(hl.spmv(C, x, device=device), D @ x, atol=1e-12)
    np.testing.assert_allclose(hl.spmm(C, X, device=device), D @ X, atol=1e-12)
    got = hl.sddmm(C, Q, K, device=device).toarray()
    np.testing.assert_allclose(got, D * (Q @ K.T), atol=1e-12)
    if device == "numba":
        from hetlab.kernels.sparse import numba as nb

        A = sparse.csr(C)
        np.testing.assert_allclose(nb.spmv_parts(A, x, parts), D @ x, atol=1e-12)


def test_scipy_matrices_are_accepted():
    import scipy.sparse as sp

    S = sp.random(20, 30, density=0.2, random_state=0, format="csc")
    x = np.arange(30.0)
    np.testing.assert_allclose(hl.spmv(S, x, device="numba"), S @ x)
    X = np.ones((30, 4), dtype=np.float32)
    Y = hl.spmm(S, X, device="numba")
    assert Y.dtype == np.float64  # the matrix's dtype wins
    np.testing.assert_allclose(Y, S @ X)


def test_vector_is_cast_to_the_matrix_dtype():
    A = sparse.csr(np.eye(3, dtype=np.float32))
    assert hl.spmv(A, np.ones(3)).dtype == np.float32
    assert hl.spmv(sparse.csr(np.eye(3)), np.ones(3, dtype=np.int64)).dtype == np.float64


A3 = sparse.csr(np.eye(3))
BAD = [
    (lambda: hl.spmv(A3, np.ones(4)), r"spmv: x must have shape \(3,\)"),
    (lambda: hl.spmv(A3, np.ones((3, 1))), r"spmv: x must have shape \(3,\)"),
    (lambda: hl.spmv(A3, [1.0, np.nan, 1.0]), "spmv: x must be finite"),
    (lambda: hl.spmv(A3, [1.0, np.inf, 1.0]), "spmv: x must be finite"),
    (lambda: hl.spmv(A3, ["a", "b", "c"]), "spmv: x must hold real numbers"),
    (lambda: hl.spmv("A", np.ones(3)), "spmv: A is not a valid sparse matrix"),
    (lambda: hl.spmv(np.ones(3), np.ones(3)), "spmv: A is not a valid sparse matrix.*2-D"),
    (lambda: hl.spmv((np.array([np.nan]), (np.array([0]), np.array([0]))), np.ones(1)),
     "A is not a valid sparse matrix.*finite"),
    (lambda: hl.spmm(A3, np.ones((3, 0))), "spmm: X must have 1 to 256 columns; got 0"),
    (lambda: hl.spmm(A3, np.ones((3, 257))), "spmm: X must have 1 to 256 columns; got 257"),
    (lambda: hl.spmm(A3, np.ones((2, 4))), r"spmm: X must have shape \(3, k\)"),
    (lambda: hl.spmm(A3, np.ones(3)), r"spmm: X must have shape \(3, k\)"),
    (lambda: hl.sddmm(A3, np.ones((3, 2)), np.ones((3, 3))), r"sddmm: Y must have shape \(3, 2\)"),
    (lambda: hl.sddmm(A3, np.ones((2, 2)), np.ones((3, 2))), r"sddmm: X must have shape \(3, k\)"),
    (lambda: hl.sddmm(A3, np.full((3, 2), np.nan), np.ones((3, 2))), "sddmm: X must be finite"),
    (lambda: hl.spmv(A3, np.ones(3), device="tpu"), "device must be one of"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m[:40] for _, m in BAD])
def test_bad_input_raises_invalid_input(call, message):
    with pytest.raises(hl.InvalidInputError, match=message):
        call()


def test_unsupported_backend_says_which_are():
    with pytest.raises(hl.KernelNotSupported, match="supported: numpy, numba"):
        hl.spmm(A3, np.ones((3, 2)), device="fpga")


def test_docstring_examples_run():
    import doctest

    from hetlab.kernels.sparse import api

    assert doctest.testmod(api).failed == 0


# --- the spine with a container argument -------------------------------------------------


class _FakeDeviceArray:
    """Stands in for a device array: hetlab recognizes arrays by their module's family."""

    __module__ = "cupy._core"

    def __init__(self, shape):
        self.shape = shape


def test_dispatch_locates_a_matrix_by_its_arrays():
    from hetlab.core.dispatch import resolve_backend
    from hetlab.core.registry import get_kernel

    spec = get_kernel("spmv")
    assert resolve_backend(spec, None, {"A": A3, "x": np.ones(3)})[0].name == "numpy"
    on_gpu = A3.map_arrays(lambda a: _FakeDeviceArray(a.shape))
    backend, on_host = resolve_backend(spec, None, {"A": on_gpu, "x": _FakeDeviceArray((3,))})
    assert backend.name == "cupy" and not on_host
    with pytest.raises(hl.DeviceMismatchError, match="A on cupy, x on host"):
        resolve_backend(spec, None, {"A": on_gpu, "x": np.ones(3)})
    import scipy.sparse as sp

    assert resolve_backend(spec, None, {"A": sp.eye(3), "x": np.ones(3)})[1]


def test_dispatch_moves_matrices_part_by_part(monkeypatch):
    """A device backend receives the matrix with every array moved, and the CSR result of
    sddmm comes back with every array copied out."""
    from hetlab.core import dispatch
    from hetlab.core.registry import get_backend

    moved, back = [], []
    cupy_backend = get_backend("cupy")
    monkeypatch.setattr(type(cupy_backend), "why_not", lambda self: None)
    monkeypatch.setattr(type(cupy_backend), "to_device",
                        lambda self, a: moved.append(a.shape) or a.copy())
    monkeypatch.setattr(type(cupy_backend), "from_device",
                        lambda self, a: back.append(a.shape) or a)
    monkeypatch.setattr(dispatch, "get_impl", lambda k, b: reference.sddmm)
    Q = np.ones((3, 2))
    out = hl.sddmm(A3, Q, Q, device="cupy")
    assert moved == [(4,), (3,), (3,), (3, 2), (3, 2)]
    assert back == [(4,), (3,), (3,)]
    np.testing.assert_array_equal(out.toarray(), 2 * np.eye(3))


@pytest.mark.parametrize("kernel", ["spmv", "spmm", "sddmm"])
def test_bench_units_verify_on_numba(kernel):
    from hetlab.bench import measure_unit

    unit = measure_unit(kernel, "numba", 300, repeats=2)
    assert unit.status == "ok" and unit.verified, unit.status
    assert unit.error <= 1e-6  # generated cases are float32: a few ulps from reordered sums


@pytest.mark.parametrize("kernel", ["spmv", "spmm", "sddmm"])
def test_cost_models_count_the_compulsory_bytes(kernel):
    from hetlab.bench import case_for
    from hetlab.core.registry import get_kernel

    spec = get_kernel(kernel)
    args, _ = case_for(kernel, 100, 0)
    cost = spec.cost(args)
    M = args.get("A", args.get("S"))
    assert cost.bytes > M.nbytes and cost.flops >= 2 * M.nnz


def test_public_calls_split_large_matrices_across_threads():
    """Above SERIAL_STEPS the public numba path runs one part per thread."""
    from hetlab.kernels.sparse import numba as nb

    rng = np.random.default_rng(9)
    A = sparse.make_matrix(20_000, rng, kind="powerlaw", nnz_per_row=16)
    assert A.shape[0] + A.nnz >= nb.SERIAL_STEPS
    assert nb.default_parts(A) == __import__("numba").get_num_threads()
    x = rng.random(A.shape[1])
    _close(hl.spmv(A, x, device="numba"), reference.spmv(A, x), np.float64)
    X = rng.random((A.shape[1], 4))
    _close(hl.spmm(A, X, device="numba"), reference.spmm(A, X), np.float64)
    Q, K = rng.random((A.shape[0], 3)), rng.random((A.shape[1], 3))
    _close(hl.sddmm(A, Q, K, device="numba"), reference.sddmm(A, Q, K), np.float64)
