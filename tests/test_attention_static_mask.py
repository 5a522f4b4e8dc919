"""PARO's static block mask: calibrated once, passed to later calls, never recomputed; on its
calibration input it equals the per-call mask; bad masks are refused naming ``mask``."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import calibrate_block_mask, evaluate, paro


def _qkv(seed, h=2, n=96, d=8):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((h, n, d), dtype=np.float32) for _ in range(3))


@pytest.mark.parametrize("bits", [None, 8, 4])
@pytest.mark.parametrize("device", ["numpy", "numba"])
@pytest.mark.parametrize("density", [0.1, 0.25, 0.5])
def test_static_equals_per_call_on_the_calibration_input(bits, device, density):
    q, k, v = _qkv(1)
    order = np.stack([np.random.default_rng(h).permutation(96) for h in range(2)])
    mask = calibrate_block_mask(q, k, order=order, density=density, block=16)
    assert mask.shape == (2, 6, max(1, int(density * 6 + 0.5))) and mask.dtype == np.int64
    kw = dict(order=order, bits=bits, block=16, device=device)
    static = hl.block_sparse_attention(q, k, v, mask=mask, **kw)
    per_call = hl.block_sparse_attention(q, k, v, density=density, **kw)
    assert np.array_equal(static, per_call)


def test_the_static_mask_is_reused_not_recomputed(monkeypatch):
    q, k, v = _qkv(2)
    mask = calibrate_block_mask(q, k, density=0.25, block=16)
    calls = []
    real = paro.block_plan
    monkeypatch.setattr(paro, "block_plan", lambda *a: calls.append(1) or real(*a))
    for device in ("numpy", "numba"):
        for seed in (3, 4):  # later inputs
            q2, k2, v2 = _qkv(seed)
            hl.block_sparse_attention(q2, k2, v2, block=16, mask=mask, device=device)
    assert calls == []
    hl.block_sparse_attention(q, k, v, density=0.25, block=16, device="numba")
    assert calls == [1]  # the per-call path does select (and the spy sees it)


def test_a_static_mask_is_what_the_kernel_uses_on_other_inputs():
    q, k, _ = _qkv(5)
    q2, k2, v2 = _qkv(6)
    mask = calibrate_block_mask(q, k, density=0.25, block=16)
    live = calibrate_block_mask(q2, k2, density=0.25, block=16)
    assert not np.array_equal(mask, live)  # the inputs pick different blocks
    for device in ("numpy", "numba"):
        static = hl.block_sparse_attention(q2, k2, v2, bits=None, block=16, mask=mask,
                                           device=device)
        per_call = hl.block_sparse_attention(q2, k2, v2, density=0.25, bits=None, block=16,
                                             device=device)
        assert not np.allclose(static, per_call)
        # the same as a per-call run whose planner returned the calibrated mask
        direct = paro.block_sparse_attention(q2, k2, v2, bits=None, block=16, mask=mask)
        assert hl.block_sparse_attention.spec.verified(static, direct)[1]


def test_mask_rows_are_sorted_and_density_is_the_masks():
    q, k, v = _qkv(7)
    mask = calibrate_block_mask(q, k, density=0.5, block=16)
    shuffled = mask[:, :, ::-1].copy()
    a = hl.block_sparse_attention(q, k, v, bits=None, block=16, mask=shuffled, density=0.1)
    b = hl.block_sparse_attention(q, k, v, bits=None, block=16, density=0.5)
    assert np.array_equal(a, b)
    cost = hl.block_sparse_attention.spec.cost(
        hl.block_sparse_attention.spec.validate(q, k, v, None, 0.1, None, 16, mask))
    cost_dense = hl.block_sparse_attention.spec.cost(
        hl.block_sparse_attention.spec.validate(q, k, v, None, 0.5, None, 16, None))
    assert cost.flops == cost_dense.flops


BAD_MASKS = [
    ("float", lambda m: m.astype(np.float64), "integers"),
    ("rank", lambda m: m[0], "shape"),
    ("heads", lambda m: m[:1], "shape"),
    ("blocks", lambda m: m[:, :-1], "shape"),
    ("keep 0", lambda m: m[:, :, :0], "shape"),
    ("too many", lambda m: np.concatenate([m, m, m, m], axis=2), "shape"),
    ("negative", lambda m: m - 10, r"\[0, 6\)"),
    ("beyond", lambda m: m + 6, r"\[0, 6\)"),
    ("repeat", lambda m: np.concatenate([m[:, :, :1], m[:, :, :1]], axis=2), "repeated"),
]


@pytest.mark.parametrize("name,bad,match", BAD_MASKS, ids=[b[0] for b in BAD_MASKS])
def test_bad_masks_are_refused_naming_mask(name, bad, match):
    q, k, v = _qkv(8)
    mask = calibrate_block_mask(q, k, density=0.5, block=16)
    with pytest.raises(hl.InvalidInputError, match=match) as info:
        hl.block_sparse_attention(q, k, v, block=16, mask=bad(mask))
    assert "mask" in str(info.value)


def test_a_mask_for_another_block_is_refused():
    q, k, v = _qkv(9)
    mask = calibrate_block_mask(q, k, density=0.5, block=16)
    with pytest.raises(hl.InvalidInputError, match="mask must be integers of shape"):
        hl.block_sparse_attention(q, k, v, block=32, mask=mask)


def test_calibration_bad_input():
    q, k, _ = _qkv(10)
    for kw, match in ((dict(density=0.0), "density"), (dict(density=1.5), "density"),
                      (dict(block=0), "block"), (dict(order=np.zeros((2, 96), int)), "order")):
        with pytest.raises(hl.InvalidInputError, match=match) as info:
            calibrate_block_mask(q, k, **kw)
        assert "calibrate_block_mask" in str(info.value)
    with pytest.raises(hl.InvalidInputError, match="same tokens"):
        calibrate_block_mask(q, k[:, :50])


def test_static_mask_report_on_the_synthetic_grid():
    g = (2, 8, 8)
    calib = evaluate.synthetic_grid_qkv(g, 2, 16, np.random.default_rng(0))
    later = evaluate.synthetic_grid_qkv(g, 2, 16, np.random.default_rng(0),
                                        noise_rng=np.random.default_rng(1))
    other = evaluate.synthetic_grid_qkv(g, 2, 16, np.random.default_rng(2))
    order = hl.attention_reorder(calib[0], calib[1], grid=g, block=16)
    ds = evaluate.static_mask_report(calib[:2], [calib, later, other], order=order,
                                     densities=(0.25, 0.5), bits=(None,), block=16,
                                     source="synthetic")
    assert ds.attrs["source"] == "synthetic"
    e = ds.error.sel(bits="float")
    # on the calibration input the two masks are the same mask
    assert (ds.blocks_agree.sel(input=0) == 1.0).all()
    assert np.array_equal(e.sel(input=0, mask="static"), e.sel(input=0, mask="per-call"))
    # an unrelated input (other heads): the stale mask keeps fewer of its blocks and errs more
    assert (ds.blocks_agree.sel(input=2) < 1.0).all()
    assert float(e.sel(input=2, density=0.25, mask="static")) > float(
        e.sel(input=2, density=0.25, mask="per-call"))


def test_same_structure_different_noise():
    g = (1, 4, 4)
    a = evaluate.synthetic_grid_qkv(g, 1, 8, np.random.default_rng(0))
    b = evaluate.synthetic_grid_qkv(g, 1, 8, np.random.default_rng(0),
                                    noise_rng=np.random.default_rng(5))
    c = evaluate.synthetic_grid_qkv(g, 1, 8, np.random.default_rng(0),
                                    noise_rng=np.random.default_rng(5))
    assert all(np.array_equal(x, y) for x, y in zip(b, c, strict=True))
    assert not np.array_equal(a[0], b[0])
    assert np.abs(a[1] - b[1]).max() < 0.5  # k: same features, new 5% noise
