"""Sparse 3-D convolution on voxels: kernel map by hashing, two dataflows, an autotuner."""

from .api import autotune_table, sparse_conv3d
from .spec import voxelize

__all__ = ["sparse_conv3d", "voxelize", "autotune_table"]
