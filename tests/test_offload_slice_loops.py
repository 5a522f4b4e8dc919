"""Slice statements inside loops run as element loops in the numba variant
(:mod:`hetlab.offload.analysis.transforms.slices`): where it applies, the variant gives the plain
function's results (bit for bit but for libm functions); where it does not, the statement is
kept as written."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.analysis.transforms.slices import slice_loops
from hetlab.offload.targets.numba import NumbaTarget

QUICK = dict(budget=4, progress=False, reference="njit")


def rank1_rows(A, u, v):
    for i in range(A.shape[0]):
        A[i, :] += u[i] * v


def implicit_rows(A, B, C, s):
    for i in range(A.shape[0]):
        A[i] = B[i] * s - C[i]


def column_scale(A, d):
    for j in range(A.shape[1]):
        A[:, j] = A[:, j] / d[j]


def shifted_roots(x, y, c):
    for _t in range(3):
        x[:] = np.sqrt(y + c) ** 2 - x[:]


def normalize_by_own_first(A):
    for i in range(A.shape[0]):
        A[i, :] = A[i, :] / A[i, 0]  # reads A[i, 0] before any store in NumPy


def divide_by_a_row(A, B):
    for i in range(A.shape[0]):
        A[i, :] = A[i, :] / B[i, :]


def int_rows(A, v):
    for i in range(A.shape[0]):
        A[i, :] += v


def whole_matrix(A, B):
    for _t in range(2):
        A[:, :] = A[:, :] + B


def rebinds(A, v):
    A = A[::-1]
    for i in range(A.shape[0]):
        A[i, :] += v


def outside_loops(A, v):
    A[0, :] += v
    for i in range(A.shape[0]):
        A[i, 0] += 1.0


def negative_power(A, v):
    for i in range(A.shape[0]):
        A[i, :] = v ** -1


def _source(fn, ranks, floats, scalars=frozenset()):
    """The function's source after the pass, and its notes."""
    report = offload.analyze(fn, arrays=ranks)
    tree = report.source.tree
    notes = slice_loops(tree, report.array_ranks, frozenset(floats),
                        report.aliases.numbers, frozenset(scalars))
    return ast.unparse(tree), notes


def _variant(fn, args, scalars=(), loops=()):
    """The numba variant of ``fn`` with the fixed passes (serial, or ``loops`` in parallel),
    as the search builds it for ``args``."""
    ranks = {p: a.ndim for p, a in zip(offload.analyze(fn).params, args, strict=True)
             if isinstance(a, np.ndarray)}
    report = offload.analyze(fn, arrays=ranks)
    report.float_arrays = frozenset(p for p, a in zip(report.params, args, strict=True)
                                    if isinstance(a, np.ndarray) and a.dtype.kind == "f")
    report.scalar_params = frozenset(scalars)
    return NumbaTarget().generate(report, loops, transforms=True)


def _agree(fn, args, scalars=(), exact=True, loops=()):
    v = _variant(fn, args, scalars, loops)
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        fn(*want)
    v.compile()(*got)
    for w, g in zip(want, got, strict=True):
        if isinstance(w, np.ndarray):
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-14)
    return v.source


G = np.random.default_rng(0)


def test_a_row_update_runs_as_an_element_loop_with_the_same_bits():
    src, notes = _source(rank1_rows, {"A": 2, "u": 1, "v": 1}, {"A"})
    assert "for _hl_s0 in range(A.shape[1]):" in src and "A[i, _hl_s0] += u[i] * v[_hl_s0]" in src
    assert "if A.shape[1] == v.shape[0]:" in src and len(notes) == 1
    out = _agree(rank1_rows, (G.random((7, 5)), G.random(7), G.random(5)))
    assert "slice statement as an element loop" in out


