"""Run: background fit + sample, progress, live ledger, cancel, failure, restart (no browser)."""

from __future__ import annotations

import threading
from fractions import Fraction

import pytest

from relviz.database import Database
from relviz.plan import Plan
from relviz.run import Run, RunSnapshot
from tests.conftest import tiny_frames


def _plan(db: Database) -> Plan:
    return Plan.default(db.schema, 1.0, 1e-6, mechanism="independent")


def test_start_wait_result_and_ledger_equals_plan(tiny_db: Database) -> None:
    plan = _plan(tiny_db)
    run = Run(tiny_db, plan, random_state=0)
    assert run.status == "idle" and run.result is None and run.ledger is None
    snaps: list[RunSnapshot] = []
    run.observe(lambda r: snaps.append(r.snapshot()))
    assert run.start() is run
    assert run.wait(60)
    assert run.status == "done", run.error
    assert run.error is None
    fake = run.result
    assert isinstance(fake, Database) and fake.problems() == []
    assert set(fake.table_names) == set(tiny_db.table_names)
    # the ledger is the accountant: exactly the plan, per component and in total
    assert run.ledger is run.synthesizer.accountant_
    assert run.ledger.spent() == Fraction(plan.rho_total)
    for c in plan.components:
        assert run.ledger.spent(c.name) == plan.rho_of(c.name)
    # progress moved through both stages of every component and the live ledger grew
    statuses = [s.status for s in snaps]
    assert statuses[0] == "running" and statuses[-1] == "done"
    names = {c.name for c in plan.components}
    assert {c.name for c in snaps[-1].components} == names
    assert all(c.fraction == 1.0 and c.stage == "done" for c in snaps[-1].components)
    mid = [s for s in snaps if s.status == "running"]
    assert any(0 < s.fraction < 1 for s in mid)
    assert {c.stage for s in mid for c in s.components} >= {"fit", "sample"}
    spent = [s.rho_spent for s in snaps]
    assert spent == sorted(spent) and spent[0] == 0 and spent[-1] == Fraction(plan.rho_total)
    last = snaps[-1]
    assert last.rho_spent == last.rho_total and last.ledger_entries == len(run.ledger.ledger)
    assert last.result_rows == fake.row_counts()
    assert sum(c.spent for c in last.components) == last.rho_total
    assert [a.status for a in last.attempts] == ["done"]
    d = last.to_dict()
    assert d["status"] == "done" and d["rho_spent_exact"] == d["rho_total_exact"]


def test_cancel_mid_run_then_start_again(tiny_db: Database) -> None:
    plan = _plan(tiny_db)
    run = Run(tiny_db, plan, random_state=0)
    seen: list[str] = []

    def cancel_in_persons(r: Run) -> None:  # the fit of the second table has begun: cancel
        s = r.snapshot()
        seen.append(s.status)
        persons = next(c for c in s.components if c.name == "persons")
        if s.status == "running" and persons.stage == "fit" and s.attempt == 1:
            r.cancel()

    unsubscribe = run.observe(cancel_in_persons)
    run.start()
    assert run.wait(60)
    assert run.status == "cancelled"
    assert "cancelling" in seen
    assert run.error and "cancel" in run.error
    assert run.result is None
    # the ledger is true: households was paid for, persons not (cancelled at its next step)
    spent = run.ledger.spent()
    assert 0 < spent < Fraction(plan.rho_total)
    assert run.ledger.spent("households") == plan.rho_of("households")
    assert run.ledger.spent("persons") == 0
    assert run.attempts[-1].status == "cancelled" and run.attempts[-1].rho_spent == spent
    assert run.cancel() is False  # nothing to cancel any more
    # the session is usable: start again, successfully, with a fresh ledger
    unsubscribe()
    run.start()
    assert run.wait(60)
    assert run.status == "done", run.error
    assert run.ledger.spent() == Fraction(plan.rho_total)
    assert run.result.problems() == []
    assert [a.status for a in run.attempts] == ["cancelled", "done"]


