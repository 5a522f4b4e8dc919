"""``hl.widgets.Comparison()``: a live device-comparison dashboard for notebooks (ipywidgets).

Pick a kernel, sizes, devices (unavailable ones are shown disabled, with the reason), repeats;
press Run. A progress bar follows the units; the chart (hvplot, log axes; modeled lines dashed,
recorded dotted; embedded as a ``jupyter_bokeh`` widget) and the table appear when the run
ends; the Dataset behind them is ``dashboard.dataset`` and a link downloads it as netCDF.
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

from .core.registry import backend_names, get_backend, kernel_names

__all__ = ["Comparison"]


def _parse_sizes(text: str) -> list[int]:
    from .errors import InvalidInputError

    try:
        sizes = [int(float(s)) for s in text.replace(" ", "").split(",") if s]
    except ValueError:
        raise InvalidInputError(f"sizes must be comma-separated integers; got {text!r}.") from None
    if not sizes or min(sizes) < 1:
        raise InvalidInputError(f"sizes must be positive integers; got {text!r}.")
    return sizes


class Comparison:
    """An ipywidgets dashboard around :func:`hetlab.compare`.

    Parameters
    ----------
    kernel : str, default "fps"
    sizes : str, default "2000,20000"
        Comma-separated sizes in the kernel's unit.
    include_recorded : bool, default False
        Show shipped recordings beside the live run (dotted lines).

    Attributes
    ----------
    dataset : xarray.Dataset or None
        The last run's results.
    """

    def __init__(self, kernel: str = "fps", sizes: str = "2000,20000", *,
                 include_recorded: bool = False) -> None:
        import ipywidgets as w

        from .viz import ensure_extension

        # BokehJS must be on the page before the chart widget renders: load it now, in the
        # cell's own output (inside a widget callback its JavaScript would not run)
        ensure_extension()
        self.dataset: Any = None
        self.kernel = w.Dropdown(options=kernel_names(), value=kernel, description="kernel")
        self.sizes = w.Text(value=sizes, description="sizes")
        self.devices: dict[str, Any] = {}
        for name in backend_names():
            reason = get_backend(name).why_not()
            box = w.Checkbox(value=reason is None and name != "fpga", disabled=reason is not None,
                             description=name if reason is None else f"{name} ({reason})",
                             indent=False, layout=w.Layout(width="auto"))
            box.tooltip = reason or f"run on {name}"
            self.devices[name] = box
        self.repeats = w.IntSlider(value=3, min=1, max=20, description="repeats")
        self.recorded = w.Checkbox(value=include_recorded, description="show recordings",
                                   indent=False)
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.progress = w.IntProgress(value=0, min=0, max=1, description="idle")
        self.output = w.Output()
        self.chart = w.Box()
        self.download = w.HTML()
        self.run_button.on_click(lambda _: self.run())
        self.widget = w.VBox([
            w.HBox([self.kernel, self.sizes, self.repeats]),
            w.HBox([w.Label("devices:"), *self.devices.values(), self.recorded]),
            w.HBox([self.run_button, self.progress, self.download]),
            self.chart,
            self.output,
        ])

    def selected_devices(self) -> list[str]:
        """Names of the ticked devices."""
        return [n for n, box in self.devices.items() if box.value and not box.disabled]

    def _on_unit(self, unit: Any, done: int, total: int) -> None:
        self.progress.max, self.progress.value = total, done
        self.progress.description = f"{done}/{total}"

    def run(self) -> Any:
        """Run the comparison with the current settings; returns the Dataset."""
        from IPython.display import display

        from .errors import HetlabError
        from .sweep import compare

        self.output.clear_output()
        self.run_button.disabled = True
        try:
            self.dataset = compare(self.kernel.value, sizes=_parse_sizes(self.sizes.value),
                                   devices=self.selected_devices(), repeats=self.repeats.value,
                                   progress=False, callback=self._on_unit,
                                   include_recorded=self.recorded.value)
        except HetlabError as exc:
            with self.output:
                print(f"cannot run: {exc}")
            return None
        finally:
            self.run_button.disabled = False
        self.progress.description = "done"
        self.download.value = self._download_link()
        self.chart.children = [self._chart()]
        with self.output:
            display(self.dataset.hetlab.table())
        return self.dataset

    def _chart(self) -> Any:
        """The time and throughput charts as a Bokeh widget (renders inside ipywidgets)."""
        import holoviews as hv
        from jupyter_bokeh.widgets import BokehModel

        layout = self.dataset.hetlab.plot("time_s") + self.dataset.hetlab.plot("throughput")
        return BokehModel(hv.render(layout, backend="bokeh"))

    def _download_link(self) -> str:
        from .results import save

        fd, path = tempfile.mkstemp(suffix=".nc")
        os.close(fd)
        try:
            save(self.dataset, path)
            with open(path, "rb") as f:
                payload = base64.b64encode(f.read()).decode()
        finally:
            os.remove(path)
        name = f"{self.dataset.attrs['kernel']}-compare.nc"
        return (f'<a download="{name}" href="data:application/x-netcdf;base64,{payload}">'
                f"download {name}</a>")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
