"""Issue 14, bugs 1–4 and the readability of the Schema, Budget, Run and Compare panels, without a
browser: the plain objects behind the panels and the panels' own widgets, on small data (the
miniflights look-alike of nycflights13, ``tests/ui/notebooks/miniflights.py``).

The browser side (the same flows clicked in JupyterLab, with screenshots) is in
``tests/ui/test_issue14_ui.py``.
"""

from __future__ import annotations

import logging
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.errors import BudgetError
from relviz.plan import Plan
from relviz.privacy.accountant import Accountant, epsilon_from_rho
from relviz.privacy.session import SessionLedger
from tests.conftest import until

sys.path.insert(0, str(Path(__file__).parent / "notebooks"))
from miniflights import NONSENSE_FK, miniflights_db, miniflights_frames, miniflights_plan  # noqa: E402

pytest.importorskip("ipywidgets")

TAILNUM = "flights.tailnum->planes"
NONSENSE = "planes.manufacturer->airlines"


@pytest.fixture()
def mini() -> Database:
    return miniflights_db()


@pytest.fixture()
def studio(mini: Database):  # noqa: ANN201 - relviz.Studio
    import relviz

    return relviz.Studio(mini, plan=miniflights_plan(), random_state=0, propose=False, tsne_n=40,
                         session=SessionLedger("miniflights"))


def _launch_and_wait(studio) -> None:  # noqa: ANN001
    assert studio.run_panel.launch(), studio.run_panel._message.value
    assert studio.run.wait(60) and until(lambda: studio.run_panel.status in ("done", "failed", "cancelled"))


# -- bug 1: "drop the rows" ----------------------------------------------------------------------------

def test_empty_parent_table_has_only_orphans() -> None:
    """Database.parent_index on an empty parent raised IndexError (the editor's refresh died)."""
    f = miniflights_frames()
    f["planes"] = f["planes"].iloc[:0]
    db = Database(miniflights_db().schema, f, validate=False)
    idx = db.parent_index(TAILNUM)
    assert idx.shape == (600,) and (idx == -1).all()
    assert db.degrees(TAILNUM).shape == (0,)
    orphans = [p for p in db.problems() if p.kind == "orphan"]
    assert orphans and orphans[0].count == int(f["flights"]["tailnum"].notna().sum())


def test_drop_preview_counts_cascade_then_undo_restores(mini: Database) -> None:
    from relviz.ui.schema_state import SchemaDraft

    frames = {n: mini[n].copy() for n in mini.table_names}
    d = SchemaDraft(mini, propose=False)
    assert d.add_foreign_key(*NONSENSE_FK).ok
    v0 = d.data_version
    pv = d.repair_preview("drop")
    with_tail = int(frames["flights"]["tailnum"].notna().sum())
    by = {t["table"]: t for t in pv["tables"]}
    assert by["planes"] == {"table": "planes", "before": 40, "after": 0, "removed": 40, "emptied": True,
                            "cascade": False}
    assert by["flights"]["removed"] == with_tail and by["flights"]["cascade"]
    assert pv["removed"] == 40 + with_tail
    assert "probably wrong" in pv["advice"]  # every plane is an orphan: the FK is the mistake
    assert d.row_count("planes") == 40 and d.data_version == v0  # a preview changes nothing

    r = d.repair_orphans("drop")
    assert r.ok and "planes −40 of 40 (now empty)" in r.message and "(cascade)" in r.message
    assert d.row_count("planes") == 0 and d.row_count("flights") == 600 - with_tail
    assert d.data_version != v0
    # the editor's refresh used to raise IndexError here (an empty parent)
    g = d.graph()
    assert {n["id"]: n["rows"] for n in g["nodes"]}["planes"] == 0 and g["can_undo"]
    assert not [p for p in d.problems() if p.kind == "check_failed"]
    # the caller's frames were never touched
    for n, df in frames.items():
        pd.testing.assert_frame_equal(mini[n], df)

    u = d.undo()
    assert u.ok and u.message.startswith("undone: dropped") and "back as they were" in u.message
    assert d.row_count("planes") == 40 and d.row_count("flights") == 600
    assert any(p.kind == "orphan" for p in d.problems())
    assert d.undo().ok and NONSENSE not in {fk.name for fk in d.schema.foreign_keys}
    assert not d.undo().ok  # nothing left to undo


