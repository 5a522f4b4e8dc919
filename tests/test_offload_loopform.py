"""The numba form of block statements (hetlab.offload.analysis.loopform): axis reductions and
broadcasting maps as loops in storage order, bit-identical to the loops as written; the NumPy
form kept where the loop form does not apply (contractions, same-shape maps, integer or offset
temporaries); aliased arguments still refused or run serially."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.analysis.parhelp import readable
from hetlab.offload.runtime.measure import copy_args, outputs_of

from . import _offload_loopform_cases as K

R = np.random.default_rng(5)


def _run(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


def _block(fn):
    (b,) = offload.analyze(fn).blocks
    return b


def _loop_lines(text):
    """The loop headers of a block, its parallel helpers' included (hetlab...parhelp)."""
    return [ln.strip() for ln in readable(text).splitlines() if ln.lstrip().startswith("for ")]


CHUNK = "for _hlc in _hl_numba.prange(_hlt):"


def test_column_reductions_run_rows_outer_columns_inner():
    b = _block(K.zscore)
    assert "axis=" in b.call and "for " not in b.call  # the NumPy form (CuPy) unchanged
    loops = _loop_lines(b.numba_call)
    # the two column sums: per-thread column chunks, rows outer; the map: prange over rows
    # unsigned indices (the chunk's start is a variable: .transforms.unsigned)
    cols = ("for j in range(_hl_u64(0 + _hlc * _hlw), _hl_u64(max(0 + _hlc * _hlw, "
            "min(0 + (_hlc + 1) * _hlw, cols)))):")
    assert loops == [CHUNK, "for i in range(0, rows):", cols] * 2 + [
        "for i in _hl_numba.prange(0, rows):", "for j in range(0, cols):"]
    assert "axis=" not in b.numba_call and "np.zeros(cols)" in b.numba_call
    assert "np.copy(" not in b.numba_call  # `_hb1 / rows` is fresh already


def test_rows_outer_reduction_keeps_its_order_and_the_plus_form():
    b = _block(K.row_sq_sums)
    assert _loop_lines(b.numba_call) == ["for i in _hl_numba.prange(0, X.shape[0]):",
                                         "for j in range(0, X.shape[1]):"]
    assert "out[:X.shape[0]] = 0.0" in b.numba_call
    b = _block(K.col_rms)
    assert "_hb0[j] = _hb0[j] + X[i, j] ** 2" in b.numba_call
    assert _loop_lines(b.numba_call) == [
        CHUNK, "for i in range(0, n):",
        "for j in range(_hl_u64(0 + _hlc * _hlw), _hl_u64(max(0 + _hlc * _hlw, "
        "min(0 + (_hlc + 1) * _hlw, X.shape[1])))):"]


@pytest.mark.parametrize("fn, make", [
    (K.zscore, lambda: (R.random((37, 23)), np.zeros((37, 23)))),
    (K.col_rms, lambda: (R.random((41, 9)), np.zeros(9))),
    (K.row_sq_sums, lambda: (R.random((13, 29)), np.full(13, 7.0))),
    (K.zscore, lambda: (R.random((2, 4)), np.zeros((2, 4)))),
    (K.row_sq_sums, lambda: (R.random((3, 0)), np.full(3, 7.0))),
], ids=["zscore", "rms", "row_sums", "two_rows", "no_cols"])
def test_numba_form_is_bit_identical_to_the_loops(fn, make):
    report = offload.analyze(fn)
    assert any(b.numba_call for b in report.blocks)
    v = offload.transform(report, blocks=[b.id for b in report.blocks])
    args = make()
    got, want = _run(v.compile(), args), _run(fn, args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)  # same summation order: exact


@pytest.mark.parametrize("fn", [K.transpose, K.col_sums_int, K.col_sums_offset],
                         ids=["same_shape_map", "int_temp", "offset_temp"])
def test_numpy_form_kept(fn):
    b = _block(fn)
    assert b.numba_call == ""


def test_contraction_stays_a_blas_call():
    # its numba form differs only by the uncopied whole operands and the fused pass over the
    # output (analysis/nocopy.py, analysis/epilogue.py; tests/test_offload_blocks_epilogue.py)
    b = _block(K.product)
    assert "@" in b.numba_call and "prange" not in b.numba_call and "_hlp_" not in b.numba_call


def test_numpy_form_kept_variants_still_match():
    v = offload.transform(K.col_sums_int, blocks=["B1"])
    args = (R.integers(0, 9, (11, 5)), np.zeros(5, dtype=np.int64))
    np.testing.assert_array_equal(_run(v.compile(), args)[2], _run(K.col_sums_int, args)[2])


def test_aliased_output_is_refused_or_runs_serially():
    v = offload.transform(K.zscore, blocks=["B1"])
    X = R.random((9, 6))
    with pytest.raises(InvalidInputError):
        v.compile()(X, X)
    want = X.copy()
    K.zscore(want, want)
    got = X.copy()
    v.compile(on_alias="serial")(got, got)
    np.testing.assert_array_equal(got, want)


def test_slices_up_to_a_size_name_need_no_max():
    b = _block(K.col_sums_sized)
    # (the parallel helper's chunk width and unsigned bounds have max( of their own)
    assert "max(" not in b.call and "zeros(max(" not in b.numba_call
    assert ":max(" not in b.numba_call
    assert "out[:cols]" in b.call and "np.zeros(cols)" in b.numba_call


def test_names_unpacked_from_a_shape_are_sizes():
    assert "max(" not in _block(K.col_sums_unpacked).call


@pytest.mark.parametrize("fn", [K.col_sums_param, K.col_sums_reassigned,
                                K.col_sums_unpacked_tuple],
                         ids=["parameter", "reassigned", "unpacked_tuple"])
def test_a_name_that_may_be_negative_keeps_max(fn):
    b = _block(fn)
    assert "max(cols, 0)" in b.call and "max(cols, 0)" in b.numba_call


@pytest.mark.parametrize("fn, extra", [(K.col_sums_param, (-3,)), (K.col_sums_reassigned, (-2,)),
                                       (K.col_sums_param, (4,)), (K.col_sums_sized, ())],
                         ids=["negative_param", "negative_reassigned", "param", "sized"])
def test_sized_and_negative_bounds_match_the_loops(fn, extra):
    v = offload.transform(fn, blocks=["B1"])
    args = (R.random((6, 5)), np.full(5, 2.0), *extra)
    np.testing.assert_array_equal(_run(v.compile(), args)[2], _run(fn, args)[2])
