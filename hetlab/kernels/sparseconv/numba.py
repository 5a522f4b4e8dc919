"""Sparse 3-D convolution on the CPU: two dataflows over one kernel map, and an autotuner.

* ``gather_scatter`` (gather-GEMM-scatter): per offset, gather the matched input rows, one
  dense GEMM (BLAS) with that offset's weights, scatter-add into the outputs (each output has
  at most one input per offset, so the scatter has no conflicts). The centre offset of a
  submanifold layer maps every voxel to itself: one GEMM on all features, no gather.
* ``fetch_on_demand`` (per-output accumulation): a numba ``prange`` over outputs; each fetches
  its (at most K³) neighbours' rows and accumulates their products in registers/L1, writing
  its output row once. No gathered copies, no GEMM.

Which wins depends on the layer: channels (GEMM efficiency) against neighbours per output and
voxel count (gather traffic). ``dataflow="auto"`` measures both on the layer's own kernel map
(one untimed call, then round-robin best of three, more when close) and caches the choice by
(log2 voxels, kernel size, stride, channels in/out, rounded neighbours per output, dtype): see
:data:`TUNER`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from numba import prange

from ...backends.numba import JIT_OPTIONS
from ...log import get_logger
from .kernel_map import KernelMap, build_kernel_map

_log = get_logger(__name__)

__all__ = ["DATAFLOWS", "TUNER", "Autotuner", "run_dataflow", "sparse_conv3d"]

DATAFLOWS = ("gather_scatter", "fetch_on_demand")
_FAST = {**JIT_OPTIONS, "fastmath": {"nsz", "arcp", "contract", "afn", "reassoc"}}


@numba.njit(parallel=True, **_FAST)
def _fetch_on_demand(features, weights, nbr, out):  # pragma: no cover - compiled
    c_in = features.shape[1]
    c_out = weights.shape[2]
    for o in prange(nbr.shape[0]):
        acc = np.zeros(c_out, np.float64)
        for d in range(nbr.shape[1]):
            i = nbr[o, d]
            if i >= 0:
                f = features[i]
                w = weights[d]
                for a in range(c_in):
                    fa = f[a]
                    wa = w[a]
                    for b in range(c_out):
                        acc[b] += fa * wa[b]
        for b in range(c_out):
            out[o, b] = acc[b]


def _gather_scatter(features: np.ndarray, weights: np.ndarray, kmap: KernelMap,
                    out: np.ndarray) -> None:
    centre = weights.shape[0] // 2 if kmap.stride == 1 and kmap.kernel_size % 2 else -1
    if centre >= 0:
        out[:] = features @ weights[centre]
    for d, (i_idx, o_idx) in enumerate(kmap.pairs):
        if d == centre or not i_idx.size:
            continue
        out[o_idx] += features[i_idx] @ weights[d]


def run_dataflow(dataflow: str, features: np.ndarray, weights: np.ndarray,
                 kmap: KernelMap) -> np.ndarray:
    """Output features of one dataflow on a built kernel map, shape (n_out, C_out)."""
    out = np.zeros((kmap.out_voxels.shape[0], weights.shape[2]), dtype=features.dtype)
    if features.shape[0] == 0:
        return out
    if dataflow == "gather_scatter":
        _gather_scatter(features, weights, kmap, out)
    else:
        _fetch_on_demand(features, weights, kmap.nbr, out)
    return out


@dataclass
class Autotuner:
    """Measures each dataflow on a layer's kernel map once per layer class; caches the winner.

    ``cache`` maps a key (see :meth:`key`) to ``{"choice": name, "times_s": {name: s}}``.
    """

    repeats: int = 3
    cache: dict[tuple, dict[str, Any]] = field(default_factory=dict)

    @staticmethod
    def key(features: np.ndarray, weights: np.ndarray, kmap: KernelMap) -> tuple:
        n = max(kmap.out_voxels.shape[0], 1)
        return (int(math.log2(n)), kmap.kernel_size, kmap.stride, weights.shape[1],
                weights.shape[2], round(kmap.mean_neighbours), str(features.dtype))

    def choose(self, features: np.ndarray, weights: np.ndarray, kmap: KernelMap) -> str:
        """The cached or freshly measured fastest dataflow for this layer.

        Dataflows are timed round-robin (a change of machine load hits all alike), best of
        ``repeats``; when the two fastest are within 20% of each other, ``2 * repeats`` more
        rounds settle the close race.
        """
        key = self.key(features, weights, kmap)
        if key not in self.cache:
            times = dict.fromkeys(DATAFLOWS, float("inf"))
            for name in DATAFLOWS:
                run_dataflow(name, features, weights, kmap)  # compile / warm
            self._rounds(times, features, weights, kmap, self.repeats)
            first, second = sorted(times.values())[:2]
            if second < 1.2 * first:
                self._rounds(times, features, weights, kmap, 2 * self.repeats)
            self.cache[key] = {"choice": min(times, key=times.__getitem__), "times_s": times}
            _log.info("sparse_conv3d: dataflow %s for layer %s (best of measured: %s)",
                      self.cache[key]["choice"], key,
                      ", ".join(f"{n} {t * 1e3:.3g} ms" for n, t in times.items()))
        return self.cache[key]["choice"]

    @staticmethod
    def _rounds(times: dict[str, float], features: np.ndarray, weights: np.ndarray,
                kmap: KernelMap, rounds: int) -> None:
        for _ in range(rounds):
            for name in times:
                t0 = time.perf_counter()
                run_dataflow(name, features, weights, kmap)
                times[name] = min(times[name], time.perf_counter() - t0)


#: the process-wide autotuner of ``dataflow="auto"``
TUNER = Autotuner()


def sparse_conv3d(voxels: np.ndarray, features: np.ndarray, weights: np.ndarray,
                  kernel_size: int, stride: int, dataflow: str = "auto"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Numba implementation of :func:`hetlab.sparse_conv3d` (validated arguments)."""
    kmap = build_kernel_map(voxels, kernel_size, stride)
    if dataflow == "auto":
        dataflow = TUNER.choose(features, weights, kmap) if voxels.shape[0] else DATAFLOWS[0]
    return kmap.out_voxels, run_dataflow(dataflow, features, weights, kmap)
