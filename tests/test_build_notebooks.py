"""scripts/build_notebooks.py: jupytext pairing, the site copy's outputs, the staleness check."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("build_notebooks",
                                               ROOT / "scripts" / "build_notebooks.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["build_notebooks"] = build
_spec.loader.exec_module(build)

SOURCES = sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py"))


def test_jupytext_config_pairs_each_notebook_with_its_source():
    from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file
    from jupytext.paired_paths import paired_paths

    config = load_jupytext_configuration_file(
        find_jupytext_configuration_file(str(ROOT / "notebooks")))
    formats = config.default_formats(str(ROOT / "notebooks" / "00-tour.ipynb"))
    paths = [p for p, _ in paired_paths(str(ROOT / "notebooks" / "00-tour.ipynb"), "ipynb",
                                        formats)]
    assert paths == [str(ROOT / "notebooks" / "00-tour.ipynb"),
                     str(ROOT / "notebooks" / "src" / "00-tour.py")]
    assert config.notebook_metadata_filter == "-all"  # the sources stay header-free


def test_parse_source_reads_percent_cells(tmp_path):
    src = tmp_path / "99-x.py"
    src.write_text("# %% [markdown]\n# # Title\n#\n# text\n\n# %%\nx = 1\nx\n", encoding="utf-8")
    cells = build.parse_source(src)
    assert [(c.cell_type, c.source) for c in cells] == [("markdown", "# Title\n\ntext"),
                                                        ("code", "x = 1\nx")]


def test_coalesce_streams_merges_consecutive_chunks_of_one_stream():
    outs = [nbformat.v4.new_output("stream", name="stdout", text="a\n"),
            nbformat.v4.new_output("stream", name="stdout", text="b\n"),
            nbformat.v4.new_output("stream", name="stderr", text="w\n"),
            nbformat.v4.new_output("stream", name="stdout", text="c\n")]
    merged = build.coalesce_streams(outs)
    assert [(o.name, o.text) for o in merged] == [("stdout", "a\nb\n"), ("stderr", "w\n"),
                                                  ("stdout", "c\n")]


def test_site_outputs_drop_loaders_and_widgets_and_draw_plotly_after_load():
    pytest.importorskip("plotly")
    import plotly.graph_objects as go

    loader = nbformat.v4.new_output("display_data", data={
        "application/javascript": "/* BokehJS */",
        "application/vnd.holoviews_load.v0+json": "/* BokehJS */"})
    chart = nbformat.v4.new_output("display_data", data={
        "text/html": "<div data-root-id='x'></div>",
        "application/vnd.holoviews_exec.v0+json": ""},
        metadata={"application/vnd.holoviews_exec.v0+json": {"id": "x"}})
    widget = nbformat.v4.new_output("display_data", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "Box()"})
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    plotly_out = nbformat.v4.new_output("display_data", data={
        build.PLOTLY: fig.to_plotly_json()})
    kept = build._site_outputs([loader, chart, widget, plotly_out])
    assert len(kept) == 3
    assert set(kept[0].data) == {"text/html"} and kept[0].metadata == {}
    assert set(kept[1].data) == {"text/plain"}
    html = kept[2].data["text/html"]
    assert "plotly-graph-div" in html and "Plotly.newPlot" in html
    assert html.count('window.addEventListener("load"') == html.count("</script>") >= 1


def test_site_copy_has_a_provenance_cell_that_check_ignores():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"),
                                         nbformat.v4.new_code_cell("1")])
    site = build.site_copy(nb, 12.0)
    assert len(site.cells) == 3 and site.cells[1].metadata["tags"] == [build.PROVENANCE_TAG]
    assert "in 12 s" in site.cells[1].source and "run the notebook" in site.cells[1].source
    assert build._cells(site) == [("markdown", "# T"), ("code", "1")]
    assert len(nb.cells) == 2  # the learner's notebook is not changed


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_stored_notebooks_and_site_copies_are_current(src):
    assert build.check(src) == []


def test_check_reports_a_stale_site_copy(tmp_path, monkeypatch):
    src = SOURCES[0]
    stale = nbformat.read(build.SITE_NOTEBOOKS / f"{src.stem}.ipynb", as_version=4)
    stale.cells[-1].source += "\n# edited"
    site = tmp_path / "site"
    site.mkdir()
    nbformat.write(stale, site / f"{src.stem}.ipynb")
    monkeypatch.setattr(build, "SITE_NOTEBOOKS", site)
    assert build.check(src) == [f"site/notebooks/{src.stem}.ipynb: cells differ from "
                                f"{src.name} (rebuild it)"]
    (site / f"{src.stem}.ipynb").unlink()
    assert build.check(src) == [f"site/notebooks/{src.stem}.ipynb: missing (rebuild {src.stem})"]
