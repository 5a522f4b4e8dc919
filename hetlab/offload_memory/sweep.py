"""``sweep``: one streamed forward pass per budget × prefetch × bits, as an xarray Dataset.

>>> import numpy as np
>>> m = Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=2, vocab=50)
>>> ds = sweep(m, budgets=["1MB"], prefetch=[0, 1], bits=[8], tokens=np.arange(4))
>>> dict(ds.sizes), ds["wall_s"].attrs["units"]
({'budget': 1, 'prefetch': 2, 'bits': 1}, 's')
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import numpy as np

from ..core.args import integer, sequence
from ..errors import InvalidInputError
from .budget import BudgetError, parse_budget
from .costmodel import predict
from .executor import check_disk_args, stream, write_store
from .model import Model, check_bits

__all__ = ["sweep"]

_VARS = {  # name → (units, description)
    "wall_s": ("s", "forward pass, measured"),
    "read_s": ("s", "weight reads, summed"),
    "compute_s": ("s", "compute, summed (KV-cache I/O excluded)"),
    "stall_s": ("s", "compute waiting for data"),
    "overlap_s": ("s", "reads overlapping compute"),
    "hidden_fraction": ("1", "|reads ∩ compute| / min(|reads|, |compute|), interval unions"),
    "bytes_read": ("B", "bytes read from the slow tier (weights and KV cache)"),
    "peak_bytes": ("B", "most bytes of weights and KV cache held at once"),
    "read_GBps": ("GB/s", "weight bytes / read time"),
    "predicted_overlap_s": ("s", "sum over items of max(read, compute)"),
    "predicted_serial_s": ("s", "sum over items of read + compute"),
}


def _default_tokens(model: Model) -> Any:
    if model.kind == "encoder":
        return ["Memory offloading streams weights from a slower tier.",
                "Prefetching hides the reads behind compute."]
    return np.random.default_rng(0).integers(0, model.config["vocab"], 16)


def sweep(model: Model, budgets: list[Any], prefetch: list[int] = (0, 1, 2),  # type: ignore[assignment]
          bits: list[int] = (16, 8, 4), *, tokens: Any = None, repeats: int = 1,  # type: ignore[assignment]
          path: str | None = None, io: str = "auto", group_size: int = 128) -> Any:
    """Stream ``model`` once per (budget, prefetch, bits) and collect each pass's report.

    Parameters
    ----------
    model : Model
    budgets : list of int or str
        E.g. ``["64MB", "256MB"]``; a budget too small for one layer at some ``bits`` gives
        that cell ``status = "budget too small"`` and NaN figures.
    prefetch, bits : list of int
    tokens : optional
        Input of every pass (default: 16 seeded ids for a decoder, two sentences for MiniLM).
    repeats : int
        Passes per cell; the last is kept (the first pays numba's compile and cold caches).

    Returns
    -------
    xarray.Dataset
        Dims ``budget`` (bytes), ``prefetch``, ``bits``; variables in :data:`_VARS` with
        ``units`` attrs, and ``status``; attrs ``io_mode``, ``model``, ``label``.
    """
    import xarray as xr

    if not isinstance(model, Model):
        raise InvalidInputError(f"sweep: model must be a Model; got {type(model).__name__}.")
    sizes = [parse_budget(b, f"sweep: budgets[{i}]")
             for i, b in enumerate(sequence("sweep", "budgets", budgets))]
    bits = [check_bits(b, f"bits[{i}]") for i, b in enumerate(sequence("sweep", "bits", bits))]
    prefetch = [integer("sweep", f"prefetch[{i}]", p, 0, 2**31 - 1)
                for i, p in enumerate(sequence("sweep", "prefetch", prefetch))]
    for name, values in (("budgets", sizes), ("prefetch", prefetch), ("bits", bits)):
        if len(set(values)) != len(values):
            raise InvalidInputError(
                f"sweep: {name} must not repeat a value (each is a coordinate); got {values}.")
    repeats = integer("sweep", "repeats", repeats, 1, 10_000)
    group_size = check_disk_args("sweep", group_size, io, path)
    tokens = _default_tokens(model) if tokens is None else tokens
    model.prepare(tokens)  # checked once, before any file is written
    shape = (len(sizes), len(prefetch), len(bits))
    data = {k: np.full(shape, np.nan) for k in _VARS}
    status = np.full(shape, "ok", dtype=object)
    io_modes: set[str] = set()
    directory = tempfile.mkdtemp(prefix="hetlab-offload-sweep-", dir=path)
    try:
        for k, b in enumerate(bits):
            store = write_store(model, b, group_size, directory, io)
            io_modes.add(store.io_mode)
            try:
                for i, size in enumerate(sizes):
                    for j, p in enumerate(prefetch):
                        try:
                            run = stream(model, size, "disk", p, b, group_size=group_size,
                                         store=store, path=directory)
                        except BudgetError:
                            status[i, j, k] = "budget too small"
                            continue
                        try:
                            for _ in range(repeats):
                                run.reset()
                                run.forward(tokens)
                        except BudgetError:
                            status[i, j, k] = "budget too small"
                            continue
                        finally:
                            run.close()
                        rep = run.report
                        pred = predict(rep).attrs
                        values = {"wall_s": rep.wall_s, "read_s": rep.read_s,
                                  "compute_s": rep.compute_s, "stall_s": rep.stall_s,
                                  "overlap_s": rep.overlap_s,
                                  "hidden_fraction": rep.hidden_fraction,
                                  "bytes_read": rep.bytes_read, "peak_bytes": rep.peak_bytes,
                                  "read_GBps": rep.read_bandwidth / 1e9,
                                  "predicted_overlap_s": pred["predicted_overlap_s"],
                                  "predicted_serial_s": pred["predicted_serial_s"]}
                        for name, v in values.items():
                            data[name][i, j, k] = v
            finally:
                store.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    dims = ("budget", "prefetch", "bits")
    ds = xr.Dataset(
        {name: (dims, data[name], {"units": u, "long_name": doc})
         for name, (u, doc) in _VARS.items()}
        | {"status": (dims, status.astype(str))},
        coords={"budget": ("budget", np.array(sizes, np.int64), {"units": "B"}),
                "prefetch": ("prefetch", np.array(prefetch, np.int64),
                             {"units": "items read ahead"}),
                "bits": ("bits", np.array(bits, np.int64), {"units": "bits per weight"})},
        attrs={"io_mode": ",".join(sorted(io_modes)), "model": model.name,
               "label": model.label},
    )
    return ds
