"""Privacy-unit multipliers and cap enforcement (worked examples: the census and TPC-H schemas of PrivLava,
Cai, Xiao & Cormode §7; the row and tuple units; docs/privacy.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relviz.database import Database
from relviz.privacy.measure import Curator, enforce_caps
from relviz.privacy.sensitivity import multipliers, truncation_stable
from relviz.schema import ForeignKey, PrivacyUnit, Schema, Table
from tests.conftest import tiny_frames, tiny_schema

S2 = math.sqrt(2)


def _t(name: str, public: bool = False) -> Table:
    return Table(name, ("id",), (), public=public)


def test_census_multipliers() -> None:
    s = Schema((_t("H"), _t("P")), (ForeignKey("P", ("h",), "H", ("id",)),),
               PrivacyUnit("H", {"P.h->H": 7}))
    m = multipliers(s)
    assert m.r == {"H": 1, "P": 7}
    assert m.degree_histogram("P.h->H") == 1  # g_rem = 1, g_mod = 0
    assert m.table_histogram("P") == 7 and m.table_histogram("H") == 1


def test_tpch_multipliers_strict_and_paper() -> None:
    tables = (_t("C", True), _t("PS", True), _t("O"), _t("L"))
    fks = (ForeignKey("O", ("c",), "C", ("id",)), ForeignKey("L", ("o",), "O", ("id",)),
           ForeignKey("L", ("ps",), "PS", ("id",)))
    caps = {"O.c->C": 5, "L.o->O": 7, "L.ps->PS": 11}
    m = multipliers(Schema(tables, fks, PrivacyUnit("O", caps)))
    assert m.r["O"] == 1 and m.r["L"] == 7
    assert (m.g_rem["L.o->O"], m.g_mod["L.o->O"]) == (1, 0)
    assert (m.g_rem["L.ps->PS"], m.g_mod["L.ps->PS"]) == (0, 7)
    assert m.degree_histogram("L.ps->PS") == pytest.approx(S2 * 7)
    assert (m.g_rem["O.c->C"], m.g_mod["O.c->C"]) == (0, 1)
    assert m.parent_counts("L.ps->PS") == 7  # x(e) = r(L) for a public parent
    paper = multipliers(Schema(tables, fks, PrivacyUnit("O", caps, accounting="paper")))
    assert paper.degree_histogram("L.ps->PS") == 7


def test_figure3_diamond() -> None:
    tables = (_t("R0"), _t("R1"), _t("R2"), _t("R3"))
    fks = (ForeignKey("R1", ("a",), "R0", ("id",)), ForeignKey("R2", ("a",), "R0", ("id",)),
           ForeignKey("R3", ("a",), "R1", ("id",)), ForeignKey("R3", ("b",), "R2", ("id",)))
    t10, t20, t31, t32 = 2, 3, 5, 7
    caps = {"R1.a->R0": t10, "R2.a->R0": t20, "R3.a->R1": t31, "R3.b->R2": t32}
    m = multipliers(Schema(tables, fks, PrivacyUnit("R0", caps)))
    assert m.r["R3"] == t31 * t10 + t32 * t20
    assert (m.g_rem["R3.b->R2"], m.g_mod["R3.b->R2"]) == (t20, t31 * t10)
    assert m.m["R2"] == t31 * t10
    assert m.g_mod["R2.a->R0"] == t31 * t10  # a single-parent table still has g_mod > 0
    assert m.table_histogram("R2") == pytest.approx(m.r["R2"] + S2 * t31 * t10)


def test_row_unit_multipliers() -> None:
    m = multipliers(tiny_schema(entity=None))
    assert m.table_histogram("persons") == pytest.approx(S2)
    assert m.degree_histogram("persons.hid->households") == pytest.approx(S2 * (2 * 4 + 1))


def test_enforce_caps_children_default_and_parents_option() -> None:
    frames = tiny_frames()
    db = Database(tiny_schema(caps={"persons.hid->households": 2}), frames)
    deg = db.degrees("persons.hid->households")
    truncated, report = enforce_caps(db)
    assert truncated.degrees("persons.hid->households").max() == 2
    assert report.rows.iloc[0]["rows_removed"] == int(np.maximum(deg - 2, 0).sum())
    assert report.stable  # entity parent: stable
    assert len(truncated["households"]) == len(db["households"])
    s = tiny_schema(caps={"persons.hid->households": 2})
    s = s.with_privacy_unit(PrivacyUnit("households", {"persons.hid->households": 2},
                                        truncate="parents"))
    t2, r2 = enforce_caps(Database(s, frames))
    assert len(t2["households"]) == int((deg <= 2).sum())
    assert t2.degrees("persons.hid->households").max() <= 2
    again, r3 = enforce_caps(truncated)  # idempotent
    assert not r3.changed and again.row_counts() == truncated.row_counts()


def test_curator_logs_every_read(tiny_db: Database) -> None:
    cur = Curator(tiny_db)
    t = cur.table("persons")
    x = t.marginal(("sex", "age"))
    assert x.shape == (2 * 5,) and x.sum() == len(tiny_db["persons"])
    fk = cur.foreign_key("persons.hid->households")
    h = fk.degree_histogram(4)
    assert h.sum() == len(tiny_db["households"])
    c = fk.cross_marginal(("sex",), ("tenure",))
    assert c.sum() == len(tiny_db["persons"])
    assert [r.query for r in cur.log.reads][:1] == ["marginal('sex', 'age')"]
    assert len(cur.log) == 3  # marginal, degrees (for the histogram), cross marginal


def test_row_unit_derivations_from_one_neighbour() -> None:
    """Row unit (one row and every relationship attached to it), τ = 4: a parent row sends its τ
    children away and takes τ others, so 2τ links move and 2τ + 1 groups change."""
    m = multipliers(tiny_schema(entity=None))
    fk = "persons.hid->households"
    assert m.edges_changed(fk) == 8
    assert m.edges_changed("households.region->regions") == 1  # public parent: a child moves
    assert m.parent_counts("households.region->regions") == pytest.approx(S2)
    assert m.null_count(fk) == 4
    assert m.degree_release(fk, with_null=True) == pytest.approx(math.hypot(S2 * 9, 4))
    assert m.degree_release(fk, with_null=False) == pytest.approx(S2 * 9)
    assert m.link_count_public(fk)  # non-null FK: the number of links is the child table size
    people = Table("people", ("pid",), ())
    self_fk = ForeignKey("people", ("mother",), "people", ("pid",), nullable=True)
    ms = multipliers(Schema((people,), (self_fk,), PrivacyUnit(None, {self_fk.name: 2})))
    assert ms.edges_changed(self_fk.name) == 5 and ms.null_count(self_fk.name) == 3
    assert ms.degree_histogram(self_fk.name) == pytest.approx(S2 * 7)  # 2τ + 3 groups
    assert not ms.link_count_public(self_fk.name)  # nullable: the number of links changes
    with pytest.raises(Exception, match="needs a degree cap"):
        multipliers(tiny_schema(entity=None, caps={})).edges_changed(fk)


def test_many_to_many_pairs_changed() -> None:
    a, b, link = Table("A", ("id",), ()), Table("B", ("id",), ()), Table("L", ("lid",), ())
    f1, f2 = ForeignKey("L", ("a",), "A", ("id",)), ForeignKey("L", ("b",), "B", ("id",))
    m = multipliers(Schema((a, b, link), (f1, f2), PrivacyUnit(None, {f1.name: 3, f2.name: 5})))
    assert m.pairs_changed(f1.name, f2.name) == 10
    g1, g2 = ForeignKey("L", ("a",), "A", ("id",)), ForeignKey("L", ("a2",), "A", ("id",))
    ms = multipliers(Schema((a, link), (g1, g2), PrivacyUnit(None, {g1.name: 3, g2.name: 5})))
    assert ms.pairs_changed(g1.name, g2.name) == 16


def _closure_keys(db: Database, table: str, mask: np.ndarray) -> dict[str, set]:
    """Primary keys per table of the rows that removing ``mask`` of ``table`` removes."""
    from relviz.database import drop_rows

    after = drop_rows(db, table, mask)
    return {t: set(db[t].iloc[:, 0]) - set(after[t].iloc[:, 0]) for t in db.schema.table_names}


def test_truncation_is_stable_for_the_entity_parent() -> None:
    """trunc(D − t) = trunc(D) − closure(t) for every household t (τ = 2 on groups of 1–4)."""
    db = Database(tiny_schema(caps={"persons.hid->households": 2}), tiny_frames())
    trunc, report = enforce_caps(db)
    assert report.stable and report.changed
    keys = {t: set(trunc[t].iloc[:, 0]) for t in db.schema.table_names}
    n = len(db["households"])
    for i in range(n):
        mask = np.zeros(n, dtype=bool)
        mask[i] = True
        gone = _closure_keys(db, "households", mask)
        t2, _ = enforce_caps(_drop(db, mask))
        for t in db.schema.table_names:
            assert set(t2[t].iloc[:, 0]) == keys[t] - gone[t], (i, t)


def _drop(db: Database, mask: np.ndarray) -> Database:
    from relviz.database import drop_rows

    return drop_rows(db, "households", mask)


def test_truncation_keeps_children_by_keyed_hash_of_the_key() -> None:
    """The kept children depend on the children's keys only: shuffling the rows changes nothing."""
    frames = tiny_frames()
    db = Database(tiny_schema(caps={"persons.hid->households": 2}), frames)
    shuffled = dict(frames, persons=frames["persons"].sample(frac=1.0, random_state=3))
    a, _ = enforce_caps(db)
    b, _ = enforce_caps(Database(db.schema, shuffled))
    assert set(a["persons"]["pid"]) == set(b["persons"]["pid"])
    c, _ = enforce_caps(db, salt=7)  # another key keeps other children
    assert set(c["persons"]["pid"]) != set(a["persons"]["pid"])


