"""Function blocks' numba form: no operand copies where the slice is the whole array at run
time (hetlab/offload/analysis/nocopy.py), one fused pass over a product's output
(hetlab/offload/analysis/epilogue.py). Emitted text checked, every variant run against the
loops it replaces (whole and partial extents, strided and Fortran-ordered arguments, NaN/inf)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

from .offload_corpus.heldout_probe import atax_scalar


# -- kernels as scientists write them ------------------------------------------------------
def gemm_beta_first(alpha, beta, C, A, B):
    ni = C.shape[0]
    nj = C.shape[1]
    nk = A.shape[1]
    for i in range(ni):
        for j in range(nj):
            C[i, j] *= beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] += alpha * A[i, k] * B[k, j]


def gemm_sized(alpha, beta, C, A, B, ni, nj, nk):
    for i in range(0, ni):
        for j in range(0, nj):
            acc = 0.0
            for k in range(0, nk):
                acc = acc + alpha * A[i, k] * B[k, j]
            C[i, j] = beta * C[i, j] + acc


def gemm_at_b(C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[0]):
                C[i, j] += A[k, i] * B[k, j]


def gemv_scaled(beta, y, A, x):
    for i in range(A.shape[0]):
        y[i] /= beta
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]


def gemm_scaled_by_assignment(beta, C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = C[i, j] * beta
            for k in range(A.shape[1]):
                C[i, j] = C[i, j] - A[i, k] * B[k, j]


def gemm_offset(C, A, B):
    for i in range(1, C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(1, A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def gemm_copy(C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = 0.0
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def scale_read_before_update(beta, C, D, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] *= beta
            D[i, j] = C[i, j]
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def temp_read_twice(C, D, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = 2.0 * C[i, j] + acc
            D[i, j] = acc


def mm_local_view_of_output(A, B):
    C = A[:, :]  # the output is a view of an operand
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def _r(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).random(shape)


def _block(fn):
    (b,) = offload.analyze(fn).blocks
    return b


def _check(fn, args, exact=False):
    variant = offload.transform(fn, blocks=["B1"]).compile()
    got, want = copy_args(args), copy_args(args)
    got, want = outputs_of(variant(*got), got), outputs_of(fn(*want), want)
    for g, w in zip(got, want, strict=True):
        if not isinstance(w, np.ndarray) or w.dtype.kind != "f":
            continue
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
    if exact:
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    else:
        ok, err = verify(got, want)
        assert ok, err
    return variant


# -- rule 1: no operand copies for whole arrays -------------------------------------------------
def test_whole_operands_are_passed_uncopied_partial_ones_copied():
    code = _block(gemm_beta_first).numba_call
    # each operand checked on its own: a block of whole rows is passed as it is
    assert "(A[:ni] @ B[:nk]) if nj == B.shape[1] else " in code
    assert code.index("(A[:ni] @ B[:nk])") < code.index(" if nk == A.shape[1] else ")
    # the branch where both are partial copies both
    assert "(np.ascontiguousarray(A[:ni, :nk]) @ np.ascontiguousarray(B[:nk, :nj]))" in code
    # the NumPy (and CuPy) form keeps its copies: there they are free for contiguous arrays
    b = _block(gemm_beta_first)
    assert " if " not in b.call and "np.ascontiguousarray(A[:ni, :nk])" in b.call


def test_sizes_given_as_arguments_whole_and_partial():
    code = _block(gemm_sized).numba_call
    assert "(A[:max(ni, 0)] @ B[:max(nk, 0)]) if nj == B.shape[1]" in code
    C, A, B = _r(7, 9), _r(7, 11), _r(11, 9)
    _check(gemm_sized, (1.5, 0.5, C, A, B, 7, 9, 11))  # whole: the arrays themselves
    _check(gemm_sized, (1.5, 0.5, C, A, B, 5, 9, 11))  # fewer rows: still blocks of rows
    _check(gemm_sized, (1.5, 0.5, C, A, B, 5, 6, 4))  # partial columns: copies
    _check(gemm_sized, (1.5, 0.5, C, A, B, 7, 9, 10))  # A's columns short, B's rows a block
    _check(gemm_sized, (1.5, 0.5, C, A, B, 7, 8, 11))  # B's columns short: B copied
    _check(gemm_sized, (1.5, 0.5, C, A, B, -2, 9, 11))  # no iteration at all


def test_transposed_operand_and_non_contiguous_arguments():
    code = _block(gemm_at_b).numba_call
    assert "(A.T @ B[:A.shape[0]]) if C.shape[1] == B.shape[1]" in code
    C, A, B = _r(6, 5), _r(8, 6), _r(8, 5)
    _check(gemm_at_b, (C, A, B))
    _check(gemm_at_b, (C, np.asfortranarray(A), np.asfortranarray(B)))  # F-ordered
    _check(gemm_at_b, (C, _r(16, 6)[::2], _r(8, 10)[:, ::2]))  # strided views
    _check(gemm_at_b, (_r(4, 5), A, B))  # C narrower than A: A's columns copied


def test_slices_never_whole_keep_their_copies_without_a_check():
    code = _block(gemm_offset).numba_call
    # A's columns start at 1: never a block of rows (copied, no check); B's rows from 1 on
    # are a block of rows whenever its columns are whole
    assert code.count("np.ascontiguousarray(A[1:C.shape[0], 1:A.shape[1]])") == 2
    assert "A.shape[1] ==" not in code and "== A.shape" not in code
    assert "@ B[1:A.shape[1]]) if C.shape[1] == B.shape[1]" in code
    _check(gemm_offset, (_r(6, 5), _r(6, 4), _r(4, 5)))
    _check(gemm_offset, (_r(6, 5), _r(6, 4), _r(4, 7)))


def test_vectors_need_no_copy_and_no_check():
    code = _block(gemv_scaled).numba_call
    assert code.startswith("_hbt1 = (A @ x[:A.shape[1]])\n")


def test_an_output_that_views_an_operand_stays_a_loop_and_aliases_are_refused():
    assert offload.analyze(mm_local_view_of_output).blocks == []
    variant = offload.transform(gemm_at_b, blocks=["B1"]).compile()
    X = _r(5, 5)
    with pytest.raises(hl.InvalidInputError):
        variant(X, X, _r(5, 5))  # the output is the (whole, uncopied) operand


# -- rule 2: one pass over the output -----------------------------------------------------------
def test_scaling_and_update_become_one_pass():
    code = _block(gemm_beta_first).numba_call
    assert "*= beta" not in code and "alpha * (" not in code
    assert "C[i, j] = C[i, j] * beta + alpha * _hbt1[i, j]" in code
    assert code.count("for i in") == 1 and code.count("\n") == 3  # product, two loops, body
    _check(gemm_beta_first, (1.5, 1.2, _r(7, 9), _r(7, 11), _r(11, 9)))


def test_a_temporary_read_once_is_folded_into_the_pass():
    code = _block(gemm_sized).numba_call
    assert "C[i, j] = beta * C[i, j] + (alpha * _hbt1[i, j])" in code
    # the temporary is gone: one product in each of the four branches, then the pass
    assert not re.search(r"\b_hb0\b", code) and code.count("@") == 4


def test_divided_output_and_matvec_fused_with_offsets():
    code = _block(gemv_scaled).numba_call
    assert "y[i] = y[i] / beta + _hbt1[i]" in code and "/= beta" not in code
    _check(gemv_scaled, (3.0, _r(7), _r(7, 5), _r(5)))
    code = _block(gemm_scaled_by_assignment).numba_call
    assert "C[i, j] = beta * C[i, j] - _hbt1[i, j]" in code and code.count("for ") == 2
    _check(gemm_scaled_by_assignment, (0.5, _r(5, 6), _r(5, 4), _r(4, 6)))
    code = _block(gemm_offset).numba_call
    assert "C[i, j] += _hbt1[i - 1, j]" in code  # the product starts at row 1
    _check(gemm_offset, (_r(6, 5), _r(6, 4), _r(4, 5)))


def test_nothing_to_fuse_or_not_exact_keeps_the_numpy_statements():
    code = _block(gemm_copy).numba_call
    assert "for " not in code  # C = A @ B: a plain copy, no pass to fuse with
    code = _block(scale_read_before_update).numba_call
    assert "C[:, :] *= beta" in code  # the scaled output is read before the update: kept
    _check(scale_read_before_update, (0.5, _r(5, 6), _r(5, 6), _r(5, 4), _r(4, 6)))
    code = _block(temp_read_twice).numba_call
    assert re.search(r"^_hb0 = ", code, re.M)  # read by two statements: materialized
    _check(temp_read_twice, (_r(5, 6), _r(5, 6), _r(5, 4), _r(4, 6)))


def test_nan_and_inf_propagate_as_in_the_loops():
    C, A, B = _r(6, 7), _r(6, 5), _r(5, 7)
    C[1, 2] = np.nan  # beta = 0: NaN * 0 stays NaN in the loop, so in the pass
    C[3, 3] = np.inf
    A[4, 0] = np.inf  # inf * B + … in row 4; with B[0, 5] = 0, inf * 0 = NaN
    B[0, 5] = 0.0
    _check(gemm_beta_first, (1.5, 0.0, C, A, B))
    _check(gemm_sized, (1.5, 0.0, C, A, B, 6, 7, 5))
    _check(gemm_sized, (1.5, 0.0, C, A, B, 4, 7, 5))


# -- a product's temporary read by a later product keeps its assignment ----------------------
def scaled_temp_pass(A, x, y):
    for i in range(A.shape[0]):
        t = 0.0
        for j in range(A.shape[1]):
            t += A[i, j] * x[j]
        y[i] = 2.0 * t + y[i]


def test_a_temporary_read_inside_a_later_product_is_still_assigned():
    """y = Aᵀ(A x) with A x held in a scalar: the second product reads the temporary as a
    whole array, so its assignment must stay (it was dropped as if read elementwise, and the
    block failed to compile: a held-out probe)."""
    b = _block(atax_scalar)
    assert b.pattern == "matvec+matvec"
    temp = re.search(r"A\.T @ \((\w+)\)", b.numba_call) or re.search(r"A\.T @ (\w+)",
                                                                       b.numba_call)
    assert temp and re.search(rf"^{temp.group(1)} = ", b.numba_call, re.M), b.numba_call
    _check(atax_scalar, (_r(7, 5), _r(5), np.zeros(5)))
    _check(atax_scalar, (_r(7, 5, seed=1).T.copy(order="F").T, _r(5, seed=2),
                              np.zeros(5)))


def test_a_temporary_read_elementwise_by_the_pass_is_still_fused():
    """The other case: the pass reads the temporary's elements, so its assignment goes and
    the pass computes them (no temporary array for t)."""
    b = _block(scaled_temp_pass)
    assert "for i in range(" in b.numba_call and not re.search(r"^_hb0 = ", b.numba_call, re.M)
    _check(scaled_temp_pass, (_r(6, 4), _r(4), _r(6)))
