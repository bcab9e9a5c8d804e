"""relviz.ui.schema_editor without a browser: a front-end request (a trait) changes the schema."""

from __future__ import annotations

from relviz import Database, Schema
from relviz.privacy.measure import CURATOR_VIEW

VP = "visits.patient_id->patients"


def _fk_keys(schema: Schema) -> set[tuple[str, tuple[str, ...], str]]:
    return {(f.child, tuple(f.columns), f.parent) for f in schema.foreign_keys}


def test_editor_traits_drive_the_schema(clinic_db: Database) -> None:
    from relviz.ui import SchemaEditor

    ed = SchemaEditor(clinic_db)
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
    ed.schema = clinic_db.schema
    assert {e["id"] for e in ed.graph["edges"]} == {VP} and ed.message["op"] == "set_schema"
    ed.set_public("prescriptions")
    assert next(n for n in ed.graph["nodes"] if n["id"] == "prescriptions")["public"]
