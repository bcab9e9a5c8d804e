"""Synthetic keys keep the real key's type and public format (relviz.keys; issue 15, item 3)."""

from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.errors import SchemaError
from relviz.keys import KeyFormat, format_synthetic_keys, key_roots, propose_key_format
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from tests.messy_data import messy_csv


def test_key_format_applies_prefix_width_and_keeps_nulls() -> None:
    f = KeyFormat("tailnum", prefix="N", width=5)
    s = pd.Series([1, 17, 123456], dtype="int64")
    out = f.apply(s)
    assert out.tolist() == ["N00001", "N00017", "N123456"]  # longer numbers stay whole (unique)
    assert pd.api.types.is_string_dtype(out)
    assert s.tolist() == [1, 17, 123456]  # the caller's series is not modified
    nullable = f.apply(pd.Series([3, None], dtype="Int64"))
    assert nullable.iloc[0] == "N00003" and pd.isna(nullable.iloc[1])
    assert KeyFormat("k", "int").apply(s).tolist() == [1, 17, 123456]
    assert f.template == "N{:05d}" and f.template.format(17) == f.example(17)


def test_key_format_from_template_and_json() -> None:
    f = KeyFormat.from_template("c", "Customer#{:09d}")
    assert (f.prefix, f.width, f.suffix) == ("Customer#", 9, "")
    assert KeyFormat.from_template("c", "C-{}-X") == KeyFormat("c", "str", "C-", 0, "-X")
    assert KeyFormat.from_dict("c", {"format": "N{:05d}"}) == KeyFormat("c", "str", "N", 5)
    assert KeyFormat.from_dict("c", f.to_dict()) == f
    for bad in ("N{:05d}{}", "no field", "{:x}"):
        with pytest.raises(SchemaError):
            KeyFormat.from_template("c", bad)
    with pytest.raises(SchemaError) as e:
        KeyFormat("c", "int", prefix="N")
    assert e.value.kinds() == {"bad_key_format"}
    with pytest.raises(SchemaError):
        KeyFormat("c", "str", width=-1)
    with pytest.raises(SchemaError):
        KeyFormat("c", "str", prefix="N", suffix="7")  # "N1"+"7" would collide with "N17"


@pytest.mark.parametrize(("values", "expected"), [
    (["N10156", "N20432", "N33101", "N40009"], KeyFormat("k", "str", "N", 5, provenance="inferred")),
    ([f"Customer#{i:09d}" for i in range(1, 40)],
     KeyFormat("k", "str", "Customer#", 9, provenance="inferred")),
    (["C-12-X", "C-7-X", "C-305-X"], KeyFormat("k", "str", "C-", 0, "-X", provenance="inferred")),
    (["JFK", "LGA", "EWR"], KeyFormat("k", "str", provenance="inferred")),
    ([3, 8, 12], None),
])
def test_propose_key_format_from_the_shape(values: list, expected: KeyFormat | None) -> None:
    fmt, reason = propose_key_format("k", pd.Series(values))
    assert fmt == expected
    assert reason


def tailnum_schema(public_planes: bool = False, fmt: KeyFormat | None = None) -> Schema:
    """planes(tailnum) 1:N flights, and a self-referential ``flights.previous`` (nullable)."""
    fmt = KeyFormat("tailnum", prefix="N", width=5) if fmt is None else fmt
    planes = Table("planes", ("tailnum",), (Attribute.categorical("seats", [55, 100, 140, 180, 375]),),
                   public=public_planes, key_format=(fmt,))
    flights = Table("flights", ("flight_id",), (Attribute.numeric("dep_delay", -60, 70, bins=10),),
                    key_format=(KeyFormat("flight_id", prefix="F-"),))
    fks = (ForeignKey("flights", ("tailnum",), "planes"),
           ForeignKey("flights", ("previous",), "flights", ("flight_id",), nullable=True))
    caps = {fk.name: 1000 for fk in fks if not (public_planes and fk.parent == "planes")}
    return Schema((planes, flights), fks, PrivacyUnit(None, caps))


