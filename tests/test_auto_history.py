"""device="auto"'s history: bounded exploration of ambiguous cases on fake devices of known
cost, then the measured-faster device; never a modeled device; bad input; end to end."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hetlab as hl
from hetlab.auto.chooser import Prediction, decide, margin_of
from hetlab.auto.history import MIN_SAMPLES, History
from hetlab.auto.model import DeviceFit

cal = importlib.import_module("hetlab.auto.calibrate")
KEY = ("spmv", "", (20, 18))


def P(device, total, sigma=0.05, why="", source="measured"):
    return Prediction(device, True, source, compute_s=total, transfer_s=0.0, launch_s=0.0,
                      jit_s=0.0, sigma=sigma, why_not=why)


def calls(h, preds, true, n, key=KEY, noise=0.0, seed=0):
    """``n`` auto calls on fake devices whose real time per call is ``true`` (s)."""
    rng = np.random.default_rng(seed)
    used, by = [], []
    pred = {p.device: p.total_s for p in preds}
    for _ in range(n):
        model, reason = decide(preds, "host")
        d = h.decide(key, preds, model, reason, margin_of)
        used.append(d.device)
        by.append(d.by)
        t = true[d.device] * float(np.exp(rng.normal(0.0, noise))) if noise else true[d.device]
        h.record(key, d.device, pred[d.device], t)
    return used, by


#: numba predicted 1.03x faster (inside the 1.07x margin): the model keeps the data's home
CLOSE = [P("numpy", 1.0e-3), P("numba", 0.97e-3)]


def test_ambiguous_case_explores_bounded_and_picks_the_measured_faster():
    # the model is off by 25% on numba: it is really 1.33x faster
    h = History()
    used, by = calls(h, CLOSE, {"numpy": 1.0e-3, "numba": 0.75e-3}, 30, noise=0.05)
    assert used[0] == "numpy" and by[0] == "exploring"   # the model's pick runs first
    explored = [u for u, b in zip(used, by, strict=True) if b == "exploring"]
    assert 2 * MIN_SAMPLES <= len(explored) <= 2 * (MIN_SAMPLES + 1)
    assert explored.count("numba") <= MIN_SAMPLES + 1
    assert by[len(explored):] == ["history"] * (30 - len(explored))
    assert set(used[len(explored):]) == {"numba"}


def test_when_the_model_was_right_history_keeps_its_pick():
    h = History()
    used, by = calls(h, CLOSE, {"numpy": 1.0e-3, "numba": 1.3e-3}, 40, noise=0.05)
    assert used.count("numba") <= MIN_SAMPLES + 1          # only while exploring
    assert set(used[2 * (MIN_SAMPLES + 1):]) == {"numpy"} and by[-1] == "history"


def test_confident_predictions_are_never_explored():
    h = History()
    used, by = calls(h, [P("numpy", 1.0), P("numba", 0.5)], {"numpy": 0.1, "numba": 1.0}, 20)
    assert set(used) == {"numba"} and set(by) == {"model"}   # beyond the margin: the model
    used, by = calls(h, [P("numpy", 0.5), P("numba", 1.0)], {"numpy": 1.0, "numba": 0.1}, 20,
                     key=("spmv", "", (3, 3)))
    assert set(used) == {"numpy"} and set(by) == {"model"}


def test_never_a_modeled_recorded_or_unavailable_device():
    preds = [*CLOSE, P("fpga", 0.99e-3, why="modeled timing (emulator)"),
                     P("gpu_rec", 0.98e-3, why="model from a recording", source="recorded"),
                     P("cupy", 0.99e-3, why="unavailable: no GPU")]
    true = {"numpy": 1.0e-3, "numba": 0.75e-3, "fpga": 1e-9, "gpu_rec": 1e-9, "cupy": 1e-9}
    used, _ = calls(History(), preds, true, 30)
    assert set(used) == {"numpy", "numba"}


def test_exploration_is_once_per_bucket_and_each_bucket_on_its_own():
    h = History()
    true = {"numpy": 1.0e-3, "numba": 1.5e-3}
    used, _ = calls(h, CLOSE, true, 200)
    assert used.count("numba") <= MIN_SAMPLES + 1          # bounded, however many calls
    other = ("spmv", "", (21, 19))
    used2, by2 = calls(h, CLOSE, true, 20, key=other)
    assert "exploring" in by2 and used2.count("numba") <= MIN_SAMPLES
    # the first call of each device per kernel was not counted: warm (JIT) only once
    assert h.samples(other, "numba") == used2.count("numba")


def test_first_call_is_not_counted_and_bad_times_are_ignored():
    h = History()
    assert not h.record(KEY, "numba", 1e-3, 5.0)           # the first: may hold the JIT
    assert h.record(KEY, "numba", 1e-3, 1e-3)
    assert not h.record(KEY, "numba", 1e-3, float("nan"))
    assert not h.record(KEY, "numba", 0.0, 1e-3)
    assert h.samples(KEY, "numba") == 1 and h.ratio(KEY, "numba") == pytest.approx(1.0)
    h.record(KEY, "numba", 1e-3, 3e-3)                      # a preempted call: only adds time
    assert h.ratio(KEY, "numba") == pytest.approx(1.0)


def test_a_device_that_drifts_slower_loses_to_the_measured_other():
    h = History()
    used, _ = calls(h, CLOSE, {"numpy": 1.0e-3, "numba": 0.75e-3}, 12)
    assert used[-1] == "numba"
    used, by = calls(h, CLOSE, {"numpy": 1.0e-3, "numba": 2.0e-3}, 20)
    assert used[-1] == "numpy" and by[-1] == "history"
    assert used.count("numba") <= 16                        # its kept window


def test_exploration_off_leaves_the_model_deciding():
    h = History(explore=False)
    used, by = calls(h, CLOSE, {"numpy": 1.0e-3, "numba": 0.5e-3}, 10)
    assert set(used) == {"numpy"} and set(by) == {"model"}


@pytest.mark.parametrize("call, match", [
    (lambda: hl.auto.configure_history(explore="yes"), "explore"),
    (lambda: hl.auto.configure_history(min_samples=0), "min_samples"),
    (lambda: hl.auto.configure_history(min_samples=True), "min_samples"),
    (lambda: hl.auto.history("nope"), "kernel"),
])
def test_bad_input(call, match):
    with pytest.raises(hl.InvalidInputError, match=match):
        call()


def _fit(device, scale):
    return DeviceFit(device=device, kind="cpu", source="measured", overhead_s=1e-6,
                     scale=scale, power=1.0, sigma=0.05, jit_s=0.0, bandwidth_gbps=10.0,
                     gflops=100.0)


def test_end_to_end_through_dispatch(monkeypatch):
    # models that cannot tell numpy and numba apart (1.02x): auto explores both on real
    # calls, every answer is the reference's, then history decides; explain says so
    fits = {"numpy": _fit("numpy", 1.02), "numba": _fit("numba", 1.0)}
    monkeypatch.setattr(cal, "fits_for_call", lambda spec, validated: fits)
    hl.auto.forget_history()
    a = hl.bench.case_args("spmv", 2000, 1)
    want = hl.spmv(a["A"], a["x"])
    seen = []
    for _ in range(2 * (MIN_SAMPLES + 1) + 2):
        np.testing.assert_allclose(hl.spmv(a["A"], a["x"], device="auto"), want,
                                   rtol=1e-5, atol=1e-6)
        d = hl.auto.last_choice()
        seen.append((d.device, d.by))
    assert {d for d, b in seen if b == "exploring"} == {"numpy", "numba"}
    assert seen[-1][1] == "history"
    table = hl.auto.history("spmv")
    assert set(table["device"]) == {"numpy", "numba"}
    assert (table["samples"] >= MIN_SAMPLES).all()
    df = hl.explain(hl.spmv, a["A"], a["x"])
    assert df.attrs["decided_by"] == "history" and "history" in df.attrs["reason"]
    assert (df.loc[["numpy", "numba"], "samples"] >= MIN_SAMPLES).all()
    assert np.isfinite(df.loc[["numpy", "numba"], "history_s"]).all()
    assert "fpga" not in {d for d, _ in seen}
    hl.auto.forget_history()
    assert hl.auto.history().empty
