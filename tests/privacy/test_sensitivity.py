"""Privacy-unit multipliers (spec/privlava.md §10.4 worked examples) and cap enforcement."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relviz.database import Database
from relviz.privacy.measure import Curator
from relviz.privacy.sensitivity import enforce_caps, multipliers
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
