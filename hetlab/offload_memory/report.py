"""What a streamed forward pass did: per item bytes, read and compute intervals, overlap, stalls.

Times are seconds from the start of the forward pass (``time.perf_counter``). *Read* is the
reader thread's ``preadv`` of an item; *compute* the main thread's work on it (the KV cache's
own reads, writes and waits happen inside it, are reported apart as ``kv_read_s`` /
``kv_write_s`` / ``kv_wait_s``, and are cut out of its compute intervals: ``kv_spans``).
*Overlap* is the time during which an item's read ran while some item was being computed (those
cut intervals); a *stall* is time the main thread waited for an item that was not read yet;
*budget wait* is time the reader waited for the budget to free bytes before it could read.
*KV prefetch* is the reader thread's read-back of a layer's spilled KV blocks while the layer
before it computes (``kv_prefetch_*``; ``kv_wait_s``: time the layer waited for it to finish;
``kv_bytes_read``/``kv_read_s`` are what the layer still read itself).
The run's ``hidden_fraction`` is ``|R ∩ C| / min(|R|, |C|)``: ``R`` the union of all reads on
the reader thread (weights and KV prefetch), ``C`` the union of the compute intervals (KV I/O
and waits cut out), ``|·|`` the seconds an interval union covers. Numerator and denominator
measure the same intervals, so it is ≤ 1 by construction; 1.0 means the smaller of reading and
computing was hidden entirely (the issue's goal: ≥ 0.8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ItemTiming", "Report", "overlap", "measure"]

Intervals = list[tuple[float, float]]


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def measure(intervals: Intervals) -> float:
    """Seconds covered by a set of intervals (their union).

    >>> measure([(0, 2), (1, 3), (5, 6)])
    4.0
    """
    return float(sum(b - a for a, b in _merge(intervals)))


def _cut(start: float, end: float, cuts: Intervals) -> Intervals:
    """``(start, end)`` with ``cuts`` taken out: the pieces left, in order."""
    out, at = [], start
    for a, b in _merge(cuts):
        if b <= at or a >= end:
            continue
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < end:
        out.append((at, end))
    return out


def overlap(a: Intervals, b: Intervals) -> float:
    """Seconds covered by both sets of intervals.

    >>> overlap([(0, 2), (3, 4)], [(1, 3.5)])
    1.5
    """
    total = 0.0
    for x0, x1 in _merge(a):
        for y0, y1 in _merge(b):
            total += max(0.0, min(x1, y1) - max(x0, y0))
    return total


@dataclass
class ItemTiming:
    """One item (``"embed"``, ``"L3"``, ``"final"``) of one forward pass."""

    item: str
    bytes_read: int = 0
    read_start: float = math.nan
    read_end: float = math.nan
    compute_start: float = math.nan
    compute_end: float = math.nan
    stall_s: float = 0.0
    budget_wait_s: float = 0.0
    kv_bytes_read: int = 0
    kv_read_s: float = 0.0
    kv_bytes_written: int = 0
    kv_write_s: float = 0.0
    overlap_s: float = 0.0
    resident: bool = False
    kv_prefetch_bytes: int = 0
    kv_prefetch_start: float = math.nan
    kv_prefetch_end: float = math.nan
    kv_prefetch_skipped: str = ""
    kv_wait_s: float = 0.0
    kv_overlap_s: float = 0.0
    kv_spans: Intervals = field(default_factory=list)

    @property
    def kv_prefetch_s(self) -> float:
        """Seconds of this layer's KV read-back on the reader thread (0 if none)."""
        return self.kv_prefetch_end - self.kv_prefetch_start if self.kv_prefetch_bytes else 0.0

    @property
    def read_s(self) -> float:
        return self.read_end - self.read_start

    def compute_intervals(self) -> Intervals:
        """The compute interval with the KV cache's reads, writes and waits cut out.

        ``kv_spans`` says where they were; a timing without them but with ``kv_read_s`` /
        ``kv_write_s`` / ``kv_wait_s`` (made by hand) has that much taken off the end.

        >>> ItemTiming("L0", compute_start=1.0, compute_end=3.0,
        ...            kv_spans=[(1.5, 2.0)]).compute_intervals()
        [(1.0, 1.5), (2.0, 3.0)]
        """
        s, e = self.compute_start, self.compute_end
        if not (e > s):  # not computed (nan) or empty
            return []
        if self.kv_spans:
            return _cut(s, e, self.kv_spans)
        kv = self.kv_read_s + self.kv_write_s + self.kv_wait_s
        return [(s, e - kv)] if e - kv > s else []

    @property
    def compute_s(self) -> float:
        """Compute time on the main thread, the KV cache's reads, writes and waits excluded."""
        return measure(self.compute_intervals())


