"""Fixes found by the fourth held-out probe (tests/offload_corpus/heldout_probe4.py), each with
positive and negative cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetlab import offload


# -- a subscript that may be negative does not hide another dimension's proof ---------------------
def _row_of_label(c, x, out):
    for t in range(x.shape[0]):
        out[c, t] += x[t]


def _label_rows(points, labels, centers):
    for i in range(points.shape[0]):
        c = labels[i]
        for t in range(points.shape[1]):
            centers[c, t] += points[i, t]


def _one_cell(c, x, out):  # every t writes out[c]: no dimension proves anything
    for t in range(x.shape[0]):
        out[c] = x[t]


def _shifted_in_row(c, x, out):  # out[c, t - 1]: t - 1 = -1 wraps onto out[c, n - 1]
    for t in range(x.shape[0]):
        out[c, t - 1] = x[t] + out[c, t]


def _scan_in_row(c, x, out):  # a true dependence along the proving dimension
    for t in range(1, x.shape[0]):
        out[c, t] = out[c, t - 1] + x[t]


def _both_unknown(c, d, x, out):
    for t in range(x.shape[0]):
        out[c, d] += x[t]


@pytest.mark.parametrize("fn", [_row_of_label, _label_rows])
def test_an_unknown_row_with_a_proving_column_is_parallel(fn):
    lp = offload.analyze(fn).loops[-1]
    assert lp.verdict == "parallel", lp.why


@pytest.mark.parametrize("fn", [_one_cell, _shifted_in_row, _scan_in_row, _both_unknown])
def test_no_proving_dimension_stays_sequential(fn):
    lp = offload.analyze(fn).loops[0]
    assert lp.verdict == "sequential" and "dependence" in lp.why, lp.why


def test_a_negative_row_gives_the_plain_result():
    """c = -1 wraps to the last row in Python and in the parallel variant alike."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(0)
    x, out = rng.random(50), rng.random((3, 50))
    want = out.copy()
    _row_of_label(-1, x, want)
    report = offload.analyze(_row_of_label)
    fast = offload.transform(report, ["L1"]).compile()
    fast(-1, x, out)
    np.testing.assert_allclose(out, want)
    # the shifted write wraps onto the row's end: run backwards it would differ
    a, b = rng.random((3, 50)), None
    b = a.copy()
    _shifted_in_row(1, x, a)
    for t in reversed(range(x.shape[0])):
        b[1, t - 1] = x[t] + b[1, t]
    assert not np.allclose(a, b)


# -- a mirrored Gram nest scaled by a pure call of invariant numbers -----------------------------
def _cov_float(X, cov):
    n, m = X.shape
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for i in range(n):
                s += X[i, a] * X[i, b]
            s /= float(n - 1)
            cov[a, b] = s
            cov[b, a] = s


def _cov_sqrt(X, cov):
    n, m = X.shape
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for i in range(n):
                s += X[i, a] * X[i, b]
            s = s / math.sqrt(n)
            cov[a, b] = s
            cov[b, a] = s


def _weight(n):
    return n - 1.0


def _cov_helper(X, cov):  # a helper call: not one of the plain numeric functions
    n, m = X.shape
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for i in range(n):
                s += X[i, a] * X[i, b]
            s /= _weight(n)
            cov[a, b] = s
            cov[b, a] = s


def _cov_element(X, w, cov):  # the scale reads an array element
    n, m = X.shape
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for i in range(n):
                s += X[i, a] * X[i, b]
            s /= w[0]
            cov[a, b] = s
            cov[b, a] = s


@pytest.mark.parametrize("fn", [_cov_float, _cov_sqrt])
def test_a_gram_nest_scaled_by_a_pure_call_is_one_product(fn):
    pytest.importorskip("numba")
    report = offload.analyze(fn)
    assert [b.pattern for b in report.blocks] == ["gram (mirrored)"]
    rng = np.random.default_rng(3)
    X = rng.random((9, 5))
    want, got = np.zeros((5, 5)), np.zeros((5, 5))
    fn(X, want)
    offload.transform(report, blocks=(report.blocks[0].id,)).compile()(X, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("fn", [_cov_helper, _cov_element])
def test_a_gram_nest_scaled_by_other_calls_or_elements_is_not(fn):
    assert "gram (mirrored)" not in [b.pattern for b in offload.analyze(fn).blocks]


# -- the reference symm: rows scattered into the rows above, as one symmetric product ----------
def _symm_ref(alpha, beta, C, A, B):
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


def _symm_respelled(alpha, beta, C, A, B):  # other orders of statements, factors and terms
    for i in range(0, C.shape[0]):
        for j in range(0, C.shape[1]):
            acc = 0.0
            for k in range(0, i):
                acc = acc + A[i, k] * B[k, j]
                C[k, j] = C[k, j] + A[i, k] * alpha * B[i, j]
            C[i, j] = alpha * acc + C[i, j] * beta + A[i, i] * B[i, j] * alpha


def _symm_unscaled(C, A, B):
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            t = 0.0
            for k in range(i):
                C[k, j] += B[i, j] * A[i, k]
                t += B[k, j] * A[i, k]
            C[i, j] = C[i, j] + B[i, j] * A[i, i] + t


def _symm_two_alphas(alpha, beta, C, A, B):  # the diagonal scaled differently: not S @ B
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + beta * B[i, j] * A[i, i] + alpha * temp2


def _symm_inclusive(alpha, beta, C, A, B):  # k up to i: the diagonal counted twice
    m, n = C.shape
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i + 1):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2


