"""The Studio: schema → budget → run → compare, in one tabbed app (the default way to use relviz).

>>> import relviz
>>> relviz.Studio(relviz.datasets.load("nycflights13"))       # doctest: +SKIP

Four tabs, each a thin view over a plain object, and edits flow forward:

1. **Schema** — :class:`~relviz.ui.schema_editor.SchemaEditor` → ``studio.schema`` (and the data
   under it, ``studio.database``: an orphan repair changes it, after a confirmation, and Undo
   restores it; the budget and the run follow);
2. **Budget** — :class:`~relviz.ui.budget.BudgetPanel` → ``studio.plan``. It follows the schema:
   after every schema edit it is rebuilt for the new schema, keeping ε, δ and the methods of the
   components that still exist (the shares and locks of an unchanged set of components are kept
   too; a new set of components starts from the equal split);
3. **Run** — :class:`~relviz.ui.run_panel.RunPanel` → ``studio.run`` (``studio.run.result``,
   ``studio.run.ledger``). It always runs the current database and plan: changes made while a run
   is active apply to the next Launch. Launch is disabled, with the reason, while the Schema tab
   (or the plan) lists a problem a run would refuse. Every attempt is charged to the database's
   session ledger (``studio.session``), shown in the tab, under a session cap the user may set;
4. **Compare** — :class:`~relviz.ui.compare.ComparePanel` → ``studio.comparison``. It is filled
   when a run finishes: if the Run tab was showing, the Studio switches to Compare; otherwise
   Compare refreshes the next time it is shown. It names the run and plan its results come from,
   and after a plan, schema or data edit it marks them stale (``studio.compare_stale``).

A callback that fails never fails silently: the error is logged and shown under the header.
"""

from __future__ import annotations

import html
import time
from typing import Any

import ipywidgets as W

from relviz.comparison import Comparison
from relviz.database import Database
from relviz.plan import Component, Plan
from relviz.privacy.session import SessionLedger, session_ledger
from relviz.run import Run
from relviz.schema import Schema
from relviz.single.warmup import start_background_warmup
from relviz.ui._errors import error_html, guarded
from relviz.ui.budget import BudgetPanel
from relviz.ui.compare import ComparePanel, RunOrigin
from relviz.ui.run_panel import RunPanel
from relviz.ui.schema_editor import SchemaEditor

__all__ = ["Studio", "carry_plan"]

STEPS = ("1 · Schema", "2 · Budget", "3 · Run", "4 · Compare")
_SMALL = "font-size:12px;line-height:1.4"


def carry_plan(old: Plan, schema: Schema) -> Plan:
    """The plan for an edited schema, keeping what still applies from ``old``.

    ε, δ and the conversion are kept. If the private components (names and kinds) are unchanged,
    the old plan is returned as is (shares, locks, methods). Otherwise the new schema's default
    split is used, with the old method and parameters of every component that still exists.
    """
    base = Plan.default(schema, old.epsilon, old.delta, conversion=old.conversion)
    if {(c.name, c.kind) for c in base.components} == {(c.name, c.kind) for c in old.components}:
        return old
    comps = []
    for c in base.components:
        prev = old.component_of(c.name, c.kind)
        comps.append(c if prev is None else Component(c.name, c.kind, prev.method, c.share, False, prev.params))
    return Plan(base.epsilon, base.delta, tuple(comps), base.conversion, old.rho)


