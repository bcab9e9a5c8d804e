"""plotly figures from ``relviz.evaluate``'s tidy frames (figures are returned, never shown).

Plot grammar (after SDV's and SDMetrics' plots): real data dark (:data:`REAL_COLOR`), synthetic data in
the accent colour (:data:`SYNTHETIC_COLOR`), legend "Real"/"Synthetic"; score charts on a fixed
[0, 1] axis with the average in the title. Every figure here is computed from real data, so every
figure carries the subtitle :data:`CURATOR_VIEW` ("curator view (not private)", defined in
:mod:`relviz.privacy.measure`): it is outside the DP guarantee and for the data curator only.

Themes (JupyterLab's light and dark themes): every figure goes through :func:`apply_theme`, which
follows :func:`set_theme` — ``"light"`` (plotly's white template, the original look), ``"dark"``
(plotly's dark template on a transparent background; real data drawn light, :data:`REAL_COLOR_DARK`)
or ``"auto"`` (the default). Python cannot see the page's theme, so ``"auto"`` is the light look on a
transparent background with mid-grey gridlines, until a relviz panel (the Studio, the compare panel
or a stakeholder page's :class:`~relviz.pages.FitToPage`) has reported the page's theme from the
browser: from then on ``"auto"`` means that theme, and the panels restyle their figures when the
theme changes. In a plain notebook in the dark theme, call ``relviz.plots.set_theme("dark")``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from relviz.privacy.measure import CURATOR_VIEW

if TYPE_CHECKING:  # pragma: no cover
    from relviz.evaluate.correlation import AssociationComparison
    from relviz.evaluate.crosstable import CrossTableError
    from relviz.evaluate.degree import DegreeComparison
    from relviz.evaluate.embedding import Embedding

__all__ = [
    "CURATOR_VIEW",
    "REAL_COLOR",
    "SOURCE_COLORS",
    "SYNTHETIC_COLOR",
    "REAL_COLOR_DARK",
    "apply_theme",
    "association_figure",
    "cross_table_figure",
    "degree_figure",
    "embedding_figure",
    "frequency_figure",
    "get_theme",
    "resolved_theme",
    "scores_figure",
    "set_theme",
]

REAL_COLOR = "#1f2937"  # slate-800: real data
SYNTHETIC_COLOR = "#0ea5a4"  # teal accent: synthetic data
SOURCE_COLORS = {"Real": REAL_COLOR, "Synthetic": SYNTHETIC_COLOR}
METRIC_COLORS = {"KSComplement": REAL_COLOR, "TVComplement": "#64748b",
                 "CorrelationSimilarity": REAL_COLOR, "ContingencySimilarity": "#64748b",
                 "CardinalityShapeSimilarity": REAL_COLOR}
_FONT = {"family": "Inter, Helvetica, Arial, sans-serif", "size": 13}

# -- themes ------------------------------------------------------------------------------------------
Theme = Literal["auto", "light", "dark"]
THEMES = ("auto", "light", "dark")
REAL_COLOR_DARK = "#e2e8f0"  # slate-200: real data on a dark page
TRANSPARENT = "rgba(0,0,0,0)"
GRID_GREY = "rgba(128,128,128,0.2)"  # reads on white and on black
_DARK_COLORS = {REAL_COLOR: REAL_COLOR_DARK}
_state: dict[str, str | None] = {"theme": "auto", "page": None}


def set_theme(theme: Theme) -> None:
    """Theme of the figures made (and restyled by the panels) from now on.

    Args:
        theme: ``"light"``, ``"dark"`` or ``"auto"`` (default: the page's theme once a relviz panel
            has reported it from the browser, else the light look on a transparent background).

    Raises:
        ValueError: for another value.
    """
    if theme not in THEMES:
        raise ValueError(f"theme must be one of {THEMES}, not {theme!r}")
    _state["theme"] = theme


def get_theme() -> str:
    """The theme set with :func:`set_theme` (``"auto"`` by default)."""
    return str(_state["theme"])


def _set_page_theme(theme: str | None) -> None:
    """The page's theme as a relviz panel saw it in the browser (``"light"``/``"dark"``)."""
    _state["page"] = theme if theme in ("light", "dark") else None


