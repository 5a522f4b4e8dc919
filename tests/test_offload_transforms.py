"""Loop transformations before parallelization (issue 17, part 2): interchange for unit
stride, privatized array reductions and temporaries, coupled-subscript dependence tests,
scalar replacement, names imported from math/numpy — each legal case transformed and equal
to the plain function, each illegal one refused, aliased arguments guarded."""

from __future__ import annotations

import copy
from math import sqrt

import numpy as np
import pytest
from numpy import copyto
from numpy import exp as np_exp

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.analysis.deps import coupled_infeasible
from hetlab.offload.front.affine import Affine
from hetlab.offload.targets.registry import get_target

from . import _offload_soundness_corpus as corpus
from .test_offload_aliasing import TEMPTING

numba = pytest.importorskip("numba")
RNG = np.random.default_rng(7)


# -- kernels ----------------------------------------------------------------------------------
def gemm_ijk(C, A, B):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def gemm_zero_first(C, A, B):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = 0.0
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def column_major(B, A):
    for j in range(A.shape[1]):
        for i in range(A.shape[0]):
            B[i, j] = 2.0 * A[i, j]


def skewed(A):
    for j in range(A.shape[1] - 1):
        for i in range(1, A.shape[0]):
            A[i, j] = A[i - 1, j + 1] + 1.0


def scalar_between(C, A, B):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def atax(A, x, y, tmp):
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] += A[i, j] * x[j]
        for j in range(A.shape[1]):
            y[j] += A[i, j] * tmp[i]


