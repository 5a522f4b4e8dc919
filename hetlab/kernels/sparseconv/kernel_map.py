"""The kernel map of a sparse convolution, built by hashing voxel coordinates (numba).

For every output voxel q and kernel offset δ (K³ of them) the map holds the input voxel at
``q·stride + δ`` or -1: a table of shape (n_out, K³). Coordinates are packed into one int64
(21 bits per axis, offset by 2**20) and stored in an open-addressing hash table (linear
probing, load ≤ 1/2); the build is serial, the K³ lookups per output run in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np
from numba import prange

from ...backends.numba import JIT_OPTIONS
from .reference import kernel_offsets, output_coords

__all__ = ["KernelMap", "build_kernel_map", "COORD_LIMIT"]

#: voxel coordinates must lie in [-COORD_LIMIT, COORD_LIMIT) (21 bits per axis when packed)
COORD_LIMIT = 1 << 19
_OFF = np.int64(1 << 20)
_EMPTY = np.int64(-1)


@numba.njit(**JIT_OPTIONS)
def _pack(x, y, z):  # pragma: no cover - compiled
    return ((np.int64(x) + _OFF) << 42) | ((np.int64(y) + _OFF) << 21) | (np.int64(z) + _OFF)


@numba.njit(**JIT_OPTIONS)
def _slot(key, mask):  # pragma: no cover - compiled
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(20)) & mask


@numba.njit(**JIT_OPTIONS)
def _build_table(voxels):  # pragma: no cover - compiled
    n = voxels.shape[0]
    cap = 2
    while cap < 2 * n:
        cap <<= 1
    mask = np.int64(cap - 1)
    keys = np.full(cap, _EMPTY, np.int64)
    vals = np.empty(cap, np.int64)
    for i in range(n):
        k = _pack(voxels[i, 0], voxels[i, 1], voxels[i, 2])
        h = _slot(k, mask)
        while keys[h] != _EMPTY:
            h = (h + 1) & mask
        keys[h] = k
        vals[h] = i
    return keys, vals


@numba.njit(parallel=True, **JIT_OPTIONS)
def _lookup(keys, vals, out_voxels, offsets, stride, nbr):  # pragma: no cover - compiled
    mask = np.int64(keys.shape[0] - 1)
    for o in prange(out_voxels.shape[0]):
        for d in range(offsets.shape[0]):
            k = _pack(out_voxels[o, 0] * stride + offsets[d, 0],
                      out_voxels[o, 1] * stride + offsets[d, 1],
                      out_voxels[o, 2] * stride + offsets[d, 2])
            h = _slot(k, mask)
            found = -1
            while keys[h] != _EMPTY:
                if keys[h] == k:
                    found = vals[h]
                    break
                h = (h + 1) & mask
            nbr[o, d] = found


@dataclass
class KernelMap:
    """Output voxels, the (n_out, K³) neighbour table, and per-offset (input, output) pairs."""

    out_voxels: np.ndarray
    nbr: np.ndarray
    kernel_size: int
    stride: int
    _pairs: list[tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False)

    @property
    def pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each offset: (input indices, output indices) of its matches (computed once)."""
        if self._pairs is None:
            self._pairs = []
            for d in range(self.nbr.shape[1]):
                o = np.flatnonzero(self.nbr[:, d] >= 0)
                self._pairs.append((self.nbr[o, d], o))
        return self._pairs

    @property
    def mean_neighbours(self) -> float:
        """Average matched inputs per output voxel (the map's density, 1…K³)."""
        n = self.nbr.shape[0]
        return float((self.nbr >= 0).sum() / n) if n else 0.0


def build_kernel_map(voxels: np.ndarray, kernel_size: int, stride: int) -> KernelMap:
    """Hash ``voxels`` (n, 3) and look up every output's K³ neighbours."""
    out_v = output_coords(voxels, stride)
    offs = kernel_offsets(kernel_size)
    nbr = np.empty((out_v.shape[0], offs.shape[0]), dtype=np.int64)
    if voxels.shape[0]:
        keys, vals = _build_table(voxels)
        _lookup(keys, vals, out_v, offs, np.int64(stride), nbr)
    return KernelMap(out_v, nbr, kernel_size, stride)
