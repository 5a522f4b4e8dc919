"""GPU memory-offload recordings: a GPU run's report saved as an xarray Dataset, found and
loaded again (notebook 09 plots one when ``data/recorded/`` holds it).

A recording is ``data/recorded/memory-offload-<machine>-<date>.nc`` (written by
``scripts/gpu_check.sh`` with :func:`record_gpu_run`): one row per item (``item`` dimension)
with the copy and compute intervals from CUDA events, bytes and stalls, and attributes naming
the machine, the GPU, the model (seeded weights, said so), the budget and the date.

>>> import numpy as np
>>> from .report import ItemTiming, Report
>>> rep = Report("pinned-host-to-device", "gpu", 1, 16, 1000, 900, 0.5, "m", [
...     ItemTiming("L0", 10, 0.0, 0.1, 0.1, 0.3), ItemTiming("L1", 10, 0.1, 0.2, 0.3, 0.5)])
>>> ds = report_dataset(rep, machine="synthetic example (not a measurement)", gpu="none")
>>> ds.sizes["item"], timeline_frame(ds)["what"].tolist()
(2, ['read', 'compute', 'read', 'compute'])
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..recorded import machine_slug, recorded_dir
from ..results import load, save
from .report import Report

__all__ = ["report_dataset", "save_recording", "find_recordings", "load_recording",
           "timeline_frame", "record_gpu_run", "KIND"]

#: the ``kind`` attribute every memory-offload recording carries
KIND = "memory-offload"
_COLUMNS = {"bytes_read": "B", "read_start_s": "s", "read_s": "s", "compute_start_s": "s",
            "compute_s": "s", "overlap_s": "s", "stall_s": "s", "kv_prefetch_bytes": "B",
            "kv_prefetch_start_s": "s", "kv_prefetch_s": "s"}


def report_dataset(report: Report, *, machine: str, gpu: str, label: str = "",
                   created: str | None = None) -> Any:
    """A report as a Dataset (dimension ``item``), with machine/GPU/run attributes."""
    import xarray as xr

    if not isinstance(report, Report):
        raise InvalidInputError(f"report_dataset: report must be a run's Report; got "
                                f"{type(report).__name__}.")
    df = report.table()
    data = {c: ("item", df[c].to_numpy(dtype=np.float64), {"units": u})
            for c, u in _COLUMNS.items()}
    attrs = {"kind": KIND, "machine": machine, "gpu": gpu, "model": report.model,
             "label": label, "tier": report.tier, "io_mode": report.io_mode,
             "prefetch": int(report.prefetch), "bits": int(report.bits),
             "budget_bytes": int(report.budget), "peak_bytes": int(report.peak_bytes),
             "wall_s": float(report.wall_s), "hidden_fraction": float(report.hidden_fraction),
             "created": created or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    return xr.Dataset(data, coords={"item": list(df.index)}, attrs=attrs)


def save_recording(ds: Any, folder: str | os.PathLike[str] | None = None) -> Path:
    """Write ``ds`` as ``memory-offload-<machine>-<date>.nc`` in ``folder`` (default
    :func:`hetlab.recorded.recorded_dir`); returns the path."""
    folder = Path(folder) if folder is not None else recorded_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{KIND}-{machine_slug(ds.attrs['machine'])}-{ds.attrs['created'][:10]}.nc"
    save(ds, path)
    return path


def find_recordings(folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """Memory-offload recordings in ``folder`` (default the recorded folder), newest name last."""
    folder = Path(folder) if folder is not None else recorded_dir()
    return sorted(folder.glob(f"{KIND}-*.nc")) if folder.is_dir() else []


def load_recording(path: str | os.PathLike[str]) -> Any:
    """A recording, checked to be one (``kind`` attribute and the per-item variables)."""
    ds = load(path)
    missing = [c for c in _COLUMNS if c not in ds]
    if ds.attrs.get("kind") != KIND or missing or "item" not in ds.dims:
        raise InvalidInputError(
            f"load_recording: {path} is not a memory-offload recording (kind="
            f"{ds.attrs.get('kind')!r}, missing {missing}); write one with save_recording.")
    return ds


def timeline_frame(ds: Any) -> Any:
    """Gantt rows (item, what, y, start_ms, end_ms) of a recording: copies and compute."""
    import pandas as pd

    rows = []
    for n, item in enumerate(ds["item"].values.tolist()):
        r = ds.sel(item=item)
        if float(r["bytes_read"]) > 0:
            s = float(r["read_start_s"])
            rows.append({"item": item, "what": "read", "y": n + 0.2, "start_ms": s * 1e3,
                         "end_ms": (s + float(r["read_s"])) * 1e3})
        s = float(r["compute_start_s"])
        rows.append({"item": item, "what": "compute", "y": n - 0.2, "start_ms": s * 1e3,
                     "end_ms": (s + float(r["compute_s"])) * 1e3})
    return pd.DataFrame(rows)


def record_gpu_run(folder: str | os.PathLike[str] | None, machine: str, *, n_layers: int = 6,
                   budget: str = "400MB", prefetch: int = 2, bits: int = 16,
                   tokens: int = 16) -> Path:  # pragma: no cover - GPU machines only
    """Stream a decoder of TinyLlama-1.1B's layer shapes (seeded weights) that does not fit
    ``budget`` through a GPU; save the second pass's report (the first warms cuBLAS up)."""
    from .executor import stream
    from .model import Model

    model = Model.decoder("tinyllama-1.1b", n_layers=n_layers)
    ids = np.random.default_rng(0).integers(0, model.config["vocab"], tokens)
    with stream(model, budget=budget, tier="gpu", prefetch=prefetch, bits=bits) as run:
        whole = sum(model.item_nbytes(it, bits) for it in model.items[1:])
        if whole <= run.budget.pool("weights").limit:
            raise InvalidInputError(f"record_gpu_run: the model ({whole} B) fits {budget}; "
                                    "it must not, to stream.")
        run.forward(ids)
        run.reset()
        run.forward(ids)
        rep = run.report
        ds = report_dataset(rep, machine=machine, gpu=run.device_name, label=model.label)
    return save_recording(ds, folder)
