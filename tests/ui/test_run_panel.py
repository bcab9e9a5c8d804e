"""relviz.ui.run_panel without a browser: launch, progress, ledger, cancel and failures, driven from
Python."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relviz.database import Database
from relviz.plan import Plan
from relviz.run import Run
from tests.conftest import tiny_frames, until


def _plan(db: Database) -> Plan:
    return Plan.default(db.schema, 1.0, 1e-6, mechanism="independent")


def test_run_panel_launch_progress_ledger_and_cancel(tiny_db: Database) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import RunPanel

    plan = _plan(tiny_db)
    panel = RunPanel(tiny_db, plan, random_state=0, min_interval=0.0)
    assert panel.status == "idle" and not panel._launch.disabled and panel._cancel.disabled
    assert panel._progress.value.count("relviz-rp-track") == len(plan.components)
    assert panel.launch()
    assert panel.run.wait(60) and until(lambda: panel.status == "done")
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
    assert panel.run.wait(60) and until(lambda: panel.status == "cancelled")
    assert "relviz-rp-cancelled" in panel._message.value
    assert "what the cancelled attempt spent" in panel._ledger.value
    off()
    assert panel.launch() and panel.run.wait(60) and until(lambda: panel.status == "done")
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
    assert panel.run.wait(60) and until(lambda: panel.status == "failed")
    assert "DataError" in panel._message.value and "orphan" in panel._message.value
    assert not panel._launch.disabled  # usable: fix the data and launch again
    panel.set_inputs(db=tiny_db)
    assert panel.launch() and panel.run.wait(60) and until(lambda: panel.status == "done")


def test_run_panel_saves_the_release(tiny_db: Database, tmp_path) -> None:  # noqa: ANN001
    """*Save release* is disabled until a run is done, then writes the release folder (the CLI's
    ``release/``: tables, SQLite with no orphan, ledger = plan, the models without the seed),
    refuses a folder holding other files (writing nothing) and says so in the panel; unticked,
    "with the fitted models" leaves the models out."""
    pytest.importorskip("ipywidgets")
    import json
    import sqlite3

    from relviz.synthesizer import RelationalSynthesizer
    from relviz.ui import RunPanel

    panel = RunPanel(tiny_db, _plan(tiny_db), random_state=0, min_interval=0.0)
    assert panel._save.disabled
    with pytest.raises(RuntimeError, match="no finished run"):
        panel.save_release(tmp_path / "early")
    assert panel.launch() and panel.run.wait(60) and until(lambda: panel.status == "done")
    assert not panel._save.disabled
    out = tmp_path / "rel"
    panel._save_dir.value = str(out)
    panel._save.click()
    assert "relviz-rp-saved" in panel._save_msg.value and str(out) in panel._save_msg.value
    assert {p.name for p in out.iterdir()} == {"tables", "synthetic.sqlite", "ledger.json", "plan.json",
                                               "schema.json", "synthesizer.pkl"}
    ledger = json.loads((out / "ledger.json").read_text())
    assert Fraction(ledger["rho_spent_exact"]) == Fraction(panel.run.plan.rho_total)
    con = sqlite3.connect(out / "synthetic.sqlite")
    try:
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("SELECT COUNT(*) FROM persons").fetchone()[0] == len(panel.run.result["persons"])
    finally:
        con.close()
    assert RelationalSynthesizer.load(out / "synthesizer.pkl").seed_ is None
    # unticking "with the fitted models" saves the same release without them: the earlier
    # synthesizer.pkl goes too, so the folder never pairs these tables with another run's models
    panel._save_model.value = False
    panel._save.click()
    assert "relviz-rp-saved" in panel._save_msg.value and "synthesizer.pkl" not in panel._save_msg.value
    assert {p.name for p in out.iterdir()} == {"tables", "synthetic.sqlite", "ledger.json", "plan.json",
                                               "schema.json"}
    # a folder with other files is refused, untouched, and the panel says why
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    panel._save_dir.value = str(busy)
    panel._save.click()
    assert "relviz-rp-save-error" in panel._save_msg.value and "notes.txt" in panel._save_msg.value
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
