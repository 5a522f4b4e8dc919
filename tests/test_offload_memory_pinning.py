"""hetlab.offload_memory, round 2: resident layers, activations in the budget, the pipeline
model, and the GIL released by every compute kernel a streamed layer calls."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hetlab import offload_memory as om
from hetlab.offload_memory import costmodel
from hetlab.offload_memory import kernels as om_kernels

TOKENS = np.array([3, 1, 4, 1, 5, 9, 2, 6])


@pytest.fixture(scope="module")
def model() -> om.Model:
    return om.Model.decoder(d_model=128, n_heads=4, d_ff=256, n_layers=4, vocab=100, seed=2)


@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_first_layers_stay_resident_and_later_passes_read_only_the_rest(model, prefetch):
    kv = 300_000
    with om.stream(model, budget="1MB", kv_budget=kv, prefetch=prefetch, bits=32) as probe:
        layer = probe.store.nbytes("L0")
        act = model.activation_nbytes(TOKENS.shape)
    room = 2 * layer if prefetch else layer
    weights = room + act + 2 * layer + layer // 2  # two layers fit besides the room, not three
    with om.stream(model, budget=weights + kv, kv_budget=kv, prefetch=prefetch) as run:
        first = run.forward(TOKENS)
        assert run.resident == ["L0", "L1"]
        read1 = {t.item: t.bytes_read for t in run.report.items}
        assert all(read1[f"L{i}"] == layer for i in range(4))  # all read on the first pass
        run.reset()
        second = run.forward(TOKENS)
        rep = run.report
        read2 = {t.item: t.bytes_read for t in rep.items}
        assert read2["L0"] == read2["L1"] == 0 and read2["L2"] == read2["L3"] == layer
        assert [t.resident for t in rep.items if t.item.startswith("L")] == [1, 1, 0, 0]
        ref = model.forward(TOKENS)
        assert np.array_equal(first, ref) and np.array_equal(second, ref)
        assert run.budget.peak <= run.budget.total
        # the resident layers are held between passes, and accounted
        assert run.budget.pool("weights").held == 2 * layer
    assert run.budget.pool("weights").held == 0  # close() gives them back


def test_pin_false_streams_every_layer_every_pass(model):
    with om.stream(model, budget="8MB", prefetch=1, pin=False) as run:
        run.forward(TOKENS)
        run.reset()
        run.forward(TOKENS)
        assert run.resident == []
        assert all(t.bytes_read > 0 for t in run.report.items)


def test_resident_count_is_the_cost_models(model):
    with om.stream(model, budget="8MB", kv_budget="1MB", prefetch=2) as run:
        run.forward(TOKENS)
        flat = TOKENS.astype(np.int64)
        need = [run._need(it, flat) for it in run.model.items]
        reserve = model.activation_nbytes(TOKENS.shape) + 2 * max(need)
        want = costmodel.resident_layers([run.store.nbytes(f"L{i}") for i in range(4)],
                                         run.budget.pool("weights").limit, reserve)
        assert len(run.resident) == want == 4  # 7 MB holds every layer of this small model


def test_a_longer_input_unpins_layers(model):
    with om.stream(model, budget=2_700_000, kv_budget=600_000, prefetch=1) as run:
        run.forward(TOKENS[:2])
        short = len(run.resident)
        run.reset()
        long_tokens = np.arange(100) % 100  # 0.6 MB of activations: no room for a resident
        y = run.forward(long_tokens)
        assert short == 1 and run.resident == []
        assert np.array_equal(y, model.forward(long_tokens))
        assert run.budget.peak <= run.budget.total


def test_activations_are_counted(model):
    act = model.activation_nbytes(TOKENS.shape)
    assert act == 4 * (len(TOKENS) * (6 * 128 + 3 * 256) + 4 * len(TOKENS))
    with om.stream(model, budget="4MB", prefetch=0, pin=False) as run:
        run.forward(TOKENS)
        layer = run.store.nbytes("L0")
        assert run.budget.pool("weights").peak >= act + layer
    # room for one layer but not for the activations of 3000 tokens: a clear error
    with om.stream(model, budget=layer + 300_000, kv_budget=200_000, prefetch=0) as run:
        with pytest.raises(om.BudgetError, match="activations"):
            run.forward(np.arange(3000) % 100)


def test_simulate_agrees_with_pass_time():
    L, k, r, c = 8, 3, 2.0, 1.0
    reads = [0.0] * k + [r] * (L - k)
    df = costmodel.simulate(reads, [c] * L, prefetch=L)
    # deep enough prefetch: the reads run back to back from t=0, the last compute after them
    assert df["compute_end"].iloc[-1] == pytest.approx((L - k) * r + c)
    assert costmodel.pass_time(L, k, r, c) == max(L * c, (L - k) * r)
    serial = costmodel.simulate(reads, [c] * L, prefetch=0)
    assert serial["compute_end"].iloc[-1] == costmodel.pass_time(L, k, r, c, overlap=False)
    # resident items have no read
    assert df["read_start"].isna().sum() == k


def _dispatchers(module) -> list:
    return [v for v in vars(module).values() if isinstance(v, numba.core.registry.CPUDispatcher)]


def test_every_compute_kernel_releases_the_gil():
    from hetlab.kernels.quant import _numba_avx2, _numba_w4, _numba_w4_amx
    from hetlab.kernels.quant import numba as qnumba

    found = []
    for mod in (qnumba, _numba_avx2, _numba_w4, _numba_w4_amx, om_kernels):
        found += _dispatchers(mod)
    found += [f for pair in (om_kernels._LIN32, om_kernels._LIN16, om_kernels._ATT) for f in pair]
    for table in qnumba._W4_KERNELS.values():
        found += [f for f in table.values() if isinstance(f, numba.core.registry.CPUDispatcher)]
    assert len(found) > 20
    held = [f.py_func.__qualname__ for f in found if not f.targetoptions.get("nogil")]
    assert held == []
