"""The machine's load while :func:`~hetlab.offload.search` measured: recorded in the plan.

Two readings, taken before and after the search:

- the 1-minute load average (``os.getloadavg``; it counts the search's own threads too);
- the CPU time of *other* processes: busy time of all CPUs from ``/proc/stat`` (Linux; user,
  nice, system, irq, softirq, steal) minus this process's own CPU time
  (``time.process_time``, all its threads), divided by the wall time between the readings —
  the average number of cores other work kept busy during the search.

The search is **busy** when other processes used more than ``busy_fraction`` of the cores on
average (``/proc/stat``), or, where ``/proc/stat`` is missing, when the load average after the
search minus the search's own threads is above that many cores.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LoadSample", "LoadRecord", "read_load", "load_record", "logger"]

logger = logging.getLogger("hetlab.offload")


@dataclass(frozen=True)
class LoadSample:
    """One reading: wall clock (s), busy CPU time of the whole machine (s, NaN when unknown),
    this process's CPU time (s), the 1-minute load average (NaN when unknown)."""

    wall_s: float
    machine_busy_s: float
    own_cpu_s: float
    loadavg_1m: float


def _proc_stat_busy_s(path: str = "/proc/stat") -> float:
    """Busy CPU seconds of all cores since boot (NaN when ``/proc/stat`` cannot be read)."""
    try:
        with open(path, encoding="ascii") as f:
            first = f.readline().split()
    except OSError:
        return math.nan
    if not first or first[0] != "cpu":
        return math.nan
    v = [int(x) for x in first[1:]]
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    busy = v[0] + v[1] + v[2] + sum(v[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


def read_load() -> LoadSample:
    """The current :class:`LoadSample` of this machine."""
    try:
        la = os.getloadavg()[0]
    except OSError:
        la = math.nan
    return LoadSample(time.perf_counter(), _proc_stat_busy_s(), time.process_time(), la)


@dataclass(frozen=True)
class LoadRecord:
    """The load during a search (``plan.load``).

    ``others_cores``: average cores busy with other processes' work during the search (NaN
    without ``/proc/stat``); ``loadavg_before``/``loadavg_after``: 1-minute load averages
    (they include the search's own threads); ``cores``: ``os.cpu_count()``; ``threads``: the
    search's numba threads; ``busy``: the rule of this module with ``busy_fraction``.
    """

    others_cores: float
    loadavg_before: float
    loadavg_after: float
    cores: int
    threads: int
    busy_fraction: float
    busy: bool
    source: str

    def describe(self) -> str:
        """One line for ``plan.summary()``."""
        others = (f"other processes used {self.others_cores:.2f} of {self.cores} cores"
                  if math.isfinite(self.others_cores) else "no /proc/stat reading")
        head = "BUSY machine during the search" if self.busy else "machine load during search"
        tail = (" — times may be off; search again on a quieter machine" if self.busy else "")
        return (f"{head}: {others} ({self.source}); load average {self.loadavg_before:.2f} → "
                f"{self.loadavg_after:.2f} with {self.threads} search threads{tail}")


def load_record(before: LoadSample, after: LoadSample, threads: int,
                busy_fraction: float, cores: int | None = None) -> LoadRecord:
    """The :class:`LoadRecord` between two readings.

    Examples
    --------
    >>> a = LoadSample(0.0, 100.0, 5.0, 0.5)
    >>> b = LoadSample(10.0, 125.0, 15.0, 2.5)   # 25 s busy, 10 s of them ours, over 10 s
    >>> r = load_record(a, b, threads=2, busy_fraction=0.25, cores=2)
    >>> round(r.others_cores, 2), r.busy
    (1.5, True)
    """
    cores = cores or os.cpu_count() or 1
    wall = after.wall_s - before.wall_s
    others = math.nan
    if wall > 0 and math.isfinite(after.machine_busy_s) and math.isfinite(
            before.machine_busy_s):
        own = after.own_cpu_s - before.own_cpu_s
        others = max(0.0, (after.machine_busy_s - before.machine_busy_s - own) / wall)
    limit = busy_fraction * cores
    if math.isfinite(others):
        busy, source = others > limit, "/proc/stat CPU time minus this process's"
    else:
        beyond = after.loadavg_1m - threads
        busy, source = bool(math.isfinite(beyond) and beyond > limit), "load average only"
    return LoadRecord(others, before.loadavg_1m, after.loadavg_1m, cores, threads,
                      busy_fraction, busy, source)


def watch(probe: Callable[[], LoadSample] | None) -> Callable[[], LoadSample]:
    """The reading function a search uses: ``probe`` (tests inject one) or :func:`read_load`."""
    return probe if probe is not None else read_load
