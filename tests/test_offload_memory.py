"""hetlab.offload_memory: budget enforced, streamed outputs equal the in-memory model, I/O mode."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from hetlab import BackendUnavailable, HetlabError, InvalidInputError
from hetlab import offload_memory as om
from hetlab.offload_memory import budget as budget_mod
from hetlab.offload_memory import tiers
from hetlab.offload_memory.blocks import MemoryKV

TOKENS = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
#: relative error (Frobenius) of the streamed W16/W8/W4 output against the float32 model: this
#: seeded 3-layer network, round-to-nearest group-wise formats (measured 4e-4, 0.012, 0.21)
TOL = {16: 2e-3, 8: 0.03, 4: 0.35}


@pytest.fixture(scope="module")
def model() -> om.Model:
    return om.Model.decoder(d_model=128, n_heads=4, d_ff=256, n_layers=3, vocab=100, seed=1)


@pytest.fixture(scope="module")
def ref(model: om.Model) -> np.ndarray:
    return model.forward(TOKENS)


def _layer_bytes(model: om.Model, bits: int) -> int:
    return tiers.round_up(model.item_nbytes("L0", bits) + 64 * 20)


# --- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "nbytes"), [("256MB", 256_000_000), ("1.5GiB", 1610612736),
                                               ("4096", 4096), (4096, 4096), ("2 kib", 2048)])
def test_parse_budget(text, nbytes):
    assert om.parse_budget(text) == nbytes


@pytest.mark.parametrize("bad", ["-5MB", "0", 0, -1, "12XB", "MB", 1.5, True, None, "1e400GB"])
def test_parse_budget_refuses(bad):
    with pytest.raises(InvalidInputError, match="budget"):
        om.parse_budget(bad)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"prefetch": -1}, "prefetch"), ({"prefetch": 1.5}, "prefetch"),
    ({"tier": "tape"}, "tier"), ({"bits": 3}, "bits"), ({"bits": 2}, "bits"),
    ({"bits": 32.0}, "bits"), ({"budget": "-1MB"}, "budget"),
    ({"kv_budget": "4MB"}, "kv_budget"), ({"io": "raw"}, "io"),
])
def test_stream_refuses_bad_arguments(model, kwargs, match):
    args = {"budget": "4MB", "prefetch": 1, "bits": 32} | kwargs
    with pytest.raises(InvalidInputError, match=match):
        om.stream(model, **args)


def test_stream_refuses_a_non_model():
    with pytest.raises(InvalidInputError, match="Model"):
        om.stream("llama", budget="1MB")


def test_budget_smaller_than_one_layer(model, tmp_path):
    layer = model.item_nbytes("L0")
    with pytest.raises(om.BudgetError, match="one layer alone must fit") as info:
        om.stream(model, budget=layer // 2 * 4 // 3, kv_budget=layer // 4, path=str(tmp_path))
    assert isinstance(info.value, InvalidInputError)
    assert not [f for f in os.listdir(tmp_path) if f.startswith("hetlab-offload-w")]


def test_tokens_checked(model):
    with om.stream(model, budget="4MB") as run:
        for bad in ([100], [-1], np.array([[1, 2]]), [0.5], []):
            with pytest.raises(InvalidInputError, match="tokens"):
                run.forward(np.asarray(bad))


# --- outputs ----------------------------------------------------------------------------

@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_fp32_streaming_equals_in_memory(model, ref, prefetch):
    with om.stream(model, budget="4MB", prefetch=prefetch) as run:
        y = run.forward(TOKENS)
        assert np.array_equal(y, ref)
        assert run.budget.peak <= run.budget.total


@pytest.mark.parametrize("bits", [16, 8, 4])
def test_quantized_streaming(model, ref, bits):
    with om.stream(model, budget="4MB", prefetch=2, bits=bits) as run:
        y = run.forward(TOKENS)
        # exactly the in-memory model at the same format …
        assert np.array_equal(y, model.forward(TOKENS, bits=bits))
        # … and within the format's tolerance of the float32 model
        assert np.linalg.norm(y - ref) / np.linalg.norm(ref) < TOL[bits]
        per_layer = [t.bytes_read for t in run.report.items if t.item.startswith("L")]
        assert per_layer == [run.store.nbytes(f"L{i}") for i in range(3)]
        assert per_layer[0] < _layer_bytes(model, 32)  # fewer bytes than float32


def test_fewer_bits_fewer_bytes(model):
    read = {}
    for bits in (32, 16, 8, 4):
        with om.stream(model, budget="4MB", prefetch=1, bits=bits) as run:
            run.forward(TOKENS[:2])
            read[bits] = run.report.bytes_read
    assert read[4] < read[8] < read[16] < read[32]


# --- the budget ----------------------------------------------------------------------------

@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_budget_never_exceeded(model, ref, prefetch, monkeypatch):
    seen: list[int] = []
    update = budget_mod.Budget._update

    def spy(self):
        update(self)
        seen.append(self.held)

    monkeypatch.setattr(budget_mod.Budget, "_update", spy)
    layer = _layer_bytes(model, 32)
    total = int(2.5 * layer) + 200_000  # room for two layers: prefetch 2 must wait
    with om.stream(model, budget=total, kv_budget=200_000, prefetch=prefetch) as run:
        assert np.array_equal(run.forward(TOKENS), ref)
        assert max(seen) <= total
        assert run.budget.peak == max(seen) <= total
        assert run.budget.peak >= run.store.nbytes("L0")  # it really counts what it holds
        assert run.report.peak_bytes <= total
        if prefetch == 2:
            act = model.activation_nbytes(TOKENS.shape)  # counted in the pool too
            assert run.budget.pool("weights").peak <= 2 * layer + 8192 * 4 + act


def test_kv_cache_spills_and_decodes_exactly(model):
    tokens = np.arange(40) % 100
    full = model.forward(tokens)
    kv = MemoryKV()
    chunks = [model.forward(tokens[:5], kv=kv)] + [model.forward(tokens[i:i + 1], kv=kv)
                                                    for i in range(5, 40)]
    assert np.array_equal(np.concatenate(chunks), full)  # decode = prefill, in memory
    with om.stream(model, budget="2MB", kv_budget="160kB", prefetch=1, kv_block=4) as run:
        out = [run.forward(tokens[:5])] + [run.forward(tokens[i:i + 1]) for i in range(5, 40)]
        assert np.array_equal(np.concatenate(out), full)
        written = sum(t.kv_bytes_written for r in run.reports for t in r.items)
        read = sum(t.kv_bytes_read for r in run.reports for t in r.items)
        assert written > 0 and read > 0
        assert run.budget.pool("kv").peak <= run.budget.pool("kv").limit
        assert run.budget.peak <= run.budget.total
        run.reset()
        assert np.array_equal(run.forward(tokens[:5]), full[:5])


def test_kv_cache_too_small_is_a_clear_error(model):
    with om.stream(model, budget="2MB", kv_budget="100kB", prefetch=1, kv_block=4) as run:
        with pytest.raises(om.BudgetError, match="kv_budget"):
            for i in range(60):
                run.forward(np.array([i]))
        assert run.budget.pool("weights").held == 0  # the pipeline gave its buffers back


# --- direct I/O and its fallback ---------------------------------------------------------

def _direct_works(directory) -> bool:
    path = os.path.join(directory, "probe")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT)
    except (OSError, AttributeError):
        return False
    os.close(fd)
    os.remove(path)
    return True


def test_io_mode_reported(model, ref, tmp_path):
    with om.stream(model, budget="4MB", path=str(tmp_path)) as run:
        run.forward(TOKENS)
        want = "direct" if _direct_works(tmp_path) else "buffered+dontneed"
        assert run.io_mode == run.report.io_mode == want
        assert f"io={want}" in repr(run.report)


def test_forced_fallback(model, ref, tmp_path):
    with om.stream(model, budget="4MB", io="buffered", path=str(tmp_path)) as run:
        assert np.array_equal(run.forward(TOKENS), ref)
        assert run.report.io_mode == "buffered+dontneed"


def test_o_direct_refused_falls_back(model, ref, tmp_path, monkeypatch):
    real_open = os.open

    def refuse(path, flags, *args):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument (simulated tmpfs)")
        return real_open(path, flags, *args)

    monkeypatch.setattr(tiers.os, "open", refuse)
    with om.stream(model, budget="4MB", path=str(tmp_path)) as run:
        assert np.array_equal(run.forward(TOKENS), ref)
        assert run.io_mode == "buffered+dontneed"
    with pytest.raises(HetlabError, match="refuses O_DIRECT"):
        om.stream(model, budget="4MB", io="direct", path=str(tmp_path))


def test_row_reads_read_only_the_needed_pages(tmp_path):
    t = tiers.TierFile(tmp_path / "e.bin")
    table = np.arange(1000 * 16, dtype=np.float32).reshape(1000, 16)  # 64 B rows, 64 per page
    t.write("emb", {"tok": table})
    rows = np.array([5, 900, 5, 70])
    got, nbytes = t.read_rows("emb", "tok", rows)
    assert np.array_equal(got, table[rows])
    assert nbytes == 3 * tiers.ALIGN
    t.close()
    assert not (tmp_path / "e.bin").exists()


# --- report, cost model, sweep, GPU tier --------------------------------------------------

def test_report_fields(model):
    with om.stream(model, budget="4MB", prefetch=0) as run:
        run.forward(TOKENS)
        rep = run.report
    df = rep.table()
    assert list(df.index) == model.items
    for col in ("bytes_read", "read_s", "compute_s", "overlap_s", "stall_s", "budget_wait_s",
                "kv_bytes_read", "kv_bytes_written"):
        assert col in df.columns
    assert (df["read_s"] > 0).all() and (df["compute_s"] > 0).all()
    assert rep.overlap_s == 0 and df["overlap_s"].sum() == 0  # synchronous: nothing hidden
    assert rep.bytes_read == df["bytes_read"].sum()
    assert rep.wall_s >= rep.read_s + rep.compute_s * 0.99
    assert rep.prefetch == 0 and rep.bits == 32 and rep.tier == "disk"
    pred = om.predict(rep)
    assert (pred["predicted_overlap_s"] <= pred["predicted_serial_s"]).all()
    assert pred.attrs["measured_s"] == rep.wall_s


def test_overlap_measure():
    from hetlab.offload_memory.report import overlap

    assert overlap([(0, 2), (3, 4)], [(1, 3.5)]) == pytest.approx(1.5)
    assert overlap([(0, 1)], [(1, 2)]) == 0


def test_break_even_budget():
    assert om.break_even_budget(100, 10, 2.0, 1.0) == 700
    assert om.break_even_budget(100, 10, 0.5, 1.0) == 200
    with pytest.raises(InvalidInputError):
        om.break_even_budget(0, 10, 1.0, 1.0)


def test_sweep_dataset(model):
    tiny = _layer_bytes(model, 4) // 2
    ds = om.sweep(model, budgets=[tiny, "4MB"], prefetch=[0, 2], bits=[8, 4], tokens=TOKENS[:3])
    assert dict(ds.sizes) == {"budget": 2, "prefetch": 2, "bits": 2}
    assert ds["budget"].attrs["units"] == "B" and ds["wall_s"].attrs["units"] == "s"
    assert ds["bytes_read"].attrs["units"] == "B" and ds["hidden_fraction"].attrs["units"] == "1"
    assert (ds["status"].sel(budget=tiny) == "budget too small").all()
    ok = ds.sel(budget=4_000_000)
    assert (ok["status"] == "ok").all()
    assert (ok["peak_bytes"] <= 4_000_000).all()
    assert bool((ok["bytes_read"].sel(bits=4) < ok["bytes_read"].sel(bits=8)).all())
    assert ds.attrs["io_mode"] and "seeded" in ds.attrs["label"]


def test_gpu_tier_without_gpu(model):
    from hetlab.offload_memory import gpu

    with pytest.raises(BackendUnavailable):
        om.stream(model, budget="4MB", tier="gpu")
    try:
        gpu.require_gpu()
    except BackendUnavailable as exc:
        pytest.skip(f"no GPU here: {exc}")
    copier = gpu.HostToDevice()  # pragma: no cover - GPU machines only
    copier.put("L0", {"w": np.ones((4, 4), np.float32)})
    arrays, ev = copier.fetch("L0")
    ev.synchronize()
    assert float(arrays["w"].sum()) == 16.0


def test_lazy_import():
    import subprocess
    import sys

    code = ("import sys, hetlab as hl; assert 'hetlab.offload_memory' not in sys.modules; "
            "assert hl.offload_memory.stream; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_benchmark_quick_runs():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "memory_offload.py"),
                           "--quick"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for line in ("file system of", "read bandwidth", "overlapped vs synchronous",
                 "goal: overlap hides", "W4 vs W8 vs fp16", "break-even budget",
                 "KV read-back hidden under compute", "prefetch 0: 0% of"):
        assert line in proc.stdout
