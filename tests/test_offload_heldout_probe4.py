"""offload.analyze and offload.search on a fourth held-out probe
(tests/offload_corpus/heldout_probe4.py): classic dense linear-algebra, stencil, data-mining and
dynamic-programming kernels spelled differently from the suite and the earlier probes, each
with an answer key (the expert numba version). Verdicts match the semantics (a truly serial
loop is never judged parallel; a conservative verdict only where the probe names it a known
limit); the search's plan and ``plan.compile()`` give the plain function's results on fresh
inputs of small and odd sizes; every answer key gives the plain function's results."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of

from ._probe_checks import assert_decided, suite_function_names
from .offload_corpus import heldout_probe as hp1
from .offload_corpus import heldout_probe2 as hp2
from .offload_corpus import heldout_probe3 as hp3
from .offload_corpus import heldout_probe4 as hp
from .test_offload_heldout_probe2 import _same

pytest.importorskip("numba")

#: a small, quick search checked against the serial njit
QUICK = dict(targets=("numba",), budget=2, progress=False, reference="njit",
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))


def _agrees(probe, compiled, sizes) -> None:
    """``compiled`` gives the plain function's result on fresh inputs of every size."""
    for n in sizes:
        want_args = probe.make(np.random.default_rng(n + 20), n)
        got_args = probe.make(np.random.default_rng(n + 20), n)
        want = outputs_of(probe.fn(*want_args), want_args)
        got = outputs_of(compiled(*got_args), got_args)
        assert (why := _same(got, want, strict=False)) is None, (n, why)


def test_the_probe_is_big_enough_and_new():
    assert len(hp.PROBES) >= 24
    assert all(p.key is not None for p in hp.PROBES.values())
    seen = suite_function_names() | {p.fn.__name__ for m in (hp1, hp2, hp3)
                                     for p in m.PROBES.values()}
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
    for lp_id in probe.serial:
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    assert all(plan.report.loop(lp_id).parallelizable for lp_id in plan.loops)
    _agrees(probe, plan.compile(), (*probe.sizes, probe.small + 3))


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_the_answer_key_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    _agrees(probe, probe.key, (*probe.sizes, probe.small + 3))
