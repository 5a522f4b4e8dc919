"""Index scalars (issue 17): ``idx = i * n + j; out[idx] = …``, ``base = i * n`` in the outer
loop, ``k = 2 * i + 1``, ``lo = i + 1; for j in range(lo, n)`` are substituted into the
subscripts and inner bounds that read them, so the dependence test sees the index itself.
Positive cases become parallel and their prange variant gives the plain result; the rewritten
function computes what the original does; a scalar whose inputs change before the read, or
that is stored again, is left alone."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.front.indices import substitute_indices
from hetlab.offload.front.source import read_function

from ._source_modules import load_source


def index_in_a_scalar(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            idx = i * n + j
            out[idx] = A[i, j] * 2.0


def row_base_outside(A, out):
    m, n = A.shape
    for i in range(m):
        base = i * n
        for j in range(n):
            out[base + j] = A[i, j] - 1.0


def chained_scalars(A, out):
    m, n = A.shape
    for i in range(m):
        row = i * n
        for j in range(n):
            at = row + j
            out[at] = A[i, j] + at


def odd_slots(x, out):
    n = x.shape[0]
    for i in range(n):
        k = 2 * i + 1
        out[k] = x[i] * 3.0
        out[k - 1] = x[i]


def upper_from_a_start(A):
    n = A.shape[0]
    for i in range(n):
        lo = i + 1
        for j in range(lo, n):
            A[i, j] = A[i, j] + A[j, i]


def index_in_a_branch(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            if A[i, j] > 0.5:
                idx = i * n + j
                out[idx] = A[i, j]
            else:
                out[i * n + j] = -1.0


def _mat(rng, m, n):
    return rng.random((m, n))


POSITIVE = {  # name: (function, loops now parallel, inputs for size (m, n))
    "index_in_a_scalar": (index_in_a_scalar, ("L1", "L2"),
                          lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "row_base_outside": (row_base_outside, ("L1", "L2"),
                         lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "chained_scalars": (chained_scalars, ("L1", "L2"),
                        lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "index_in_a_branch": (index_in_a_branch, ("L1", "L2"),
                          lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "odd_slots": (odd_slots, ("L1",), lambda r, m, n: (r.random(m), np.zeros(2 * m))),
    "upper_from_a_start": (upper_from_a_start, ("L1",),
                           lambda r, m, n: (_mat(r, m + 1, m + 1),)),
}

SIZES = ((0, 0), (1, 1), (1, 4), (5, 3), (6, 7))


def _agrees(fn, other, make, sizes=SIZES) -> None:
    """``other`` leaves the arguments as ``fn`` does and returns what it returns, at every
    ``(m, n)`` of ``sizes``."""
    for m, n in sizes:
        want = make(np.random.default_rng(m * 10 + n), m, n)
        got = make(np.random.default_rng(m * 10 + n), m, n)
        assert fn(*want) == other(*got)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"m={m} n={n}")


def _rewritten(fn):
    """The function as the analysis reads it (every front pass applied), compiled by Python."""
    src = read_function(fn)
    ns = dict(fn.__globals__)
    exec(compile(ast.Module([src.tree], []), "<rewritten>", "exec"), ns)
    return ns[fn.__name__], ast.unparse(src.tree)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_index_scalars_make_the_loops_parallel(name):
    fn, loops, _ = POSITIVE[name]
    report = offload.analyze(fn)
    for lp in loops:
        assert report.loop(lp).verdict == "parallel", (lp, report.loop(lp).reasons)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_the_rewritten_function_computes_the_same(name):
    fn, _, make = POSITIVE[name]
    rewritten, _ = _rewritten(fn)
    _agrees(fn, rewritten, make)


@pytest.mark.parametrize("name", ["index_in_a_scalar", "chained_scalars", "odd_slots",
                                  "upper_from_a_start"])
def test_the_prange_variant_gives_the_plain_result(name):
    pytest.importorskip("numba")
    fn, loops, make = POSITIVE[name]
    variant = offload.transform(offload.analyze(fn), [loops[0]])
    assert "prange" in variant.source
    _agrees(fn, variant.compile(), make)


# -- left alone ----------------------------------------------------------------------------
_LEFT_ALONE = {
    "an input of the definition changes first": '''
def k(x, out):
    off = 0
    for i in range(x.shape[0]):
        at = i + off
        off = off + i % 2
        out[at] = x[i]
''',
    "the scalar is stored again": '''
def k(x, out):
    for i in range(x.shape[0]):
        at = i
        for j in range(2):
            at = at + j
        out[at] = x[i]
''',
    "the scalar reads itself": '''
def k(x, out):
    at = 0
    for i in range(x.shape[0]):
        at = (at + i) % 7
        out[at] = x[i]
''',
    "an array element is no index expression": '''
def k(x, perm, out):
    for i in range(x.shape[0]):
        at = perm[i]
        out[at] = x[i]
''',
    "under an if": '''
def k(x, out):
    for i in range(x.shape[0]):
        if i > 0:
            at = 2 * i
        else:
            at = 0
        out[at] = x[i]
''',
}


@pytest.mark.parametrize("why", sorted(_LEFT_ALONE))
def test_a_scalar_that_may_differ_at_the_read_is_left_alone(why):
    tree = ast.parse(_LEFT_ALONE[why]).body[0]
    assert substitute_indices(tree) == 0
    fn = load_source(_LEFT_ALONE[why], prefix="indices")
    assert offload.analyze(fn).loop("L1").verdict == "sequential"


def test_reads_outside_subscripts_and_bounds_keep_the_scalar():
    _, text = _rewritten(chained_scalars)
    assert "at = i * n + j" in text  # the assignment stays
    assert "out[i * n + j] = A[i, j] + at" in text  # a value read keeps the scalar