@dataclass
class Report:
    """A streamed forward pass (``run.report``); :meth:`table` gives one row per item.

    Attributes
    ----------
    io_mode : str
        How the slow tier was read: ``"direct"``, ``"buffered+dontneed"`` or ``"buffered"``.
    tier, prefetch, bits, budget, peak_bytes, wall_s, model
        The run's settings; ``peak_bytes`` is the most the budget accountant ever held
        (weights and KV cache), never more than ``budget``.
    items : list of ItemTiming
        ``resident`` marks a layer held in fast memory from an earlier pass (not read).
    """

    io_mode: str
    tier: str
    prefetch: int
    bits: int
    budget: int
    peak_bytes: int
    wall_s: float
    model: str
    items: list[ItemTiming] = field(default_factory=list)

    def __post_init__(self) -> None:
        computes = self.compute_intervals()
        for t in self.items:
            if t.bytes_read:
                t.overlap_s = overlap([(t.read_start, t.read_end)], computes)
            if t.kv_prefetch_bytes:
                t.kv_overlap_s = overlap([(t.kv_prefetch_start, t.kv_prefetch_end)], computes)

    @property
    def bytes_read(self) -> int:
        return sum(t.bytes_read + t.kv_bytes_read + t.kv_prefetch_bytes for t in self.items)

    @property
    def kv_prefetch_bytes(self) -> int:
        """Bytes of KV cache read back ahead, on the reader thread."""
        return sum(t.kv_prefetch_bytes for t in self.items)

    @property
    def kv_prefetch_s(self) -> float:
        return sum(t.kv_prefetch_s for t in self.items)

    def compute_intervals(self) -> Intervals:
        """Every item's compute intervals (KV I/O and waits cut out), merged."""
        return _merge([iv for t in self.items for iv in t.compute_intervals()])

    def read_intervals(self, kv: bool = True) -> Intervals:
        """The reader's intervals, merged: weight reads, and (``kv``) KV read-back prefetch."""
        reads = [(t.read_start, t.read_end) for t in self.items if t.bytes_read]
        if kv:
            reads += [(t.kv_prefetch_start, t.kv_prefetch_end) for t in self.items
                      if t.kv_prefetch_bytes]
        return _merge(reads)

    @property
    def kv_overlap_s(self) -> float:
        """Seconds of KV read-back prefetch that ran while some item was computed."""
        pre = [(t.kv_prefetch_start, t.kv_prefetch_end) for t in self.items
               if t.kv_prefetch_bytes]
        return overlap(pre, self.compute_intervals())

    @property
    def read_s(self) -> float:
        return sum(t.read_s for t in self.items if t.bytes_read)

    @property
    def compute_s(self) -> float:
        return sum(t.compute_s for t in self.items)

    @property
    def stall_s(self) -> float:
        return sum(t.stall_s for t in self.items)

    @property
    def overlap_s(self) -> float:
        """Seconds of weight reads that ran while some item was computed."""
        return overlap(self.read_intervals(kv=False), self.compute_intervals())

    @property
    def hidden_s(self) -> float:
        """Seconds during which the reader (weights or KV prefetch) and compute both ran."""
        return overlap(self.read_intervals(), self.compute_intervals())

    @property
    def hidden_fraction(self) -> float:
        """``hidden_s`` over the smaller of the read union and the compute union (≤ 1).

        >>> rep = Report("direct", "disk", 1, 32, 100, 50, 4.0, "m", [
        ...     ItemTiming("L0", 8, 0.0, 1.0, 1.0, 3.0),
        ...     ItemTiming("L1", 8, 1.0, 2.5, 3.0, 4.0)])
        >>> rep.hidden_s, rep.hidden_fraction   # reads 0-2.5 s, compute 1-4 s: 1.5 of 2.5 s
        (1.5, 0.6)
        """
        smaller = min(measure(self.read_intervals()), measure(self.compute_intervals()))
        if smaller <= 0:
            return math.nan
        return min(self.hidden_s, smaller) / smaller  # min: float rounding only

    @property
    def read_bandwidth(self) -> float:
        """Bytes per second of the weight reads (their total bytes over their total time)."""
        weights = sum(t.bytes_read for t in self.items)
        return weights / self.read_s if self.read_s > 0 else math.nan

    def table(self) -> Any:
        """A pandas DataFrame, one row per item: bytes, seconds, overlap, stalls, KV traffic."""
        import pandas as pd

        rows = [{"item": t.item, "bytes_read": t.bytes_read, "read_start_s": t.read_start,
                 "read_s": t.read_s, "compute_start_s": t.compute_start,
                 "compute_s": t.compute_s, "overlap_s": t.overlap_s, "stall_s": t.stall_s,
                 "budget_wait_s": t.budget_wait_s, "kv_bytes_read": t.kv_bytes_read,
                 "kv_read_s": t.kv_read_s, "kv_bytes_written": t.kv_bytes_written,
                 "kv_prefetch_bytes": t.kv_prefetch_bytes,
                 "kv_prefetch_start_s": t.kv_prefetch_start, "kv_prefetch_s": t.kv_prefetch_s,
                 "kv_overlap_s": t.kv_overlap_s, "kv_wait_s": t.kv_wait_s,
                 "resident": t.resident}
                for t in self.items]
        return pd.DataFrame(rows).set_index("item")

    def __repr__(self) -> str:
        return (f"Report({self.model}; tier={self.tier} io={self.io_mode} prefetch={self.prefetch}"
                f" bits={self.bits}; wall {self.wall_s * 1e3:.1f} ms, read {self.read_s * 1e3:.1f}"
                f" ms ({self.bytes_read / 1e6:.2f} MB), compute {self.compute_s * 1e3:.1f} ms, "
                f"stalls {self.stall_s * 1e3:.1f} ms, hidden {self.hidden_fraction:.0%}; "
                + (f"KV prefetch {self.kv_prefetch_bytes / 1e6:.2f} MB in "
                   f"{self.kv_prefetch_s * 1e3:.1f} ms, {self.kv_overlap_s * 1e3:.1f} ms under "
                   "compute; " if self.kv_prefetch_bytes else "") + "peak "
                f"{self.peak_bytes / 1e6:.2f} of {self.budget / 1e6:.2f} MB)")
