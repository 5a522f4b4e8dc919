"""Energy beside time: joules per call with where each figure came from.

``hl.compare(..., energy=True)`` adds ``energy_j`` (J per call), ``power_w`` (W) and
``energy_source`` per (device, size), and ``energy_how`` saying how:

- ``measured`` — counters read around the timed calls: NVML's total-energy counter on NVIDIA
  GPUs (``pip install nvidia-ml-py``, import ``pynvml``: NVIDIA's own binding, small, no
  other dependency), RAPL package counters on CPUs where ``/sys/class/powercap`` is
  readable. Hand-written readers, on purpose: zeus-ml and codecarbon read the same two
  counters but bring a tracker, a process model and (codecarbon) a web of dependencies, while
  hetlab needs one number around a bracket of calls.
- ``modeled`` — FPGA boards: the overlay manifest's ``[power.<board>]`` figure (each one
  cites its source or says ``estimate``) × the modeled time; CPUs without readable counters:
  a **per-busy-thread power** (default 6.25 W: the TDP share of one core of a 350 W,
  56-core server CPU; set ``$HETLAB_CPU_WATTS_PER_THREAD`` for your CPU) × the threads the
  backend runs × the time. A model, not a measurement, and labelled so everywhere.
- ``recorded`` — replayed from a recording that held energy figures.

>>> how = cpu_energy_model(2)
>>> how.startswith("modeled:")
True
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import InvalidInputError

__all__ = ["cpu_watts_per_thread", "cpu_energy_model", "meter_for", "energy_of", "pareto_front",
           "RAPL_ROOT", "CPU_NOTE"]

RAPL_ROOT = Path("/sys/class/powercap")
#: default per-busy-thread CPU power (W): 350 W TDP / 56 cores (a 2023 server CPU), an estimate
DEFAULT_WATTS_PER_THREAD = 350.0 / 56
#: what every energy output on a machine without CPU counters says
CPU_NOTE = ("CPU energy is modeled (no readable RAPL counters): busy threads × a per-thread "
            "power, not measured")


def cpu_watts_per_thread() -> float:
    """Per-busy-thread CPU power of the model (W): ``$HETLAB_CPU_WATTS_PER_THREAD`` or 6.25."""
    env = os.environ.get("HETLAB_CPU_WATTS_PER_THREAD")
    if env is None:
        return DEFAULT_WATTS_PER_THREAD
    try:
        w = float(env)
    except ValueError:
        w = math.nan
    if not (math.isfinite(w) and w > 0):
        raise InvalidInputError(f"energy: $HETLAB_CPU_WATTS_PER_THREAD must be a number of "
                                f"watts > 0; got {env!r}.")
    return w


def cpu_energy_model(threads: int) -> str:
    """How the CPU model computes power for ``threads`` busy threads (a one-line label)."""
    w = cpu_watts_per_thread()
    origin = ("$HETLAB_CPU_WATTS_PER_THREAD" if "HETLAB_CPU_WATTS_PER_THREAD" in os.environ
              else "estimate: 350 W TDP / 56 cores")
    return f"modeled: {threads} busy thread(s) × {w:.2f} W ({origin}); no RAPL counters read"


class _Meter:
    """Reads a cumulative energy counter (J) around a bracket of calls."""

    source = "measured"

    def __init__(self, read: Callable[[], float], how: str, wrap_j: float = math.inf) -> None:
        self._read, self.how, self._wrap, self._t0 = read, how, wrap_j, 0.0

    def start(self) -> None:
        self._t0 = self._read()

    def stop(self) -> float:
        d = self._read() - self._t0
        return d + self._wrap if d < 0 else d


def _rapl_meter() -> _Meter | None:
    zones = sorted(p for p in RAPL_ROOT.glob("intel-rapl:*") if p.name.count(":") == 1)
    files = [(z / "energy_uj", z / "max_energy_range_uj") for z in zones]
    try:
        for f, _ in files:
            int(f.read_text())
    except (OSError, ValueError):
        return None
    if not files:
        return None
    wrap = sum(int(m.read_text()) for _, m in files if m.exists()) / 1e6 or math.inf

    def read() -> float:
        return sum(int(f.read_text()) for f, _ in files) / 1e6

    return _Meter(read, f"measured: RAPL package counters ({len(files)} package(s), the whole "
                        "package: other load on it included)", wrap)


def _nvml_meter() -> _Meter | None:
    try:
        import cupy
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(cupy.cuda.Device().id))
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # Volta and later
    except Exception:  # no pynvml, no driver, or a GPU without the counter
        return None

    def read() -> float:
        return pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3

    return _Meter(read, "measured: NVML total-energy counter of the GPU (whole board)")


def meter_for(backend: Any) -> _Meter | None:
    """A counter for ``backend``'s device, or None when its energy has to be modeled."""
    if backend.kind == "gpu":
        return _nvml_meter()
    if backend.kind == "cpu":
        return _rapl_meter()
    return None


def _fpga_power(kernel: str) -> tuple[float, str]:
    from .fpga.device import default_board
    from .fpga.manifest import load_manifest

    board = default_board()
    try:
        watts, src = load_manifest(kernel).power(board)
    except Exception:  # no overlay manifest of that name
        return math.nan, ""
    if not math.isfinite(watts):
        return math.nan, ""
    return watts, f"modeled: {board} board {watts:g} W × modeled time ({src})"


