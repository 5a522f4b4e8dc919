"""Parallel numba forms of function blocks (issue 17, part 4): the argmin nest's rows under
prange, column sums over per-thread column chunks, maps and outer products over rows, each in a
parallel helper (hetlab.offload.analysis.parhelp) that runs in parallel even in a plan compiled
without parallel=True; results bit-identical to the loops; near misses get no parallel form."""

from __future__ import annotations

import ast

import numba
import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.argmin import match_argmin
from hetlab.offload.analysis.parhelp import free_names, install, readable
from hetlab.offload.runtime.measure import copy_args, outputs_of

from . import _offload_argmin_cases as A
from . import _offload_argmin_speed_cases as K

R = np.random.default_rng(41)


def _run(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


def _block(fn):
    (b,) = offload.analyze(fn).blocks
    return b


def _compiled(fn):
    report = offload.analyze(fn)
    v = offload.transform(report, blocks=[b.id for b in report.blocks])
    assert "parallel=False" in v.source  # a blocks-only plan: the helper is parallel itself
    return v.compile()


def _points(n=300, k=6, m=4):
    X, C = R.random((n, m)), R.random((k, m))
    X[3] = C[2]                       # a zero distance
    C[5] = C[1]                       # exact ties: the first index wins
    X[10, 0] = np.nan                 # every distance NaN: the row keeps its initial values
    C[4, 2] = np.nan                  # one candidate NaN for every row: never chosen
    X[11] = C[0] + 1e-17              # near-ties
    return X, C


def test_argmin_numba_form_is_a_parallel_row_loop():
    b = _block(A.assign)
    text = readable(b.numba_call)
    assert "@_hl_numba.njit(parallel=True" in text and "_hl_numba.prange(n)" in text
    assert "np.argmin" not in b.numba_call and "np.argmin" in b.call  # CuPy keeps the chunks
    assert "d += t * t" in text  # the direct distance, never an expansion


@pytest.mark.parametrize("threads", [1, 2])
def test_argmin_parallel_form_is_bit_identical_with_ties_and_nan(threads):
    X, C = _points()
    args = (X, C, np.full(X.shape[0], -7, dtype=np.int64), np.full(X.shape[0], -1.0))
    fn = _compiled(A.assign)
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got = _run(fn, args)
    finally:
        numba.set_num_threads(old)
    want = _run(A.assign, args)
    np.testing.assert_array_equal(got[3], want[3])  # outputs_of: (return value, *arrays)
    np.testing.assert_array_equal(got[4], want[4])
    assert got[3][10] == 0 and np.isinf(got[4][10])  # the all-NaN row kept its initial values


def test_argmin_parallel_form_offset_rows_scalar_and_empty():
    fn = _compiled(K.manhattan)
    X, C = _points(50, 6, 3)
    args = (X, C, np.full(50, 9, dtype=np.int64), np.zeros((50, 2)), 0.5)
    got, want = _run(fn, args), _run(K.manhattan, args)
    for g, w in zip(got[3:5], want[3:5], strict=True):
        np.testing.assert_array_equal(g, w)
    empty = (X, C[:0], np.full(50, 9, dtype=np.int64), np.zeros((50, 2)), 0.5)
    for g, w in zip(_run(fn, empty)[3:5], _run(K.manhattan, empty)[3:5], strict=True):
        np.testing.assert_array_equal(g, w)


def test_argmin_parallel_form_raises_where_the_loop_would():
    fn = _compiled(K.manhattan)
    X, C = _points(20, 6, 4)
    args = (X, C[:, :2], np.zeros(20, dtype=np.int64), np.zeros((20, 1)), 1.0)  # C too narrow
    with pytest.raises(IndexError):
        K.manhattan(*copy_args(args))
    with pytest.raises(IndexError):
        fn(*copy_args(args))


@pytest.mark.parametrize("fn", [K.carried_best, K.shared_element, K.reads_its_output],
                         ids=["carried_index", "shared_element", "reads_its_output"])
def test_dependent_rows_get_no_parallel_form(fn):
    for b in offload.analyze(fn).blocks:
        assert "prange" not in b.numba_call


def test_unknown_liveness_gets_no_parallel_form():
    src = ast.parse("""
for i in range(n):
    best = 0
    bd = np.inf
    for c in range(k):
        d = 0.0
        for f in range(m):
            d += (X[i, f] - C[c, f]) ** 2
        if d < bd:
            bd = d
            best = c
    lab[i] = best
""").body[0]
    assert match_argmin(src, numba=True) is None
    assert match_argmin(src, numba=True, live=lambda v: v == "best") is None
    assert match_argmin(src, numba=True, live=lambda v: False) is not None
    assert match_argmin(src, numba=True, live=lambda v: False,
                        may_alias=lambda a, b: {a, b} == {"lab", "X"}) is None


def test_outer_product_and_map_run_over_rows_in_a_helper():
    b = _block(K.outer_scaled)
    text = readable(b.numba_call)
    assert "for i in _hl_numba.prange(0, x.shape[0]):" in text
    fn = _compiled(K.outer_scaled)
    args = (0.75, R.random(37), R.random(41), np.zeros((37, 41)))
    np.testing.assert_array_equal(_run(fn, args)[3], _run(K.outer_scaled, args)[3])


@pytest.mark.parametrize("shape", [(23, 1), (5, 3), (0, 4), (17, 64)])
def test_row_reduction_is_bit_identical(shape):
    assert "for i in _hl_numba.prange(0, X.shape[0]):" in readable(_block(K.row_abs_sums)
                                                                   .numba_call)
    fn = _compiled(K.row_abs_sums)
    args = (R.random(shape), np.full(shape[0], 3.0))
    np.testing.assert_array_equal(_run(fn, args)[2], _run(K.row_abs_sums, args)[2])


def test_free_names_leave_modules_and_builtins_to_the_namespace():
    node = ast.parse("for i in range(n):\n    y[i] = math.sqrt(abs(x[i])) + np.inf + x.shape[0]")
    assert free_names([node], {"i"}) == ["n", "y", "x"]


def test_install_plain_python_and_numba():
    from hetlab.offload.analysis.loopform import parallel_loops

    node = ast.parse("s[i] += X[i, j]").body[0]
    lines = parallel_loops(("i", "j"), {"i": ("0", "n"), "j": ("0", "m")}, node, ("j",))
    code = "\n".join(lines)
    X = R.random((9, 4))
    for python in (True, False):
        ns = {"np": np}
        assert install(code, ns, python=python) == 1
        s = np.zeros(9)
        exec(lines[1], ns, {"s": s, "X": X, "n": 9, "m": 4})
        np.testing.assert_array_equal(s, np.sum(X, axis=1))  # 4 terms: numpy's order too
