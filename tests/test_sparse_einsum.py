"""sparse.einsum equals numpy.einsum on densified inputs, for every supported expression and
every sparse/dense operand combination; plans, caching and refusals."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import sparse

# the module (hetlab.sparse.einsum the attribute is the function)
einsum_mod = importlib.import_module("hetlab.kernels.sparse.einsum")
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rand(shape, rng, density):
    d = rng.integers(-3, 4, shape).astype(float)
    d[rng.random(shape) > density] = 0.0
    return d


def _as(kind, d):
    if kind == "D":
        return d
    return sparse.csr(d) if d.ndim == 2 else sparse.CSF.from_dense(d)


def _dense(r):
    return r.toarray() if hasattr(r, "toarray") else np.asarray(r)


# (expression, shapes from sizes i, j, k, operand kinds allowed)
CASES = [
    ("ij,j->i", lambda i, j, k: [(i, j), (j,)], ["SD"]),
    ("ik,kj->ij", lambda i, j, k: [(i, k), (k, j)], ["SD", "DS", "SS"]),
    ("ij,ij->ij", lambda i, j, k: [(i, j), (i, j)], ["SD", "DS", "SS"]),
    ("ij,ij->", lambda i, j, k: [(i, j), (i, j)], ["SD", "DS", "SS"]),
    ("ijk,k->ij", lambda i, j, k: [(i, j, k), (k,)], ["SD"]),
]
def _operands(shapes, kinds, density, seed):
    """(dense arrays, operands): "S" kinds as sparse formats at ``density``, "D" dense."""
    rng = np.random.default_rng(seed)
    dense = [_rand(s, rng, density if kind == "S" else 1.0)
             for s, kind in zip(shapes, kinds, strict=True)]
    return dense, [_as(kind, d) for kind, d in zip(kinds, dense, strict=True)]


PARAMS = [pytest.param(e, s, kinds, id=f"{e}-{kinds}") for e, s, ks in CASES for kinds in ks]


@pytest.mark.parametrize("expr,shapes,kinds", PARAMS)
@FAST
@given(i=st.integers(1, 9), j=st.integers(1, 9), k=st.integers(1, 9),
       density=st.sampled_from([0.0, 0.2, 0.6, 1.0]), seed=st.integers(0, 2**16))
def test_equals_numpy_einsum_on_dense(expr, shapes, kinds, i, j, k, density, seed):
    dense, ops = _operands(shapes(i, j, k), kinds, density, seed)
    got = sparse.einsum(expr, *ops)
    np.testing.assert_array_equal(_dense(got), np.einsum(expr, *dense))
    plan = einsum_mod.plan(expr, tuple(isinstance(o, (sparse.CSR, sparse.CSF)) for o in ops),
                           tuple(len(o.shape) for o in ops))
    if plan.mode in ("aligned", "append", "workspace"):
        assert isinstance(got, sparse.CSR)
        sparse.CSR(got.indptr, got.indices, got.data, got.shape)  # canonical


def test_sparse_outputs_have_the_planned_patterns(rng):
    A = sparse.csr(_rand((6, 7), rng, 0.4))
    B = sparse.csr(_rand((6, 7), rng, 0.4))
    both = sparse.einsum("ij,ij->ij", A, B)
    da, db = A.toarray() != 0, B.toarray() != 0
    np.testing.assert_array_equal(both.toarray() != 0, da & db)  # the join
    sampled = sparse.einsum("ij,ij->ij", A, np.ones((6, 7)))
    assert sampled.indices is A.indices  # aligned with A's tree
    C = sparse.csr(_rand((7, 5), rng, 0.4))
    prod = sparse.einsum("ik,kj->ij", A, C)
    union = (da.astype(int) @ (C.toarray() != 0).astype(int)) > 0
    np.testing.assert_array_equal(np.isin(np.arange(5), prod.indices), union.any(axis=0))
    assert prod.nnz == union.sum()  # the merge keeps every touched column (zeros included)


def test_larger_gustavson_and_scipy_operands(rng):
    A = sparse.make_matrix(300, rng, kind="powerlaw", nnz_per_row=5)
    B = sparse.make_matrix(300, rng, kind="uniform", nnz_per_row=5).to_scipy()
    got = sparse.einsum("ik,kj->ij", A, B)
    np.testing.assert_allclose(got.toarray(), (A.to_scipy() @ B).toarray(), rtol=1e-12,
                               atol=1e-12)


def test_float32_stays_float32():
    A = sparse.csr(np.eye(3, dtype=np.float32))
    assert sparse.einsum("ij,j->i", A, np.ones(3, np.float32)).dtype == np.float32
    assert sparse.einsum("ij,j->i", A, np.ones(3)).dtype == np.float64


def test_renamed_indices_share_one_compiled_kernel():
    A = sparse.csr(np.eye(4))
    sparse.einsum("ij,j->i", A, np.ones(4))
    n = len(einsum_mod._CACHE)
    np.testing.assert_array_equal(sparse.einsum("ab,b->a", A, np.arange(4.0)), np.arange(4.0))
    assert len(einsum_mod._CACHE) == n


def test_explain_and_source_name_joins_and_merges(rng):
    A = sparse.csr(_rand((4, 4), rng, 0.5))
    text = sparse.explain("ij,ij->ij", A, A)
    assert "JOIN (intersection)" in text and "append" in text
    assert "MERGE (union)" in sparse.explain("ik,kj->ij", A, A)
    src = einsum_mod.generated_source("ik,kj->ij", A, A)
    assert src.startswith("def kernel(") and "mark[x_k]" in src


A4 = sparse.csr(np.eye(4))
BAD = [
    (lambda: sparse.einsum("ij,jk->ki", A4, np.ones((4, 2))), "is not supported; supported"),
    (lambda: sparse.einsum("ii,i->i", A4, np.ones(4)), "subscripts must be"),
    (lambda: sparse.einsum("ij,j", A4, np.ones(4)), "explicit output"),
    (lambda: sparse.einsum("ij,j->i", A4, np.ones(5)), "index 'j' has size 4"),
    (lambda: sparse.einsum("ij,j->i", A4, np.ones((4, 1))), "B has 2 dimension"),
    (lambda: sparse.einsum("ij,j->i", A4, [1, np.nan, 1, 1]), "B must be finite"),
    (lambda: sparse.einsum("ij,j->i", np.eye(4), np.ones(4)), "at least one operand"),
    (lambda: sparse.einsum("ij,j->i", A4, sparse.csr(np.ones((1, 4)))), "B has 2 dimension"),
    (lambda: sparse.einsum("ji,j->i", A4, np.ones(4)), "is not supported"),
    (lambda: sparse.einsum("ik,kj->ij", np.ones((2, 4)), sparse.CSF.from_dense(
        np.ones((4, 2, 2)))), "B has 3 dimension"),
    (lambda: sparse.CSF.from_coords([[0, 0, 5]], [1.0], (2, 2, 2)), r"coords\[:, 2\]"),
    (lambda: sparse.CSF.from_coords([[0, 0, 1], [0, 0, 1]], [1.0, 1.0], (2, 2, 2),
                                    duplicates="refuse"), "more than once"),
    (lambda: sparse.CSF.from_coords([[0, 0, 1]], [np.inf], (2, 2, 2)), "finite"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m[:30] for _, m in BAD])
def test_bad_input(call, message):
    with pytest.raises(hl.InvalidInputError, match=message):
        call()


def test_csf_round_trip_and_duplicates(rng):
    d = _rand((3, 4, 5), rng, 0.3)
    T = sparse.CSF.from_dense(d)
    np.testing.assert_array_equal(T.toarray(), d)
    S = sparse.CSF.from_coords([[1, 2, 3], [1, 2, 3], [0, 0, 0]], [1.0, 2.0, 4.0], (2, 3, 4))
    assert S.nnz == 2 and S.toarray()[1, 2, 3] == 3.0 and S.ptr1.tolist() == [0, 1, 2]


# --- row-parallel kernels (prange over output rows) ---------------------------------------

ROW_PARALLEL = {"ij,j->i-SD", "ik,kj->ij-SD", "ik,kj->ij-SS", "ij,ij->ij-SD", "ij,ij->ij-DS",
                "ij,ij->ij-SS", "ij,ij->-SD", "ij,ij->-DS", "ij,ij->-SS", "ijk,k->ij-SD"}


@pytest.mark.parametrize("expr,shapes,kinds", PARAMS)
def test_parallel_source_only_where_rows_are_disjoint(expr, shapes, kinds):
    dense = [np.ones(s) for s in shapes(3, 4, 5)]
    ops = [_as(kind, d) for kind, d in zip(kinds, dense, strict=True)]
    src = einsum_mod.generated_source(expr, *ops, parallel=True)
    assert ("prange(" in src) == (f"{expr}-{kinds}" in ROW_PARALLEL), src
    assert "prange(" not in einsum_mod.generated_source(expr, *ops)


@pytest.fixture
def always_parallel(monkeypatch):
    monkeypatch.setattr(einsum_mod, "PARALLEL_WORK", 0)


@pytest.mark.parametrize("expr,shapes,kinds", PARAMS)
@settings(max_examples=8, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(i=st.integers(1, 9), j=st.integers(1, 9), k=st.integers(1, 9),
       density=st.sampled_from([0.0, 0.3, 1.0]), seed=st.integers(0, 2**16))
def test_parallel_variants_equal_numpy_einsum(always_parallel, expr, shapes, kinds, i, j, k,
                                              density, seed):
    dense, ops = _operands(shapes(i, j, k), kinds, density, seed)
    got = sparse.einsum(expr, *ops)
    np.testing.assert_array_equal(_dense(got), np.einsum(expr, *dense))
    if isinstance(got, sparse.CSR):
        sparse.CSR(got.indptr, got.indices, got.data, got.shape)  # canonical, compacted


@pytest.mark.parametrize("kind", ["powerlaw", "mixed"])
def test_parallel_rows_on_skewed_matrices_equal_scipy(always_parallel, kind):
    """Skewed rows, empty rows and one huge row (``mixed``), every row-parallel expression:
    rows reserve their slots, per-thread workspaces, a parallel reduction."""
    import numba

    rng = np.random.default_rng(7)
    A = sparse.make_matrix(400, rng, kind=kind, nnz_per_row=6)
    B = sparse.make_matrix(400, rng, kind="uniform", nnz_per_row=6)
    SA, SB = A.to_scipy(), B.to_scipy()
    D, x = rng.random((400, 5)), rng.random(400)
    close = dict(rtol=1e-12, atol=1e-12)
    gus = sparse.einsum("ik,kj->ij", A, B)
    np.testing.assert_allclose(gus.toarray(), (SA @ SB).toarray(), **close)
    sparse.CSR(gus.indptr, gus.indices, gus.data, gus.shape)
    np.testing.assert_allclose(sparse.einsum("ij,j->i", A, x), SA @ x, **close)
    np.testing.assert_allclose(sparse.einsum("ik,kj->ij", A, D), SA @ D, **close)
    join = sparse.einsum("ij,ij->ij", A, B)
    np.testing.assert_allclose(join.toarray(), SA.multiply(SB).toarray(), **close)
    pa, pb = SA.copy(), SB.copy()
    pa.data[:], pb.data[:] = 1.0, 1.0
    assert join.nnz == pa.multiply(pb).nnz  # the intersection of the patterns
    np.testing.assert_allclose(sparse.einsum("ij,ij->", A, B), SA.multiply(SB).sum(), **close)
    T = sparse.CSF.from_dense(_rand((40, 30, 20), rng, 0.2))
    v = rng.random(20)
    np.testing.assert_allclose(sparse.einsum("ijk,k->ij", T, v).toarray(),
                               np.einsum("ijk,k->ij", T.toarray(), v), **close)
    if numba.get_num_threads() > 1:
        assert any(key[3] for key in einsum_mod._CACHE if key[0] == "ij,jk->ik")