def test_key_roots_follow_chains_and_composites() -> None:
    part = Table("part", ("p_partkey",))
    supp = Table("supplier", ("s_suppkey",))
    ps = Table("partsupp", ("ps_partkey", "ps_suppkey"))
    li = Table("lineitem", ("l_id",))
    fks = (ForeignKey("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
           ForeignKey("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
           ForeignKey("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")))
    roots = key_roots(Schema((part, supp, ps, li), fks))
    assert roots[("lineitem", "l_partkey")] == ("part", "p_partkey")
    assert roots[("lineitem", "l_suppkey")] == ("supplier", "s_suppkey")
    assert roots[("partsupp", "ps_partkey")] == ("part", "p_partkey")
    assert roots[("lineitem", "l_id")] == ("lineitem", "l_id")


def test_format_synthetic_keys_formats_pk_and_every_fk_consistently() -> None:
    part = Table("part", ("p_partkey",), key_format=(KeyFormat("p_partkey", prefix="P", width=3),))
    supp = Table("supplier", ("s_suppkey",), public=True,
                 key_format=(KeyFormat("s_suppkey", prefix="S"),))  # public: never applied
    ps = Table("partsupp", ("ps_partkey", "ps_suppkey"))
    li = Table("lineitem", ("l_id",))
    fks = (ForeignKey("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
           ForeignKey("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
           ForeignKey("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey"),
                      nullable=True))
    schema = Schema((part, supp, ps, li), fks)
    frames = {"part": pd.DataFrame({"p_partkey": [1, 2, 3]}),
              "supplier": pd.DataFrame({"s_suppkey": [10, 20]}),
              "partsupp": pd.DataFrame({"ps_partkey": [1, 2, 3, 3], "ps_suppkey": [10, 10, 10, 20]}),
              "lineitem": pd.DataFrame({"l_id": [1, 2, 3],
                                        "l_partkey": pd.array([3, 1, None], dtype="Int64"),
                                        "l_suppkey": pd.array([20, 10, None], dtype="Int64")})}
    before = {k: v.copy() for k, v in frames.items()}
    out = format_synthetic_keys(schema, frames)
    assert out["part"]["p_partkey"].tolist() == ["P001", "P002", "P003"]
    assert out["partsupp"]["ps_partkey"].tolist() == ["P001", "P002", "P003", "P003"]
    assert out["lineitem"]["l_partkey"].iloc[:2].tolist() == ["P003", "P001"]
    assert pd.isna(out["lineitem"]["l_partkey"].iloc[2])
    assert out["supplier"]["s_suppkey"].tolist() == [10, 20]  # public keys are real values
    assert out["lineitem"]["l_suppkey"].iloc[:2].tolist() == [20, 10]
    assert out["lineitem"]["l_id"].tolist() == [1, 2, 3]  # no format declared: integers
    for k, v in before.items():  # the caller's frames are not modified
        pd.testing.assert_frame_equal(frames[k], v)
    db = Database(schema, out, validate=False)
    assert [p for p in db.problems() if p.kind in ("orphan", "type_mismatch")] == []


def test_key_format_schema_checks_and_json_roundtrip() -> None:
    s = tailnum_schema()
    assert Schema.from_json(s.to_json()) == s
    assert '"key_format"' in s.to_json() and '"prefix": "N"' in s.to_json()
    from_string = Schema.from_dict({**s.to_dict(), "tables": [
        {**s.table("planes").to_dict(), "key_format": {"tailnum": "N{:05d}"}},
        s.table("flights").to_dict()]})
    assert from_string.table("planes").format_of("tailnum") == KeyFormat("tailnum", "str", "N", 5)
    with pytest.raises(SchemaError) as e:
        Table("planes", ("tailnum",), (Attribute.categorical("seats", [1]),),
              key_format=(KeyFormat("seats"),))
    assert "bad_key_format" in e.value.kinds()
    with pytest.raises(SchemaError) as e:  # an FK column takes its values from the parent
        Schema((Table("planes", ("tailnum",)),
                Table("flights", ("tailnum",), key_format=(KeyFormat("tailnum", prefix="N"),))),
               (ForeignKey("flights", ("tailnum",), "planes"),))
    assert "bad_key_format" in e.value.kinds()
    inferred = s.with_table(Table("planes", ("tailnum",), s.table("planes").attributes,
                                  key_format=(KeyFormat("tailnum", prefix="N", provenance="inferred"),)))
    assert [(p.kind, p.table, p.column) for p in inferred.inferred_problems()] == [
        ("inferred_domain", "planes", "tailnum")]


def test_synthetic_keys_keep_the_real_type_and_format(tmp_path) -> None:
    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer

    frames = messy_csv()
    planes = frames["planes"][["tailnum", "seats"]]
    flights = frames["flights"][["flight_id", "tailnum", "dep_delay"]].assign(
        flight_id=lambda d: "F-" + d["flight_id"].astype(str),
        previous=lambda d: d["flight_id"].shift(1))
    real = Database(tailnum_schema(), {"planes": planes, "flights": flights})
    plan = Plan.default(real.schema, 2.0, 1e-6, mechanism="independent")
    fake = RelationalSynthesizer(plan, random_state=0).fit(real).sample()
    fp, ff = fake["planes"], fake["flights"]
    assert fp["tailnum"].map(lambda v: bool(re.fullmatch(r"N\d{5}", v))).all()
    assert ff["flight_id"].str.fullmatch(r"F-\d+").all()
    assert pd.api.types.is_string_dtype(ff["tailnum"]) and ff["tailnum"].isin(fp["tailnum"]).all()
    prev = ff["previous"].dropna()
    assert len(prev) and prev.isin(ff["flight_id"]).all()  # the self-reference joins too
    assert fake.problems() == []
    # a join written for the real schema runs unchanged on the synthetic one
    joined = ff.merge(fp, on="tailnum", how="inner")
    assert len(joined) == len(ff)
    path = fake.to_sqlite(tmp_path / "fake.sqlite")
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    assert con.execute("SELECT typeof(tailnum) FROM planes LIMIT 1").fetchone() == ("text",)
    con.close()
    # a public parent keeps its real keys (copied), and so do the FKs into it
    pub = Database(tailnum_schema(public_planes=True), {"planes": planes, "flights": flights})
    fake2 = RelationalSynthesizer(Plan.default(pub.schema, 2.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(pub).sample()
    assert set(fake2["planes"]["tailnum"]) == set(planes["tailnum"])
    assert np.isin(fake2["flights"]["tailnum"], planes["tailnum"]).all()
