"""Triangular rows in panels (:mod:`hetlab.offload.analysis.panels`): the products of the rows
hoisted into one GEMM per panel, exact across panel boundaries (panels of 3 rows on 11-row
inputs, non-square operands), the untouched triangle bit-identical, in-place reads (rows below
not yet written, rows above already written) as the loop reads them, and the refusals kept."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.analysis import panels
from hetlab.offload.runtime.measure import verify

from . import _offload_triangular_cases as K
from .test_offload_contractions import _python_variant, _run
from .test_offload_triangular import _sentinel

R = np.random.default_rng(1717)
n, m, p = 11, 4, 6  # rows over several panels of 3; inner and column extents unlike n


def _m(*shape):
    return R.random(shape) + 0.1


LOWER = np.tril(np.ones((n, n), bool))
UPPER = np.triu(np.ones((n, n), bool))
STRICT = np.tril(np.ones((n, n), bool), -1)
CASES = {  # kernel: (arguments, (output position, mask of the written elements) or None)
    "syrk_lower": (lambda: (1.5, 0.5, _m(n, n), _m(n, m)), (2, LOWER)),
    "syr2k_upper": (lambda: (1.5, 0.5, _m(n, n), _m(n, m), _m(n, m)), (2, UPPER)),
    "strict_lower_product": (lambda: (_m(n, n), _m(n, m), _m(m, n)), (0, STRICT)),
    "symm_lower": (lambda: (1.5, 0.5, _m(n, p), _m(n, n), _m(n, p)), None),
    "trmm_inplace": (lambda: (1.5, _m(n, n), _m(n, p)), None),
    "forward_substitution": (lambda: (_m(n, n) / n, _m(n)), None),
    "trmv_lower": (lambda: (_m(n, n), _m(n), _m(n)), None),
    "trmv_upper_t": (lambda: (_m(n, n), _m(n), _m(n)), None),
}


@pytest.fixture
def small_panels(monkeypatch):
    monkeypatch.setattr(panels, "PANEL", 3)
    monkeypatch.setattr(panels, "PANEL_SPLIT", 3)
    monkeypatch.setattr(panels, "PANEL_MASKED", 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_products_are_hoisted_into_a_gemm_per_panel(name, small_panels):
    (b,) = offload.analyze(getattr(K, name)).blocks
    lines = [ln.strip() for ln in b.call.splitlines()]
    lines = lines[lines.index(next(ln for ln in lines if ln.startswith("for _hbr0"))):]
    assert "_hbq1 = " in b.call
    # 3-row panels, or one panel when nothing is widened or split (the mirrored symm)
    assert lines[0].endswith(", 3):") or name == "symm_lower"
    head = lines[:next(k for k, ln in enumerate(lines) if ln.startswith("for i in"))]
    assert any("@" in ln for ln in head)  # the panel's GEMM before its rows run


@pytest.mark.parametrize("name", sorted(CASES))
def test_panels_equal_the_loop_across_panel_boundaries(name, small_panels):
    fn = getattr(K, name)
    args = CASES[name][0]()
    ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("name", [k for k, v in CASES.items() if v[1] is not None])
def test_panels_leave_the_untouched_triangle_bit_identical(name, small_panels):
    fn = getattr(K, name)
    make, (pos, keep) = CASES[name]
    args = list(make())
    args[pos] = _sentinel(args[pos], keep)
    got, want = list(args), list(args)
    got[pos], want[pos] = args[pos].copy(), args[pos].copy()
    _python_variant(fn)(*got)
    fn(*want)
    assert np.array_equal(got[pos][~keep].view(np.int64), args[pos][~keep].view(np.int64))
    np.testing.assert_allclose(got[pos][keep], want[pos][keep], rtol=1e-12)


def test_non_finite_values_outside_the_triangle_read_do_not_leak(small_panels):
    """symm reads A's lower triangle only: NaN and inf in the strict upper triangle (never
    read by the loop) must not reach C — the panels multiply no masked zeros."""
    args = list(CASES["symm_lower"][0]())
    A = args[3]
    A[np.triu_indices(n, 1)] = np.nan
    A[0, n - 1] = np.inf
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    _python_variant(K.symm_lower)(*got)
    K.symm_lower(*want)
    assert np.isfinite(got[2]).all()
    np.testing.assert_allclose(got[2], want[2], rtol=1e-12)


def test_in_place_panels_read_rows_as_the_loop_does(small_panels):
    """trmm: the panel's GEMM reads rows below the panel (not yet written), each row's
    remainder the panel's later rows (not yet written); forward substitution: the GEMM reads
    the rows above the panel (final), the remainder the panel's earlier rows (just solved)."""
    (b,) = offload.analyze(K.trmm_inplace).blocks
    assert "B[_hbr1:max(n, 0), :]" in b.call and "B[i + 1:max(min(n, _hbr1), 0), :]" in b.call
    (b,) = offload.analyze(K.forward_substitution).blocks
    assert "x[:_hbr0]" in b.call and "x[_hbr0:i]" in b.call
    L, x = np.tril(_m(n, n), -1), _m(n)
    got = x.copy()
    _python_variant(K.forward_substitution)(L, got)
    np.testing.assert_allclose(got, np.linalg.solve(L + np.eye(n), x), rtol=1e-10)


