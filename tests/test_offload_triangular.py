"""Triangular bounds handled exactly: each shape recognized as row-wise library calls, the
generated code equal to the loop up to summation order, the untouched triangle bit-identical
(sentinels, NaN included), in-place reads proven to be other rows or refused, near misses
(rows that read the written row, bounds on two loop variables, steps, views) left as loops."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.runtime.measure import verify

from . import _offload_triangular_cases as K
from .test_offload_contractions import _python_variant, _run

R = np.random.default_rng(17)
SENTINEL = (np.nan, -7.25e300, 3.0)


def _m(*shape):
    return R.random(shape) + 0.1


def _sentinel(C, keep):
    """C with its untouched elements (``keep`` False) set to NaN / huge / plain sentinels."""
    C = C.copy()
    idx = np.argwhere(~keep)
    for n, (a, b) in enumerate(idx):
        C[a, b] = SENTINEL[n % len(SENTINEL)]
    return C


n, m = 7, 5
LOWER = np.tril(np.ones((n, n), bool))
UPPER = np.triu(np.ones((n, n), bool))
STRICT = np.tril(np.ones((n, n), bool), -1)
POSITIVE = {  # kernel: (pattern, arguments, (output position, mask of the written elements))
    "syrk_lower": ("matvec (triangular rows)", lambda: (1.5, 0.5, _m(n, n), _m(n, m)),
                   (2, LOWER)),
    "syr2k_upper": ("matvec (triangular rows)",
                    lambda: (1.5, 0.5, _m(n, n), _m(n, m), _m(n, m)), (2, UPPER)),
    "strict_lower_product": ("matvec (triangular rows)",
                             lambda: (_m(n, n), _m(n, m), _m(m, n)), (0, STRICT)),
    "symm_lower": ("matvec+matvec (triangular rows)",
                   lambda: (1.5, 0.5, _m(n, m), _m(n, n), _m(n, m)), None),
    "trmm_inplace": ("matvec (triangular rows)", lambda: (1.5, _m(n, n), _m(n, m)), None),
    "forward_substitution": ("dot (triangular rows)", lambda: (_m(n, n) / n, _m(n)), None),
    "trmv_lower": ("dot (triangular rows)", lambda: (_m(n, n), _m(n), _m(n)), None),
    "trmv_upper_t": ("dot (triangular rows)", lambda: (_m(n, n), _m(n), _m(n)), None),
}
NEAR = ["nm_reads_written_row", "nm_reads_written_row_below", "nm_reads_written_column",
        "nm_two_variable_bounds", "nm_step", "nm_negative_offset", "nm_scaled_bound",
        "nm_view_of_output", "nm_bound_from_row_start"]


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_triangular_shape_is_recognized_as_row_calls(name):
    (b,) = offload.analyze(getattr(K, name)).blocks
    assert b.pattern == POSITIVE[name][0]
    lines = b.call.splitlines()
    if lines[0].startswith("if "):  # a mirrored symmetric operand, the rows' calls as fallback
        other = next(k for k, ln in enumerate(lines) if ln.startswith("else:"))
        assert "_hbs1 = np.empty(" in lines[1]
        lines = [ln[4:] for ln in lines[next(k for k, ln in enumerate(lines)
                                             if "for _hbr0" in ln):other]]
    first, *rest = lines
    assert first.startswith("for _hbr0 in range(") and all(ln.startswith("    ") for ln in rest)
    # panels of rows: the panel's products (no loops), then one loop over the panel's rows
    # around array calls
    inner = [n for n, ln in enumerate(rest) if "for " in ln]
    assert len(inner) == 1 and rest[inner[0]].startswith("    for i in range(_hbr0, _hbr1):")
    assert any("@" in ln for ln in rest[:inner[0]])
    assert all(ln.startswith("        ") for ln in rest[inner[0] + 1:])


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_generated_code_equals_the_loop(name):
    fn = getattr(K, name)
    args = POSITIVE[name][1]()
    ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("name", [k for k, v in POSITIVE.items() if v[2] is not None])
def test_untouched_triangle_stays_bit_identical(name):
    fn = getattr(K, name)
    _, make, (pos, keep) = POSITIVE[name]
    args = list(make())
    args[pos] = _sentinel(args[pos], keep)
    before = args[pos].copy()
    got = list(args)
    got[pos] = args[pos].copy()
    _python_variant(fn)(*got)
    assert np.array_equal(got[pos][~keep].view(np.int64), before[~keep].view(np.int64))
    want = list(args)
    want[pos] = args[pos].copy()
    fn(*want)
    np.testing.assert_allclose(got[pos][keep], want[pos][keep], rtol=1e-12)


# in-place rows (trmm, forward substitution): test_offload_triangular_panels.py
# test_in_place_panels_read_rows_as_the_loop_does, which asserts the same and more


@pytest.mark.parametrize("name", NEAR)
def test_near_misses_stay_loops(name):
    assert offload.analyze(getattr(K, name)).blocks == []


def test_sibling_loops_over_two_ranges_are_renamed_not_merged():
    (b,) = offload.analyze(K.symm_lower).blocks
    # the mirrored matrix: row i of A below the diagonal, column i from it on; the rows' own
    # calls over the two ranges as the fallback
    assert "_hbs1[i, _hbm1] = A[i, _hbm1]" in b.call and "_hbs1[i, _hbm1] = A[_hbm1, i]" in b.call
    assert "A[i, :i + 1]" in b.call and "A[i + 1:" in b.call


pytest.importorskip("numba")


@pytest.mark.parametrize("name", ["syrk_lower", "trmm_inplace", "trmv_lower"])
def test_njit_variant_equals_the_loop(name):
    fn = getattr(K, name)
    v = offload.transform(fn, blocks=["B1"])
    args = POSITIVE[name][1]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


def test_output_passed_as_an_operand_is_refused():
    v = offload.transform(K.syrk_lower, blocks=["B1"])
    C = _m(n, n)
    with pytest.raises(hl.InvalidInputError):
        v.compile()(1.5, 0.5, C, C)  # A is C: the rows read would be rows written


@pytest.mark.parametrize("name", ["nm_triangular", "nm_triangular_from"])
def test_former_triangular_near_misses_are_now_exact_row_calls(name):
    from . import _offload_contraction_cases as K1

    fn = getattr(K1, name)
    (b,) = offload.analyze(fn).blocks
    assert b.pattern.endswith("(triangular rows)")
    args = (_m(n, m), _m(m, n), _m(n, n))
    ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("name", ["symm_lower", "syr2k_upper"])
def test_matching_leaves_the_functions_tree_as_written(name):
    report = offload.analyze(getattr(K, name))
    assert "_hb" not in offload.transform(report, []).source
