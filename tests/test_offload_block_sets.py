"""Which function-block sets the search measures (searching.driver._try_blocks): all blocks,
each alone, then the blocks that each beat the serial njit alone, together. Timings are
stubbed, so the choice is checked without a timed run."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.runtime.measure import Measurement
from hetlab.offload.searching import driver
from hetlab.offload.targets.registry import get_target

from .offload_corpus.heldout_probe import PROBES, gemver_like


def _run(monkeypatch, ms_of):
    """_try_blocks on gemver_like (a rank-2 update, x += beta Aᵀy, x += z, w += alpha A x)
    with each set's time (ms) given by ``ms_of(set)``."""
    report = offload.analyze(gemver_like)
    assert [b.id for b in report.blocks] == ["B1", "B2", "B3", "B4"]
    seen: list[tuple[str, ...]] = []

    def fake(report_, build, args, expected, **options):
        # the set being built is the `blocks=` of the transform call inside `build`
        calls = {}
        monkeypatch.setattr(driver, "transform", lambda r, blocks, target: calls.setdefault(
            "blocks", tuple(blocks)))
        build()
        bs = calls["blocks"]
        seen.append(bs)
        t = ms_of(bs)
        return None, Measurement(times_s=[t * 1e-3] * 3, verified=t == t)

    monkeypatch.setattr(driver, "_built_and_measured", fake)
    serial = Measurement(times_s=[5e-3] * 3, verified=True)
    best, _ = driver._try_blocks(report, (), (), serial, 3, 1, None,
                                 target=get_target("numba"))
    return best, seen


def test_the_blocks_that_each_gain_are_tried_together(monkeypatch):
    # B1 (the rank-1 update as temporaries) is slower than the loops; the others gain
    ms = {("B1", "B2", "B3", "B4"): 30.0, ("B1",): 35.0, ("B2",): 4.0, ("B3",): 4.9,
          ("B4",): 4.5, ("B2", "B3", "B4"): 2.0}
    best, seen = _run(monkeypatch, lambda bs: ms[bs])
    assert seen[-1] == ("B2", "B3", "B4") and best == ("B2", "B3", "B4")


def test_no_extra_set_when_fewer_than_two_blocks_gain_or_all_of_them_do(monkeypatch):
    one = {("B1", "B2", "B3", "B4"): 30.0, ("B1",): 35.0, ("B2",): 4.0, ("B3",): 6.0,
           ("B4",): 7.0}
    best, seen = _run(monkeypatch, lambda bs: one[bs])
    assert len(seen) == 5 and best == ("B2",)
    every = {("B1", "B2", "B3", "B4"): 1.0, ("B1",): 4.0, ("B2",): 4.0, ("B3",): 4.0,
             ("B4",): 4.0}
    best, seen = _run(monkeypatch, lambda bs: every[bs])  # the union is the all-blocks set
    assert len(seen) == 5 and best == ("B1", "B2", "B3", "B4")


def test_a_failed_or_wrong_block_never_joins_the_union(monkeypatch):
    ms = {("B1", "B2", "B3", "B4"): 30.0, ("B1",): float("nan"), ("B2",): 4.0, ("B3",): 4.5,
          ("B4",): 9.0, ("B2", "B3"): 3.0}
    best, seen = _run(monkeypatch, lambda bs: ms[bs])
    assert seen[-1] == ("B2", "B3") and best == ("B2", "B3")


@pytest.mark.slow
def test_search_on_gemver_gives_the_plain_result():
    make = PROBES["gemver_like"].make
    args = make(np.random.default_rng(0), 120)
    plan = offload.search(gemver_like, args, targets=("numba",), budget=6, progress=False)
    got, want = make(np.random.default_rng(0), 120), make(np.random.default_rng(0), 120)
    plan.compile()(*got)
    gemver_like(*want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)
