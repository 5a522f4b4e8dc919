"""``ds.hetlab``: the xarray accessor on comparison Datasets (speedup, table, plot, roofline).

It sits above :mod:`hetlab.results` (the data) and :mod:`hetlab.viz` (the charts) and joins
them, so neither imports upward; ``import hetlab`` registers it.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .energy import pareto_front
from .errors import InvalidInputError
from .viz import pareto as pareto_chart
from .viz import plot, roofline, roofline_points

__all__ = ["HetlabAccessor"]


@xr.register_dataset_accessor("hetlab")
class HetlabAccessor:
    """``ds.hetlab``: short verbs on comparison Datasets (``speedup``, ``table``, ``plot``,
    ``roofline``)."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def median_time(self) -> xr.DataArray:
        """Median compute time per (device, size), seconds."""
        return self._ds["time_s"].median("repeat")

    def speedup(self, baseline: str = "numpy") -> xr.DataArray:
        """Median-time speedup of every device over ``baseline`` (>1 is faster)."""
        med = self.median_time()
        if not isinstance(baseline, str) or baseline not in med["device"].values.tolist():
            raise InvalidInputError(
                f"speedup: baseline must be one of {list(med['device'].values)}; got {baseline!r}."
            )
        return (med.sel(device=baseline) / med).rename("speedup")

    def table(self) -> Any:
        """A pandas DataFrame: one row per (device, size) with median figures and status."""
        ds = self._ds
        df = xr.Dataset(
            {
                "median_s": self.median_time(),
                "transfer_s": ds["transfer_in_s"] + ds["transfer_out_s"],
                "first_call_s": ds["first_call_s"],
                "throughput": ds["throughput"],
                "verified": ds["verified"],
                "source": ds["source"],
                "status": ds["status"],
            }
        ).to_dataframe(dim_order=["device", "size"])
        return df[["median_s", "transfer_s", "first_call_s", "throughput", "verified", "source",
                   "status"]]

    def plot(self, y: str = "time_s", **kwargs: Any) -> Any:
        """hvplot chart of ``y`` vs size per device (log axes); see :func:`hetlab.viz.plot`."""
        return plot(self._ds, y=y, **kwargs)

    def roofline(self, **kwargs: Any) -> Any:
        """Memory-roofline chart (points under each device's bandwidth roof); see
        :func:`hetlab.viz.roofline`."""
        return roofline(self._ds, **kwargs)

    def roofline_points(self) -> Any:
        """Each run's intensity, GFLOP/s and fraction of its roof (a pandas DataFrame); see
        :func:`hetlab.viz.roofline_points`."""
        return roofline_points(self._ds)

    def pareto(self, x: str = "time_s", y: str = "energy_j") -> Any:
        """The ``x``/``y`` Pareto front of each size (a pandas DataFrame with each figure's
        source); see :func:`hetlab.energy.pareto_front`."""
        return pareto_front(self._ds, x, y)

    def pareto_plot(self, x: str = "time_s", y: str = "energy_j", **kwargs: Any) -> Any:
        """Time/energy chart with the front circled and modeled energy dashed; see
        :func:`hetlab.viz.pareto`."""
        return pareto_chart(self._ds, x, y, **kwargs)
