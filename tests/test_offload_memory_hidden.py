"""``hidden_fraction``: reads (weights and KV prefetch) against compute (KV I/O and waits cut
out), both as interval unions — never above 1, and known values on synthetic timelines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hetlab import offload_memory as om
from hetlab.offload_memory.report import ItemTiming, Report, measure


def _report(items: list[ItemTiming], prefetch: int = 1) -> Report:
    return Report("direct", "disk", prefetch, 32, 1000, 500, 7.0, "synthetic", items)


def _timeline() -> list[ItemTiming]:
    return [
        ItemTiming("embed", 8, 0.0, 1.0, 1.0, 2.0),
        # L0 waits 0.5 s for its KV read-back, which the reader does in 2.0-2.5 s
        ItemTiming("L0", 8, 1.0, 2.0, 2.0, 5.0, kv_wait_s=0.5, kv_spans=[(2.0, 2.5)],
                   kv_prefetch_bytes=64, kv_prefetch_start=2.0, kv_prefetch_end=2.5),
        ItemTiming("L1", 8, 2.5, 4.0, 5.0, 6.0),
        ItemTiming("final", 0, compute_start=6.0, compute_end=6.5, resident=True),
    ]


def test_known_value_with_kv_prefetch_reads():
    rep = _report(_timeline())
    # reads: 0-1, 1-2, KV 2-2.5, 2.5-4 -> 4.0 s; compute: 1-2, 2.5-6.5 -> 5.0 s
    assert measure(rep.read_intervals()) == pytest.approx(4.0)
    assert measure(rep.compute_intervals()) == pytest.approx(5.0)
    assert rep.compute_s == pytest.approx(5.0)
    # both ran in 1-2 and 2.5-4: the KV read (2-2.5) is not hidden, L0 waited for it
    assert rep.hidden_s == pytest.approx(2.5)
    assert rep.hidden_fraction == pytest.approx(2.5 / 4.0)
    assert rep.kv_overlap_s == 0.0 and rep.overlap_s == pytest.approx(2.5)
    items = {t.item: t for t in rep.items}
    assert items["L0"].compute_s == pytest.approx(2.5) and items["L1"].overlap_s == 1.5


def test_kv_waits_no_longer_push_it_past_one():
    # one layer: its weights read 0-2 while it "computes" 0-2, of which 1.5 s was a KV wait.
    # Old definition: overlap with the whole interval (2 s) over compute_s (0.5 s) = 400%.
    t = ItemTiming("L0", 8, 0.0, 2.0, 0.0, 2.0, kv_wait_s=1.5, kv_spans=[(0.0, 1.5)])
    rep = _report([t])
    assert rep.compute_s == pytest.approx(0.5)
    assert rep.hidden_s == pytest.approx(0.5) and rep.hidden_fraction == pytest.approx(1.0)
    # without the spans (a hand-made timing) the KV time comes off the interval's end
    t2 = ItemTiming("L0", 8, 0.0, 2.0, 0.0, 2.0, kv_wait_s=1.5)
    assert _report([t2]).hidden_fraction == pytest.approx(1.0)
    assert t2.compute_intervals() == [(0.0, 0.5)]


def test_bound_on_random_timelines():
    rng = np.random.default_rng(0)
    for _ in range(200):
        items, at_r, at_c = [], 0.0, 0.0
        for n in range(int(rng.integers(1, 8))):
            r0 = at_r + rng.uniform(0, 0.3)
            r1 = r0 + rng.uniform(0, 1)
            c0 = max(at_c, r1 - rng.uniform(0, 0.5)) + rng.uniform(0, 0.3)
            c1 = c0 + rng.uniform(0.01, 1)
            spans = sorted(rng.uniform(c0, c1, size=(int(rng.integers(0, 3)), 2)).tolist())
            spans = [(min(a, b), max(a, b)) for a, b in spans]
            kv0 = r1 + rng.uniform(0, 0.2)
            kv1 = kv0 + rng.uniform(0, 0.5)
            items.append(ItemTiming(f"L{n}", 8, r0, r1, c0, c1, kv_spans=spans,
                                    kv_wait_s=sum(b - a for a, b in spans),
                                    kv_prefetch_bytes=int(rng.integers(0, 2)) * 64,
                                    kv_prefetch_start=kv0, kv_prefetch_end=kv1))
            at_r, at_c = max(r1, kv1), c1
        h = _report(items).hidden_fraction
        assert math.isnan(h) or 0.0 <= h <= 1.0


def test_real_decode_with_spilled_kv_records_spans_and_stays_bounded():
    m = om.Model.decoder(d_model=128, n_heads=4, d_ff=256, n_layers=3, vocab=100, seed=1)
    toks = np.arange(40) % 100
    with om.stream(m, budget="2MB", kv_budget="160kB", prefetch=1, kv_block=4) as run:
        run.forward(toks[:5])
        for i in range(5, 40):
            run.forward(toks[i:i + 1])
        reps = run.reports
    assert any(t.kv_spans for r in reps for t in r.items)  # the cache spilled and read back
    for r in reps:
        assert math.isnan(r.hidden_fraction) or 0.0 <= r.hidden_fraction <= 1.0
        for t in r.items:
            kv = t.kv_read_s + t.kv_write_s + t.kv_wait_s
            assert t.compute_s == pytest.approx(t.compute_end - t.compute_start - kv, abs=1e-9)
