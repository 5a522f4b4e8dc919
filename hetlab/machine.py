"""Facts about the host machine, for provenance attrs and roofline peaks.

Nothing here runs at import time; measured figures are cached per process.
"""

from __future__ import annotations

import functools
import os
import platform
import socket
import time

import numpy as np

__all__ = ["cpu_model", "cpu_isa", "host_facts", "stream_triad_gbps", "matmul_gflops"]


@functools.cache
def cpu_model() -> str:
    """Return the CPU model name (from /proc/cpuinfo on Linux, else platform)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: instruction sets worth naming beside a CPU figure (LLVM feature names)
_ISA = ("avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avxvnni", "amx-tile", "amx-int8")


@functools.cache
def cpu_isa() -> tuple[str, ...]:
    """Return the vector instruction sets of this CPU that hetlab's kernels care about.

    Names are LLVM's (as numba compiles for them), in the order of ``_ISA``; an empty tuple
    where LLVM cannot tell.

    Examples
    --------
    >>> set(cpu_isa()) <= set(_ISA)
    True
    """
    try:
        from llvmlite import binding as llvm

        feats = llvm.get_host_cpu_features()
    except Exception:  # no llvmlite or no feature query: nothing to claim
        return ()
    return tuple(f for f in _ISA if feats.get(f, False))


def host_facts() -> dict[str, str | int]:
    """Return host provenance: hostname, OS, CPU model, logical cores, Python and NumPy versions."""
    return {
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count() or 1,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def _best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@functools.cache
def stream_triad_gbps(n: int = 8_000_000, repeats: int = 5) -> float:
    """Measure single-threaded NumPy STREAM-triad bandwidth ``a = b + s*c`` in GB/s.

    NumPy computes the triad in two passes (``a = s*c``, then ``a += b``), which move five
    arrays of ``n`` float64 (40 bytes per element, no write-allocate); all five are counted, so
    the figure is the memory traffic NumPy actually sustains.
    """
    b = np.ones(n)
    c = np.ones(n)
    a = np.empty(n)

    def triad() -> None:
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    t = _best_time(triad, repeats)
    return 5 * 8 * n / t / 1e9


@functools.cache
def matmul_gflops(n: int = 1024, repeats: int = 3) -> float:
    """Measure float32 matrix-multiply throughput through NumPy's BLAS, in GFLOP/s."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    t = _best_time(lambda: a @ b, repeats)
    return 2 * n**3 / t / 1e9
