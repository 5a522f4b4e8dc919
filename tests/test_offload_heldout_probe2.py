"""offload.analyze and offload.search on a second held-out probe
(tests/offload_corpus/heldout_probe2.py): the same computations written the many ways Python is
written. Every plan — and every loop the analysis lets run in parallel, alone — gives the plain
function's outputs, in-place effects, result types and NaN positions on fresh inputs; refused
constructs run as written and say why; obviously parallel loops are called parallel, loops with
a dependence never run in parallel."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of
from hetlab.offload.targets.base import wrap_like

from ._probe_checks import assert_verdicts, suite_function_names
from .offload_corpus import heldout_probe as hp1
from .offload_corpus import heldout_probe2 as hp

pytest.importorskip("numba")

#: a small, quick search: no confirmation round, no among-work timing, one timed call
QUICK = dict(targets=("numba",), budget=3, progress=False,
             ga=GAOptions(population=3, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))


def _same(got, want, strict: bool = True) -> str | None:
    """None when ``got`` is ``want``: same structure, same type of scalar (a Python int stays
    an int, a NumPy float32 a float32), same dtype and shape, NaN where NaN, floats within what
    reassociating a sum changes; otherwise what differs. ``strict=False``: a returned scalar
    only of the same kind (a bare variant returns numba's Python scalars; a plan restores the
    NumPy scalar types)."""
    if isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{type(got).__name__} of {len(got)} vs {type(want).__name__}"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            if (why := _same(g, w, strict)) is not None:
                return f"[{k}] {why}"
        return None
    if strict and (want is None or isinstance(want, (bool, int, float))):
        if type(got) is not type(want):
            return f"type {type(got).__name__} vs {type(want).__name__}"
    a, b = np.asarray(got), np.asarray(want)
    # numba sums float32 from ``s = 0.0`` in float64, NumPy in float32
    rtol = 1e-4 if np.float32 in (a.dtype, b.dtype) else 1e-9
    if not strict and b.ndim == 0:
        b = b.astype(a.dtype) if a.dtype.kind == b.dtype.kind else b
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    if a.dtype.kind in "fc":
        ok = (np.array_equal(np.isnan(a), np.isnan(b))
              and np.allclose(a, b, rtol=rtol, atol=rtol * 1e-3, equal_nan=True))
    else:
        ok = np.array_equal(a, b)
    return None if ok else f"values differ: {a!r} vs {b!r}"


def _agrees(probe, compiled, strict: bool = True) -> None:
    """``compiled`` gives the plain function's result on fresh inputs of two sizes."""
    for seed, n in ((1, probe.small), (2, probe.small + 3)):
        want_args = probe.make(np.random.default_rng(seed), n)
        got_args = probe.make(np.random.default_rng(seed), n)
        want = outputs_of(probe.fn(*want_args, **probe.kwargs), want_args)
        got = outputs_of(compiled(*got_args, **probe.kwargs), got_args)
        assert (why := _same(got, want, strict)) is None, (n, why)


def _search_args(probe):
    args = probe.make(np.random.default_rng(0), probe.small)
    if probe.alias_refused:  # searched on distinct copies, called on the aliased ones
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    return args


def test_the_probe_is_big_enough_and_new():
    assert len(hp.PROBES) >= 25
    seen = suite_function_names() | {p.fn.__name__ for p in hp1.PROBES.values()}
    assert len(seen) > 31 + 40
    assert not {p.fn.__name__ for p in hp.PROBES.values()} & seen


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_verdicts(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    assert_verdicts(report, probe)


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    plan = offload.search(probe.fn, _search_args(probe), **QUICK)
    for lp_id in (*probe.serial, *probe.unsupported):
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    if plan.fallback:  # runs as written: the reason is in the plan and its summary
        assert plan.fallback in plan.summary() and not plan.loops
    if probe.alias_refused:
        with pytest.raises(InvalidInputError, match="share memory"):
            offload.search(probe.fn, probe.make(np.random.default_rng(0), probe.small),
                           **QUICK)
        _agrees(probe, plan.compile(on_alias="serial"))
        return
    _agrees(probe, plan.compile())


@pytest.mark.parametrize("name", sorted(n for n, p in hp.PROBES.items()
                                        if p.parallel or p.reduction))
def test_every_parallel_loop_alone_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    assert report.parallelizable
    for lp in report.parallelizable:  # a bare variant takes positional arguments only
        variant = offload.transform(report, [lp.id]).compile(
            on_alias="serial" if probe.alias_refused else "raise")
        _agrees(probe, wrap_like(probe.fn, variant), strict=False)


def test_refused_loops_run_as_written_and_say_why():
    brk = offload.analyze(hp.first_above)
    assert "break at line" in brk.loop("L1").why
    plan = offload.search(hp.first_above, (np.arange(10.0), 4.5), **QUICK)
    assert plan.compile()(np.arange(10.0), 4.5) == 5 and not plan.loops
