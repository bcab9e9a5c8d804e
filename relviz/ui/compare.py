"""The compare panel: tabs of interactive plotly figures over :class:`~relviz.comparison.Comparison`.

Every tab reads the real data and says so: **curator view (not private)** (and every figure
carries it as its subtitle). Real data are dark, synthetic data in the accent colour.

* **Degrees** — per FK, children per parent, real vs synthetic, as bars, doubling bins or a CCDF,
  optionally on a log scale, with CardinalityShapeSimilarity and the degree statistics.
* **Correlations** — real, synthetic and difference heatmaps (Pearson, Cramér's V, correlation
  ratio η as fits the types) for one table or across a chosen parent–child join.
* **t-SNE** — openTSNE map of a sample of rows (one table, or a parent–child join), real and
  synthetic in one map, coloured by source or by a chosen attribute; the sample size is shown and
  selectable (2,000 rows per side by default, docs/evaluation.md §8), progress is shown while the
  map is computed, and each (selection, size) is computed once (re-colouring is free).
* **Marginals** — 1-way bars per attribute, with each attribute's TVD.
* **Scores** — the quality report's properties, relviz's cross-table errors per FK, and the
  single-table benchmark's measures per synthesised table (fidelity error, query error, ML
  efficacy; Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data
  Synthesis", §8.3; :meth:`~relviz.comparison.Comparison.single_table`, docs/evaluation.md §7.3).

The banner names the run the synthetic data come from (:class:`RunOrigin`: attempt, ε, δ,
methods) and says when degree caps removed real rows before synthesis (e.g. "ratings: 41 % of the
rows removed by τ = 300"), since a comparison then partly shows the caps, not the noise. After a
plan or schema edit the Studio marks the comparison **stale** (:meth:`ComparePanel.mark_stale`):
it stays readable, under a warning naming the plan it came from. Scores use plain words ("degree
similarity", with the KS statistic in the tooltip), and the Scores tab says where relviz's
all-pairs average of a pair property differs from SDMetrics' (strongly associated pairs only).

Figures are shown through ``ipywidgets.Output`` widgets holding plotly's MIME bundle
(``application/vnd.plotly.v1+json``, rendered by plotly's JupyterLab extension, also under Voila):
the figures are fully interactive (zoom, pan, hover, legend toggles, PNG export) while plotly.js
is loaded once per page. Heavy work runs in background threads, one per tab, each computing only
the latest request; results land in the outputs from those threads. The figures follow JupyterLab's
light or dark theme: an invisible :class:`~relviz.ui.theme.ThemeProbe` tells Python the page's
theme, and every figure shown is styled with :func:`relviz.plots.apply_theme` (restyled when the
theme changes).
"""

from __future__ import annotations

import html
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import numpy as np

from relviz.comparison import (
    SINGLE_TABLE_IN_SAMPLE_NOTE,
    SINGLE_TABLE_MAX_QUERY_ROWS,
    SINGLE_TABLE_MAX_ROWS,
    Comparison,
)
from relviz.database import Database
from relviz.privacy.measure import CURATOR_VIEW
from relviz.ui._errors import error_html, guarded, log
from relviz.ui.theme import ThemeProbe

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from relviz.plan import Plan
    from relviz.run import Run

__all__ = ["ComparePanel", "FigureOutput", "RunOrigin", "cap_notes", "figure_bundle"]

DEGREE_SIMILARITY_TIP = ("degree similarity = 1 − the Kolmogorov–Smirnov (KS) statistic between the real and "
                         "the synthetic degree distributions (children per parent; SDMetrics' "
                         "CardinalityShapeSimilarity): 1 means the same shape, 0 completely different")
"""The tooltip of every "degree similarity" label."""


def cap_notes(real: Database, cap_report: Any) -> tuple[str, ...]:
    """Plain-words lines for every degree cap that removed real rows before synthesis (curator
    view: counts of private rows), e.g. ``"ratings: 41,234 of 100,836 rows (41%) removed by the
    cap τ = 300 on ratings.userId → users"``.

    Args:
        real: The real database the run read (before the caps).
        cap_report: The run's :class:`~relviz.privacy.measure.CapReport` (``synth.cap_report_``).
    """
    rows = getattr(cap_report, "rows", None)
    if rows is None or not len(rows):
        return ()
    out = []
    for r in rows.to_dict(orient="records"):
        removed = int(r["rows_removed"])
        if removed <= 0:
            continue
        try:
            fk = real.schema.foreign_key(r["fk"])
            label = fk.label()
            table = fk.child if "children" in str(r["action"]) else fk.parent
        except KeyError:
            label, table = str(r["fk"]), ""
        n = len(real[table]) if table and table in real else 0
        share = f" ({removed / n:.0%})" if n else ""
        what = f"{table}: {removed:,} of {n:,} rows{share}" if n else f"{removed:,} rows"
        out.append(f"{what} removed by the cap τ = {int(r['cap'])} on {label} ({r['action']})")
    return tuple(out)


