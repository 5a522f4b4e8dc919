"""Real-GPU checks of the quantized GEMV/GEMM (skipped, with the reason, without a GPU).

Transformer-sized matrices (larger than the simulator tests can afford) in every format,
against the numpy reference within the spec's float32 tolerance; a ``QuantizedMatrix`` whose
arrays live on the GPU stays there, and the result does too with ``keep_on_device``.
"""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import quant
from hetlab.core.registry import get_backend
from hetlab.kernels.quant import reference
from hetlab.kernels.quant.spec import TOLERANCE

_REASON = get_backend("cupy").why_not()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=f"cupy: {_REASON}"),
]


def _err(got, expected):
    return hl.gemv_q.spec.error(got, expected)


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("symmetric", [False, True])
def test_gemv_and_gemm_on_transformer_shapes(bits, symmetric):
    rng = np.random.default_rng(bits)
    w = rng.normal(0, 0.02, (1536, 4000)).astype(np.float32)  # 4000: padded to whole groups
    qw = quant.quantize(w, bits=bits, group_size=128, symmetric=symmetric)
    x = rng.standard_normal(4000).astype(np.float32)
    xp = np.pad(x, (0, qw.padded_in - qw.in_features))
    got = hl.gemv_q(qw, x, device="cupy")
    assert isinstance(got, np.ndarray) and got.shape == (1536,)
    assert _err(got, reference.gemv_q(qw, xp)) <= TOLERANCE
    X = rng.standard_normal((16, 4000)).astype(np.float32)
    G = hl.gemm_q(qw, X, device="cupy")
    Xp = np.pad(X, ((0, 0), (0, qw.padded_in - qw.in_features)))
    assert _err(G, reference.gemm_q(qw, Xp)) <= TOLERANCE
    y8 = hl.gemv_w4a8(qw, x, device="cupy")
    assert hl.gemv_w4a8.spec.error(y8, reference.gemv_w4a8(qw, xp)) <= TOLERANCE


def test_device_resident_matrix_and_result():
    import cupy

    rng = np.random.default_rng(7)
    qw = quant.quantize(rng.normal(0, 0.02, (512, 1024)).astype(np.float32), 4, 128)
    on_device = qw.map_arrays(cupy.asarray)
    x = rng.standard_normal(1024).astype(np.float32)
    y = hl.gemv_q(on_device, cupy.asarray(x), keep_on_device=True)  # device from the arrays
    assert isinstance(y, cupy.ndarray)
    assert _err(cupy.asnumpy(y), reference.gemv_q(qw, x)) <= TOLERANCE
