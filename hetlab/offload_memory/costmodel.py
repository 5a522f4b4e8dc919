"""When streaming pays: predicted time per layer, and the budget below which reads dominate.

Per item, with read time ``r`` and compute time ``c``:

* overlapped (prefetch ≥ 1 and room for two items in the budget): ``max(r, c)``;
* synchronous (prefetch 0, or a budget that holds one item only): ``r + c``.

:func:`predict` puts these next to the executor's measured step times (from one item's end of
compute to the next), from a :class:`~.report.Report`, and :func:`simulate` replays a pass's
pipeline (reads in order on one reader, compute in order on another, at most ``prefetch + 1``
streamed items in flight) to predict every item's start and end.

Resident layers. The executor keeps the first ``k`` layers in fast memory between passes, as
many as its budget holds once the streaming pipeline's room and the activations are set aside
(:func:`resident_layers`, the function the executor itself calls). A pass of ``L`` layers then
reads ``L − k`` of them and, overlapped, takes about ``max(L·c, (L−k)·r)`` (:func:`pass_time`):
the reads of the streamed layers start at once, behind the resident layers' compute.
:func:`break_even_budget` answers the planning question: a pass is read-bound — streaming
dominates — while ``(L−k)·r > L·c``, i.e. below ``(k* + 2)`` layers of budget with
``k* = ⌈L(1 − c/r)⌉`` (two items of room for the prefetch pipeline; the activations, small
beside a layer in decode, come on top). With ``r ≤ c`` overlap alone hides the reads and the
break-even budget is two layers.

>>> break_even_budget(layer_bytes=100, n_layers=10, read_s=2.0, compute_s=1.0)
700
>>> break_even_budget(layer_bytes=100, n_layers=10, read_s=0.5, compute_s=1.0)
200
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.args import integer, number
from ..errors import InvalidInputError
from .report import Report

__all__ = ["predict", "layer_time", "break_even_budget", "resident_layers", "pass_time",
           "simulate"]


def layer_time(read_s: float, compute_s: float, overlap: bool) -> float:
    """Predicted seconds of one item: ``max(r, c)`` overlapped, ``r + c`` synchronous."""
    return max(read_s, compute_s) if overlap else read_s + compute_s


def predict(report: Report) -> Any:
    """Per item: measured read and compute, predicted step time with and without overlap, and
    the measured step time (end of this item's compute − end of the previous one's).

    Returns a pandas DataFrame indexed by item; ``attrs`` holds the totals.
    """
    import pandas as pd

    if not isinstance(report, Report):
        raise InvalidInputError(f"predict: report must be a run's Report; got "
                                f"{type(report).__name__}.")
    rows, prev = [], 0.0
    for t in report.items:
        r = t.read_s if t.bytes_read else 0.0
        c = t.compute_end - t.compute_start
        rows.append({"item": t.item, "read_s": r, "compute_s": c,
                     "predicted_overlap_s": layer_time(r, c, True),
                     "predicted_serial_s": layer_time(r, c, False),
                     "measured_s": t.compute_end - prev})
        prev = t.compute_end
    df = pd.DataFrame(rows).set_index("item")
    df.attrs.update({"predicted_overlap_s": float(df["predicted_overlap_s"].sum()),
                     "predicted_serial_s": float(df["predicted_serial_s"].sum()),
                     "measured_s": float(report.wall_s)})
    return df


def break_even_budget(layer_bytes: int, n_layers: int, read_s: float, compute_s: float) -> int:
    """Budget (bytes) below which a pass is read-bound (see the module docstring).

    Parameters
    ----------
    layer_bytes : int
        Bytes of one layer at the streamed width.
    n_layers : int
    read_s, compute_s : float
        Seconds to read and to compute one layer (e.g. medians of a report's items).
    """
    w = "break_even_budget"
    layer_bytes = integer(w, "layer_bytes", layer_bytes, 1, 2**62)
    n_layers = integer(w, "n_layers", n_layers, 1, 2**31)
    read_s = number(w, "read_s", read_s, lo=0.0)
    compute_s = number(w, "compute_s", compute_s, lo=0.0, lo_open=True)
    k = 0 if read_s <= compute_s else min(n_layers, math.ceil(n_layers * (1 - compute_s / read_s)))
    return int((k + 2) * layer_bytes)


def resident_layers(layer_bytes: Sequence[int], limit: int, reserve: int) -> int:
    """How many of the first layers stay resident: the largest ``k`` with
    ``sum(layer_bytes[:k]) + reserve <= limit``.

    Parameters
    ----------
    layer_bytes : sequence of int
        Bytes of each layer, in order.
    limit : int
        Bytes of the budget's weights pool.
    reserve : int
        Bytes kept free for the streamed items in flight and the activations.

    >>> resident_layers([100] * 10, limit=700, reserve=200)
    5
    >>> resident_layers([100] * 3, limit=150, reserve=200)
    0
    """
    k, held = 0, int(reserve)
    for nbytes in layer_bytes:
        if held + int(nbytes) > limit:
            break
        held += int(nbytes)
        k += 1
    return k


def pass_time(n_layers: int, resident: int, read_s: float, compute_s: float,
              overlap: bool = True) -> float:
    """Predicted seconds of one pass: ``max(L·c, (L−k)·r)`` overlapped, ``L·c + (L−k)·r`` not.

    >>> pass_time(10, 4, read_s=2.0, compute_s=1.0), pass_time(10, 4, 2.0, 1.0, overlap=False)
    (12.0, 22.0)
    """
    streamed = max(int(n_layers) - int(resident), 0)
    if overlap:
        return max(n_layers * compute_s, streamed * read_s)
    return n_layers * compute_s + streamed * read_s


def simulate(read_s: Sequence[float], compute_s: Sequence[float], prefetch: int) -> Any:
    """The pipeline's predicted timeline from per-item read and compute seconds.

    One reader reads the streamed items (``read_s > 0``; 0 marks a resident item) in order; one
    worker computes every item in order, each once its read has ended. With ``prefetch = p ≥ 1``
    a read may start only when fewer than ``p + 1`` streamed items are read or being read and
    not yet computed; with ``p = 0`` reading and computing alternate (no overlap). Budget waits
    are not modelled (the executor's ``budget_wait_s`` shows them).

    Returns
    -------
    pandas.DataFrame
        One row per item: ``read_start``, ``read_end``, ``compute_start``, ``compute_end``
        (seconds from the start of the pass; NaN reads for resident items).

    >>> df = simulate([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], prefetch=1)
    >>> df["compute_end"].tolist()
    [3.0, 5.0, 7.0]
    >>> simulate([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], prefetch=0)["compute_end"].tolist()
    [3.0, 6.0, 9.0]
    """
    import pandas as pd

    if len(read_s) != len(compute_s) or isinstance(prefetch, bool) or int(prefetch) < 0:
        raise InvalidInputError(
            f"simulate: read_s and compute_s must have one entry per item and prefetch must be "
            f"an int >= 0; got {len(read_s)} and {len(compute_s)} entries, prefetch={prefetch!r}."
        )
    rows: list[dict[str, float]] = []
    reader = worker = 0.0
    done: list[float] = []  # compute ends of the streamed items, in order
    for r, c in zip(read_s, compute_s, strict=True):
        rs = re = math.nan
        if r > 0:
            if prefetch == 0:
                reader = max(reader, worker)
            elif len(done) >= prefetch + 1:
                reader = max(reader, done[-(prefetch + 1)])
            rs, re = reader, reader + r
            reader = re
        cs = worker if r <= 0 else max(worker, re)
        worker = cs + c
        if r > 0:
            done.append(worker)
        rows.append({"read_start": rs, "read_end": re, "compute_start": cs,
                     "compute_end": worker})
    return pd.DataFrame(rows)