def test_editor_asks_before_dropping_and_shows_callback_errors(mini: Database,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    from relviz.ui import SchemaEditor

    ed = SchemaEditor(mini, propose=False)
    assert ed.add_foreign_key(*NONSENSE_FK).ok
    v0 = ed.data_version
    ed.request = {"op": "repair", "how": "drop", "seq": "1"}
    assert ed.confirm["op"] == "repair" and ed.confirm["removed"] > 40
    assert any("planes: 40 of 40 rows removed" in line for line in ed.confirm["lines"])
    assert ed.draft.row_count("planes") == 40 and ed.data_version == v0  # asked, not done
    ed.request = {"op": "dismiss", "seq": "2"}
    assert not ed.confirm and ed.draft.row_count("planes") == 40
    ed.request = {"op": "repair", "how": "drop", "seq": "3"}
    ed.request = {"op": "repair", "how": "drop", "confirmed": True, "seq": "4"}
    assert ed.message["ok"] and ed.message["seq"] == "4" and not ed.confirm
    assert ed.draft.row_count("planes") == 0 and ed.data_version != v0
    assert ed.graph["can_undo"] and "dropped" in ed.graph["undo"]
    ed.request = {"op": "undo", "seq": "5"}
    assert ed.message["ok"] and ed.draft.row_count("planes") == 40

    # an exception in a request is shown in the panel and logged, never swallowed
    def broken(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")
    ed.draft.remove_foreign_key = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="relviz.ui"):
        ed.request = {"op": "remove_fk", "fk": TAILNUM, "seq": "6"}
    assert ed.message["ok"] is False and ed.message["error"] and ed.message["seq"] == "6"
    assert "IndexError" in ed.message["message"] and "log" in ed.message["message"]
    assert any("IndexError" in (r.exc_text or "") for r in caplog.records)
    assert TAILNUM in {e["id"] for e in ed.graph["edges"]}  # redrawn from Python's state


def test_studio_run_follows_the_repaired_data_and_its_undo(studio) -> None:  # noqa: ANN001
    real = {n: len(studio.database[n]) for n in studio.database.table_names}
    assert studio.editor.add_foreign_key(*NONSENSE_FK).ok
    # the orphans block a run, and the Run tab says why
    assert studio.run_panel._launch.disabled and studio.run_panel.blockers
    assert "orphan" in studio.run_panel._blocked.value and "Schema tab" in studio.run_panel._blocked.value
    assert not studio.run_panel.launch()
    studio.editor.request = {"op": "repair", "how": "drop", "confirmed": True, "seq": "1"}
    counts = studio.database.row_counts()
    assert counts["planes"] == 0
    assert studio.run.db.row_counts() == counts  # the Run tab runs the repaired data
    assert studio.budget.draft.row_counts["flights"] == counts["flights"]
    assert not studio.run_panel.blockers and not studio.run_panel._launch.disabled
    assert studio._error.value == ""
    # a run on the repaired data (planes now empty) works: the empty parent is handled
    studio.select("run")
    _launch_and_wait(studio)
    assert studio.run.status == "done", studio.run.error
    assert studio.run.result.row_counts()["planes"] == 0
    assert studio.run.result["flights"]["tailnum"].isna().all()
    studio.editor.request = {"op": "undo", "seq": "2"}
    assert studio.run.db.row_counts() == real == studio.database.row_counts()
    assert studio.run_panel._launch.disabled  # the orphans are back, and block again


def test_repoint_offers_neither_the_parent_nor_the_child(mini: Database) -> None:
    from relviz.ui.schema_state import SchemaDraft

    d = SchemaDraft(mini, propose=False)
    edges = {e["id"]: e for e in d.graph()["edges"]}
    assert edges[TAILNUM]["repoint"] == ["airlines"]  # not planes (its parent), not flights (itself)
    assert edges["flights.carrier->airlines"]["repoint"] == ["planes"]


# -- bug 2: ε = 0 or −1 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("typed", [0.0, -1.0])
def test_budget_panel_refuses_epsilon_zero_or_negative(mini: Database, typed: float) -> None:
    from relviz.ui import BudgetPanel

    panel = BudgetPanel(mini, miniflights_plan(epsilon=2.0))
    panel._eps.value = typed  # what typing into the box does
    assert panel.plan.epsilon == 2.0  # the previous valid value stays in force ...
    assert panel._eps.value == 2.0  # ... and in the box
    assert "refused" in panel._message.value and "positive" in panel._message.value
    assert "✓" not in panel._message.value
    panel._eps.value = 0.5
    assert panel.plan.epsilon == 0.5 and "✓" in panel._message.value


# -- bug 3: the session ledger -----------------------------------------------------------------------------

def test_session_ledger_composes_attempts_and_refuses_what_does_not_fit(mini: Database) -> None:
    from relviz.run import Run

    plan = miniflights_plan()
    session = SessionLedger("miniflights")
    rho1 = Fraction(plan.rho_total)
    # a cap for about one and a half runs: ε such that its ρ is 1.5 × one run's ρ
    cap_eps = epsilon_from_rho(float(1.5 * rho1), 1e-6, plan.resolved_conversion())
    assert "session cap" in session.set_cap(round(cap_eps, 3), 1e-6)
    with pytest.raises(ValueError, match="positive"):
        session.set_cap(0)
    assert session.cap == (round(cap_eps, 3), 1e-6)  # a refused cap leaves the old one
    run = Run(mini, plan, random_state=0, session=session)
    run.start()
    assert run.wait(60) and run.status == "done"
    assert session.spent() == run.ledger.spent() == rho1  # exact
    assert [a.status for a in session.attempts] == ["done"]
    # launching again on the same data would spend ρ again: refused, in words, nothing read
    reason = session.refusal(plan, mini.schema)
    assert reason is not None and "only ρ" in reason and "lower ε" in reason
    with pytest.raises(BudgetError, match="session ledger"):
        run.start()
    assert run.status == "done" and len(run.attempts) == 1
    # a smaller plan fits; the session's total is the exact sum, its ε from the one accountant
    small = plan.with_budget(epsilon=0.3)
    run.configure(plan=small)
    run.start()
    assert run.wait(60) and run.status == "done"
    total = rho1 + Fraction(small.rho_total)
    assert session.spent() == total and session.accountant.spent() == total
    assert len(session.accountant.ledger) == 2 * len(run.ledger.ledger)
    assert session.epsilon_spent() == pytest.approx(epsilon_from_rho(float(total), 1e-6, session.conversion))
    assert session.remaining() == Fraction(session.summary()["cap"]["rho"]) - total


def test_session_counts_a_dp_cap_release_once() -> None:
    """The label the session uses to recognise a DP cap release is the one the run writes."""
    from relviz.privacy.caps import charge_cap_releases
    from relviz.privacy.session import _cap_label
    from tests.conftest import tiny_schema

    schema = tiny_schema(caps={"persons.hid->households": 4})
    unit = schema.privacy_unit
    src = {"how": "dp", "quantile": 0.95, "rho": 0.001, "sensitivity": 1.0}
    schema = schema.with_cap("persons.hid->households", 4, source=src)
    acc = Accountant(1.0, delta=1e-6)
    charge_cap_releases(acc, schema)
    assert unit is not None and acc.ledger[0].label == _cap_label("persons.hid->households", src, 4)
    session = SessionLedger("tiny")
    plan = Plan.default(schema, 1.0, 1e-6, mechanism="independent")
    assert session.need(plan, schema)[0] == Fraction(plan.rho_total) + Fraction(0.001)
    session.record(acc, plan=plan, status="done")
    session.record(acc, plan=plan, status="done")
    assert session.spent() == acc.spent()  # the same cap release, counted once
    assert session.need(plan, schema)[0] == Fraction(plan.rho_total)


def test_run_panel_shows_the_session_and_disables_launch_when_it_does_not_fit(mini: Database) -> None:
    from relviz.ui import RunPanel

    plan = miniflights_plan()
    panel = RunPanel(mini, plan, random_state=0, min_interval=0.0, session=SessionLedger("miniflights"))
    assert "nothing spent" in panel._session_html.value and "every run costs privacy" in panel._session_html.value
    assert panel.launch() and panel.run.wait(60) and until(lambda: panel.status == "done")
    assert until(lambda: "1 run attempt on" in panel._session_html.value)
    # a cap that leaves less than one run: Launch again is disabled, and the panel says why
    assert not panel.set_cap("-2") and "refused" in panel._cap_msg.value
    assert panel.set_cap("1.1", "1e-6") and "✓" in panel._cap_msg.value
    assert panel._launch.disabled and panel._launch.description == "Launch again"
    assert "session cap" in panel._blocked.value and "only ρ" in panel._blocked.value
    assert "does not fit" in panel._session_html.value
    assert not panel.launch() and "Not started" in panel._message.value
    # a smaller plan fits again
    panel.set_inputs(plan=plan.with_budget(epsilon=0.2))
    assert not panel._launch.disabled and "fits" in panel._session_html.value
    assert panel.set_cap(None) and "No session cap" in panel._session_html.value


# -- bug 4: stale results, attempts, Launch state --------------------------------------------------------

def test_compare_is_labelled_with_its_plan_and_marked_stale_after_an_edit(studio) -> None:  # noqa: ANN001
    studio.select("run")
    _launch_and_wait(studio)
    assert until(lambda: studio.comparison is not None)
    assert studio.compare.origin is not None and studio.compare.origin.epsilon == 1.0
    assert "run #1 · ε = 1, δ = 1e-06" in studio.compare._banner.value
    assert "ready (run #1, ε = 1)" in studio._header.value
    assert studio.compare_stale is None and "relviz-cp-stale" not in studio.compare._banner.value
    # a plan edit: the comparison stays, marked stale with the plan it came from
    assert studio.budget.set_budget(epsilon=2.0).ok
    assert "ε = 1, δ = 1e-06 → ε = 2" in studio.compare_stale
    assert "relviz-cp-stale" in studio.compare._banner.value and "run #1 · ε = 1" in studio.compare._banner.value
    assert "stale" in studio._header.value and "compare: ready" not in studio._header.value
    # back to the plan of the run: current again; a schema edit: stale again
    assert studio.budget.undo().ok
    assert studio.compare_stale is None and "relviz-cp-stale" not in studio.compare._banner.value
    assert studio.editor.remove_foreign_key(TAILNUM).ok
    assert "schema changed" in studio.compare_stale


def test_attempts_list_every_finished_attempt_and_launch_label(studio) -> None:  # noqa: ANN001
    panel = studio.run_panel
    labels: list[tuple[str, str]] = []
    off = studio.run.observe(lambda r: labels.append((r.status, panel._launch.description)))
    studio.select("run")
    assert panel._launch.description == "Launch"
    _launch_and_wait(studio)
    off()
    # during the first run the button never read "Launch again"
    assert ("running", "Launch again") not in labels and any(s == "running" for s, _ in labels)
    assert until(lambda: panel._launch.description == "Launch again")
    # a plan edit configures the run (status idle): the finished attempt is still listed
    assert studio.budget.set_budget(epsilon=0.5).ok
    assert studio.run.status == "idle"
    assert "#1 done" in panel._result.value
    _launch_and_wait(studio)
    assert studio.budget.set_budget(epsilon=0.6).ok
    assert "#1 done" in panel._result.value and "#2 done" in panel._result.value
    assert [a.number for a in studio.session.attempts] == [1, 2]
    assert "2 run attempts on" in panel._session_html.value


# -- readability ---------------------------------------------------------------------------------------------

def test_run_progress_is_one_percentage_with_stage_text() -> None:
    from relviz.run import ComponentProgress, RunSnapshot
    from relviz.ui.run_panel import RunPanel

    comps = (ComponentProgress("flights", "table", "flights", "mst", 0.22, "fit", "measuring 2-way marginals",
                               17.0, Fraction(1, 10), Fraction(1, 50)),
             ComponentProgress("f.a->b", "edge", "f.a → b", "degree"),
             ComponentProgress("f.c->d", "edge", "f.c → d", "degree"),
             ComponentProgress("f.e->g", "edge", "f.e → g", "degree"),
             ComponentProgress("f.h->i", "edge", "f.h → i", "degree"))
    snap = RunSnapshot("running", "fit", "", 20.0, 0.044, comps, Fraction(1, 2), Fraction(1, 50), 1.0, 1e-6,
                       None, "", "", 1, ())
    status = RunPanel._status_html(snap)
    assert "4%" in status and "fitting table flights (mst): measuring 2-way marginals" in status
    assert "17.0 s in this step" in status
    rows = RunPanel._progress_html(snap)
    assert "22%" not in rows.replace("22% of this component", "")  # the row shows no second number
    assert "data-percent='4'" in rows and "of the whole run" in rows


def test_budget_curator_note_once_and_one_advice_at_tiny_epsilon(mini: Database) -> None:
    from relviz.ui import BudgetPanel

    panel = BudgetPanel(mini, miniflights_plan(epsilon=0.01))
    infos = [row["info"].value for row in panel._rows.values()]
    assert not any("curator view" in v for v in infos)  # not on every row ...
    assert panel._footnote.value.count("curator view (not private)") == 1  # ... once per panel
    assert not any("too small" in v.split("title=")[0] for v in infos)  # rows show the error, in red
    assert sum("relviz-bp-relerr bad" in v for v in infos) >= 2
    warnings = panel.draft.warnings()
    small = [w for w in warnings if "too small" in w]
    assert len(small) == 1 and "Raise ε to about" in small[0]
    eps = float(small[0].split("Raise ε to about ")[1].split()[0])
    fixed = panel.draft.plan.with_budget(epsilon=eps).noise_preview(mini.schema, mini)
    assert not [r for r in fixed if r.warning]  # the advised ε makes every share useful


def test_compare_labels_caps_and_variant_notes(mini: Database) -> None:
    from relviz.privacy.measure import enforce_caps
    from relviz.ui.compare import DEGREE_SIMILARITY_TIP, ComparePanel, RunOrigin, cap_notes, variant_notes

    # a cap that truncates: the Compare tab says how many rows it removed
    unit = mini.schema.privacy_unit
    f = miniflights_frames()
    f["flights"]["tailnum"] = f["flights"]["tailnum"].where(f["flights"]["tailnum"].isna(), "N100")
    capped = Database(mini.schema.with_cap(TAILNUM, 300), f)
    _, report = enforce_caps(capped)
    notes = cap_notes(capped, report)
    removed = int(f["flights"]["tailnum"].notna().sum()) - 300
    assert unit is not None and notes == (
        f"flights: {removed:,} of 600 rows ({removed / 600:.0%}) removed by the cap τ = 300 on "
        f"flights.tailnum → planes (dropped surplus children)",)
    plan = miniflights_plan()
    from relviz.synthesizer import RelationalSynthesizer

    fake = RelationalSynthesizer(plan, random_state=0).fit(mini).sample()
    panel = ComparePanel(mini, fake, tsne_n=40, origin=RunOrigin.of(plan, 3, notes))
    assert "run #3 · ε = 1, δ = 1e-06 · degree, independent" in panel._banner.value
    assert "Degree caps removed real rows" in panel._banner.value and f"{removed:,} of 600 rows" in panel._banner.value
    assert until(lambda: "relviz-cp-deg-score" in panel._deg_info.value)
    assert "degree similarity" in panel._deg_info.value and "CardinalityShapeSimilarity = 1 − KS" not in \
        panel._deg_info.value
    assert "Kolmogorov–Smirnov" in DEGREE_SIMILARITY_TIP and "Kolmogorov–Smirnov" in panel._deg_info.value
    # relviz's all-pairs average vs SDMetrics' strongly-associated pairs: said where they differ
    q = panel.comparison.quality()
    props = {r["Property"]: r for r in q.get_properties().to_dict(orient="records")}
    notes = variant_notes(q)
    for name in ("Column Pair Trends", "Intertable Trends"):
        a, b = props[name]["relviz Score"], props[name]["SDMetrics Score"]
        differs = np.isnan(b) != np.isnan(a) or (not np.isnan(a) and abs(a - b) > 0.005)
        assert (name in notes) == bool(differs)
        if differs:
            assert "averages all" in notes[name] and ("strongly associated" in notes[name])
    panel.select("Scores")
    assert until(lambda: "relviz-cp-props" in panel._sc_info.value, 120)
    for text in notes.values():
        assert text.split(";")[0] in panel._sc_info.value.replace("&#x27;", "'")
