"""offload.analyze, offload.transform and offload.search on a fifth held-out probe
(tests/offload_corpus/heldout_probe5.py): float32/int64 data, Fortran and strided arguments,
``while`` loops around nests, stepped and reverse ranges, zip/enumerate, carried scalars,
conditional arg-extrema, histograms, CSR products, periodic and clamped convolutions, scans and
an early ``break``, each with an answer key. Verdicts match the semantics (a truly serial loop
is never judged parallel); every loop the analysis lets run in parallel, alone, every function
block alone, and the plan ``offload.search`` keeps give the plain function's results on fresh
inputs of small and odd sizes; every answer key gives the plain function's results."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of

from ._probe_checks import assert_decided, search_genes, suite_function_names
from .offload_corpus import heldout_probe as hp1
from .offload_corpus import heldout_probe2 as hp2
from .offload_corpus import heldout_probe3 as hp3
from .offload_corpus import heldout_probe4 as hp4
from .offload_corpus import heldout_probe5 as hp
from .test_offload_heldout_probe2 import _same

pytest.importorskip("numba")

#: a small, quick search checked against the serial njit
QUICK = dict(targets=("numba",), budget=2, progress=False, reference="njit",
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))

#: (kernel, "L…" or "B…") whose variant gives another result than the plain function: known
#: bugs of the engine, each with its diagnosis (the test documents them, strict xfail). The
#: probe found two more, fixed since: min_abs_gap's L1 (a reduction numba dropped,
#: analysis/transforms/partials.py) and decayed_running_sum's B1 (an axpy block matched on a
#: recurrence, analysis/expand.py); their reproducers are the regression tests at the end
KNOWN_WRONG: dict[tuple[str, str], str] = {
    ("int64_matvec", "B1"): (
        "a matvec block offered on int64 arrays: `out[...] = a @ b` does not type in numba "
        "(no integer @); transform's variant raises TypingError at the first call "
        "(documented: blocks are for float arrays; the search drops the candidate)"),
}


def _agrees(probe, compiled, sizes) -> None:
    """``compiled`` gives the plain function's result on fresh inputs of every size."""
    for n in sizes:
        want_args = probe.make(np.random.default_rng(n + 50), n)
        got_args = probe.make(np.random.default_rng(n + 50), n)
        want = outputs_of(probe.fn(*want_args), want_args)
        got = outputs_of(compiled(*got_args), got_args)
        assert (why := _same(got, want, strict=False)) is None, (n, why)


def _report(probe):
    """The report ``search`` works from: the parameters given NumPy arrays named as arrays."""
    args = probe.make(np.random.default_rng(0), probe.small)
    params = inspect.signature(probe.fn).parameters
    return offload.analyze(probe.fn, arrays=[p for p, a in zip(params, args, strict=False)
                                             if isinstance(a, np.ndarray)])


def _choices() -> list:
    """(kernel, what) for every loop the search may choose and every function block."""
    out = []
    for name in sorted(hp.PROBES):
        report = _report(hp.PROBES[name])
        for what in search_genes(report) + [b.id for b in report.blocks]:
            mark = KNOWN_WRONG.get((name, what))
            out.append(pytest.param(name, what, id=f"{name}-{what}", marks=(
                [pytest.mark.xfail(strict=True, reason=mark)] if mark else [])))
    return out


def test_the_probe_is_big_enough_and_new():
    assert len(hp.PROBES) == 30
    assert all(p.key is not None and p.fn.__doc__ for p in hp.PROBES.values())
    seen = suite_function_names() | {p.fn.__name__ for m in (hp1, hp2, hp3, hp4)
                                     for p in m.PROBES.values()}
    assert not {p.fn.__name__ for p in hp.PROBES.values()} & seen


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_verdicts(name):
    probe = hp.PROBES[name]
    for report in (offload.analyze(probe.fn), _report(probe)):
        assert_decided(report, probe)


CHOICES = _choices()


@pytest.mark.parametrize(("name", "what"), CHOICES)
def test_each_parallel_loop_and_block_alone(name, what):
    """What the search may choose, one at a time: the variant gives the plain result."""
    probe = hp.PROBES[name]
    report = _report(probe)
    chosen = dict(blocks=[what]) if what.startswith("B") else dict(loops=[what])
    variant = offload.transform(report, **chosen)
    _agrees(probe, variant.compile(), (*probe.sizes, probe.small + 3))


def _fixed_serial(report):
    """The serial njit with the fixed passes (interchange, scalar replacement, unsigned
    indices), a candidate of its own in the search; None where no pass applies."""
    from hetlab.offload.targets.numba import NumbaTarget

    return NumbaTarget().fixed_serial(report)


@pytest.mark.parametrize("name", [n for n in sorted(hp.PROBES)
                                  if _fixed_serial(_report(hp.PROBES[n])) is not None])
def test_the_fixed_passes_alone(name):
    probe = hp.PROBES[name]
    _agrees(probe, _fixed_serial(_report(probe)).compile(), (*probe.sizes, probe.small + 3))


#: kernels with a loop the search may parallelize or a block it may replace (the others' plans
#: are the serial njit, which test_each_parallel_loop_and_block_alone does not need to build)
SEARCHED = sorted({c.values[0] for c in CHOICES})


@pytest.mark.parametrize("name", SEARCHED)
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    plan = offload.search(probe.fn, probe.make(np.random.default_rng(0), probe.small), **QUICK)
    for lp_id in probe.serial:
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    assert set(plan.loops) <= set(search_genes(plan.report))
    _agrees(probe, plan.compile(), (*probe.sizes, probe.small + 3))


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_the_answer_key_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    _agrees(probe, probe.key, (*probe.sizes, probe.small + 3))


# -- the probe's reproducers of the bugs it found (fixed; the minimal ones, with the recurrence
# that was an axpy block, are in tests/test_offload_partials.py) -------------------------------
def potential_energy(pos, m):
    """Softened pair potential of 2-D particles over i < j (the outer loop's scalar reads
    m[i], pos[i, 0], pos[i, 1] are hoisted by scalar replacement behind ``if i + 1 < n``)."""
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            e -= m[i] * m[j] / math.sqrt(dx * dx + dy * dy + 0.01)
    return e


@pytest.mark.parametrize(("fn", "args"), [
    (potential_energy, (np.arange(10.0).reshape(5, 2) / 7.0, np.arange(1.0, 6.0))),
], ids=["pair-potential"])
def test_outer_loop_of_a_nested_reduction_alone(fn, args):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "reduction"
    got = offload.transform(report, loops=["L1"]).compile()(*args)
    assert got == pytest.approx(fn(*args))
