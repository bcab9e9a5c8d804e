"""Schema value objects: construction checks, problems, topological order, JSON, inference."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from relviz.errors import SchemaError
from relviz.schema import (
    Attribute,
    ForeignKey,
    PrivacyUnit,
    Schema,
    Table,
    infer_schema,
    propose_foreign_keys,
)
from tests.conftest import tiny_frames, tiny_schema


def test_attribute_domains() -> None:
    a = Attribute.numeric("x", 0, 10, bins=5)
    assert a.size == 5 and np.allclose(a.bin_edges(), [0, 2, 4, 6, 8, 10])
    b = Attribute.numeric("m", 1, 12, bins=12, integer=True, nullable=True)
    assert b.size == 13 and b.labels()[0] == "1" and b.labels()[-1] == "(null)"
    c = Attribute.categorical("c", ["a", "b"], nullable=True)
    assert c.size == 3
    e = Attribute.numeric("d", -100, 1440, edges=(-100, 0, 60, 1440))
    assert e.size == 3
    t = Attribute.datetime("t", "2013-01-01", "2014-01-01", bins=12)
    assert t.size == 12 and t.bin_edges()[0] == pd.Timestamp("2013-01-01").value / 1e9


@pytest.mark.parametrize("kw", [
    dict(name="x", kind="categorical", categories=()),
    dict(name="x", kind="categorical", categories=("a", "a")),
    dict(name="x", kind="numeric", lower=5.0, upper=1.0),
    dict(name="x", kind="numeric", lower=0.0, upper=1.0, edges=(0.0, 0.5, 0.4, 1.0)),
    dict(name="x", kind="numeric", lower=0.0, upper=1.0, edges=(0.1, 1.0)),
    dict(name="x", kind="blob"),
])
def test_bad_attributes_raise(kw: dict) -> None:
    with pytest.raises(SchemaError):
        Attribute(**kw)


def test_structural_errors_are_collected() -> None:
    t = Table("a", ("id",), (Attribute.categorical("x", [1, 2]),))
    with pytest.raises(SchemaError) as e:
        Schema((t, t), (ForeignKey("a", ("x",), "nowhere"), ForeignKey("ghost", ("y",), "a")))
    kinds = e.value.kinds()
    assert {"duplicate_table", "unknown_table", "duplicate_column"} <= kinds


def test_topological_order_and_graph() -> None:
    s = tiny_schema()
    order = s.topological_order()
    assert order.index("regions") < order.index("households") < order.index("persons")
    g = s.graph()
    assert g.number_of_edges() == 2 and g.has_edge("households", "persons")


def test_multi_fk_to_same_parent_and_self_reference() -> None:
    airports = Table("airports", ("faa",), ())
    flights = Table("flights", ("id",), ())
    s = Schema((airports, flights), (ForeignKey("flights", ("origin",), "airports", ("faa",)),
                                     ForeignKey("flights", ("dest",), "airports", ("faa",))),
               PrivacyUnit("flights"))
    assert len(s.fks_into("airports")) == 2
    assert s.graph().number_of_edges("airports", "flights") == 2
    people = Table("people", ("pid",), ())
    selfref = Schema((people,), (ForeignKey("people", ("mother",), "people", ("pid",), nullable=True),),
                     PrivacyUnit(None, {"people.mother->people": 4}))
    assert selfref.problems() == [] and selfref.topological_order() == ("people",)
    as_entity = selfref.with_privacy_unit(PrivacyUnit("people", {"people.mother->people": 4}))
    assert any(p.kind == "bad_unit" for p in as_entity.problems())


def test_unit_problems() -> None:
    s = tiny_schema(caps={})
    kinds = {p.kind for p in s.problems()}
    assert "missing_cap" in kinds
    s2 = tiny_schema(entity="persons")  # households does not depend on persons
    assert any(p.kind == "bad_unit" and p.table == "households" for p in s2.problems())
    assert tiny_schema().problems() == []


def test_reserved_attribute_names_are_problems() -> None:
    """Names of the form of relviz's own model variables (PrivLava's latent ``__Z1[fk]``, a
    split attribute's ``#hi``/``#lo`` digits) are reported, every one at once, so that no
    column is mistaken for one; the names relviz itself makes have that form."""
    from relviz.relational.privlava.em import Z1, Z2
    from relviz.schema import RESERVED_PREFIXES, RESERVED_SUFFIXES

    s = tiny_schema()
    hh = s.table("households")
    bad = replace(hh, attributes=hh.attributes + (Attribute.categorical("__Z1[x]", ["a"]),
                                                  Attribute.categorical("income#lo", ["a"])))
    s2 = Schema(tuple(bad if t.name == "households" else t for t in s.tables), s.foreign_keys,
                s.privacy_unit, name="tiny")
    found = [(p.kind, p.table, p.column) for p in s2.problems() if p.kind == "reserved_name"]
    assert found == [("reserved_name", "households", "__Z1[x]"),
                     ("reserved_name", "households", "income#lo")]
    assert not [p for p in s.problems() if p.kind == "reserved_name"]
    assert Z1("f").startswith(RESERVED_PREFIXES) and Z2("f").startswith(RESERVED_PREFIXES)
    assert all(len(x) == 3 for x in RESERVED_SUFFIXES)


def test_json_roundtrip(tmp_path) -> None:
    s = tiny_schema()
    assert Schema.from_json(s.to_json()) == s
    s.to_json(tmp_path / "s.json")
    assert Schema.from_json(tmp_path / "s.json") == s


def test_edits_return_new_objects() -> None:
    s = tiny_schema()
    s2 = s.with_public("households", True)
    assert not s.table("households").public and s2.table("households").public
    s3 = s.without_foreign_key("persons.hid->households")
    assert "persons.hid->households" not in s3.privacy_unit.caps
    assert len(s.foreign_keys) == 2 and len(s3.foreign_keys) == 1
    s4 = s.with_cap("persons.hid->households", 7)
    assert s4.privacy_unit.caps["persons.hid->households"] == 7


def test_infer_schema_proposes_keys_and_fks() -> None:
    frames = tiny_frames()
    s = infer_schema(frames)
    assert s.table("persons").primary_key == ("pid",)
    assert {(fk.child, fk.parent) for fk in s.foreign_keys} >= {("persons", "households"),
                                                                  ("households", "regions")}
    assert all(a.provenance == "inferred" for t in s.tables for a in t.attributes)
    props = propose_foreign_keys(frames, {"households": ("hid",), "regions": ("region",),
                                          "persons": ("pid",)})
    p = [p for p in props if p.fk.child == "persons" and p.fk.parent == "households"][0]
    assert p.containment == 1.0 and p.name_match and p.orphans == 0


def test_foreign_key_problems_say_why_an_fk_may_not_join() -> None:
    s = tiny_schema()
    ok = ForeignKey("persons", ("region",), "regions")
    assert s.foreign_key_problems(ok) == []
    kinds = {p.kind for p in s.foreign_key_problems(ForeignKey("persons", ("x",), "nowhere"))}
    assert kinds == {"unknown_table"}
    bad_key = ForeignKey("persons", ("a", "b"), "households")
    assert [p.kind for p in s.foreign_key_problems(bad_key)] == ["bad_foreign_key"]
    twice = ForeignKey("households", ("hid",), "persons", ("pid",))
    assert [p.kind for p in s.foreign_key_problems(twice)] == ["cycle"]
    dup = s.foreign_key_problems(ForeignKey("persons", ("hid",), "households"))
    assert [p.kind for p in dup] == ["duplicate_foreign_key"] and "already exists" in dup[0].message
    taken = s.foreign_key_problems(ForeignKey("persons", ("region",), "regions", name="persons.hid->households"))
    assert [p.kind for p in taken] == ["duplicate_foreign_key"] and "taken" in taken[0].message
    # regions → households → persons: persons → regions is fine, regions → persons closes a cycle
    back = s.foreign_key_problems(ForeignKey("regions", ("region",), "persons", ("pid",)))
    assert back[0].kind == "cycle" and "regions → persons → households → regions" in back[0].message
    # replacing an FK leaves it out of the checks (re-pointing it is no duplicate)
    assert s.foreign_key_problems(ForeignKey("persons", ("hid",), "households"),
                                  replacing="persons.hid->households") == []
    assert s.foreign_key_problems(ForeignKey("persons", ("pid",), "persons")) == []  # a self-reference


def test_with_foreign_key_in_place_moves_the_cap_and_its_source() -> None:
    s = tiny_schema(entity=None).with_cap("persons.hid->households", 3, source={"how": "curator view"})
    new = ForeignKey("persons", ("hid",), "households", name="lives_in")
    r = s.with_foreign_key(new, replacing="persons.hid->households")
    assert [fk.name for fk in r.foreign_keys] == ["households.region->regions", "lives_in"]
    assert r.privacy_unit.caps == {"lives_in": 3}
    assert r.privacy_unit.cap_sources == {"lives_in": {"how": "curator view"}}
    added = s.with_foreign_key(ForeignKey("persons", ("region",), "regions"))
    assert added.foreign_keys[-1].name == "persons.region->regions" and added.privacy_unit == s.privacy_unit
