"""Run the notebook series and print each notebook's wall time and peak memory against budgets.

The notebooks run one by one, each in its own kernel, all in one kernel-manager session (as in
one JupyterLab server): a finished notebook's kernel is left open, as a learner who moves on to
the next tab leaves it, unless ``--shutdown-between``. Memory is the **PSS** (proportional set
size: shared pages split among the processes sharing them, so a sum over processes counts each
page once) of the kernel and every process under it (Dask workers included), sampled every
``--interval`` seconds; RSS where PSS cannot be read (not Linux), which the table then says.
The manager's own process (this script, standing in for the Jupyter server) is not counted.

Each kernel imports the hetlab of this script's tree (its root comes first on the kernel's
``PYTHONPATH``; a relative ``PYTHONPATH=.`` would name ``notebooks/``, the kernels' working
folder, and a git worktree would measure the editable install's tree instead).

Two things outside a notebook move its figure, which is why a clean clone (CI) reads higher
than a second run on a working machine:

- **numba's on-disk cache.** A clean clone has none: every ``cache=True`` kernel the notebook
  calls is compiled in its kernel, and LLVM's memory stays with the process. A run after the
  first loads them from ``__pycache__`` instead. ``--cold-numba-cache`` gives each kernel an
  empty ``NUMBA_CACHE_DIR``, so a local run compiles as the clean clone does.
- **Other processes sharing the libraries.** PSS splits a shared page among every process on
  the machine that maps it: where other Python processes use the same virtual environment
  (llvmlite's LLVM library, numpy's, scipy's), each kernel's share is smaller. CI's fresh
  ``.venv`` is mapped by the kernel alone. Run from an environment nothing else uses to see
  the CI figure.

Budgets (issue 16): each notebook at most 45 s on a quiet 2-core machine and 700 MB peak; the
whole series in one session at most 1.8 GB. The exit status is 1 only when memory is over
budget (or a notebook fails to run): times are printed, never asserted, since a shared machine
makes them swing.

Usage::

    python scripts/notebook_budget.py              # the whole series
    python scripts/notebook_budget.py 00 04        # notebooks whose name starts with 00 or 04
    python scripts/notebook_budget.py --shutdown-between
    python scripts/notebook_budget.py --shutdown-between --cold-numba-cache   # as a clean clone
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import nbformat
import psutil

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
MB = 1e6  # decimal megabytes, as the budgets are stated

TIME_BUDGET_S = 45.0
PEAK_BUDGET_MB = 700.0
SERIES_BUDGET_MB = 1800.0


def process_memory(proc: psutil.Process) -> tuple[int, str]:
    """Bytes of ``proc``'s PSS, or its RSS where PSS cannot be read; and which ("pss"/"rss")."""
    try:
        pss = getattr(proc.memory_full_info(), "pss", None)
        if pss is not None:
            return int(pss), "pss"
    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
        pass
    return int(proc.memory_info().rss), "rss"


def tree_memory(pid: int) -> tuple[int, str]:
    """Summed memory of process ``pid`` and all its descendants; 0 once it has exited."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, "pss"
    total, kinds = 0, set()
    for proc in procs:
        try:
            nbytes, kind = process_memory(proc)
        except psutil.NoSuchProcess:
            continue  # a worker that exited between listing and reading
        total += nbytes
        kinds.add(kind)
    return total, "rss" if "rss" in kinds else "pss"


class Sampler:
    """A thread that samples the memory of a set of process trees every ``interval`` seconds.

    ``peak[pid]`` is the highest memory seen for one tree; ``series_peak`` the highest sum over
    all trees watched at one instant. ``kind`` is "pss", or "rss" if any reading fell back.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.peak: dict[int, int] = {}
        self.series_peak = 0
        self.kind = "pss"
        self._pids: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def watch(self, pid: int) -> None:
        with self._lock:
            self._pids.add(pid)
            self.peak.setdefault(pid, 0)

    def unwatch(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def sample(self) -> None:
        """Take one reading of every watched tree now."""
        with self._lock:
            pids = list(self._pids)
        total = 0
        for pid in pids:
            nbytes, kind = tree_memory(pid)
            total += nbytes
            if kind == "rss":
                self.kind = "rss"
            with self._lock:
                self.peak[pid] = max(self.peak.get(pid, 0), nbytes)
        self.series_peak = max(self.series_peak, total)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclasses.dataclass
class Row:
    """One notebook's run: wall time (kernel start included), peak and left-open memory."""

    name: str
    wall_s: float
    peak_mb: float
    after_mb: float
    error: str = ""


def _kernel_pid(km) -> int:
    return int(km.provisioner.process.pid)


def kernel_env(numba_cache_dir: str | None = None) -> dict[str, str]:
    """Environment of a kernel: this process's, with this tree's root first on ``PYTHONPATH``
    and, when given, ``NUMBA_CACHE_DIR`` set to ``numba_cache_dir``."""
    env = dict(os.environ)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *rest])
    if numba_cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = numba_cache_dir
    return env


