"""The GPU tier (``stream(tier="gpu")``): orchestration checked with NumPy standing in for CuPy
(slot rotation, budget accounting, event order, the layer mathematics incl. device-side W8/W4
dequantization); the real GPU tests skip without a GPU, with the reason. No figure here."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import scipy.special

from hetlab import BackendUnavailable, InvalidInputError
from hetlab import offload_memory as om

TOKENS = np.array([3, 1, 4, 1, 5, 9, 2, 6])


class NumpyStandInForCupy:
    """NumPy standing in for CuPy: every operation runs at once on the host, streams are names
    and events are stamped with a counter, so the test can check what waited for what."""

    xp, name = np, "NumPy stand-in (not a GPU)"

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self.clock = 0

    def erf(self, x):
        return scipy.special.erf(x).astype(np.float32)

    def stream(self):
        return f"stream{sum(1 for e in self.log if e[0] == 'stream')}"

    def event(self):
        return {"t": None}

    def record(self, ev, stream):
        self.clock += 1
        ev["t"] = self.clock
        self.log.append(("record", stream, id(ev)))

    def wait(self, stream, ev):
        assert ev["t"] is not None, "waiting on an event never recorded"
        self.log.append(("wait", stream, id(ev)))

    def on(self, stream):
        return contextlib.nullcontext()

    def pinned(self, nbytes):
        return np.zeros(int(nbytes), np.uint8)

    def pinned_like(self, a):
        return np.zeros(a.shape, a.dtype)

    def empty(self, nbytes):
        return np.zeros(int(nbytes), np.uint8)

    def copy_h2d(self, dst, src, stream):
        self.log.append(("copy", stream, id(dst.base if dst.base is not None else dst)))
        dst[...] = src

    def copy_d2h(self, dst, src, stream):
        dst[...] = src

    def elapsed_s(self, a, b):
        return (b["t"] - a["t"]) * 1e-3  # event counter, not time: no figure comes from this

    def synchronize(self):
        pass

    def to_host(self, x):
        return np.asarray(x)


@pytest.fixture(scope="module")
def model() -> om.Model:
    return om.Model.decoder(d_model=128, n_heads=4, d_ff=256, n_layers=4, vocab=100, seed=1)


def _rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_gpu_run_orchestration_with_numpy_standing_in(model, prefetch):
    dev = NumpyStandInForCupy()
    ref = model.forward(TOKENS)
    layer = model.item_nbytes("L0", 32)
    budget = (prefetch + 1) * (layer + 8192) + 1_000_000
    with om.stream(model, budget=budget, tier="gpu", prefetch=prefetch, gpu_device=dev) as run:
        out = run.forward(TOKENS)
        assert _rel(out, ref) < 1e-5  # float32, another summation order
        assert len(run.slots) == prefetch + 1
        assert run.budget.peak <= run.budget.total
        assert run.budget.pool("weights").held == (prefetch + 1) * run.slot_bytes  # slots only
        rep = run.report
        assert rep.tier == "gpu" and rep.io_mode == "pinned-host-to-device"
        assert [t.item for t in rep.items] == model.items
        # the weights never fit whole: the run streams them
        assert sum(t.bytes_read for t in rep.items) > run.budget.pool("weights").limit
        # slot rotation: each slot's copies follow each other in item order, and a copy into
        # a slot waits for the event that ended the compute of that slot's previous item
        copies = [e for e in dev.log if e[0] == "copy" and e[1] == run.copy_stream]
        slots = {id(s): k for k, s in enumerate(run.slots)}
        order = [slots[e[2]] for e in copies if e[2] in slots]
        assert order == [(j % (prefetch + 1)) for j in range(model.n_layers + 1)]
        waits = [e for e in dev.log if e[0] == "wait" and e[1] == run.copy_stream]
        assert len(waits) >= model.n_layers + 1 - (prefetch + 1)
        # each compute waits on the copy stream's event before it starts
        c_waits = [e for e in dev.log if e[0] == "wait" and e[1] == run.compute_stream]
        assert len(c_waits) >= len(model.items)
        # report times come from the events' order: copy of L0 ends before its compute starts
        for t in rep.items:
            assert t.read_end <= t.compute_start + 1e-12
        if prefetch:  # a copy issued ahead is recorded before the previous compute ends
            l1, l0 = rep.items[2], rep.items[1]
            assert l1.read_end < l0.compute_end


@pytest.mark.parametrize("bits", [16, 8, 4])
def test_gpu_ops_dequantize_on_the_device_like_the_cpu(model, bits):
    dev = NumpyStandInForCupy()
    ref = model.forward(TOKENS, bits=bits)
    with om.stream(model, budget="4MB", tier="gpu", prefetch=1, bits=bits, gpu_device=dev) as run:
        assert _rel(run.forward(TOKENS), ref) < 1e-4


def test_gpu_kv_cache_spills_and_is_read_back_ahead(model):
    dev = NumpyStandInForCupy()
    tokens = np.arange(30) % 100
    full = model.forward(tokens)
    with om.stream(model, budget="4MB", kv_budget="120kB", tier="gpu", prefetch=1, kv_block=4,
                   gpu_device=dev) as run:
        out = [run.forward(tokens[:5])] + [run.forward(tokens[i:i + 1]) for i in range(5, 30)]
        assert _rel(np.concatenate(out), full) < 1e-5
        assert sum(t.kv_bytes_written for r in run.reports for t in r.items) > 0
        assert sum(r.kv_prefetch_bytes for r in run.reports) > 0
        assert run.budget.pool("kv").peak <= run.budget.pool("kv").limit
        assert run.budget.peak <= run.budget.total


def test_gpu_budget_too_small_for_the_slots(model):
    with pytest.raises(om.BudgetError, match="slots"):
        om.stream(model, budget="300kB", tier="gpu", prefetch=2,
                  gpu_device=NumpyStandInForCupy())


def test_gpu_tier_on_a_real_gpu(model):
    from hetlab.offload_memory import gpu

    try:
        gpu.require_gpu()
    except BackendUnavailable as exc:
        with pytest.raises(BackendUnavailable):
            om.stream(model, budget="4MB", tier="gpu")
        pytest.skip(f"no GPU here: {exc}")
    ref = model.forward(TOKENS)  # pragma: no cover - GPU machines only
    with om.stream(model, budget="4MB", tier="gpu", prefetch=1) as run:
        assert _rel(run.forward(TOKENS), ref) < 1e-4
        assert run.budget.peak <= run.budget.total
        assert run.report.overlap_s >= 0 and run.report.read_s > 0


def test_recording_loader_on_a_synthetic_dataset(tmp_path):
    """The loader notebook 09 uses, on a Dataset built here and labeled synthetic (never
    committed to data/recorded)."""
    from hetlab.offload_memory import recording
    from hetlab.offload_memory.report import ItemTiming, Report

    items = [ItemTiming("embed", 4096, 0.0, 0.001, 0.001, 0.002),
             ItemTiming("L0", 8192, 0.001, 0.004, 0.004, 0.009),
             ItemTiming("L1", 8192, 0.004, 0.008, 0.009, 0.014)]
    rep = Report("pinned-host-to-device", "gpu", 1, 16, 30_000, 24_000, 0.02, "toy", items)
    ds = recording.report_dataset(rep, machine="SYNTHETIC test data, not a measurement",
                                  gpu="none", created="2000-01-01T00:00:00+00:00")
    assert recording.find_recordings(tmp_path) == []
    path = recording.save_recording(ds, tmp_path)
    assert path.name == "memory-offload-synthetic-test-data-not-a-measurement-2000-01-01.nc"
    assert recording.find_recordings(tmp_path) == [path]
    back = recording.load_recording(path)
    assert back.attrs["machine"].startswith("SYNTHETIC") and back.attrs["kind"] == "memory-offload"
    assert back["bytes_read"].values.tolist() == [4096, 8192, 8192]
    frame = recording.timeline_frame(back)
    assert frame["what"].tolist() == ["read", "compute"] * 3
    l1 = frame[(frame["item"] == "L1") & (frame["what"] == "read")].iloc[0]
    assert (l1["start_ms"], l1["end_ms"]) == pytest.approx((4.0, 8.0))
    other = ds.drop_vars("stall_s")
    from hetlab.results import save

    save(other, tmp_path / "memory-offload-broken-2000-01-01.nc")
    with pytest.raises(InvalidInputError, match="not a memory-offload recording"):
        recording.load_recording(tmp_path / "memory-offload-broken-2000-01-01.nc")
