"""Search cost and the way a plan runs: plan.compile() threads, load recorded and warned,
pruning by the static model, time-to-best figures, the "among other work" measurement,
cut repeats, GA patience, and the new option fields."""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import time

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import Measurement, among_work, measure
from hetlab.offload.searching import driver
from hetlab.offload.searching.ga import GAResult, genetic_search
from hetlab.offload.searching.load import LoadSample, load_record, read_load
from hetlab.offload.searching.model import StaticModel
from hetlab.offload.searching.plan import Plan
from hetlab.offload.targets import numba as numba_target

numba = pytest.importorskip("numba")


def _scale(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


def _rows(A, out):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
        out[i] = s


def _plan_offloading_l1(threads: int | None) -> Plan:
    report = offload.analyze(_scale)
    ok = Measurement(times_s=[1.0], verified=True)
    return Plan(report, "numba", ["L1"], (1,), {(0,): ok, (1,): ok}, 1.0, 1.0,
                GAResult((1,), 1.0, 1), None, thread_choice=threads)


# -- (1) plan.compile() runs on the thread count the search chose -------------------------

@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_compile_uses_the_thread_choice_and_restores_it():
    seen: list[int] = []

    def spy(x, out):
        seen.append(numba.get_num_threads())
        if x[0] < 0:
            raise RuntimeError("boom")

    before = numba.get_num_threads()
    plan = _plan_offloading_l1(threads=1)
    plan.variant()._compiled = spy  # what the variant runs: records the thread count
    fast = plan.compile()
    fast(np.ones(4), np.zeros(4))
    assert seen == [1] and numba.get_num_threads() == before
    with pytest.raises(RuntimeError, match="boom"):
        fast(-np.ones(4), np.zeros(4))
    assert seen == [1, 1] and numba.get_num_threads() == before  # restored after a raise
    other = _plan_offloading_l1(threads=None)
    other.variant()._compiled = spy
    other.compile()(np.ones(4), np.zeros(4))
    assert seen[-1] == before  # no choice: the caller's count


# -- (3) load recorded, busy warned -------------------------------------------------------

def test_load_rule_from_readings():
    cores = 4
    quiet = load_record(LoadSample(0.0, 100.0, 1.0, 0.5), LoadSample(10.0, 121.0, 20.0, 2.0),
                        threads=2, busy_fraction=0.25, cores=cores)
    assert quiet.others_cores == pytest.approx(0.2) and not quiet.busy
    busy = load_record(LoadSample(0.0, 100.0, 1.0, 0.5), LoadSample(10.0, 140.0, 11.0, 4.0),
                       threads=2, busy_fraction=0.25, cores=cores)
    assert busy.others_cores == pytest.approx(3.0) and busy.busy
    assert "BUSY" in busy.describe() and "BUSY" not in quiet.describe()
    # no /proc/stat: the load average beyond the search's own threads decides
    la = load_record(LoadSample(0.0, math.nan, 0.0, 1.0), LoadSample(1.0, math.nan, 1.0, 3.5),
                     threads=2, busy_fraction=0.25, cores=cores)
    assert la.busy and la.source == "load average only"
    real = read_load()
    assert real.own_cpu_s >= 0 and real.wall_s > 0


def test_search_records_load_warns_when_busy_and_times_among_work(caplog):
    cores = os.cpu_count() or 1
    readings = iter([LoadSample(0.0, 0.0, 0.0, 0.1),
                     LoadSample(10.0, 10.0 * cores + 5.0, 5.0, cores + 2.0)])
    args = (np.arange(64.0), np.zeros(64))
    with caplog.at_level(logging.WARNING, logger="hetlab.offload"):
        plan = offload.search(_scale, args, progress=False,
                              measure=MeasureOptions(repeats=1, confirm=0, among_work=2,
                                                     load_probe=lambda: next(readings)))
    assert plan.load is not None and plan.load.busy
    assert plan.load.others_cores == pytest.approx(cores)
    assert any("BUSY machine" in r.getMessage() for r in caplog.records)
    assert "load: BUSY machine" in plan.summary() and "load: BUSY" in repr(plan)
    assert math.isfinite(plan.among_work_s) and plan.among_work_s > 0
    assert math.isfinite(plan.serial_among_work_s) and plan.serial_among_work_s > 0
    assert "among NumPy/BLAS work" in plan.summary()
    if importlib.util.find_spec("threadpoolctl") is not None:  # the remedy, measured
        assert math.isfinite(plan.among_work_blas1_s) and plan.among_work_blas1_s > 0
        assert "with BLAS on 1 thread" in plan.summary()
    else:
        assert math.isnan(plan.among_work_blas1_s)
    assert plan.search_s > 0


def test_among_work_runs_work_before_each_call_on_fresh_inputs():
    events: list[str] = []

    def work():
        events.append("work")

    def fn(x):
        events.append(f"call {x[0]:.0f}")
        x += 1.0  # fresh copies: every call sees the original value
        time.sleep(0.001)

    x = np.zeros(3)
    times = among_work(fn, (x,), repeats=3, work=work)
    assert events == ["work", "call 0"] * 3 and not x.any()
    assert len(times) == 3 and all(t > 0 for t in times)


# -- (4) pruning with the static model, (5) time to best, (6) slower keeps serial --------

@pytest.fixture
def loops_only(monkeypatch):
    """No reassociation gene (``_rows`` sums floats): the fake timings below are given in
    the order of the loop genes' candidates."""
    monkeypatch.setattr(numba_target, "reassociable", lambda report, args, skip=(): False)


def _fake_measure(times: list[float]):
    """A ``measure`` that does not run anything: verified, times in call order."""
    calls = iter(times)

    def fake(fn, args, expected, **kw):
        return Measurement(times_s=[next(calls)], verified=True)

    return fake


def test_pruned_candidates_are_counted_and_never_run(monkeypatch, loops_only):
    asked: list[tuple[str, ...]] = []

    def predictor(loops, serial_s):
        asked.append(tuple(loops))
        return 100.0 * serial_s if "L2" in loops else 0.5 * serial_s

    # serial 1.0, auto 1.0, then the one candidate not pruned ((1, 0): L1 alone)
    monkeypatch.setattr(driver, "_measure", _fake_measure([1.0, 1.0, 0.25]))
    plan = offload.search(_rows, (np.ones((6, 5)), np.zeros(6)), progress=False,
                          function_blocks=False,
                          measure=MeasureOptions(repeats=1, confirm=0, among_work=0,
                                                 predictor=predictor))
    assert plan.genes == ["L1", "L2"] and ("L2",) in asked and ("L1", "L2") not in asked
    # (1, 1) is the code of (1, 0): numba runs the nested prange serially
    assert plan.pruned == 1 and plan.evaluations == 1
    assert {g for g, m in plan.measurements.items() if m.status == "pruned"} == {(0, 1)}
    assert all(not m.times_s for m in plan.measurements.values() if m.status == "pruned")
    assert plan.measurements[(1, 1)].times_s == plan.measurements[(1, 0)].times_s
    assert "as L1 (nested prange: serial)" in plan.measurements[(1, 1)].source
    assert plan.best == (1, 0) and plan.evaluations_to_best == 1
    assert 0 < plan.seconds_to_best <= plan.search_s
    assert "1 pruned by the static model" in plan.summary()


def test_time_to_best_counts_measured_candidates(monkeypatch, loops_only):
    # serial, auto, then candidates in GA order: the second measured one is the fastest
    monkeypatch.setattr(driver, "_measure", _fake_measure([1.0, 1.0, 0.8, 0.2]))
    plan = offload.search(_rows, (np.ones((6, 5)), np.zeros(6)), progress=False,
                          function_blocks=False,
                          measure=MeasureOptions(repeats=1, confirm=0, among_work=0,
                                                 prune=None))
    assert plan.pruned == 0 and plan.evaluations == 2  # (1, 1) runs the code of (1, 0)
    assert plan.best == (0, 1) and plan.measurements[plan.best].time_s == 0.2
    assert plan.evaluations_to_best == 2
    assert 0 < plan.seconds_to_best <= plan.search_s


@pytest.mark.parametrize("confirm", [0, 2])
def test_a_plan_slower_than_serial_keeps_serial_with_pruning(monkeypatch, loops_only, confirm):
    def predictor(loops, serial_s):
        return 10.0 * serial_s if loops == ["L2"] else serial_s

    monkeypatch.setattr(driver, "_measure", _fake_measure([1.0, 2.0, 1.5]))
    if confirm:  # the confirmation round agrees: every candidate slower than the serial
        monkeypatch.setattr(driver, "confirm_times", lambda c, a, r: {
            k: (1.0 if k == (0, 0) else 1.7) for k in c})
    plan = offload.search(_rows, (np.ones((6, 5)), np.zeros(6)), progress=False,
                          function_blocks=False,
                          measure=MeasureOptions(repeats=1, confirm=confirm, among_work=0,
                                                 predictor=predictor))
    assert plan.pruned == 1 and plan.measurements[(0, 1)].status == "pruned"
    assert plan.best == (0, 0) and plan.loops == [] and plan.speedup == pytest.approx(1.0)
    assert plan.evaluations_to_best == 0 and math.isnan(plan.seconds_to_best)


def test_static_model_predicts_launch_overhead_of_inner_loops():
    report = offload.analyze(_rows)
    model = StaticModel(report, (np.ones((1000, 50)), np.zeros(1000)), threads=2)
    assert model.trips == {"L1": 1000, "L2": 50}
    assert model.predict(["L1"], 1e-3) == pytest.approx(0.5e-3, rel=0.02)
    assert model.predict(["L2"], 1e-3) > 3e-3  # 1000 launches of a 50-iteration loop
    assert model.predict(["L1", "L2"], 1e-3) == model.predict(["L1"], 1e-3)  # nested: serial


# -- cut repeats, GA patience, options ----------------------------------------------------

def test_measure_cuts_repeats_of_a_clearly_slow_candidate():
    def slow(x):
        time.sleep(0.002)

    full = measure(slow, (np.ones(2),), None, repeats=4)
    cut = measure(slow, (np.ones(2),), None, repeats=4, cut_s=0.0)
    assert len(full.times_s) == 4 and len(cut.times_s) == 1 and cut.status == "ok"


def test_ga_stops_when_it_stalls():
    flat = genetic_search(12, lambda g: 1.0, budget=4096, population=4, generations=200,
                          patience=3, seed=1)
    assert flat.stopped_early and len(flat.history) == 4
    full = genetic_search(12, lambda g: 1.0, budget=4096, population=4, generations=20,
                          patience=None, seed=1)
    assert not full.stopped_early and len(full.history) == 20


@pytest.mark.parametrize(("make", "field"), [
    (lambda: MeasureOptions(prune=1.0), "prune"),
    (lambda: MeasureOptions(prune=math.inf), "prune"),
    (lambda: MeasureOptions(cut=0.5), "cut"),
    (lambda: MeasureOptions(among_work=-1), "among_work"),
    (lambda: MeasureOptions(among_work=2.0), "among_work"),
    (lambda: MeasureOptions(busy_fraction=0.0), "busy_fraction"),
    (lambda: MeasureOptions(predictor=3.0), "predictor"),
    (lambda: MeasureOptions(load_probe="proc"), "load_probe"),
    (lambda: GAOptions(patience=0), "patience"),
    (lambda: GAOptions(patience=True), "patience"),
])
def test_new_options_validate_and_name_the_field(make, field):
    with pytest.raises(hl.InvalidInputError, match=rf"\.{field} must be"):
        make()


def test_new_options_have_no_deprecated_keyword():
    MeasureOptions(prune=None, cut=None, among_work=0)  # all off is valid
    GAOptions(patience=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'prune'"):
        offload.search(_scale, (np.ones(4), np.zeros(4)), progress=False, prune=2.0)


def _matvec(A, x, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]


def test_blocks_slower_than_serial_in_the_confirmation_keep_serial(monkeypatch):
    report = offload.analyze(_matvec)
    assert report.blocks  # a matvec block: tried first, kept when its trial beats serial
    # serial 1.0, auto 1.0, the block trial 0.5 (kept); the block plan, serial in the
    # confirmation, gains less than the threads could: the loops without the block are
    # searched too (each 1.0, no better) and the kept plan stays the serial njit
    monkeypatch.setattr(driver, "_measure", _fake_measure([1.0, 1.0, 0.5] + [1.0] * 32))
    monkeypatch.setattr(driver, "confirm_times", lambda c, a, r: {
        k: {"serial": 1.0, "auto": 1.2}.get(k, 1.5) for k in c})
    plan = offload.search(_matvec, (np.ones((4, 3)), np.ones(3), np.zeros(4)), progress=False,
                          measure=MeasureOptions(repeats=1, confirm=2, among_work=0))
    assert plan.block_trials and plan.blocks == () and plan.loops == []
    assert plan.speedup == pytest.approx(1.0) and plan.time_s == pytest.approx(1.0)
    assert "replaced: none kept" in plan.summary()
    y = np.zeros(4)
    plan.compile()(np.ones((4, 3)), np.ones(3), y)
    np.testing.assert_allclose(y, 3.0)


def test_loops_without_the_blocks_win_when_the_blocks_gain_less_than_the_threads(monkeypatch,
                                                                                loops_only):
    import numba

    if numba.get_num_threads() < 2:
        pytest.skip("needs two numba threads")
    report = offload.analyze(_matvec)
    assert report.blocks
    # serial 1.0, auto 1.0, the block trial 0.9 (kept: beats serial by 1.1×, less than the
    # threads could), then every loop candidate 1.0 in the GA
    monkeypatch.setattr(driver, "_measure", _fake_measure([1.0, 1.0, 0.9] + [1.0] * 64))

    def confirm(contenders, args, repeats):  # loops in parallel: 0.3; block or serial: 0.9
        return {k: {"serial": 1.0, "auto": 1.2}.get(k, 0.3 if isinstance(k, tuple) and any(k)
                                                   else 0.9) for k in contenders}

    monkeypatch.setattr(driver, "confirm_times", confirm)
    plan = offload.search(_matvec, (np.ones((4, 3)), np.ones(3), np.zeros(4)), progress=False,
                          measure=MeasureOptions(repeats=1, confirm=2, among_work=0))
    assert plan.blocks == () and plan.loops
    y = np.zeros(4)
    plan.compile()(np.ones((4, 3)), np.ones(3), y)
    np.testing.assert_allclose(y, 3.0)
