"""What a streamed forward pass did: per item bytes, read and compute intervals, overlap, stalls.

Times are seconds from the start of the forward pass (``time.perf_counter``). *Read* is the
reader thread's ``preadv`` of an item; *compute* the main thread's work on it (the KV cache's
own reads and writes happen inside it and are reported apart as ``kv_read_s`` /
``kv_write_s``). *Overlap* is the time during which an item's read ran while some item was
being computed; a *stall* is time the main thread waited for an item that was not read yet;
*budget wait* is time the reader waited for the budget to free bytes before it could read.
*KV prefetch* is the reader thread's read-back of a layer's spilled KV blocks while the layer
before it computes (``kv_prefetch_*``; ``kv_wait_s``: time the layer waited for it to finish;
``kv_bytes_read``/``kv_read_s`` are what the layer still read itself).
The run's ``hidden_fraction`` is the overlap of all reads with all compute over the smaller of
the two totals: 1.0 means the smaller one was hidden entirely (the issue's goal: ≥ 0.8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ItemTiming", "Report", "overlap"]


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
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

    @property
    def kv_prefetch_s(self) -> float:
        """Seconds of this layer's KV read-back on the reader thread (0 if none)."""
        return self.kv_prefetch_end - self.kv_prefetch_start if self.kv_prefetch_bytes else 0.0

    @property
    def read_s(self) -> float:
        return self.read_end - self.read_start

    @property
    def compute_s(self) -> float:
        """Compute time on the main thread, the KV cache's reads and writes excluded."""
        return (self.compute_end - self.compute_start - self.kv_read_s - self.kv_write_s
                - self.kv_wait_s)


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
        computes = [(t.compute_start, t.compute_end) for t in self.items]
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

    @property
    def kv_overlap_s(self) -> float:
        """Seconds of KV read-back prefetch that ran while some item was computed."""
        pre = [(t.kv_prefetch_start, t.kv_prefetch_end) for t in self.items
               if t.kv_prefetch_bytes]
        return overlap(pre, [(t.compute_start, t.compute_end) for t in self.items])

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
        reads = [(t.read_start, t.read_end) for t in self.items if t.bytes_read]
        return overlap(reads, [(t.compute_start, t.compute_end) for t in self.items])

    @property
    def hidden_fraction(self) -> float:
        """Overlap over min(total read, total compute): the share of the smaller one hidden."""
        smaller = min(self.read_s, self.compute_s)
        return self.overlap_s / smaller if smaller > 0 else math.nan

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