@dataclass(frozen=True)
class RunOrigin:
    """Where a synthetic database comes from: the run attempt and its plan (what the Compare
    tab labels its results with, and what makes them stale when the plan changes).

    Attributes:
        attempt: The run attempt's number (``None`` when not from a run).
        epsilon, delta: The plan's budget.
        methods: ``((component, method), ...)`` of the plan.
        caps: :func:`cap_notes` of the run (rows the degree caps removed).
    """

    attempt: int | None
    epsilon: float
    delta: float
    methods: tuple[tuple[str, str], ...] = ()
    caps: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: Plan, attempt: int | None = None, caps: tuple[str, ...] = ()) -> RunOrigin:
        return cls(attempt, plan.epsilon, plan.delta, tuple((c.name, c.method) for c in plan.components),
                   tuple(caps))

    @classmethod
    def from_run(cls, run: Run) -> RunOrigin:
        """The origin of ``run.result``: its latest attempt, its plan and its cap report."""
        synth = run.synthesizer
        plan = getattr(synth, "plan_", None) or run.plan
        report = getattr(synth, "cap_report_", None)
        attempt = run.attempts[-1].number if run.attempts else None
        return cls.of(plan, attempt, cap_notes(run.db, report) if report is not None else ())

    def label(self) -> str:
        """``"run #2 · ε = 1, δ = 1e-06 · mst, degree"``."""
        head = f"run #{self.attempt}" if self.attempt is not None else "synthetic data"
        methods = ", ".join(sorted({m for _, m in self.methods}))
        return f"{head} · ε = {self.epsilon:g}, δ = {self.delta:g}" + (f" · {methods}" if methods else "")

TABS = ("Degrees", "Correlations", "t-SNE", "Marginals", "Scores")
_SMALL = "font-size:12px;line-height:1.4"
_GREY = "color:var(--jp-ui-font-color2, #616161)"
# not plotly's "responsive": inside JupyterLab it sizes the plot to 100 % of an output area whose
# height comes from the plot itself, so a figure hidden with its tab (Studio or Compare tabs)
# came back 0 px high; the renderer follows the output area's width on every Lumino resize anyway
_PLOT_CONFIG = {"displaylogo": False, "responsive": False}
_HELP = ("<span style='display:inline-block;width:13px;height:13px;line-height:13px;border-radius:50%;"
         "border:1px solid currentColor;text-align:center;font-size:10px;font-weight:600;cursor:help;"
         "color:var(--jp-ui-font-color2, #616161)'>?</span>")


def figure_bundle(fig: go.Figure) -> dict[str, Any]:
    """The display-data output of a plotly figure (plotly's MIME type, JSON-safe)."""
    import plotly.io as pio

    spec = json.loads(pio.to_json(fig, validate=False))
    spec["config"] = dict(_PLOT_CONFIG)
    title = ""
    try:
        title = fig.layout.title.text or ""
    except AttributeError:  # pragma: no cover - a figure without a layout
        pass
    return {"output_type": "display_data", "metadata": {},
            "data": {"application/vnd.plotly.v1+json": spec, "text/plain": f"<plotly figure: {title}>"}}