def resolved_theme(theme: str | None = None) -> str:
    """``theme`` (default: :func:`get_theme`) with ``"auto"`` replaced by the page's theme when known."""
    t = theme or get_theme()
    if t not in THEMES:
        raise ValueError(f"theme must be one of {THEMES}, not {t!r}")
    return (_state["page"] or "auto") if t == "auto" else t


def _swap_colors(fig: go.Figure, mapping: dict[str, str]) -> None:
    """Replace the trace and shape colours named in ``mapping`` (case-insensitive)."""
    low = {k.lower(): v for k, v in mapping.items()}

    def swap(obj: object, prop: str) -> None:
        try:
            c = getattr(obj, prop)
        except AttributeError:
            return
        if isinstance(c, str) and c.lower() in low:
            setattr(obj, prop, low[c.lower()])

    for t in fig.data:
        for part in ("marker", "line"):
            if part in t:
                swap(getattr(t, part), "color")
    for shape in fig.layout.shapes or ():
        swap(shape.line, "color")


def apply_theme(fig: go.Figure, theme: str | None = None) -> go.Figure:
    """Style ``fig`` (in place) for a theme; returns it.

    ``"light"`` is plotly's white template (relviz's original look); ``"dark"`` plotly's dark
    template on a transparent background, real data in :data:`REAL_COLOR_DARK`; ``"auto"`` with the
    page's theme unknown (see :func:`resolved_theme`) the white template on a transparent background
    with mid-grey gridlines. Sizes, margins, fonts' family and size are never changed, and a figure
    can be restyled any number of times.

    Args:
        fig: A plotly figure.
        theme: ``"light"``, ``"dark"``, ``"auto"``; ``None``: :func:`get_theme`.
    """
    t = resolved_theme(theme)
    dark = t == "dark"
    fig.layout.template = "plotly_dark" if dark else "plotly_white"
    clear = t == "light"
    fig.layout.paper_bgcolor = None if clear else TRANSPARENT
    fig.layout.plot_bgcolor = None if clear else TRANSPARENT
    grid = GRID_GREY if t == "auto" else None
    fig.update_xaxes(gridcolor=grid, zerolinecolor=grid)
    fig.update_yaxes(gridcolor=grid, zerolinecolor=grid)
    _swap_colors(fig, _DARK_COLORS if dark else {v: k for k, v in _DARK_COLORS.items()})
    return fig


def _finish(fig: go.Figure, title: str, *, height: int | None = None) -> go.Figure:
    """Title, curator-view subtitle, the theme's template (:func:`apply_theme`), legend at the bottom.

    Sizing: no width (the figure takes its container's width; ``autosize``); a title longer than
    60 characters breaks before its first parenthesis (the numbers); the legend sits at
    the bottom edge of the figure (``yref="container"``), below the axis titles and tick labels
    however long or rotated they are, and the axes' automatic margins make room for the labels.
    """
    top = 80
    if len(title) > 60 and " (" in title:  # a long title wraps before its numbers, not off the edge
        head, _, rest = title.partition(" (")
        title, top = f"{head}<br>({rest}", 105
    fig.update_layout(
        title={"text": title, "subtitle": {"text": CURATOR_VIEW}, "x": 0.0, "xanchor": "left"},
        font=_FONT, autosize=True,
        legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": 0.0, "yanchor": "bottom",
                "yref": "container"},
        margin={"t": top, "l": 60, "r": 30, "b": 70},
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    if height:
        fig.update_layout(height=height)
    return apply_theme(fig)


def _tick_text(t: float) -> str:
    """A round tick label: ``1,000``, ``20``, ``0.05``, ``0.001``."""
    if t >= 1:
        return f"{t:,.0f}"
    return f"{t:.{max(0, -math.floor(math.log10(t) + 1e-9))}f}"


