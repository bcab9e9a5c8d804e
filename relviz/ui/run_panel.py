"""The run panel: ipywidgets over :class:`~relviz.run.Run`.

Launch starts the synthesis in the run's background thread, so the notebook stays responsive.
The panel shows one progress bar per plan component (private table, FK, relation) with the
engine's stage text and the seconds spent in it, the live privacy ledger as a stacked bar (ρ spent
against the plan, one segment per component, each segment as wide as the component's exact
share and filled as far as it has spent), Cancel (the run stops at the engine's next step; the
ledger stays true and the session usable), and errors with their full message. On success
``panel.run.result`` holds the synthetic :class:`~relviz.database.Database` and
``panel.run.ledger`` the :class:`~relviz.privacy.accountant.Accountant`.

The run reports from its worker thread; the panel redraws at most every ``min_interval``
seconds (a one-shot timer coalesces bursts of events, and ticks once a second while the engine is
busy in one long step, so the elapsed times keep moving). No thread polls.
"""

from __future__ import annotations

import html
import threading
import time
from fractions import Fraction
from typing import Any

import ipywidgets as W
import traitlets

from relviz.database import Database
from relviz.plan import Plan
from relviz.run import ComponentProgress, Run, RunSnapshot

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

    Attributes:
        run: The :class:`~relviz.run.Run` (observable trait; ``run.result``, ``run.ledger``).
        status: The run's status, mirrored as an observable trait (for the Studio).
    """

    run = traitlets.Instance(Run)
    status = traitlets.Unicode("idle")

    def __init__(self, db: Database | None = None, plan: Plan | None = None, *, random_state: int | None = None,
                 run: Run | None = None, min_interval: float = 0.2, allow_inferred: bool = False,
                 **kwargs: Any) -> None:
        if run is None:
            if db is None:
                raise TypeError("give a database (and optionally a plan) or a Run")
            run = Run(db, plan, random_state=random_state, allow_inferred=allow_inferred)
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
        self._launch.on_click(lambda _: self.launch())
        self._cancel.on_click(lambda _: self.cancel())
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

    def _children(self) -> list[W.Widget]:
        return [self._title,
                W.HBox([self._launch, self._cancel, self._status], layout=W.Layout(align_items="center")),
                self._progress, self._ledger, self._message, self._result]

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

        Returns:
            ``True`` if it started; ``False`` (with the reason shown) otherwise.
        """
        run = self.run
        try:
            if self._pending is not None and not run.active:
                run.configure(**self._pending)
                self._pending = None
            run.start()
        except (RuntimeError, ValueError) as e:
            self._message.value = self._box("warn", f"Not started: {html.escape(str(e))}")
            return False
        return True

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
                self._message.value = self._message_html(snap)
                self._result.value = self._result_html(run, snap)
                self._launch.disabled = snap.active
                self._launch.description = "Launch" if snap.attempt == 0 else "Launch again"
                self._cancel.disabled = snap.status != "running"
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
    def _status_html(snap: RunSnapshot) -> str:
        color = _STATUS_COLORS.get(snap.status, "inherit")
        elapsed = f" · {_fmt_s(snap.elapsed)}" if snap.attempt else ""
        pct = f" · {100 * snap.fraction:.0f}%" if snap.active else ""
        msg = f" · <span style='{_GREY}'>{html.escape(snap.message)}</span>" if snap.message else ""
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
        head = (f"<div style='{_SMALL};font-weight:600;margin:6px 0 2px'>Progress "
                f"<span style='font-weight:normal;{_GREY}'>(per component: fit, then sample)</span></div>")
        return (head + "<div class='relviz-rp-rows' style='display:grid;grid-template-columns:"
                "minmax(180px, 1.3fr) minmax(160px, 2fr) 44px minmax(200px, 2fr) 60px;gap:3px 10px;"
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
                f"data-stage='{c.stage}' style='height:12px;border-radius:6px;overflow:hidden;"
                f"background:var(--jp-layout-color3, #e0e0e0)'>"
                f"<div class='relviz-rp-fill' style='height:100%;width:{pct:.1f}%;background:{fill};"
                f"transition:width 0.2s'></div></div>"
                f"<div style='text-align:right'>{pct:.0f}%</div>"
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
        history = [a for a in snap.attempts if a.number != snap.attempt or snap.active]
        if history:
            items = "; ".join(f"#{a.number} {a.status} after {_fmt_s(a.seconds)} (ρ {_fmt_rho(a.rho_spent)} "
                              f"of {_fmt_rho(a.rho_total)})" for a in history[-5:])
            parts.append(f"<div style='{_SMALL};{_GREY}'>earlier attempts: {items}</div>")
        return "".join(parts)