class Studio(W.VBox):
    """relviz in one app: edit the schema, split the budget, run, compare.

    Args:
        db: The real database.
        plan: Starting plan (default: ``Plan.default(schema, epsilon, delta)``).
        random_state: Seed of every run (for study and teaching; leave ``None`` for a release).
        allow_inferred: Let runs use domains read from the data (not differentially private; see
            :class:`~relviz.run.Run`). Off by default: the Run tab then shows the refusal.
        propose: Offer the FKs found in the data in the schema editor.
        epsilon, delta: Total budget when no plan is given.
        tsne_n: Rows per side of the t-SNE sample (default 2,000, docs/evaluation.md §8).
        height: Height of the schema editor's graph area (pixels).
        session: The :class:`~relviz.privacy.session.SessionLedger` every run is charged to
            (default: the database's in this kernel, :func:`~relviz.privacy.session.session_ledger`;
            a new Studio on the same data continues it).

    Attributes:
        editor: The :class:`SchemaEditor`.
        budget: The current :class:`BudgetPanel` (rebuilt after each schema edit).
        run_panel: The :class:`RunPanel`.
        compare: The :class:`ComparePanel`.
        tabs: The ``ipywidgets.Tab`` of the four steps.
        history: ``(time, what)`` of the forward flows (schema → budget, budget → run, run → compare).
        session: The session ledger.
    """

    def __init__(self, db: Database, plan: Plan | None = None, *, random_state: int | None = None,
                 propose: bool = True, epsilon: float = 1.0, delta: float = 1e-6, tsne_n: int = 2000,
                 height: int = 480, allow_inferred: bool = False, session: SessionLedger | None = None,
                 **kwargs: Any) -> None:
        start_background_warmup()  # JAX's start-up on a tiny made-up frame, while the user reads (no data)
        self.history: list[tuple[float, str]] = []
        self._real = db
        self.session = session if session is not None else session_ledger(db)
        self._error = W.HTML()
        self._error.add_class("relviz-studio-error")
        eps0, delta0 = (plan.epsilon, plan.delta) if plan is not None else (epsilon, delta)
        self.editor = SchemaEditor(db, propose=propose, height=height, epsilon=eps0, delta=delta0)
        start = plan if plan is not None else Plan.default(self.editor.schema, epsilon, delta)
        self._budget_box = W.VBox()
        self._budget_box.add_class("relviz-studio-budget")
        self._budget_note = W.HTML()
        self.budget: BudgetPanel | None = None
        self._plan = start
        self._make_budget(start)
        self.run_panel = RunPanel(self.database, self._plan, random_state=random_state,
                                  allow_inferred=allow_inferred, session=self.session)
        self.compare = ComparePanel(tsne_n=tsne_n)
        self._compare_for: Run | None = None
        self._compare_due = False
        # what the current (or last) attempt ran: its plan, schema and data version, and what the
        # Compare tab shows (the origin of its results) — to mark them stale after an edit
        self._launched: tuple[Plan, Schema, int] | None = None
        self._done_inputs: tuple[Plan, Schema, int, Any, Any, RunOrigin] | None = None
        self._compared: tuple[Plan, Schema, int] | None = None
        self.tabs = W.Tab(children=[self.editor, self._budget_box, self.run_panel, self.compare], titles=STEPS)
        self.tabs.add_class("relviz-studio-tabs")
        self._header = W.HTML()
        super().__init__(children=[self._header, self._error, self.tabs], **kwargs)
        self.add_class("relviz-studio")
        self.editor.observe(self._on_schema, names="schema")
        self.editor.observe(self._on_data, names="data_version")
        self.run_panel.observe(self._on_status, names="status")
        self.tabs.observe(self._on_tab, names="selected_index")
        self._update_blockers()
        self._render_header()

    # -- plain access ------------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """The edited schema."""
        return self.editor.schema

    @property
    def database(self) -> Database:
        """The real data under the edited schema."""
        db = self.editor.database
        return db if db is not None else self._real

    @property
    def plan(self) -> Plan:
        """The current plan (the budget panel's)."""
        return self.budget.plan if self.budget is not None else self._plan

    @property
    def run(self) -> Run:
        """The :class:`~relviz.run.Run` (``run.result``, ``run.ledger`` after a run)."""
        return self.run_panel.run

    @property
    def comparison(self) -> Comparison | None:
        """The :class:`~relviz.comparison.Comparison` shown in the Compare tab (after a run)."""
        return self.compare.comparison

    @property
    def compare_stale(self) -> str | None:
        """Why the Compare tab's results are stale (what changed since their run), or ``None``."""
        if self._compared is None or self.comparison is None:
            return None
        plan, schema, version = self._compared
        why = []
        now = self.plan
        if now is not plan and now != plan:
            if (now.epsilon, now.delta) != (plan.epsilon, plan.delta):
                why.append(f"the plan changed (ε = {plan.epsilon:g}, δ = {plan.delta:g} → ε = {now.epsilon:g}, "
                           f"δ = {now.delta:g})")
            else:
                why.append("the plan changed (shares or methods)")
        if self.schema is not schema and self.schema != schema:
            why.append("the schema changed")
        if self.editor.data_version != version:
            why.append("the data changed (an orphan repair or its undo)")
        return "; ".join(why) or None

    def _show_error(self, where: str, e: BaseException) -> None:
        self._error.value = error_html(where, e)

    def select(self, step: str) -> None:
        """Show a step: ``"schema"``, ``"budget"``, ``"run"`` or ``"compare"``."""
        self.tabs.selected_index = ("schema", "budget", "run", "compare").index(step.lower())

    # -- schema → budget ---------------------------------------------------------------------------
    def _make_budget(self, plan: Plan) -> None:
        try:
            panel = BudgetPanel(self.database, plan)
        except Exception as e:  # noqa: BLE001 - shown in the tab; the last good panel stays
            self._budget_note.value = (
                f"<div class='relviz-studio-budget-error' style='{_SMALL};color:var(--jp-error-color1, #d32f2f)'>"
                f"✗ The budget cannot follow this schema yet: {html.escape(str(e))}. Fix the schema (tab 1); "
                "the panel below is for the previous schema.</div>")
            self._budget_box.children = [self._budget_note] + ([self.budget] if self.budget is not None else [])
            return
        if self.budget is not None:
            self.budget.unobserve(self._on_plan, names="plan")
        self.budget = panel
        self._plan = panel.plan
        panel.observe(self._on_plan, names="plan")
        self._budget_note.value = ""
        self._budget_box.children = [panel]

    @guarded("following the schema edit")
    def _on_schema(self, change: dict[str, Any]) -> None:
        schema = change["new"]
        old = self.plan
        try:
            plan = carry_plan(old, schema)
        except Exception:  # noqa: BLE001 - an unusable schema: keep the plan, report in the panel
            plan = old
        self._make_budget(plan)
        self.history.append((time.time(), f"schema edit → budget rebuilt ({len(self.plan.components)} components)"))
        self._forward_to_run()

    @guarded("following the data change")
    def _on_data(self, change: dict[str, Any]) -> None:
        """The data under the schema changed (an orphan repair, its undo): the budget's sizes and
        the run's data follow; the comparison becomes stale."""
        self._make_budget(self.plan)
        self.history.append((time.time(), f"data change → budget and run follow "
                                          f"({', '.join(f'{t} {n:,}' for t, n in self.database.row_counts().items())})"))
        self._forward_to_run()

    # -- budget → run ------------------------------------------------------------------------------
    @guarded("following the plan edit")
    def _on_plan(self, change: dict[str, Any]) -> None:
        self._plan = change["new"]
        if self._plan is not None:  # the Schema panel's σ per unit follows the plan's budget
            self.editor.epsilon, self.editor.delta = self._plan.epsilon, self._plan.delta
        self._forward_to_run()

    def _forward_to_run(self) -> None:
        state = self.run_panel.set_inputs(self.database, self.plan)
        self.history.append((time.time(), f"plan → run ({state})"))
        self._update_blockers()
        self.compare.mark_stale(self.compare_stale)
        self._error.value = ""  # the flow went through: an earlier error is no longer current
        self._render_header()

    def _update_blockers(self) -> None:
        """Launch is disabled while the Schema tab lists problems (a run refuses them) or the plan
        has problems on this schema (the Budget tab lists them)."""
        problems = [str(p) for p in self.editor.draft.problems()]
        where = "the Schema tab (1 · Schema)"
        try:
            plan_problems = [str(p) for p in self.plan.problems(self.schema)]
        except Exception as e:  # noqa: BLE001 - an unusable plan is itself a blocking problem
            plan_problems = [f"the plan cannot be checked: {type(e).__name__}: {e}"]
        if plan_problems:
            where = "the Schema and Budget tabs" if problems else "the Budget tab (2 · Budget)"
        self.run_panel.set_blockers(problems + plan_problems, where)

    # -- run → compare -----------------------------------------------------------------------------
    @guarded("following the run")
    def _on_status(self, change: dict[str, Any]) -> None:
        if change["new"] == "running" and change["old"] not in ("running", "cancelling"):
            run = self.run  # the inputs of this attempt (any later edit is pending until the next one)
            self._launched = (run.plan, run.db.schema, self.editor.data_version)
        self._render_header()
        if change["new"] != "done" or self.run.result is None:
            return
        run = self.run
        launched = self._launched or (run.plan, run.db.schema, self.editor.data_version)
        self._done_inputs = (*launched, run.db, run.result, RunOrigin.from_run(run))
        self._compare_due = True
        if self.tabs.selected_index == 2:
            self.tabs.selected_index = 3  # the user watched the run: show the comparison (fills it)
        if self.tabs.selected_index == 3 and self._compare_due:
            self._fill_compare()

    @guarded("switching tabs")
    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] == 3 and self._compare_due:
            self._fill_compare()

    def _fill_compare(self) -> None:
        if self._done_inputs is None:
            return
        plan, schema, version, real, result, origin = self._done_inputs
        self._compare_due = False
        self.compare.set_data(real, result, origin=origin)  # the data that run read, not today's
        self._compared = (plan, schema, version)
        self.compare.mark_stale(self.compare_stale)
        self.history.append((time.time(), "run → compare"))
        self._render_header()

    # -- header ------------------------------------------------------------------------------------
    def _render_header(self) -> None:
        if not hasattr(self, "_header"):
            return
        plan = self.plan
        n_fk = len(self.schema.foreign_keys)
        status = self.run_panel.status if hasattr(self, "run_panel") else "idle"
        origin = self.compare.origin if hasattr(self, "compare") else None
        label = f" ({html.escape(origin.label().split(' · ')[0])}, ε = {origin.epsilon:g})" if origin else ""
        if self.comparison is None:
            compared = "after a run"
        elif self.compare_stale:
            compared = (f"<b class='relviz-studio-stale' style='color:var(--jp-error-color1, #d32f2f)'>stale"
                        f"</b>{label}")
        else:
            compared = f"ready{label}"
        self._header.value = (
            f"<div class='relviz-studio-header' style='{_SMALL};margin-bottom:4px'>"
            f"<b style='font-size:15px'>relviz Studio</b> · {html.escape(self.schema.name or 'database')}: "
            f"{len(self.schema.tables)} tables, {n_fk} foreign keys → ε = {plan.epsilon:g}, δ = {plan.delta:g}, "
            f"{len(plan.components)} budget components → run: <b>{html.escape(status)}</b> → compare: {compared}"
            f"<span style='color:var(--jp-ui-font-color2, #616161)'> · edits flow forward</span></div>")