def _log_ticks(values: object) -> dict[str, object]:
    """Clean ticks for a log axis over ``values``: 1, 2, 5 × 10^k when the data span at most three
    decades, powers of ten otherwise, labelled as round numbers (plotly's own log ticks label the
    digits 2–9 of every decade, unreadable in small figures). ``{}`` without a positive value."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size:
        return {}
    lo, hi = math.floor(math.log10(v.min()) + 1e-9), math.ceil(math.log10(v.max()) - 1e-9)
    steps = (1, 2, 5) if hi - lo <= 3 else (1,)
    ticks = [m * 10.0**k for k in range(lo, hi + 1) for m in steps if m * 10.0**k <= 10.0**hi * (1 + 1e-9)]
    return {"tickvals": ticks, "ticktext": [_tick_text(t) for t in ticks], "minor": {"showgrid": False}}


def _fmt(x: float, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100 * x:.1f}%" if pct else f"{x:.3f}"


def degree_figure(comparison: DegreeComparison, *, kind: Literal["auto", "bar", "binned", "ccdf"] = "auto",
                  log_y: bool = False, max_degree: int | None = None) -> go.Figure:
    """Degree distribution of one FK, real vs synthetic (docs/evaluation.md §3).

    Args:
        comparison: From :func:`relviz.evaluate.compare_degrees`.
        kind: ``"bar"`` — parents per degree, one group of bars per observed degree;
            ``"binned"`` — parents per doubling bin (``0, 1, 2–3, 4–7, …``) for heavy tails;
            ``"ccdf"`` — ``P(degree ≥ x)`` on log–log axes (degree 0 is left out of a log axis);
            ``"auto"`` — ``"bar"`` when no degree exceeds 60, else ``"binned"``.
        log_y: Log count axis for the bar charts.
        max_degree: Show degrees up to this value only (``kind="bar"``).

    Returns:
        Figure with two traces named ``Real`` and ``Synthetic``; the similarity and the share of
        zero-degree parents are in the title.

    Raises:
        ValueError: for an unknown ``kind``.
    """
    zr = float(np.mean(comparison.real == 0)) if len(comparison.real) else math.nan
    zs = float(np.mean(comparison.synthetic == 0)) if len(comparison.synthetic) else math.nan
    title = (f"Degrees of {comparison.label} (CardinalityShapeSimilarity={_fmt(comparison.score)}; "
             f"zero-degree parents {_fmt(zr, True)} real, {_fmt(zs, True)} synthetic)")
    if kind == "auto":
        top = max(np.max(comparison.real, initial=0), np.max(comparison.synthetic, initial=0))
        kind = "bar" if top <= 60 else "binned"
    fig = go.Figure()
    if kind == "ccdf":
        data = comparison.ccdf()
        data = data[data["Degree"] > 0]
        for source, part in data.groupby("Source", sort=False):
            fig.add_trace(go.Scatter(x=part["Degree"], y=part["CCDF"], name=str(source), mode="lines+markers",
                                     line={"color": SOURCE_COLORS[str(source)], "shape": "hv"},
                                     marker={"size": 4}, hovertemplate="degree ≥ %{x:,}: %{y:.2%} of parents"
                                     "<extra>%{fullData.name}</extra>"))
        fig.update_xaxes(type="log", title="degree (children per parent)", **_log_ticks(data["Degree"]))
        fig.update_yaxes(type="log", title="share of parents with degree ≥ x", **_log_ticks(data["CCDF"]))
    elif kind in ("bar", "binned"):
        if kind == "bar":
            data = comparison.frame()
            if max_degree is not None:
                data = data[data["Degree"] <= max_degree]
            x_col, x_title = "Degree", "degree (children per parent)"
        else:
            data = comparison.binned_frame()
            x_col, x_title = "Bin", "degree (children per parent), doubling bins"
        for source, part in data.groupby("Source", sort=False):
            fig.add_trace(go.Bar(x=part[x_col], y=part["Parents"], name=str(source),
                                 marker_color=SOURCE_COLORS[str(source)],
                                 customdata=part["Share"], hovertemplate="degree %{x}: %{y:,} parents "
                                 "(%{customdata:.1%})<extra>%{fullData.name}</extra>"))
        fig.update_layout(barmode="group", bargap=0.1)
        fig.update_xaxes(title=x_title, type="category" if kind == "binned" else "-")
        fig.update_yaxes(title="parents", type="log" if log_y else "linear",
                         **(_log_ticks(data["Parents"]) if log_y else {}))
    else:
        raise ValueError("kind must be 'auto', 'bar', 'binned' or 'ccdf'")
    return _finish(fig, title)


def frequency_figure(frequencies: pd.DataFrame, *, title: str | None = None,
                     measure: Literal["Share", "Count"] = "Share") -> go.Figure:
    """1-way marginal of one attribute, real vs synthetic bars on its public domain.

    Args:
        frequencies: From :func:`relviz.evaluate.frequencies` (``Source, Code, Value, Count, Share``).
        title: Figure title (the TVD is appended).
        measure: Bar height: share of rows (default) or counts.

    Returns:
        Figure with traces ``Real`` and ``Synthetic``.
    """
    r = frequencies[frequencies["Source"] == "Real"].sort_values("Code")
    s = frequencies[frequencies["Source"] == "Synthetic"].sort_values("Code")
    tvd = 0.5 * float(np.abs(r["Share"].to_numpy() - s["Share"].to_numpy()).sum()) if len(r) == len(s) else math.nan
    fig = go.Figure()
    hover = "%{x}: %{y:.1%}" if measure == "Share" else "%{x}: %{y:,} rows"
    for source, part in (("Real", r), ("Synthetic", s)):
        fig.add_trace(go.Bar(x=part["Value"].astype(str), y=part[measure], name=source,
                             marker_color=SOURCE_COLORS[source],
                             hovertemplate=hover + "<extra>%{fullData.name}</extra>"))
    fig.update_layout(barmode="group", bargap=0.15)
    fig.update_xaxes(type="category", title="value (public domain)")
    fig.update_yaxes(title="share of rows" if measure == "Share" else "rows",
                     tickformat=".0%" if measure == "Share" else None)
    return _finish(fig, f"{title or '1-way marginal'} (TVD={_fmt(tvd)})")


def association_figure(comparison: AssociationComparison) -> go.Figure:
    """Association heatmaps side by side: real, synthetic, synthetic − real.

    Cells are Pearson r (numeric–numeric), Cramér's V (categorical–categorical) or the correlation
    ratio η (numeric–categorical); one diverging colour scale on [−1, 1] for all three panels.

    Returns:
        Figure with three ``Heatmap`` traces named ``Real``, ``Synthetic``, ``Difference``.
    """
    labels = list(comparison.real.index)
    measures = comparison.measures.to_numpy()
    panels = (("Real", comparison.real), ("Synthetic", comparison.synthetic), ("Difference", comparison.difference))
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.04, shared_yaxes=True,
                        subplot_titles=[f"Real (n={comparison.n_real:,})", f"Synthetic (n={comparison.n_synthetic:,})",
                                        "Synthetic − Real"])
    for i, (name, m) in enumerate(panels, start=1):
        fig.add_trace(go.Heatmap(z=m.to_numpy(dtype=float).round(3), x=labels, y=labels, name=name,
                                 customdata=measures, zmin=-1, zmax=1, colorscale="RdBu_r", zmid=0,
                                 showscale=i == 3, colorbar={"len": 0.8},
                                 hovertemplate="%{y} × %{x}<br>%{customdata}: %{z}<extra>" + name + "</extra>"),
                      row=1, col=i)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=45)
    size = max(420, 22 * len(labels) + 230)
    fig = _finish(fig, f"Associations: {comparison.title}", height=size)
    fig.update_layout(margin_t=fig.layout.margin.t + 30)  # panel titles below the subtitle, not on it
    return fig


def embedding_figure(embedding: Embedding, *, color: str = "Source", marker_size: int = 4) -> go.Figure:
    """t-SNE scatter of real and synthetic rows, coloured by source or by an attribute.

    Args:
        embedding: From :func:`relviz.evaluate.embed`.
        color: ``"Source"`` or one of ``embedding.attributes`` (then the symbol shows the source).
        marker_size: Marker size in pixels.

    Returns:
        Figure; the sample sizes and the detection score are in the title.

    Raises:
        ValueError: for an unknown ``color`` column.
    """
    f = embedding.frame
    title = (f"t-SNE of {embedding.title}: {embedding.n_real:,} real + {embedding.n_synthetic:,} synthetic rows "
             f"(detection score={_fmt(embedding.detection_score)})")
    if color == "Source":
        fig = go.Figure()
        for source in ("Real", "Synthetic"):
            part = f[f["Source"] == source]
            fig.add_trace(go.Scattergl(x=part["x"], y=part["y"], mode="markers", name=source,
                                       marker={"color": SOURCE_COLORS[source], "size": marker_size,
                                               "opacity": 0.6}, hovertemplate="%{fullData.name} row<extra></extra>"))
    elif color in embedding.attributes:
        fig = px.scatter(f, x="x", y="y", color=color, symbol="Source", render_mode="webgl",
                         symbol_map={"Real": "circle", "Synthetic": "x"}, opacity=0.6)
        fig.update_traces(marker={"size": marker_size})
    else:
        raise ValueError(f"unknown colour column {color!r}; use 'Source' or one of {embedding.attributes}")
    # no fixed aspect ratio: a t-SNE map's axes have no units, and the map uses the figure's width
    fig.update_xaxes(showticklabels=False, title="", showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, title="", showgrid=False, zeroline=False)
    return _finish(fig, title, height=600)


def scores_figure(details: pd.DataFrame, *, x: str, title: str, y: str = "Score",
                  color: str | None = "Metric") -> go.Figure:
    """Bar chart of scores on a fixed [0, 1] axis, the average in the title (SDMetrics style).

    Args:
        details: A property's details frame.
        x: Column naming the items (e.g. ``"Column"``, ``"Foreign Key"``).
        title: Property name; ``(Average Score=…)`` is appended.
        y: Score column.
        color: Column to colour by (``None`` for one colour).

    Returns:
        Figure with one bar trace per colour group.
    """
    data = details.dropna(subset=[y])
    avg = float(data[y].mean()) if len(data) else math.nan
    fig = go.Figure()
    groups = data.groupby(color, sort=False) if color and color in data else [("Score", data)]
    for name, part in groups:
        fig.add_trace(go.Bar(x=part[x].astype(str), y=part[y], name=str(name),
                             marker_color=METRIC_COLORS.get(str(name), REAL_COLOR),
                             hovertemplate="%{x}: %{y:.3f}<extra>%{fullData.name}</extra>"))
    fig.update_yaxes(range=[0, 1], title=y)
    fig.update_xaxes(categoryorder="total ascending", tickangle=45)
    return _finish(fig, f"{title} (Average Score={_fmt(avg)})")


def cross_table_figure(error: CrossTableError, *, kind: Literal["bars", "histogram"] = "bars",
                       top: int | None = None) -> go.Figure:
    """Per-workload 3-way cross-table error of one relation (docs/evaluation.md §7.1).

    Args:
        error: From :func:`relviz.evaluate.cross_table_error`.
        kind: ``"bars"`` — workloads sorted by error, largest first; ``"histogram"`` of errors.
        top: Show only the ``top`` worst workloads (bars).

    Returns:
        Figure (errors in percent, L1 = 2·TV); average and max in the title.
    """
    title = (f"{error.k}-way cross-table error: {error.name} "
             f"(average {_fmt(error.average, True)}, max {_fmt(error.maximum, True)}, "
             f"{error.n_workloads} workloads)")
    data = error.per_workload.sort_values("Error", ascending=False)
    if top is not None:
        data = data.head(top)
    fig = go.Figure()
    if kind == "bars":
        fig.add_trace(go.Bar(x=np.arange(1, len(data) + 1), y=100 * data["Error"].to_numpy(dtype=float),
                             name="Error", marker_color=SYNTHETIC_COLOR, customdata=data["Workload"],
                             hovertemplate="%{customdata}<br>%{y:.2f}%<extra></extra>"))
        fig.update_xaxes(title="workload (sorted by error)")
        fig.update_yaxes(title="L1 error (%)")
    elif kind == "histogram":
        fig.add_trace(go.Histogram(x=100 * data["Error"].to_numpy(dtype=float), name="Error",
                                   marker_color=SYNTHETIC_COLOR, nbinsx=40))
        fig.update_xaxes(title="L1 error (%)")
        fig.update_yaxes(title="workloads")
    else:
        raise ValueError("kind must be 'bars' or 'histogram'")
    if not math.isnan(error.average) and kind == "bars":
        fig.add_hline(y=error.average_pct, line_dash="dash", line_color=REAL_COLOR, annotation_text="average")
    elif not math.isnan(error.average):
        fig.add_vline(x=error.average_pct, line_dash="dash", line_color=REAL_COLOR, annotation_text="average")
    return _finish(fig, title)
