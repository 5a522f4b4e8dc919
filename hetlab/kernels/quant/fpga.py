"""W4A16 GEMV on the ``gemv_q`` overlay (``device="fpga"``): the implementation the quant
family registers, its modeled timing, its float datapath and the board self-test's cases.

The device and the thread model are shared by every overlay (:mod:`hetlab.fpga.device`); the
driver is :mod:`.fpga_driver`. :func:`gemv_q_f32` emulates the overlay's float32 datapath in NumPy,
operation for operation (same operations, same order, float32 round-to-nearest, no fused
multiply-add), so the C-simulation equals it bit for bit; the tests check that, and separately
that both are within the kernel spec's tolerance of the float64 numpy reference. It documents
the float path; it is not used to produce results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...fpga.device import overlay_kernel
from .formats import QuantizedMatrix
from .fpga_driver import GemvQDriver
from .spec import make_quantized

__all__ = ["OVERLAY", "Driver", "REPORT_SIZES", "gemv_q", "gemv_q_f32", "selftest_cases"]

#: the overlay (``overlays/gemv_q``) and its driver
OVERLAY = "gemv_q"
Driver = GemvQDriver
#: two representative calls (timing-model scalars) for ``python -m hetlab.fpga.report``
REPORT_SIZES = ({"rows": 1024, "cols": 1024, "group_size": 128},
                {"rows": 4096, "cols": 4096, "group_size": 128})

_F32 = np.float32


#: W4A16 GEMV on the ``gemv_q`` overlay: y (out,) float32 (4-bit ``qw`` only);
#: ``gemv_q.modeled(...)`` adds the modeled timing
gemv_q = overlay_kernel(
    "gemv_q", GemvQDriver,
    lambda qw, x: {"rows": qw.out_features, "cols": qw.padded_in, "group_size": qw.group_size},
)


def selftest_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Seeded (driver keywords, timing-model scalars) per size, for ``hetlab.fpga.selftest``."""
    out = []
    for n in sizes:
        rng = np.random.default_rng([11, n])
        cols = min(n, 8192)
        qw = make_quantized(n, cols, rng)
        x = rng.standard_normal(cols).astype(np.float32)
        out.append(({"qw": qw, "x": x},
                    {"rows": n, "cols": qw.padded_in, "group_size": qw.group_size}))
    return out

def gemv_q_f32(qw: QuantizedMatrix, x: np.ndarray, lanes: int = 4) -> np.ndarray:
    """The ``gemv_q`` overlay's float path (``overlays/gemv_q/hls/gemv_q.cpp`` header).

    Per row: ``p = (float(q) - z) * x`` per code; per 32-bit word of 8 codes the adder tree
    ``((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7))``; per group ``lanes`` interleaved sums over its
    words (word ``w`` into lane ``w % lanes``, each lane from +0.0), then
    ``(a0+a1)+(a2+a3)``; the row ``y = ((0 + G0*s0) + G1*s1) + …`` in group order.

    Parameters
    ----------
    qw : QuantizedMatrix
        bits=4, shape (out, in).
    x : ndarray of shape (padded_in,) or (in,), float32
        Zero-padded to ``qw.padded_in`` when shorter.

    Returns
    -------
    ndarray of shape (out,), float32
    """
    out, ng, gs = qw.out_features, qw.n_groups, qw.group_size
    wpg = gs // 8
    xs = np.zeros(qw.padded_in, _F32)
    x = np.asarray(x, _F32).ravel()
    xs[: x.size] = x
    codes = qw.codes().astype(_F32).reshape(out, ng, wpg, 8)
    z = qw.zero_points().astype(_F32)[:, :, None, None]
    s = np.asarray(qw.scales).astype(_F32)
    p = (codes - z) * xs.reshape(1, ng, wpg, 8)
    t = ((p[..., 0] + p[..., 1]) + (p[..., 2] + p[..., 3])) + (
        (p[..., 4] + p[..., 5]) + (p[..., 6] + p[..., 7]))          # (out, ng, wpg)
    acc = np.zeros((out, ng, lanes), _F32)
    for i in range(wpg // lanes):
        acc = acc + t[:, :, i * lanes:(i + 1) * lanes]
    g = (acc[..., 0] + acc[..., 1]) + (acc[..., 2] + acc[..., 3])  # (out, ng)
    y = np.zeros(out, _F32)
    for j in range(ng):
        y = y + g[:, j] * s[:, j]
    return y
