"""Recorded runs: comparisons saved with full provenance and replayed beside live results.

A recording is a comparison Dataset written to netCDF by :func:`record`. ``hl.compare(...,
include_recorded=True)`` loads the recordings of the same kernel and appends their devices
relabeled ``"<device> · recorded on <device name>, <date>"`` with ``source="recorded"``, so a
CPU-only notebook can show what a GPU did, and never passes it off as a live measurement.

Recordings are looked up in ``$HETLAB_RECORDED`` if set, else in the repository's
``data/recorded/`` folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import xarray as xr

from ._resources import resource_dir
from .errors import InvalidInputError
from .results import add_derived, load, save

__all__ = ["record", "recordings", "with_recorded", "recorded_dir", "machine_slug"]

_NOT_RUN = "not run at this size"


def recorded_dir() -> Path:
    """The folder holding recordings: ``$HETLAB_RECORDED``, else the ``data/recorded/`` this
    installation holds (the checkout's, or the wheel's copy: :mod:`hetlab._resources`)."""
    env = os.environ.get("HETLAB_RECORDED")
    if env:
        return Path(env)
    return resource_dir("data") / "recorded"


def machine_slug(machine: str) -> str:
    """``machine`` as a file-name part: lower case, runs of other characters as one ``-``.

    >>> machine_slug("NVIDIA H200 (lent, 141 GB)")
    'nvidia-h200-lent-141-gb'
    """
    return re.sub(r"[^a-z0-9]+", "-", machine.lower()).strip("-") or "machine"


def record(ds: xr.Dataset, *, folder: str | os.PathLike[str] | None = None,
           name: str | None = None, machine: str | None = None) -> Path:
    """Save a comparison as a recording; only devices that were measured and verified are kept.

    Parameters
    ----------
    ds : xarray.Dataset
        From :func:`hetlab.compare`.
    folder : path, optional
        Default :func:`recorded_dir`.
    name : str, optional
        File stem; default ``"<kernel>-<device kinds>-<machine or host>-<date>"``.
    machine : str, optional
        The machine the run was made on, in words (``"NVIDIA H200"``): kept as the recording's
        ``machine`` attribute beside the host facts ``hl.compare`` stores, and named in the
        default file stem. Default: the host name.

    Returns
    -------
    pathlib.Path of the netCDF file written.
    """
    keep = (ds["source"] == "measured") & ds["verified"].any("size")
    if not bool(keep.any()):
        raise InvalidInputError(
            "record: ds must hold at least one measured, verified device; got none."
        )
    if machine is not None and (not isinstance(machine, str) or not machine.strip()):
        raise InvalidInputError(
            f"record: machine must be a non-empty string naming the machine; got {machine!r}."
        )
    rec = ds.sel(device=ds["device"][keep.values])
    if machine is not None:
        rec = rec.assign_attrs(machine=machine.strip())
    kinds = "-".join(sorted({str(k) for k in rec["kind"].values}))
    where = machine_slug(machine) if machine is not None else ds.attrs.get("host", "host")
    stem = name or f"{ds.attrs['kernel']}-{kinds}-{where}-{str(ds.attrs.get('created', ''))[:10]}"
    out = Path(folder) if folder is not None else recorded_dir()
    out.mkdir(parents=True, exist_ok=True)
    return Path(save(rec, out / f"{stem}.nc"))


def recordings(kernel: str, folder: str | os.PathLike[str] | None = None) -> list[xr.Dataset]:
    """Every recording of ``kernel`` in ``folder`` (default :func:`recorded_dir`), by file name."""
    where = Path(folder) if folder is not None else recorded_dir()
    if not where.is_dir():
        return []
    found = []
    for path in sorted(where.glob("*.nc")):
        ds = load(path)
        if ds.attrs.get("kernel") == kernel:
            found.append(ds)
    return found


def _relabel(rec: xr.Dataset) -> xr.Dataset:
    date = str(rec.attrs.get("created", ""))[:10]
    names = [f"{d} · recorded on {n or rec.attrs.get('cpu_model', '?')}, {date}"
             for d, n in zip(rec["device"].values, rec["device_name"].values, strict=True)]
    rec = rec.assign_coords(device=names)
    return rec.assign_coords(source=("device", np.array(["recorded"] * len(names))))


def with_recorded(ds: xr.Dataset, recs: list[xr.Dataset]) -> xr.Dataset:
    """``ds`` with the devices of every recording appended (sizes and repeats outer-joined)."""
    if not recs:
        return ds
    parts = [ds, *(_relabel(r) for r in recs)]
    out = xr.concat(parts, dim="device", join="outer", data_vars="minimal", coords="minimal",
                    compat="override", combine_attrs="override", fill_value={"status": _NOT_RUN,
                                                                           "verified": False})
    out["status"] = out["status"].fillna(_NOT_RUN).astype(str)
    out["verified"] = out["verified"].fillna(False).astype(bool)
    return add_derived(out)