def test_also_with_the_row_loop_in_parallel():
    """The unsigned pass writes the row subscript ``A[_hl_u64(i), :]`` first in a prange loop;
    the slice pass still sees a row (it was kept as slices: 0.63x the fifth probe's key)."""
    out = _agree(rank1_rows, (G.random((7, 5)), G.random(7), G.random(5)), loops=("L1",))
    assert "as unsigned" in out and "slice statement as an element loop" in out
    assert "A[_hl_u64(i), _hl_s0] += u[_hl_u64(i)] * v[_hl_s0]" in out


def test_implicit_rows_columns_calls_and_number_divisors():
    src = _agree(implicit_rows, (G.random((6, 4)), G.random((6, 4)), G.random((6, 4)), 1.5),
                 scalars=("s",))
    assert "A[i, _hl_s0] = B[i, _hl_s0] * s - C[i, _hl_s0]" in src
    src = _agree(column_scale, (G.random((5, 6)), G.random(6) + 0.5))
    assert "A[_hl_s0, j] = A[_hl_s0, j] / d[j]" in src and "d[j] != 0" in src
    src = _agree(shifted_roots, (G.random(9), G.random(9), 0.25), scalars=("c",), exact=False)
    assert "np.sqrt(y[_hl_s0] + c) ** 2" in src


def test_a_zero_divisor_or_a_broadcast_runs_the_statement_as_written():
    d = G.random(6) + 0.5
    d[2] = 0.0  # NumPy: inf and nan in that column; numba's scalar / would raise
    _agree(column_scale, (G.random((5, 6)), d))
    _agree(rank1_rows, (G.random((4, 5)), G.random(4), G.random(1)))  # v broadcast


@pytest.mark.parametrize(("fn", "ranks", "floats"), [
    (normalize_by_own_first, {"A": 2}, {"A"}),
    (int_rows, {"A": 2, "v": 1}, set()),
    (whole_matrix, {"A": 2, "B": 2}, {"A", "B"}),
    (rebinds, {"A": 2, "v": 1}, {"A"}),
    (outside_loops, {"A": 2, "v": 1}, {"A"}),
    (negative_power, {"A": 2, "v": 1}, {"A"}),
    (rank1_rows, {}, {"A"}),  # ranks unknown: A[i, :] may be a plane of a 3-D array
])
def test_statements_the_loop_form_would_change_are_kept(fn, ranks, floats):
    src, notes = _source(fn, ranks, floats)
    assert notes == [] and "_hl_s" not in src


def test_a_row_divisor_divides_as_numpy_does():
    """``A[i, :] / B[i, :]``: each element through ``np.divide`` (inf and nan where B holds 0,
    as NumPy's; numba's scalar ``/`` would raise)."""
    B = G.random((4, 5)) + 0.5
    B[1, 2] = 0.0
    A = G.random((4, 5))
    A[2, 3] = 0.0
    B[2, 3] = 0.0
    src = _agree(divide_by_a_row, (A, B))
    assert "np.divide(A[i, _hl_s0], B[i, _hl_s0])" in src


def test_kept_statements_still_give_numpys_result():
    A = G.random((5, 4)) + 0.5
    _agree(normalize_by_own_first, (A,))
    _agree(int_rows, (np.arange(12).reshape(3, 4), np.arange(4)))


def test_a_plan_refuses_an_array_where_the_search_passed_a_number():
    args = (G.random((20, 8)), G.random((20, 8)), G.random((20, 8)), 2.0)
    plan = offload.search(implicit_rows, args, **QUICK)
    assert plan.arg_kinds["s"] == (0, True)
    fresh = [a.copy() for a in args[:3]]
    plan.compile()(*fresh, 2.0)
    want = [a.copy() for a in args[:3]]
    implicit_rows(*want, 2.0)
    np.testing.assert_array_equal(fresh[0], want[0])
    with pytest.raises(InvalidInputError, match="searched with s a number"):
        plan.compile()(*[a.copy() for a in args[:3]], np.ones(8))
