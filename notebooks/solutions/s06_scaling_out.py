"""Solutions of notebook 06 (scaling out)."""


def units_to_run(sizes, devices, done):
    """(size, device) units of the sweep not yet in ``done``, sizes outer, devices inner."""
    finished = set(done)
    return [(s, d) for s in sizes for d in devices if (s, d) not in finished]


def resources_for(device, advertised):
    """{"gpu": 1} for the GPU backend, {"cpu-bench": 1} otherwise; None when not offered."""
    key = "gpu" if device in ("cupy", "cuda", "gpu") else "cpu-bench"
    return {key: 1} if key in advertised else None
