"""Checkers of notebook 09 (memory offload): a layer's time with and without overlap, and the
smallest prefetch depth that hides the reads of a pass."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._core import Case, Verdict, finish, run_cases

__all__ = ["check_layer_time", "check_smallest_prefetch", "smallest_prefetch"]


def smallest_prefetch(read_s: Sequence[float], compute_s: Sequence[float]) -> int:
    """Smallest prefetch depth whose pass (:func:`hetlab.offload_memory.costmodel.simulate`)
    ends as early as with every item allowed in flight at once (within 1e-9 s).

    >>> smallest_prefetch([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    1
    >>> smallest_prefetch([3.0, 3.0, 3.0], [1.0, 1.0, 1.0])
    1
    """
    from ..offload_memory.costmodel import simulate

    def end(p: int) -> float:
        return float(simulate(list(read_s), list(compute_s), p)["compute_end"].iloc[-1])

    best = end(len(read_s))
    return next(p for p in range(len(read_s) + 1) if end(p) <= best + 1e-9)


def check_layer_time(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 09.1: ``fn(read_s, compute_s, overlap)`` is one layer's predicted seconds.

    Parameters
    ----------
    fn : callable
        ``fn(read_s: float, compute_s: float, overlap: bool) -> float``: with overlap (the
        read of this layer runs behind the compute of the previous one) the slower of the two;
        without it, one after the other.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("read 3 ms, compute 5 ms, overlapped", (3e-3, 5e-3, True), 5e-3,
         "overlapped, the read runs while the previous layer computes: only the slower one "
         "counts."),
        ("read 3 ms, compute 5 ms, synchronous", (3e-3, 5e-3, False), 8e-3,
         "without overlap the layer is read, then computed: the two add up."),
        ("read 9 ms, compute 2 ms, overlapped (read-bound)", (9e-3, 2e-3, True), 9e-3,
         "when the read is the slower one, it sets the pace: max, not the compute."),
        ("a resident layer: read 0, compute 4 ms, synchronous", (0.0, 4e-3, False), 4e-3,
         "a layer already in fast memory reads nothing: its time is its compute."),
    ]
    cases = [Case(label, dict(zip(("read_s", "compute_s", "overlap"), args, strict=True)),
                  expected, nudge) for label, args, expected, nudge in specs]
    verdict = run_cases("09.1 layer_time", fn, cases, lambda got, exp: (
        got is not None and math.isclose(float(got), exp, rel_tol=1e-9, abs_tol=1e-15)))
    return finish(verdict, raise_on_fail)


def check_smallest_prefetch(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 09.2: ``fn(read_s, compute_s)`` is the smallest prefetch depth that hides the
    reads as well as any deeper one.

    Parameters
    ----------
    fn : callable
        ``fn(read_s: list[float], compute_s: list[float]) -> int``; per item in pass order,
        ``read_s = 0`` for a resident item. Depth 0 alternates reading and computing; depth
        ``p ≥ 1`` lets the reader work ahead while at most ``p + 1`` streamed items are read
        or being read and not yet computed (``hetlab.offload_memory.costmodel.simulate``).
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("reads 1 s, computes 2 s, 3 items", ([1.0] * 3, [2.0] * 3),
         "a read shorter than a compute is hidden by reading one item ahead."),
        ("all resident: no reads at all", ([0.0] * 3, [1.0] * 3),
         "nothing is read: depth 0 costs nothing."),
        ("a slow read in the middle: 1, 1, 5, 1 s of reads; 2 s computes",
         ([1.0, 1.0, 5.0, 1.0], [2.0] * 4),
         "one long read can be hidden only if it starts early enough: try the depths one by "
         "one with the pipeline's rule."),
        ("read-bound: reads 3 s, computes 1 s", ([3.0] * 4, [1.0] * 4),
         "when reads are slower than compute, the reader never idles from depth 1 on: a "
         "deeper queue buys nothing."),
        ("bursty compute: reads 2 s; computes 1, 1, 4, 4 s", ([2.0] * 4, [1.0, 1.0, 4.0, 4.0]),
         "while short computes run the reader falls behind; a deeper queue lets it catch up "
         "during the long ones."),
    ]
    cases = [Case(label, {"read_s": list(r), "compute_s": list(c)}, smallest_prefetch(r, c),
                  nudge) for label, (r, c), nudge in specs]
    verdict = run_cases("09.2 smallest_prefetch", fn, cases,
                        lambda got, exp: got is not None and int(got) == exp)
    return finish(verdict, raise_on_fail)
