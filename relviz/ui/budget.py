"""The budget panel: ipywidgets over :class:`~relviz.ui.budget_state.BudgetDraft`.

Total ε and δ, with the ρ they buy and the conversion used; one row per private table
(single-table mechanism) and per private FK (relational method) with a share slider and number box
kept in sync, a lock toggle, and beside it what the share buys: the noise σ of the component's
releases (its method's ``noise_scales``) and the expected error of a typical marginal cell or
degree bin relative to the table size, ``σ·√(2/π)/n`` (a curator view when ``n`` is read from
private data, and labelled so). "Rebalance" splits what the locked shares leave equally; presets
are "equal split" and "papers' defaults" (:data:`relviz.ui.budget_state.PRESETS`). The sum of the shares
is shown and is always exactly 1: the plan holds exact fractions, the widgets only round for
display. Sizes read from the private data are marked ``*`` and the panel says once, under the
rows, that they are a curator view. Warnings in plain words: ε > 5, δ ≥ 1/n, and one piece of
advice for every share too small to be useful (:meth:`~relviz.ui.budget_state.BudgetDraft.advice`:
which ones, and the ε that makes them all useful), their rows showing the error in red.

ε and δ are validated, not clamped: ε = 0, a negative or a non-number is refused with its reason
and the previous ε stays in force (and in the box).

At the top, "Approach" picks how the whole database is synthesised
(:meth:`~relviz.ui.budget_state.BudgetDraft.set_approach`): per-FK linkers, a database method
(PrivLava, Denorm) or a named plan (the papers' 80/20 baseline), with one line saying what it
does. The rows follow the new plan's components; under a database method an FK's method is the
method itself (shown, not editable) and a table offers only the mechanisms the method accepts.
Every σ a component releases is listed (MST: two; PrivLava's FK: four). "Undo" steps back.

Every change goes through the draft: an invalid one (say, a share that the locked shares leave no
room for) is refused with its reason and the widgets snap back to the plan.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
import traitlets

from relviz.database import Database
from relviz.plan import NoisePreview, Plan
from relviz.privacy.measure import CURATOR_VIEW
from relviz.schema import Schema
from relviz.ui._errors import error_html, guard, guarded
from relviz.ui.budget_state import PRESETS, BudgetDraft, approaches
from relviz.ui.schema_state import EditResult

__all__ = ["BudgetPanel"]

_STEP = 0.001  # slider step; values shown are the exact shares rounded to it (display only)
_COLUMNS = "minmax(150px, 1fr) 165px 170px 78px 46px minmax(300px, 2.4fr)"
_SMALL = "font-size:12px;line-height:1.35"


def _short(label: str) -> str:
    return label.split(" (")[0]


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _pct(x: float) -> str:
    """A relative error as a percentage people read: 0.4%, 47%, 923%."""
    p = 100 * x
    return f"{p:,.0f}%" if p >= 10 else f"{p:.2g}%"


class BudgetPanel(W.VBox):
    """Split a privacy budget over tables and foreign keys, seeing what each share buys.

    Args:
        source: A :class:`~relviz.database.Database` (row counts come from its data: a curator
            view for private tables) or a :class:`~relviz.schema.Schema`.
        plan: Starting plan (default ``Plan.default(schema, epsilon, delta)``).
        row_counts: Public row counts (they override the data's and enable errors for a schema).
        epsilon, delta: Used only when ``plan`` is not given.

    Attributes:
        plan: The edited :class:`~relviz.plan.Plan` (assign to replace it; observable).
        draft: The plain-Python state (:class:`~relviz.ui.budget_state.BudgetDraft`).
    """

    plan = traitlets.Instance(Plan)

    def __init__(self, source: Database | Schema, plan: Plan | None = None, *,
                 row_counts: Mapping[str, int] | None = None, epsilon: float = 1.0,
                 delta: float = 1e-6, **kwargs: Any) -> None:
        self.draft = BudgetDraft(source, plan, row_counts=row_counts, epsilon=epsilon, delta=delta)
        self._updating = False
        self._build()
        super().__init__(children=self._children(), plan=self.draft.plan, **kwargs)
        self.add_class("relviz-bp")
        self._refresh(None)

    # -- construction ----------------------------------------------------------------------------
    def _build(self) -> None:
        plan = self.draft.plan
        self._title = W.HTML("<b style='font-size:14px'>Privacy budget</b>")
        self._approach = W.Dropdown(options=[(label, key) for key, label in approaches().items()],
                                    value=self.draft.approach(), description="Approach",
                                    layout=W.Layout(width="300px"),
                                    style={"description_width": "initial"})
        self._approach.add_class("relviz-bp-approach")
        self._approach.observe(self._on_approach, names="value")
        self._approach_text = W.HTML()
        self._approach_text.add_class("relviz-bp-approach-text")
        self._undo = W.Button(description="Undo", icon="undo", tooltip="undo the last applied change",
                              layout=W.Layout(width="auto"), disabled=True)
        self._undo.add_class("relviz-bp-undo")
        self._undo.on_click(lambda _: self._do(self.draft.undo))
        # not a BoundedFloatText: it would clamp 0 or −1 to its minimum and the draft would accept
        # that; the draft validates the typed value instead (refused with the reason)
        self._eps = W.FloatText(value=plan.epsilon, step=0.1, description="total ε",
                                layout=W.Layout(width="150px"), continuous_update=False,
                                style={"description_width": "initial"})
        self._eps.add_class("relviz-bp-epsilon")
        self._delta = W.Text(value=f"{plan.delta:g}", description="δ", layout=W.Layout(width="130px"),
                             continuous_update=False, style={"description_width": "initial"})
        self._delta.add_class("relviz-bp-delta")
        self._rho = W.HTML()
        self._rho.add_class("relviz-bp-rho")
        self._eps.observe(self._on_eps, names="value")
        self._delta.observe(self._on_delta, names="value")
        self._presets = {}
        for key, text in (("equal", "equal split"), ("papers", "papers' defaults")):
            b = W.Button(description=text, tooltip=PRESETS[key], layout=W.Layout(width="auto"))
            b.add_class(f"relviz-bp-preset-{key}")
            b.on_click(lambda _, key=key: self._do(lambda: self.draft.preset(key)))
            self._presets[key] = b
        self._rebalance = W.Button(description="Rebalance", icon="balance-scale",
                                   tooltip="split what the locked shares leave equally among the unlocked ones",
                                   layout=W.Layout(width="auto"))
        self._rebalance.add_class("relviz-bp-rebalance")
        self._rebalance.on_click(lambda _: self._do(self.draft.rebalance))
        self._sum = W.HTML()
        self._sum.add_class("relviz-bp-sum")
        self._message = W.HTML()
        self._message.add_class("relviz-bp-message")
        self._warnings = W.HTML()
        self._warnings.add_class("relviz-bp-warnings")
        self._footnote = W.HTML()
        self._footnote.add_class("relviz-bp-footnote")
        self._build_grid()

    def _build_grid(self) -> None:
        """One row per plan component (rebuilt when the components change)."""
        plan = self.draft.plan
        header = [W.HTML(f"<b>{h}</b>") for h in ("component", "method", "share of ρ", "", "lock",
                                                 "what the share buys (noise σ, expected error)")]
        cells: list[W.Widget] = list(header)
        self._rows: dict[str, dict[str, W.Widget]] = {}
        for i, c in enumerate(plan.components):
            registry = self.draft.method_choices(c.name)
            locked = self.draft.method_locked(c.name)
            options = [(_short(label), name) for name, label in registry.items()]
            if c.method not in registry:
                options.append((f"{c.method} (unknown)", c.method))
            name = W.HTML(self._name_html(c.name, c.kind))
            tip = (f"{_short(registry.get(c.method, c.method))} models this FK (chosen by the "
                   "Approach menu)" if locked else "\n".join(f"{k}: {v}" for k, v in registry.items()))
            method = W.Dropdown(options=options, value=c.method, layout=W.Layout(width="160px"),
                                tooltip=tip, disabled=locked or len(options) < 2)
            slider = W.FloatSlider(value=0.0, min=0.0, max=1.0, step=_STEP, readout=False,
                                   continuous_update=False, layout=W.Layout(width="165px"))
            text = W.BoundedFloatText(value=0.0, min=0.0, max=1.0, step=_STEP,
                                      layout=W.Layout(width="74px"), continuous_update=False)
            lock = W.ToggleButton(value=c.locked, icon="unlock", tooltip="lock this share",
                                  layout=W.Layout(width="42px"))
            info = W.HTML()
            for w, cls in ((name, "name"), (method, "method"), (slider, "slider"), (text, "share"),
                           (lock, "lock"), (info, "info")):
                w.add_class(f"relviz-bp-{cls}")
                w.add_class(f"relviz-bp-{cls}-{i}")
            method.observe(lambda ch, n=c.name: self._on_method(n, ch), names="value")
            slider.observe(lambda ch, n=c.name: self._on_share(n, ch), names="value")
            text.observe(lambda ch, n=c.name: self._on_share(n, ch), names="value")
            lock.observe(lambda ch, n=c.name: self._on_lock(n, ch), names="value")
            self._rows[c.name] = {"name": name, "method": method, "slider": slider, "text": text,
                                  "lock": lock, "info": info}
            cells += [name, method, slider, text, lock, info]
        self._grid = W.GridBox(cells, layout=W.Layout(grid_template_columns=_COLUMNS, grid_gap="4px 8px",
                                                      align_items="center", width="100%"))
        self._grid.add_class("relviz-bp-grid")
        self._shape = self._grid_shape()

    def _grid_shape(self) -> tuple[Any, ...]:
        """What the rows depend on: the components and the database method owning the plan."""
        plan = self.draft.plan
        return (tuple((c.name, c.kind) for c in plan.components), plan.database_method)

    def _children(self) -> list[W.Widget]:
        return [
            self._title,
            W.HBox([self._approach, self._undo], layout=W.Layout(align_items="center")),
            self._approach_text,
            W.HBox([self._eps, self._delta, self._rho], layout=W.Layout(align_items="center")),
            W.HBox([W.HTML("presets:&nbsp;"), *self._presets.values(), self._rebalance],
                   layout=W.Layout(align_items="center")),
            self._grid, self._footnote, self._sum, self._message, self._warnings,
        ]

    def _name_html(self, name: str, kind: str) -> str:
        if kind == "table":
            return f"<div style='{_SMALL}' title='private table'>table <b>{html.escape(name)}</b></div>"
        try:
            label = self.draft.schema.foreign_key(name).label()
        except KeyError:
            label = name
        return f"<div style='{_SMALL}' title='{html.escape(name)}'>FK <b>{html.escape(label)}</b></div>"

    # -- Python-side API ---------------------------------------------------------------------------
    @property
    def history(self) -> list[EditResult]:
        return self.draft.history

    def set_share(self, name: str, share: Any, *, lock: bool = False) -> EditResult:
        return self._apply(self.draft.set_share(name, share, lock=lock))

    def set_lock(self, name: str, locked: bool = True) -> EditResult:
        return self._apply(self.draft.set_lock(name, locked))

    def set_method(self, name: str, method: str) -> EditResult:
        return self._apply(self.draft.set_method(name, method))

    def set_budget(self, epsilon: float | None = None, delta: float | None = None) -> EditResult:
        return self._apply(self.draft.set_budget(epsilon, delta))

    def rebalance(self) -> EditResult:
        return self._apply(self.draft.rebalance())

    def preset(self, name: str) -> EditResult:
        return self._apply(self.draft.preset(name))

    def set_approach(self, name: str) -> EditResult:
        return self._apply(self.draft.set_approach(name))

    def undo(self) -> EditResult:
        return self._apply(self.draft.undo())

    # -- events ------------------------------------------------------------------------------------
    def _show_error(self, where: str, e: BaseException) -> None:
        self._message.value = error_html(where, e)

    @guarded("applying the budget edit")
    def _do(self, edit: Any) -> None:
        self._apply(edit())

    @guarded("changing a share")
    def _on_share(self, name: str, change: dict[str, Any]) -> None:
        if self._updating:
            return
        new = float(change["new"])
        current = float(self.draft.plan.component(name).share)
        if abs(new - round(current, 3)) < 1e-12 or abs(new - current) < 1e-12:
            return  # the displayed (rounded) value of the current share: nothing to do
        self._apply(self.draft.set_share(name, new))

    @guarded("locking a share")
    def _on_lock(self, name: str, change: dict[str, Any]) -> None:
        if not self._updating:
            self._apply(self.draft.set_lock(name, bool(change["new"])))

    @guarded("changing a method")
    def _on_method(self, name: str, change: dict[str, Any]) -> None:
        if not self._updating:
            self._apply(self.draft.set_method(name, str(change["new"])))

    @guarded("changing the approach")
    def _on_approach(self, change: dict[str, Any]) -> None:
        if not self._updating and change["new"] != self.draft.approach():
            self._apply(self.draft.set_approach(str(change["new"])))

    @guarded("changing ε")
    def _on_eps(self, change: dict[str, Any]) -> None:
        if not self._updating and float(change["new"]) != self.draft.plan.epsilon:
            self._apply(self.draft.set_budget(epsilon=float(change["new"])))

    @guarded("changing δ")
    def _on_delta(self, change: dict[str, Any]) -> None:
        if self._updating:
            return
        try:
            value: Any = float(str(change["new"]).strip())
        except ValueError:
            value = change["new"]  # refused by the draft, with the reason
        if value != self.draft.plan.delta:
            self._apply(self.draft.set_budget(delta=value))

    @traitlets.observe("plan")
    def _on_plan(self, change: dict[str, Any]) -> None:
        new = change["new"]
        if new is not None and new is not self.draft.plan:
            self._refresh(self.draft.set_plan(new))  # other components: the rows are rebuilt

    # -- synchronisation -----------------------------------------------------------------------------
    def _apply(self, result: EditResult) -> EditResult:
        with guard("updating the budget panel", lambda e: self._show_error("updating the budget panel", e)):
            self._refresh(result)
        return result

    def _refresh(self, result: EditResult | None) -> None:
        d = self.draft
        plan = d.plan
        self._updating = True
        try:
            if self._grid_shape() != self._shape:  # other components (approach, undo, new plan)
                self._build_grid()
                self.children = self._children()
            if self.plan is not plan:
                self.plan = plan
            approach = d.approach()
            if self._approach.value != approach:
                self._approach.value = approach
            self._approach_text.value = (
                f"<div class='relviz-bp-approach-line' style='{_SMALL};color:var(--jp-ui-font-color2, #616161)'>"
                f"{html.escape(d.approach_text(approach))}</div>")
            self._undo.disabled = not d.can_undo
            self._eps.value = plan.epsilon
            self._delta.value = f"{plan.delta:g}"
            s = d.summary()
            self._rho.value = (f"<span class='relviz-bp-rho-text'>&nbsp;→ ρ = <b>{s['rho']:.5g}</b> "
                               f"<span style='color:var(--jp-ui-font-color2, #616161)'>via the "
                               f"{html.escape(s['conversion_text'])}</span></span>")
            rows = d.rows()
            views = {v.name: v for v in rows}
            for c in plan.components:
                row = self._rows.get(c.name)
                if row is None:
                    continue
                shown = round(float(c.share), 3)
                row["slider"].value = shown
                row["text"].value = shown
                row["lock"].value = c.locked
                row["lock"].icon = "lock" if c.locked else "unlock"
                row["slider"].disabled = row["text"].disabled = c.locked
                if row["method"].value != c.method:
                    row["method"].value = c.method
                row["info"].value = self._info_html(views[c.name])
            total = d.total_share()
            ok = total == 1
            self._sum.value = (
                f"<div class='relviz-bp-sum-text' style='margin-top:4px'>Σ shares = <b>{total}</b> "
                + ("<span style='color:var(--jp-success-color1, #388e3c)'>✓ exactly 1</span>" if ok else
                   "<span style='color:var(--jp-error-color1, #d32f2f)'>✗ not 1</span>")
                + " <span style='color:var(--jp-ui-font-color2, #616161)'>(exact fractions; the boxes show them "
                  "rounded)</span></div>")
            if result is not None:
                color = "var(--jp-success-color1, #388e3c)" if result.ok else "var(--jp-error-color1, #d32f2f)"
                mark = "✓" if result.ok else "✗"
                cls = "ok" if result.ok else "refused"
                self._message.value = (f"<div class='relviz-bp-msg {cls}' style='color:{color}'>"
                                       f"{mark} {html.escape(result.message)}</div>")
            curator = [v.name for v in rows if v.n and CURATOR_VIEW in v.n_label]
            self._footnote.value = "" if not curator else (
                f"<div class='relviz-bp-curator-note' style='{_SMALL};color:var(--jp-warn-color1, #f57c00)'>* sizes "
                f"marked * are read from the private data: <i>{CURATOR_VIEW}</i> (the noise σ is not; "
                "give public row counts to avoid reading them)</div>")
            warnings = d.warnings()
            self._warnings.value = "" if not warnings else (
                f"<div class='relviz-bp-warn' style='{_SMALL};color:var(--jp-warn-color1, #f57c00)'><b>Warnings</b>"
                "<ul style='margin:2px 0'>"
                + "".join(f"<li>{html.escape(w)}</li>" for w in warnings) + "</ul></div>")
        finally:
            self._updating = False

    @staticmethod
    def _info_html(v: NoisePreview) -> str:
        rho = f"ρ = {float(v.rho):.3g}"
        grey = "color:var(--jp-ui-font-color2, #616161)"
        if v.sigma is None:
            note = html.escape(v.note or "σ unavailable")
            return f"<div style='{_SMALL}'>{rho}<br><span style='{grey}'>{note}</span></div>"
        others = "&#10;".join(f"{html.escape(k)}: σ = {_fmt(s)}" for k, s in v.sigmas.items())
        if len(v.sigmas) > 1:  # every release of the component, one line each
            lines = [f"<span class='relviz-bp-sigma'>{html.escape(k)}: <b>σ = {_fmt(s)}</b></span>"
                     for k, s in v.sigmas.items()]
            lines[0] += f" <span style='{grey}'>· {rho}</span>"
        else:
            lines = [f"<span class='relviz-bp-sigma'><b>σ = {_fmt(v.sigma)}</b> per cell</span> "
                     f"<span style='{grey}'>· {rho}</span>"]
        if v.error is not None and v.relative_error is not None and v.n:
            color = "var(--jp-error-color1, #d32f2f)" if v.warning else "var(--jp-ui-font-color1, rgba(0,0,0,0.87))"
            what = "cell" if v.kind == "table" else "bin"
            star = "*" if CURATOR_VIEW in v.n_label else ""  # said once, under the rows
            mark = " ⚠" if v.warning else ""
            line = (f"typical {what} ±{_fmt(v.error)} = <b class='relviz-bp-relerr{' bad' if v.warning else ''}' "
                    f"style='color:{color}'>{_pct(v.relative_error)}{mark}</b>"
                    f" of {html.escape(v.n_label.split(' — ')[0])}{star}")
            lines.append(line)
        tip = others + (f"&#10;{html.escape(v.warning)}" if v.warning else "")
        return f"<div style='{_SMALL}' title='{tip}'>" + "<br>".join(lines) + "</div>"
