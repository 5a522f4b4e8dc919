"""The measurement harness: statuses, verification inside the run, modeled labels, netCDF."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import hetlab as hl
from hetlab.backends.numpy import HostBackend
from hetlab.bench import ModeledRun, measure_unit
from hetlab.core import registry
from hetlab.kernels.pointcloud import reference


class _TestHost(HostBackend):
    def __init__(self, name: str, timing: str = "measured"):
        self.name = name
        self.timing_source = timing


@pytest.fixture
def fake_backends(monkeypatch):
    """Three throwaway host backends: one wrong, one raising, one modeled."""
    for name, timing in (("wrong", "measured"), ("raising", "measured"), ("model", "modeled")):
        monkeypatch.setitem(registry._BACKENDS, name, _TestHost(name, timing))

    def wrong(points, n_samples, start):
        return reference.fps(points, n_samples, start)[::-1].copy()

    def raising(points, n_samples, start):
        raise RuntimeError("device lost")

    def modeled(points, n_samples, start):
        return ModeledRun(reference.fps(points, n_samples, start), compute_s=1e-3,
                          transfer_in_s=2e-4, transfer_out_s=1e-5)

    for name, fn in (("wrong", wrong), ("raising", raising), ("model", modeled)):
        monkeypatch.setitem(registry._IMPLS, ("fps", name), fn)


def test_compare_layout_and_verification():
    ds = hl.compare(hl.fps, sizes=[50, 200], devices=["numpy"], repeats=3, progress=False)
    assert dict(ds.sizes) == {"device": 1, "size": 2, "repeat": 3}
    assert ds["verified"].all() and (ds["status"] == "ok").all()
    assert (ds["time_s"] > 0).all() and (ds["error"] == 0).all()
    assert ds["source"].item() == "measured"
    assert ds.attrs["kernel"] == "fps" and ds.attrs["size_unit"] == "points"
    for key in ("cpu_model", "host", "numpy", "created", "seed", "version_xarray"):
        assert key in ds.attrs
    med = ds["time_s"].median("repeat")
    xr.testing.assert_allclose(ds["throughput"], ds["size"] / med)
    assert (ds["flops"] > 0).all() and (ds["bytes"] > 0).all()


def test_wrong_failing_and_modeled_devices_are_reported_not_lost(fake_backends):
    ds = hl.compare("fps", sizes=[64], devices=["numpy", "wrong", "raising", "model", "cupy"],
                    repeats=2, progress=False)
    status = dict(zip(ds["device"].values, ds["status"].sel(size=64).values, strict=True))
    assert status["numpy"] == "ok"
    assert status["wrong"].startswith("wrong result")
    assert status["raising"] == "failed: RuntimeError: device lost"
    assert status["model"] == "ok"
    assert status["cupy"].startswith(("unavailable", "ok"))
    verified = ds["verified"].sel(size=64)
    assert bool(verified.sel(device="numpy")) and not bool(verified.sel(device="wrong"))
    assert ds["source"].sel(device="model").item() == "modeled"
    assert ds["time_s"].sel(device="model", size=64).values.tolist() == [1e-3, 1e-3]
    assert ds["transfer_in_s"].sel(device="model", size=64).item() == 2e-4
    assert np.isnan(ds["time_s"].sel(device="raising")).all()


def test_measure_unit_keeps_transfer_apart_on_host():
    unit = measure_unit("knn", "numpy", 100, repeats=2)
    assert unit.status == "ok" and unit.verified and len(unit.times_s) == 2
    assert unit.transfer_in_s < 1e-3 and unit.first_call_s > 0


def test_same_case_on_every_device_and_deterministic():
    a, _ = hl.bench.case_for("fps", 100, 3)
    b, _ = hl.bench.case_for("fps", 100, 3)
    c, _ = hl.bench.case_for("fps", 100, 4)
    np.testing.assert_array_equal(a["points"], b["points"])
    assert not np.array_equal(a["points"], c["points"])


def test_netcdf_round_trip(tmp_path):
    ds = hl.compare("ball_query", sizes=[100], devices=["numpy", "cupy"], repeats=2,
                    progress=False)
    path = hl.save(ds, tmp_path / "bq.nc")
    back = hl.load(path)
    xr.testing.assert_identical(back.drop_attrs(), ds.drop_attrs())
    assert back.attrs == ds.attrs
    assert back["verified"].dtype == bool


def test_load_missing_file_says_so(tmp_path):
    with pytest.raises(hl.InvalidInputError, match="existing netCDF file"):
        hl.load(tmp_path / "none.nc")


def test_accessor_speedup_and_table():
    ds = hl.compare("fps", sizes=[100], devices=["numpy"], repeats=2, progress=False)
    assert float(ds.hetlab.speedup("numpy").sel(device="numpy", size=100)) == 1.0
    with pytest.raises(hl.InvalidInputError, match="baseline must be one of"):
        ds.hetlab.speedup("tpu")
    table = ds.hetlab.table()
    assert list(table.columns)[:2] == ["median_s", "transfer_s"] and len(table) == 1


def test_compare_rejects_bad_arguments():
    with pytest.raises(hl.InvalidInputError, match="sizes must be a non-empty list of ints >= 1"):
        hl.compare("fps", sizes=[0])
    with pytest.raises(hl.InvalidInputError, match="repeats must be an int >= 1"):
        hl.compare("fps", sizes=[10], repeats=0)
    with pytest.raises(hl.InvalidInputError, match="device must be one of"):
        hl.compare("fps", sizes=[10], devices=["tpu"])


def test_plot_marks_modeled_lines(fake_backends):
    pytest.importorskip("hvplot")
    ds = hl.compare("fps", sizes=[32, 64], devices=["numpy", "model"], repeats=1,
                    progress=False)
    chart = ds.hetlab.plot()
    labels = {el.label for el in chart}
    assert {"numpy (measured)", "model (modeled)"} <= labels
    dashes = {el.label: el.opts.get().kwargs.get("line_dash") for el in chart
              if type(el).__name__ == "Curve"}
    assert dashes == {"numpy (measured)": "solid", "model (modeled)": "dashed"}
    with pytest.raises(hl.InvalidInputError, match="y must be one of"):
        ds.hetlab.plot("nope")


def test_roofline_points_follow_the_cost_model(fake_backends):
    ds = hl.compare("spmv", sizes=[200, 400], devices=["numpy", "model", "cupy"], repeats=2,
                    progress=False)
    pts = ds.hetlab.roofline_points()
    ran = [str(d) for d in ds["device"].values if ds["source"].sel(device=d).item() != "skipped"]
    assert sorted({d for d, _ in pts.index}) == sorted(ran) and "numpy" in ran
    assert "model" not in ran  # the fake backend has no spmv: left out, not plotted
    row = pts.loc[("numpy", 400)]
    flops, nbytes = float(ds["flops"].sel(size=400)), float(ds["bytes"].sel(size=400))
    med = float(ds["time_s"].sel(device="numpy", size=400).median())
    assert row["intensity"] == pytest.approx(flops / nbytes)
    assert row["gflops"] == pytest.approx(flops / med / 1e9)
    peak = float(ds["peak_gbps"].sel(device="numpy"))
    assert row["roof_gflops"] == pytest.approx(peak * flops / nbytes)
    assert row["fraction"] == pytest.approx(row["gflops"] / row["roof_gflops"])


def test_roofline_chart_styles_by_source_and_draws_roofs(fake_backends):
    pytest.importorskip("hvplot")
    ds = hl.compare("fps", sizes=[32, 64], devices=["numpy", "model"], repeats=1,
                    progress=False)
    chart = ds.hetlab.roofline()
    dashes = {el.label: el.opts.get().kwargs.get("line_dash") for el in chart
              if type(el).__name__ == "Curve" and "roof" not in el.label}
    assert dashes == {"numpy (measured)": "solid", "model (modeled)": "dashed"}
    roofs = {el.label: el for el in chart if "roof" in el.label}
    peak = float(ds["peak_gbps"].sel(device="numpy"))
    (numpy_roof,) = [el for label, el in roofs.items() if label.startswith("numpy roof")]
    assert f"{peak:.1f} GB/s" in numpy_roof.label
    x, y = numpy_roof.dimension_values(0), numpy_roof.dimension_values(1)
    np.testing.assert_allclose(y, peak * x)
    scatter = [el for el in chart if type(el).__name__ == "Scatter"]
    assert sum(len(el) for el in scatter) == 4  # 2 devices × 2 sizes
    assert ds.hetlab.roofline_points().loc[("model", 64), "source"] == "modeled"
    with pytest.raises(hl.InvalidInputError, match="at least one device that ran"):
        ds.sel(device=[]).hetlab.roofline()
