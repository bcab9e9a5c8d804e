"""The run panel: ipywidgets over :class:`~relviz.run.Run`.

Launch starts the synthesis in the run's background thread, so the notebook stays responsive.
The panel shows one progress bar per plan component (private table, FK, relation) with the
engine's stage text and the seconds spent in it, the live privacy ledger as a stacked bar (ρ spent
against the plan, one segment per component, each segment as wide as the component's exact
share and filled as far as it has spent), Cancel (the run stops at the engine's next step; the
ledger stays true and the session usable), and errors with their full message. On success
``panel.run.result`` holds the synthetic :class:`~relviz.database.Database` and
``panel.run.ledger`` the :class:`~relviz.privacy.accountant.Accountant`.

Progress is one percentage — the run's, over every component — beside the stage text (which
component, fit or sample, the engine's last message, the seconds in this step); each row's bar
shows its component's part without a number of its own, so that two percentages never disagree.

Every run costs privacy: the **session ledger** (:class:`~relviz.privacy.session.SessionLedger`,
one per database in the kernel, shared with any other panel or Studio on the same data) adds up
what every attempt spent — ρ exactly, and (ε, δ) — and the panel shows it under the run's own
ledger, with the attempts. The user may set a session cap (ε, δ); a plan that does not fit in what
it leaves disables Launch and says why in words (``Run.start`` refuses it too).

Launch is also disabled while the Studio's Schema tab lists a problem that a run would refuse
(:meth:`RunPanel.set_blockers`), naming it. It reads "Launch again" once an attempt has finished.
No callback's exception vanishes: it is logged and shown in the panel (:mod:`relviz.ui._errors`).

The run reports from its worker thread; the panel redraws at most every ``min_interval``
seconds (a one-shot timer coalesces bursts of events, and ticks once a second while the engine is
busy in one long step, so the elapsed times keep moving). No thread polls.
"""

from __future__ import annotations

import html
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import ipywidgets as W
import traitlets

from relviz.database import Database
from relviz.errors import BudgetError
from relviz.plan import Plan
from relviz.privacy.measure import CURATOR_VIEW
from relviz.privacy.session import SessionLedger, session_ledger
from relviz.run import ComponentProgress, Run, RunSnapshot
from relviz.synthesizer import NOT_DP
from relviz.ui._errors import error_html, guard, guarded

__all__ = ["RunPanel", "COMPONENT_COLORS"]

COMPONENT_COLORS = ("#0ea5a4", "#6366f1", "#f59e0b", "#ec4899", "#10b981", "#8b5cf6", "#ef4444",
                    "#0284c7", "#84cc16", "#f97316")
"""Segment colours of the ledger bar, one per component in plan order (cycled)."""

_SMALL = "font-size:12px;line-height:1.4"
_GREY = "color:var(--jp-ui-font-color2, #616161)"
_STATUS_COLORS = {"idle": "var(--jp-ui-font-color2, #616161)", "running": "var(--jp-brand-color1, #1976d2)",
                  "cancelling": "var(--jp-warn-color1, #f57c00)", "cancelled": "var(--jp-warn-color1, #f57c00)",
                  "failed": "var(--jp-error-color1, #d32f2f)", "done": "var(--jp-success-color1, #388e3c)"}
_KIND = {"table": "table", "edge": "FK", "relation": "relation"}