def test_stability_is_a_property_of_the_schema() -> None:
    """Published stability never depends on the data: the row unit is never stable, even when
    nothing was truncated; an FK to a public parent under the entity unit is not either."""
    row = Database(tiny_schema(entity=None, caps={"persons.hid->households": 10}), tiny_frames())
    _, report = enforce_caps(row)
    assert not report.changed and not report.stable
    s = tiny_schema(caps={"persons.hid->households": 2, "households.region->regions": 50})
    assert truncation_stable(s) == {"persons.hid->households": True,
                                    "households.region->regions": False}


def test_tuple_unit_derivations() -> None:
    """Tuple unit (one row, its own values and FK values), τ = 4: a child moving between groups
    of degrees a and a − 2 changes the histogram by (−1, +2, −1): √6, not 2 (the neighbour
    harness finds that case); a parent row's value change re-cells its τ links."""
    from dataclasses import replace

    s = tiny_schema(entity=None)
    m = multipliers(s.with_privacy_unit(replace(s.privacy_unit, neighbour="tuple")))
    fk = "persons.hid->households"
    assert m.tuple_unit and m.row_unit
    assert m.degree_histogram(fk) == pytest.approx(math.sqrt(6))
    assert m.degree_release(fk, with_null=True) == pytest.approx(math.sqrt(6))
    assert m.edges_changed(fk) == 4 and m.null_count(fk) == 1
    assert m.parent_counts("households.region->regions") == pytest.approx(S2)
    a, b, link = Table("A", ("id",), ()), Table("B", ("id",), ()), Table("L", ("lid",), ())
    f1, f2 = ForeignKey("L", ("a",), "A", ("id",)), ForeignKey("L", ("b",), "B", ("id",))
    mt = multipliers(Schema((a, b, link), (f1, f2),
                            PrivacyUnit(None, {f1.name: 3, f2.name: 5}, neighbour="tuple")))
    assert mt.pairs_changed(f1.name, f2.name) == 5
    assert truncation_stable(s.with_privacy_unit(replace(s.privacy_unit, neighbour="tuple"))) == \
        {fk: False}
    assert PrivacyUnit.from_dict(PrivacyUnit(None, neighbour="tuple").to_dict()).neighbour == "tuple"
