"""Comparison results as ``xarray.Dataset``: assembly, provenance, netCDF I/O (the ``ds.hetlab``
    accessor: :mod:`hetlab.accessor`).

Layout of a comparison Dataset
------------------------------
dims ``device``, ``size``, ``repeat``.

=====================  ======================  =================================================
variable               dims                    meaning (unit)
=====================  ======================  =================================================
time_s                 device, size, repeat    compute time of one timed call (s)
transfer_in_s          device, size            host→device copy of the inputs (s; 0 on the host)
transfer_out_s         device, size            device→host copy of the result (s)
first_call_s           device, size            first call, JIT compilation included (s)
error                  device, size            distance to the reference (kernel's metric)
verified               device, size            error ≤ the kernel's tolerance
status                 device, size            "ok", "unavailable: …", "wrong result …", …
host, worker (coords)  device, size            machine and Dask worker ("local") that measured
throughput             device, size            size / median time_s (size_unit per s)
achieved_gbps          device, size            cost-model bytes / median time_s (GB/s)
roofline_fraction      device, size            achieved_gbps / the device's peak bandwidth
flops, bytes           size                    cost model of one call
source                 device                  "measured", "modeled", "recorded" or "skipped"
energy_j, power_w      device, size            with ``energy=True``: J per call, W
energy_source,         device, size            "measured", "modeled", "recorded" or "";
energy_how                                     how (counter, or the model and its figures)
kind, device_name,     device                  backend kind, device model, threads, peak GB/s
threads, peak_gbps
=====================  ======================  =================================================
attrs: kernel, description, size_unit, seed, repeats, warmup, created (UTC ISO 8601),
hetlab and library versions, host facts (host, os, cpu_model, cpu_count, python, numpy).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from . import machine
from ._sweep_args import check_path
from .core.registry import get_backend
from .core.spec import KernelSpec
from .errors import HetlabError, InvalidInputError

__all__ = ["to_dataset", "save", "load"]


def _device_info(name: str) -> dict[str, Any]:
    backend = get_backend(name)
    base = {"kind": backend.kind, "device_name": "", "threads": 0, "peak_gbps": np.nan}
    if not backend.is_available():
        return base
    try:
        info = {**backend.info(), **backend.peaks()}
    except Exception:  # provenance must never cost the measurements
        return base
    base.update(device_name=str(info.get("device_name", "")), threads=int(info.get("threads", 0)),
                peak_gbps=float(info.get("peak_bandwidth_gbps", np.nan)))
    return base


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("hetlab", "numba", "xarray", "cupy-cuda12x", "cupy-cuda13x", "pynq"):
        try:
            out[f"version_{pkg.split('-')[0]}"] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def to_dataset(spec: KernelSpec, units: Sequence[Any], devices: Sequence[str],
               sizes: Sequence[int], *, repeats: int, warmup: int, seed: int) -> xr.Dataset:
    """Assemble :class:`~hetlab.bench.UnitResult` objects into a comparison Dataset.

    A (device, size) with no unit gets NaN figures and status ``"not run"``; a size whose case
    cannot be generated (e.g. ``MemoryError``) gets NaN ``flops`` and ``bytes``.
    """
    from ._sweep_args import check_devices, check_int, check_sizes

    if not isinstance(spec, KernelSpec):
        raise InvalidInputError(
            f"to_dataset: spec must be a KernelSpec (hetlab.core.registry.get_kernel); got "
            f"{type(spec).__name__}."
        )
    devices = check_devices("to_dataset", devices)
    sizes = check_sizes("to_dataset", sizes)
    repeats = check_int("to_dataset", "repeats", repeats, minimum=1)
    warmup = check_int("to_dataset", "warmup", warmup, minimum=0)
    seed = check_int("to_dataset", "seed", seed, minimum=0)
    nd, ns = len(devices), len(sizes)
    di = {d: i for i, d in enumerate(devices)}
    si = {s: i for i, s in enumerate(sizes)}
    time_s = np.full((nd, ns, repeats), np.nan)
    per = {k: np.full((nd, ns), np.nan) for k in
           ("transfer_in_s", "transfer_out_s", "first_call_s", "error")}
    verified = np.zeros((nd, ns), dtype=bool)
    status = np.full((nd, ns), "not run", dtype=object)
    host = np.full((nd, ns), "", dtype=object)
    worker = np.full((nd, ns), "", dtype=object)
    source = np.full(nd, "skipped", dtype=object)
    for u in units:
        if u.device not in di or u.size not in si:
            raise InvalidInputError(
                f"to_dataset: every unit must be one of devices={list(devices)} x "
                f"sizes={list(sizes)}; got device={u.device!r}, size={u.size!r}."
            )
        i, j = di[u.device], si[u.size]
        if u.times_s:
            time_s[i, j, : min(len(u.times_s), repeats)] = u.times_s[:repeats]
        for k in per:
            per[k][i, j] = getattr(u, k)
        verified[i, j], status[i, j] = u.verified, u.status
        host[i, j], worker[i, j] = u.host, u.worker
        if u.source != "skipped":
            source[i] = u.source
    # the cost model needs the case's arguments only, not its reference result (on a cluster
    # the references were computed by the workers)
    # sizes whose case could not be generated (or never ran) are not generated again here
    energy = _energy_vars(units, di, si, (nd, ns))
    no_case = {s for s in sizes if _no_case(status[:, si[s]])}
    costs = [_cost(spec, s, seed, s in no_case) for s in sizes]
    infos = [_device_info(d) for d in devices]
    dims2 = ("device", "size")
    ds = xr.Dataset(
        {
            "time_s": (("device", "size", "repeat"), time_s, {"units": "s"}),
            **{k: (dims2, v, {"units": "s"} if k.endswith("_s") else {}) for k, v in per.items()},
            "verified": (dims2, verified),
            "status": (dims2, status.astype(str)),
            "flops": ("size", np.array([c.flops for c in costs])),
            "bytes": ("size", np.array([c.bytes for c in costs]), {"units": "B"}),
        },
        coords={
            "device": list(devices),
            "size": np.asarray(sizes, dtype=np.int64),
            "repeat": np.arange(repeats),
            "source": ("device", source.astype(str)),
            "host": (dims2, host.astype(str)),
            "worker": (dims2, worker.astype(str)),
            "kind": ("device", [f["kind"] for f in infos]),
            "device_name": ("device", [f["device_name"] for f in infos]),
            "threads": ("device", np.array([f["threads"] for f in infos], dtype=np.int64)),
            "peak_gbps": ("device", np.array([f["peak_gbps"] for f in infos]),
                          {"units": "GB/s"}),
        },
        attrs={
            "kernel": spec.name,
            "description": spec.description,
            "size_unit": spec.size_unit,
            "seed": seed,
            "repeats": repeats,
            "warmup": warmup,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            **_versions(),
            **machine.host_facts(),
        },
    )
    if energy:
        ds = ds.assign({k: (dims2, v, {"units": u} if u else {})
                        for k, (v, u) in energy.items()})
        if any(str(h).startswith("modeled:") and "thread" in str(h)
               for h in energy["energy_how"][0].ravel()):
            from .energy import CPU_NOTE

            ds.attrs["energy_note"] = CPU_NOTE
    return add_derived(ds)


def _energy_vars(units: Sequence[Any], di: dict[str, int], si: dict[int, int],
                 shape: tuple[int, int]) -> dict[str, tuple[Any, str]]:
    """energy_j, power_w, energy_source, energy_how arrays, or {} when no unit has any."""
    if not any(getattr(u, "energy_source", "") or getattr(u, "energy_how", "") for u in units):
        return {}
    out: dict[str, tuple[Any, str]] = {
        "energy_j": (np.full(shape, np.nan), "J"), "power_w": (np.full(shape, np.nan), "W"),
        "energy_source": (np.full(shape, "", dtype=object), ""),
        "energy_how": (np.full(shape, "", dtype=object), "")}
    for u in units:
        i, j = di[u.device], si[u.size]
        for k in out:
            out[k][0][i, j] = getattr(u, k)
    for k in ("energy_source", "energy_how"):
        out[k] = (out[k][0].astype(str), "")
    return out


def _no_case(statuses: Any) -> bool:
    """True when a size's case failed to generate, or none of its units ran."""
    from .bench import CASE_FAILED

    return any(CASE_FAILED in str(s) for s in statuses) or all(
        str(s).startswith(("interrupted", "not run")) for s in statuses)