def red_read_in_loop(A, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[j] += A[i, j] * y[0]


def red_scaled(A, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[j] = y[j] * 0.5 + A[i, j]


def red_product(A, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[j] *= A[i, j]


def red_on_view(A, tmp):
    y = A[0]
    for i in range(1, A.shape[0]):
        for j in range(A.shape[1]):
            y[j] += A[i, j] * tmp[i]


def doitgen(A, C4, sum_):
    NR, NQ, NP = A.shape
    for r in range(NR):
        for q in range(NQ):
            for p in range(NP):
                sum_[p] = 0.0
                for s in range(NP):
                    sum_[p] += A[r, q, s] * C4[s, p]
            for p in range(NP):
                A[r, q, p] = sum_[p]


def temp_read_first(A, out, t):
    for r in range(A.shape[0]):
        for p in range(A.shape[1]):
            out[r, p] = t[p]
        for p in range(A.shape[1]):
            t[p] = A[r, p]


def temp_written_if(A, out, t):
    for r in range(A.shape[0]):
        for p in range(A.shape[1]):
            if A[r, p] > 0.5:
                t[p] = A[r, p]
        for p in range(A.shape[1]):
            out[r, p] = t[p]


def sym_fill(data, c):
    m = data.shape[1]
    for j in range(m):
        for i in range(j + 1):
            c[i, j] = data[0, i] * data[0, j]
            c[j, i] = c[i, j]


def covariance(data, c):
    m = data.shape[1]
    for i in range(m):
        for j in range(i, m):
            c[i, j] = 0.0
            for k in range(data.shape[0]):
                c[i, j] += data[k, i] * data[k, j]
            c[j, i] = c[i, j]


def square_fill(x, c):
    n = x.shape[0]
    for i in range(n):
        for j in range(n):
            c[i, j] = x[i] + 2.0 * x[j]
            c[j, i] = x[j] + 3.0 * x[i]


def invariant_written(B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] = B[i, 0] + 1.0


def imported_sqrt(x, out):
    for i in range(x.shape[0]):
        out[i] = sqrt(x[i]) + np_exp(-x[i])


def imported_copyto(x, out):
    for i in range(x.shape[0]):
        copyto(out[i:], x[i:])


# -- helpers ----------------------------------------------------------------------------------
def _equal(fn, args, loops, **kw):
    """The variant offloading ``loops`` gives what the plain function gives; its source."""
    want = copy.deepcopy(args)
    fn(*want)
    got = copy.deepcopy(args)
    v = offload.transform(fn, loops, **kw)
    v.compile()(*got)
    for w, g in zip(want, got, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    return v.source


def _mats(n=7, m=9, k=5):
    return (np.zeros((n, m)), RNG.random((n, k)), RNG.random((k, m)))


# -- interchange ------------------------------------------------------------------------------
def test_gemm_ijk_becomes_ikj_and_stays_equal():
    rep = offload.analyze(gemm_ijk)
    (x,) = rep.transforms.interchanges
    assert x.order == (0, 2, 1) and "interchanged j↔k" in str(x)
    assert "interchanged j↔k for unit stride (i-j-k → i-k-j)" in str(rep)
    src = _equal(gemm_ijk, _mats(), ["L1"])
    assert "# transform: L1/L2/L3: interchanged j↔k" in src
    body = src[src.index("def gemm_ijk"):]
    assert body.index("for k in") < body.index("for j in")


def test_distribution_makes_the_band_perfect():
    rep = offload.analyze(gemm_zero_first)
    (x,) = rep.transforms.interchanges
    assert x.distributed == ("L2",)
    src = _equal(gemm_zero_first, _mats(), ["L1"])
    body = src[src.index("def gemm_zero_first"):]
    assert body.count("for j in") == 2  # C[i, j] = 0 in its own j loop, then k-j


def test_column_major_traversal_becomes_row_major():
    rep = offload.analyze(column_major)
    (x,) = rep.transforms.interchanges
    assert x.order == (1, 0)
    src = _equal(column_major, (np.zeros((6, 8)), RNG.random((6, 8))), ["L2"])
    body = src[src.index("def column_major"):]
    assert body.index("for i in prange") < body.index("for j in")


def test_interchange_forbidden_by_a_dependence():
    rep = offload.analyze(skewed)
    assert not rep.transforms.interchanges
    assert any("interchange i-j refused" in r for r in rep.transforms.refused)
    assert rep.loop("L1").verdict == "sequential"
    # the inner loop is parallel; its variant still computes the same, in the original order
    src = _equal(skewed, (RNG.random((6, 7)),), ["L2"])
    body = src[src.index("def skewed"):]
    assert body.index("for j in") < body.index("for i in")


def test_no_distribution_across_a_shared_scalar():
    rep = offload.analyze(scalar_between)
    assert not rep.transforms.interchanges


def test_serial_baseline_is_untransformed():
    src = offload.transform(gemm_ijk).source
    assert "# transform" not in src
    assert src.index("for j in") < src.index("for k in")


# -- privatized array reductions --------------------------------------------------------------
def test_array_reduction_privatized():
    rep = offload.analyze(atax)
    assert rep.loop("L1").verdict == "sequential"
    assert [(p.array, p.kind) for p in rep.transforms.private["L1"]] == [("y", "reduction")]
    assert "L1: y privatized (array reduction, +); L1 parallel with it" in str(rep)
    assert "L1" in get_target("numba").genes(rep)
    n, m = 11, 6
    src = _equal(atax, (RNG.random((n, m)), RNG.random(m), RNG.random(m), np.zeros(n)),
                 ["L1"])
    assert "_hl_np.zeros((_hl_ncL1,) + y.shape, y.dtype)" in src
    assert "for _hl_cL1 in prange(_hl_ncL1)" in src


@pytest.mark.parametrize("fn", [red_read_in_loop, red_scaled, red_product])
def test_reductions_that_cannot_be_privatized(fn):
    rep = offload.analyze(fn)
    assert not rep.transforms.private
    assert rep.loop("L1").verdict == "sequential"
    assert any(r.startswith("L1: y not privatized") for r in rep.transforms.refused)
    with pytest.raises(InvalidInputError):
        offload.transform(fn, ["L1"])


def test_reduction_into_a_view_is_not_privatized():
    rep = offload.analyze(red_on_view)
    assert not rep.transforms.private
    assert rep.loop("L1").verdict == "sequential"


def test_privatized_variant_refuses_aliased_arguments():
    A = RNG.random((8, 5))
    v = offload.transform(atax, ["L1"])
    with pytest.raises(InvalidInputError):
        v.compile()(A, RNG.random(5), A[0], np.zeros(8))  # y is a row of A
    args = (A.copy(), RNG.random(5), np.zeros(5), np.zeros(8))
    args = (args[0], args[1], args[0][1], args[3])
    want = copy.deepcopy(args)
    atax(want[0], want[1], want[0][1], want[3])
    v.compile(on_alias="serial")(*args)
    np.testing.assert_allclose(args[0], want[0])


# -- privatized temporaries -------------------------------------------------------------------
def test_temporary_privatized_with_copy_out():
    rep = offload.analyze(doitgen)
    (p,) = rep.transforms.private["L1"]
    assert (p.array, p.kind, p.copy_out) == ("sum_", "temporary", True)
    assert "L2" not in rep.transforms.private  # an inner loop: the outer one is parallel
    src = _equal(doitgen, (RNG.random((4, 3, 6)), RNG.random((6, 6)), np.zeros(6)), ["L1"])
    assert "sum_[:] = _hl_sum__L1[_hl_ncL1 - 1]" in src


@pytest.mark.parametrize("fn", [temp_read_first, temp_written_if])
def test_temporaries_that_cannot_be_privatized(fn):
    rep = offload.analyze(fn)
    assert not rep.transforms.private
    assert any("may be read before it is written" in r for r in rep.transforms.refused)
    assert rep.loop("L1").verdict == "sequential"


# -- coupled subscripts -----------------------------------------------------------------------
def test_coupled_subscripts_proved_independent():
    rep = offload.analyze(sym_fill)
    assert rep.loop("L2").verdict == "parallel"  # c[i, j], c[j, i]: i₁ = j = i₂
    m = 7
    _equal(sym_fill, (RNG.random((3, m)), np.zeros((m, m))), ["L2"])
    assert offload.analyze(covariance).loop("L1").verdict == "parallel"
    _equal(covariance, (RNG.random((5, m)), np.zeros((m, m))), ["L1"])


def test_coupled_subscripts_that_collide_stay_sequential():
    rep = offload.analyze(square_fill)
    assert rep.loop("L1").verdict == "sequential"  # c[i₁, j] = c[j', i₂] at j = i₂, j' = i₁
    assert not rep.transforms.private
    # within one i, iterations j₁ ≠ j₂ meet only on the diagonal (j₁ = i = j₂): parallel
    assert rep.loop("L2").verdict == "parallel"
    _equal(square_fill, (RNG.random(8), np.zeros((8, 8))), ["L2"])


def test_coupled_elimination():
    r = {"a": (0.0, 9.0), "d": (1.0, 9.0)}
    assert coupled_infeasible([Affine({"a": -1}), Affine({"a": 1, "d": -1})], r)
    assert not coupled_infeasible([Affine({"a": -1}), Affine({"a": 1, "d": -1}, 1)], r)
    assert not coupled_infeasible([Affine({"a": 1, "d": -1})], r)


# -- scalar replacement -----------------------------------------------------------------------
def test_scalar_replacement_hoists_invariant_reads():
    rep = offload.analyze(gemm_ijk)
    assert any("scalar replacement, A[i, k] read once before the loop" in t
               for t in rep.transforms.lines())
    src = _equal(gemm_ijk, _mats(), ["L1"])
    assert "_hl_r0 = A[i, k]" in src and "_hl_r0 * B[k, j]" in src


def test_reads_of_written_arrays_are_not_replaced():
    src = _equal(invariant_written, (RNG.random((5, 6)),), ["L1"])
    assert "_hl_r" not in src and "scalar replacement" not in src


# -- front end: names imported from math and numpy --------------------------------------------
def test_names_imported_from_math_and_numpy_are_pure():
    rep = offload.analyze(imported_sqrt)
    assert rep.loop("L1").verdict == "parallel", rep.loop("L1").why
    _equal(imported_sqrt, (RNG.random(9), np.zeros(9)), ["L1"])
    bad = offload.analyze(imported_copyto).loop("L1")
    assert bad.verdict == "unsupported" and "hidden write" in bad.why


# -- soundness corpus -------------------------------------------------------------------------
@pytest.mark.parametrize("name", TEMPTING)
def test_tempting_loops_get_no_privatization(name):
    rep = offload.analyze(corpus.CASES[name][0])
    assert not rep.transforms.private, (name, rep.transforms.lines())
    assert not get_target("numba").genes(rep), name


def test_interchange_left_out_when_it_would_move_a_chosen_loop_inward():
    src = _equal(gemm_ijk, _mats(), ["L2"])  # j chosen: i-k-j would put it innermost
    assert "interchange left out" in src
    body = src[src.index("def gemm_ijk"):]
    assert body.index("for j in prange") < body.index("for k in")


def transposed_copy(A, B):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            B[j, i] = A[i, j]


def transposed_rows_summed(A, B, r):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            B[j, i] = A[i, j]
            r[i] += A[i, j]  # i's iterations own r[i]; j reduces into it: j not parallel


def _transposed_args(fortran: bool):
    A = RNG.random((6, 11))
    return (np.asfortranarray(A) if fortran else A), np.zeros((11, 6))


def test_parallel_loop_handed_to_the_outermost_after_an_interchange():
    """A column-major A: j-i order makes both accesses unit-stride; i was chosen, and every
    loop of the band carries nothing, so the interchange runs and j takes the prange."""
    rep = offload.analyze(transposed_copy, fortran=("A",))
    want = transposed_copy
    got = offload.transform(rep, ["L1"])
    A, B = _transposed_args(True)
    B2 = B.copy()
    want(A, B)
    got.compile()(A, B2)
    np.testing.assert_array_equal(B2, B)
    assert "parallel loop handed from i to j" in got.source
    body = got.source[got.source.index("def transposed_copy"):]
    assert body.index("for j in prange") < body.index("for i in range")


def test_not_handed_when_a_loop_of_the_band_carries_something():
    rep = offload.analyze(transposed_rows_summed, fortran=("A",))
    assert rep.loop("L2").verdict != "parallel"
    src = offload.transform(rep, ["L1"]).source
    assert "handed" not in src
    body = src[src.index("def transposed_rows_summed"):]
    assert body.index("for i in prange") < body.index("for j in range")


def cube_scale(B, A):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[2]):
                B[i, j, k] = 2.0 * A[i, j, k] + 1.0


def tri_cube(B, A):
    for i in range(A.shape[0]):
        for j in range(i + 1):
            for k in range(A.shape[2]):
                B[i, j, k] = 2.0 * A[i, j, k]


def test_short_parallel_nest_collapsed():
    rep = offload.analyze(cube_scale)
    assert any("L1/L2: collapsed i, j" in t for t in rep.transforms.lines())
    src = _equal(cube_scale, (np.zeros((3, 5, 4)), RNG.random((3, 5, 4))), ["L1"])
    assert "for _hl_L1L2 in prange(_hl_nL1 * _hl_nL2)" in src
    assert "i = 0 + _hl_L1L2 // _hl_nL2 * 1" in src


def test_no_collapse_over_a_triangular_or_serial_inner_loop():
    src = _equal(tri_cube, (np.zeros((4, 4, 3)), RNG.random((4, 4, 3))), ["L1"])
    assert "collapsed" not in src
    src = _equal(gemm_ijk, _mats(), ["L1"])  # j and k are no (pure) parallel pair under i
    assert "collapsed" not in src


def gemm_skip_rows(C, A, B, mask):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            if mask[j]:
                continue
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def test_no_distribution_over_a_continue():
    rep = offload.analyze(gemm_skip_rows)
    assert not rep.transforms.interchanges
    assert any("cannot be distributed" in r for r in rep.transforms.refused)
    n, m, k = 5, 6, 4
    _equal(gemm_skip_rows, (np.zeros((n, m)), RNG.random((n, k)), RNG.random((k, m)),
                            np.arange(m) % 2 == 0), ["L1"])


def test_collapse_with_every_loop_chosen():
    src = _equal(cube_scale, (np.zeros((3, 5, 4)), RNG.random((3, 5, 4))), ["L1", "L2", "L3"])
    assert src.count("collapsed") == 1
