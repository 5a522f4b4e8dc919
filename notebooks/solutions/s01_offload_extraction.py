"""Solutions of notebook 01 (offload extraction)."""


def predict_verdicts():
    """The verdicts of hetlab.exercises.PUZZLE's four loops."""
    return {
        "L1": "parallel",      # b[i] = 2 a[i]: each iteration writes its own element
        "L2": "reduction",     # s += a[i] b[i]: a scalar sum, combined per thread
        "L3": "sequential",    # c[i] = c[i - 1] + a[i]: reads the previous iteration's write
        "L4": "sequential",    # d[i] = a[i] + d[n - 1 - i]: reads what another iteration writes
    }


def saxpy_loop(a, x, y, out):
    """out = a * x + y, as a loop offload.analyze proves parallel."""
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]
