"""PARO: reordering recovers a planted axis order; block-sparse attention (numba) equals its
reference; its error against dense attention falls with density; the evaluation code runs on
real MiniLM attention and on the synthetic grid."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import evaluate, paro


def test_reorder_recovers_planted_orders():
    orders = list(paro.AXIS_ORDERS)
    q, k, _ = paro.planted_grid((4, 8, 8), orders, d=16, rng=np.random.default_rng(3))
    got = hl.attention_reorder(q, k, grid=(4, 8, 8), block=16)
    assert paro.order_names(got, (4, 8, 8)) == orders
    for h in range(len(orders)):
        assert sorted(got[h].tolist()) == list(range(256))


@pytest.mark.parametrize("bits", [None, 8, 4])
@pytest.mark.parametrize("n,block,density", [(1, 1, 1.0), (17, 4, 0.3), (130, 16, 0.25),
                                             (64, 64, 0.5)])
def test_numba_equals_reference(bits, n, block, density):
    rng = np.random.default_rng(n + block)
    q, k, v = (rng.standard_normal((2, n, 8), dtype=np.float32) for _ in range(3))
    order = np.stack([rng.permutation(n) for _ in range(2)])
    kw = dict(order=order, density=density, bits=bits, block=block)
    ref = hl.block_sparse_attention(q, k, v, **kw)
    got = hl.block_sparse_attention(q, k, v, **kw, device="numba")
    assert ref.dtype == got.dtype == np.float32
    err, ok = hl.block_sparse_attention.spec.verified(got, ref)
    assert ok, err


def test_quantized_path_at_the_largest_codes_and_block():
    # every code ±127 (q̂·k̂ sums of 256 terms, P̂·v̂ sums over a 1024-key block): the float32
    # dots of the numba kernel stay exact integers below 2**24; only the float32 weights differ
    rng = np.random.default_rng(5)
    n, d = 1024, 256
    q = np.where(rng.random((1, n, d)) < 0.5, -1.0, 1.0)
    k = np.where(rng.random((1, n, d)) < 0.5, -1.0, 1.0) * 0.01
    v = np.where(rng.random((1, n, 4)) < 0.5, -1.0, 1.0)
    kw = dict(density=1.0, bits=8, block=1024)
    ref = hl.block_sparse_attention(q, k, v, **kw)
    got = hl.block_sparse_attention(q, k, v, **kw, device="numba")
    err = hl.block_sparse_attention.spec.error(got, ref)
    assert err < 1e-5, err


@pytest.mark.parametrize("bits", [8, 4])
def test_float32_weights_keep_the_reference_codes_on_a_larger_case(bits):
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((4, 512, 32), dtype=np.float32) * 2 for _ in range(3))
    kw = dict(density=0.25, bits=bits, block=32)
    ref = hl.block_sparse_attention(q, k, v, **kw)
    got = hl.block_sparse_attention(q, k, v, **kw, device="numba")
    assert hl.block_sparse_attention.spec.error(got, ref) < 1e-5  # 10× inside the tolerance


def test_full_density_without_quantization_is_dense_attention():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 50, 8)) for _ in range(3))
    order = np.stack([rng.permutation(50) for _ in range(2)])
    got = hl.block_sparse_attention(q, k, v, order=order, density=1.0, bits=None, block=8)
    assert np.allclose(got, hl.attention(q, k, v), atol=1e-12)


def test_error_falls_with_density_and_reorder_helps():
    q, k, v = evaluate.synthetic_grid_qkv((4, 8, 8), heads=3, d=32, rng=np.random.default_rng(1))
    ds = evaluate.error_report(q, k, v, grid=(4, 8, 8), densities=(0.125, 0.25, 0.5, 1.0),
                               bits=(None, 8), block=16, source="synthetic")
    for bits in ("float", "int8"):
        for reorder in (False, True):
            e = ds.overall.sel(bits=bits, reorder=reorder).values
            assert np.all(np.diff(e) <= 1e-9), (bits, reorder, e)
    assert float(ds.overall.sel(density=1.0, bits="float", reorder=True)) < 1e-5
    assert float(ds.overall.sel(density=1.0, bits="int8", reorder=False)) < 0.05
    # the chosen order concentrates at least as much mass as the given one, in every head
    assert np.all(ds.block_diag_mass.sel(reorder=True) >= ds.block_diag_mass.sel(reorder=False))
    assert ds.error.dims == ("head", "density", "bits", "reorder")


def test_quantization_codes_and_scales():
    x = np.array([[[1.0, -2.0], [0.5, 0.0], [0.0, 0.0]]])
    codes, scales = paro.quantize_blocks(x, 2, 8)
    assert scales.tolist() == [[2 / 127, 1.0]]
    assert codes[0, 0].tolist() == [64, -127] and codes[0, 2].tolist() == [0, 0]
    assert paro.qmax(4) == 7


def test_minilm_attention_is_real_and_reported():
    pytest.importorskip("all_minilm_l6_v2")
    q, k, v = evaluate.minilm_qkv("Attention is where the effort goes.", layer=2)
    assert q.shape[0] == 12 and q.shape[2] == 32 and q.shape == k.shape == v.shape
    ds = evaluate.error_report(q, k, v, densities=(0.5, 1.0), bits=(8,), block=4,
                               source="all-MiniLM-L6-v2 layer 2")
    assert ds.attrs["source"].startswith("all-MiniLM")
    assert list(ds.reorder.values) == [False]
    assert float(ds.overall.sel(density=1.0, bits="int8", reorder=False)) < 0.05


def test_bad_input():
    q = np.ones((1, 8, 4))
    with pytest.raises(hl.InvalidInputError, match="grid"):
        hl.attention_reorder(q, q, grid=(2, 2, 3))
    with pytest.raises(hl.InvalidInputError, match="order"):
        hl.block_sparse_attention(q, q, q, order=np.zeros((1, 8), int))
    with pytest.raises(hl.InvalidInputError, match="bits"):
        hl.block_sparse_attention(q, q, q, bits=2)
    with pytest.raises(hl.InvalidInputError, match="density"):
        hl.block_sparse_attention(q, q, q, density=1.5)
    with pytest.raises(hl.InvalidInputError, match="n_q == n_k"):
        hl.block_sparse_attention(q, np.ones((1, 9, 4)), np.ones((1, 9, 4)))
