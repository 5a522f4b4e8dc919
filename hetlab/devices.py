"""``hl.devices()``: every backend, whether it runs here, why not, and its peak figures."""

from __future__ import annotations

import numbers
from typing import Any

from .core.registry import backend_names, get_backend

__all__ = ["devices", "set_threads"]

_COLUMNS = ["available", "reason", "kind", "timing", "device_name", "threads",
            "peak_bandwidth_gbps", "peak_gflops", "peak_source"]


def devices(*, peaks: bool = True) -> Any:
    """Describe every registered backend as a pandas DataFrame (one row per device).

    Parameters
    ----------
    peaks : bool, default True
        Measure the host's peak figures (a STREAM triad and a float32 matmul, about a second
        the first time in a process, cached after). False leaves them out.

    Returns
    -------
    pandas.DataFrame
        Index ``device``; columns ``available``, ``reason`` (why not, or ""), ``kind``,
        ``timing`` ("measured" or "modeled"), ``device_name``, ``threads``,
        ``peak_bandwidth_gbps`` (GB/s), ``peak_gflops`` (GFLOP/s), ``peak_source``.
    """
    import pandas as pd

    rows = []
    for name in backend_names():
        b = get_backend(name)
        reason = b.why_not()
        row: dict[str, Any] = {"device": name, "available": reason is None,
                               "reason": reason or "", "kind": b.kind, "timing": b.timing_source}
        if reason is None:
            info = {**b.info(), **(b.peaks() if peaks else {})}
            row.update({k: v for k, v in info.items() if k in _COLUMNS})
        rows.append(row)
    df = pd.DataFrame(rows, columns=["device", *_COLUMNS]).set_index("device")
    df["threads"] = df["threads"].astype("Int64")
    return df


def set_threads(n: int) -> None:
    """Use ``n`` CPU threads in the numba backend's parallel kernels.

    ``n`` is an int in ``[1, numba.config.NUMBA_NUM_THREADS]``; InvalidInputError otherwise.
    """
    from .errors import InvalidInputError

    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise InvalidInputError(
            f"set_threads: n must be an int (threads, >= 1); got {n!r} ({type(n).__name__}).")
    try:
        get_backend("numba").set_threads(int(n))  # type: ignore[attr-defined]
    except InvalidInputError as exc:
        raise InvalidInputError(f"set_threads: n out of range: {exc}") from None