@pytest.mark.parametrize("rows", [0, 1, 3, 4])
def test_empty_and_partial_panels(rows, small_panels):
    """No rows, one row, exactly one panel, one row past a panel."""
    for name in ("syrk_lower", "trmm_inplace", "symm_lower"):
        fn = getattr(K, name)
        args = {"syrk_lower": (1.5, 0.5, _m(rows, rows), _m(rows, m)),
                "trmm_inplace": (1.5, _m(rows, rows), _m(rows, p)),
                "symm_lower": (1.5, 0.5, _m(rows, p), _m(rows, rows), _m(rows, p))}[name]
        ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
        assert ok, (name, err)


@pytest.mark.parametrize("name", [
    "nm_reads_written_row", "nm_reads_written_row_below", "nm_view_of_output",
    "nm_two_variable_bounds", "nm_bound_from_row_start"])
def test_refusals_are_kept(name, small_panels):
    assert offload.analyze(getattr(K, name)).blocks == []


pytest.importorskip("numba")


@pytest.mark.parametrize("name", ["syr2k_upper", "symm_lower", "trmm_inplace",
                                  "forward_substitution"])
def test_njit_panels_equal_the_loop(name, small_panels):
    fn = getattr(K, name)
    v = offload.transform(fn, blocks=["B1"])
    assert "_hbq1" in v.source
    args = CASES[name][0]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


def test_njit_in_place_output_passed_as_its_operand_is_refused(small_panels):
    v = offload.transform(K.trmm_inplace, blocks=["B1"])
    B = _m(n, n)
    with pytest.raises(hl.InvalidInputError):
        v.compile()(1.5, B, B)  # A is B: the GEMM would read rows the panel writes


PAIRS = {"syr2k_lower": (True, LOWER), "not_a_pair_lower": (False, LOWER),
         "syr2k_upper_n": (True, UPPER)}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_a_transposed_pair_shares_one_product_over_the_whole_range(name, small_panels):
    fn = getattr(K, name)
    pair, keep = PAIRS[name]
    (b,) = offload.analyze(fn).blocks
    assert b.call.count("@") == (1 if pair else 2)
    assert (" - 0, 1)):" in b.call.splitlines()[0]) == pair  # one panel: all rows
    C = _sentinel(_m(n, n), keep)
    args = (1.5, C, _m(n, m), _m(n, m))
    got, want = list(args), list(args)
    got[1], want[1] = C.copy(), C.copy()
    _python_variant(fn)(*got)
    fn(*want)
    assert np.array_equal(got[1][~keep].view(np.int64), C[~keep].view(np.int64))
    np.testing.assert_allclose(got[1][keep], want[1][keep], rtol=1e-12)
    v = offload.transform(fn, blocks=["B1"])
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("cut", [n, n - 4, 0])
def test_mirrored_operand_and_its_run_time_guard(cut, small_panels):
    """m = n: the mirrored matrix serves every row; m < n: rows whose first range passes m
    exist, the guard fails and the rows' own calls run — both equal to the loop."""
    (b,) = offload.analyze(K.symm_lower_cut).blocks
    assert b.call.startswith("if A.shape[0] - 1 + 1 <= m:") and "_hbs1" in b.call
    args = (_m(n, p), _m(n, n), _m(n, p), cut)
    ok, err = verify(_run(_python_variant(K.symm_lower_cut), args), _run(K.symm_lower_cut, args))
    assert ok, err
    v = offload.transform(K.symm_lower_cut, blocks=["B1"])
    ok, err = verify(_run(v.compile(), args), _run(K.symm_lower_cut, args))
    assert ok, err


def test_two_arrays_are_not_mirrored(small_panels):
    (b,) = offload.analyze(K.not_mirrored).blocks
    assert "_hbs" not in b.call and b.call.startswith("for _hbr0 in range(0, n, 3):")
    args = (_m(n, p), _m(n, n), _m(n, n), _m(n, p))
    ok, err = verify(_run(_python_variant(K.not_mirrored), args), _run(K.not_mirrored, args))
    assert ok, err


@pytest.mark.parametrize("name", ["syr2k_lower", "symm_lower", "trmm_inplace"])
def test_cuda_variant_runs_the_panels_with_numpy_standing_in_for_cupy(name, small_panels):
    """The cuda variant's block is the same panel code on device arrays (``_xp``): checked
    with NumPy standing in for CuPy (the generated code, not a GPU)."""
    fn = getattr(K, name)
    args = {"syr2k_lower": lambda: (1.5, _m(n, n), _m(n, m), _m(n, m))}.get(
        name, CASES.get(name, (None,))[0])()
    v = offload.transform(fn, [], target="cupy", blocks=["B1"], array_module=np)
    assert "_hbq1 = " in v.source and "_xp." in v.source
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


