"""Charts of comparison Datasets with hvplot: one line per device, log axes; memory rooflines.

Measured figures are solid lines; modeled ones (FPGA emulator) dashed and recorded ones
(replayed from data/recorded) dotted, and every legend entry names its source.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .errors import InvalidInputError

__all__ = ["plot", "roofline", "roofline_points", "pareto", "cloud3d", "ensure_extension",
           "LINE_DASH"]

#: line style per figure source
LINE_DASH = {"measured": "solid", "modeled": "dashed", "recorded": "dotted"}

_LABELS = {
    "time_s": "median time (s)",
    "throughput": "throughput ({unit}/s)",
    "achieved_gbps": "achieved bandwidth (GB/s, cost model)",
    "roofline_fraction": "fraction of peak bandwidth",
    "transfer_s": "host↔device transfer (s)",
    "first_call_s": "first call incl. JIT compile (s)",
}


_EXTENSION_LOADED = False


def ensure_extension() -> None:
    """Load HoloViews' bokeh extension once per notebook kernel (a no-op outside Jupyter).

    The JavaScript is inlined rather than fetched from a CDN, so charts render in classrooms
    and CI machines without internet access. Its output lands in the current cell: call it from
    a cell (hetlab's plotting functions and the dashboard's constructor do), not from a widget
    callback, so the browser runs it before any chart is shown.
    """
    global _EXTENSION_LOADED
    if _EXTENSION_LOADED:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with the lab extra
        return
    shell = get_ipython()
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return
    import holoviews as hv

    hv.extension("bokeh", logo=False, inline=True)
    _EXTENSION_LOADED = True


def _series(ds: xr.Dataset, y: str) -> xr.DataArray:
    if y == "time_s":
        return ds["time_s"].median("repeat")
    if y == "transfer_s":
        return ds["transfer_in_s"] + ds["transfer_out_s"]
    if y not in ds or "repeat" in ds[y].dims:
        raise InvalidInputError(
            f"plot: y must be one of {sorted(_LABELS)}; got {y!r}."
        )
    return ds[y]


def plot(ds: xr.Dataset, y: str = "time_s", *, width: int = 460, height: int = 420) -> Any:
    """Overlay of ``y`` vs size, one line per device that ran; log-log axes.

    Parameters
    ----------
    ds : xarray.Dataset
        A comparison Dataset from :func:`hetlab.compare` (or :func:`hetlab.load`). Every legend
        entry names its source: measured lines are solid, modeled dashed, recorded dotted.
    y : str, default "time_s"
        One of ``time_s`` (median), ``throughput``, ``achieved_gbps``, ``roofline_fraction``,
        ``transfer_s``, ``first_call_s``.

    Returns
    -------
    holoviews.Overlay
        Renders in a notebook; ``hvplot.save(chart, "chart.html")`` writes it to a file.
    """
    ensure_extension()  # before hvplot's import, which would load the CDN version

    import holoviews as hv
    import hvplot.xarray  # noqa: F401  (registers .hvplot)

    data = _series(ds, y)
    unit = ds.attrs.get("size_unit", "items")
    ylabel = _LABELS.get(y, y).format(unit=unit)
    curves = []
    for dev in ds["device"].values:
        source = str(ds["source"].sel(device=dev).values)
        if source not in LINE_DASH:
            continue  # skipped: unavailable or unsupported here
        line = data.sel(device=dev).rename(ylabel.split(" (")[0])
        label = f"{dev} ({source})"
        curves.append(
            line.hvplot.line(x="size", logx=True, logy=True, label=label, xlabel=f"size ({unit})",
                             ylabel=ylabel).opts(line_dash=LINE_DASH[source])
            * line.hvplot.scatter(x="size", logx=True, logy=True, label=label)
        )
    if not curves:
        raise InvalidInputError("plot: ds must hold at least one device that ran; got none.")
    from bokeh.models import NumeralTickFormatter

    title = f"{ds.attrs.get('kernel', '')}: {ylabel}"
    # ticks at the sizes measured (a log axis over less than two decades otherwise labels every
    # mantissa, overlapping), written 2k, 100k; the legend one entry a line, below the chart
    sizes = sorted({int(s) for s in ds["size"].values})
    return hv.Overlay(curves).opts(title=title, width=width, height=height,
                                   legend_position="bottom", legend_cols=1, xticks=sizes,
                                   xformatter=NumeralTickFormatter(format="0a"))


#: one colour per device, shared by its points and its bandwidth roof (bokeh's Category10)
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def roofline_points(ds: xr.Dataset) -> Any:
    """Where each (device, size) of a comparison lands on a roofline, as a pandas DataFrame.

    Columns: ``intensity`` (cost-model flops per byte moved, flop/B), ``gflops`` (flops over
    the median time, GFLOP/s), ``peak_gbps`` (the device's bandwidth roof, GB/s),
    ``roof_gflops`` (``peak_gbps × intensity``: the most a memory-bound kernel can reach),
    ``fraction`` (``gflops / roof_gflops``) and ``source``; rows of devices that did not run
    are left out.
    """
    med = ds["time_s"].median("repeat")
    rows = []
    for dev in ds["device"].values:
        source = str(ds["source"].sel(device=dev).values)
        if source not in LINE_DASH:
            continue
        peak = float(ds["peak_gbps"].sel(device=dev))
        for size in ds["size"].values:
            t = float(med.sel(device=dev, size=size))
            if not t > 0:
                continue
            flops, nbytes = float(ds["flops"].sel(size=size)), float(ds["bytes"].sel(size=size))
            intensity, gflops = flops / nbytes, flops / t / 1e9
            rows.append({"device": str(dev), "size": int(size), "intensity": intensity,
                         "gflops": gflops, "peak_gbps": peak, "roof_gflops": peak * intensity,
                         "fraction": gflops / (peak * intensity), "source": source})
    import pandas as pd

    cols = ["device", "size", "intensity", "gflops", "peak_gbps", "roof_gflops", "fraction",
            "source"]
    return pd.DataFrame(rows, columns=cols).set_index(["device", "size"])


def roofline(ds: xr.Dataset, *, width: int = 520, height: int = 420) -> Any:
    """Memory roofline of a comparison: achieved GFLOP/s against arithmetic intensity.

    Each device that ran is drawn as points (one per size, joined in size order; measured
    solid, modeled dashed, recorded dotted, as in :func:`plot`) under its own bandwidth roof
    ``GFLOP/s = peak_gbps × flop/B`` (thin, same colour; ``peak_gbps`` is the Dataset's — for
    CPUs a STREAM triad measured on this machine, for GPUs the datasheet figure). Intensity
    and flops come from the kernel's cost model, so a point on its roof moves the model's
    bytes at the device's peak bandwidth. Devices without a known peak get no roof.

    Parameters
    ----------
    ds : xarray.Dataset
        A comparison Dataset from :func:`hetlab.compare` with at least one device that ran.

    Returns
    -------
    holoviews.Overlay
    """
    ensure_extension()
    import holoviews as hv
    import holoviews.plotting.bokeh  # registers the bokeh options outside Jupyter
    import numpy as np

    pts = roofline_points(ds)
    if pts.empty:
        raise InvalidInputError("roofline: ds must hold at least one device that ran; got none.")
    lo, hi = float(pts["intensity"].min()) / 4, float(pts["intensity"].max()) * 4
    xs = np.geomspace(lo, hi, 2)
    log = {"logx": True, "logy": True}
    xdim = hv.Dimension("intensity", label="arithmetic intensity (flop/B, cost model)")
    ydim = hv.Dimension("gflops", label="achieved GFLOP/s")
    layers = []
    for i, (dev, group) in enumerate(pts.groupby(level="device", sort=False)):
        color, source = _COLORS[i % len(_COLORS)], str(group["source"].iloc[0])
        label = f"{dev} ({source})"
        data = (group["intensity"].to_numpy(), group["gflops"].to_numpy())
        layers.append(hv.Curve(data, xdim, ydim, label=label).opts(
            color=color, line_dash=LINE_DASH[source], **log))
        sized = (*data, group.index.get_level_values("size").to_numpy())
        layers.append(hv.Scatter(sized, xdim, [ydim, "size"], label=label).opts(
            color=color, size=8, tools=["hover"], **log))
        peak = float(group["peak_gbps"].iloc[0])
        if np.isfinite(peak) and peak > 0:
            roof = hv.Curve((xs, peak * xs), xdim, ydim,
                            label=f"{dev} roof: {peak:.1f} GB/s")
            layers.append(roof.opts(color=color, line_width=1, alpha=0.6, **log))
    title = f"{ds.attrs.get('kernel', '')}: memory roofline"
    return hv.Overlay(layers).opts(title=title, width=width, height=height,
                                   legend_position="bottom", legend_cols=2, **log)


def pareto(ds: xr.Dataset, x: str = "time_s", y: str = "energy_j", *, width: int = 520,
           height: int = 420) -> Any:
    """Time/energy chart of a comparison: each device's sizes as points joined in size order,
    the Pareto front of each size circled.

    A device's line is styled by its **energy** source (measured solid, modeled dashed,
    recorded dotted, as in :func:`plot`), and its legend entry names both sources, e.g.
    ``"numba (time measured, energy modeled)"``; the title repeats the Dataset's
    ``energy_note`` (on a CPU without counters: CPU energy is modeled).

    Parameters
    ----------
    ds : xarray.Dataset
        From ``hl.compare(..., energy=True)``.
    x, y : str
        Variables to plot (``time_s`` as its median); both minimized.

    Returns
    -------
    holoviews.Overlay
    """
    ensure_extension()
    import holoviews as hv
    import holoviews.plotting.bokeh

    from .energy import pareto_front

    front = pareto_front(ds, x, y)
    vx = ds[x].median("repeat") if "repeat" in ds[x].dims else ds[x]
    vy = ds[y].median("repeat") if "repeat" in ds[y].dims else ds[y]
    log = {"logx": True, "logy": True}
    layers = []
    for i, dev in enumerate(ds["device"].values):
        xs, ys = vx.sel(device=dev).values, vy.sel(device=dev).values
        ok = [k for k in range(len(xs)) if xs[k] > 0 and ys[k] > 0]
        if not ok:
            continue
        srcs = {str(s) for s in ds["energy_source"].sel(device=dev).values[ok]} \
            if "energy_source" in ds else {"measured"}
        esrc = next((s for s in ("modeled", "recorded", "measured") if s in srcs), "measured")
        label = f"{dev} (time {ds['source'].sel(device=dev).values}, energy {esrc})"
        color = _COLORS[i % len(_COLORS)]
        data = ([float(xs[k]) for k in ok], [float(ys[k]) for k in ok])
        layers.append(hv.Curve(data, x, y, label=label).opts(
            color=color, line_dash=LINE_DASH.get(esrc, "solid"), **log))
        layers.append(hv.Scatter(data, x, y, label=label).opts(color=color, size=7, **log))
    if not layers:
        raise InvalidInputError(f"pareto: ds must hold at least one device with finite {x} "
                                f"and {y}; got none.")
    if len(front):
        pts = (front[x].to_numpy(), front[y].to_numpy())
        layers.append(hv.Scatter(pts, x, y, label="Pareto front (per size)").opts(
            color="black", marker="circle", size=14, fill_alpha=0, line_width=2, **log))
    note = ds.attrs.get("energy_note", "")
    title = f"{ds.attrs.get('kernel', '')}: {y} vs {x}" + (f" — {note}" if note else "")
    return hv.Overlay(layers).opts(title=title, width=width, height=height,
                                   legend_position="bottom", **log)


def cloud3d(points: Any, highlight: Any = None, *, max_points: int = 5000, seed: int = 0,
            title: str = "") -> Any:
    """Interactive 3-D scatter (plotly) of a cloud, with ``highlight`` indices drawn on top.

    Parameters
    ----------
    points : array-like of shape (n, 3)
    highlight : array-like of int, optional
        Indices to draw large and red (e.g. FPS samples).
    max_points : int, default 5000
        The grey background shows a random subset this large (browsers slow down beyond).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import numpy as np
    import plotly.graph_objects as go

    pts = np.asarray(points)
    rng = np.random.default_rng(seed)
    shown = pts if len(pts) <= max_points else pts[rng.choice(len(pts), max_points, False)]
    fig = go.Figure(go.Scatter3d(x=shown[:, 0], y=shown[:, 1], z=shown[:, 2], mode="markers",
                                 marker={"size": 1.5, "color": "lightgray"}, name="points"))
    if highlight is not None:
        h = pts[np.asarray(highlight)]
        fig.add_trace(go.Scatter3d(x=h[:, 0], y=h[:, 1], z=h[:, 2], mode="markers",
                                   marker={"size": 3, "color": "crimson"},
                                   name=f"selected ({len(h)})"))
    fig.update_layout(title=title, height=480, margin={"l": 0, "r": 0, "t": 40, "b": 0})
    return fig
