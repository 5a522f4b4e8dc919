"""FPS on the ``fps`` overlay (``device="fpga"``): the implementation the point-cloud family
registers, its modeled timing, and the board self-test's cases.

The device and the thread model are shared by every overlay (:mod:`hetlab.fpga.device`); the
driver is :mod:`.fpga_driver`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...fpga.device import overlay_kernel
from .fpga_driver import FpsDriver

__all__ = ["OVERLAY", "Driver", "REPORT_SIZES", "fps", "selftest_cases"]

#: the overlay (``overlays/fps``) and its driver
OVERLAY = "fps"
Driver = FpsDriver
#: two representative calls (timing-model scalars) for ``python -m hetlab.fpga.report``
REPORT_SIZES = ({"n": 4096, "n_samples": 512, "start": 0},
                {"n": 16384, "n_samples": 1024, "start": 0})


#: FPS on the ``fps`` overlay: indices (n_samples,) int64 (float32 points only);
#: ``fps.modeled(...)`` adds the modeled timing
fps = overlay_kernel(
    "fps", FpsDriver,
    lambda points, n_samples, start: {"n": points.shape[0], "n_samples": n_samples,
                                      "start": start},
)


def selftest_cases(sizes: Sequence[int]) -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Seeded (driver keywords, timing-model scalars) per size, for ``hetlab.fpga.selftest``."""
    out = []
    for n in sizes:
        rng = np.random.default_rng([7, n])
        pts = rng.random((n, 3), dtype=np.float32)
        s = max(1, min(n, n // 8))
        out.append(({"points": pts, "n_samples": s, "start": 0},
                    {"n": n, "n_samples": s, "start": 0}))
    return out
