"""Invariant ``%``/``//`` index arithmetic computed once before its loop in the numba variant
(:mod:`hetlab.offload.analysis.transforms.hoist`): hoisted where it reads nothing the loop
changes, guarded by the loop's bounds, and the variant gives the plain function's results;
kept in place otherwise."""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.transforms.hoist import hoist_invariant_indices
from hetlab.offload.targets.numba import NumbaTarget
from tests.offload_corpus.heldout_probe5 import conv2d_periodic_mod


def blocked_gather(x, idx_len, out, m):
    """out[i] = Σ_b x[(i // 4) % idx_len, (b + i) % m]: the row index is invariant in b."""
    for i in range(out.shape[0]):
        s = 0.0
        for b in range(m):
            s += x[(i // 4) % idx_len, (b + i) % m]
        out[i] = s


def blocked_columns(A, out, bs):
    """out[i, j] = Σ_k A[i // bs, (j + k) % m] over a 5-wide window: block rows, wrapped
    columns (A (p, m), out (n, m) float64; bs rows of out per row of A). Also timed by
    ``benchmarks/offload_hoist_ab.py``."""
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            s = 0.0
            for k in range(5):
                s += A[i // bs, (j + k) % m]
            out[i, j] = s


def mod_by_zero_when_empty(x, out, m, d):
    """Python never evaluates ``% d`` when ``m == 0``: the hoisted index must not either."""
    for i in range(out.shape[0]):
        for b in range(m):
            out[i, b] += x[(i + 1) % d, b]


def reversed_inner(x, out, n):
    for i in range(out.shape[0]):
        for b in range(n - 1, -1, -1):
            out[i] += b * x[(i + 3) // 2 % x.shape[0]]


def assigned_inside(x, out):
    for i in range(out.shape[0]):
        t = i
        for b in range(4):
            t = t + b
            out[i] += x[(t + 1) % x.shape[0]]  # t changes in the b loop: kept


def element_in_index(x, idx, out):
    for i in range(out.shape[0]):
        for b in range(3):
            out[i] += x[idx[i] % (x.shape[0] - 3) + b]  # an array element: kept


def opaque_bounds(x, out, m):
    for i in range(out.shape[0]):
        for b in range(abs(m - 1) + len(x) // 9):
            out[i] += x[(i + 1) % x.shape[0] - b] * b


def growing_list(x, out):
    seen = [0]
    for i in range(out.shape[0]):
        for b in range(3):
            seen.append(b)
            out[i] += x[len(seen) % x.shape[0], b]  # len(seen) grows in the b loop: kept


def _tree(fn) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def _agrees(fn, args, loops=("L1",)) -> str:
    """The variant's source, after checking it gives Python's outputs (two threads)."""
    plan = offload.transform(offload.analyze(fn), loops=list(loops))
    want, got = copy.deepcopy(args), copy.deepcopy(args)
    r_want = fn(*want)
    r_got = plan.compile()(*got)
    assert r_got == r_want
    for w, g in zip(want, got, strict=True):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
    return plan.source


G = np.random.default_rng(5)


def test_periodic_convolution_row_index_hoisted():
    img, ker = G.random((13, 11)), G.random((3, 3))
    src = _agrees(conv2d_periodic_mod, [img, ker, np.zeros((13, 11))])
    assert "= (i + a - 1 + h) % h\n" in src  # constant bounds range(3): no guard
    assert "img[_hl_h" in src and "(j + b - 1 + w) % w]" in src
    assert src.count("invariant index (i + a - 1 + h) % h computed once") == 1  # 2 branches


@pytest.mark.parametrize("m", [0, 1, 5])
def test_guarded_by_the_loop_bounds(m):
    src = _agrees(blocked_gather, [G.random((3, 5)), 3, np.zeros(17), m])
    assert "= i // 4 % idx_len if 0 < m else 0\n" in src


@pytest.mark.parametrize("m", [0, 7])
def test_moved_as_far_out_as_it_is_invariant(m):
    """``i // bs`` does not change in the ``k`` loop nor in the ``j`` loop: it moves before
    the ``j`` loop, under ``j``'s guard (``i``, in ``prange``, keeps it)."""
    src = _agrees(blocked_columns, [G.random((3, max(m, 1))), np.zeros((9, m)), 4])
    body = src[src.index("else:"):]  # the nest as written (not the collapsed form)
    assert "_hl_h0 = i // bs if 0 < m else 0\n" in body
    assert body.index("_hl_h0 = i // bs") < body.index("for j in range(m)")
    assert "moved before it" in src


def test_a_zero_divisor_raises_only_where_python_does():
    args = [G.random((4, 0)), np.zeros((6, 0)), 0, 0]  # m == 0: the loop never runs, % 0 never done
    _agrees(mod_by_zero_when_empty, args)
    # serial (numba's prange bodies do not raise it: the parallel variant, hoisted or not,
    # computes on), and with the pass applied: the guard lets the loop's run raise
    plan = NumbaTarget().generate(offload.analyze(mod_by_zero_when_empty), (), transforms=True)
    assert "_hl_h0 = (i + 1) % d if 0 < m else 0" in plan.source
    with pytest.raises(ZeroDivisionError):
        plan.compile()(G.random((4, 2)), np.zeros((6, 2)), 2, 0)


def test_reversed_range_guard():
    src = _agrees(reversed_inner, [G.random(7), np.zeros(9), 4])
    assert "= (i + 3) // 2 % x.shape[0] if n - 1 > -1 else 0\n" in src


@pytest.mark.parametrize("fn, args", [
    (assigned_inside, [G.random(9), np.zeros(5)]),
    (element_in_index, [G.random(9), np.arange(5) * 7, np.zeros(5)]),
])
def test_kept_when_the_loop_may_change_it(fn, args):
    src = _agrees(fn, args)
    assert "_hl_h" not in src


def test_kept_when_a_method_call_may_change_a_length():
    assert hoist_invariant_indices(_tree(growing_list)) == []


def test_shapes_and_lengths_in_bounds_and_indices():
    src = _agrees(opaque_bounds, [G.random(20), np.zeros(6), -3])
    assert "= (i + 1) % x.shape[0] if 0 < abs(m - 1) + len(x) // 9 else 0\n" in src


def test_kept_when_the_bounds_are_not_plain():
    assert len(hoist_invariant_indices(_tree(opaque_bounds))) == 1  # as written: hoisted
    tree = _tree(opaque_bounds)
    inner = tree.body[0].body[0]  # type: ignore[attr-defined]
    assert isinstance(inner, ast.For)
    inner.iter.args[0] = ast.parse("f(m)", mode="eval").body  # type: ignore[attr-defined]
    assert hoist_invariant_indices(tree) == []


def test_not_out_of_prange_loops():
    tree = _tree(blocked_gather)
    outer = tree.body[1]  # after the docstring
    assert isinstance(outer, ast.For) and isinstance(outer.body[1], ast.For)
    outer.body[1].iter.func = ast.Name("prange", ast.Load())  # type: ignore[attr-defined]
    assert hoist_invariant_indices(tree) == []
    outer.body[1].iter.func = ast.Name("range", ast.Load())  # type: ignore[attr-defined]
    assert len(hoist_invariant_indices(tree)) == 1


def test_a_copy_of_the_prange_index_assigned_again_compiles():
    """``t = i`` then ``t = t + b`` in a prange body: numba refused the variant ("Overwrite
    of parallel loop index"); the copy is written ``t = i + 0``."""
    src = _agrees(assigned_inside, [G.random(9), np.zeros(5)])
    assert "t = i + 0" in src and "written i + 0" in src
