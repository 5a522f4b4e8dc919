"""Offload extraction: find the loops of a plain Python function worth offloading.

A Python take on environment-adaptive automatic offloading (Yamato et al., NTT): read a function
whose work is explicit ``for … in range(…)`` loops over NumPy arrays, decide per loop whether it
is parallel, recognize whole nests that are a library routine (function blocks: matmul, dot,
… replaced by NumPy/BLAS or CuPy/cuBLAS calls, tried first), generate variants (numba
``prange``; numba.cuda kernels, with atomics for reductions; Vitis-HLS C++ for the FPGA, run
in the emulator's C-simulation with modeled time), and search the offload pattern by genetic
algorithm on measured, verified run times, destinations in the order CPU, GPU, FPGA.

>>> from hetlab import offload
>>> from hetlab.offload.examples import EXAMPLES
>>> report = offload.analyze(EXAMPLES["matvec"].fn)
>>> [(loop.var, loop.verdict) for loop in report.loops]
[('i', 'parallel'), ('j', 'reduction')]

Importing this package imports neither numba nor cupy; they load when a variant is built.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["analyze", "transform", "search", "register_offload_cli", "Report", "Plan",
           "Variant", "GAOptions", "MeasureOptions", "FpgaOptions"]

_LAZY = {
    "analyze": ".analysis.report", "Report": ".analysis.report",
    "transform": ".targets.generate", "Variant": ".targets.base",
    "search": ".searching.driver", "Plan": ".searching.plan",
    "register_offload_cli": ".cli",
    "GAOptions": ".searching.options", "MeasureOptions": ".searching.options",
    "FpgaOptions": ".searching.options",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'hetlab.offload' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
