"""A numba prange STREAM triad, kept apart so numba is imported only when asked for."""

import numba


@numba.njit(parallel=True, cache=True)
def triad(a, b, c, s):  # pragma: no cover - compiled
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + s * c[i]
