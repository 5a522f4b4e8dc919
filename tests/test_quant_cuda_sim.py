"""The numba.cuda quantized kernels equal the reference under numba's CUDA simulator.

Runs in a subprocess because NUMBA_ENABLE_CUDASIM must be set before numba is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import numpy as np
from hetlab import quant
from hetlab.kernels.quant import cupy as qc, reference
from hetlab.kernels.quant.spec import TOLERANCE
import hetlab as hl
err = hl.gemv_q.spec.error
rng = np.random.default_rng(7)
n = 0
shapes = ((1, 32, 32), (3, 70, 32), (2, 130, 64))
for bits in (2, 3, 4, 8):
    for sym in (False, True):
        for out, n_in, gs in (shapes[n % 3],):
            qw = quant.quantize(rng.normal(0, 0.05, (out, n_in)).astype(np.float32), bits, gs,
                                symmetric=sym)
            pad = qw.padded_in - n_in
            x = np.pad(rng.standard_normal(n_in).astype(np.float32), (0, pad))
            assert err(qc.launch_gemv(qw, x), reference.gemv_q(qw, x)) <= TOLERANCE, (bits, sym)
            X = np.pad(rng.standard_normal((2, n_in)).astype(np.float32), ((0, 0), (0, pad)))
            assert err(qc.launch_gemm(qw, X), reference.gemm_q(qw, X)) <= TOLERANCE, (bits, sym)
            for rows in (2, 128):  # several output rows per block (the last block part-full)
                got = qc.launch_gemm(qw, X, rows=rows)
                assert err(got, reference.gemm_q(qw, X)) <= TOLERANCE, (bits, sym, rows)
            n += 1
for bits in (2, 3, 4, 8):  # W4A8: every width, against the reference (exact int dots)
    for sym in (False, True):
        qw8 = quant.quantize(rng.normal(0, 0.05, (5, 200)).astype(np.float32), bits, 64,
                             symmetric=sym)
        x8 = np.pad(rng.standard_normal(200).astype(np.float32), (0, qw8.padded_in - 200))
        for rows in (1, 4):
            assert err(qc.launch_w4a8(qw8, x8, rows=rows),
                       reference.gemv_w4a8(qw8, x8)) <= TOLERANCE, (bits, sym, rows)
# unit scales and integer activations (max 127): every step exact, so equal to float64
ci = rng.integers(0, 16, (6, 128))
qi = quant.QuantizedMatrix.from_codes(ci, np.ones((6, 1), np.float16),
                                      rng.integers(0, 16, (6, 1)).astype(np.float16), 4, 128,
                                      128)
xi = rng.integers(-127, 128, 128).astype(np.float32)
xi[0] = 127.0
np.testing.assert_array_equal(qc.launch_w4a8(qi, xi),
                              (qi.dequantize(np.float64) @ xi).astype(np.float32))
codes = qw.codes(); codes[0, 3] ^= 1 << (qw.bits - 1)  # a decoding bug would be caught
bad = quant.QuantizedMatrix.from_codes(codes, qw.scales, qw.zeros, qw.bits, qw.group_size,
                                       qw.in_features)
assert err(qc.launch_gemv(bad, x), reference.gemv_q(qw, x)) > 10 * TOLERANCE
for rows in (0, 3, 256):
    try:
        qc.launch_gemv(qw, x, rows=rows)
    except hl.InvalidInputError:
        pass
    else:
        raise AssertionError(f"rows={rows} accepted")
print("ok", n)
"""


def test_cuda_kernels_in_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "8"]