def _check_energy_args(kernel: Any, backend: Any, times_s: Any, threads: Any, metered_j: Any,
                       meter_how: Any) -> tuple[list[float], int, float | None]:
    """energy_of's arguments checked: (times in s, threads, metered joules or None)."""
    from .core.args import integer, number, sequence

    w = "energy_of"
    if not isinstance(kernel, str) or not kernel:
        raise InvalidInputError(f"{w}: kernel must be a kernel name (str); got {kernel!r}.")
    if not isinstance(getattr(backend, "kind", None), str):
        raise InvalidInputError(
            f"{w}: backend must be a hetlab Backend (hetlab.core.registry.get_backend(name)); "
            f"got {type(backend).__name__}.")
    times = [number(w, f"times_s[{i}]", t, lo=0.0)
             for i, t in enumerate(sequence(w, "times_s", times_s, nonempty=False))]
    threads = integer(w, "threads", threads, 0, 1 << 20)
    joules = None if metered_j is None else number(w, "metered_j", metered_j, lo=0.0)
    if not isinstance(meter_how, str):
        raise InvalidInputError(f"{w}: meter_how must be a str; got {type(meter_how).__name__}.")
    return times, threads, joules


def energy_of(kernel: str, backend: Any, times_s: list[float], threads: int,
              metered_j: float | None = None, meter_how: str = "") -> dict[str, Any]:
    """Energy figures of one unit: ``energy_j`` per call, ``power_w``, source and how.

    Parameters
    ----------
    kernel : str
        Kernel name (FPGA: the overlay of the same name).
    backend : Backend
    times_s : list of float
        The timed calls (s).
    threads : int
        Threads the backend ran on (CPU model).
    metered_j : float, optional
        Joules a counter read over all of ``times_s`` (then ``source="measured"``).
    """
    times_s, threads, metered_j = _check_energy_args(kernel, backend, times_s, threads,
                                                     metered_j, meter_how)
    total = float(sum(times_s))
    n = len(times_s)
    nan = {"energy_j": math.nan, "power_w": math.nan, "energy_source": "", "energy_how": ""}
    if n == 0 or not total > 0:
        return nan
    if metered_j is not None and metered_j >= 0:
        return {"energy_j": metered_j / n, "power_w": metered_j / total,
                "energy_source": "measured", "energy_how": meter_how}
    if backend.kind == "cpu":
        watts, how = cpu_watts_per_thread() * max(threads, 1), cpu_energy_model(threads)
    elif backend.kind == "fpga":
        watts, how = _fpga_power(kernel)
    else:
        return {**nan, "energy_how": "no counter: install nvidia-ml-py for NVML readings"}
    if not math.isfinite(watts):
        return {**nan, "energy_how": "no power figure in the overlay manifest"}
    return {"energy_j": watts * total / n, "power_w": watts, "energy_source": "modeled",
            "energy_how": how}


def pareto_front(ds: Any, x: str = "time_s", y: str = "energy_j") -> Any:
    """The devices on the ``x``/``y`` Pareto front of each size (both minimized).

    A (device, size) is on the front when no other device of the same size is at least as
    good in both and better in one. Medians are used for ``time_s``.

    Parameters
    ----------
    ds : xarray.Dataset
        A comparison Dataset with energy figures (``hl.compare(..., energy=True)``).
    x, y : str
        Variables of dims (device, size) (``time_s`` is taken as its median over repeats).

    Returns
    -------
    pandas.DataFrame
        Index (size, device); columns ``x``, ``y``, ``source`` (of the time),
        ``energy_source``, ``energy_how``; only the points on the front. ``attrs["note"]``
        says when CPU energy is modeled.

    Raises
    ------
    InvalidInputError
        ``x`` or ``y`` not a variable of ``ds``, or the same.
    """
    import numpy as np
    import pandas as pd

    if not hasattr(ds, "data_vars") or not hasattr(ds, "sel"):
        raise InvalidInputError(
            f"pareto: ds must be an xarray.Dataset from hl.compare(..., energy=True); got "
            f"{type(ds).__name__}.")
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, str) or v not in ds.data_vars:
            hint = " (compare(..., energy=True) adds energy_j)" if v == "energy_j" else ""
            raise InvalidInputError(f"pareto: {name} must name a variable of the Dataset"
                                    f"{hint}; got {v!r}.")
    if x == y:
        raise InvalidInputError(f"pareto: x and y must differ; got {x!r} twice.")

    def values(v: str) -> Any:
        return ds[v].median("repeat") if "repeat" in ds[v].dims else ds[v]

    xs, ys = values(x), values(y)
    has_e = "energy_source" in ds
    rows = []
    for size in ds["size"].values:
        pts = []
        for dev in ds["device"].values:
            a, b = float(xs.sel(device=dev, size=size)), float(ys.sel(device=dev, size=size))
            if np.isfinite(a) and np.isfinite(b):
                pts.append((str(dev), a, b))
        for dev, a, b in pts:
            dominated = any(a2 <= a and b2 <= b and (a2 < a or b2 < b) for _, a2, b2 in pts)
            if dominated:
                continue
            sel = {"device": dev, "size": size}
            rows.append({"size": int(size), "device": dev, x: a, y: b,
                         "source": str(ds["source"].sel(device=dev).values),
                         "energy_source": str(ds["energy_source"].sel(sel).values) if has_e
                         else "",
                         "energy_how": str(ds["energy_how"].sel(sel).values) if has_e else ""})
    cols = ["size", "device", x, y, "source", "energy_source", "energy_how"]
    df = pd.DataFrame(rows, columns=cols).set_index(["size", "device"])
    if ds.attrs.get("energy_note"):
        df.attrs["note"] = ds.attrs["energy_note"]
    return df