def _symm_live(alpha, beta, C, A, B):  # temp2 read after the nest
    m, n = C.shape
    temp2 = 0.0
    for i in range(m):
        for j in range(n):
            temp2 = 0.0
            for k in range(i):
                C[k, j] += alpha * B[i, j] * A[i, k]
                temp2 += B[k, j] * A[i, k]
            C[i, j] = beta * C[i, j] + alpha * B[i, j] * A[i, i] + alpha * temp2
    return temp2


def _symm_args(fn, g, m, n):
    scalars = () if fn is _symm_unscaled else (1.5, 1.2)
    return (*scalars, g.random((m, n)), g.random((m, m)), g.random((m, n)))


@pytest.mark.parametrize("fn", [_symm_ref, _symm_respelled, _symm_unscaled])
def test_the_reference_symm_is_one_symmetric_product(fn):
    pytest.importorskip("numba")
    report = offload.analyze(fn)
    assert [b.pattern for b in report.blocks] == ["symm (scattered rows)"]
    fast = offload.transform(report, blocks=("B1",)).compile()
    for m, n in ((0, 3), (1, 1), (2, 5), (7, 4)):
        want = _symm_args(fn, np.random.default_rng(m), m, n)
        got = _symm_args(fn, np.random.default_rng(m), m, n)
        fn(*want)
        fast(*got)
        np.testing.assert_allclose(got[-3], want[-3], rtol=1e-12)


@pytest.mark.parametrize("fn", [_symm_two_alphas, _symm_inclusive, _symm_live])
def test_other_scattered_nests_are_not_symm(fn):
    assert "symm (scattered rows)" not in [b.pattern for b in offload.analyze(fn).blocks]


def test_symm_refused_when_c_may_alias_an_operand():
    import ast
    import inspect

    from hetlab.offload.analysis.symm import match_symm

    tree = ast.parse(inspect.getsource(_symm_ref)).body[0].body[1]
    assert match_symm(tree) is not None
    assert match_symm(tree, may_alias=lambda x, y: {x, y} == {"C", "B"}) is None


# -- a mirrored Gram nest accumulated in the output array, then scaled there -------------------
def _cov_in_place(float_n, data, cov):
    m, n = data.shape[1], data.shape[0]
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= (float_n - 1.0)
            cov[j, i] = cov[i, j]


def _cov_in_place_by_element(float_n, data, cov):  # the scale reads the output
    m, n = data.shape[1], data.shape[0]
    for i in range(m):
        for j in range(i, m):
            cov[i, j] = 0.0
            for k in range(n):
                cov[i, j] += data[k, i] * data[k, j]
            cov[i, j] /= cov[0, 0] + float_n
            cov[j, i] = cov[i, j]


def test_a_gram_nest_scaled_in_its_output_is_one_product():
    pytest.importorskip("numba")
    report = offload.analyze(_cov_in_place)
    assert [b.pattern for b in report.blocks] == ["gram (mirrored)"]
    fast = offload.transform(report, blocks=("B1",)).compile()
    for n, m in ((1, 1), (4, 3), (9, 6)):
        data = np.random.default_rng(n).random((n, m))
        want, got = np.full((m, m), 7.0), np.full((m, m), 7.0)
        _cov_in_place(float(n) + 0.5, data, want)
        fast(float(n) + 0.5, data, got)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_gram_nest_scaled_by_its_own_output_is_not():
    assert not offload.analyze(_cov_in_place_by_element).blocks


def _stepped_rows(C, A, B):  # a stepped range: no symm, and no exception from the matcher
    for i in range(C.shape[0] - 1, -1, -1):
        for j in range(C.shape[1]):
            t = 0.0
            for k in range(i):
                C[k, j] += B[i, j] * A[i, k]
                t += B[k, j] * A[i, k]
            C[i, j] = C[i, j] + B[i, j] * A[i, i] + t


def test_a_stepped_range_is_no_symm_and_no_crash():
    assert not offload.analyze(_stepped_rows).blocks


# -- a scratch vector allocated per iteration inside a contraction nest -------------------------
def _doitgen_fresh(A, W):
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            s = np.zeros(npp)
            for p in range(npp):
                for t in range(npp):
                    s[p] += A[r, q, t] * W[t, p]
            for p in range(npp):
                A[r, q, p] = s[p]


def _doitgen_fresh_read_after(A, W):  # s read after the nest: its last value is needed
    nr, nq, npp = A.shape
    s = np.zeros(npp)
    for r in range(nr):
        for q in range(nq):
            s = np.zeros(npp)
            for p in range(npp):
                for t in range(npp):
                    s[p] += A[r, q, t] * W[t, p]
            for p in range(npp):
                A[r, q, p] = s[p]
    return s


def _doitgen_fresh_whole(A, W, out):  # s read whole inside the nest
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            s = np.zeros(npp)
            for p in range(npp):
                for t in range(npp):
                    s[p] += A[r, q, t] * W[t, p]
            out[r, q] = np.sum(s)


def test_a_fresh_scratch_vector_per_iteration_keeps_the_contraction():
    pytest.importorskip("numba")
    report = offload.analyze(_doitgen_fresh)
    assert [b.pattern for b in report.blocks] == ["contraction"]
    assert "s = np.zeros(" in report.blocks[0].call
    fast = offload.transform(report, blocks=("B1",)).compile()
    for n in (0, 1, 2, 5):
        g = np.random.default_rng(n)
        want = (g.random((n, n + 1, n + 2)), g.random((n + 2, n + 2)))
        got = (want[0].copy(), want[1].copy())
        _doitgen_fresh(*want)
        fast(*got)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)


@pytest.mark.parametrize("fn", [_doitgen_fresh_read_after, _doitgen_fresh_whole])
def test_a_scratch_vector_used_otherwise_is_no_block(fn):
    assert not offload.analyze(fn).blocks
