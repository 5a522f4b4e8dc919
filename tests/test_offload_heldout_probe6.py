"""offload.analyze, offload.transform and offload.search on a sixth held-out probe
(tests/offload_corpus/heldout_probe6.py): Python idioms and program shapes — module-level helpers
(pure, tuple-returning, writing their argument), a module constant, keyword defaults,
``continue`` and an early ``return``, ``while`` loops with their own counters,
``reversed(range(n))`` and ``range(n - 1, -1, -1)``, buffer swaps and a fresh array per time
step, a red-black sweep, wavefront and backward DP tables, scratch rows inside and outside the
loop, 3-D arrays with ``shape[-1]``, ``x.size``/``len(x)``, complex128, boolean masks, integer
bit operations, ternaries, returned tuples and counts, chained stores ``K[i, j] = K[j, i] = v``,
``for row in A`` with a counter and a lag ``x[i - k]`` given at run time, each with an answer
key. Verdicts match the semantics (a truly serial loop is never judged parallel); every loop the
analysis lets run in parallel, alone, every function block alone, and the plan
``offload.search`` keeps give the plain function's results on fresh inputs of small and odd
sizes; every answer key gives the plain function's results."""

from __future__ import annotations

import inspect

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
from .offload_corpus import heldout_probe5 as hp5
from .offload_corpus import heldout_probe6 as hp
from .test_offload_heldout_probe2 import _same

pytest.importorskip("numba")

#: a small, quick search checked against the serial njit
QUICK = dict(targets=("numba",), budget=2, progress=False, reference="njit",
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))

#: (kernel, "L…"/"B…"/"verdict"/"search") that is WRONG today: known bugs of the engine, each with
#: its diagnosis (the tests document them, strict xfail). The probe's one finding, a helper
#: whose body is ``dst += src`` taken for pure (row_prefix_via_helper's L1 judged parallel, its
#: prange variant wrong), is fixed in front/helpers.py (_updates_in_place_safely).
KNOWN_WRONG: dict[tuple[str, str], str] = {}


def _xfail(name: str, what: str) -> list:
    mark = KNOWN_WRONG.get((name, what))
    return [pytest.mark.xfail(strict=True, reason=mark)] if mark else []


def _agrees(probe, compiled, sizes) -> None:
    """``compiled`` gives the plain function's result on fresh inputs of every size (keyword
    arguments bound to positions: compiled variants take positional arguments)."""
    for n in sizes:
        want_args = probe.make(np.random.default_rng(n + 60), n)
        got_args = probe.make(np.random.default_rng(n + 60), n)
        want = outputs_of(probe.fn(*want_args, **probe.kwargs), want_args)
        bound = inspect.signature(probe.fn).bind(*got_args, **probe.kwargs)
        bound.apply_defaults()
        got = outputs_of(compiled(*bound.args), got_args)
        assert (why := _same(got, want, strict=False)) is None, (n, why)


def _report(probe):
    """The report ``search`` works from: the parameters given NumPy arrays named as arrays of
    their rank (``searching/driver.py``)."""
    args = probe.make(np.random.default_rng(0), probe.small)
    params = inspect.signature(probe.fn).parameters
    return offload.analyze(probe.fn, arrays={
        p: a.ndim if a.dtype.kind in "biufc" else -1
        for p, a in zip(params, args, strict=False) if isinstance(a, np.ndarray)})


def _choices() -> list:
    """(kernel, what) for every loop the search may choose and every function block."""
    out = []
    for name in sorted(hp.PROBES):
        report = _report(hp.PROBES[name])
        for what in search_genes(report) + [b.id for b in report.blocks]:
            out.append(pytest.param(name, what, id=f"{name}-{what}", marks=_xfail(name, what)))
    return out


def test_the_probe_is_big_enough_and_new():
    assert len(hp.PROBES) == 30
    assert all(p.key is not None and p.fn.__doc__ for p in hp.PROBES.values())
    seen = suite_function_names() | {p.fn.__name__ for m in (hp1, hp2, hp3, hp4, hp5)
                                     for p in m.PROBES.values()}
    assert not {p.fn.__name__ for p in hp.PROBES.values()} & seen


@pytest.mark.parametrize("name", [pytest.param(n, marks=_xfail(n, "verdict"))
                                  for n in sorted(hp.PROBES)])
def test_verdicts(name):
    """The search's report (ranks known) has every verdict; ``analyze(fn)`` alone, which may
    not know a subscript reads a number, never calls a serial loop parallel either."""
    probe = hp.PROBES[name]
    plain, ranked = offload.analyze(probe.fn), _report(probe)
    for lp_id in probe.serial:
        assert not plain.loop(lp_id).parallelizable, (lp_id, plain.loop(lp_id).why)
    assert_decided(ranked, probe)


CHOICES = _choices()


@pytest.mark.parametrize(("name", "what"), CHOICES)
def test_each_parallel_loop_and_block_alone(name, what):
    """What the search may choose, one at a time: never a loop that carries a dependence
    (unless privatizing its scratch arrays removes it; checked first: a race shows in the
    results only now and then), and the variant gives the plain result."""
    probe = hp.PROBES[name]
    report = _report(probe)
    assert what not in probe.serial or what in report.transforms.privatizable(), \
        f"{what} carries a dependence but is offered in parallel"
    chosen = dict(blocks=[what]) if what.startswith("B") else dict(loops=[what])
    variant = offload.transform(report, **chosen)
    _agrees(probe, variant.compile(), (*probe.sizes, probe.small + 3))


