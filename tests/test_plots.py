"""Figures of relviz.plots: expected traces, colours, fixed axes and the curator-view label."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from relviz import plots
from relviz.evaluate import (
    associations,
    column_shapes,
    compare_degrees,
    cross_table_error,
    embed,
    frequencies,
)


def _labelled(fig: go.Figure) -> None:
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.subtitle.text == plots.CURATOR_VIEW == "curator view (not private)"


def test_colours_are_dark_and_accent() -> None:
    assert plots.SOURCE_COLORS == {"Real": plots.REAL_COLOR, "Synthetic": plots.SYNTHETIC_COLOR}
    assert plots.REAL_COLOR != plots.SYNTHETIC_COLOR


def test_degree_figures(kit) -> None:
    c = compare_degrees(kit.shop(), kit.shop(), kit.FK)
    fig = plots.degree_figure(c, log_y=True)
    _labelled(fig)
    assert [t.name for t in fig.data] == ["Real", "Synthetic"]
    assert fig.data[0].marker.color == plots.REAL_COLOR and fig.data[1].marker.color == plots.SYNTHETIC_COLOR
    assert list(fig.data[0].x) == [0, 2, 3] and list(fig.data[0].y) == [1, 1, 2]
    assert fig.layout.yaxis.type == "log"
    assert "CardinalityShapeSimilarity=1.000" in fig.layout.title.text
    ccdf = plots.degree_figure(c, kind="ccdf")
    _labelled(ccdf)
    assert ccdf.layout.xaxis.type == "log" and ccdf.layout.yaxis.type == "log"
    assert list(ccdf.data[0].x) == [2, 3]  # degree 0 cannot sit on a log axis
    binned = plots.degree_figure(c, kind="binned")
    assert list(binned.data[1].x) == ["0", "1", "2–3"] and binned.layout.xaxis.type == "category"
    assert "zero-degree parents 25.0% real" in binned.layout.title.text
    with pytest.raises(ValueError):
        plots.degree_figure(c, kind="pie")


def test_frequency_figure(kit) -> None:
    syn = kit.with_sales(kind=["a", "a", "a", "a", "b", "b", "c", "c"])
    fig = plots.frequency_figure(frequencies(kit.shop(), syn, "sales", "kind"), title="sales.kind")
    _labelled(fig)
    assert [t.name for t in fig.data] == ["Real", "Synthetic"]
    assert list(fig.data[0].x) == ["a", "b", "c", "(null)"]
    assert "TVD=0.125" in fig.layout.title.text


def test_association_figure(kit) -> None:
    fig = plots.association_figure(associations(kit.shop(), kit.shop(), fk=kit.FK))
    _labelled(fig)
    assert [t.name for t in fig.data] == ["Real", "Synthetic", "Difference"]
    assert all(isinstance(t, go.Heatmap) for t in fig.data)
    assert fig.data[0].zmin == -1 and fig.data[0].zmax == 1


def test_scores_figure_fixed_axis(kit) -> None:
    d = column_shapes(kit.shop(), kit.shop()).details
    fig = plots.scores_figure(d, x="Column", title="Column Shapes")
    _labelled(fig)
    assert tuple(fig.layout.yaxis.range) == (0, 1)
    assert fig.layout.title.text == "Column Shapes (Average Score=1.000)"
    assert {t.name for t in fig.data} == {"TVComplement", "KSComplement"}


def test_cross_table_figure(kit) -> None:
    db = kit.random_shop()
    e = cross_table_error(db, kit.random_shop(seed=3), kit.FK)
    fig = plots.cross_table_figure(e)
    _labelled(fig)
    assert len(fig.data[0].y) == e.n_workloads == 4
    assert list(fig.data[0].y) == sorted(fig.data[0].y, reverse=True)
    assert "average" in fig.layout.title.text and "max" in fig.layout.title.text
    hist = plots.cross_table_figure(e, kind="histogram")
    assert isinstance(hist.data[0], go.Histogram)


def test_embedding_figure(kit) -> None:
    real = kit.random_shop()
    emb = embed(real, real, table="sales", n=100, n_iter=30, early_exaggeration_iter=20, detection=False)
    fig = plots.embedding_figure(emb)
    _labelled(fig)
    assert [t.name for t in fig.data] == ["Real", "Synthetic"]
    assert "100 real + 100 synthetic rows" in fig.layout.title.text
    by_kind = plots.embedding_figure(emb, color="kind")
    _labelled(by_kind)
    assert len(by_kind.data) >= 2
    with pytest.raises(ValueError):
        plots.embedding_figure(emb, color="nope")


@pytest.fixture()
def theme_reset():
    yield
    plots.set_theme("auto")
    plots._set_page_theme(None)


def test_themes_light_dark_auto(kit, theme_reset) -> None:
    c = compare_degrees(kit.shop(), kit.shop(), kit.FK)
    # "auto" with the page's theme unknown: the light look on a transparent background
    fig = plots.degree_figure(c)
    assert plots.get_theme() == "auto" and plots.resolved_theme() == "auto"
    assert fig.layout.template.layout.font.color == "#2a3f5f"  # plotly_white
    assert fig.layout.paper_bgcolor == fig.layout.plot_bgcolor == plots.TRANSPARENT
    assert fig.layout.xaxis.gridcolor == plots.GRID_GREY and fig.data[0].marker.color == plots.REAL_COLOR
    # "dark": plotly's dark template, transparent, real data light; reversible
    plots.apply_theme(fig, "dark")
    assert fig.layout.template.layout.font.color == "#f2f5fa" and fig.layout.paper_bgcolor == plots.TRANSPARENT
    assert fig.data[0].marker.color == plots.REAL_COLOR_DARK and fig.data[1].marker.color == plots.SYNTHETIC_COLOR
    plots.apply_theme(fig, "light")  # the original look: white template, no colours of its own
    assert fig.layout.paper_bgcolor is None and fig.layout.plot_bgcolor is None
    assert fig.layout.xaxis.gridcolor is None and fig.data[0].marker.color == plots.REAL_COLOR
    assert fig.layout.template.layout.paper_bgcolor == "white"
    # set_theme applies to new figures; "auto" follows the page's theme once a panel reported it
    plots.set_theme("dark")
    assert plots.degree_figure(c).data[0].marker.color == plots.REAL_COLOR_DARK
    plots.set_theme("auto")
    plots._set_page_theme("dark")
    assert plots.resolved_theme() == "dark" and plots.resolved_theme("light") == "light"
    with pytest.raises(ValueError):
        plots.set_theme("sepia")  # type: ignore[arg-type]
