"""The widgets' plain-Python state and trait protocol, without a browser.

Covers ``relviz.ui.state`` (SchemaDraft, BudgetDraft), the widget classes' traits (a front-end
request → the Python object changes), and the ``noise_scales`` methods against what ``fit``
records in the ledger.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relviz import Attribute, Database, ForeignKey, Plan, PrivacyUnit, Schema, Table
from relviz.ui.state import (
    CURATOR_VIEW,
    MEAN_ABS_NORMAL,
    BudgetDraft,
    SchemaDraft,
    column_family,
)

_spec = importlib.util.spec_from_file_location(
    "relviz_test_clinic", Path(__file__).parent / "ui" / "notebooks" / "clinic.py")
clinic = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["relviz_test_clinic"] = clinic
_spec.loader.exec_module(clinic)  # type: ignore[union-attr]

VP = "visits.patient_id->patients"


@pytest.fixture()
def db() -> Database:
    return clinic.clinic_db()


@pytest.fixture()
def draft(db: Database) -> SchemaDraft:
    return SchemaDraft(db)


def _fk_keys(schema: Schema) -> set[tuple[str, tuple[str, ...], str]]:
    return {(f.child, tuple(f.columns), f.parent) for f in schema.foreign_keys}


def _ready_db(db: Database) -> Database:
    """The clinic database with every FK, cap and no orphans (so that σ is computable)."""
    d = SchemaDraft(db, propose=False)
    assert d.add_foreign_key("prescriptions", "visit_id", "visits")
    assert d.add_foreign_key("visits", "doctor_id", "doctors")
    assert d.set_cap(VP, 5)
    assert d.set_cap("prescriptions.visit_id->visits", 3)
    assert d.repair_orphans("drop")
    out = d.database
    assert out is not None and out.problems() == []
    return out


# -- SchemaDraft ---------------------------------------------------------------------------------

def test_column_family() -> None:
    assert column_family(pd.Series([1, 2, 3])) == "integer"
    assert column_family(pd.Series([1.0, None, 3.0])) == "integer"
    assert column_family(pd.Series([1.5, 2.0])) == "float"
    assert column_family(pd.Series(["a", None])) == "text"
    assert column_family(pd.Series([True, False])) == "boolean"
    assert column_family(pd.Series(pd.to_datetime(["2020-01-01"]))) == "datetime"
    assert column_family(pd.Series([None, None], dtype=object)) == "empty"


def test_initial_problems_proposals_and_graph(draft: SchemaDraft) -> None:
    kinds = {p.kind for p in draft.problems()}
    assert {"missing_cap", "orphan", "undeclared_column", "bad_unit"} <= kinds
    orphan = next(p for p in draft.problems() if p.kind == "orphan")
    assert orphan.count == 1 and orphan.examples == (999,)
    assert {p.fk.name for p in draft.proposals()} == {"prescriptions.visit_id->visits",
                                                       "visits.doctor_id->doctors"}
    g = draft.graph()
    assert {n["id"] for n in g["nodes"]} == {"patients", "doctors", "visits", "prescriptions"}
    visits = next(n for n in g["nodes"] if n["id"] == "visits")
    assert visits["rows"] == 120 and visits["primary_key"] == ["visit_id"]
    assert {a["name"]: (a["kind"], a["size"]) for a in visits["attributes"]} == {
        "cost": ("numeric", 10), "diagnosis": ("categorical", 4)}
    assert next(n for n in g["nodes"] if n["id"] == "patients")["entity"]
    assert [e["id"] for e in g["edges"]] == [VP]
    assert "orphan" in g["edges"][0]["problems"]
    assert all(p["view"] == CURATOR_VIEW for p in g["proposals"])


def test_add_fk_and_refuse_cycle_with_reason(draft: SchemaDraft) -> None:
    r = draft.add_foreign_key("prescriptions", ["visit_id"], "visits")
    assert r.ok, r.message
    before = draft.schema
    r = draft.add_foreign_key("visits", ["visit_id"], "prescriptions")
    assert not r.ok
    assert "cycle" in r.message and "visits → prescriptions → visits" in r.message
    assert draft.schema is before  # unchanged, nothing lost
    # a longer cycle through the existing FK
    r = draft.add_foreign_key("patients", ["patient_id"], "prescriptions")
    assert not r.ok and "patients → prescriptions → visits → patients" in r.message
    assert draft.schema is before


def test_type_mismatch_refused(draft: SchemaDraft) -> None:
    before = draft.schema
    r = draft.add_foreign_key("prescriptions", "drug", "visits")
    assert not r.ok and "type mismatch" in r.message and "text" in r.message and "integer" in r.message
    r = draft.add_foreign_key("visits", "cost", "doctors")
    assert not r.ok and "type mismatch" in r.message
    assert draft.schema is before
    # column candidates only offer type-matching columns (the key's name first)
    assert draft.column_candidates("prescriptions", "visits") == [["visit_id", "rx_id"]]
    assert draft.column_candidates("visits", "doctors") == [["doctor_id", "diagnosis"]]


def test_other_refusals(draft: SchemaDraft) -> None:
    before = draft.schema
    for args in (("visits", "nope", "doctors"), ("visits", "doctor_id", "nowhere"),
                 ("visits", ["doctor_id", "cost"], "doctors"), ("visits", "patient_id", "patients")):
        r = draft.add_foreign_key(*args)
        assert not r.ok, args
    assert draft.schema is before
    assert not draft.set_public("patients", True).ok  # the entity cannot be public
    assert not draft.set_entity("doctors").ok  # a public table cannot be the entity
    assert not draft.set_cap(VP, 0).ok and not draft.set_cap(VP, 2.5).ok
    assert not draft.apply({"op": "explode"}).ok
    assert not draft.apply({"op": "add_fk"}).ok  # malformed
    assert draft.schema is before


def test_fk_on_an_attribute_column_and_back(db: Database) -> None:
    s = db.schema
    visits = s.table("visits")
    s2 = s.with_table(Table("visits", ("visit_id",), visits.attributes + (
        Attribute.categorical("doctor_id", [f"D{i:02d}" for i in range(1, 7)]),)))
    d = SchemaDraft(db.with_schema(s2, validate=False), propose=False)
    assert d.add_foreign_key("visits", "doctor_id", "doctors").ok
    assert "doctor_id" not in d.schema.table("visits").attribute_names
    assert d.remove_foreign_key("visits.doctor_id->doctors").ok
    assert "doctor_id" in d.schema.table("visits").attribute_names  # restored


def test_accept_reject_proposals(draft: SchemaDraft) -> None:
    r = draft.accept_proposal("visits.doctor_id->doctors")
    assert r.ok
    assert ("visits", ("doctor_id",), "doctors") in _fk_keys(draft.schema)
    assert "visits.doctor_id->doctors" not in {p.fk.name for p in draft.proposals()}
    r = draft.reject_proposal("prescriptions.visit_id->visits")
    assert r.ok and draft.proposals() == []
    assert ("prescriptions", ("visit_id",), "visits") not in _fk_keys(draft.schema)
    assert not draft.accept_proposal("prescriptions.visit_id->visits").ok


def test_remove_repoint_public_entity_cap(draft: SchemaDraft) -> None:
    assert draft.set_cap(VP, 4).ok
    assert draft.schema.privacy_unit.caps[VP] == 4
    assert draft.add_foreign_key("prescriptions", "visit_id", "visits").ok
    # re-point the new FK to patients? visit ids are integers like patient ids: allowed, cap follows
    assert draft.set_cap("prescriptions.visit_id->visits", 2).ok
    r = draft.repoint_foreign_key("prescriptions.visit_id->visits", "patients")
    assert r.ok, r.message
    assert ("prescriptions", ("visit_id",), "patients") in _fk_keys(draft.schema)
    assert draft.schema.privacy_unit.caps["prescriptions.visit_id->patients"] == 2
    # re-pointing to a text key is a type mismatch: refused
    before = draft.schema
    assert not draft.repoint_foreign_key("prescriptions.visit_id->patients", "doctors").ok
    assert draft.schema is before
    assert draft.remove_foreign_key("prescriptions.visit_id->patients").ok
    assert "prescriptions.visit_id->patients" not in draft.schema.privacy_unit.caps
    assert draft.set_public("prescriptions", True).ok and draft.schema.table("prescriptions").public
    assert draft.set_entity(None).ok and draft.schema.privacy_unit.entity is None
    assert draft.set_entity("visits").ok and draft.schema.privacy_unit.entity == "visits"


def test_degree_view_is_a_labelled_curator_view(draft: SchemaDraft, db: Database) -> None:
    v = draft.degree_view(VP)
    deg = db.degrees(VP)
    assert v["view"] == CURATOR_VIEW and v["needs_cap"] and v["cap"] is None
    assert v["n_parent"] == 40 and v["n_linked"] == 119 and v["max"] == int(deg.max())
    assert sum(c for _, c in v["hist"]) == 40
    for tau, dropped in v["truncation"]:
        assert dropped == int(np.clip(deg - tau, 0, None).sum())
    assert draft.truncated_rows(VP, 5) == int(np.clip(deg - 5, 0, None).sum())
    r = draft.set_cap(VP, 5)
    assert r.ok and CURATOR_VIEW in r.message
    assert draft.degree_view(VP)["cap"] == 5 and not draft.degree_view(VP)["needs_cap"]


def test_repair_orphans(draft: SchemaDraft) -> None:
    r = draft.repair_orphans("drop")
    assert r.ok and "1 row" in r.message
    assert "orphan" not in {p.kind for p in draft.problems()}
    assert draft.row_count("visits") == 119


def test_schema_only_draft(db: Database) -> None:
    d = SchemaDraft(db.schema)
    assert not d.has_data and d.proposals() == [] and d.degree_view(VP).get("hist") is None
    assert d.add_foreign_key("prescriptions", "rx_id", "visits").ok  # no types to check
    assert not d.add_foreign_key("visits", "visit_id", "prescriptions").ok  # still no cycles


# -- SchemaEditor traits (no browser) ------------------------------------------------------------

def test_editor_traits_drive_the_schema(db: Database) -> None:
    from relviz.ui import SchemaEditor

    ed = SchemaEditor(db)
    assert {e["id"] for e in ed.graph["edges"]} == {VP}
    assert {p["kind"] for p in ed.problems} >= {"orphan", "missing_cap"}
    ed.request = {"op": "add_fk", "child": "prescriptions", "columns": ["visit_id"],
                  "parent": "visits", "seq": "1"}
    assert ed.message["ok"] and ed.message["seq"] == "1"
    assert ("prescriptions", ("visit_id",), "visits") in _fk_keys(ed.schema)
    before = ed.schema
    ed.request = {"op": "add_fk", "child": "visits", "columns": ["visit_id"], "parent": "prescriptions",
                  "seq": "2"}
    assert not ed.message["ok"] and "cycle" in ed.message["message"] and ed.message["seq"] == "2"
    assert ed.schema is before
    ed.request = {"op": "set_cap", "fk": VP, "cap": 3, "seq": "3"}
    assert ed.schema.privacy_unit.caps[VP] == 3
    ed.selected = f"edge:{VP}"
    assert ed.detail["fk"] == VP and ed.detail["view"] == CURATOR_VIEW and ed.detail["cap"] == 3
    ed.request = {"op": "remove_fk", "fk": VP, "seq": "4"}
    assert VP not in {f.name for f in ed.schema.foreign_keys}
    assert ed.selected == "" and ed.detail == {}  # the selection went with the FK
    # Python-side edits redraw: assigning a schema, and the methods
    ed.schema = db.schema
    assert {e["id"] for e in ed.graph["edges"]} == {VP} and ed.message["op"] == "set_schema"
    ed.set_public("prescriptions")
    assert next(n for n in ed.graph["nodes"] if n["id"] == "prescriptions")["public"]


# -- BudgetDraft ---------------------------------------------------------------------------------

def test_share_edits_keep_the_sum_exactly_one(db: Database) -> None:
    b = BudgetDraft(_ready_db(db))
    names = [c.name for c in b.plan.components]
    assert b.total_share() == 1
    assert b.set_share("patients", 0.3).ok
    assert b.plan.component("patients").share == Fraction(3, 10) and b.total_share() == 1
    assert b.set_lock("patients").ok
    assert b.set_share("visits", 0.2).ok
    assert b.plan.component("patients").share == Fraction(3, 10)  # locked: kept
    assert b.total_share() == 1
    r = b.set_share("visits", 0.8)  # 0.3 locked leaves 0.7 < 0.8: refused, plan unchanged
    before = b.plan
    assert not r.ok and "locked" in r.message and b.plan is before
    for x in (0.1, 1 / 3, 0.123456789, 0.05):
        assert b.set_share(names[-1], x).ok and b.total_share() == 1
    assert b.rebalance().ok
    free = [c.share for c in b.plan.components if not c.locked]
    assert len(set(free)) == 1 and free[0] == Fraction(7, 10) / (len(names) - 1)
    assert b.total_share() == 1
    for n in names:
        b.set_lock(n)
    assert not b.rebalance().ok


def test_method_change_updates_the_plan(db: Database) -> None:
    b = BudgetDraft(_ready_db(db))
    assert b.set_method("visits", "independent").ok
    assert b.plan.component("visits").method == "independent"
    assert not b.set_method("visits", "no-such-mechanism").ok
    assert not b.set_method(VP, "mst").ok  # a table mechanism is not a relational method
    assert b.set_method(VP, "degree").ok


def test_sigma_and_expected_error(db: Database) -> None:
    from relviz.privacy.mechanisms import gaussian_sigma
    from relviz.privacy.sensitivity import multipliers

    ready = _ready_db(db)
    b = BudgetDraft(ready)
    mult = multipliers(ready.schema)
    rows = {r.name: r for r in b.rows()}
    v = rows["visits"]
    rho = b.plan.rho_of("visits")
    d = len(ready.schema.table("visits").attributes)
    expected = gaussian_sigma(mult.table_histogram("visits") * math.sqrt(d), rho / 3)
    assert v.sigma == expected
    assert v.relative_error == pytest.approx(expected * MEAN_ABS_NORMAL / 119)
    assert CURATOR_VIEW in v.n_label and "119 rows" in v.n_label
    # more budget, less noise
    b.set_share("visits", 0.9)
    assert {r.name: r for r in b.rows()}["visits"].sigma < expected
    # public row counts are not labelled curator views
    pub = BudgetDraft(ready.schema, row_counts={"visits": 119})
    assert CURATOR_VIEW not in {r.name: r for r in pub.rows()}["visits"].n_label


def test_warnings(db: Database) -> None:
    b = BudgetDraft(_ready_db(db))
    assert b.set_budget(epsilon=8).ok
    assert any("ε = 8" in w and "above 5" in w for w in b.warnings())
    assert b.set_budget(epsilon=1, delta=0.05).ok  # ≥ 1/40 patients
    assert any("δ = 0.05" in w and "1/n" in w for w in b.warnings())
    assert not b.set_budget(delta="abc").ok and not b.set_budget(delta=2).ok
    b.set_budget(epsilon=0.1, delta=1e-6)
    small = [w for w in b.warnings() if "share too small" in w]
    assert small  # at ε = 0.1 the clinic tables are far too small
    big = BudgetDraft(_ready_db(db), Plan.default(_ready_db(db).schema, 500.0, 1e-6))
    assert not [w for w in big.warnings() if "share too small" in w]


def test_presets(db: Database) -> None:
    ready = _ready_db(db)
    b = BudgetDraft(ready)
    b.set_share("visits", 0.5, lock=True)
    assert b.preset("papers").ok
    assert all(c.share == Fraction(1, 6) and not c.locked for c in b.plan.components)
    assert b.preset("equal").ok
    assert b.plan.components == Plan.default(ready.schema, b.plan.epsilon, b.plan.delta).components
    assert not b.preset("nope").ok
    comps = tuple(c if c.kind == "table" else c.__class__(c.name, c.kind, "biadjacency", c.share)
                  for c in b.plan.components)
    b.set_plan(Plan(1.0, 1e-6, comps))
    b.preset("papers")
    shares = {c.kind: c.share for c in b.plan.components}
    assert shares["edge"] == 4 * shares["table"] and b.total_share() == 1


def test_budget_panel_widgets_drive_the_plan(db: Database) -> None:
    from relviz.ui import BudgetPanel

    panel = BudgetPanel(_ready_db(db))
    row = panel._rows["visits"]
    row["text"].value = 0.4  # as the front end would
    assert panel.plan.component("visits").share == Fraction(2, 5) and panel.plan.total_share() == 1
    assert panel._rows["patients"]["slider"].value == round(float(panel.plan.component("patients").share), 3)
    assert "Σ shares = <b>1</b>" in panel._sum.value
    panel._rows["visits"]["lock"].value = True
    assert panel.plan.component("visits").locked
    panel._rows["patients"]["method"].value = "independent"
    assert panel.plan.component("patients").method == "independent"
    panel._eps.value = 6.0
    assert panel.plan.epsilon == 6.0 and "above 5" in panel._warnings.value
    panel._delta.value = "1e-7"
    assert panel.plan.delta == 1e-7
    panel.plan = Plan.default(panel.draft.schema, 2.0, 1e-6)
    assert panel._eps.value == 2.0 and panel.draft.plan is panel.plan


# -- noise_scales equal what fit records ----------------------------------------------------------

def _tiny_ready() -> Database:
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"pid": np.arange(60), "a": rng.integers(0, 3, 60), "b": rng.integers(0, 2, 60),
                           "c": rng.integers(0, 4, 60)})
    orders = pd.DataFrame({"oid": np.arange(150), "pid": rng.integers(0, 60, 150),
                           "x": rng.integers(0, 3, 150)})
    s = Schema((Table("people", ("pid",), (Attribute.categorical("a", [0, 1, 2]),
                                          Attribute.categorical("b", [0, 1]),
                                          Attribute.categorical("c", [0, 1, 2, 3]))),
                Table("orders", ("oid",), (Attribute.categorical("x", [0, 1, 2]),))),
               (ForeignKey("orders", "pid", "people"),),
               PrivacyUnit(entity="people", caps={"orders.pid->people": 6}))
    return Database(s, {"people": people, "orders": orders})


@pytest.mark.parametrize("mechanism", ["mst", "independent"])
def test_noise_scales_match_the_ledger(mechanism: str) -> None:
    from relviz import RelationalSynthesizer
    from relviz.privacy.sensitivity import multipliers
    from relviz.relational import get as get_linker
    from relviz.single import get as get_mechanism

    db = _tiny_ready()
    plan = Plan.default(db.schema, 1.0, 1e-6, mechanism=mechanism)
    if mechanism == "mst":
        plan = plan.with_params("people", iters=100).with_params("orders", iters=100)
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    mult = multipliers(db.schema)
    ledger = [e for e in synth.accountant_.ledger if getattr(e, "sigma", None)]
    for t in ("people", "orders"):
        scales = get_mechanism(mechanism).noise_scales(
            db.schema.table(t), plan.rho_of(t), histogram_sensitivity=mult.table_histogram(t),
            score_sensitivity=mult.table_score(t))
        recorded = [e.sigma for e in ledger if e.component == t]
        assert list(scales.values()) == recorded, (t, scales, recorded)
    fk = db.schema.foreign_key("orders.pid->people")
    scales = get_linker("degree").noise_scales(db.schema, fk, plan.rho_of(fk.name), multipliers=mult)
    assert list(scales.values()) == [e.sigma for e in ledger if e.component == fk.name]


def test_cap_typed_next_to_the_real_degrees_is_recorded(draft: SchemaDraft) -> None:
    """A τ set in the editor with the data loaded (the degree view shows the real histogram) is
    marked 'curator view' so that the ledger says the choice is not DP; a DP quantile instead
    records its ρ."""
    assert draft.set_cap(VP, 5).ok
    assert draft.schema.privacy_unit.cap_sources[VP] == {"how": "curator view"}
    res = draft.set_cap_dp(VP, quantile=0.9, rho=0.5, candidates=(1, 30), random_state=0)
    assert res.ok, res
    src = draft.schema.privacy_unit.cap_sources[VP]
    assert src["how"] == "dp" and src["rho"] == "1/2"
    assert 1 <= draft.schema.privacy_unit.caps[VP] <= 30
