"""offload.analyze and offload.search on a third held-out probe
(tests/offload_corpus/heldout_probe3.py): kinds of computation the first two probes lack (CSR
rows, gathers/scatters, periodic stencils, pairwise forces, convolution, images, escape-time
loops, scans, symmetric updates, complex/float32 data, NumPy calls on row slices, refused
constructs, triangular solves, bit manipulation, masks, 3-D updates). Verdicts match the
semantics (a truly serial loop is never judged parallel; a conservative verdict is allowed only
where the probe names it a known limit); every plan gives the plain function's results at
n = 0, 1, 2 and an odd size; refused constructs say why and run as written."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of
from hetlab.offload.targets.base import wrap_like

from ._probe_checks import assert_decided, suite_function_names
from .offload_corpus import heldout_probe as hp1
from .offload_corpus import heldout_probe2 as hp2
from .offload_corpus import heldout_probe3 as hp
from .test_offload_heldout_probe2 import _same

pytest.importorskip("numba")

#: a small, quick search checked against the serial njit
QUICK = dict(targets=("numba",), budget=2, progress=False, reference="njit",
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))


def _agrees(probe, compiled, strict: bool = True) -> None:
    """``compiled`` gives the plain function's result on fresh inputs of every probe size."""
    for n in probe.sizes:
        want_args = probe.make(np.random.default_rng(n + 10), n)
        got_args = probe.make(np.random.default_rng(n + 10), n)
        want = outputs_of(probe.fn(*want_args), want_args)
        got = outputs_of(compiled(*got_args), got_args)
        assert (why := _same(got, want, strict)) is None, (n, why)


def test_the_probe_is_big_enough_and_new():
    assert len(hp.PROBES) >= 30
    seen = suite_function_names() | {p.fn.__name__
                                     for p in (*hp1.PROBES.values(), *hp2.PROBES.values())}
    assert not {p.fn.__name__ for p in hp.PROBES.values()} & seen


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_verdicts(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    assert_decided(report, probe)


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    plan = offload.search(probe.fn, probe.make(np.random.default_rng(0), probe.small), **QUICK)
    for lp_id in (*probe.serial, *probe.unsupported):
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    # a known limit may be lifted by what search knows of its arguments (array parameters)
    assert all(plan.report.loop(lp_id).parallelizable for lp_id in plan.loops)
    if plan.fallback:  # runs as written: the reason is in the plan and its summary
        assert plan.fallback in plan.summary() and not plan.loops
    # reference="njit": returned scalars are numba's (a Python float for an np.float64)
    _agrees(probe, plan.compile(), strict=False)


@pytest.mark.parametrize("name", sorted(n for n, p in hp.PROBES.items()
                                        if p.parallel or p.reduction))
def test_every_parallel_loop_alone_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    for lp in report.parallelizable:
        variant = offload.transform(report, [lp.id]).compile()
        _agrees(probe, wrap_like(probe.fn, variant), strict=False)


@pytest.mark.parametrize("name", sorted(n for n, p in hp.PROBES.items() if p.unsupported))
def test_refused_constructs_say_why(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    for lp_id in probe.unsupported:
        why = report.loop(lp_id).why
        assert "at line" in why and "unsupported:" in why, why
