"""A matmul/matvec block assigned to its whole output is written by BLAS into the output
(hetlab/offload/analysis/dotinto.py, hetlab/offload/runtime/dotinto.py): emitted only for
plain assignments in the product's own index order, and exact whatever the arguments' layout,
dtype, extents or overlap (the run-time helper falls back to ``out[...] = a @ b``)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.runtime.dotinto import dot_into
from hetlab.offload.runtime.measure import copy_args, outputs_of


# -- kernels -----------------------------------------------------------------------------------
def gemm_copy(C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] = 0.0
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def gemm_sized(C, A, B, ni, nj, nk):
    for i in range(ni):
        for j in range(nj):
            C[i, j] = 0.0
            for k in range(nk):
                C[i, j] += A[i, k] * B[k, j]


def gemv_assign(y, A, x):
    for i in range(A.shape[0]):
        y[i] = 0.0
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]


def gemm_transposed_out(C, A, B):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[j, i] = 0.0
            for k in range(A.shape[1]):
                C[j, i] += A[i, k] * B[k, j]


def gemm_scaled(alpha, C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s


def gemm_update(C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def chain(E, A, B, G, D):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            E[i, j] = 0.0
            for k in range(A.shape[1]):
                E[i, j] += A[i, k] * B[k, j]
    for i in range(A.shape[0]):
        for j in range(D.shape[1]):
            G[i, j] = 0.0
            for k in range(B.shape[1]):
                G[i, j] += E[i, k] * D[k, j]


def gemm_acc(C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s


def gemv_acc_sized(y, A, x, n, m):
    for i in range(n):
        s = 0.0
        for j in range(m):
            s = s + A[i, j] * x[j]
        y[i] = s


def gemm_acc_read_twice(C, D, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s
            D[i, j] = s


def gemm_acc_live_after(C, A, B):
    s = 0.0
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = s
    return s


def _r(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed + 7 * sum(shape)).random(shape).astype(dtype)


def _code(fn):
    (b,) = offload.analyze(fn).blocks
    return b.numba_call


def _check(fn, args, blocks=("B1",)):
    variant = offload.transform(fn, blocks=list(blocks)).compile()
    got, want = copy_args(args), copy_args(args)
    got, want = outputs_of(variant(*got), got), outputs_of(fn(*want), want)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-12)
    return variant


# -- emission ------------------------------------------------------------------------------------
def test_a_product_assigned_to_its_whole_output_is_written_into_it():
    code = _code(gemm_copy)
    assert "_hl_dot_into(A[:C.shape[0]], B[:A.shape[1]], C)" in code
    assert " = " not in code.split(" if ")[0]  # no temporary, no copy back
    code = _code(gemv_assign)
    assert code.startswith("if A.shape[0] == y.shape[0]:\n    _hl_dot_into(A, x[:A.shape[1]], y)")


def test_sizes_from_arguments_check_the_output_is_whole_at_run_time():
    code = _code(gemm_sized)
    first, rest = code.split("\n", 1)
    assert first == "if ni == C.shape[0] and nj == C.shape[1]:"
    assert "_hl_dot_into(" in rest.split("else:")[0] and "C[:max(ni, 0), :max(nj, 0)] = " in rest


@pytest.mark.parametrize("fn", [gemm_transposed_out, gemm_scaled, gemm_update])
def test_transposed_scaled_or_updated_outputs_keep_the_plain_form(fn):
    assert "_hl_dot_into" not in _code(fn)


def test_the_numpy_form_is_unchanged():
    (b,) = offload.analyze(gemm_copy).blocks
    assert "_hl_dot_into" not in b.call


def test_the_variant_imports_the_helper_and_says_so():
    src = offload.transform(chain, blocks=["B1", "B2"]).source
    assert "from hetlab.offload.runtime.dotinto import dot_into as _hl_dot_into" in src
    assert src.count("_hl_dot_into(") >= 2


def test_a_scalar_accumulator_stored_once_is_written_into_the_output():
    code = _code(gemm_acc)
    assert code.startswith("(_hl_dot_into(A[:C.shape[0]], B[:A.shape[1]], C)")
    assert "_hbt" not in code and "_hb0" not in code  # no temporary left
    code = _code(gemv_acc_sized)
    assert code.startswith("if n == y.shape[0]:\n") and "_hl_dot_into(" in code
    assert "y[:max(n, 0)] = (" in code.split("else:")[1]  # the product itself, no temporary


def test_an_accumulator_read_twice_keeps_its_temporary():
    code = _code(gemm_acc_read_twice)
    assert "_hl_dot_into" not in code and code.count("_hb0") == 3
    _check(gemm_acc_read_twice, (_r(5, 4), _r(5, 4), _r(5, 3), _r(3, 4)))


def test_an_accumulator_live_after_the_nest_is_no_block():
    assert offload.analyze(gemm_acc_live_after).blocks == []


# -- results ---------------------------------------------------------------------------------
def test_whole_and_partial_extents():
    C, A, B = _r(7, 9), _r(7, 11), _r(11, 9)
    _check(gemm_sized, (C, A, B, 7, 9, 11))  # whole: BLAS writes C
    _check(gemm_sized, (C, A, B, 5, 9, 11))  # fewer rows: the plain assignment
    _check(gemm_sized, (C, A, B, 7, 6, 4))
    _check(gemm_sized, (C, A, B, -2, 9, 11))  # no iteration at all
    _check(gemm_copy, (_r(6, 5), _r(6, 4), _r(4, 5)))
    _check(gemv_assign, (_r(6), _r(6, 4), _r(4)))
    _check(gemm_acc, (_r(6, 5), _r(6, 4), _r(4, 5)))
    _check(gemm_acc, (np.asfortranarray(_r(6, 5)), _r(6, 4), _r(4, 5)))
    y, A, x = _r(6), _r(6, 4), _r(4)
    for n, m in ((6, 4), (5, 4), (6, 3), (0, 4), (-1, 2)):
        _check(gemv_acc_sized, (y, A, x, n, m))


@pytest.mark.parametrize("layout", ["fortran", "strided", "float32_out", "float32_all",
                                    "empty_k", "empty_rows"])
def test_layouts_dtypes_and_empty_axes(layout):
    C, A, B = _r(6, 5), _r(6, 4), _r(4, 5)
    if layout == "fortran":
        C = np.asfortranarray(C)
    elif layout == "strided":
        C = _r(6, 10)[:, ::2]
    elif layout == "float32_out":  # the product is float64: cast on assignment
        C = C.astype(np.float32)
    elif layout == "float32_all":
        C, A, B = (x.astype(np.float32) for x in (C, A, B))
    elif layout == "empty_k":  # no k: C is zeroed
        A, B = _r(6, 0), _r(0, 5)
    elif layout == "empty_rows":
        C, A = _r(0, 5), _r(0, 4)
    _check(gemm_copy, (C, A, B))


def test_chained_products_read_the_output_they_wrote():
    args = (np.zeros((5, 6)), _r(5, 4), _r(4, 6), np.zeros((5, 3)), _r(6, 3))
    _check(chain, args, blocks=("B1", "B2"))


def test_an_output_sharing_memory_with_an_operand_is_refused_by_the_guard():
    variant = offload.transform(gemm_copy, blocks=["B1"]).compile()
    X = _r(5, 5)
    with pytest.raises(hl.InvalidInputError):
        variant(X, X, _r(5, 5))


# -- the run-time helper on its own ------------------------------------------------------------
@numba.njit
def _into(a, b, out):
    return dot_into(a, b, out)


@pytest.mark.parametrize("case", ["mm", "mv", "vm", "overlap_a", "overlap_b", "view_overlap",
                                  "f_out", "strided_out", "mixed_dtype", "complex"])
def test_dot_into_is_the_plain_assignment_for_every_argument_kind(case):
    a, b, out = _r(5, 4), _r(4, 3), np.zeros((5, 3))
    if case == "mv":
        b, out = _r(4), np.zeros(5)
    elif case == "vm":
        a, out = _r(5), np.zeros(3)
        b = _r(5, 3)
    elif case == "overlap_a":  # out is a: BLAS would read what it writes
        a = _r(4, 4)
        b, out = _r(4, 4), a
    elif case == "overlap_b":
        b = _r(4, 4)
        a, out = _r(4, 4), b
    elif case == "view_overlap":  # out a view inside a's memory
        big = _r(8, 4)
        a, b, out = big[:4], _r(4, 4), big[4:]
        a_copy = a.copy()
        want = a_copy @ b
        _into(a, b, out)
        np.testing.assert_allclose(out, want)
        return
    elif case == "f_out":
        out = np.zeros((5, 3), order="F")
    elif case == "strided_out":
        out = np.zeros((5, 6))[:, ::2]
    elif case == "mixed_dtype":
        out = np.zeros((5, 3), np.float32)
    elif case == "complex":
        a, b, out = a + 1j * _r(5, 4, seed=1), b.astype(np.complex128), out.astype(np.complex128)
    want = (a.copy() @ b.copy()).astype(out.dtype)
    got = _into(a, b, out)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert got is out or np.shares_memory(got, out)
    dot_into(a.copy(), b.copy(), np.empty_like(out))  # the pure Python form runs too
