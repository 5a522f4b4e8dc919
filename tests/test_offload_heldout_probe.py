"""offload.analyze and offload.search on a held-out probe of classic loop kernels nobody wrote
for the engine (tests/offload_corpus/heldout_probe.py): obviously parallel loops are called
parallel, loops with a true dependence are never run in parallel, and every plan gives the
plain function's outputs and in-place effects on fresh inputs."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.runtime.measure import outputs_of

from ._probe_checks import assert_verdicts, suite_function_names
from .offload_corpus import heldout_probe as hp

pytest.importorskip("numba")

#: a small, quick search: no confirmation round, no among-work timing, one timed call
QUICK = dict(targets=("numba",), budget=3, progress=False,
             ga=GAOptions(population=3, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))


def _same(got, want, dtype_kind: str) -> bool:
    """Equal outputs, NaN where NaN; floats within what reassociating a sum changes (float32
    looser than float64)."""
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind in "fc":
        # numba sums float32 products from ``s = 0.0`` in float64, NumPy in float32
        rtol = 1e-4 if np.float32 in (a.dtype, b.dtype) else 1e-9
        return bool(np.array_equal(np.isnan(a), np.isnan(b))
                    and np.allclose(a, b, rtol=rtol, atol=rtol * 1e-3, equal_nan=True))
    return bool(np.array_equal(a, b))


def _agrees(fn, compiled, make, n: int, seed: int) -> None:
    want_args = make(np.random.default_rng(seed), n)
    got_args = make(np.random.default_rng(seed), n)
    want = outputs_of(fn(*want_args), want_args)
    got = outputs_of(compiled(*got_args), got_args)
    assert len(want) == len(got)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        assert _same(g, w, np.asarray(w).dtype.kind), (k, g, w)


def test_the_probe_is_big_enough_and_not_the_suite():
    assert len(hp.PROBES) >= 20
    suite_names = suite_function_names()
    assert len(suite_names) > 31
    assert not set(hp.PROBES) & suite_names


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_verdicts(name):
    probe = hp.PROBES[name]
    report = offload.analyze(probe.fn)
    assert_verdicts(report, probe)


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    plan = offload.search(probe.fn, probe.make(np.random.default_rng(0), probe.small), **QUICK)
    assert not plan.fallback, plan.fallback
    for lp_id in probe.serial:
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    compiled = plan.compile()
    # fresh inputs, another size than the search's (bounds are not baked in)
    for seed, n in ((1, probe.small), (2, probe.small + 3)):
        _agrees(probe.fn, compiled, probe.make, n, seed)