# -- a split term as one masked GEMM per panel (masked.py) --------------------------------------
def lower_rows_lower(C, A, B):
    """The summed and the output bound both follow the row: the split form stays."""
    for i in range(C.shape[0]):
        for j in range(i + 1):
            for k in range(i + 1):
                C[i, j] += A[i, k] * B[k, j]


FUSED = {"trmm_inplace": True, "trmv_lower": True, "trmv_upper_t": True,
         "forward_substitution": False}  # x[i] reads x[j < i]: rows the panel just solved


def _args(name, rows, cols=p):
    return {"trmm_inplace": lambda: (1.5, _m(rows, rows), _m(rows, cols)),
            "forward_substitution": lambda: (_m(rows, rows) / max(rows, 1), _m(rows)),
            "trmv_lower": lambda: (_m(rows, rows), _m(rows), _m(rows)),
            "trmv_upper_t": lambda: (_m(rows, rows), _m(rows), _m(rows))}[name]()


@pytest.mark.parametrize("name", sorted(FUSED))
def test_masked_form_only_where_no_row_reads_a_row_the_panel_wrote(name, small_panels,
                                                                    monkeypatch):
    monkeypatch.setattr(panels, "PANEL_MASKED", 4)
    src = offload.transform(getattr(K, name), blocks=["B1"]).source
    assert "_hbq1" in src  # panels either way
    assert ("_hbt3 = np.zeros(" in src and "_hbf3 = np.isfinite(" in src) == FUSED[name]
    head = next(ln for ln in src.splitlines() if "for _hbr0 in" in ln)
    assert head.endswith(", 4):" if FUSED[name] else ", 3):")  # the panel height
    # the NumPy form keeps the split form (one GEMV per row's remainder)
    assert "_hbt" not in offload.analyze(getattr(K, name)).blocks[0].call


def test_masked_form_refused_when_the_output_bound_follows_the_row(small_panels):
    src = offload.transform(lower_rows_lower, blocks=["B1"]).source
    assert "_hbq1" in src and "_hbt" not in src
    args = (_m(n, n), _m(n, n), _m(n, n))
    ok, err = verify(_run(_python_variant(lower_rows_lower), args), _run(lower_rows_lower, args))
    assert ok, err


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 4, n])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_masked_panels_equal_the_loop_for_any_row_count(name, rows, small_panels):
    """No rows, fewer rows than a panel, exactly one panel, one row past it, 11 rows (a
    partial last panel); trmm also with one column (m = 1)."""
    fn = getattr(K, name)
    for args in [_args(name, rows)] + ([_args(name, rows, 1)] if name == "trmm_inplace" else []):
        ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
        assert ok, (rows, err)


def _trmm_non_finite():
    alpha, A, B = _args("trmm_inplace", n)
    A[np.triu_indices(n)] = np.nan  # the diagonal and above: never read (k > i)
    A[1, 1] = np.inf
    return alpha, A, B


def test_masked_form_reads_no_element_outside_the_triangle(small_panels):
    """NaN/inf in A's diagonal and upper triangle (never read): the masked block copies only
    the elements the loop reads, the result stays finite and equal to the loop's."""
    alpha, A, B = _trmm_non_finite()
    want = B.copy()
    K.trmm_inplace(alpha, A, want)
    assert np.isfinite(want).all()
    for fn in (_python_variant(K.trmm_inplace),
               offload.transform(K.trmm_inplace, blocks=["B1"]).compile()):
        got = B.copy()
        fn(alpha, A.copy(), got)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("where", [(4, 2), (9, 0), (0, 5)])
def test_non_finite_operands_fall_back_to_the_split_form(where, small_panels):
    """inf in B (trmm) or x (trmv) inside a panel: the masked zeros would turn the rows that do
    not read it into NaN (0 * inf); the finite guard runs the split form, equal to the loop
    (inf and NaN where the loop has them, finite elsewhere)."""
    alpha, A, B = _trmm_non_finite()
    B[where] = np.inf
    L, x, y = _args("trmv_lower", n)
    x[n - 1 - where[0]] = -np.inf  # rows from it on read it
    for name, args in (("trmm_inplace", (alpha, A, B)), ("trmv_lower", (L, x, y))):
        fn, out = getattr(K, name), 2  # B of trmm, y of trmv
        want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        fn(*want)
        w = want[out]
        assert not np.isfinite(w).all() and np.isfinite(w).any()  # the loop's own inf
        for variant in (_python_variant(fn),
                        offload.transform(fn, blocks=["B1"]).compile()):
            got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            variant(*got)
            g = got[out]
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=name)
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=name)  # inf where it is


@pytest.mark.parametrize("name", sorted(FUSED))
def test_njit_masked_panels_equal_the_loop_for_any_row_count(name, small_panels):
    """The compiled form (an empty masked block: a GEMM with no inner extent) for 1 to 11
    rows, trmm also with one column."""
    fn = getattr(K, name)
    compiled = offload.transform(fn, blocks=["B1"]).compile()
    for rows in (1, 2, 3, 4, n):
        for args in [_args(name, rows)] + (
                [_args(name, rows, 1)] if name == "trmm_inplace" else []):
            ok, err = verify(_run(compiled, args), _run(fn, args))
            assert ok, (rows, err)