def run_series(paths: Iterable[Path], *, interval: float = 0.1, timeout: int = 600,
               shutdown_between: bool = False, cold_numba_cache: bool = False,
               cwd: Path = NOTEBOOKS) -> tuple[list[Row], float, str]:
    """Run each notebook in its own kernel of one kernel-manager session.

    Returns the rows, the series peak in MB (all kernels of the session at one instant) and the
    memory kind ("pss" or "rss"). The notebooks on disk are not changed. With
    ``cold_numba_cache`` each kernel gets its own empty ``NUMBA_CACHE_DIR`` (removed after).
    """
    from jupyter_client.multikernelmanager import MultiKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    mkm = MultiKernelManager()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="hetlab-numba-cache-") as caches, \
            Sampler(interval) as sampler:
        try:
            for path in paths:
                nb = nbformat.read(path, as_version=4)
                t0 = time.perf_counter()
                cache = None
                if cold_numba_cache:
                    cache = tempfile.mkdtemp(prefix=path.stem[:2] + "-", dir=caches)
                kid = mkm.start_kernel(kernel_name="python3", cwd=str(cwd),
                                       env=kernel_env(cache))
                km = mkm.get_kernel(kid)
                pid = _kernel_pid(km)
                sampler.watch(pid)
                error = ""
                try:
                    NotebookClient(nb, km=km, timeout=timeout,
                                   resources={"metadata": {"path": str(cwd)}}).execute()
                except CellExecutionError as exc:
                    error = str(exc).strip().splitlines()[-1][:120]
                wall = time.perf_counter() - t0
                sampler.sample()
                after, _ = tree_memory(pid)
                rows.append(Row(path.stem, wall, sampler.peak[pid] / MB, after / MB, error))
                if shutdown_between:
                    sampler.unwatch(pid)
                    mkm.shutdown_kernel(kid, now=False)
        finally:
            mkm.shutdown_all()
    return rows, sampler.series_peak / MB, sampler.kind


def table(rows: list[Row], series_mb: float, kind: str, *, time_budget: float = TIME_BUDGET_S,
          peak_budget: float = PEAK_BUDGET_MB, series_budget: float = SERIES_BUDGET_MB,
          shutdown_between: bool = False) -> tuple[str, bool]:
    """The printed table and whether memory (and every run) is within budget."""
    ok = True
    lines = [f"{'notebook':28s} {'wall s':>7s} {'peak MB':>8s} {'open MB':>8s}  verdict",
             "-" * 66]
    for r in rows:
        notes = []
        if r.error:
            notes.append(f"FAILED: {r.error}")
            ok = False
        if r.peak_mb > peak_budget:
            notes.append(f"MEMORY OVER {peak_budget:.0f} MB")
            ok = False
        if r.wall_s > time_budget:
            notes.append(f"slow (> {time_budget:.0f} s; not asserted)")
        lines.append(f"{r.name:28s} {r.wall_s:7.1f} {r.peak_mb:8.0f} {r.after_mb:8.0f}  "
                     + ("; ".join(notes) or "ok"))
    series_ok = series_mb <= series_budget
    ok = ok and series_ok
    mode = ("each kernel shut down after its notebook" if shutdown_between
            else "every kernel left open, as a learner moving on leaves it")
    lines += ["-" * 66,
              f"series in one session ({mode}): peak {series_mb:.0f} MB of "
              f"{series_budget:.0f} MB  " + ("ok" if series_ok else "MEMORY OVER BUDGET"),
              f"memory: {kind.upper()} of each kernel and all its child processes; wall time "
              f"includes kernel start; budgets: {time_budget:.0f} s (printed, not asserted), "
              f"{peak_budget:.0f} MB a notebook"]
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("only", nargs="*", help="name prefixes, e.g. 02")
    p.add_argument("--interval", type=float, default=0.1, help="sampling period (s)")
    p.add_argument("--shutdown-between", action="store_true",
                   help="shut each kernel down after its notebook (the last cell's advice)")
    p.add_argument("--cold-numba-cache", action="store_true",
                   help="an empty NUMBA_CACHE_DIR per kernel: compile as a clean clone does")
    p.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="folder of the series")
    p.add_argument("--peak-budget-mb", type=float, default=PEAK_BUDGET_MB)
    p.add_argument("--series-budget-mb", type=float, default=SERIES_BUDGET_MB)
    args = p.parse_args(argv)
    paths = sorted(args.notebooks.glob("[0-9][0-9]-*.ipynb"))
    if args.only:
        paths = [q for q in paths if q.stem.startswith(tuple(args.only))]
    if not paths:
        print(f"notebook_budget: no notebook in {args.notebooks} matches {args.only}")
        return 1
    rows, series_mb, kind = run_series(paths, interval=args.interval, cwd=args.notebooks,
                                       shutdown_between=args.shutdown_between,
                                       cold_numba_cache=args.cold_numba_cache)
    text, ok = table(rows, series_mb, kind, peak_budget=args.peak_budget_mb,
                     series_budget=args.series_budget_mb,
                     shutdown_between=args.shutdown_between)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