class FigureOutput(W.Output):
    """An output area that shows one plotly figure; safe to update from any thread."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("relviz-figure")
        self.figure: go.Figure | None = None

    def show(self, fig: go.Figure) -> None:
        """Show ``fig``, styled (in place) for the current theme (:func:`relviz.plots.apply_theme`)."""
        from relviz.plots import apply_theme

        self.figure = apply_theme(fig)
        self.outputs = (figure_bundle(fig),)

    def restyle(self) -> None:
        """Show the figure again in the current theme (after the page's theme changed)."""
        if self.figure is not None:
            self.show(self.figure)

    def clear(self) -> None:
        self.figure = None
        self.outputs = ()


class _Superseded(Exception):
    """Raised inside a computation when a newer request for the same tab arrived."""


class _Lane:
    """Runs the latest submitted task in a background thread (older pending ones are dropped).

    The thread exists only while there is work; nothing polls.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._pending: Callable[[], None] | None = None
        self._busy = False

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            self._pending = task
            if self._busy:
                return
            self._busy = True
        threading.Thread(target=self._loop, name=f"relviz-compare-{self.name}", daemon=True).start()

    @property
    def superseded(self) -> bool:
        """Whether a newer task waits (a running task may stop early)."""
        return self._pending is not None

    @property
    def busy(self) -> bool:
        return self._busy

    def _loop(self) -> None:
        while True:
            with self._lock:
                task, self._pending = self._pending, None
                if task is None:
                    self._busy = False
                    return
            try:
                task()
            except _Superseded:
                pass


class ComparePanel(W.VBox):
    """Compare a synthetic database with the real one, in tabs of interactive figures.

    Args:
        real: The real database.
        synthetic: The synthetic database (``None``: the panel waits for :meth:`set_data`).
        tsne_n: Rows per side of the t-SNE sample (default 2,000; small values for quick looks).
        random_state: Seed of the t-SNE samples and map.
        n_jobs: openTSNE threads.
        comparison: An existing :class:`~relviz.comparison.Comparison` to show (its cache is reused).
        origin: The run the synthetic data come from (:class:`RunOrigin`; shown in the banner).

    Attributes:
        comparison: The :class:`~relviz.comparison.Comparison` shown (``None`` before data).
        origin: Its :class:`RunOrigin` (``None`` when not given).
        stale_reason: What changed since its run (``None``: current), see :meth:`mark_stale`.
        tabs: The ``ipywidgets.Tab``.
    """

    def __init__(self, real: Database | None = None, synthetic: Database | None = None, *, tsne_n: int = 2000,
                 random_state: int = 0, n_jobs: int = 1, comparison: Comparison | None = None,
                 origin: RunOrigin | None = None, **kwargs: Any) -> None:
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.comparison: Comparison | None = None
        self.origin: RunOrigin | None = None
        self.stale_reason: str | None = None
        self._gen = 0
        self._dirty = set(range(len(TABS)))
        self._lanes = {name: _Lane(name) for name in TABS}
        self._updating = False
        self._build(int(tsne_n))
        self._theme = ThemeProbe(on_change=self._on_theme)
        super().__init__(children=[self._banner, self.tabs, self._theme], **kwargs)
        self.add_class("relviz-cp")
        if comparison is not None:
            self.set_comparison(comparison, origin=origin)
        elif real is not None and synthetic is not None:
            self.set_data(real, synthetic, origin=origin)
        else:
            self._banner.value = self._banner_html(None)

    # -- construction ----------------------------------------------------------------------------
    def _build(self, tsne_n: int) -> None:
        self._banner = W.HTML()
        self._banner.add_class("relviz-cp-banner")
        lay = W.Layout(width="auto", min_width="220px")
        dd_style = {"description_width": "initial"}

        # Degrees
        self._deg_fk = W.Dropdown(description="foreign key", layout=lay, style=dd_style)
        self._deg_kind = W.ToggleButtons(options=[("auto", "auto"), ("bars", "bar"), ("doubling bins", "binned"),
                                                  ("CCDF", "ccdf")], value="auto",
                                         style={"button_width": "auto"},
                                         tooltips=["bars up to degree 60, else doubling bins",
                                                   "one bar per degree", "0, 1, 2–3, 4–7, …",
                                                   "share of parents with degree ≥ x (log–log)"])
        self._deg_log = W.Checkbox(value=False, description="log scale", indent=False,
                                   layout=W.Layout(width="100px"))
        self._deg_info = W.HTML()
        self._deg_fig = FigureOutput()
        # Correlations
        self._cor_sel = W.Dropdown(description="rows", layout=lay, style=dd_style)
        self._cor_info = W.HTML()
        self._cor_fig = FigureOutput()
        # t-SNE
        self._ts_sel = W.Dropdown(description="rows", layout=lay, style=dd_style)
        self._ts_n = W.BoundedIntText(value=tsne_n, min=20, max=50_000, step=100, description="rows per side",
                                      continuous_update=False, layout=W.Layout(width="190px"), style=dd_style)
        self._ts_color = W.Dropdown(options=[("source (real / synthetic)", "Source")], value="Source",
                                    description="colour by", layout=lay, style=dd_style)
        self._ts_compute = W.Button(description="Compute map", icon="play", button_style="primary",
                                    tooltip="run openTSNE on this sample (cached per selection and size)",
                                    layout=W.Layout(width="140px"))
        self._ts_compute.on_click(lambda _: self._refresh("t-SNE", force=True))
        self._ts_bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, layout=W.Layout(width="220px",
                                                                                     visibility="hidden"))
        self._ts_info = W.HTML()
        self._ts_fig = FigureOutput()
        # Marginals
        self._mar_table = W.Dropdown(description="table", layout=lay, style=dd_style)
        self._mar_attr = W.Dropdown(description="attribute", layout=lay, style=dd_style)
        self._mar_info = W.HTML()
        self._mar_fig = FigureOutput()
        # Scores
        self._sc_info = W.HTML()
        self._sc_single = W.HTML()
        self._sc_fig = FigureOutput()
        self._sc_fk = W.Dropdown(description="3-way error of", layout=lay, style=dd_style)
        self._sc_fk_fig = FigureOutput()

        for w, cls in ((self._deg_fk, "deg-fk"), (self._deg_kind, "deg-kind"), (self._deg_log, "deg-log"),
                       (self._deg_info, "deg-info"), (self._cor_sel, "cor-sel"), (self._cor_info, "cor-info"),
                       (self._ts_sel, "tsne-sel"), (self._ts_n, "tsne-n"), (self._ts_color, "tsne-color"),
                       (self._ts_bar, "tsne-progress"), (self._ts_info, "tsne-info"),
                       (self._ts_compute, "tsne-compute"),
                       (self._mar_table, "mar-table"), (self._mar_attr, "mar-attr"), (self._mar_info, "mar-info"),
                       (self._sc_info, "sc-info"), (self._sc_single, "sc-single"), (self._sc_fk, "sc-fk")):
            w.add_class(f"relviz-cp-{cls}")
        for fig, name in ((self._deg_fig, "degrees"), (self._cor_fig, "correlations"), (self._ts_fig, "tsne"),
                          (self._mar_fig, "marginals"), (self._sc_fig, "scores"), (self._sc_fk_fig, "crosstable")):
            fig.add_class(f"relviz-cp-fig-{name}")

        self._status = {name: W.HTML() for name in TABS}
        for name, w in self._status.items():
            w.add_class("relviz-cp-status")
            w.add_class(f"relviz-cp-status-{name.lower().replace('-', '')}")
        row = lambda *ws: W.HBox(list(ws), layout=W.Layout(align_items="center", flex_flow="row wrap"))  # noqa: E731
        pages = [
            W.VBox([self._label("Degrees"), row(self._deg_fk, self._deg_kind, self._deg_log),
                    self._status["Degrees"], self._deg_info, self._deg_fig]),
            W.VBox([self._label("Correlations"), row(self._cor_sel), self._status["Correlations"],
                    self._cor_info, self._cor_fig]),
            W.VBox([self._label("t-SNE"), row(self._ts_sel, self._ts_n, self._ts_color),
                    row(self._ts_compute, self._ts_bar, self._status["t-SNE"]), self._ts_info, self._ts_fig]),
            W.VBox([self._label("Marginals"), row(self._mar_table, self._mar_attr), self._status["Marginals"],
                    self._mar_info, self._mar_fig]),
            W.VBox([self._label("Scores"), self._status["Scores"], self._sc_info, self._sc_single, self._sc_fig,
                    row(self._sc_fk), self._sc_fk_fig]),
        ]
        for name, page in zip(TABS, pages):
            page.add_class(f"relviz-cp-page-{name.lower().replace('-', '')}")
        self.tabs = W.Tab(children=pages, titles=TABS)
        self.tabs.add_class("relviz-cp-tabs")
        self.tabs.observe(self._on_tab, names="selected_index")

        self._deg_fk.observe(lambda _: self._refresh("Degrees"), names="value")
        self._deg_kind.observe(lambda _: self._refresh("Degrees"), names="value")
        self._deg_log.observe(lambda _: self._refresh("Degrees"), names="value")
        self._cor_sel.observe(lambda _: self._refresh("Correlations"), names="value")
        self._ts_sel.observe(lambda _: self._refresh("t-SNE"), names="value")
        self._ts_n.observe(lambda _: self._refresh("t-SNE"), names="value")
        self._ts_color.observe(lambda _: self._refresh("t-SNE"), names="value")
        self._mar_table.observe(self._on_mar_table, names="value")
        self._mar_attr.observe(lambda _: self._refresh("Marginals"), names="value")
        self._sc_fk.observe(lambda _: self._refresh("Scores"), names="value")

    def _figures(self) -> tuple[FigureOutput, ...]:
        return (self._deg_fig, self._cor_fig, self._ts_fig, self._mar_fig, self._sc_fig, self._sc_fk_fig)

    def _on_theme(self, theme: str) -> None:
        for out in self._figures():
            out.restyle()

    @staticmethod
    def _label(what: str) -> W.HTML:
        w = W.HTML(f"<div class='relviz-cp-curator' style='{_SMALL};color:var(--jp-warn-color1, #e65100)'>"
                   f"⚠ {CURATOR_VIEW}: {html.escape(what)} computed from the real data, outside the DP "
                   "guarantee — for the data curator only.</div>")
        return w

    @property
    def stale(self) -> bool:
        """Whether the results shown come from a plan or schema that has changed since."""
        return self.comparison is not None and self.stale_reason is not None

    def mark_stale(self, reason: str | None) -> None:
        """Mark the results stale (``reason``: what changed) or current again (``None``)."""
        if reason == self.stale_reason:
            return
        self.stale_reason = reason
        self._banner.value = self._banner_html(self.comparison)

    def _banner_html(self, cmp: Comparison | None) -> str:
        if cmp is None:
            return (f"<div style='{_SMALL}'><b style='font-size:14px'>Compare</b> — no synthetic database yet: "
                    "launch a run.</div>")
        r, s = cmp.real.row_counts(), cmp.synthetic.row_counts()
        rows = ", ".join(f"{html.escape(t)} {r.get(t, 0):,} real / {s.get(t, 0):,} synthetic" for t in r)
        o = self.origin
        source = (f" · <b class='relviz-cp-origin' data-epsilon='{o.epsilon:g}' data-attempt='{o.attempt or ''}'>"
                  f"{html.escape(o.label())}</b>" if o is not None else "")
        out = (f"<div style='{_SMALL}'><b style='font-size:14px'>Compare</b> — "
               f"<span style='color:var(--relviz-real-color, #1f2937);font-weight:600'>■ real</span> vs "
               f"<span style='color:#0ea5a4;font-weight:600'>■ synthetic</span>{source} · {rows} · "
               f"<i style='color:var(--jp-warn-color1, #e65100)'>{CURATOR_VIEW}</i></div>")
        box = ("font-size:12px;line-height:1.4;padding:4px 8px;margin:4px 0;border-left:4px solid {c};"
               "background:var(--jp-layout-color2, #f5f5f5)")
        if self.stale_reason is not None:
            plan = html.escape(o.label()) if o is not None else "an earlier plan"
            out += (f"<div class='relviz-cp-stale' style='{box.format(c='var(--jp-error-color1, #d32f2f)')}'>"
                    f"<b style='color:var(--jp-error-color1, #d32f2f)'>⚠ Stale results</b>: they come from "
                    f"<b>{plan}</b>, and {html.escape(self.stale_reason)} since. Launch again (tab 3 · Run) to "
                    "compare the current plan; until then read these as the old plan's.</div>")
        if o is not None and o.caps:
            items = "".join(f"<li>{html.escape(c)}</li>" for c in o.caps)
            out += (f"<div class='relviz-cp-caps' style='{box.format(c='var(--jp-warn-color1, #f57c00)')}'>"
                    "<b>Degree caps removed real rows before synthesis</b> (the privacy unit's public caps τ):"
                    f"<ul style='margin:2px 0'>{items}</ul>The synthetic data imitate the truncated data: part of "
                    "the difference you see in these tables (sizes, degrees above τ) is the caps, not the noise. "
                    f"<i style='color:var(--jp-warn-color1, #e65100)'>{CURATOR_VIEW}</i></div>")
        return out

    # -- data ------------------------------------------------------------------------------------
    def set_data(self, real: Database, synthetic: Database, *, origin: RunOrigin | None = None) -> Comparison:
        """Compare a new pair of databases (drops the old cache); returns the new comparison.

        Args:
            origin: The run the synthetic data come from (shown in the banner).
        """
        cmp = Comparison(real, synthetic, random_state=self.random_state, n_jobs=self.n_jobs)
        self.set_comparison(cmp, origin=origin)
        return cmp

    def set_comparison(self, cmp: Comparison, *, origin: RunOrigin | None = None) -> None:
        """Show an existing :class:`~relviz.comparison.Comparison` (its cache is reused)."""
        self._gen += 1
        self.comparison = cmp
        self.origin = origin
        self.stale_reason = None
        self._updating = True
        try:
            fks = [(cmp.real.schema.foreign_key(n).label(), n) for n in cmp.foreign_keys]
            self._set_options(self._deg_fk, fks)
            self._set_options(self._cor_sel, [(s.label, s.key) for s in cmp.selections(min_attributes=2)])
            sels = cmp.selections(min_attributes=1)
            self._set_options(self._ts_sel, [(s.label, s.key) for s in sels])
            self._set_options(self._mar_table, [(t, t) for t in cmp.tables])
            self._set_options(self._mar_attr, [(a, a) for a in cmp.attributes(self._mar_table.value)]
                              if self._mar_table.value else [])
            self._set_options(self._ts_color, [("source (real / synthetic)", "Source")])
            private = {fk.name for fk in cmp.real.schema.private_foreign_keys}
            self._set_options(self._sc_fk, [(lab, n) for lab, n in fks if n in private])
        finally:
            self._updating = False
        for fig in (self._deg_fig, self._cor_fig, self._ts_fig, self._mar_fig, self._sc_fig, self._sc_fk_fig):
            fig.clear()
        for w in (self._deg_info, self._cor_info, self._ts_info, self._mar_info, self._sc_info, self._sc_single):
            w.value = ""
        self._banner.value = self._banner_html(cmp)
        self._dirty = set(range(len(TABS)))
        self._refresh(TABS[self.tabs.selected_index or 0])

    @staticmethod
    def _set_options(dd: W.Dropdown, options: list[tuple[str, str]]) -> None:
        keep = dd.value
        dd.options = options
        values = [v for _, v in options]
        if options:
            dd.value = keep if keep in values else values[0]

    # -- events ----------------------------------------------------------------------------------
    def _show_error(self, where: str, e: BaseException) -> None:
        self._status[TABS[self.tabs.selected_index or 0]].value = error_html(where, e)

    @guarded("switching the compare tab")
    def _on_tab(self, change: dict[str, Any]) -> None:
        i = change["new"]
        if i is not None and i in self._dirty:
            self._refresh(TABS[i])

    @guarded("choosing the table")
    def _on_mar_table(self, change: dict[str, Any]) -> None:
        if self._updating or self.comparison is None or not change["new"]:
            return
        self._updating = True
        try:
            self._set_options(self._mar_attr, [(a, a) for a in self.comparison.attributes(change["new"])])
        finally:
            self._updating = False
        self._refresh("Marginals")

    def select(self, tab: str) -> None:
        """Show a tab by name (``"Degrees"``, ``"Correlations"``, ``"t-SNE"``, ``"Marginals"``, ``"Scores"``)."""
        self.tabs.selected_index = TABS.index(tab)

    @guarded("updating the comparison")
    def _refresh(self, tab: str, *, force: bool = False) -> None:
        """Recompute and redraw ``tab`` in its lane (only the visible tab; others when shown).

        A t-SNE map that is not cached yet waits for the Compute button (``force=True``): it is
        the one heavy computation, so the user starts it.
        """
        if self._updating or self.comparison is None:
            return
        i = TABS.index(tab)
        if (self.tabs.selected_index or 0) != i:
            self._dirty.add(i)
            return
        self._dirty.discard(i)
        gen, cmp = self._gen, self.comparison
        if tab == "t-SNE" and not force:
            key, n, _ = self._args(tab)
            if key and not cmp.cached(("embedding", key, int(n))):
                self._ts_compute.disabled = False
                self._ts_fig.clear()
                self._ts_info.value = ""
                self._status[tab].value = (
                    f"<div class='relviz-cp-tsne-prompt' style='{_SMALL};{_GREY}'>Not computed yet: press "
                    f"<b>Compute map</b> to embed {int(n):,} real + {int(n):,} synthetic rows (t-SNE is heavy: "
                    "about half a minute for 2 × 2,000 rows on two cores; each selection and size is computed "
                    "once).</div>")
                return
        render = {"Degrees": self._render_degrees, "Correlations": self._render_correlations,
                  "t-SNE": self._render_tsne, "Marginals": self._render_marginals, "Scores": self._render_scores}[tab]
        args = self._args(tab)
        status = self._status[tab]
        lane = self._lanes[tab]

        def task() -> None:
            if gen != self._gen:
                return
            try:
                render(cmp, gen, lane, *args)
            except _Superseded:
                raise
            except Exception as e:  # noqa: BLE001 - shown in the tab (and logged)
                log.exception("relviz: computing the %s tab failed", tab)
                if gen == self._gen:
                    status.value = (f"<div class='relviz-cp-error' style='{_SMALL};color:var(--jp-error-color1, "
                                    f"#d32f2f)'>✗ {html.escape(type(e).__name__)}: {html.escape(str(e))}</div>")
        status.value = f"<div style='{_SMALL};{_GREY}'>computing…</div>"
        lane.submit(task)

    def _args(self, tab: str) -> tuple[Any, ...]:
        """The widget values a render needs, read in the kernel's thread."""
        if tab == "Degrees":
            return (self._deg_fk.value, self._deg_kind.value, bool(self._deg_log.value))
        if tab == "Correlations":
            return (self._cor_sel.value,)
        if tab == "t-SNE":
            return (self._ts_sel.value, int(self._ts_n.value), self._ts_color.value)
        if tab == "Marginals":
            return (self._mar_table.value, self._mar_attr.value)
        return (self._sc_fk.value,)

    def _done(self, tab: str, gen: int, text: str = "") -> bool:
        if gen != self._gen:
            return False
        self._status[tab].value = f"<div style='{_SMALL};{_GREY}'>{text}</div>" if text else ""
        return True

    # -- renders (lane threads) -------------------------------------------------------------------
    def _render_degrees(self, cmp: Comparison, gen: int, lane: _Lane, fk: str | None, kind: str,
                        log_y: bool) -> None:
        if not fk:
            self._done("Degrees", gen, "no foreign key to compare")
            return
        d = cmp.degrees(fk)
        fig = cmp.degree_figure(fk, kind=kind, log_y=log_y)  # type: ignore[arg-type]
        if gen != self._gen or lane.superseded:
            return
        stats = d.stats()
        cells = "".join(f"<tr><td>{html.escape(str(r['Statistic']))}</td><td style='text-align:right'>"
                        f"{_num(r['Real'])}</td><td style='text-align:right'>{_num(r['Synthetic'])}</td></tr>"
                        for r in stats.to_dict(orient="records"))
        score = "n/a" if math.isnan(d.score) else f"{d.score:.3f}"
        why = f" <span style='{_GREY}'>({html.escape(d.error)})</span>" if d.error else ""
        tip = html.escape(DEGREE_SIMILARITY_TIP, quote=True)
        self._deg_info.value = (
            f"<div style='{_SMALL};display:flex;gap:24px;align-items:flex-start'>"
            f"<div class='relviz-cp-deg-score' data-score='{score}' title='{tip}'>degree similarity "
            f"{_HELP} <span style='{_GREY}'>(1 = same shape)</span><br>"
            f"<b style='font-size:20px'>{score}</b>{why}</div>"
            f"<table style='font-size:11px;border-collapse:collapse'><tr><th></th><th>real</th><th>synthetic</th>"
            f"</tr>{cells}</table></div>")
        self._deg_fig.show(fig)
        self._done("Degrees", gen)

    def _render_correlations(self, cmp: Comparison, gen: int, lane: _Lane, key: str | None) -> None:
        if not key:
            self._done("Correlations", gen, "no table or join with two or more attributes")
            return
        sel = cmp.selection(key)
        a = cmp.associations(**sel.kwargs())
        fig = cmp.association_figure(**sel.kwargs())
        if gen != self._gen or lane.superseded:
            return
        diff = a.difference.to_numpy(dtype=float)
        iu = np.triu_indices_from(diff, k=1)
        vals = np.abs(diff[iu])
        text = ""
        if vals.size and np.isfinite(vals).any():
            j = int(np.nanargmax(vals))
            labels = list(a.real.index)
            text = (f"mean |synthetic − real| = <b>{np.nanmean(vals):.3f}</b> over {vals.size} pairs; largest: "
                    f"{html.escape(labels[iu[0][j]])} × {html.escape(labels[iu[1][j]])} ({vals[j]:.3f})")
        self._cor_info.value = f"<div class='relviz-cp-cor-summary' style='{_SMALL}'>{text}</div>"
        self._cor_fig.show(fig)
        self._done("Correlations", gen)

    def _render_tsne(self, cmp: Comparison, gen: int, lane: _Lane, key: str | None, n: int, color: str) -> None:
        if not key:
            self._done("t-SNE", gen, "nothing to embed")
            return
        sel = cmp.selection(key)
        cached = cmp.cached(("embedding", sel.key, int(n)))

        def progress(fraction: float, message: str) -> None:
            if lane.superseded:
                raise _Superseded
            if gen == self._gen:
                self._ts_bar.value = fraction
                self._status["t-SNE"].value = (f"<div class='relviz-cp-tsne-progress-text' style='{_SMALL}'>"
                                               f"{100 * fraction:.0f}% · {html.escape(message)}</div>")

        if not cached:
            self._ts_bar.layout.visibility = "visible"
            self._ts_bar.value = 0.0
            progress(0.0, f"embedding {n:,} real + {n:,} synthetic rows of {sel.label}")
        try:
            emb = cmp.embedding(**sel.kwargs(), n=n, progress=progress)
        finally:
            if gen == self._gen and not lane.superseded:
                self._ts_bar.layout.visibility = "hidden"
        if gen != self._gen or lane.superseded:
            return
        options = [("source (real / synthetic)", "Source")] + [(a, a) for a in emb.attributes]
        if list(self._ts_color.options) != options:
            self._updating = True
            try:
                self._set_options(self._ts_color, options)
            finally:
                self._updating = False
            color = self._ts_color.value
        if color not in ("Source", *emb.attributes):
            color = "Source"
        fig = cmp.embedding_figure(**sel.kwargs(), n=n, color=color)
        det = "n/a" if math.isnan(emb.detection_score) else f"{emb.detection_score:.3f}"
        self._ts_info.value = (
            f"<div class='relviz-cp-tsne-summary' data-n='{n}' data-cached='{str(cached).lower()}' "
            f"style='{_SMALL}'>sample: <b>{emb.n_real:,} real + {emb.n_synthetic:,} synthetic rows</b> of "
            f"{html.escape(sel.label)} (seed {cmp.random_state}; {len(emb.features)} encoded features) · "
            f"detection score <b>{det}</b> <span style='{_GREY}'>(1 = indistinguishable; AUC "
            f"{emb.auc:.3f})</span> · {'from the cache' if cached else f'computed in {emb.seconds:.1f} s'}</div>")
        self._ts_fig.show(fig)
        self._ts_compute.disabled = True  # this selection and size is in the cache
        self._done("t-SNE", gen)

    def _render_marginals(self, cmp: Comparison, gen: int, lane: _Lane, table: str | None,
                          attribute: str | None) -> None:
        if not table or not attribute:
            self._done("Marginals", gen, "no attribute to compare")
            return
        fig = cmp.frequency_figure(table, attribute)
        one = cmp.one_way()
        one = one[one["Table"] == table].sort_values("TVD", ascending=False)
        if gen != self._gen or lane.superseded:
            return
        items = ", ".join(f"{html.escape(str(r['Attribute']))} {r['TVD']:.3f}" for r in one.to_dict(orient="records"))
        self._mar_info.value = (f"<div style='{_SMALL}'>1-way TVD of {html.escape(table)}'s attributes, worst first: "
                                f"{items}</div>")
        self._mar_fig.show(fig)
        self._done("Marginals", gen)

    def _render_scores(self, cmp: Comparison, gen: int, lane: _Lane, fk: str | None) -> None:
        def progress(fraction: float, message: str) -> None:
            if gen == self._gen:
                self._status["Scores"].value = (f"<div style='{_SMALL};{_GREY}'>{100 * fraction:.0f}% · "
                                                f"{html.escape(message)}</div>")

        q = cmp.quality(progress)
        fig = cmp.scores_figure()
        rel = cmp.relational(progress)
        if gen != self._gen or lane.superseded:
            return
        props = q.get_properties()
        notes = variant_notes(q)
        prow = "".join(f"<tr><td>{html.escape(r['Property'])}</td><td style='text-align:right'>{_num(r['relviz Score'])}"
                       f"</td><td style='text-align:right'>{_num(r['SDMetrics Score'])}</td>"
                       f"<td class='relviz-cp-variant-note' style='{_GREY};padding-left:10px;max-width:420px'>"
                       f"{html.escape(notes.get(r['Property'], ''))}</td></tr>"
                       for r in props.to_dict(orient="records"))
        k = rel.k
        frow = "".join(
            f"<tr><td>{html.escape(r['Foreign Key'])}</td><td style='text-align:right'>{_num(r['Degree Similarity'])}"
            f"</td><td style='text-align:right'>{_num(r[f'{k}-way Avg Error (%)'])}</td>"
            f"<td style='text-align:right'>{_num(r[f'{k}-way Max Error (%)'])}</td>"
            f"<td style='{_GREY};padding-left:10px'>{html.escape(str(r['Note']))}</td></tr>"
            for r in rel.foreign_keys.to_dict(orient="records"))
        valid = html.escape(rel.validity.summary()) if rel.validity is not None else ""
        th = "style='text-align:left;padding-right:12px'"
        tip = html.escape(DEGREE_SIMILARITY_TIP, quote=True)
        self._sc_info.value = (
            f"<div style='{_SMALL};display:flex;gap:28px;flex-wrap:wrap'>"
            f"<div><b>Quality score {q.get_score():.3f}</b> (mean of the properties, 1 = identical)"
            f"<table class='relviz-cp-props' style='font-size:11px;border-collapse:collapse'><tr><th {th}>property"
            f"</th><th {th} title='relviz: the average over every item (every pair of attributes)'>score (all pairs)"
            f"</th><th {th} title='SDMetrics 0.32: pair properties average only the strongly associated real "
            f"pairs'>SDMetrics</th><th {th}></th></tr>{prow}</table></div>"
            f"<div><b>Relations</b> ({k}-way cross-table errors: L1 of the k-way marginals across each FK, %)"
            f"<table class='relviz-cp-fks' style='font-size:11px;border-collapse:collapse'><tr><th {th}>FK</th>"
            f"<th {th} title='{tip}'>degree similarity {_HELP}</th><th {th}>{k}-way avg %</th><th {th}>{k}-way max %</th>"
            f"<th {th}></th></tr>"
            f"{frow}</table><div style='{_GREY}'>{valid}</div></div></div>")
        self._sc_fig.show(fig)
        with_workloads = [(cmp.real.schema.foreign_key(n).label(), n) for n, e in rel.cross_table.items()
                          if e.n_workloads]
        if list(self._sc_fk.options) != with_workloads:  # only FKs with cross-table workloads
            self._updating = True
            try:
                self._set_options(self._sc_fk, with_workloads)
            finally:
                self._updating = False
            fk = self._sc_fk.value
        if fk and fk in rel.cross_table and rel.cross_table[fk].n_workloads:
            self._sc_fk_fig.show(cmp.cross_table_figure(fk))
        else:
            self._sc_fk_fig.clear()
        # the single-table benchmark, after the reports above (they show while it computes)
        if not cmp.cached(("single_table", SINGLE_TABLE_MAX_ROWS, SINGLE_TABLE_MAX_QUERY_ROWS)):
            self._sc_single.value = (f"<div class='relviz-cp-single-pending' style='{_SMALL};{_GREY}'><b>Single "
                                     "tables (Chen et al. benchmark)</b>: computing…</div>")
        try:
            single = cmp.single_table(progress)
        except Exception as e:  # the block says it failed; the error still reaches the status line
            if gen == self._gen and not lane.superseded:
                self._sc_single.value = (f"<div class='relviz-cp-single-failed' style='{_SMALL};{_GREY}'><b>Single "
                                         f"tables (Chen et al. benchmark)</b>: failed ({html.escape(str(e))})</div>")
            raise
        if gen != self._gen or lane.superseded:
            return
        self._sc_single.value = single_table_html(single)
        self._done("Scores", gen)


SINGLE_TABLE_TIPS = {
    "table": "a synthesised (private) table; public tables are copied, not synthesised, so not scored",
    "rows": "rows of the table, real / synthetic (all of them; the fidelity error reads every row, the query "
            f"error at most {SINGLE_TABLE_MAX_QUERY_ROWS:,} and the ML efficacy at most {SINGLE_TABLE_MAX_ROWS:,} "
            "sampled rows per side)",
    "fidelity": "fidelity error: the total variation distance between the real and the synthetic distribution "
                "of every pair of attributes (numeric ones in 100 bins), averaged over the pairs. 0 = the same "
                "pair distributions, 1 = nothing in common; lower is better",
    "query": "query error: 1,000 random questions such as 'what share of rows has 10 ≤ age ≤ 40, sex = F and "
             "tenure = own?' (3 attributes each), answered on the real and the synthetic rows; the mean "
             "difference of the answers (a share, 0–1); lower is better",
    "target": "the attribute the models predict: the table's first categorical attribute with 2–20 categories",
    "trtr": "TRTR (train real, test real): macro-F1 of models trained on 80 % of the real rows and tested on the "
            "other 20 %: the reference. Macro-F1: the F1 score of each class, averaged (1 = perfect)",
    "tstr": "TSTR (train synthetic, test real): macro-F1 of the same models trained on the synthetic rows and "
            "tested on the same 20 % of real rows; closer to TRTR is better (above TRTR: the synthetic rows may "
            "copy the test rows, which the synthesizer saw)",
}
"""The tooltips of the single-table block of the Scores tab (plain words)."""


def single_table_html(df: Any) -> str:
    """The Scores tab's "Single tables (Chen et al. benchmark)" block: an HTML table (class
    ``relviz-cp-single``) of :meth:`~relviz.comparison.Comparison.single_table`'s frame, a
    ``title=`` tooltip per column (:data:`SINGLE_TABLE_TIPS`), and its notes in grey (the
    in-sample caveat first)."""
    th = "style='text-align:left;padding-right:12px'"
    td = "style='text-align:right;padding-right:12px'"

    def head(label: str, tip: str) -> str:
        return f"<th {th} title='{html.escape(SINGLE_TABLE_TIPS[tip], quote=True)}'>{label} {_HELP}</th>"

    rows = "".join(
        f"<tr data-table='{html.escape(str(r['Table']), quote=True)}'><td>{html.escape(str(r['Table']))}</td>"
        f"<td {td}>{_num(r['Rows (real)'])} / {_num(r['Rows (synthetic)'])}</td>"
        f"<td class='relviz-cp-single-fidelity' {td}>{_num(r['Fidelity error'])}</td>"
        f"<td class='relviz-cp-single-query' {td}>{_num(r['Query error'])}</td>"
        f"<td>{html.escape(str(r['Target'])) or '–'}</td>"
        f"<td class='relviz-cp-single-trtr' {td}>{_num(r['TRTR macro-F1'])}</td>"
        f"<td class='relviz-cp-single-tstr' {td}>{_num(r['TSTR macro-F1'])}</td>"
        f"<td style='{_GREY};padding-left:10px;max-width:420px'>{html.escape(str(r['Note']))}</td></tr>"
        for r in df.to_dict(orient="records"))
    if not len(df):
        rows = f"<tr><td colspan='8' style='{_GREY}'>no synthesised table with attributes</td></tr>"
    notes = list(df.attrs.get("notes", [SINGLE_TABLE_IN_SAMPLE_NOTE]))
    grey = "".join(f"<div>{html.escape(n)}</div>" for n in notes)
    return (f"<div class='relviz-cp-single-block' style='{_SMALL};margin-top:8px'>"
            "<b>Single tables (Chen et al. benchmark)</b> (per synthesised table: errors, lower is better; "
            "ML efficacy, TSTR closer to TRTR is better)"
            f"<table class='relviz-cp-single' style='font-size:11px;border-collapse:collapse'><tr>"
            f"{head('table', 'table')}{head('rows real / synthetic', 'rows')}{head('fidelity error', 'fidelity')}"
            f"{head('query error', 'query')}{head('target', 'target')}{head('TRTR macro-F1', 'trtr')}"
            f"{head('TSTR macro-F1', 'tstr')}<th {th}></th></tr>{rows}</table>"
            f"<div class='relviz-cp-single-note' style='{_GREY};max-width:900px'>{grey}</div></div>")


def variant_notes(q: Any, tolerance: float = 0.005) -> dict[str, str]:
    """``{property: sentence}`` for the pair properties whose relviz score (every pair) differs
    from SDMetrics' (strongly associated real pairs only) by more than ``tolerance``, saying how
    many pairs each averages (docs/evaluation.md §2, §4)."""
    from relviz.evaluate._common import ASSOCIATION_THRESHOLD, CORRELATION_THRESHOLD

    out = {}
    props = q.get_properties()
    for r in props.to_dict(orient="records"):
        name = r["Property"]
        if name not in ("Column Pair Trends", "Intertable Trends"):
            continue
        a, b = float(r["relviz Score"]), float(r["SDMetrics Score"])
        if math.isnan(a) and math.isnan(b):
            continue
        if not (math.isnan(a) or math.isnan(b)) and abs(a - b) <= tolerance:
            continue
        details = q.get_details(name)
        n = int(details["Score"].notna().sum()) if "Score" in details else len(details)
        m = int(details["Meets Threshold?"].astype("boolean").fillna(False).sum()) if "Meets Threshold?" in details else 0
        what = "pairs of a parent and a child attribute across the FK joins" if name == "Intertable Trends" \
            else "pairs of attributes within a table"
        sdm = (f"SDMetrics' {_num(b)} averages only the {m} strongly associated real pair{'s' if m != 1 else ''} "
               f"(|Pearson r| > {CORRELATION_THRESHOLD:g} or Cramér's V > {ASSOCIATION_THRESHOLD:g})"
               if m else "SDMetrics has no strongly associated real pair to average (n/a)")
        out[name] = f"differs: relviz's {_num(a)} averages all {n} {what}; {sdm}"
    return out


def _num(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return html.escape(str(x))
    if math.isnan(v):
        return "–"
    if v == int(v) and abs(v) >= 1:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"
