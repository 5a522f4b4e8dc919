"""Solutions of notebook 00 (the tour)."""

import numpy as np


def my_fps(points, n_samples, start=0):
    """Farthest point sampling: each pick is the point farthest from all picks so far."""
    dist = np.full(len(points), np.inf, dtype=points.dtype)
    picked = [start]
    for _ in range(n_samples - 1):
        d = points - points[picked[-1]]
        dist = np.minimum(dist, (d * d).sum(axis=1))
        dist[picked] = -1                      # never pick a point twice (duplicates too)
        picked.append(int(np.argmax(dist)))    # first maximum: ties to the lowest index
    return np.array(picked)


def fastest_verified(ds, size):
    """The device with the least median time among those verified at ``size``, or None."""
    at = ds.sel(size=size)
    med = at["time_s"].median("repeat").where(at["verified"])
    if bool(med.isnull().all()):
        return None
    return str(med["device"].values[int(np.nanargmin(med.values))])
