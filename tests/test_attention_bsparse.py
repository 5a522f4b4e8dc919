"""Block-sparse attention's numba kernels (hetlab/kernels/attention/_bsparse.py): the codes
equal the reference's bit for bit, key panels (sliced and gathered, one and several per
query block) equal the reference, float64 stays float64."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.attention import _bsparse, paro
from hetlab.kernels.attention.numba_paro import quantized


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("shape,block", [((2, 17, 8), 4), ((3, 130, 16), 16), ((1, 64, 5), 64)])
def test_numba_codes_equal_the_reference_codes(bits, shape, block):
    rng = np.random.default_rng(block)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32) * 3 for _ in range(3))
    q[0, :block] = 0.0  # an all-zero block: scale 1, codes 0
    ref = paro.quantized_operands(q, k, v, block, bits)
    got = [quantized(q, None, block, bits), quantized(k, k.mean(axis=1, dtype=np.float64),
                                                      block, bits),
           quantized(v, None, block, bits)]
    for (rc, rs), (gc, gs) in zip(ref, got, strict=True):
        assert gc.dtype == np.float32
        assert np.array_equal(rc.astype(np.float32), gc)
        assert np.array_equal(rs, gs)


def _mask(h: int, nb: int, rows: list[list[int]]) -> np.ndarray:
    return np.array([[sorted(r) for r in rows]] * h, dtype=np.int64).reshape(h, nb, -1)


@pytest.mark.parametrize("bits", [None, 8, 4])
def test_sliced_gathered_and_several_panels_equal_the_reference(bits):
    # block 64: 16 blocks per panel; keep 20 of 20 blocks → two panels per query block;
    # query block 0 keeps consecutive blocks (sliced panels), the others scattered ones
    # (gathered), the last block is short (n = 19·64 + 30)
    block, nb = 64, 20
    n = (nb - 1) * block + 30
    assert _bsparse.panel_blocks(block) == 16
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, n, 8), dtype=np.float32) for _ in range(3))
    rows = [list(range(nb))] + [list(range(nb))] * (nb - 1)
    full = _mask(2, nb, rows)
    scattered = _mask(2, nb, [[*range(0, nb, 2), 1]] * nb)  # 11 blocks, not a run
    for mask in (full, scattered):
        kw = dict(bits=bits, block=block, mask=mask)
        ref = hl.block_sparse_attention(q, k, v, **kw)
        got = hl.block_sparse_attention(q, k, v, **kw, device="numba")
        err, ok = hl.block_sparse_attention.spec.verified(got, ref)
        assert ok and err < 1e-5, err


def test_float64_inputs_stay_float64_and_near_exact():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 300, 16)) for _ in range(3))
    order = np.stack([rng.permutation(300) for _ in range(2)])
    kw = dict(order=order, density=0.3, bits=None, block=32)
    got = hl.block_sparse_attention(q, k, v, **kw, device="numba")
    ref = hl.block_sparse_attention(q, k, v, **kw)
    assert got.dtype == np.float64
    assert hl.block_sparse_attention.spec.error(got, ref) < 1e-12


def test_sparse_float_kernel_reads_only_kept_blocks():
    # a key block that is not kept cannot change the output, a kept one does
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((1, 256, 8), dtype=np.float32) for _ in range(3))
    mask = _mask(1, 4, [[0, 1], [1, 2], [0, 2], [2, 3]])
    base = hl.block_sparse_attention(q, k, v, bits=None, block=64, mask=mask, device="numba")
    v2 = v.copy()
    v2[0, 192:] += 100.0  # block 3: kept by query block 3 only
    got = hl.block_sparse_attention(q, k, v2, bits=None, block=64, mask=mask, device="numba")
    assert np.array_equal(got[0, :192], base[0, :192])
    assert not np.allclose(got[0, 192:], base[0, 192:])
