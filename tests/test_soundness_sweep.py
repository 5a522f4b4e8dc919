"""Soundness of sweeps and results: no unit's failure loses another unit, every bad argument
of the sweep/results API is a hetlab error naming it, and the Dataset is never changed."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
import xarray as xr

import hetlab as hl
from hetlab import bench
from hetlab.bench import UnitResult, case_args, case_for, measure_unit
from hetlab.check import check, median_time
from hetlab.core import registry
from hetlab.results import to_dataset

HUGE = 10**9  # the size whose case "does not fit in memory"


def _failing_kernel(monkeypatch, exc: BaseException, name: str = "fps_flaky") -> str:
    """Register a copy of fps whose case generation raises ``exc`` at size HUGE."""
    fps = registry.get_kernel("fps")

    def make_case(size, rng):
        if size == HUGE:
            raise exc
        return fps.make_case(size, rng)

    spec = dataclasses.replace(fps, name=name, make_case=make_case)
    monkeypatch.setitem(registry._KERNELS, name, spec)
    monkeypatch.setitem(registry._IMPLS, (name, "numpy"), fps.reference)
    return name


def _status(ds: xr.Dataset, device: str, size: int) -> str:
    return str(ds["status"].sel(device=device, size=size).item())


# ---- item 8: a sweep keeps every unit that finished -----------------------------------------


@pytest.mark.parametrize("with_checkpoint", [False, True], ids=["no-checkpoint", "checkpoint"])
def test_case_that_cannot_be_generated_costs_only_its_own_unit(monkeypatch, tmp_path,
                                                               with_checkpoint):
    kernel = _failing_kernel(monkeypatch, MemoryError("cannot allocate 12 GB"))
    ckpt = tmp_path / "sweep.jsonl" if with_checkpoint else None
    ds = hl.compare(kernel, sizes=[40, HUGE, 80], devices=["numpy"], repeats=2,
                    progress=False, checkpoint=ckpt)
    assert _status(ds, "numpy", 40) == "ok" and _status(ds, "numpy", 80) == "ok"
    assert bool(ds["verified"].sel(size=40)) and bool(ds["verified"].sel(size=80))
    bad = _status(ds, "numpy", HUGE)
    assert bad.startswith("error: MemoryError") and "cannot allocate 12 GB" in bad
    assert not bool(ds["verified"].sel(size=HUGE))
    assert np.isnan(ds["time_s"].sel(size=HUGE)).all()
    assert (ds["time_s"].sel(size=[40, 80]) > 0).all()
    assert np.isnan(ds["flops"].sel(size=HUGE)) and (ds["flops"].sel(size=[40, 80]) > 0).all()
    if with_checkpoint:
        lines = [json.loads(x) for x in ckpt.read_text().splitlines()]
        assert sorted(r["unit"]["size"] for r in lines) == [40, 80, HUGE]
        seen = []  # a rerun from the checkpoint measures nothing again
        again = hl.compare(kernel, sizes=[40, HUGE, 80], devices=["numpy"], repeats=2,
                           progress=False, checkpoint=ckpt, callback=lambda *a: seen.append(a))
        assert seen == []
        np.testing.assert_array_equal(again["status"].values, ds["status"].values)


@pytest.mark.parametrize("exc", [RuntimeError("generator bug"), ValueError("bad case"),
                                 hl.InvalidInputError("fps: n_samples must be..."),
                                 OverflowError("too big")], ids=lambda e: type(e).__name__)
def test_any_exception_of_case_generation_becomes_the_units_status(monkeypatch, exc):
    kernel = _failing_kernel(monkeypatch, exc)
    ds = hl.compare(kernel, sizes=[HUGE, 30], devices=["numpy"], repeats=1, progress=False)
    assert _status(ds, "numpy", 30) == "ok"
    assert _status(ds, "numpy", HUGE).startswith(f"error: {type(exc).__name__}")
    unit = measure_unit(kernel, "numpy", HUGE, repeats=1)  # the unit itself never raises
    assert unit.status.startswith("error:") and not unit.verified


def test_a_result_that_cannot_be_compared_is_a_wrong_result(monkeypatch):
    monkeypatch.setitem(registry._IMPLS, ("fps", "numpy"), lambda **kw: "not an array")
    unit = measure_unit("fps", "numpy", 50, repeats=1)
    assert unit.status.startswith(("wrong result", "failed")) and not unit.verified


def test_keyboard_interrupt_returns_what_finished(monkeypatch, tmp_path):
    kernel = _failing_kernel(monkeypatch, KeyboardInterrupt())
    ckpt = tmp_path / "sweep.jsonl"
    with pytest.warns(RuntimeWarning, match="interrupted"):
        ds = hl.compare(kernel, sizes=[30, HUGE, 60], devices=["numpy"], repeats=1,
                        progress=False, checkpoint=ckpt)
    assert _status(ds, "numpy", 30) == "ok"
    assert _status(ds, "numpy", HUGE).startswith("interrupted")
    assert _status(ds, "numpy", 60).startswith("interrupted")
    assert len(ckpt.read_text().splitlines()) == 1  # interrupted units are not "finished"


def test_dask_path_keeps_every_unit(monkeypatch):
    distributed = pytest.importorskip("distributed")
    kernel = _failing_kernel(monkeypatch, MemoryError("no room"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                                dashboard_address=":0") as client:
            ds = hl.compare(kernel, sizes=[40, HUGE], devices=["numpy"], repeats=1,
                            progress=False, client=client)
            with pytest.raises(hl.InvalidInputError, match="run_units: seed"):
                hl.distributed.run_units(client, [(40, "numpy")], kernel, seed=-1, repeats=1,
                                         warmup=1)
            with pytest.raises(hl.InvalidInputError, match=r"run_units: .*device"):
                hl.distributed.run_units(client, [(40, "tpu")], kernel, seed=0, repeats=1,
                                         warmup=1)
    assert _status(ds, "numpy", 40) == "ok"
    assert "MemoryError" in _status(ds, "numpy", HUGE)


def test_corrupt_checkpoint_lines_are_ignored(tmp_path):
    ckpt = tmp_path / "sweep.jsonl"
    key = {"kernel": "fps", "seed": 0, "repeats": 1, "warmup": 1}
    ckpt.write_text("[]\n3\n" + json.dumps({"sweep": key, "unit": {"bogus": 1}}) + "\n")
    ds = hl.compare("fps", sizes=[30], devices=["numpy"], repeats=1, progress=False,
                    checkpoint=ckpt)
    assert _status(ds, "numpy", 30) == "ok"


def test_numpy_integers_are_accepted_and_stored_as_python_ints(tmp_path):
    ckpt = tmp_path / "sweep.jsonl"
    ds = hl.compare(hl.fps, sizes=np.array([30, 60]), devices=np.array(["numpy"]),
                    repeats=np.int64(2), warmup=np.int32(1), seed=np.uint8(3), progress=False,
                    checkpoint=ckpt)
    assert ds["size"].values.tolist() == [30, 60] and ds.sizes["repeat"] == 2
    assert (ds["status"] == "ok").all() and ds.attrs["seed"] == 3
    ds2 = hl.compare("fps", sizes=[np.int16(30)], devices=["numpy"], repeats=1,
                     progress=False)
    assert ds2["size"].values.tolist() == [30]


def test_known_but_unavailable_device_is_a_status_not_an_error():
    reason = registry.get_backend("cupy").why_not()
    if reason is None:
        pytest.skip("cupy is available here")
    ds = hl.compare("fps", sizes=[30], devices=["numpy", "cupy"], repeats=1, progress=False)
    assert _status(ds, "cupy", 30).startswith("unavailable")


# ---- argument checks ----------------------------------------------------------------------


class _NotAClient:
    """No Dask client (a repr that is the same in every process, for stable test ids)."""

    def __repr__(self) -> str:
        return "NotAClient()"


BAD_COMPARE = [
    ({"sizes": None}, "sizes"),
    ({"sizes": [2.7]}, "sizes"),
    ({"sizes": [2.0]}, "sizes"),
    ({"sizes": []}, "sizes"),
    ({"sizes": [0]}, "sizes"),
    ({"sizes": [-5]}, "sizes"),
    ({"sizes": [True]}, "sizes"),
    ({"sizes": [10, 10]}, "sizes"),
    ({"sizes": 100}, "sizes"),
    ({"sizes": "100"}, "sizes"),
    ({"sizes": np.array([[10, 20]])}, "sizes"),
    ({"sizes": [np.float64(10)]}, "sizes"),
    ({"devices": "numba"}, "devices"),
    ({"devices": ["nmba"]}, "device"),
    ({"devices": []}, "devices"),
    ({"devices": ["numpy", "numpy"]}, "devices"),
    ({"devices": [3]}, "device"),
    ({"repeats": 2.5}, "repeats"),
    ({"repeats": 0}, "repeats"),
    ({"repeats": True}, "repeats"),
    ({"repeats": "3"}, "repeats"),
    ({"warmup": 0}, "warmup"),
    ({"warmup": 1.0}, "warmup"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"seed": None}, "seed"),
    ({"kernel": "no_such_kernel"}, "kernel"),
    ({"kernel": 3}, "kernel"),
    ({"progress": "yes"}, "progress"),
    ({"callback": 3}, "callback"),
    ({"include_recorded": "yes"}, "include_recorded"),
    ({"checkpoint": 3}, "checkpoint"),
    ({"checkpoint": "/no/such/folder/sweep.jsonl"}, "checkpoint"),
    ({"client": _NotAClient()}, "client"),
]


@pytest.mark.parametrize("bad,name", BAD_COMPARE, ids=[repr(b) for b, _ in BAD_COMPARE])
def test_compare_refuses_bad_arguments_naming_them(bad, name, monkeypatch):
    ran = []
    monkeypatch.setattr("hetlab.sweep.measure_unit", lambda *a, **k: ran.append(a))
    kw = {"kernel": "fps", "sizes": [20], "devices": ["numpy"], "repeats": 1,
          "progress": False, **bad}
    with pytest.raises(hl.InvalidInputError, match=rf"^compare: .*{name}") as info:
        hl.compare(kw.pop("kernel"), **kw)
    assert "got" in str(info.value)
    assert ran == []  # refused before any work


def test_unknown_device_lists_the_registered_names():
    with pytest.raises(hl.InvalidInputError) as info:
        hl.compare("fps", sizes=[10], devices=["tpu"])
    for name in hl.backend_names():
        assert repr(name) in str(info.value)


BAD_SAVE = [(None, "ds"), ({"a": 1}, "ds"), (xr.DataArray([1.0]), "ds"), (np.zeros(3), "ds")]


@pytest.mark.parametrize("obj,name", BAD_SAVE, ids=[type(o).__name__ for o, _ in BAD_SAVE])
def test_save_refuses_what_is_not_a_dataset(tmp_path, obj, name):
    with pytest.raises(hl.InvalidInputError, match=rf"^save: {name} must be an xarray.Dataset"):
        hl.save(obj, tmp_path / "x.nc")
    assert not (tmp_path / "x.nc").exists()


@pytest.fixture(scope="module")
def small_ds() -> xr.Dataset:
    return hl.compare("fps", sizes=[30], devices=["numpy"], repeats=1, progress=False)


@pytest.mark.parametrize("path", [None, 3, "/no/such/folder/x.nc", ""])
def test_save_refuses_bad_paths(small_ds, path):
    with pytest.raises(hl.InvalidInputError, match=r"^save: path"):
        hl.save(small_ds, path)


def test_save_refuses_a_folder_and_leaves_the_dataset_unchanged(small_ds, tmp_path):
    before = small_ds.copy(deep=True)
    with pytest.raises(hl.InvalidInputError, match=r"^save: path"):
        hl.save(small_ds, tmp_path)
    hl.save(small_ds, tmp_path / "ok.nc")
    xr.testing.assert_identical(small_ds, before)


def _text_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("not a netCDF file\n")
    return p


def _garbage(tmp_path):
    p = tmp_path / "broken.nc"
    p.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    return p


@pytest.mark.parametrize("make", [
    lambda t: t / "missing.nc", lambda t: t, _text_file, _garbage, lambda t: None,
    lambda t: 3,
], ids=["missing", "folder", "text", "truncated-hdf5", "None", "int"])
def test_load_refuses_what_is_not_a_netcdf_file(tmp_path, make):
    with pytest.raises(hl.InvalidInputError, match=r"^load: path"):
        hl.load(make(tmp_path))


@pytest.mark.parametrize("call,match", [
    (lambda: measure_unit("fps", "numpy", 0), "measure_unit: size"),
    (lambda: measure_unit("fps", "numpy", 2.5), "measure_unit: size"),
    (lambda: measure_unit("fps", "tpu", 10), "measure_unit: .*device"),
    (lambda: measure_unit("nope", "numpy", 10), "measure_unit: kernel"),
    (lambda: measure_unit("fps", "numpy", 10, repeats=0), "measure_unit: repeats"),
    (lambda: measure_unit("fps", "numpy", 10, seed=-1), "measure_unit: seed"),
    (lambda: case_args("fps", -3, 0), "case_args: size"),
    (lambda: case_for("fps", 10, -1), "case_for: seed"),
    (lambda: check(lambda **k: None, "fps", sizes=[1.5]), "check: sizes"),
    (lambda: check(lambda **k: None, "fps", sizes=None), "check: sizes"),
    (lambda: check(lambda **k: None, "fps", against="numba"), "check: against"),
    (lambda: check(lambda **k: None, "fps", against=["tpu"]), "check: .*device"),
    (lambda: check(lambda **k: None, "fps", repeats=0), "check: repeats"),
    (lambda: check(lambda **k: None, "fps", seed=-1), "check: seed"),
    (lambda: check(lambda **k: None, "nope"), "check: kernel"),
    (lambda: median_time(lambda: None, 0), "median_time: repeats"),
    (lambda: median_time(3, 2), "median_time: fn"),
    (lambda: to_dataset(registry.get_kernel("fps"), [UnitResult("numba", 10)], ["numpy"],
                        [10], repeats=1, warmup=1, seed=0), "to_dataset: every unit"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_bench_check_and_results_helpers_refuse_bad_arguments(call, match):
    with pytest.raises(hl.InvalidInputError, match=match):
        call()


def test_check_keeps_reporting_when_a_case_cannot_be_generated(monkeypatch):
    kernel = _failing_kernel(monkeypatch, MemoryError("no room"))
    ref = registry.get_kernel("fps").reference
    report = check(lambda points, n_samples, start=0: ref(points, n_samples, start), kernel,
                   sizes=[5, HUGE], against=["numpy"],
                   repeats=1)
    rows = {r["size"]: r for r in report.rows}
    assert rows[5]["passed"] and not rows[HUGE]["passed"]
    assert "MemoryError" in rows[HUGE]["detail"]


@pytest.fixture(autouse=True)
def _fresh_case_cache():
    bench._case_args.cache_clear()
    bench._case_for.cache_clear()
    yield
    bench._case_args.cache_clear()
    bench._case_for.cache_clear()


def test_speedup_refuses_a_baseline_that_is_not_a_device_name(small_ds):
    for bad in (["numpy"], 3, None, "tpu"):
        with pytest.raises(hl.InvalidInputError, match="speedup: baseline"):
            small_ds.hetlab.speedup(bad)


def test_a_real_numpy_memory_error_is_reported_by_its_public_name():
    try:
        np.empty(2**50, np.uint8)  # numpy's private _ArrayMemoryError
    except MemoryError as exc:
        assert bench.describe_error(exc).startswith("MemoryError: ")
    # a case too large for this machine is refused before it is allocated; the unit keeps it
    ds = hl.compare("fps", sizes=[30, 10**13], devices=["numpy"], repeats=1, progress=False)
    assert _status(ds, "numpy", 30) == "ok"
    assert _status(ds, "numpy", 10**13).startswith("error: InvalidInputError: make_cloud")
    assert "memory" in _status(ds, "numpy", 10**13)


def test_sizes_beyond_int64_are_refused():
    with pytest.raises(hl.InvalidInputError, match="compare: sizes"):
        hl.compare("fps", sizes=[10, 2**70], devices=["numpy"])
