"""Run: background fit + sample, progress, live ledger, cancel, failure, restart (no browser; the
widgets over it are tested in tests/ui/test_run_panel.py and tests/ui/test_studio.py)."""

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
