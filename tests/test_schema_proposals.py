"""Schema proposals a curator can accept (relviz.schema.infer_schema; issue 15, items 1 and 2):
datetimes, excluded identifier / personal / free-text columns, near-keys, public reference
tables, integer numerics, key formats, each with its reason, and an ``exclude`` list per table."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.encoding import decode_column, encode_column
from relviz.errors import SchemaError
from relviz.keys import KeyFormat
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table, infer_schema
from tests.conftest import tiny_frames, tiny_schema
from tests.messy_data import messy_csv, tpch_like


@pytest.fixture(scope="module")
def tpch() -> tuple[dict[str, pd.DataFrame], Schema]:
    frames = tpch_like()
    return frames, infer_schema(frames)


@pytest.fixture(scope="module")
def messy() -> tuple[dict[str, pd.DataFrame], Schema]:
    frames = messy_csv()
    return frames, infer_schema(frames)


def proposal(schema: Schema, table: str, column: str | None, kind: str | None = None):  # noqa: ANN201
    found = [p for p in schema.proposals if p.table == table and p.column == column
             and (kind is None or p.kind == kind)]
    assert len(found) == 1, (table, column, kind, [str(p) for p in schema.proposals if p.table == table])
    return found[0]


def test_dates_as_text_become_datetimes_with_bounds_to_confirm(tpch) -> None:  # noqa: ANN001
    frames, s = tpch
    a = s.table("orders").attribute("o_orderdate")
    real = pd.to_datetime(frames["orders"]["o_orderdate"])
    assert a.kind == "datetime" and a.date and a.provenance == "inferred"
    assert pd.Timestamp(a.lower) == real.min() and pd.Timestamp(a.upper) == real.max()
    p = proposal(s, "orders", "o_orderdate")
    assert p.kind == "datetime" and "ISO 8601" in p.reason and "public bounds" in p.reason
    assert "whole days" in p.proposal
    stamp = s.table("orders").attribute("o_entered")  # a time of day: not whole days
    assert stamp.kind == "datetime" and not stamp.date
    # epoch integers named like a time: integers on bounds shown as dates
    epoch = s.table("customer").attribute("c_signup_time")
    assert epoch.kind == "numeric" and epoch.integer
    p = proposal(s, "customer", "c_signup_time")
    assert p.kind == "datetime" and "epoch seconds" in p.proposal and "2013-" in p.proposal
    # a plain number column is not a date, nor are year-like numbers as text
    years = infer_schema({"t": pd.DataFrame({"id": range(60), "y": [str(1990 + i % 20) for i in range(60)]})})
    assert years.table("t").attribute("y").kind == "categorical"


def test_identifiers_personal_data_and_free_text_are_excluded_with_a_reason(tpch) -> None:  # noqa: ANN001
    _, s = tpch
    cust = s.table("customer")
    assert set(cust.exclude) == {"c_name", "c_address", "c_phone", "c_email", "c_comment"}
    assert "c_mktsegment" in cust.attribute_names and "c_acctbal" in cust.attribute_names
    reasons = {c: proposal(s, "customer", c).reason for c in cust.exclude}
    assert all(proposal(s, "customer", c).kind == "excluded" for c in cust.exclude)
    assert "phone numbers" in reasons["c_phone"] and "e-mail" in reasons["c_email"]
    assert "free text" in reasons["c_comment"]
    assert "100%" in reasons["c_name"] and "distinct" in reasons["c_address"]
    assert s.table("orders").exclude == ("o_comment",)
    # near-unique text without a telling name or shape is excluded as identifier-like
    codes = pd.DataFrame({"id": range(100), "ref": [f"R{i:x}z{i * 7 % 13}" for i in range(100)]})
    p = proposal(infer_schema({"t": codes}), "t", "ref")
    assert p.kind == "excluded" and "identifier-like" in p.reason
    # unique integers named like an id (not the key) are identifiers too
    ids = pd.DataFrame({"pk": range(80), "ssn_number": np.arange(80) * 7919 + 11})
    assert infer_schema({"t": ids}).table("t").exclude == ("ssn_number",)


def test_near_key_is_proposed_with_its_duplicates_and_keeps_its_fks(messy) -> None:  # noqa: ANN001
    frames, s = messy
    assert s.table("schools").primary_key == ("school",)
    p = proposal(s, "schools", "school", "near_key")
    dups = frames["schools"]["school"][frames["schools"]["school"].duplicated()].tolist()
    assert p.count == 4 and set(p.examples) == set(dups) and "fix" in p.reason
    fk = s.foreign_key("students.school->schools")
    assert fk.parent_columns == ("school",)
    # the duplicates are reported by validation (the curator fixes them before synthesis)
    db = Database(s, frames, validate=False)
    dup = [q for q in db.problems() if q.kind == "duplicate_key"]
    assert len(dup) == 1 and dup[0].table == "schools" and set(dup[0].examples) == set(dups)
    # a key-like name with many duplicates is not a key
    many = frames["schools"].assign(school=lambda d: d["school"].str[:8])
    assert infer_schema({"schools": many}).table("schools").primary_key == ()


def test_small_reference_tables_are_proposed_public_with_the_rule(tpch) -> None:  # noqa: ANN001
    _, s = tpch
    assert s.table("region").public and s.table("nation").public
    assert not s.table("customer").public and not s.table("orders").public
    p = proposal(s, "region", None, "public_table")
    assert "5 rows (≤ 30)" in p.reason and "nation.n_regionkey" in p.reason
    assert "25 rows (≤ 30)" in proposal(s, "nation", None, "public_table").reason
    # caps only where a private parent needs one; the schema is consistent
    assert set(s.privacy_unit.caps) == {"orders.o_custkey->customer"}
    assert s.problems() == []
    # public tables keep their names (public facts) rather than excluding them
    assert "n_name" in s.table("nation").attribute_names
    # a small table nobody refers to, or one above the threshold, stays private
    alone = infer_schema({"t": pd.DataFrame({"id": range(5), "x": list("abcde")})})
    assert not alone.table("t").public
    bigger = infer_schema(tpch_like(), small_table_rows=10)
    assert bigger.table("region").public and not bigger.table("nation").public


def test_integer_valued_numbers_are_integer(tpch) -> None:  # noqa: ANN001
    _, s = tpch
    a = s.table("orders").attribute("o_distance")
    assert a.kind == "numeric" and a.integer
    p = proposal(s, "orders", "o_distance")
    assert p.kind == "integer" and "whole number" in p.reason
    vals = decode_column(a, np.arange(a.n_values), np.random.default_rng(0))
    assert np.all(np.mod(vals.to_numpy(dtype=float), 1) == 0)
    assert not s.table("customer").attribute("c_acctbal").integer
    disc = s.table("orders").attribute("o_discount")  # 0.00 … 0.10 in steps: a short list
    assert disc.kind == "categorical" and len(disc.categories) == 11


def test_every_column_gets_one_explained_proposal(tpch, messy) -> None:  # noqa: ANN001
    for frames, s in (tpch, messy):
        for name, df in frames.items():
            t = s.table(name)
            fk_cols = {c for fk in s.fks_from(name) for c in fk.columns}
            assert set(df.columns) == set(t.primary_key) | fk_cols | set(t.attribute_names) | set(t.exclude)
            for c in t.attribute_names + t.exclude:
                p = proposal(s, name, c)
                assert p.reason and p.proposal
            for c in t.primary_key:  # one key proposal (a text key also gets a key_format one)
                keys = [p for p in s.proposals if p.table == name and p.column == c
                        and p.kind in ("primary_key", "near_key")]
                assert len(keys) == (1 if len(t.primary_key) == 1 else 0)
            for fk in s.fks_from(name):
                assert proposal(s, name, ", ".join(fk.columns), "foreign_key").reason


def test_text_keys_get_a_proposed_format(messy) -> None:  # noqa: ANN001
    _, s = messy
    fmt = s.table("planes").format_of("tailnum")
    assert fmt == KeyFormat("tailnum", "str", "N", 5, provenance="inferred")
    assert "N00001" in proposal(s, "planes", "tailnum", "key_format").reason
    assert ("planes", "tailnum") in s.inferred_key_formats()
    assert s.table("students").key_format == ()  # integer keys need none


def test_inference_does_not_modify_the_frames() -> None:
    frames = tpch_like()
    before = {k: v.copy() for k, v in frames.items()}
    infer_schema(frames)
    for k, v in before.items():
        pd.testing.assert_frame_equal(frames[k], v)


def test_proposals_are_data_not_schema_and_stay_out_of_plain_json(tpch) -> None:  # noqa: ANN001
    _, s = tpch
    plain = json.loads(s.to_json())
    assert "proposals" not in plain  # what a release writes
    full = s.to_json(proposals=True)
    back = Schema.from_json(full)
    assert back == s and back.proposals == s.proposals
    assert Schema.from_json(s.to_json()).proposals == ()
    assert Schema.from_json(s.to_json()) == s  # proposals do not change what the schema says
    assert all(isinstance(p["reason"], str) for p in json.loads(full)["proposals"])
    # edits keep them (the schema editor shows them while the curator works)
    assert s.with_public("customer").proposals == s.proposals


def test_declared_keys_of_a_database_file_are_kept(tmp_path) -> None:
    import sqlite3

    frames = tpch_like()
    con = sqlite3.connect(tmp_path / "db.sqlite")
    con.execute("CREATE TABLE region (r_regionkey INTEGER PRIMARY KEY, r_name TEXT, r_comment TEXT)")
    con.execute("CREATE TABLE nation (n_nationkey INTEGER PRIMARY KEY, n_name TEXT, n_regionkey INTEGER "
                "REFERENCES region (r_regionkey), n_comment TEXT)")
    for t in ("region", "nation"):
        frames[t].to_sql(t, con, if_exists="append", index=False)
    con.commit()
    con.close()
    db = Database.from_sqlite(tmp_path / "db.sqlite", validate=False)
    s = db.schema
    assert proposal(s, "nation", "n_regionkey", "foreign_key").reason.startswith("declared")
    assert s.table("region").public and s.table("region").attribute("r_name").kind == "categorical"


# -- the exclude list (item 2) -------------------------------------------------------------------

def excluded_schema() -> Schema:
    s = tiny_schema()
    return s.with_excluded("persons", ["name", "notes"])


def test_exclude_list_json_and_checks() -> None:
    s = excluded_schema()
    assert s.table("persons").exclude == ("name", "notes")
    assert Schema.from_json(s.to_json()) == s
    assert json.loads(s.to_json())["tables"][2]["exclude"] == ["name", "notes"]
    assert "exclude" not in json.loads(tiny_schema().to_json())["tables"][2]  # old files unchanged
    with pytest.raises(SchemaError) as e:
        Table("t", ("id",), (Attribute.categorical("x", [1]),), exclude=("x", "id"))
    assert "duplicate_column" in e.value.kinds()
    with pytest.raises(SchemaError) as e:  # an FK column cannot be excluded
        Schema((Table("p", ("id",)), Table("c", ("cid",), exclude=("pid",))),
               (ForeignKey("c", ("pid",), "p", ("id",)),), PrivacyUnit(None, {}))
    assert "duplicate_column" in e.value.kinds()


def test_database_drops_excluded_columns_and_validation_accepts_them() -> None:
    frames = tiny_frames()
    frames["persons"] = frames["persons"].assign(name=[f"P{i}" for i in range(len(frames["persons"]))],
                                                 notes="x", shoe=42)
    before = frames["persons"].copy()
    db = Database(excluded_schema(), frames, validate=False)
    kinds = [(p.kind, p.column) for p in db.problems()]
    assert kinds == [("undeclared_column", "shoe")]  # the excluded ones are not complained about
    assert "--drop-undeclared" in str(db.problems()[0]) and "exclude" in str(db.problems()[0])
    assert "name" not in db["persons"].columns and "shoe" in db["persons"].columns
    pd.testing.assert_frame_equal(frames["persons"], before)  # the caller's frame keeps them
    dropped, what = db.drop_undeclared()
    assert what == {"persons": ["shoe"]} and dropped.problems() == []
    assert dropped.schema.table("persons").exclude == ("name", "notes", "shoe")
    assert dropped.excluded_columns() == {"persons": ("name", "notes", "shoe")}
    assert db.schema.table("persons").exclude == ("name", "notes")  # db itself unchanged


def test_datetime_dates_round_trip_as_whole_days() -> None:
    a = Attribute.datetime("d", "1992-01-01", "1998-12-31", bins=40, date=True)
    assert Attribute.from_dict(a.to_dict()) == a and a.to_dict()["date"] is True
    s = pd.Series(["1992-01-01", "1995-06-15", "1998-12-31", None])
    codes = encode_column(Attribute.datetime("d", "1992-01-01", "1998-12-31", bins=40, date=True,
                                             nullable=True), s)
    assert codes[-1] == 40 and codes[0] == 0 and codes[2] == 39
    out = decode_column(a, np.repeat(np.arange(40), 50), np.random.default_rng(0))
    assert (out == out.dt.normalize()).all() and out.min() >= pd.Timestamp("1992-01-01")
    assert out.max() <= pd.Timestamp("1998-12-31")
    short = Attribute.datetime("d", "2020-01-01", "2020-01-10", bins=32, date=True)
    assert short.n_values == 10 and short.labels()[0] == "2020-01-01"  # one bin per day
    assert decode_column(short, np.array([3]), np.random.default_rng(0))[0] == pd.Timestamp("2020-01-04")
    with pytest.raises(SchemaError):
        Attribute(name="x", kind="numeric", lower=0.0, upper=1.0, date=True)


def test_a_proposed_schema_synthesises_end_to_end() -> None:
    """infer → accept every proposal (drop the "inferred" marks) → fit → sample."""
    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer

    frames = {**tpch_like(), **{k: v for k, v in messy_csv().items() if k in ("planes", "flights")}}
    s = infer_schema(frames)
    with pytest.raises(SchemaError):  # not accepted yet: refused
        RelationalSynthesizer(Plan.default(s, 2.0, 1e-6, mechanism="independent")).fit(
            Database(s, frames, validate=False))
    d = s.to_dict()
    for t in d["tables"]:
        for a in t["attributes"]:
            a.pop("provenance", None)
        for f in t.get("key_format", {}).values():
            f.pop("provenance", None)
    for fk in d["foreign_keys"]:
        fk.pop("nullable_provenance", None)
    accepted = Schema.from_dict(d)
    real = Database(accepted, frames)
    plan = Plan.default(accepted, 2.0, 1e-6, mechanism="independent")
    fake = RelationalSynthesizer(plan, random_state=0).fit(real).sample()
    assert fake.problems() == []
    orders = fake["orders"]
    assert "o_comment" not in orders.columns and "c_phone" not in fake["customer"].columns
    assert pd.api.types.is_datetime64_any_dtype(orders["o_orderdate"])
    assert (orders["o_orderdate"] == orders["o_orderdate"].dt.normalize()).all()
    assert np.all(np.mod(orders["o_distance"].to_numpy(dtype=float), 1) == 0)
    assert fake["flights"]["tailnum"].map(lambda v: bool(re.fullmatch(r"N\d{5}", v))).all()
    assert fake["region"].equals(real["region"])  # public: copied
