"""Figures that fit their container and read cleanly (issue 14, items 5–6): no fixed width, the
legend below the axis labels, clean log ticks, rounded hover numbers, long titles wrapped, t-SNE maps
using their width; and relviz.pages, the stakeholder page's figure outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from relviz import plots
from relviz.evaluate import associations, column_shapes, compare_degrees, embed, frequencies


@pytest.fixture()
def figures(kit) -> dict[str, go.Figure]:
    shop, syn = kit.random_shop(seed=0), kit.random_shop(seed=1, shift=1.0)
    deg = compare_degrees(shop, syn, kit.FK)
    return {
        "degrees": plots.degree_figure(deg, log_y=True),
        "ccdf": plots.degree_figure(deg, kind="ccdf"),
        "frequency": plots.frequency_figure(frequencies(shop, syn, "sales", "kind"), title="sales.kind"),
        "scores": plots.scores_figure(column_shapes(shop, syn).details, x="Column", title="Column Shapes"),
        "associations": plots.association_figure(associations(shop, syn, table="sales")),
        "tsne": plots.embedding_figure(embed(shop, syn, table="sales", n=60, n_iter=20, early_exaggeration_iter=10,
                                             detection=False)),
    }


def test_no_fixed_width_and_the_legend_below_everything(figures: dict[str, go.Figure]) -> None:
    for name, fig in figures.items():
        lay = fig.layout
        assert lay.width is None and lay.autosize is True, name
        # the legend hangs from the figure's bottom edge, not from the plot area (rotated or long
        # tick labels and the axis title sit above it, whatever their size)
        assert (lay.legend.yref, lay.legend.y, lay.legend.yanchor) == ("container", 0, "bottom"), name
        assert lay.margin.b >= 60 and lay.xaxis.automargin is True, name


def test_tsne_map_uses_the_width(figures: dict[str, go.Figure]) -> None:
    tsne = figures["tsne"]
    assert tsne.layout.yaxis.scaleanchor is None and tsne.layout.height == 600
    assert tsne.layout.xaxis.showgrid is False and tsne.layout.xaxis.showticklabels is False


def test_clean_log_ticks() -> None:
    within = plots._log_ticks([120, 450, 900])  # under three decades: 1, 2, 5 × 10^k
    assert within["tickvals"] == [100.0, 200.0, 500.0, 1000.0]
    assert within["ticktext"] == ["100", "200", "500", "1,000"]
    wide = plots._log_ticks(np.array([0.0003, 0.02, 1.0, 0.0]))  # zero ignored; four decades: powers of ten
    assert wide["tickvals"] == pytest.approx([1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    assert wide["ticktext"] == ["0.0001", "0.001", "0.01", "0.1", "1"]
    assert plots._log_ticks([0, -1, np.nan]) == {}
    assert plots._tick_text(20000.0) == "20,000" and plots._tick_text(0.05) == "0.05"


def test_log_axes_of_the_degree_figures_have_clean_ticks(figures: dict[str, go.Figure]) -> None:
    ccdf = figures["ccdf"]
    for axis in (ccdf.layout.xaxis, ccdf.layout.yaxis):
        assert axis.type == "log" and axis.tickvals and len(axis.ticktext) == len(axis.tickvals)
        assert all("e" not in t for t in axis.ticktext)  # round numbers, no 1e-05
    deg = figures["degrees"]
    assert deg.layout.yaxis.type == "log" and deg.layout.yaxis.tickvals
    assert set(deg.layout.yaxis.ticktext) >= {"1", "10"}
    assert figures["frequency"].layout.yaxis.tickvals is None  # linear axes keep plotly's ticks


def test_hover_numbers_are_rounded(figures: dict[str, go.Figure]) -> None:
    assert all("%{y:.1%}" in t.hovertemplate for t in figures["frequency"].data)
    assert all("%{y:.3f}" in t.hovertemplate for t in figures["scores"].data)
    assert all("%{y:.2%}" in t.hovertemplate for t in figures["ccdf"].data)
    assert all("%{x" not in t.hovertemplate for t in figures["tsne"].data)  # no meaningless coordinates


def test_long_titles_wrap_before_their_numbers(figures: dict[str, go.Figure]) -> None:
    deg = figures["ccdf"]
    head, _, tail = deg.layout.title.text.partition("<br>")
    assert head.startswith("Degrees of ") and tail.startswith("(CardinalityShapeSimilarity=")
    assert deg.layout.margin.t == 105
    short = figures["frequency"]
    assert "<br>" not in short.layout.title.text and short.layout.margin.t == 80
    # the panel titles of the association heatmaps get room under the subtitle
    assert figures["associations"].layout.margin.t == 110


def test_page_figure_bundle(figures: dict[str, go.Figure]) -> None:
    pytest.importorskip("anywidget")
    from relviz import pages

    fig = figures["degrees"]
    fig.update_layout(width=1400)  # a fixed width is dropped in the bundle, not in the figure
    bundle = pages.figure_bundle(fig, height=420)
    spec = bundle["data"][pages.MIME]
    assert "width" not in spec["layout"] and spec["layout"]["autosize"] is True
    assert spec["layout"]["height"] == 420
    assert spec["config"] == {"displaylogo": False, "responsive": True}
    assert fig.layout.width == 1400
    assert bundle["data"]["text/plain"].startswith("<plotly figure: Degrees of")
    out = pages.figure_output(fig, height=420)
    assert out.figure is fig and out.outputs[0]["data"][pages.MIME]["layout"]["height"] == 420
    assert {"relviz-page-figure", "relviz-page-figure-h420"} <= set(out._dom_classes)
    assert out.layout.width == "100%"
    fit = pages.FitToPage()
    assert fit.ready is False and "ResizeObserver" in fit._esm and 'new Event("resize")' in fit._esm


def test_pandas_frames_as_log_values() -> None:
    assert plots._log_ticks(pd.Series([1, 5, 50]))["tickvals"] == [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