def test_cancel_before_the_fit_starts(tiny_db: Database) -> None:
    run = Run(tiny_db, _plan(tiny_db))
    gate = threading.Event()
    # block the worker in the first progress event until cancel() was called
    in_worker = lambda: threading.current_thread().name.startswith("relviz-run")  # noqa: E731
    run.observe(lambda r: gate.wait(10) if in_worker() and r.status == "running" else None)
    run.start()
    assert run.cancel()
    gate.set()
    assert run.wait(60)
    assert run.status == "cancelled"


def test_failure_shows_message_and_session_stays_usable(tiny_db: Database) -> None:
    f = tiny_frames()
    f["persons"].loc[0, "hid"] = 12345  # an orphan: the engine refuses before reading anything
    bad = Database(tiny_db.schema, f, validate=False)
    plan = _plan(tiny_db)
    run = Run(bad, plan, random_state=0)
    run.start()
    assert run.wait(60)
    assert run.status == "failed"
    assert run.error_type == "DataError"
    assert "orphan" in run.error and "persons" in run.error
    assert run.result is None and run.ledger is None  # nothing was spent
    snap = run.snapshot()
    assert snap.error == run.error and snap.attempts[-1].status == "failed"
    # fix the input and start again
    run.configure(db=tiny_db)
    assert run.status == "idle" and run.error is None
    run.start()
    assert run.wait(60)
    assert run.status == "done", run.error
    assert run.ledger.spent() == Fraction(plan.rho_total)


def test_start_twice_and_configure_while_running_are_refused(tiny_db: Database) -> None:
    run = Run(tiny_db, _plan(tiny_db))
    gate = threading.Event()
    run.observe(lambda r: gate.wait(10) if r.status == "running" and r.snapshot().stage == "fit" else None)
    run.start()
    with pytest.raises(RuntimeError):
        run.start()
    with pytest.raises(RuntimeError):
        run.configure(plan=_plan(tiny_db))
    gate.set()
    assert run.wait(60) and run.status == "done"
    # a new plan for the next start: components follow it
    plan2 = _plan(tiny_db).with_budget(epsilon=2.0)
    run.configure(plan=plan2)
    assert run.plan is plan2 and run.snapshot().epsilon == 2.0
    assert run.result is not None  # the last success stays readable until the next start


def test_observer_errors_do_not_break_the_run(tiny_db: Database) -> None:
    run = Run(tiny_db, _plan(tiny_db), random_state=1)
    run.observe(lambda r: 1 / 0)
    run.start()
    assert run.wait(60) and run.status == "done"


def test_default_plan_and_component_labels(tiny_db: Database) -> None:
    run = Run(tiny_db)
    snap = run.snapshot()
    assert snap.status == "idle" and snap.fraction == 0 and snap.rho_spent == 0
    labels = {c.name: c.label for c in snap.components}
    assert labels["persons.hid->households"] == tiny_db.schema.foreign_key("persons.hid->households").label()
    assert sum(c.planned for c in snap.components) == snap.rho_total


# -- the widgets over Run, driven from Python (no browser) -----------------------------------------

def _until(pred, timeout: float = 30.0) -> bool:  # noqa: ANN001
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def test_run_panel_launch_progress_ledger_and_cancel(tiny_db: Database) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import RunPanel

    plan = _plan(tiny_db)
    panel = RunPanel(tiny_db, plan, random_state=0, min_interval=0.0)
    assert panel.status == "idle" and not panel._launch.disabled and panel._cancel.disabled
    assert panel._progress.value.count("relviz-rp-track") == len(plan.components)
    assert panel.launch()
    assert panel.run.wait(60) and _until(lambda: panel.status == "done")
    assert panel.run.ledger.spent() == Fraction(plan.rho_total)
    assert "data-status='done'" in panel._status.value
    assert "exactly the plan" in panel._ledger.value
    assert panel._progress.value.count("data-fraction='1.0000'") == len(plan.components)
    assert "Done in" in panel._result.value and "noisy releases" in panel._result.value
    assert panel._launch.description == "Launch again"

    # cancel through the panel while the second table is being fitted, then launch again
    def cancel_in_persons(r: Run) -> None:
        s = r.snapshot()
        if s.status == "running" and next(c for c in s.components if c.name == "persons").stage == "fit":
            panel.cancel()
    off = panel.run.observe(cancel_in_persons)
    panel.launch()
    assert panel.run.wait(60) and _until(lambda: panel.status == "cancelled")
    assert "relviz-rp-cancelled" in panel._message.value
    assert "what the cancelled attempt spent" in panel._ledger.value
    off()
    assert panel.launch() and panel.run.wait(60) and _until(lambda: panel.status == "done")
    assert "#2 cancelled" in panel._result.value

    # a plan change while idle applies at once; the rows follow it
    plan2 = Plan.default(tiny_db.schema, 2.0, 1e-6, mechanism="independent")
    assert panel.set_inputs(plan=plan2) == "applied" and panel.run.plan is plan2
    assert "ε = 2" in panel._title.value