def test_every_parallel_loop_together():
    """Every parallelizable loop of a kernel at once (what a greedy plan would take), on the
    kernels with more than one: the nests numba sees with prange inside prange."""
    for name, probe in sorted(hp.PROBES.items()):
        report = _report(probe)
        loops = [lp.id for lp in report.loops if lp.parallelizable]
        if len(loops) < 2 or (name, "verdict") in KNOWN_WRONG:
            continue
        _agrees(probe, offload.transform(report, loops=loops).compile(), probe.sizes)


#: kernels with a loop the search may parallelize or a block it may replace
SEARCHED = sorted({c.values[0] for c in CHOICES})


@pytest.mark.parametrize("name", SEARCHED)
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    args = probe.make(np.random.default_rng(0), probe.small)
    plan = offload.search(probe.fn, _bound(probe, args), **QUICK)
    for lp_id in probe.serial:
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    assert set(plan.loops) <= set(search_genes(plan.report))
    _agrees(probe, plan.compile(), (*probe.sizes, probe.small + 3))


def _bound(probe, args):
    """``args`` with the probe's keyword arguments bound to their positions."""
    bound = inspect.signature(probe.fn).bind(*args, **probe.kwargs)
    bound.apply_defaults()
    return tuple(bound.args)


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_the_answer_key_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    _agrees(probe, probe.key, (*probe.sizes, probe.small + 3))


# -- the probe's reproducers of the bug it found (fixed) ----------------------------------------
def _add_into(dst, src):
    dst += src


def _add_through_local(dst, src):
    t = dst
    t += src


def _double(v):
    v *= 2.0


def rows_prefix_helper(A):
    """Row i += row i - 1 through ``_add_into`` (a recurrence over i)."""
    for i in range(1, A.shape[0]):
        _add_into(A[i], A[i - 1])


def rows_prefix_helper_local(A):
    """The same through a local bound to the parameter (``t = dst; t += src``)."""
    for i in range(1, A.shape[0]):
        _add_through_local(A[i], A[i - 1])


def overlapping_doubling(x):
    """x[i - 1:i + 1] doubled in place by a helper: neighbouring iterations share an element
    (each element doubled twice: a read-modify-write race in parallel)."""
    for i in range(1, x.shape[0]):
        _double(x[i - 1:i + 1])


@pytest.mark.parametrize("fn", [rows_prefix_helper, rows_prefix_helper_local,
                                overlapping_doubling])
def test_a_helper_writing_its_argument_in_place_keeps_the_loop_serial(fn):
    for report in (offload.analyze(fn), offload.analyze(fn, arrays={"A": 2, "x": 1})):
        assert not report.loop("L1").parallelizable, report.loop("L1").why


def _sum_of(v):
    s = 0.0
    for k in range(v.shape[0]):
        s += v[k]
    return s


def _scaled_copy(v, c):
    acc = np.zeros(v.shape[0])
    acc += v
    acc *= c
    return acc


def row_sums_by_helpers(A, out, B):
    for i in range(A.shape[0]):
        out[i] = _sum_of(A[i])
        B[i, :] = _scaled_copy(A[i], 2.0)


def test_a_helper_updating_its_own_numbers_and_arrays_stays_pure():
    report = offload.analyze(row_sums_by_helpers, arrays={"A": 2, "out": 1, "B": 2})
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    A = np.random.default_rng(4).random((9, 5))
    out, B = np.zeros(9), np.zeros((9, 5))
    offload.transform(report, ["L1"]).compile()(A, out, B)
    np.testing.assert_allclose(out, A.sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(B, 2.0 * A)


def test_a_helper_writing_its_argument_is_inlined():
    """The helper writes through its argument ``A[i]``: inlined (front/inline.py), the row
    loop is judged on what it does to row i and is parallel (before, the call was unknown and
    the loop serial: 0.50x the key); the plan gives the plain result."""
    probe = hp.PROBES["normalize_rows_by_helper"]
    assert offload.analyze(probe.fn).loop("L1").verdict == "parallel"
    A = np.random.default_rng(6).random((12, 9)) + 0.1
    plan = offload.search(probe.fn, (A.copy(),), **QUICK)
    assert not plan.fallback
    got, want = A.copy(), A.copy()
    plan.compile()(got)
    probe.fn(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _head(v):
    return v[:2]


def shift_heads(A):
    """Row i's head (a view through a pure helper) written from row i - 1: serial."""
    for i in range(1, A.shape[0]):
        h = _head(A[i])
        h[0] = A[i - 1, 0] + 1.0


def test_a_pure_helper_result_may_be_its_argument_but_nothing_else():
    """``qx, qy = _rotate(P[i, 0], …)`` (probe 6) may be its numbers or new storage: no alias
    of Q; ``h = _head(A[i])`` may be a view of A's row: writing it keeps the loop serial."""
    rot = offload.analyze(hp.rotate_points_helper, arrays={"P": 2, "Q": 2})
    assert rot.loop("L1").verdict == "parallel", rot.loop("L1").why
    for report in (offload.analyze(shift_heads), offload.analyze(shift_heads, arrays={"A": 2})):
        assert report.loop("L1").verdict == "sequential"
    A = np.zeros((6, 3))
    plan = offload.search(shift_heads, (A.copy(),), **QUICK)
    got = A.copy()
    plan.compile()(got)
    np.testing.assert_array_equal(got[:, 0], np.arange(6.0))

