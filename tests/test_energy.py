"""Energy beside time: sources labelled, the CPU model, RAPL meter, FPGA manifest power, pareto."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import hetlab as hl
from hetlab import energy
from hetlab.bench import measure_unit
from hetlab.fpga.manifest import load_manifest


def test_cpu_energy_is_modeled_and_says_so(monkeypatch):
    monkeypatch.delenv("HETLAB_CPU_WATTS_PER_THREAD", raising=False)
    monkeypatch.setattr(energy, "RAPL_ROOT", energy.Path("/nonexistent"))
    u = measure_unit("spmv", "numpy", 500, repeats=3, energy=True)
    assert u.energy_source == "modeled" and u.energy_how.startswith("modeled:")
    assert u.power_w == pytest.approx(energy.DEFAULT_WATTS_PER_THREAD)
    assert u.energy_j == pytest.approx(u.power_w * np.mean(u.times_s))
    monkeypatch.setenv("HETLAB_CPU_WATTS_PER_THREAD", "3")
    assert measure_unit("spmv", "numpy", 500, repeats=1, energy=True).power_w == 3.0
    monkeypatch.setenv("HETLAB_CPU_WATTS_PER_THREAD", "-1")
    with pytest.raises(hl.InvalidInputError, match="HETLAB_CPU_WATTS_PER_THREAD"):
        energy.cpu_watts_per_thread()


def test_rapl_counters_are_measured(tmp_path, monkeypatch):
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "max_energy_range_uj").write_text("1000000000\n")
    counter = zone / "energy_uj"
    counter.write_text("5000000\n")
    monkeypatch.setattr(energy, "RAPL_ROOT", tmp_path)
    meter = energy.meter_for(hl.core.registry.get_backend("numpy"))
    meter.start()
    counter.write_text("7500000\n")  # 2.5 J later
    joules = meter.stop()
    assert joules == pytest.approx(2.5)
    out = energy.energy_of("spmv", hl.core.registry.get_backend("numpy"), [0.5, 0.5], 1,
                           joules, meter.how)
    assert out["energy_source"] == "measured" and out["energy_j"] == pytest.approx(1.25)
    assert out["power_w"] == pytest.approx(2.5)


def test_fpga_energy_from_the_manifest():
    for overlay in ("fps", "spmv", "gemv_q"):
        watts, source = load_manifest(overlay).power("pynq-z2")
        assert watts > 0 and source
    out = energy.energy_of("spmv", hl.core.registry.get_backend("fpga"), [1e-3], 1)
    assert out["energy_source"] == "modeled" and "pynq-z2" in out["energy_how"]
    assert out["energy_j"] == pytest.approx(out["power_w"] * 1e-3)


def test_compare_energy_dataset_and_objective():
    ds = hl.compare(hl.spmv, sizes=[300], devices=["numpy", "numba", "cupy"], repeats=2,
                    energy=True, objective="energy", progress=False)
    assert set(ds["energy_source"].sel(size=300).values) == {"modeled", ""}
    assert "modeled" in ds.attrs["energy_note"]
    assert np.isnan(float(ds["energy_j"].sel(device="cupy", size=300)))
    assert str(ds["pick"].sel(size=300).values) in ("numpy", "numba")
    front = ds.hetlab.pareto()
    assert len(front) >= 1 and set(front["energy_source"]) == {"modeled"}
    assert "modeled" in front.attrs["note"]


def _fake(times, energies):
    devs = list(times)
    return xr.Dataset(
        {"time_s": (("device", "size", "repeat"), np.array([[[times[d]]] for d in devs])),
         "energy_j": (("device", "size"), np.array([[energies[d]] for d in devs])),
         "energy_source": (("device", "size"), np.array([["modeled"]] * len(devs))),
         "energy_how": (("device", "size"), np.array([["m"]] * len(devs)))},
        coords={"device": devs, "size": [10], "repeat": [0],
                "source": ("device", ["measured"] * len(devs))})


def test_pareto_front_is_the_non_dominated_set():
    ds = _fake({"a": 1.0, "b": 2.0, "c": 3.0, "d": 1.0, "e": 2.5},
               {"a": 5.0, "b": 2.0, "c": 1.0, "d": 6.0, "e": 2.0})
    front = energy.pareto_front(ds)
    # d is dominated by a (same time, more energy), e by b (slower, same energy)
    assert sorted(front.index.get_level_values("device")) == ["a", "b", "c"]


@pytest.mark.parametrize("x, y, match", [("time_s", "energy", "y must"),
                                         ("watts", "energy_j", "x must"),
                                         ("energy_j", "energy_j", "differ")])
def test_pareto_bad_input(x, y, match):
    with pytest.raises(hl.InvalidInputError, match=match):
        _fake({"a": 1.0}, {"a": 1.0}).hetlab.pareto(x, y)


def test_compare_refuses_energy_with_a_client():
    class Client:
        def submit(self):
            pass

    with pytest.raises(hl.InvalidInputError, match="energy"):
        hl.compare(hl.spmv, sizes=[10], devices=["numpy"], energy=True, client=Client())


# --- the "recorded" energy label (issue 20, part 4) ---

def _record_with_energy(folder, energy=True):
    ds = hl.compare(hl.spmv, sizes=[200], devices=["numpy"], repeats=2, energy=energy,
                    progress=False)
    return hl.recorded.record(ds, folder=folder, name="spmv-cpu-elsewhere",
                              machine="another machine")


def test_recorded_energy_is_labelled_recorded(tmp_path, monkeypatch):
    _record_with_energy(tmp_path)
    monkeypatch.setenv("HETLAB_RECORDED", str(tmp_path))
    ds = hl.compare(hl.spmv, sizes=[200], devices=["numpy"], repeats=2, energy=True,
                    include_recorded=True, progress=False)
    rec = [d for d in ds["device"].values if ds["source"].sel(device=d) == "recorded"]
    assert len(rec) == 1 and "recorded on" in rec[0]
    # the replayed joules keep their figure but say where they come from
    assert str(ds["energy_source"].sel(device=rec[0], size=200).values) == "recorded"
    assert np.isfinite(float(ds["energy_j"].sel(device=rec[0], size=200)))
    assert str(ds["energy_source"].sel(device="numpy", size=200).values) == "modeled"
    front = ds.hetlab.pareto()
    assert set(front["energy_source"]) <= {"recorded", "modeled"}
    by_dev = dict(zip(front.index.get_level_values("device"), front["energy_source"],
                      strict=True))
    if rec[0] in by_dev:
        assert by_dev[rec[0]] == "recorded"


def test_recording_without_energy_is_not_relabelled_as_measured_or_modeled(tmp_path,
                                                                          monkeypatch):
    _record_with_energy(tmp_path, energy=False)
    monkeypatch.setenv("HETLAB_RECORDED", str(tmp_path))
    ds = hl.compare(hl.spmv, sizes=[200], devices=["numpy"], repeats=2, energy=True,
                    include_recorded=True, progress=False)
    rec = next(d for d in ds["device"].values if ds["source"].sel(device=d) == "recorded")
    assert str(ds["energy_source"].sel(device=rec, size=200).values) == ""
    assert np.isnan(float(ds["energy_j"].sel(device=rec, size=200)))
