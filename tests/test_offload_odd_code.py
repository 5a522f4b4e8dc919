"""offload.analyze and offload.search on code nobody wrote for them (tests/offload_corpus/
odd_code.py): never a raw exception, never a result that differs from the plain function's;
a function the engine leaves alone gets a plan that runs it as written, with the reason."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import HetlabError, InvalidInputError
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of
from hetlab.offload.targets.registry import get_target

from .offload_corpus import odd_code as oc

pytest.importorskip("numba")
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

#: a small, quick search: no confirmation round, no among-work timing, one timed call
QUICK = dict(targets=("numba",), budget=6, progress=False, ga=GAOptions(population=4,
             generations=2), measure=MeasureOptions(repeats=1, warmup=0, confirm=0,
                                                    among_work=0))
LINE = re.compile(r"unsupported: .+ at line \d+")


def _same(x, y) -> bool:
    """Exact equality of two outputs, NaN where NaN, tuples/lists/dicts element-wise (a
    float may differ by rounding: parallel sums reassociate)."""
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(map(_same, x, y))
    if isinstance(x, dict) or isinstance(y, dict):
        return isinstance(x, dict) and isinstance(y, dict) and set(x) == set(y) and all(
            _same(x[k], y[k]) for k in x)
    a, b = np.asarray(x), np.asarray(y)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(np.isnan(a), np.isnan(b))
                    and np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))
    return bool(np.array_equal(a, b))


def _outputs(fn, args):
    """Outputs and in-place effects of ``fn(*args)`` (a generator consumed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # int8 overflow in the plain function, on purpose
        result = fn(*args)
    if hasattr(result, "__next__"):
        result = list(result)
    return outputs_of(result, args)


def _agrees(fn, compiled, make, seed: int = 1) -> None:
    # two fresh, equal argument sets (made, not deep-copied: aliased ones stay aliased)
    want_args = make(np.random.default_rng(seed))
    got_args = make(np.random.default_rng(seed))
    want, got = _outputs(fn, want_args), _outputs(compiled, got_args)
    assert len(want) == len(got)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        assert _same(g, w), (k, g, w)


@pytest.mark.parametrize("name", sorted(oc.CASES))
def test_analyze_reports_every_loop(name):
    fn, _ = oc.CASES[name]
    report = offload.analyze(fn)
    for lp in report.loops:
        assert lp.verdict in ("parallel", "reduction", "sequential", "unsupported")
        if lp.verdict == "unsupported":
            assert lp.reasons and all(LINE.search(r) for r in lp.reasons), (lp.id, lp.reasons)
    for lp_id in oc.NOT_PARALLEL.get(name, ()):
        assert not report.loop(lp_id).parallelizable, (name, lp_id, report.loop(lp_id).why)
    str(report)  # the text view renders


@pytest.mark.parametrize("name", sorted(oc.CASES))
def test_search_plan_gives_the_plain_result(name):
    fn, make = oc.CASES[name]
    report = offload.analyze(fn)
    if not report.loops:
        pytest.skip("no loops")
    plan = offload.search(fn, make(np.random.default_rng(0)), **QUICK)
    for lp_id in oc.NOT_PARALLEL.get(name, ()):
        # a sequential loop runs in parallel only through a privatization (``out[idx[i]] +=
        # w[i]``: one copy of ``out`` per chunk, summed), when the search measured it faster
        assert lp_id not in plan.loops or lp_id in plan.report.transforms.privatizable()
    _agrees(fn, plan.compile(), make)
    if plan.fallback:  # left alone: runs the original, and says why
        assert not plan.loops
        assert plan.fallback in plan.summary() and plan.fallback in plan.notes[0]
        assert plan.source().startswith(f"# hetlab.offload: {report.name} runs as written")
        for dest in plan.table()["destination"]:  # loops compiled alone when that was faster
            assert dest == "host (as written)" or (plan.outlined and dest.startswith(
                "outlined into")), dest
        plan.destinations()
        assert plan.fallback in repr(plan)
    else:
        assert plan.verified


def _serial_njit_agrees(report, fn, make) -> bool:
    """Whether the serial njit compiles, runs and gives the plain function's result."""
    try:
        _agrees(fn, offload.transform(report).compile(), make, seed=2)
    except Exception:  # a TypingError, or an AssertionError: numba differs from Python
        return False
    return True


@pytest.mark.parametrize("name", sorted(oc.CASES))
def test_every_offloadable_loop_alone_gives_the_plain_result(name):
    """The search keeps only candidates verified on its own arguments; each loop the analysis
    lets run in parallel must also be right on other arguments, and compile wherever the
    serial njit does (where numba cannot compile the function or computes something else
    than Python, test_search_plan_gives_the_plain_result checks the plan runs it as
    written)."""
    fn, make = oc.CASES[name]
    report = offload.analyze(fn)
    genes = get_target("numba").genes(report)
    if not genes or report.refusals:
        pytest.skip("no loop to offload")
    if not _serial_njit_agrees(report, fn, make):  # its plan runs it as written (checked
        pytest.skip("numba differs from Python here")  # by the search test above)
    for gene in genes:
        _agrees(fn, offload.transform(report, [gene]).compile(), make, seed=2)


@pytest.mark.parametrize("name", sorted(oc.ALIASED))
def test_aliased_arguments_are_refused_or_run_as_written(name):
    fn, make, aliased = oc.ALIASED[name]
    with pytest.raises(InvalidInputError, match="share memory"):
        offload.search(fn, aliased(np.random.default_rng(0)), **QUICK)
    plan = offload.search(fn, make(np.random.default_rng(0)), **QUICK)
    _agrees(fn, plan.compile(), make)
    if not plan.fallback:
        with pytest.raises(InvalidInputError, match="share memory"):
            plan.compile()(*aliased(np.random.default_rng(1)))
    _agrees(fn, plan.compile(on_alias="serial"), aliased)


def test_left_alone_functions_say_why():
    cases = {"keyword_only": "keyword-only parameter shift", "star_args": "*arrays parameter",
             "star_kwargs": "**opts parameter", "bound_method": "bound method",
             "running_means": "generator function", "safe_ratios": "try statement"}
    for name, text in cases.items():
        fn, _ = oc.CASES[name]
        report = offload.analyze(fn)
        assert any(text in r for r in report.refusals), (name, report.refusals)
        assert all(lp.verdict == "unsupported" and text in lp.why for lp in report.loops)
        assert any(text in n for n in report.notes)
    # found only when numba tries: the reason names numba's error or the differing result
    for name, text in {"gammaln_loop": "does not compile", "int8_total": "another result",
                       "global_counter": "does not compile"}.items():
        fn, make = oc.CASES[name]
        plan = offload.search(fn, make(np.random.default_rng(0)), **QUICK)
        assert text in plan.fallback, (name, plan.fallback)


def test_bad_search_arguments_are_invalid_input():
    fn, make = oc.CASES["mirror"]
    args = make(np.random.default_rng(0))
    for bad in (dict(budget=-1), dict(budget=2.5), dict(targets="numba"),
                dict(targets=("nope",))):
        with pytest.raises(InvalidInputError):
            offload.search(fn, args, **{**QUICK, **bad})
    with pytest.raises(InvalidInputError, match=r"mirror takes 1 arguments \(a\); got [02]"):
        offload.search(fn, (*args, 1), **QUICK)
    with pytest.raises(InvalidInputError, match=r"mirror takes 1 arguments \(a\); got [02]"):
        offload.search(fn, (), **QUICK)
    with pytest.raises(InvalidInputError, match="args must be a tuple"):
        offload.search(fn, args[0], **QUICK)
    with pytest.raises(InvalidInputError, match="lambda"):
        offload.search(lambda a: a, args, **QUICK)
    # a parameter with a default may be left out; the plan takes it or not
    fn, make = oc.CASES["default_scale"]
    plan = offload.search(fn, make(np.random.default_rng(0)), **QUICK)
    x = make(np.random.default_rng(3))[0]
    np.testing.assert_array_equal(plan.compile()(x), fn(x))
    np.testing.assert_array_equal(plan.compile()(x, 0.5), fn(x, 0.5))


def test_a_function_that_raises_on_its_arguments_is_a_hetlab_error():
    fn, _ = oc.CASES["mirror"]
    with pytest.raises(HetlabError, match="raised"):
        offload.search(fn, (np.float64(1.0),), **QUICK)
