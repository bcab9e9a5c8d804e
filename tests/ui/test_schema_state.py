"""relviz.ui.schema_state: the schema editor's plain-Python state (SchemaDraft), without a browser."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz import Attribute, Database, Schema, Table
from relviz.privacy.measure import CURATOR_VIEW
from relviz.ui.schema_state import SchemaDraft, column_family

VP = "visits.patient_id->patients"


@pytest.fixture()
def draft(clinic_db: Database) -> SchemaDraft:
    return SchemaDraft(clinic_db)


def _fk_keys(schema: Schema) -> set[tuple[str, tuple[str, ...], str]]:
    return {(f.child, tuple(f.columns), f.parent) for f in schema.foreign_keys}


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


def test_fk_on_an_attribute_column_and_back(clinic_db: Database) -> None:
    s = clinic_db.schema
    visits = s.table("visits")
    s2 = s.with_table(Table("visits", ("visit_id",), visits.attributes + (
        Attribute.categorical("doctor_id", [f"D{i:02d}" for i in range(1, 7)]),)))
    d = SchemaDraft(clinic_db.with_schema(s2, validate=False), propose=False)
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


def test_degree_view_is_a_labelled_curator_view(draft: SchemaDraft, clinic_db: Database) -> None:
    v = draft.degree_view(VP)
    deg = clinic_db.degrees(VP)
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


def test_schema_only_draft(clinic_db: Database) -> None:
    d = SchemaDraft(clinic_db.schema)
    assert not d.has_data and d.proposals() == [] and d.degree_view(VP).get("hist") is None
    assert d.add_foreign_key("prescriptions", "rx_id", "visits").ok  # no types to check
    assert not d.add_foreign_key("visits", "visit_id", "prescriptions").ok  # still no cycles


def test_the_edits_reach_a_valid_database(clinic_db: Database) -> None:
    """Every FK declared, every cap set, the orphan dropped: the draft's database is valid (the
    ``clinic_ready_db`` fixture of the budget tests is built this way)."""
    d = SchemaDraft(clinic_db, propose=False)
    assert d.add_foreign_key("prescriptions", "visit_id", "visits")
    assert d.add_foreign_key("visits", "doctor_id", "doctors")
    assert d.set_cap(VP, 5)
    assert d.set_cap("prescriptions.visit_id->visits", 3)
    assert d.repair_orphans("drop")
    assert d.database is not None and d.database.problems() == []


def test_an_fk_name_in_use_is_refused(draft: SchemaDraft) -> None:
    before = draft.schema
    r = draft.add_foreign_key("prescriptions", "visit_id", "visits", name=VP)
    assert not r.ok and "taken" in r.message and draft.schema is before


def test_a_repointed_fk_keeps_its_cap_and_its_source(draft: SchemaDraft) -> None:
    assert draft.add_foreign_key("prescriptions", "visit_id", "visits").ok
    assert draft.set_cap("prescriptions.visit_id->visits", 2).ok  # typed next to the real degrees
    assert draft.repoint_foreign_key("prescriptions.visit_id->visits", "patients").ok
    unit = draft.schema.privacy_unit
    assert unit.caps["prescriptions.visit_id->patients"] == 2
    assert unit.cap_sources["prescriptions.visit_id->patients"] == {"how": "curator view"}


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
    res = draft.apply({"op": "set_cap_dp", "fk": VP, "quantile": 0.5, "rho": 0.25, "candidates": [1, 10]})
    assert res.ok and draft.schema.privacy_unit.cap_sources[VP]["rho"] == "1/4"
