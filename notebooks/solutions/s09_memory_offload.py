"""Solutions of notebook 09 (memory offload)."""


def layer_time(read_s, compute_s, overlap):
    """Overlapped: the slower of read and compute; synchronous: both, one after the other."""
    return max(read_s, compute_s) if overlap else read_s + compute_s


def smallest_prefetch(read_s, compute_s):
    """Replay the pipeline at depth 0, 1, 2, … and keep the first that ends as early as the
    deepest one (every item allowed in flight)."""

    def end(depth):
        reader = worker = 0.0
        done = []  # compute ends of the streamed items
        for r, c in zip(read_s, compute_s, strict=True):
            if r > 0:
                if depth == 0:
                    reader = max(reader, worker)        # read only when compute is idle
                elif len(done) >= depth + 1:
                    reader = max(reader, done[-(depth + 1)])  # a slot frees when computed
                reader += r
                worker = max(worker, reader) + c
                done.append(worker)
            else:
                worker += c
        return worker

    best = end(len(read_s))
    return next(p for p in range(len(read_s) + 1) if end(p) <= best + 1e-9)
