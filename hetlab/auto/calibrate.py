"""Calibration of the cost model: a short run per kernel and device, cached per machine.

Per kernel, every available device with measured timing runs generated cases of sizes 16,
32, 64, … (×2) through :func:`hetlab.bench.measure_unit`, the devices interleaved: ``ROUNDS``
rounds of ``REPEATS`` timed calls per device, each device in turn (``WARMUP`` warm-up calls
that wake its threads first), so a burst of load on a shared machine hits every device
rather than one; of all its timed calls the fastest is kept (``QUANTILE`` 0): preemption
only adds time, and the fastest call is the statistic least moved by the load of the moment
and the one the evaluation's oracle uses. Sizes grow until the slowest
device's call passes ``budget_s`` (default 30 ms) or the case reaches 2**20 items;
:func:`~hetlab.auto.model.fit_points` fits each device's model to those points and
:func:`~hetlab.auto.model.held_out_errors` measures its error on points it did not see; a
point mispredicted by more than ``OUTLIER`` (×1.28) is measured once more and the faster
of the two kept (a burst of load only adds time).
A kernel is calibrated lazily, on its first ``device="auto"`` call or ``hl.explain``;
``import hetlab`` runs nothing.

**Variants**: a kernel's flag and choice arguments (``causal``, ``softmax``, ``dataflow``)
pick different code paths whose costs the declared ``spec.cost`` does not tell apart (the
NumPy reference computes the full score matrix of causal attention and masks it; numba's
flash kernel skips the masked tiles). Each variant a call uses is calibrated on its own
(:func:`variant_of`), on cases of that variant drawn from the kernel's generator (the
first of ``CAL_SEED``, ``CAL_SEED + 1``, … whose case has it); a variant the generator never
draws falls back to the model of the generator's mix.

Cache: one JSON file per machine and library version, ``$HETLAB_CACHE/auto-<key>.json``
(default ``~/.cache/hetlab``); the key hashes the host name, CPU model, core count, the
devices available and their names, the versions of hetlab, numpy and numba, and
the threading variables ``$NUMBA_THREADING_LAYER``, ``$NUMBA_NUM_THREADS``,
``$OMP_NUM_THREADS``, ``$OPENBLAS_NUM_THREADS``, ``$MKL_NUM_THREADS`` (they change how the
devices wake their threads). A changed
machine or library gets a new file. ``hl.auto.calibrate(refresh=True)`` measures again
(``kernels=[...]`` to limit it); deleting the file does the same lazily.

Devices that are absent here (no GPU) but recorded in ``data/recorded``
(:mod:`hetlab.recorded`) get a model fitted to the recording, ``source="recorded"``: shown
by ``hl.explain``, never chosen.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import machine
from ..bench import case_args, measure_unit
from ..core.registry import backend_names, get_backend, get_kernel, kernel_names, supported_backends
from ..errors import InvalidInputError
from ..log import get_logger
from .model import DeviceFit, fit_points, held_out_errors, robust_sigma, roofline_s
from .threads import threads_state

__all__ = ["calibrate", "cache_path", "fits_for", "fits_for_call", "variant_of", "CAL_SEED",
           "FORMAT"]

_log = get_logger(__name__)
#: seed of the calibration cases (the benchmark evaluates on other seeds)
CAL_SEED = 7919
#: version of the cache file's layout
FORMAT = 3
#: most seconds one kernel's calibration keeps adding sizes
MAX_WALL_S = 30.0
#: interleaved rounds per point, timed calls per round and device, warm-up calls before the
#: first round (1 before the others), and the quantile kept of all the timed calls (0: the
#: fastest, the statistic the evaluation's oracle uses and the least moved by load)
ROUNDS, REPEATS, WARMUP, QUANTILE = 3, 3, 3, 0.0
#: held-out error (log) beyond which a point is measured once more
OUTLIER = 0.25
#: seeds tried for a case of the wanted variant at one size
VARIANT_TRIES = 16
#: environment variables that change how the devices thread (the cache is keyed by them)
_THREAD_ENV = ("NUMBA_THREADING_LAYER", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_LOCK = threading.RLock()
_MEMO: dict[str, dict[str, Any]] = {}


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"numpy": np.__version__}
    for pkg in ("hetlab", "numba", "cupy-cuda12x", "cupy-cuda13x"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _machine_key() -> dict[str, Any]:
    devices = {}
    for name in backend_names():
        b = get_backend(name)
        if b.is_available() and b.timing_source == "measured":
            devices[name] = str(b.info().get("device_name", ""))
    return {"host": socket.gethostname(), "cpu": machine.cpu_model(),
            "cores": os.cpu_count() or 1, "machine": platform.machine(),
            "devices": devices, "versions": _versions(), "format": FORMAT,
            "threads_env": {v: os.environ.get(v, "") for v in _THREAD_ENV},
            "threads_set": threads_state()}


def cache_dir() -> Path:
    """``$HETLAB_CACHE`` if set, else ``~/.cache/hetlab``."""
    env = os.environ.get("HETLAB_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "hetlab"


def cache_path() -> Path:
    """The calibration file of this machine and library version (may not exist yet)."""
    key = json.dumps(_machine_key(), sort_keys=True)
    return cache_dir() / f"auto-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _load(path: Path) -> dict[str, Any]:
    if str(path) in _MEMO:
        return _MEMO[str(path)]
    data: dict[str, Any] = {"key": _machine_key(), "kernels": {}, "peaks": {}}
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
        if isinstance(found, dict) and found.get("key") == data["key"]:
            data = found
    except (OSError, ValueError):
        pass  # no cache yet, or a damaged one: calibrate again
    _MEMO[str(path)] = data
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # a read-only home costs the cache, not the choice
        _log.warning("auto: calibration cache %s not written (%s)", path, exc)


def _peaks(name: str, data: dict[str, Any]) -> dict[str, float]:
    if name not in data["peaks"]:
        pk = get_backend(name).peaks()
        data["peaks"][name] = {"bandwidth_gbps": float(pk.get("peak_bandwidth_gbps", math.nan)),
                               "gflops": float(pk.get("peak_gflops", math.nan)),
                               "h2d_gbps": float(pk.get("h2d_gbps", math.nan)),
                               "latency_s": float(pk.get("copy_latency_s", 0.0)),
                               "source": str(pk.get("peak_source", ""))}
    return data["peaks"][name]


def _measured_devices(kernel: str, devices: Sequence[str] | None) -> list[str]:
    out = []
    for name in devices if devices is not None else backend_names():
        b = get_backend(name)
        if name in supported_backends(kernel) and b.is_available() \
                and b.timing_source == "measured":
            out.append(b.name)
    return out


def variant_of(spec: Any, validated: Any) -> str:
    """The variant of a call: its flag and choice arguments, ``"causal=True"``; ``""`` when
    the kernel has none.

    >>> from hetlab.core.registry import get_kernel
    >>> variant_of(get_kernel("attention"), {"causal": True})
    'causal=True'
    >>> variant_of(get_kernel("spmv"), {})
    ''
    """
    return ",".join(f"{p.name}={validated.get(p.name, p.default)}" for p in spec.params
                    if p.kind in ("bool", "choice"))


def _seed_for(kernel: str, size: int, variant: str) -> int | None:
    """The first calibration seed whose generated case at ``size`` is of ``variant``."""
    spec = get_kernel(kernel)
    for seed in range(CAL_SEED, CAL_SEED + (VARIANT_TRIES if variant else 1)):
        if not variant or variant_of(spec, case_args(kernel, size, seed)) == variant:
            return seed
    return None


def _measure_point(kernel: str, devices: list[str], size: int,
                   seed: int) -> dict[str, tuple[float, float]]:
    """``{device: (time kept, first call's extra)}`` of one size, devices interleaved."""
    times: dict[str, list[float]] = {d: [] for d in devices}
    first: dict[str, float] = {}
    for rnd in range(ROUNDS):
        for d in devices:
            if rnd and not times[d]:
                continue  # failed in the first round: not measured
            unit = measure_unit(kernel, d, size, seed=seed, repeats=REPEATS,
                                warmup=WARMUP if rnd == 0 else 1)
            if unit.status != "ok" or not unit.times_s:
                continue
            times[d] += list(unit.times_s)
            if rnd == 0:
                first[d] = float(unit.first_call_s)
    out = {}
    for d, ts in times.items():
        if ts:
            t = float(np.quantile(ts, QUANTILE))
            out[d] = (t, max(first.get(d, t) - t, 0.0))
    return out


def _calibrate_kernel(kernel: str, devices: list[str], data: dict[str, Any], *,
                      budget_s: float, max_size: int, variant: str = "") -> dict[str, Any]:
    spec = get_kernel(kernel)
    # device -> size -> [roofline s, time s, first call's extra s]
    points: dict[str, dict[int, list[float]]] = {d: {} for d in devices}
    seeds: dict[int, int] = {}

    def measure(size: int, seed: int) -> dict[str, tuple[float, float]]:
        cost = spec.cost(case_args(kernel, size, seed))
        measured = _measure_point(kernel, devices, size, seed)
        for d, (t, jit) in measured.items():
            pk = _peaks(d, data)
            r = roofline_s(cost, pk["bandwidth_gbps"], pk["gflops"])
            if r > 0 and t > 0:
                old = points[d].get(size)
                points[d][size] = [r, min(t, old[1]) if old else t, old[2] if old else jit]
        return measured

    size, t_start = 16, time.perf_counter()
    while size <= max_size:
        try:
            seed = _seed_for(kernel, size, variant)
            if seed is None:  # the generator does not draw this variant (at this size)
                size *= 2
                continue
            measured = measure(size, seed)
        except Exception:  # the case cannot be generated at this size: stop here
            break
        seeds[size] = seed
        slowest = max((t for t, _ in measured.values()), default=0.0)
        if slowest > budget_s or time.perf_counter() - t_start > MAX_WALL_S:
            break
        size *= 2
    # a point its neighbours mispredict by more than OUTLIER is measured once more (a burst
    # of load on a shared machine only adds time: the faster of the two is kept)
    again = set()
    for by in points.values():
        sizes = sorted(by)
        if len(sizes) >= 3:
            errs = held_out_errors([by[z][0] for z in sizes], [by[z][1] for z in sizes])
            again |= {z for z, e in zip(sizes, errs, strict=True) if abs(e) > OUTLIER}
    for z in sorted(again):
        measure(z, seeds[z])
    fits = {}
    for d, by in points.items():
        sizes = sorted(by)
        if len(sizes) < 2:
            continue
        r, t = np.array([by[z][0] for z in sizes]), np.array([by[z][1] for z in sizes])
        a, k, p, _ = fit_points(r, t)
        errs = held_out_errors(r, t)
        pk = _peaks(d, data)
        fits[d] = DeviceFit(device=d, kind=get_backend(d).kind, source="measured",
                            overhead_s=a, scale=k, power=p, sigma=robust_sigma(errs),
                            jit_s=max(by[z][2] for z in sizes),
                            bandwidth_gbps=pk["bandwidth_gbps"],
                            gflops=pk["gflops"], h2d_gbps=pk["h2d_gbps"],
                            latency_s=pk["latency_s"], sizes=tuple(sizes),
                            points=tuple(zip(r.tolist(), t.tolist(), strict=True)),
                            errors=tuple(float(e) for e in errs), variant=variant).to_json()
        _log.info("auto: calibrated %s%s on %s at sizes %s (measured again: %s): overhead "
                  "%.3g s, sigma %.2f", kernel, f" ({variant})" if variant else "", d, sizes,
                  sorted(again), a, robust_sigma(errs))
    return fits


def _recorded_fits(kernel: str, absent: list[str]) -> dict[str, Any]:
    """Models of absent devices fitted to the recordings of ``kernel`` (source "recorded")."""
    if not absent:
        return {}
    try:
        from ..recorded import recordings

        recs = recordings(kernel)
    except Exception:  # a broken recording costs its stand-in model only
        return {}
    fits = {}
    for rec in recs:
        for d in absent:
            if d in fits or d not in rec["device"].values.tolist():
                continue
            one = rec.sel(device=d)
            med = one["time_s"].median("repeat").values
            nbytes = rec["bytes"].values
            bw = float(one["peak_gbps"])
            ok = np.isfinite(med) & (med > 0) & np.isfinite(nbytes)
            if ok.sum() < 2 or not bw > 0:
                continue
            r = nbytes[ok] / (bw * 1e9)
            a, k, p, sigma = fit_points(r, med[ok])
            tr = (one["transfer_in_s"] + one["transfer_out_s"]).values[ok]
            per_byte = float(np.nanmedian(tr / nbytes[ok])) if np.isfinite(tr).any() else 0.0
            fits[d] = DeviceFit(device=d, kind=str(one["kind"].values), source="recorded",
                                overhead_s=a, scale=k, power=p, sigma=sigma,
                                jit_s=float(np.nanmax(one["first_call_s"].values[ok] - med[ok])),
                                bandwidth_gbps=bw, gflops=float("nan"),
                                h2d_gbps=1e-9 / per_byte if per_byte > 0 else float("nan"),
                                sizes=tuple(int(s) for s in rec["size"].values[ok]),
                                points=tuple(zip(r.tolist(), med[ok].tolist(), strict=True)),
                                ).to_json()
    return fits


def calibrate(kernels: Sequence[Any] | None = None, devices: Sequence[str] | None = None, *,
              refresh: bool = False, budget_s: float = 0.03,
              max_size: int = 2**20) -> dict[str, dict[str, DeviceFit]]:
    """Calibrate (or load) the cost model of ``kernels`` on the devices here.

    Parameters
    ----------
    kernels : list of str or kernel functions, optional
        Default: every registered kernel (a minute or more the first time on a small
        machine; ``device="auto"`` calibrates only the kernel it is called with).
    devices : list of str, optional
        Backend names to calibrate; default every available one with measured timing.
    refresh : bool, default False
        Measure again even when the cache holds a model.
    budget_s : float, default 0.03
        Stop growing the sizes once the slowest device's best call passes this (s).
    max_size : int, default 2**20
        Largest calibration size (items of the kernel's ``size_unit``).

    Returns
    -------
    dict
        ``{kernel: {device: DeviceFit}}``.

    Raises
    ------
    InvalidInputError
        An unknown kernel or device, a non-positive ``budget_s`` or ``max_size`` < 16.
    """
    if not isinstance(refresh, bool):
        raise InvalidInputError(f"calibrate: refresh must be True or False; got {refresh!r}.")
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) \
            or not 0 < budget_s < math.inf:
        raise InvalidInputError(f"calibrate: budget_s must be a number of seconds > 0; got "
                                f"{budget_s!r}.")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 16:
        raise InvalidInputError(f"calibrate: max_size must be an int >= 16; got {max_size!r}.")
    names = [get_kernel(k).name for k in (kernels if kernels is not None else kernel_names())]
    if devices is not None:
        if isinstance(devices, str):
            raise InvalidInputError(f"calibrate: devices must be a list of device names; got "
                                    f"{devices!r} (write [{devices!r}]).")
        devices = [get_backend(d).name for d in devices]
    return {k: fits_for(k, devices, refresh=refresh, budget_s=budget_s, max_size=max_size)
            for k in names}


def fits_for(kernel: str, devices: Sequence[str] | None = None, *, refresh: bool = False,
             budget_s: float = 0.03, max_size: int = 2**20,
             variant: str = "") -> dict[str, DeviceFit]:
    """The models of one kernel (calibrating it now if the cache lacks a device).

    ``variant`` (:func:`variant_of`) selects the models of calls of that variant; a device
    without one (a variant the case generator never draws) gets the model of the mix.
    """
    with _LOCK:
        path = cache_path()
        data = _load(path)
        entry = data["kernels"].setdefault(kernel, {})
        wanted = _measured_devices(kernel, devices)
        todo = wanted if refresh else [d for d in wanted if d not in entry]
        if refresh and not variant:  # the variants are measured again on their next call
            data.get("variants", {}).pop(kernel, None)
        if todo:
            entry.update(_calibrate_kernel(kernel, todo, data, budget_s=budget_s,
                                           max_size=max_size))
            absent = [b for b in supported_backends(kernel)
                      if not get_backend(b).is_available() and b not in entry]
            entry.update(_recorded_fits(kernel, absent))
            _save(path, data)
        out = {d: DeviceFit.from_json(f) for d, f in entry.items()}
        if variant:
            ventry = data.setdefault("variants", {}).setdefault(kernel, {}).setdefault(
                variant, {})
            vtodo = wanted if refresh else [d for d in wanted if d not in ventry]
            if vtodo:
                found = _calibrate_kernel(kernel, vtodo, data, budget_s=budget_s,
                                          max_size=max_size, variant=variant)
                # a device the variant could not be measured on is marked, not retried
                ventry.update({d: found.get(d) for d in vtodo})
                _save(path, data)
            out.update({d: DeviceFit.from_json(f) for d, f in ventry.items() if f})
        return out


def fits_for_call(spec: Any, validated: Any) -> dict[str, DeviceFit]:
    """The models for one call: those of its variant (:func:`variant_of`)."""
    return fits_for(spec.name, variant=variant_of(spec, validated))


def forget() -> None:
    """Drop the in-process copy of the cache (the file stays); for tests and refreshes."""
    with _LOCK:
        _MEMO.clear()
