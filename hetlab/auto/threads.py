"""Threading of the host devices: hetlab leaves it to the user, and sets it only when asked.

Two process-wide settings change how fast small calls are on a shared or oversubscribed
machine: numba's threading layer (``omp``/``tbb`` workers that sleep and wake late, or the
simple ``workqueue``) and the number of BLAS threads NumPy uses. On the 2-core development
machine shared by several users, OpenMP's and OpenBLAS's sleeping workers woke a scheduler
slice (~10 ms) late on whole runs of calls (docs/auto.md), which no calibration can predict;
numba's ``workqueue`` layer and one BLAS thread did not.

hetlab does **not** change either by itself, neither on import nor on a ``device="auto"``
call: both are global to the process (they change the user's own numba and NumPy code too),
numba's layer is fixed at its first parallel launch, and the ``workqueue`` layer is not
thread-safe — numba terminates the process when two threads launch parallel kernels at
once, which a threaded Dask client or the user's own threads would do. The user opts in with
:func:`configure_threads`, which respects every explicit setting (the environment variables
``NUMBA_THREADING_LAYER``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``,
``OMP_NUM_THREADS``, or ``numba.config.THREADING_LAYER`` assigned in code) and logs each change
at WARNING on the ``hetlab.auto`` logger. The calibration cache is keyed by what it set
(:func:`threads_state`), so models measured under one setting are not used under another.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvalidInputError
from ..log import get_logger

__all__ = ["configure_threads", "threads_state", "LAYERS", "BLAS_ENV"]

_log = get_logger("hetlab.auto")
#: numba threading layers hetlab can select
LAYERS = ("workqueue", "omp", "tbb")
#: environment variables by which a user sets the BLAS threads
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")
#: what configure_threads set in this process
_SET: dict[str, str] = {}
#: the threadpoolctl limiter holding the BLAS setting (kept alive)
_LIMITER: list[Any] = []


def threads_state() -> dict[str, str]:
    """What :func:`configure_threads` set in this process (``{}`` when nothing).

    >>> isinstance(threads_state(), dict)
    True
    """
    return dict(_SET)


def _numba_layer_running(numba: Any) -> str | None:
    """The layer numba already runs on (fixed from its first parallel launch), or None."""
    try:
        return str(numba.threading_layer())
    except ValueError:  # no parallel region has run yet
        return None


def _set_layer(layer: str) -> str:
    if os.environ.get("NUMBA_THREADING_LAYER"):
        return f"kept: $NUMBA_THREADING_LAYER={os.environ['NUMBA_THREADING_LAYER']} (the user's)"
    try:
        import numba
    except ImportError:
        return "not changed: numba is not installed"
    current = str(numba.config.THREADING_LAYER)
    if current != "default":
        return f"kept: numba.config.THREADING_LAYER={current!r} (set in code)"
    running = _numba_layer_running(numba)
    if running is not None:
        _log.warning("auto: numba's threading layer stays %s: a parallel kernel already ran "
                     "(call configure_threads before the first numba call)", running)
        return f"not changed: numba already runs on {running}"
    numba.config.THREADING_LAYER = layer
    _SET["numba_layer"] = layer
    _log.warning("auto: numba threading layer set to %r for this process "
                 "(hl.auto.configure_threads)", layer)
    return "set"


def _set_blas(n: int) -> str:
    for var in BLAS_ENV:
        if os.environ.get(var):
            return f"kept: ${var}={os.environ[var]} (the user's)"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return "not changed: threadpoolctl is not installed (pip install threadpoolctl)"
    _LIMITER[:] = [threadpool_limits(limits=n, user_api="blas")]
    _SET["blas_threads"] = str(n)
    _log.warning("auto: BLAS threads limited to %d for this process (hl.auto.configure_threads)",
                 n)
    return "set"


def configure_threads(numba_layer: str | None = "workqueue",
                      blas_threads: int | None = 1) -> dict[str, str]:
    """Set numba's threading layer and NumPy's BLAS threads, unless the user already has.

    For single-threaded programs on a shared or oversubscribed machine, where sleeping
    OpenMP/OpenBLAS workers wake late and make small calls' times unpredictable. Not for
    programs that call numba kernels from several threads at once: numba's ``workqueue``
    layer terminates the process on concurrent launches (pass ``numba_layer=None`` or
    ``"tbb"`` there).

    Parameters
    ----------
    numba_layer : {"workqueue", "omp", "tbb"} or None, default "workqueue"
        Layer for numba's parallel kernels; None leaves it. Takes effect only before the
        process's first numba parallel launch.
    blas_threads : int >= 1 or None, default 1
        Threads of NumPy's BLAS (through threadpoolctl); None leaves them.

    Returns
    -------
    dict of str → str
        Per setting (``"numba_layer"``, ``"blas_threads"``): ``"set"``, or why it was kept
        (``"kept: $NUMBA_THREADING_LAYER=omp (the user's)"``) or not changed.

    Raises
    ------
    InvalidInputError
        ``numba_layer`` not one of :data:`LAYERS` or None; ``blas_threads`` not an int >= 1
        or None.

    Examples
    --------
    >>> import hetlab as hl
    >>> hl.auto.configure_threads(numba_layer=None, blas_threads=None)
    {}
    """
    if numba_layer is not None and numba_layer not in LAYERS:
        raise InvalidInputError(f"configure_threads: numba_layer must be one of {LAYERS} or "
                                f"None; got {numba_layer!r}.")
    if blas_threads is not None and (isinstance(blas_threads, bool)
                                     or not isinstance(blas_threads, int) or blas_threads < 1):
        raise InvalidInputError(f"configure_threads: blas_threads must be an int >= 1 or None; "
                                f"got {blas_threads!r}.")
    out = {}
    if numba_layer is not None:
        out["numba_layer"] = _set_layer(numba_layer)
    if blas_threads is not None:
        out["blas_threads"] = _set_blas(blas_threads)
    return out
