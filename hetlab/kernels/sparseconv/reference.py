"""NumPy reference of sparse 3-D convolution: a dense convolution on the occupied grid.

The features are scattered into a dense grid spanning the input voxels (zeros elsewhere); each
output voxel then sums, over the K³ kernel offsets, the grid cell it reaches times that
offset's weight matrix. No hashing and no kernel map: independent of the fast paths.
Small sizes only (the grid is dense): a grid above :data:`MAX_GRID_BYTES` (or above this
machine's memory) is refused before anything is allocated.
"""

from __future__ import annotations

import numpy as np

from ...core.validation import physical_memory
from ...errors import InvalidInputError

__all__ = ["sparse_conv3d", "kernel_offsets", "output_coords", "grid_bytes", "MAX_GRID_BYTES"]

#: largest dense grid the reference allocates (float64 cells × input channels)
MAX_GRID_BYTES = 4 << 30


def grid_bytes(voxels: np.ndarray, c_in: int) -> int:
    """Bytes of the reference's dense float64 grid: the voxels' bounding box × ``c_in``
    (exact Python integers: never overflows)."""
    if voxels.shape[0] == 0:
        return 0
    ext = voxels.max(axis=0).astype(np.int64) - voxels.min(axis=0).astype(np.int64) + 1
    return int(ext[0]) * int(ext[1]) * int(ext[2]) * max(int(c_in), 1) * 8


def _check_grid(voxels: np.ndarray, c_in: int) -> None:
    need = grid_bytes(voxels, c_in)
    limit = min(MAX_GRID_BYTES, physical_memory() or MAX_GRID_BYTES)
    if need > limit:
        ext = tuple(int(e) for e in voxels.max(axis=0).astype(np.int64)
                    - voxels.min(axis=0).astype(np.int64) + 1)
        raise InvalidInputError(
            f"sparse_conv3d: the numpy reference builds a dense grid over the voxels' bounding "
            f"box {ext} × {c_in} channels, which would take {need / 2**30:.4g} GiB (limit "
            f"{limit / 2**30:.4g} GiB); got voxels spanning that box. Use device=\"numba\", "
            "whose hashed kernel map needs memory only for the occupied voxels."
        )


def kernel_offsets(kernel_size: int) -> np.ndarray:
    """The K³ offsets, shape (K³, 3) int64, x slowest: ``d - (K-1)//2`` for d in 0..K-1
    (K=3: -1, 0, 1; K=2: 0, 1)."""
    r = np.arange(kernel_size) - (kernel_size - 1) // 2
    return np.stack(np.meshgrid(r, r, r, indexing="ij"), axis=-1).reshape(-1, 3)


def output_coords(voxels: np.ndarray, stride: int) -> np.ndarray:
    """Output voxels: the inputs themselves (stride 1, submanifold) or the distinct
    ``floor(v / stride)``, sorted by (x, y, z)."""
    if stride == 1:
        return voxels
    return np.unique(np.floor_divide(voxels, stride), axis=0).astype(voxels.dtype)


def sparse_conv3d(voxels: np.ndarray, features: np.ndarray, weights: np.ndarray,
                  kernel_size: int, stride: int, dataflow: str = "auto"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Output voxels ``q`` and features ``Σ_δ features[v = q·stride + δ] @ weights[δ]``."""
    del dataflow  # one definition, whatever the dataflow
    out_v = output_coords(voxels, stride)
    c_out = weights.shape[2]
    out = np.zeros((out_v.shape[0], c_out), dtype=features.dtype)
    if voxels.shape[0] == 0:
        return out_v, out
    _check_grid(voxels, features.shape[1])
    offs = kernel_offsets(kernel_size)
    lo = voxels.min(axis=0).astype(np.int64)
    ext = voxels.max(axis=0).astype(np.int64) - lo + 1
    grid = np.zeros((*ext, features.shape[1]), dtype=np.float64)
    g = voxels.astype(np.int64) - lo
    grid[g[:, 0], g[:, 1], g[:, 2]] = features
    base = out_v.astype(np.int64) * stride - lo
    acc = np.zeros((out_v.shape[0], c_out))
    for d, off in enumerate(offs):
        p = base + off
        inside = ((p >= 0) & (p < ext)).all(axis=1)
        q = p[inside]
        acc[inside] += grid[q[:, 0], q[:, 1], q[:, 2]] @ weights[d].astype(np.float64)
    out[:] = acc
    return out_v, out
