"""Point-cloud kernel family: FPS, kNN, ball query, fused FPS+kNN, voxel downsampling."""

from .api import ball_query, fps, fps_knn, knn, voxel_downsample
from .spec import make_cloud

__all__ = ["fps", "knn", "ball_query", "fps_knn", "voxel_downsample", "make_cloud"]
