"""The Schema panel's review of what ``infer_schema`` proposed (``Schema.proposals``): the plain-Python
state (``SchemaDraft.schema_proposals`` / ``schema_review``, accept, reject, undo), without a browser."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz import Database, infer_schema
from relviz.privacy.measure import CURATOR_VIEW
from relviz.ui.schema_editor import SchemaEditor
from relviz.ui.schema_state import SchemaDraft, proposal_mark

PUBLIC = "regions:public_table"
SIGNUP = "customers.signup:datetime"
SPEND = "customers.spend:integer"
NAME = "customers.full_name:excluded"
NOTE = "customers.note:excluded"


def messy_frames(n: int = 60, unique_dates: bool = False) -> dict[str, pd.DataFrame]:
    """A user's own messy frames: a 5-row reference table referenced by an FK; a table with ISO dates
    written as text (6 distinct ones, or every one distinct), a name column with every value
    distinct, free text, a whole-valued float column and a small text column."""
    rng = np.random.default_rng(0)
    words = ["the", "client", "asked", "for", "a", "refund", "after", "late", "delivery", "again"]
    regions = pd.DataFrame({"region_id": [1, 2, 3, 4, 5],
                            "region": ["north", "south", "east", "west", "centre"]})
    customers = pd.DataFrame({
        "customer_id": np.arange(1, n + 1),
        "full_name": [f"Person {chr(65 + i % 26)}{i:03d}" for i in range(n)],
        "region_id": rng.integers(1, 6, n),
        "signup": [f"2021-{1 + i % 12:02d}-{1 + i // 12:02d}" if unique_dates else f"2021-{1 + i % 6:02d}-01"
                   for i in range(n)],
        "note": [" ".join(rng.choice(words, 8)) for _ in range(n)],
        "spend": rng.integers(0, 500, n).astype(float),
        "tier": rng.choice(["gold", "silver", "bronze"], n),
    })
    return {"regions": regions, "customers": customers}


@pytest.fixture()
def messy_db() -> Database:
    return Database.from_frames(messy_frames(), validate=False)


@pytest.fixture()
def draft(messy_db: Database) -> SchemaDraft:
    return SchemaDraft(messy_db)


def _items(draft: SchemaDraft) -> dict[str, dict]:
    return {it["id"]: it for it in draft.schema_proposals()}


def test_every_proposal_is_listed_per_table_with_its_mark_and_reason(messy_db: Database,
                                                                     draft: SchemaDraft) -> None:
    props = messy_db.schema.proposals
    items = draft.schema_proposals()
    # one item per proposal, in Schema.proposals' order (the order `relviz schema` prints)
    assert [(it["table"], it["column"], it["kind"], it["proposal"], it["reason"]) for it in items] == \
        [(p.table, p.column, p.kind, p.proposal, p.reason) for p in props]
    assert all(it["status"] == "open" for it in items)
    by = _items(draft)
    assert by[PUBLIC]["mark"] == "public (small reference table)"
    assert "small reference table: 5 rows" in by[PUBLIC]["reason"]
    assert by[SIGNUP]["mark"] == "datetime" and "ISO 8601" in by[SIGNUP]["reason"]
    assert by[SIGNUP]["proposal"].startswith("datetime on [2021-01-01, 2021-06-01]")
    assert by[SPEND]["mark"] == "integer" and "whole number" in by[SPEND]["reason"]
    assert by[NAME]["mark"] == "excluded: personal data or free text"
    assert "60 of 60 values (100%) are distinct" in by[NAME]["reason"]
    assert by[NOTE]["mark"] == "excluded: free text" and by[NOTE]["reason"].startswith("free text:")
    assert by["customers.region_id:foreign_key"]["mark"] == "foreign key"
    assert by["customers.customer_id:primary_key"]["mark"] == "primary key"
    # Reject where it is one clear edit; the others say why they are accept-only
    assert {i for i, it in by.items() if it["can_reject"]} == {PUBLIC, SIGNUP, SPEND}
    assert "left out of the data" in by[NAME]["reject"]
    assert "private" in by[PUBLIC]["reject"] and "integer=False" in by[SPEND]["reject"]

    review = draft.schema_review()
    assert [g["table"] for g in review["groups"]] == ["regions", "customers"]
    assert review["total"] == review["open"] == len(props) and review["reviewed"] == 0
    assert review["view"] == CURATOR_VIEW
    assert review["groups"][0]["public"] and not review["groups"][1]["public"]
    assert draft.graph()["review"] == review


def test_proposal_marks() -> None:
    from relviz.schema import Proposal

    def mark(kind: str, reason: str = "", proposal: str = "") -> str:
        return proposal_mark(Proposal("t", "c", kind, proposal, reason))

    assert mark("excluded", "identifier: named like an id and …") == "excluded: identifier"
    assert mark("excluded", "identifier-like: 90 distinct values …") == "excluded: identifier"
    assert mark("excluded", "personal data: 95% of the distinct values look like e-mail addresses") \
        == "excluded: personal data"
    assert mark("excluded", "every value is null: nothing to model") == "excluded: empty column"
    assert mark("excluded", "300 distinct values: more than max_categories=200 …") == "excluded: too many values"
    assert mark("datetime", proposal="integer epoch seconds on [2020-01-01, 2021-01-01]") \
        == "datetime (epoch integers)"
    assert mark("near_key") == "near-key (duplicates)" and mark("numeric") == "numeric"


def test_reject_public_table_makes_it_private_and_undo_restores(draft: SchemaDraft) -> None:
    before = draft.schema
    assert before.table("regions").public
    r = draft.reject_schema_proposal(PUBLIC)
    assert r.ok, r.message
    s = draft.schema
    assert not s.table("regions").public
    # the FK into it is now between private tables: the placeholder cap infer_schema gives those
    assert s.privacy_unit.caps["customers.region_id->regions"] == 1000
    assert "regions is private" in r.message and "placeholder cap τ = 1000" in r.message
    it = _items(draft)[PUBLIC]
    assert it["status"] == "rejected" and "regions is private" in it["note"] and not it["can_reject"]
    assert draft.schema_review()["open"] == len(before.proposals) - 1
    # decided: neither accepted nor rejected again
    assert not draft.accept_schema_proposal(PUBLIC).ok
    assert "already rejected" in draft.reject_schema_proposal(PUBLIC).message
    u = draft.undo()
    assert u.ok and "rejected regions" in u.message
    assert draft.schema == before and draft.schema.table("regions").public
    assert "customers.region_id->regions" not in draft.schema.privacy_unit.caps
    assert _items(draft)[PUBLIC]["status"] == "open"


def test_reject_integer_and_datetime_change_the_attribute_and_undo_restores(draft: SchemaDraft) -> None:
    before = draft.schema
    t = before.table("customers")
    assert t.attribute("spend").integer and t.attribute("signup").kind == "datetime"

    assert draft.reject_schema_proposal(SPEND).ok
    spend = draft.schema.table("customers").attribute("spend")
    assert spend.kind == "numeric" and not spend.integer
    assert (spend.lower, spend.upper, spend.bins) == (t.attribute("spend").lower, t.attribute("spend").upper,
                                                      t.attribute("spend").bins)

    r = draft.reject_schema_proposal(SIGNUP)
    assert r.ok, r.message
    signup = draft.schema.table("customers").attribute("signup")
    assert signup.kind == "categorical" and signup.provenance == "inferred"
    assert signup.categories == tuple(f"2021-{m:02d}-01" for m in range(1, 7))
    assert "categorical over its 6 observed text values" in _items(draft)[SIGNUP]["note"]
    assert draft.problems() == []  # the data still fit the schema

    assert draft.undo().ok
    assert draft.schema.table("customers").attribute("signup").kind == "datetime"
    assert _items(draft)[SIGNUP]["status"] == "open" and _items(draft)[SPEND]["status"] == "rejected"
    assert draft.undo().ok
    assert draft.schema == before
    assert all(it["status"] == "open" for it in draft.schema_proposals())


def test_reject_datetime_with_nearly_unique_dates_excludes_the_column() -> None:
    db = Database.from_frames(messy_frames(unique_dates=True), validate=False)
    draft = SchemaDraft(db)
    r = draft.reject_schema_proposal(SIGNUP)
    assert r.ok, r.message
    t = draft.schema.table("customers")
    assert "signup" in t.exclude and "signup" not in t.attribute_names
    assert "signup is excluded: 60 distinct text values in 60 rows" in r.message
    assert "signup" not in draft.database["customers"].columns  # the draft's Database drops it
    assert draft.undo().ok and "signup" in draft.database["customers"].columns


def test_accept_marks_reviewed_refusals_and_accept_the_rest(draft: SchemaDraft) -> None:
    before = draft.schema
    n = len(before.proposals)
    r = draft.accept_schema_proposal(NAME)
    assert r.ok and r.message == ("accepted customers.full_name — excluded: personal data or free text: "
                                  "exclude")
    assert draft.schema == before  # accepting keeps it as proposed
    assert _items(draft)[NAME]["status"] == "accepted"
    assert draft.schema_review()["open"] == n - 1 and draft.schema_review()["reviewed"] == 1
    # an excluded column's values were dropped when the data were loaded: accept only
    r = draft.reject_schema_proposal(NOTE)
    assert not r.ok and "left out of the data" in r.message
    assert not draft.accept_schema_proposal("nope:kind").ok
    # an edit made in the graph since: the proposal shows "changed" and accepting it is refused
    assert draft.set_public("regions", False).ok
    assert _items(draft)[PUBLIC]["status"] == "changed"
    r = draft.accept_schema_proposal(PUBLIC)
    assert not r.ok and "no longer says" in r.message
    assert draft.undo().ok and _items(draft)[PUBLIC]["status"] == "open"
    # every open one of a table in one edit (one undo step)
    r = draft.accept_schema_proposals("customers")
    assert r.ok and r.message == "accepted 6 proposal(s) of customers"  # 7, one accepted before
    g = {x["table"]: x for x in draft.schema_review()["groups"]}
    assert g["customers"]["open"] == 0 and g["regions"]["open"] == 3
    assert not draft.accept_schema_proposals("customers").ok
    assert draft.undo().ok and draft.schema_review()["open"] == n - 1
    assert draft.undo().ok and draft.schema_review()["open"] == n


def test_requests_as_the_panel_sends_them(draft: SchemaDraft) -> None:
    assert draft.apply({"op": "reject_inferred", "id": SPEND}).ok
    assert draft.apply({"op": "accept_inferred", "id": NAME}).ok
    assert draft.apply({"op": "accept_inferred", "table": "regions"}).ok
    assert not draft.apply({"op": "reject_inferred"}).ok  # malformed: no id
    st = {i: it["status"] for i, it in _items(draft).items()}
    assert st[SPEND] == "rejected" and st[NAME] == "accepted" and st[PUBLIC] == "accepted"
    assert draft.apply({"op": "undo"}).ok and _items(draft)[PUBLIC]["status"] == "open"


def test_without_data_or_without_proposals(messy_db: Database, clinic_db: Database) -> None:
    bare = SchemaDraft(messy_db.schema)  # a bare schema: no text values to read
    it = _items(bare)[SIGNUP]
    assert not it["can_reject"] and "no data" in it["reject"]
    assert _items(bare)[PUBLIC]["can_reject"]
    plain = SchemaDraft(clinic_db)  # a declared schema proposes nothing: the section stays hidden
    assert plain.schema_proposals() == [] and plain.graph()["review"]["total"] == 0


def test_set_schema_with_new_proposals_replaces_them(draft: SchemaDraft) -> None:
    assert draft.accept_schema_proposal(NAME).ok
    assert draft.set_schema(draft.schema.with_public("regions", True)).ok  # same proposals: kept
    assert _items(draft)[NAME]["status"] == "accepted"
    other = infer_schema({"t": pd.DataFrame({"t_id": range(10), "x": [1.0, 2.0] * 5})})
    assert draft.set_schema(other).ok
    assert {it["table"] for it in draft.schema_proposals()} == {"t"}
    assert draft.undo().ok and _items(draft)[NAME]["status"] == "accepted"


def test_widget_mirrors_the_review(messy_db: Database) -> None:
    editor = SchemaEditor(messy_db)
    assert editor.graph["review"]["open"] == len(messy_db.schema.proposals)
    r = editor.reject_schema_proposal(PUBLIC)
    assert r.ok and not editor.schema.table("regions").public
    row = next(it for g in editor.graph["review"]["groups"] for it in g["items"] if it["id"] == PUBLIC)
    assert row["status"] == "rejected"
    editor.request = {"op": "accept_inferred", "id": SPEND, "seq": "1"}
    assert editor.message["ok"] and editor.message["seq"] == "1"
    assert editor.accept_schema_proposal(SPEND).ok is False  # already accepted
    editor.undo()
    editor.undo()
    assert editor.schema.table("regions").public and editor.graph["review"]["reviewed"] == 0
