"""device="auto": the chooser's logic on fake devices, calibration caching, explain, bad input."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

import hetlab as hl
from hetlab.auto.chooser import Prediction, decide, predict
from hetlab.auto.model import DeviceFit, fit_points
from hetlab.auto.objective import Objective
from hetlab.backends.numpy import HostBackend
from hetlab.core import registry
from hetlab.core.registry import get_kernel

#: the module (the package exports the function of the same name)
cal = importlib.import_module("hetlab.auto.calibrate")


def P(device, total, sigma=0.05, why="", source="measured"):
    return Prediction(device, True, source, compute_s=total, transfer_s=0.0, launch_s=0.0,
                      jit_s=0.0, sigma=sigma, why_not=why)


def test_gain_beyond_margin_moves_off_home():
    dev, reason = decide([P("numpy", 1.0), P("numba", 0.5)], "host")
    assert dev == "numba" and "beyond" in reason


def test_gain_within_margin_stays_home():
    # 1.1x predicted gain, margins 0.1 each: hypot = 0.14 > log(1.1) = 0.095
    dev, reason = decide([P("numpy", 1.1, 0.1), P("numba", 1.0, 0.1)], "host")
    assert dev == "numpy" and "within" in reason
    # the same gain with tight models moves
    assert decide([P("numpy", 1.1, 0.01), P("numba", 1.0, 0.01)], "host")[0] == "numba"


def test_margin_is_floored_and_capped():
    # wide models (sigma 3: a factor 20) never keep work on a device predicted > 1.25x slower
    dev, reason = decide([P("numpy", 1.3, 3.0), P("numba", 1.0, math.inf)], "host")
    assert dev == "numba" and "1.25×" in reason
    # below the cap the wide margin still holds the work home
    assert decide([P("numpy", 1.2, 3.0), P("numba", 1.0, 3.0)], "host")[0] == "numpy"
    # a model claiming no error is trusted to the floor (3% each) only: 2% gain stays home
    assert decide([P("numpy", 1.02, 0.0), P("numba", 1.0, 0.0)], "host")[0] == "numpy"
    assert decide([P("numpy", 1.10, 0.0), P("numba", 1.0, 0.0)], "host")[0] == "numba"


def test_home_fastest_stays():
    assert decide([P("numpy", 0.1), P("numba", 1.0)], "host")[0] == "numpy"


def test_never_modeled_unavailable_or_recorded():
    preds = [P("numpy", 1.0), P("fpga", 1e-6, why="modeled timing"),
             P("cupy", 1e-6, why="unavailable: no GPU"),
             P("rec", 1e-6, why="model from a recording", source="recorded")]
    assert decide(preds, "host")[0] == "numpy"


def test_device_arrays_stay_home():
    preds = [P("cupy", 1.0), P("numba", 1e-3, why="data lives on cupy")]
    assert decide(preds, "cupy")[0] == "cupy"


class FakeGpu(HostBackend):
    name, kind = "fakegpu", "gpu"


def _fit(device, kind, **kw):
    base = dict(device=device, kind=kind, source="measured", overhead_s=1e-5, scale=1.0,
                power=1.0, sigma=0.01, jit_s=0.0, bandwidth_gbps=10.0, gflops=100.0)
    return DeviceFit(**{**base, **kw})


def test_transfers_paid_by_host_data_not_resident(monkeypatch):
    monkeypatch.setitem(registry._BACKENDS, "fakegpu", FakeGpu())
    spec = get_kernel("spmv")
    args = hl.bench.case_args("spmv", 4096, 0)
    fits = {"numpy": _fit("numpy", "cpu"),
            "fakegpu": _fit("fakegpu", "gpu", scale=0.01, h2d_gbps=1.0, latency_s=1e-5)}
    host = {p.device: p for p in predict(spec, args, "host", fits, ["numpy", "fakegpu"])}
    A = args["A"]
    nbytes = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes + args["x"].nbytes
    assert host["fakegpu"].transfer_s >= nbytes / 1e9
    assert host["numpy"].transfer_s == 0.0
    resident = {p.device: p for p in predict(spec, args, "fakegpu", fits, ["numpy", "fakegpu"])}
    assert resident["fakegpu"].transfer_s == 0.0
    assert resident["numpy"].why_not  # host work on device data: never chosen
    # the transfer decides: slow copies keep host data home, resident data runs on the "GPU"
    assert decide(list(host.values()), "host")[0] == "numpy"
    assert decide(list(resident.values()), "fakegpu")[0] == "fakegpu"


def test_fit_points_recovers_a_known_law_and_measures_its_error():
    r = np.geomspace(1e-7, 1e-2, 8)
    t = 5e-6 + 2.0 * r**1.1
    _, _, p, sigma = fit_points(r, t)
    assert abs(p - 1.1) < 0.03 and sigma < 0.15  # interpolation error between points
    noisy = t * np.exp(np.random.default_rng(0).normal(0, 0.3, t.size))
    assert fit_points(r, noisy)[3] > sigma + 0.05


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HETLAB_CACHE", str(tmp_path))
    cal.forget()
    yield tmp_path
    cal.forget()


def _small(kernels=("spmv",), devices=("numpy", "numba"), **kw):
    return hl.auto.calibrate(list(kernels), list(devices), budget_s=1e-4, max_size=1024, **kw)


def test_calibration_is_cached_per_machine_and_refreshed(cache, monkeypatch):
    fits = _small()
    assert set(fits["spmv"]) == {"numpy", "numba"}
    assert all(f.source == "measured" and f.sizes for f in fits["spmv"].values())
    path = hl.auto.cache_path()
    assert path.parent == cache and path.exists()
    cal.forget()
    calls = []
    real = cal.measure_unit
    monkeypatch.setattr(cal, "measure_unit", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = _small()
    assert not calls
    assert again["spmv"]["numpy"].points == fits["spmv"]["numpy"].points
    _small(devices=["numpy"], refresh=True)
    assert calls and {c[1] for c in calls} == {"numpy"}


def test_auto_end_to_end_gives_the_reference_answer(cache):
    _small(kernels=("spmv", "fps"))
    a = hl.bench.case_args("spmv", 3000, 1)
    np.testing.assert_allclose(hl.spmv(a["A"], a["x"], device="auto"), hl.spmv(a["A"], a["x"]),
                               rtol=1e-5, atol=1e-6)
    pts = hl.make_cloud(2000, np.random.default_rng(0))
    np.testing.assert_array_equal(hl.fps(pts, 64, device="AUTO"), hl.fps(pts, 64))


def test_explain_table(cache):
    _small()
    a = hl.bench.case_args("spmv", 500, 1)
    df = hl.explain(hl.spmv, a["A"], x=a["x"], device="numba")
    assert {"numpy", "numba", "fpga"} <= set(df.index)
    assert int(df["chosen"].sum()) == 1 and df.attrs["choice"] in ("numpy", "numba")
    assert not df.loc["fpga", "chosen"] and "modeled" in df.loc["fpga", "reason"]
    ok = df.loc[["numpy", "numba"]]
    assert np.allclose(ok["total_s"], ok["compute_s"] + ok["launch_s"] + ok["transfer_s"])
    assert (ok["margin"] >= 0).all()


def test_no_chooser_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(registry, "_CHOOSER", None)
    with pytest.raises(hl.InvalidInputError, match=r"device='auto' needs hetlab\.auto"):
        hl.spmv(np.eye(2), np.ones(2), device="auto")


@pytest.mark.parametrize("call, match", [
    (lambda: hl.auto.calibrate(["spmv"], refresh="yes"), "refresh"),
    (lambda: hl.auto.calibrate(["spmv"], budget_s=0), "budget_s"),
    (lambda: hl.auto.calibrate(["nope"]), "kernel"),
    (lambda: hl.auto.calibrate(["spmv"], devices="numba"), "devices"),
    (lambda: hl.explain(hl.spmv, np.eye(2)), "arguments"),
    (lambda: hl.explain(hl.spmv, np.eye(2), np.ones(3)), "x"),
    (lambda: Objective.of("speed"), "objective"),
    (lambda: Objective.of({"cpu": 1.0}), "prices"),
    (lambda: Objective.of("time", tolerance=-1), "tolerance"),
])
def test_bad_input(call, match):
    with pytest.raises(hl.InvalidInputError, match=match):
        call()


def test_objective_prefers_fewer_resources_within_tolerance():
    cands = [("numba-8", 1.00, {"thread": 8}), ("numba-2", 1.08, {"thread": 2}),
             ("gpu", 0.5, {"gpu": 1, "thread": 1})]
    assert Objective.of("time", 0.1).pick(cands) == "gpu"
    assert Objective.of("time", 1.5).pick(cands) == "numba-2"
    price = Objective.of({"thread": 1.0, "gpu": 100.0})
    vals = [(k, price.value(t, math.nan, r), r) for k, t, r in cands]
    assert price.pick(vals) == "numba-2"
