"""Tiling of reuse loops (issue 17, part 2): legality, exact remainders, the gene."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab.errors import InvalidInputError
from hetlab.offload import analyze, transform
from hetlab.offload.analysis.transforms import tile_genes, tile_size
from hetlab.offload.analysis.transforms.tiling import reuse_span, working_set
from hetlab.offload.searching.model import StaticModel
from hetlab.offload.targets.registry import get_target


def matmul(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def transpose(A, B):
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            B[j, i] = A[i, j] + 1.0


def stencil(A, B):
    n, m = A.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


def seidel(A):  # Gauss-Seidel-like: distance (1, -1) forbids tiling
    n, m = A.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            A[i, j] = 0.5 * (A[i - 1, j + 1] + A[i, j])


def seidel_ok(A):  # distances (1, 0) and (0, 1): fully permutable
    n, m = A.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            A[i, j] = 0.25 * (A[i - 1, j] + A[i, j - 1] + A[i + 1, j] + A[i, j + 1])


def triangular(A, B):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            B[j, i] = A[i, j]


def strided(A, B):
    n, m = A.shape
    for i in range(0, n, 2):
        for j in range(m):
            B[j, i] = A[i, j]


def view_alias(A):  # B is a view of A: the transpose reads what it writes
    B = A.T
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            B[i, j] = A[j, i] * 0.5


def row_sum(A, out):  # no reuse across the band: not a candidate
    n, m = A.shape
    for i in range(n):
        for j in range(m):
            out[i, j] = A[i, j] * 2.0


RNG = np.random.default_rng(7)


def _trips(rep, args):
    return StaticModel(rep, args, 1).trips


def _run(fn, loops, args):
    work = [a.copy() for a in args]
    transform(analyze(fn), loops).compile()(*work)
    return work


def _plain(fn, args):
    work = [a.copy() for a in args]
    fn(*work)
    return work


def _bits(size):
    return {None: [], 32: [":t1"], 64: [":t2"], 128: [":t1", ":t2"]}[size]


@pytest.mark.parametrize("size", [32, 64])
@pytest.mark.parametrize("par", [False, True])
def test_matmul_nest_tiled_equals_loop(size, par):
    A, B = RNG.random((71, 45)), RNG.random((45, 133))
    C = RNG.random((71, 133))
    loops = (["L1"] if par else []) + ["L1" + b for b in _bits(size)]
    got, want = _run(matmul, loops, (A, B, C)), _plain(matmul, (A, B, C))
    np.testing.assert_array_equal(got[2], want[2])  # same summation order: bit-equal
    src = transform(analyze(matmul), loops).source
    assert f"tiled i, j, k by {size}" in src and "min(" in src
    if par:
        assert "tile loop of i in parallel" in src and "prange((" in src


@pytest.mark.parametrize("shape", [(37, 90), (128, 64), (5, 200)])
def test_transpose_and_stencil_tiled_equal(shape):
    A = RNG.random(shape)
    for fn, args in ((transpose, (A, np.zeros(shape[::-1]))), (stencil, (A, np.zeros(shape)))):
        for loops in (["L1:t1"], ["L1:t2"], ["L1", "L1:t1", "L1:t2"], ["L2", "L1:t1"]):
            got, want = _run(fn, loops, args), _plain(fn, args)
            np.testing.assert_array_equal(got[1], want[1], err_msg=f"{fn.__name__} {loops}")


def test_fully_permutable_in_place_sweep_tiled_equal():
    A = RNG.random((67, 41))
    rep = analyze(seidel_ok)
    assert [t.loops for t in rep.transforms.tilings] == [("L1", "L2")]
    assert rep.transforms.tilings[0].parallel_tile == (False, False)
    np.testing.assert_array_equal(_run(seidel_ok, ["L1:t1"], (A,))[0], _plain(seidel_ok, (A,))[0])


@pytest.mark.parametrize("fn, why", [
    (seidel, "not fully permutable"),
    (triangular, "not rectangular"),
    (strided, "step 2"),
    (view_alias, "may share memory"),
])
def test_refused(fn, why):
    rep = analyze(fn)
    assert not rep.transforms.tilings
    assert any("tiling refused" in r and why in r for r in rep.transforms.refused), \
        rep.transforms.refused
    with pytest.raises(InvalidInputError, match="not tile genes"):
        transform(rep, ["L1:t1"])


def test_no_reuse_no_candidate():
    rep = analyze(row_sum)
    assert not rep.transforms.tilings
    assert not any("tiling" in r for r in rep.transforms.refused)


def test_gene_bits_choose_sizes():
    on = {"L3:t1", "L1:t2"}
    assert tile_size("L1", on) == 64 and tile_size("L3", on) == 32
    assert tile_size("L2", on) is None


def test_genes_only_when_legal_and_large():
    numba_t = get_target("numba")
    rep = analyze(matmul)
    t = rep.transforms.tilings[0]
    big = (np.zeros((400, 400)), np.zeros((400, 400)), np.zeros((400, 400)))
    small = (np.zeros((20, 20)), np.zeros((20, 20)), np.zeros((20, 20)))
    # then the reassociation gene: C[i, j] += … over k accumulates an element
    assert numba_t.option_genes(rep, big, trips=_trips(rep, big)) == [
        "L1:t1", "L1:t2", "fp:reassoc"]
    assert numba_t.option_genes(rep, small, trips=_trips(rep, small)) == ["fp:reassoc"]
    # the nest is a BLAS block
    assert numba_t.option_genes(rep, big, ("B1",), trips=_trips(rep, big)) == []
    sd, sd_args = analyze(seidel), (np.zeros((3000, 3000)),)
    assert numba_t.option_genes(sd, sd_args, trips=_trips(sd, sd_args)) == []
    trips = {"L1": 400, "L2": 400, "L3": 400}
    assert working_set(t, trips, {}) == 3 * 400 * 400 * 8
    assert reuse_span(t, trips, {}) > 400 * 400 * 8  # one i iteration touches all of B
    # a 2-D stencil with short rows keeps its three rows in L1: not offered
    st = analyze(stencil).transforms.tilings[0]
    assert tile_genes([st], {"L1": 10_000, "L2": 500}, {}, set(), (48 << 10, 2 << 20)) == []
    assert tile_genes([st], {"L1": 100, "L2": 100_000}, {}, set(),
                      (48 << 10, 2 << 20)) == ["L1:t1", "L1:t2"]


def test_search_declines_or_keeps_tiling_verified():
    """The GA sees the tile bits (off in its seed) and the plan it keeps is verified."""
    from hetlab.offload import GAOptions, MeasureOptions, search

    A, B = RNG.random((300, 300)), RNG.random((300, 300))
    C = np.zeros((300, 300))
    plan = search(matmul, (A, B, C), function_blocks=False, progress=False, reference="njit",
                  ga=GAOptions(exhaustive=False, generations=2, population=4),
                  measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))
    assert plan.verified
    tiles = [g for g in plan.genes if ":t" in g]
    assert tiles in (["L1:t1", "L1:t2"], [])
    assert plan.genes[-1] == "fp:reassoc"  # C[i, j] += … over k: an element accumulated
    assert ":t" not in "".join(plan.loops)
    on = {g for g, b in zip(plan.genes, plan.best, strict=True) if b}
    size = tile_size("L1", on)
    assert (f"by {size}" in plan.source()) == (size is not None)


def offset_start(A, B):  # inner loop from 2 (a non-negative constant) and used as an index only
    n, m = A.shape
    for i in range(n):
        for j in range(2, m):
            B[j, i] = A[i, j]


@pytest.mark.parametrize("fn, unsigned", [(matmul, True), (transpose, True), (offset_start, True),
                                          (stencil, False), (seidel_ok, False)])
def test_inner_point_loop_unsigned_only_where_plain_index(fn, unsigned):
    """The innermost point loop runs on uint64 (no wrap-around test, so LLVM vectorizes it)
    only when its variable is nothing but a subscript index; j - 1 must stay int64."""
    src = transform(analyze(fn), ["L1:t1"]).source
    assert ("range(_hl_u64(" in src) is unsigned, src
    assert ("uint64 as _hl_u64" in src) is unsigned
    if fn is offset_start:
        args = (RNG.random((40, 70)), np.zeros((70, 40)))
        got, want = _run(fn, ["L1:t1"], args), _plain(fn, args)
        np.testing.assert_array_equal(got[1], want[1])
