"""Teaching tools: hl.check, recordings replayed beside live runs, the dashboard."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.recorded import record, recordings, with_recorded


def _student_fps(points, n_samples, start=0):
    d = np.full(len(points), np.inf, points.dtype)
    out = [start]
    for _ in range(n_samples - 1):
        d = np.minimum(d, ((points - points[out[-1]]) ** 2).sum(1))
        d[out] = -1
        out.append(int(d.argmax()))
    return np.array(out)


def _student_fps_off_by_one(points, n_samples, start=0):
    return _student_fps(points, n_samples, start)[::-1]


def test_check_passes_a_correct_implementation():
    report = hl.check(_student_fps, hl.fps, sizes=(1, 5, 200), against=["numpy"])
    assert report.passed
    assert "PASS: 3/3" in str(report)
    table = report.table()
    assert list(table.index) == [1, 5, 200] and (table["numpy_s"] > 0).all()


def test_check_fails_a_wrong_or_crashing_implementation():
    report = hl.check(_student_fps_off_by_one, "fps", sizes=(1, 50), against=[])
    assert not report.passed
    assert [r["passed"] for r in report.rows] == [True, False]  # size 1 is trivially right

    def crashing(points, n_samples):
        raise IndexError("oops")

    report = hl.check(crashing, "fps", sizes=(10,), against=[])
    assert not report.passed and "raised IndexError: oops" in str(report)
    with pytest.raises(hl.InvalidInputError, match="fn must be callable"):
        hl.check(42, "fps")


def test_recording_round_trip_is_labeled_recorded(tmp_path):
    live = hl.compare("fps", sizes=[100, 200], devices=["numpy", "cupy"], repeats=2,
                      progress=False)
    path = record(live, folder=tmp_path, name="fps-test")
    assert path.name == "fps-test.nc"
    recs = recordings("fps", tmp_path)
    assert len(recs) == 1 and list(recs[0]["device"].values) == ["numpy"]  # only measured kept
    assert recordings("knn", tmp_path) == []
    again = hl.compare("fps", sizes=[200, 400], devices=["numpy"], repeats=3, progress=False)
    merged = with_recorded(again, recs)
    names = list(merged["device"].values)
    assert names[0] == "numpy" and names[1].startswith("numpy · recorded on ")
    assert list(merged["source"].values) == ["measured", "recorded"]
    assert merged["size"].values.tolist() == [100, 200, 400]
    rec = merged.sel(device=names[1])
    assert str(rec["status"].sel(size=400).item()) == "not run at this size"
    assert bool(rec["verified"].sel(size=200))


def test_compare_include_recorded_reads_the_folder(tmp_path, monkeypatch):
    live = hl.compare("knn", sizes=[64], devices=["numpy"], repeats=1, progress=False)
    record(live, folder=tmp_path)
    monkeypatch.setenv("HETLAB_RECORDED", str(tmp_path))
    ds = hl.compare("knn", sizes=[64], devices=["numpy"], repeats=1, progress=False,
                    include_recorded=True)
    assert "recorded" in ds["source"].values.tolist()


def test_record_refuses_a_run_with_nothing_measured(tmp_path):
    ds = hl.compare("fps", sizes=[10], devices=["cupy"], repeats=1, progress=False)
    if ds["source"].item() == "measured":
        pytest.skip("a GPU is present")
    with pytest.raises(hl.InvalidInputError, match="at least one measured"):
        record(ds, folder=tmp_path)


def test_dashboard_runs_and_offers_download():
    pytest.importorskip("ipywidgets")
    dash = hl.widgets.Comparison(sizes="50,100")
    for name, box in dash.devices.items():
        box.value = name == "numpy"
        assert box.disabled == (not hl.core.registry.get_backend(name).is_available())
        if box.disabled:
            assert "(" in box.description  # the reason is shown
    ds = dash.run()
    assert ds is dash.dataset and bool(ds["verified"].all())
    assert dash.progress.value == dash.progress.max == 2
    assert dash.download.value.startswith('<a download="fps-compare.nc"')
    assert type(dash.chart.children[0]).__name__ == "BokehModel"
    dash.sizes.value = "a,b"
    assert dash.run() is None  # a clean message, not a crash
