"""The offload engine never gives a wrong result and never changes the caller's data: views,
aliases, hidden writes and wrap-around subscripts keep loops off the parallel path; compiled
variants and plans refuse aliased arguments (or run the original when asked); the search
works on deep copies of every argument."""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of, verify
from hetlab.offload.targets.base import for_nodes

from . import _offload_soundness_corpus as corpus

numba = pytest.importorskip("numba")

#: corpus functions whose loops must not be called parallel (the sound ones come after)
TEMPTING = [n for n in corpus.CASES if n not in {
    "fresh_copy", "fresh_private_array", "reversed_index", "two_args", "pair_in_tuple",
    "reads_global"}]


def _run(fn, args):
    return outputs_of(fn(*args), args)


def _reversed(fn, index: int):
    """``fn`` with its ``index``-th loop (pre-order) run backwards, in ``fn``'s globals."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = list(for_nodes(tree.body[0].body))[index]
    node.iter = ast.Call(ast.Name("reversed", ast.Load()), [node.iter], [])
    ns = dict(fn.__globals__)
    exec(compile(ast.fix_missing_locations(tree), "<reversed>", "exec"), ns)
    return ns[fn.__name__]


@pytest.mark.parametrize("name", TEMPTING)
def test_tempting_loops_are_not_parallel(name):
    fn = corpus.CASES[name][0]
    for lp in offload.analyze(fn).loops:
        assert lp.verdict in ("sequential", "unsupported"), (name, lp.id, lp.why)
        assert lp.reasons, (name, lp.id)


@pytest.mark.parametrize("name", sorted(corpus.CASES))
def test_corpus_parallel_loops_are_order_independent_and_compile_equal(name, capsys):
    fn, make, aliased = corpus.CASES[name]
    report = offload.analyze(fn)
    par = [lp for lp in report.loops if lp.parallelizable]
    want = _run(fn, make())
    for lp in par:  # a parallel loop's iterations may run in any order: backwards too
        got = _run(_reversed(fn, lp.index), make())
        assert verify(got, want)[0], f"{name}: {lp.id} is {lp.verdict} but order-dependent"
    if not par:
        return
    compiled = offload.transform(report, [lp.id for lp in par]).compile()
    assert verify(_run(compiled, make()), want)[0], name
    for maker in aliased:  # the compiled variant refuses aliased arguments or equals
        try:
            got = _run(compiled, maker())
        except hl.InvalidInputError as exc:
            assert "share" in str(exc) or "overlap" in str(exc)
            continue
        assert verify(got, _run(fn, maker()))[0], f"{name}: aliased call differs"


# -- item 2: the per-call check of compiled variants and plans -------------------------------
def _shift(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] * 0.5 + 1.0


def _read_twice(out, x, y):
    for i in range(out.shape[0]):
        out[i] = x[i] + y[i]


def test_transformed_variant_refuses_aliased_arguments_and_names_them():
    fast = offload.transform(_shift, ["L1"]).compile()
    x = np.arange(8.0)
    before = x.copy()
    with pytest.raises(hl.InvalidInputError, match="arguments a and b share memory"):
        fast(x, x)
    with pytest.raises(hl.InvalidInputError, match=r"a and b share memory.*on_alias='serial'"):
        fast(x[1:], x[:-1])
    np.testing.assert_array_equal(x, before)  # refused before touching anything
    a, b = np.zeros(8), np.arange(8.0)
    fast(a, b)
    np.testing.assert_array_equal(a, b * 0.5 + 1.0)
    fast(x[::2], x[1::2])  # interleaved views share no element: allowed
    # read-only arguments may alias each other
    out, y = np.zeros(5), np.arange(5.0)
    offload.transform(_read_twice, ["L1"]).compile()(out, y, y)
    np.testing.assert_array_equal(out, 2 * y)
    with pytest.raises(hl.InvalidInputError, match="overlap one another"):
        fast(np.lib.stride_tricks.as_strided(np.zeros(8), (8,), (0,)), np.ones(8))


def test_serial_fallback_when_asked():
    v = offload.transform(_shift, ["L1"])
    x1, x2 = np.arange(9.0), np.arange(9.0)
    v.compile(on_alias="serial")(x2[1:], x2[:-1])
    _shift(x1[1:], x1[:-1])
    np.testing.assert_array_equal(x2, x1)
    with pytest.raises(hl.InvalidInputError, match="on_alias must be one of"):
        v.compile(on_alias="ignore")


def test_plan_compile_refuses_aliases_and_falls_back_when_asked():
    args = (np.zeros(16), np.arange(16.0))
    plan = offload.search(_shift, args, budget=1, progress=False, function_blocks=False,
                          ga=GAOptions(exhaustive=False),
                          measure=MeasureOptions(repeats=1, warmup=0, confirm=0))
    fast = plan.compile()
    x = np.arange(16.0)
    with pytest.raises(hl.InvalidInputError, match="share memory"):
        fast(x, x)
    with pytest.raises(hl.InvalidInputError, match="share memory"):
        fast(x[:-1], x[1:])
    want = np.arange(16.0)
    _shift(want[:-1], want[1:])
    plan.compile(on_alias="serial")(x[:-1], x[1:])
    np.testing.assert_array_equal(x, want)
    with pytest.raises(hl.InvalidInputError, match="arguments a and b share memory"):
        offload.search(_shift, (x, x), budget=1, progress=False)


# -- item 4: the search never changes the caller's data --------------------------------------
def _nested(pair, log, out):
    for i in range(out.shape[0]):
        out[i] = pair[0][i] * 2.0
    pair[1][:] = 0.0
    log.append(1.0)


def test_search_deep_copies_lists_and_arrays_in_tuples():
    pair = (np.arange(1.0, 9.0), np.arange(10.0, 18.0))
    log = [5.0]
    out = np.zeros(8)
    snapshot = copy.deepcopy((pair, log, out))
    plan = offload.search(_nested, (pair, log, out), budget=2, progress=False,
                          function_blocks=False, ga=GAOptions(exhaustive=False),
                          measure=MeasureOptions(repeats=1, warmup=0, confirm=0))
    for got, want in zip((pair[0], pair[1], out), (snapshot[0][0], snapshot[0][1],
                                                   snapshot[2]), strict=True):
        np.testing.assert_array_equal(got, want)
    assert log == snapshot[1]
    assert plan.verified and all(m.status == "ok" for m in plan.measurements.values())
    work = copy.deepcopy((pair, [5.0], out))
    plan.compile()(*work)
    np.testing.assert_array_equal(work[2], pair[0] * 2.0)
    np.testing.assert_array_equal(work[0][1], np.zeros(8))


def test_search_refuses_aliases_nested_in_tuples():
    x = np.arange(8.0)
    with pytest.raises(hl.InvalidInputError, match=r"share memory"):
        offload.search(_nested, ((x, x[:]), [], np.zeros(8)), budget=1, progress=False)


def _argmin_rows(points, centers, labels):
    for i in range(points.shape[0]):
        best = 0
        best_d2 = np.inf
        for c in range(centers.shape[0]):
            d2 = 0.0
            for f in range(points.shape[1]):
                diff = points[i, f] - centers[c, f]
                d2 += diff * diff
            if d2 < best_d2:
                best_d2 = d2
                best = c
        labels[i] = best


def _number_then_view(A, out):
    acc = 0.0
    for i in range(A.shape[0]):
        acc = A[i]  # now a row of A: writing acc writes A
        acc[0] = 5.0
        out[i] = acc[1]


def _number_copied_then_view(A, out):
    s = 0.0
    for i in range(A.shape[0]):
        t = s
        t = A[i]
        t[0] += 1.0
        out[i] = t[0]


def test_numbers_assigned_between_names_do_not_alias():
    """best_d2 = d2 between two locals that only ever hold numbers is a copy: the row loop
    is parallel (it was kept sequential as a possible alias)."""
    rep = offload.analyze(_argmin_rows)
    assert rep.loop("L1").verdict == "parallel", str(rep)


@pytest.mark.parametrize("fn", [_number_then_view, _number_copied_then_view])
def test_a_name_also_bound_to_a_view_is_not_a_number(fn):
    rep = offload.analyze(fn)
    assert rep.loop("L1").verdict != "parallel", str(rep)


def _fill_with_param(x, out, k):
    for i in range(1, x.shape[0] - 1):
        for j in range(x.shape[1]):
            out[i, j] = k


def _store_param_in_list_slot(lst, a):
    for i in range(len(lst)):
        lst[i] = a  # a list param now holds a itself (a reference), n times
        lst[i][0] += 1.0


def test_an_element_store_with_a_tuple_index_copies_a_parameter():
    """out[i, j] = k copies k (a tuple index is an array's: lists take none), so k and out
    do not alias and the fill loop is parallel; lst[i] = a keeps a reference (a list may
    hold a itself), so that loop stays sequential."""
    rep = offload.analyze(_fill_with_param)
    assert rep.loop("L1").verdict == "parallel", str(rep)
    rep = offload.analyze(_store_param_in_list_slot)
    assert rep.loop("L1").verdict != "parallel", str(rep)