def _fmt_rho(x: Fraction | float) -> str:
    return f"{float(x):.4g}"


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class RunPanel(W.VBox):
    """Launch, watch and cancel a synthesis run; read its result and ledger.

    Args:
        db: The real database (with its schema).
        plan: The plan (default ``Plan.default(db.schema)``).
        random_state: Seed of the run (for study and teaching, not for release).
        allow_inferred: Run on domains read from the data (the release is then not differentially
            private; see :class:`~relviz.run.Run`). Off by default: such a run fails, listing them.
        run: An existing :class:`~relviz.run.Run` to show instead (``db``/``plan`` then ignored).
        min_interval: Minimum seconds between redraws.
        session: The :class:`~relviz.privacy.session.SessionLedger` every attempt is charged to
            (default: the run's, else the database's in this kernel, :func:`session_ledger`).

    Attributes:
        run: The :class:`~relviz.run.Run` (observable trait; ``run.result``, ``run.ledger``).
        status: The run's status, mirrored as an observable trait (for the Studio).
        session: The session ledger shown.
        blockers: Why Launch is disabled (problems a run would refuse), as set by the Studio.
    """

    run = traitlets.Instance(Run)
    status = traitlets.Unicode("idle")

    def __init__(self, db: Database | None = None, plan: Plan | None = None, *, random_state: int | None = None,
                 run: Run | None = None, min_interval: float = 0.2, allow_inferred: bool = False,
                 session: SessionLedger | None = None, **kwargs: Any) -> None:
        if run is None:
            if db is None:
                raise TypeError("give a database (and optionally a plan) or a Run")
            run = Run(db, plan, random_state=random_state, allow_inferred=allow_inferred)
        if session is None:
            session = run.session if run.session is not None else session_ledger(run.db)
        run.session = session
        self.session = session
        self.blockers: list[str] = []
        self._blockers_where = ""
        self._notice = ""  # a refusal or an error, shown until the next launch or input change
        self._min_interval = float(min_interval)
        self._tlock = threading.Lock()
        self._rlock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last_render = 0.0
        self._last_status = ""
        self._pending: dict[str, Any] | None = None
        self._unsubscribe: Any = None
        self._build()
        super().__init__(children=self._children(), **kwargs)
        self.add_class("relviz-rp")
        self._session_off = session.observe(lambda _: self._on_event(self.run))
        self.run = run

    # -- construction ----------------------------------------------------------------------------
    def _build(self) -> None:
        self._title = W.HTML()
        self._launch = W.Button(description="Launch", icon="play", button_style="success",
                                tooltip="fit and sample in a background thread (the notebook stays usable)",
                                layout=W.Layout(width="140px"))
        self._launch.add_class("relviz-rp-launch")
        self._cancel = W.Button(description="Cancel", icon="stop", button_style="danger", disabled=True,
                                tooltip="stop at the next step; the ledger stays true",
                                layout=W.Layout(width="110px"))
        self._cancel.add_class("relviz-rp-cancel")
        self._launch.on_click(lambda _: self._click_launch())
        self._cancel.on_click(lambda _: self._click_cancel())
        self._status = W.HTML()
        self._status.add_class("relviz-rp-status")
        self._progress = W.HTML()
        self._progress.add_class("relviz-rp-progress")
        self._ledger = W.HTML()
        self._ledger.add_class("relviz-rp-ledger")
        self._message = W.HTML()
        self._message.add_class("relviz-rp-message")
        self._result = W.HTML()
        self._result.add_class("relviz-rp-result")
        self._blocked = W.HTML()
        self._blocked.add_class("relviz-rp-blocked")
        self._session_html = W.HTML()
        self._session_html.add_class("relviz-rp-session")
        self._cap_eps = W.Text(value="", placeholder="none", description="session cap ε",
                               layout=W.Layout(width="170px"), style={"description_width": "initial"},
                               continuous_update=False)
        self._cap_eps.add_class("relviz-rp-cap-epsilon")
        self._cap_delta = W.Text(value="1e-06", description="δ", layout=W.Layout(width="110px"),
                                 style={"description_width": "initial"}, continuous_update=False)
        self._cap_delta.add_class("relviz-rp-cap-delta")
        self._cap_set = W.Button(description="Set cap", tooltip="refuse any run that would take the session "
                                 "past this (ε, δ); empty ε: no cap", layout=W.Layout(width="auto"))
        self._cap_set.add_class("relviz-rp-cap-set")
        self._cap_set.on_click(lambda _: self._click_cap())
        self._cap_msg = W.HTML()
        self._cap_msg.add_class("relviz-rp-cap-message")
        self._save_dir = W.Text(value="release", description="folder", layout=W.Layout(width="260px"),
                                style={"description_width": "initial"})
        self._save_dir.add_class("relviz-rp-save-dir")
        self._save_model = W.Checkbox(value=True, description="with the fitted models", indent=False,
                                      tooltip="add synthesizer.pkl: the fitted models without the noise "
                                      "seed, so that others can sample more (unticked: tables, ledger, "
                                      "plan and schema only)", layout=W.Layout(width="auto"))
        self._save_model.add_class("relviz-rp-save-model")
        self._save = W.Button(description="Save release", icon="save", disabled=True,
                              tooltip="write the synthetic tables (Parquet, SQLite), the ledger, plan, "
                              "schema and, if ticked, the fitted models: the release, safe to share",
                              layout=W.Layout(width="auto"))
        self._save.add_class("relviz-rp-save")
        self._save.on_click(lambda _: self._click_save())
        self._save_msg = W.HTML()
        self._save_msg.add_class("relviz-rp-save-message")

    def _children(self) -> list[W.Widget]:
        return [self._title,
                W.HBox([self._launch, self._cancel, self._status], layout=W.Layout(align_items="center")),
                self._blocked, self._progress, self._ledger, self._message, self._result,
                W.HBox([self._save_dir, self._save_model, self._save, self._save_msg],
                       layout=W.Layout(align_items="center", flex_flow="row wrap")),
                self._session_html,
                W.HBox([self._cap_eps, self._cap_delta, self._cap_set, self._cap_msg],
                       layout=W.Layout(align_items="center", flex_flow="row wrap"))]

    # -- the run -----------------------------------------------------------------------------------
    @traitlets.observe("run")
    def _on_run_changed(self, change: dict[str, Any]) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        new: Run = change["new"]
        self._unsubscribe = new.observe(self._on_event)
        self._render()

    def launch(self) -> bool:
        """Start the run (with the inputs given to :meth:`set_inputs` since the last run).

        Refused (nothing starts) while :attr:`blockers` lists problems, or when the plan does not
        fit in what the session cap leaves.

        Returns:
            ``True`` if it started; ``False`` (with the reason shown) otherwise.
        """
        run = self.run
        if self.blockers and not run.active:
            self._notice = self._box("warn", "Not started: " + html.escape(self._blocked_text()))
            self._render()
            return False
        try:
            if self._pending is not None and not run.active:
                run.configure(**self._pending)
                self._pending = None
            run.start()
        except (RuntimeError, ValueError, BudgetError) as e:
            self._notice = self._box("warn", f"<span class='relviz-rp-refused'>Not started: "
                                     f"{html.escape(str(e))}</span>")
            self._render()
            return False
        self._notice = ""
        return True

    def save_release(self, directory: str | Path, *, model: bool = True) -> list[Path]:
        """Write the finished run's release folder (:func:`relviz.release.write_release`): the
        synthetic tables as Parquet and SQLite, ``ledger.json``, ``plan.json``, ``schema.json``
        and, with ``model``, the fitted models without the noise seed (``synthesizer.pkl``).

        Returns:
            The paths written.

        Raises:
            RuntimeError: no finished run to save.
            FileExistsError: ``directory`` holds files that are not a release's.
        """
        from relviz.release import write_release

        run = self.run
        if run.status != "done" or run.result is None or run.synthesizer is None:
            raise RuntimeError("no finished run to save: Launch a run first")
        return write_release(directory, run.synthesizer, run.result, model=model)

    def _click_save(self) -> None:
        folder = Path(self._save_dir.value.strip() or "release").expanduser()
        try:
            paths = self.save_release(folder, model=self._save_model.value)
        except (RuntimeError, OSError) as e:
            self._save_msg.value = ("<span class='relviz-rp-save-error' style='color:var(--jp-error-color1,"
                                    f"#d32f2f)'>Not saved: {html.escape(str(e))}</span>")
            return
        notes = self.run.ledger.notes if self.run.ledger is not None else []
        not_dp = any(str(n).startswith(NOT_DP) for n in notes)
        self._save_msg.value = (
            f"<span class='relviz-rp-saved'>✓ Saved to <code>{html.escape(str(folder.resolve()))}</code>: "
            + ", ".join(html.escape(p.name) for p in paths)
            + (" — <b>not differentially private</b> (see the ledger's notes)" if not_dp else "")
            + "</span>")

    def set_blockers(self, problems: list[str], where: str = "the Schema tab") -> None:
        """Disable Launch while ``problems`` (what a run would refuse) are listed ``where``."""
        self.blockers = [str(p) for p in problems]
        self._blockers_where = where
        self._render()

    def set_cap(self, epsilon: float | str | None, delta: float | str | None = None) -> bool:
        """Set (``None``: remove) the session cap (ε, δ); ``False`` with the reason shown if refused."""
        try:
            text = self.session.set_cap(epsilon, delta)
        except ValueError as e:
            self._cap_msg.value = (f"<span class='relviz-rp-cap-refused' style='{_SMALL};color:var(--jp-error-color1, "
                                   f"#d32f2f)'>✗ refused: {html.escape(str(e))}; the cap is unchanged</span>")
            self._render()
            return False
        self._cap_msg.value = (f"<span class='relviz-rp-cap-ok' style='{_SMALL};color:var(--jp-success-color1, "
                               f"#388e3c)'>✓ {html.escape(text)}</span>")
        self._render()
        return True

    def _blocked_text(self) -> str:
        n = len(self.blockers)
        head = "; ".join(self.blockers[:3]) + (f"; and {n - 3} more" if n > 3 else "")
        return (f"{self._blockers_where} lists {n} problem{'s' if n != 1 else ''} that a run would refuse — "
                f"{head}. Fix {'it' if n == 1 else 'them'} there first")

    def _show_error(self, where: str, e: BaseException) -> None:
        self._notice = error_html(where, e)
        self._message.value = self._notice

    @guarded("launching the run")
    def _click_launch(self) -> None:
        self.launch()

    @guarded("cancelling the run")
    def _click_cancel(self) -> None:
        self.cancel()

    @guarded("setting the session cap")
    def _click_cap(self) -> None:
        self.set_cap(self._cap_eps.value, self._cap_delta.value)

    def cancel(self) -> bool:
        """Ask the run to stop at its next step."""
        return self.run.cancel()

    def set_inputs(self, db: Database | None = None, plan: Plan | None = None) -> str:
        """Use this database and/or plan for the next launch.

        Applied at once when the run is not active (the progress rows follow the new plan);
        otherwise kept and applied at the next Launch.

        Returns:
            ``"applied"`` or ``"pending"``.
        """
        if db is None and plan is None:
            return "applied"
        same = (db is None or db is self.run.db) and (plan is None or plan == self.run.plan)
        if same and self._pending is None:
            return "applied"
        self._notice = ""
        pending = dict(self._pending or {})
        if db is not None:
            pending["db"] = db
        if plan is not None:
            pending["plan"] = plan
        if self.run.active:
            self._pending = pending
            self._render()
            return "pending"
        self._pending = None
        self.run.configure(**pending)
        return "applied"

    # -- redraw (throttled) -------------------------------------------------------------------------
    def _on_event(self, run: Run) -> None:
        status = run.status
        now = time.monotonic()
        with self._tlock:
            due = status != self._last_status or now - self._last_render >= self._min_interval
            if not due:
                if self._timer is None:
                    self._arm(self._min_interval - (now - self._last_render))
                return
        self._render()

    def _arm(self, delay: float) -> None:
        """Arm the one-shot redraw timer (call with ``_tlock`` held)."""
        t = threading.Timer(max(delay, 0.01), self._tick)
        t.daemon = True
        self._timer = t
        t.start()

    def _tick(self) -> None:
        with self._tlock:
            self._timer = None
        self._render()

    def _render(self) -> None:
        with guard("redrawing the run panel", lambda e: self._show_error("redrawing the run panel", e)):
            self._render_now()

    def _render_now(self) -> None:
        run = self.run
        if run is None:
            return
        with self._rlock:
            snap = run.snapshot()
            with self._tlock:
                self._last_render = time.monotonic()
                self._last_status = snap.status
                if snap.active and self._timer is None:  # keep the clock moving during long steps
                    self._arm(1.0)
            with self.hold_sync():
                self._title.value = self._title_html(run, snap)
                self._status.value = self._status_html(snap)
                self._progress.value = self._progress_html(snap)
                self._ledger.value = self._ledger_html(run, snap)
                self._message.value = self._message_html(snap) + self._notice
                self._result.value = self._result_html(run, snap)
                refusal = None if snap.active else self._session_refusal(run)
                self._blocked.value = self._blocked_html(snap, refusal)
                self._session_html.value = self._session_view(run, snap, refusal)
                self._launch.disabled = snap.active or bool(self.blockers) or refusal is not None
                # "again" only once an attempt has finished (not during the first run)
                self._launch.description = "Launch again" if snap.attempts else "Launch"
                self._launch.tooltip = (self._blocked_text() if self.blockers else refusal if refusal else
                                        "fit and sample in a background thread (the notebook stays usable)")
                self._cancel.disabled = snap.status != "running"
                self._save.disabled = snap.status != "done" or run.result is None
                if snap.status != "done":
                    self._save_msg.value = ""
            if self.status != snap.status:
                self.status = snap.status

    # -- html ----------------------------------------------------------------------------------------
    @staticmethod
    def _box(kind: str, body: str) -> str:
        color = {"error": "var(--jp-error-color1, #d32f2f)", "warn": "var(--jp-warn-color1, #f57c00)",
                 "ok": "var(--jp-success-color1, #388e3c)", "info": "var(--jp-brand-color1, #1976d2)"}[kind]
        return (f"<div class='relviz-rp-box {kind}' style='{_SMALL};border-left:4px solid {color};"
                f"padding:4px 8px;margin:4px 0;background:var(--jp-layout-color2, #f5f5f5)'>{body}</div>")

    def _title_html(self, run: Run, snap: RunSnapshot) -> str:
        name = html.escape(run.db.schema.name or "database")
        seed = "none (release mode)" if run.random_state is None else f"{run.random_state} (seeded: for study, not release)"
        pending = ""
        if self._pending is not None:
            pending = (" <span style='color:var(--jp-warn-color1, #f57c00)'>· the plan or schema changed: the next "
                       "Launch uses the new one</span>")
        if run.allow_inferred and run.db.schema.inferred_problems():
            pending += (" <b class='relviz-rp-not-dp' style='color:var(--jp-error-color1, #d32f2f)'>· NOT "
                        "differentially private: domains read from the data are allowed</b>")
        return (f"<div style='{_SMALL}'><b style='font-size:14px'>Run</b> &nbsp;{name}: ε = {snap.epsilon:g}, "
                f"δ = {snap.delta:g} → ρ = {_fmt_rho(snap.rho_total)}, {len(snap.components)} components; "
                f"seed: {html.escape(seed)}{pending}</div>")

    @staticmethod
    def stage_text(snap: RunSnapshot) -> str:
        """What the run is doing now, in words: the component, fit or sample, the engine's last
        message and the seconds spent in this step (empty when nothing is running)."""
        if not snap.active:
            return snap.message
        current = [c for c in snap.components if c.stage in ("fit", "sample") and 0 < c.fraction < 1]
        if not current:
            return snap.message or "starting"
        c = max(current, key=lambda c: c.elapsed)
        verb = {"fit": "fitting", "sample": "sampling"}[c.stage]
        kind = _KIND.get(c.kind, c.kind)
        text = f"{verb} {kind} {c.label} ({c.method})"
        if c.message:
            text += f": {c.message}"
        return text + f" — {_fmt_s(c.elapsed)} in this step"

    @staticmethod
    def _status_html(snap: RunSnapshot) -> str:
        color = _STATUS_COLORS.get(snap.status, "inherit")
        elapsed = f" · {_fmt_s(snap.elapsed)}" if snap.attempt else ""
        pct = (f" · <b class='relviz-rp-percent' data-percent='{100 * snap.fraction:.0f}'>"
               f"{100 * snap.fraction:.0f}%</b>" if snap.active else "")
        text = RunPanel.stage_text(snap)
        msg = f" · <span class='relviz-rp-stage-now' style='{_GREY}'>{html.escape(text)}</span>" if text else ""
        return (f"<div class='relviz-rp-status-text' data-status='{snap.status}' data-attempt='{snap.attempt}' "
                f"data-fraction='{snap.fraction:.4f}' style='{_SMALL};margin-left:8px'>"
                f"<b style='color:{color}'>{snap.status}</b>{pct}{elapsed}{msg}</div>")

    @staticmethod
    def _progress_html(snap: RunSnapshot) -> str:
        if not snap.components:
            return f"<div style='{_SMALL};{_GREY}'>The plan has no private component: nothing to synthesise.</div>"
        rows = []
        failed = snap.status in ("failed", "cancelled")
        for c in snap.components:
            rows.append(RunPanel._row_html(c, failed))
        pct = 100 * snap.fraction
        head = (f"<div style='{_SMALL};font-weight:600;margin:6px 0 2px'>Progress "
                f"<span class='relviz-rp-overall' data-percent='{pct:.0f}'>{pct:.0f}%</span> "
                f"<span style='font-weight:normal;{_GREY}'>of the whole run (each component: fit, then "
                "sample; its bar shows its own part)</span></div>"
                f"<div class='relviz-rp-overall-track' style='height:8px;border-radius:4px;overflow:hidden;"
                f"margin:0 0 4px;background:var(--jp-layout-color3, #e0e0e0)'><div style='height:100%;"
                f"width:{pct:.1f}%;background:var(--jp-brand-color1, #1976d2);transition:width 0.2s'></div></div>")
        return (head + "<div class='relviz-rp-rows' style='display:grid;grid-template-columns:"
                "minmax(180px, 1.3fr) minmax(160px, 2fr) minmax(200px, 2fr) 60px;gap:3px 10px;"
                f"align-items:center;{_SMALL}'>" + "".join(rows) + "</div>")

    @staticmethod
    def _row_html(c: ComponentProgress, stopped: bool) -> str:
        pct = 100 * c.fraction
        if c.stage == "done":
            fill = "var(--jp-success-color1, #388e3c)"
        elif stopped and 0 < c.fraction < 1:
            fill = "var(--jp-warn-color1, #f57c00)"
        else:
            fill = "#0ea5a4"
        stage = {"waiting": "waiting", "fit": "fitting", "sample": "sampling", "done": "done"}.get(c.stage, c.stage)
        text = f"{stage}: {c.message}" if c.message and c.stage != "done" else stage
        kind = _KIND.get(c.kind, c.kind)
        name = html.escape(c.name)
        return (f"<div class='relviz-rp-name' title='{name} ({html.escape(c.method)})'>{kind} "
                f"<b>{html.escape(c.label)}</b> <span style='{_GREY}'>{html.escape(c.method)}</span></div>"
                f"<div class='relviz-rp-track' data-component='{name}' data-fraction='{c.fraction:.4f}' "
                f"data-stage='{c.stage}' title='{html.escape(c.label)}: {pct:.0f}% of this component' "
                f"style='height:12px;border-radius:6px;overflow:hidden;"
                f"background:var(--jp-layout-color3, #e0e0e0)'>"
                f"<div class='relviz-rp-fill' style='height:100%;width:{pct:.1f}%;background:{fill};"
                f"transition:width 0.2s'></div></div>"
                f"<div class='relviz-rp-stage' style='{_GREY};white-space:nowrap;overflow:hidden;"
                f"text-overflow:ellipsis' title='{html.escape(text)}'>{html.escape(text)}</div>"
                f"<div class='relviz-rp-elapsed' style='text-align:right'>{_fmt_s(c.elapsed) if c.elapsed else ''}</div>")

    @staticmethod
    def _ledger_html(run: Run, snap: RunSnapshot) -> str:
        total = snap.rho_total
        if total <= 0:
            return ""
        segs, legend = [], []
        for i, c in enumerate(snap.components):
            color = COMPONENT_COLORS[i % len(COMPONENT_COLORS)]
            share = float(c.planned / total) if total else 0.0
            filled = float(c.spent / c.planned) if c.planned else 0.0
            tip = f"{c.label}: ρ {_fmt_rho(c.spent)} of {_fmt_rho(c.planned)} spent ({100 * filled:.0f}%)"
            segs.append(f"<div class='relviz-rp-seg' data-component='{html.escape(c.name)}' "
                        f"data-spent='{float(c.spent):.6g}' data-planned='{float(c.planned):.6g}' "
                        f"title='{html.escape(tip)}' style='width:{100 * share:.3f}%;height:100%;"
                        f"background:{color}33;border-right:1px solid var(--jp-layout-color1, #fff);"
                        f"box-sizing:border-box'><div style='height:100%;width:{100 * min(filled, 1):.2f}%;"
                        f"background:{color}'></div></div>")
            legend.append(f"<span style='white-space:nowrap;margin-right:12px'><span style='display:inline-block;"
                          f"width:10px;height:10px;background:{color};border-radius:2px'></span> "
                          f"{html.escape(c.label)} {_fmt_rho(c.spent)}/{_fmt_rho(c.planned)}</span>")
        spent = snap.rho_spent
        exact = spent == total
        if snap.status == "done" and exact:
            verdict = ("<span class='relviz-rp-exact' style='color:var(--jp-success-color1, #388e3c)'>"
                       "✓ exactly the plan (exact fractions)</span>")
        elif snap.status in ("cancelled", "failed") and run.ledger is not None:
            verdict = (f"<span style='color:var(--jp-warn-color1, #f57c00)'>what the {snap.status} attempt "
                       "spent (the ledger is true)</span>")
        elif snap.active:
            verdict = f"<span style='{_GREY}'>live</span>"
        else:
            verdict = ""
        eps = "" if snap.epsilon_spent is None else f" (ε ≈ {snap.epsilon_spent:.3g} of {snap.epsilon:g} at δ = {snap.delta:g})"
        pct = 100 * float(spent / total) if total else 0.0
        return (f"<div style='{_SMALL};margin-top:8px'><b>Privacy ledger</b> — ρ spent "
                f"<b class='relviz-rp-spent' data-spent='{float(spent):.6g}' data-total='{float(total):.6g}'>"
                f"{_fmt_rho(spent)}</b> of {_fmt_rho(total)} ({pct:.1f}%){eps} {verdict}</div>"
                f"<div class='relviz-rp-ledger-bar' style='display:flex;height:20px;width:100%;margin:3px 0;"
                f"border:1px solid var(--jp-border-color1, #bdbdbd);border-radius:4px;overflow:hidden'>"
                + "".join(segs) + "</div>"
                f"<div style='{_SMALL};{_GREY}'>" + "".join(legend) + "</div>")

    def _message_html(self, snap: RunSnapshot) -> str:
        if snap.status == "failed":
            return self._box("error", f"<b>✗ The run failed ({html.escape(snap.error_type)})</b> — nothing "
                             "beyond the ledger above was spent; fix the problem and Launch again."
                             f"<pre class='relviz-rp-error' style='white-space:pre-wrap;margin:4px 0'>"
                             f"{html.escape(snap.error)}</pre>")
        if snap.status == "cancelled":
            return self._box("warn", f"<b class='relviz-rp-cancelled'>Cancelled</b> at the next step "
                             f"({html.escape(snap.error)}). The ledger shows what that attempt spent; the "
                             "session is usable: Launch to start again.")
        if snap.status == "cancelling":
            return self._box("warn", "Cancelling: the run stops at the engine's next step (never inside a "
                             "noisy release).")
        return ""

    @staticmethod
    def _result_html(run: Run, snap: RunSnapshot) -> str:
        parts = []
        if snap.status == "done" and run.result is not None:
            from relviz.ui.compare import cap_notes

            report = getattr(run.synthesizer, "cap_report_", None)
            caps = cap_notes(run.db, report) if report is not None else ()
            if caps:  # the user must know the synthetic data imitate truncated data
                parts.append(RunPanel._box(
                    "warn", "<b class='relviz-rp-caps'>Degree caps removed real rows before synthesis:</b> "
                    + "; ".join(html.escape(c) for c in caps) + f" <i>({html.escape(CURATOR_VIEW)})</i>"))
            rows = ", ".join(f"{html.escape(t)} {n:,}" for t, n in snap.result_rows.items())
            acc = run.ledger
            entries = acc.ledger if acc is not None else ()
            table = "".join(
                f"<tr><td>{html.escape(e.component)}</td><td>{html.escape(e.label)}</td><td>{e.mechanism}</td>"
                f"<td style='text-align:right'>{float(e.rho):.4g}</td>"
                f"<td style='text-align:right'>{'' if e.sigma is None else f'{e.sigma:.4g}'}</td></tr>"
                for e in entries)
            parts.append(RunPanel._box(
                "ok", f"<b>✓ Done in {_fmt_s(snap.elapsed)}</b> — synthetic rows: {rows}. "
                "<code>run.result</code> holds the synthetic Database, <code>run.ledger</code> the ledger."
                f"<details style='margin-top:4px'><summary>ledger: {len(entries)} noisy releases</summary>"
                "<table style='font-size:11px;border-collapse:collapse'><tr><th>component</th><th>release</th>"
                f"<th>mechanism</th><th>ρ</th><th>σ</th></tr>{table}</table></details>"))
        history = list(snap.attempts)  # every finished attempt, the latest one included
        if history:
            items = "; ".join(f"#{a.number} {a.status} after {_fmt_s(a.seconds)} (ρ {_fmt_rho(a.rho_spent)} "
                              f"of {_fmt_rho(a.rho_total)})" for a in history[-6:])
            more = f" (and {len(history) - 6} before)" if len(history) > 6 else ""
            parts.append(f"<div class='relviz-rp-attempts' style='{_SMALL};{_GREY}'>attempts of this panel: "
                         f"{items}{more}</div>")
        return "".join(parts)

    # -- session ledger -------------------------------------------------------------------------------
    def _session_refusal(self, run: Run) -> str | None:
        try:
            return self.session.refusal(self._pending.get("plan", run.plan) if self._pending else run.plan,
                                        (self._pending.get("db", run.db) if self._pending else run.db).schema)
        except (ValueError, ArithmeticError):
            return None

    def _blocked_html(self, snap: RunSnapshot, refusal: str | None) -> str:
        if snap.active:
            return ""
        if self.blockers:
            items = "".join(f"<li>{html.escape(b)}</li>" for b in self.blockers[:5])
            more = f"<li>… and {len(self.blockers) - 5} more</li>" if len(self.blockers) > 5 else ""
            return self._box("error", f"<b class='relviz-rp-blocked-text'>Launch is disabled:</b> "
                             f"{html.escape(self._blockers_where)} lists {len(self.blockers)} problem"
                             f"{'s' if len(self.blockers) != 1 else ''} that a run would refuse. Fix "
                             f"{'it' if len(self.blockers) == 1 else 'them'} there first:"
                             f"<ul style='margin:2px 0'>{items}{more}</ul>")
        if refusal is not None:
            return self._box("error", "<b class='relviz-rp-blocked-text'>Launch is disabled by the session "
                             f"cap:</b> {html.escape(refusal)}.")
        return ""

    def _session_view(self, run: Run, snap: RunSnapshot, refusal: str | None) -> str:
        s = self.session
        summ = s.summary()
        attempts = summ["attempts"]
        n = len(attempts)
        spent, cap = summ["rho_spent"], summ["cap"]
        name = html.escape(s.database)
        if n:
            what = (f"{n} run attempt{'s' if n != 1 else ''} on <b>{name}</b> in this kernel spent "
                    f"<b class='relviz-rp-session-spent' data-rho='{spent:.6g}' data-attempts='{n}'>ρ = "
                    f"{_fmt_rho(spent)}</b> in all (ε ≈ {summ['epsilon_spent']:.3g} at δ = {summ['delta']:g}, "
                    f"{'Gaussian-DP' if summ['conversion'] == 'gdp' else 'zCDP'} composition)")
        else:
            what = (f"<span class='relviz-rp-session-spent' data-rho='0' data-attempts='0'></span>nothing spent on "
                    f"<b>{name}</b> in this kernel yet")
        if summ["reserved"]:
            what += f"; the running attempt holds ρ = {_fmt_rho(summ['reserved'])}"
        bar = ""
        if cap is None:
            capline = ("No session cap: nothing is refused, but <b>every run costs privacy</b> — Launch again "
                       "spends the plan's budget again on the same data. Set a cap to refuse runs past it.")
            if n > 1:
                capline = (f"<span style='color:var(--jp-warn-color1, #f57c00)'>⚠ These data have been used {n} "
                           "times: the privacy losses add up.</span> " + capline)
        else:
            cap_rho, left = float(cap["rho"]), float(summ["remaining"])
            plan, schema = ((self._pending.get("plan", run.plan), self._pending.get("db", run.db).schema)
                            if self._pending else (run.plan, run.db.schema))
            if not snap.active:  # the cap as the next run of this plan is checked against it
                try:
                    c = s.cap_for(plan, schema)
                    if c is not None:
                        cap_rho, left = float(c[0]), float(c[1])
                except (ValueError, ArithmeticError):
                    pass
            used = min(1.0, (spent + summ["reserved"]) / cap_rho) if cap_rho else 1.0
            capline = (f"Session cap ε = {cap['epsilon']:g}, δ = {cap['delta']:g} (ρ = {_fmt_rho(cap_rho)}): "
                       f"<b class='relviz-rp-session-left' data-rho='{left:.6g}'>ρ = {_fmt_rho(left)} left</b>")
            if not snap.active:
                try:
                    need = float(s.need(plan, schema)[0])
                    capline += (f"; the current plan needs ρ = {_fmt_rho(need)} — "
                                + ("<span style='color:var(--jp-error-color1, #d32f2f)'>does not fit</span>"
                                   if refusal else "<span style='color:var(--jp-success-color1, #388e3c)'>fits</span>"))
                except (ValueError, ArithmeticError):
                    pass
            color = "var(--jp-error-color1, #d32f2f)" if used >= 0.9 else "var(--jp-brand-color1, #1976d2)"
            bar = (f"<div class='relviz-rp-session-bar' style='height:8px;border-radius:4px;overflow:hidden;"
                   f"margin:2px 0;background:var(--jp-layout-color3, #e0e0e0)'><div style='height:100%;"
                   f"width:{100 * used:.1f}%;background:{color}'></div></div>")
        cell = "padding:1px 14px 1px 0;text-align:left;line-height:1.3"
        rows = "".join(
            f"<tr><td style='{cell}'>#{a['number']}</td><td style='{cell}'>{html.escape(a['status'])}</td>"
            f"<td style='{cell}'>{_fmt_rho(a['rho'])}</td><td style='{cell}'>ε = {a['epsilon']:g}, δ = {a['delta']:g}</td>"
            f"<td style='{cell}'>{html.escape(', '.join(sorted(set(a['methods'].values()))))}</td></tr>"
            for a in attempts[-8:])
        more = (f"<div style='{_SMALL};{_GREY}'>… and {len(attempts) - 8} earlier attempt(s)</div>"
                if len(attempts) > 8 else "")
        table = ("" if not attempts else
                 "<table class='relviz-rp-session-attempts' style='font-size:11px;border-collapse:collapse;"
                 f"margin:2px 0'><tr><th style='{cell}'>attempt</th><th style='{cell}'>status</th>"
                 f"<th style='{cell}'>ρ spent</th><th style='{cell}'>plan</th><th style='{cell}'>methods</th></tr>"
                 f"{rows}</table>{more}")
        return (f"<div style='{_SMALL};margin-top:10px'><b>Session ledger</b> — {what}.<br>{capline}</div>"
                f"{bar}{table}")
