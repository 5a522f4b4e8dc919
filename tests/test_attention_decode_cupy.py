"""The GPU decode attention's array code (hetlab.kernels.attention.cupy.decode_attention),
checked on NumPy arrays standing in for CuPy's (the same calls: matmul, max, exp, where):
against the float64 reference, both softmax schemes, forced fallbacks, bad values named."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab.errors import InvalidInputError
from hetlab.kernels.attention import cupy as gpu
from hetlab.kernels.attention import reference


def _case(h, n, d, dv, dtype, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((h, d)) * spread).astype(dtype)
    k = rng.standard_normal((h, n, d)).astype(dtype)
    v = rng.standard_normal((h, n, dv)).astype(dtype)
    return q, k, v


@pytest.mark.parametrize("softmax", ["synchronized", "unified-max"])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 0), (2, 7, 4, 3, 3), (3, 100, 16, 8, 0),
                                   (2, 1000, 8, 5, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_the_reference(softmax, shape, dtype):
    h, n, d, dv, parts = shape
    q, k, v = _case(h, n, d, dv, dtype, n)
    got = gpu.decode_attention(q, k, v, softmax, parts)
    ref = reference.decode_attention(q, k, v)
    assert got.dtype == dtype and got.shape == (h, dv)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.parametrize("spike", [60.0, -80.0])
def test_unified_max_falls_back_where_a_part_leaves_the_band(spike):
    """Scores far above φ (exp would overflow against φ) or far below (all weights would
    underflow) in one part: that part uses its own maximum, the result stays exact."""
    q, k, v = _case(2, 400, 4, 3, np.float64, 1)
    k[:, 300:400] = spike * q[:, None, :] / np.linalg.norm(q, axis=1)[:, None, None] * 2.0
    got = gpu.decode_attention(q, k, v, "unified-max", 4)
    ref = reference.decode_attention(q, k, v)
    assert np.abs(got - ref).max() <= 1e-10 * np.abs(ref).max()


@pytest.mark.parametrize("name", ["k_cache", "v_cache"])  # q1: checked by the spec
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_values_are_named(name, bad):
    args = dict(zip(("q1", "k_cache", "v_cache"), _case(1, 20, 4, 2, np.float64, 0),
                    strict=True))
    args[name].flat[3] = bad
    with pytest.raises(InvalidInputError, match=name):
        gpu.decode_attention(**args)


def test_registered_for_the_cupy_device():
    from hetlab.core.registry import supported_backends

    assert "cupy" in supported_backends("decode_attention")