def test_run_panel_shows_failures(tiny_db: Database) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import RunPanel

    f = tiny_frames()
    f["persons"].loc[0, "hid"] = 12345
    panel = RunPanel(Database(tiny_db.schema, f, validate=False), _plan(tiny_db), min_interval=0.0)
    panel.launch()
    assert panel.run.wait(60) and _until(lambda: panel.status == "failed")
    assert "DataError" in panel._message.value and "orphan" in panel._message.value
    assert not panel._launch.disabled  # usable: fix the data and launch again
    panel.set_inputs(db=tiny_db)
    assert panel.launch() and panel.run.wait(60) and _until(lambda: panel.status == "done")


def test_studio_edits_flow_forward_and_compare_fills_after_a_run(tiny_db: Database) -> None:
    pytest.importorskip("ipywidgets")
    import relviz

    studio = relviz.Studio(tiny_db, plan=_plan(tiny_db), random_state=0, tsne_n=40, propose=False)
    fk = "persons.hid->households"
    assert studio.run.plan == studio.plan and studio.comparison is None
    # schema → budget → run: delete an FK, the budget drops its row and the run follows
    assert studio.editor.remove_foreign_key(fk).ok
    assert fk not in {c.name for c in studio.plan.components}
    assert studio.run.plan == studio.plan
    assert sum(c.share for c in studio.plan.components) == 1
    assert studio.editor.add_foreign_key("persons", ["hid"], "households").ok
    assert studio.editor.set_cap(fk, 4).ok
    assert fk in {c.name for c in studio.plan.components}
    # an invalid edit (a cycle) is refused with its reason, and nothing flows
    before, flows = studio.plan, len(studio.history)
    refused = studio.editor.add_foreign_key("households", ["hid"], "persons")
    assert not refused.ok and "cycle" in refused.message
    assert studio.plan is before and len(studio.history) == flows
    assert studio.budget.set_share("households", "1/2").ok
    assert studio.run.plan.component("households").share == Fraction(1, 2)
    assert studio.run.plan.total_share() == 1
    # run → compare: the Run tab is showing, so the Studio switches to Compare and fills it
    studio.select("run")
    assert studio.run_panel.launch()
    assert studio.run.wait(60) and _until(lambda: studio.comparison is not None)
    assert studio.tabs.selected_index == 3
    assert studio.comparison.synthetic is studio.run.result
    assert _until(lambda: len(studio.compare._deg_fig.outputs) == 1)
    data = studio.compare._deg_fig.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert {t["name"] for t in data["data"]} == {"Real", "Synthetic"}
    assert "curator view (not private)" in studio.compare._banner.value
    steps = [what for _, what in studio.history]
    assert steps[-1] == "run → compare" and any(s.startswith("schema edit") for s in steps)


def test_import_relviz_does_not_import_widgets_until_studio_is_used() -> None:
    import subprocess
    import sys

    code = ("import sys, relviz\n"
            "assert 'ipywidgets' not in sys.modules and 'anywidget' not in sys.modules\n"
            "from relviz.run import Run\nfrom relviz.comparison import Comparison\n"
            "assert 'ipywidgets' not in sys.modules\n"
            "S = relviz.Studio\nassert S.__name__ == 'Studio' and 'ipywidgets' in sys.modules\n"
            "assert 'Studio' in relviz.__all__")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
