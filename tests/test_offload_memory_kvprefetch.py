"""KV read-back prefetch: a spilled layer's blocks read on the reader thread while the layer
before it computes — same output as the in-memory model, budget never exceeded, overlap shown."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload_memory as om
from hetlab.offload_memory import budget as budget_mod

TOKENS = np.arange(40) % 100


@pytest.fixture(scope="module")
def model() -> om.Model:
    return om.Model.decoder(d_model=128, n_heads=4, d_ff=256, n_layers=3, vocab=100, seed=1)


def _decode(run: om.StreamRun) -> np.ndarray:
    out = [run.forward(TOKENS[:5])] + [run.forward(TOKENS[i:i + 1]) for i in range(5, 40)]
    return np.concatenate(out)


@pytest.mark.parametrize("prefetch", [1, 2])
def test_kv_prefetch_equals_in_memory_within_budget(model, prefetch, monkeypatch):
    seen: list[int] = []
    update = budget_mod.Budget._update

    def spy(self):  # every acquire and release, as the accountant sees it
        update(self)
        seen.append(self.held)

    monkeypatch.setattr(budget_mod.Budget, "_update", spy)
    full = model.forward(TOKENS)
    with om.stream(model, budget="2MB", kv_budget="160kB", prefetch=prefetch, kv_block=4) as run:
        assert np.array_equal(_decode(run), full)
        assert max(seen) <= run.budget.total == 2_000_000
        assert run.budget.pool("kv").peak <= run.budget.pool("kv").limit
        reps = run.reports
        prefetched = sum(r.kv_prefetch_bytes for r in reps)
        own = sum(t.kv_bytes_read for r in reps for t in r.items)
        assert prefetched > 0 and prefetched > own  # most read-back went through the reader
        assert sum(r.kv_overlap_s for r in reps) > 0  # read while compute ran
        late = reps[-1]
        assert late.kv_prefetch_bytes > 0 and "KV prefetch" in repr(late)
        df = late.table()
        assert {"kv_prefetch_bytes", "kv_prefetch_s", "kv_overlap_s", "kv_wait_s"} <= set(df)
        assert late.bytes_read >= late.kv_prefetch_bytes + df["bytes_read"].sum()
        for r in reps:  # layer l + 1's read-back starts after layer l's compute has started
            for n in range(1, model.n_layers):
                t, before = r.items[n + 1], r.items[n]
                if t.kv_prefetch_bytes:
                    assert t.kv_prefetch_start >= before.compute_start
        run.reset()  # a new sequence: prefetched blocks of the old one are dropped
        assert np.array_equal(run.forward(TOKENS[:5]), full[:5])
        assert run.budget.pool("kv").held == 5 * 2 * 128 * 4 * model.n_layers


def test_synchronous_run_prefetches_nothing(model):
    with om.stream(model, budget="2MB", kv_budget="160kB", prefetch=0, kv_block=4) as run:
        assert np.array_equal(_decode(run), model.forward(TOKENS))
        assert sum(r.kv_prefetch_bytes for r in run.reports) == 0
        assert sum(t.kv_bytes_read for r in run.reports for t in r.items) > 0


def test_a_full_kv_pool_skips_the_prefetch_and_reads_in_the_layer(model):
    """A prefetch that does not fit never waits (no deadlock): the layer reads its blocks."""
    from hetlab.offload_memory.kvcache import SpillingKV
    from hetlab.offload_memory.tiers import TierFile

    b = budget_mod.Budget(100_000, {"kv": 12_000})  # 3 kB of tail per layer
    pool = b.pool("kv")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        kv = SpillingKV(TierFile(f"{d}/kv.bin"), pool, n_layers=2, block=32)
        rng = np.random.default_rng(0)
        k = rng.standard_normal((40, 2, 8), dtype=np.float32)
        v = rng.standard_normal((40, 2, 8), dtype=np.float32)
        kv.append(0, k, v)  # 5 kB: 32 tokens spill
        assert kv.length(0) == 40 and len(kv._tail_k[0]) == 8
        assert kv.plan(range(2)) == [0]
        pool.acquire(pool.limit - pool.held, what="a stand-in for other layers' tails")
        pre = kv.prefetch(0)
        assert pre.skipped == "kv pool full" and pre.nbytes == 0 and pre.done.is_set()
        pool.release(pool.held - sum(a.nbytes for a in (kv._tail_k[0], kv._tail_v[0])))
        keys, values = kv.get(0)
        assert np.array_equal(keys, k) and np.array_equal(values, v)
        assert kv.take_stats(0)[0]["bytes_read"] > 0
        kv.done(0)
        kv.tier.close()


def test_a_layer_asking_before_its_prefetch_ran_waits_for_it(model):
    """get() before the reader reached the job: it waits, and the job still finds its entry."""
    import tempfile
    import threading
    import time

    from hetlab.offload_memory.kvcache import SpillingKV
    from hetlab.offload_memory.tiers import TierFile

    pool = budget_mod.Budget(100_000, {"kv": 12_000}).pool("kv")
    with tempfile.TemporaryDirectory() as d:
        kv = SpillingKV(TierFile(f"{d}/kv.bin"), pool, n_layers=2, block=32)
        k = np.random.default_rng(1).standard_normal((40, 2, 8), dtype=np.float32)
        kv.append(0, k, -k)
        kv.plan(range(2))
        got: dict = {}
        asker = threading.Thread(target=lambda: got.update(kv=kv.get(0)), daemon=True)
        asker.start()  # get() before the prefetch ran
        time.sleep(0.2)
        kv.prefetch(0)
        asker.join(10)
        assert not asker.is_alive(), "get() hung: the prefetch could not find its entry"
        keys, values = got["kv"]
        assert np.array_equal(keys, k) and np.array_equal(values, -k)
        assert kv.take_stats(0)[0]["prefetch_wait_s"] > 0.1
        kv.done(0)
        kv.tier.close()
