"""The Numba backend: multithreaded CPU kernels compiled with ``numba.njit(parallel=True)``."""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import Any

from .. import machine
from .numpy import HostBackend

__all__ = ["NumbaBackend", "JIT_OPTIONS"]

#: project-wide numba options: cached compilation, no fastmath (results must equal the
#: reference bit for bit where the kernel promises exactness)
JIT_OPTIONS: dict[str, Any] = {"cache": True, "nogil": True}


class NumbaBackend(HostBackend):
    """Numba-compiled kernels on all host threads; see :meth:`set_threads`."""

    name = "numba"

    def why_not(self) -> str | None:
        if "numba" in sys.modules:  # imported already (every call after the first kernel)
            return None
        if importlib.util.find_spec("numba") is None:  # a search of sys.path: ~26 µs
            return "numba is not installed (pip install numba)"
        return None

    def threads(self) -> int:
        import numba

        return int(numba.get_num_threads())

    def set_threads(self, n: int) -> None:
        """Use ``n`` threads for parallel kernels (1 ≤ n ≤ ``numba.config.NUMBA_NUM_THREADS``)."""
        import numba

        from ..errors import InvalidInputError

        top = numba.config.NUMBA_NUM_THREADS
        if not isinstance(n, int) or not 1 <= n <= top:
            raise InvalidInputError(f"numba: threads must be an int in [1, {top}]; got {n!r}.")
        numba.set_num_threads(n)

    def peaks(self) -> dict[str, Any]:
        return {
            "peak_bandwidth_gbps": _parallel_triad_gbps(self.threads()),
            "peak_gflops": machine.matmul_gflops(),
            "peak_source": "measured: numba prange STREAM triad, numpy float32 matmul (BLAS)",
        }


@functools.cache
def _parallel_triad_gbps(threads: int, n: int = 8_000_000, repeats: int = 5) -> float:
    """STREAM triad ``a = b + 3c`` with a numba prange loop, GB/s (24 bytes per element)."""
    import numpy as np

    from ._triad import triad

    b = np.ones(n)
    c = np.ones(n)
    a = np.empty(n)
    triad(a, b, c, 3.0)  # compile
    t = machine._best_time(lambda: triad(a, b, c, 3.0), repeats)
    return 24 * n / t / 1e9