def _cost(spec: KernelSpec, size: int, seed: int, skip: bool = False) -> Any:
    """The cost model of one size's case; NaN figures when the case cannot be generated (its
    units already say why in their ``status``)."""
    from .bench import case_args
    from .core.spec import Cost

    if skip:
        return Cost(flops=float("nan"), bytes=float("nan"))
    try:
        return spec.cost(case_args(spec.name, size, seed))
    except Exception:  # e.g. MemoryError at a huge size: keep every other figure
        return Cost(flops=float("nan"), bytes=float("nan"))


def add_derived(ds: xr.Dataset) -> xr.Dataset:
    """(Re)compute throughput, achieved_gbps and roofline_fraction from the raw figures."""
    med = ds["time_s"].median("repeat")
    ds["throughput"] = (ds["size"] / med).assign_attrs(units=f"{ds.attrs['size_unit']}/s")
    ds["achieved_gbps"] = (ds["bytes"] / med / 1e9).assign_attrs(units="GB/s")
    ds["roofline_fraction"] = (ds["achieved_gbps"] / ds["peak_gbps"]).assign_attrs(
        note="cost-model bytes (naive algorithm) over the device's peak bandwidth"
    )
    return ds


def save(ds: xr.Dataset, path: str | os.PathLike[str]) -> str:
    """Write a comparison Dataset to netCDF-4 (h5netcdf engine); returns the path.

    Parameters
    ----------
    ds : xarray.Dataset
        From :func:`hetlab.compare` (not modified).
    path : str or os.PathLike
        File to write (overwritten), in an existing folder.

    Raises
    ------
    InvalidInputError
        ``ds`` is not a Dataset, or ``path`` is not a file path in an existing folder.
    HetlabError
        The file could not be written (the reason is included).
    """
    if not isinstance(ds, xr.Dataset):
        raise InvalidInputError(
            f"save: ds must be an xarray.Dataset (what hl.compare returns); got "
            f"{type(ds).__name__}."
        )
    path = check_path("save", "path", path, parent_must_exist=True)
    try:
        ds.to_netcdf(path, engine="h5netcdf")
    except Exception as exc:
        raise HetlabError(
            f"save: could not write {path!r} as netCDF ({type(exc).__name__}: {exc}); check "
            "that the folder is writable and the Dataset holds only numbers, strings and "
            "booleans."
        ) from exc
    return path


def load(path: str | os.PathLike[str]) -> xr.Dataset:
    """Read a comparison Dataset written by :func:`save` (fully loaded, file closed).

    Raises
    ------
    InvalidInputError
        ``path`` is not a path, does not exist, or is not a netCDF-4 file.
    """
    path = check_path("load", "path", path, must_exist=True)
    try:
        ds = xr.load_dataset(path, engine="h5netcdf")
    except Exception as exc:
        raise InvalidInputError(
            f"load: path must name a netCDF-4 file written by hl.save; got {path!r}, which "
            f"could not be read ({type(exc).__name__}: {exc})."
        ) from exc
    if "verified" in ds:
        ds["verified"] = ds["verified"].astype(bool)
    return ds
