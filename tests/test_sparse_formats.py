"""Sparse formats: round trips through every format and scipy, policies, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import hetlab as hl
from hetlab import sparse
from hetlab.kernels.sparse.generate import KINDS


def _dense(n: int, rng: np.random.Generator, density: float = 0.3) -> np.ndarray:
    d = rng.random((n, n + 3))
    d[rng.random(d.shape) > density] = 0.0
    d[1 % n] = 0.0  # an empty row
    return d


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 37])
def test_generated_matrices_are_canonical_and_round_trip(kind, n, rng):
    A = sparse.make_matrix(n, rng, kind=kind, nnz_per_row=5)
    B = sparse.CSR(A.indptr, A.indices, A.data, A.shape)  # full validation passes
    S = B.to_scipy()
    assert S.has_canonical_format
    np.testing.assert_array_equal(S.toarray(), A.toarray())
    back = sparse.csr(S)
    np.testing.assert_array_equal(back.indices, A.indices)
    np.testing.assert_array_equal(back.data, A.data)


@pytest.mark.parametrize("n", [1, 5, 40])
def test_every_format_round_trips(n, rng):
    d = _dense(n, rng)
    A = sparse.csr(d)
    assert A.nnz == np.count_nonzero(d)
    np.testing.assert_array_equal(A.toarray(), d)
    np.testing.assert_array_equal(A.tocoo().toarray(), d)
    np.testing.assert_array_equal(A.tocoo().to_scipy().toarray(), d)
    for fmt in (sparse.ELL.from_csr(A), sparse.SELL.from_csr(A, C=2, sigma=4),
                sparse.SELL.from_csr(A, C=1, sigma=1)):
        np.testing.assert_array_equal(fmt.toarray(), d)
        np.testing.assert_array_equal(sparse.csr(fmt).toarray(), d)
        assert fmt.bytes_per_nonzero >= A.data.itemsize or A.nnz == 0
    if n % 5 == 0:
        b = sparse.BSR.from_csr(A, (5, 1))
        np.testing.assert_array_equal(b.toarray(), d)
        np.testing.assert_array_equal(b.to_scipy().toarray(), d)
        assert b.fill >= 1.0


def test_sell_sorts_rows_by_length_inside_windows():
    d = np.zeros((4, 4))
    d[0, 0] = 1
    d[1, :3] = 2
    d[3, :] = 3
    s = sparse.SELL.from_csr(d, C=2, sigma=4)
    assert s.perm.tolist() == [3, 1, 0, 2]
    assert s.slice_ptr.tolist() == [0, 8, 10]  # widths 4 and 1, two rows each
    assert s.fill == pytest.approx(10 / 8)
    np.testing.assert_array_equal(s.toarray(), d)


def test_index_dtype_is_chosen_by_size_and_can_be_forced():
    from hetlab.kernels.sparse._checks import choose_index_dtype

    assert choose_index_dtype(10, (5, 5)) == np.int32
    assert choose_index_dtype(2**31, (5, 5)) == np.int64
    assert choose_index_dtype(10, (5, 2**31)) == np.int64
    A = sparse.csr(np.eye(3), index_dtype=np.int64)
    assert A.indptr.dtype == A.indices.dtype == np.int64
    assert A.with_index_dtype(np.int32).index_dtype == np.int32
    # int64 input arrays are narrowed when they fit
    B = sparse.CSR(np.array([0, 1], np.int64), np.array([0], np.int64), [1.0], (1, 1))
    assert B.index_dtype == np.int32
    with pytest.raises(hl.InvalidInputError, match="int32 cannot hold"):
        choose_index_dtype(2**31, (5, 5), np.int32)


def test_bytes_per_nonzero():
    A = sparse.csr(np.eye(4))
    assert A.bytes_per_nonzero == (5 * 4 + 4 * 4 + 4 * 8) / 4
    assert np.isnan(sparse.csr(np.zeros((3, 3))).bytes_per_nonzero)


def test_duplicates_are_summed_or_refused():
    row, col, val = [0, 1, 0, 0], [2, 0, 2, 1], [1.0, 2.0, 3.0, 4.0]
    A = sparse.coo(row, col, val, (2, 3)).tocsr()
    np.testing.assert_array_equal(A.toarray(), [[0, 4, 4], [2, 0, 0]])
    assert A.indices.tolist() == [1, 2, 0]  # sorted within rows
    with pytest.raises(hl.InvalidInputError, match=r"\(0, 2\) more than once"):
        sparse.coo(row, col, val, (2, 3)).tocsr(duplicates="refuse")
    # a non-canonical scipy matrix takes the same policy
    S = sp.csr_array((np.array(val), (np.array(row), np.array(col))), shape=(2, 3))
    S = sp.csr_array((S.data, S.indices, S.indptr), shape=(2, 3))
    raw = sp.csr_array((np.array([1.0, 3.0]), np.array([2, 2]), np.array([0, 2, 2])), (2, 3))
    assert not raw.has_canonical_format
    assert sparse.csr(raw).toarray()[0, 2] == 4.0
    with pytest.raises(hl.InvalidInputError, match="more than once"):
        sparse.csr(raw, duplicates="refuse")
    with pytest.raises(hl.InvalidInputError, match="duplicates must be one of"):
        sparse.csr(raw, duplicates="max")


def test_unsorted_scipy_input_is_sorted():
    S = sp.csr_array((np.array([1.0, 2.0]), np.array([2, 0]), np.array([0, 2])), shape=(1, 3))
    A = sparse.csr(S)
    assert A.indices.tolist() == [0, 2] and A.data.tolist() == [2.0, 1.0]


def test_other_scipy_formats_and_tuples_and_dense():
    S = sp.random(6, 7, density=0.4, random_state=1)
    for fmt in ("csc", "coo", "lil", "dok", "bsr"):
        np.testing.assert_array_equal(sparse.csr(S.asformat(fmt)).toarray(), S.toarray())
    A = sparse.csr(([1.0, 2.0], ([0, 2], [1, 0])))
    assert A.shape == (3, 2)
    assert sparse.csr(np.zeros((0, 0))).shape == (0, 0)
    assert sparse.csr(np.zeros((2, 3))).nnz == 0


BAD = [
    (lambda: sparse.CSR([0, 2, 1], [0, 1], [1.0, 2.0], (2, 2)), "end at nnz = len"),
    (lambda: sparse.CSR([0, 2, 1, 2], [0, 1], [1.0, 2.0], (3, 2)), "non-decreasing"),
    (lambda: sparse.CSR([1, 2], [0], [1.0], (1, 2)), "indptr must start at 0"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (2, 2)), "indptr must have n_rows"),
    (lambda: sparse.CSR([0, 2], [1, 0], [1.0, 2.0], (1, 2)), "sorted within each row"),
    (lambda: sparse.CSR([0, 2], [1, 1], [1.0, 2.0], (1, 2)), "must not repeat within a row"),
    (lambda: sparse.CSR([0, 1], [2], [1.0], (1, 2)), r"indices must be in \[0, 2\); got 2"),
    (lambda: sparse.CSR([0, 1], [-1], [1.0], (1, 2)), r"indices must be in \[0, 2\); got -1"),
    (lambda: sparse.CSR([0, 1], [0], [1.0, 2.0], (1, 2)), "one value per stored entry"),
    (lambda: sparse.CSR([0, 1], [0], [np.nan], (1, 2)), "data must be finite"),
    (lambda: sparse.CSR([0, 1], [0], [np.inf], (1, 2)), "data must be finite"),
    (lambda: sparse.CSR([0, 1], [0], [1j], (1, 2)), "data must hold real numbers"),
    (lambda: sparse.CSR([0, 1], [0.5], [1.0], (1, 2)), "indices must hold integers"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1, -2)), "shape must be a pair"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1,)), "shape must be a pair"),
    (lambda: sparse.coo([0, 1], [0], [1.0, 2.0], (2, 2)), "same length"),
    (lambda: sparse.coo([0, 2], [0, 0], [1.0, 2.0], (2, 2)), r"row must be in \[0, 2\)"),
    (lambda: sparse.coo([0], [5], [1.0], (2, 2)), r"col must be in \[0, 2\)"),
    (lambda: sparse.coo([0], [0], [np.nan], (2, 2)), "data must be finite"),
    (lambda: sparse.csr(np.zeros(3)), "must be 2-D"),
    (lambda: sparse.csr("A"), "A must be a hetlab sparse matrix"),
    (lambda: sparse.csr(np.eye(2), index_dtype=np.int16), "index_dtype must be int32 or int64"),
    (lambda: sparse.BSR.from_csr(np.eye(3), (2, 2)), "blocksize must divide"),
    (lambda: sparse.SELL.from_csr(np.eye(8), C=4, sigma=6), "sigma must be 1 or a multiple"),
    (lambda: sparse.make_matrix(5, np.random.default_rng(), kind="x"), "kind must be one of"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m[:30] for _, m in BAD])
def test_bad_input_is_refused_with_a_clear_message(call, message):
    with pytest.raises(hl.InvalidInputError, match=message):
        call()


def test_map_arrays_moves_every_array():
    A = sparse.csr(np.eye(3))
    seen = []
    B = A.map_arrays(lambda a: seen.append(a.shape) or a.copy())
    assert seen == [(4,), (3,), (3,)] and B.shape == A.shape and B.data is not A.data


def test_docstring_examples_run():
    import doctest
    import importlib

    for name in ("hetlab.sparse", "hetlab.kernels.sparse.formats",
                 "hetlab.kernels.sparse.convert"):
        mod = importlib.import_module(name)
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0, mod.__name__
