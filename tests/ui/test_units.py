"""relviz.ui.units: the three privacy units on nycflights13 with planes private, without a browser."""

from __future__ import annotations

from dataclasses import replace

import pytest

import relviz
from relviz import Database
from relviz.datasets import nycflights13 as nf
from relviz.plan import Plan
from relviz.privacy.measure import CURATOR_VIEW
from relviz.ui.units import UNIT_KINDS, unit_options, unit_table, with_unit

TAIL = "flights.tailnum->planes"


@pytest.fixture(scope="module")
def flights() -> Database:
    return relviz.datasets.load("nycflights13")


@pytest.mark.parametrize("selected", ["plane", "row", "tuple"])
def test_three_units_on_planes_private(flights: Database, selected: str) -> None:
    db = nf.planes_private(flights, selected)
    opts = unit_options(db.schema, 1.0, 1e-6, db)
    assert [o.kind for o in opts] == list(UNIT_KINDS)
    kind = {"plane": "entity"}.get(selected, selected)
    assert [o.kind for o in opts if o.selected] == [kind]  # exactly one, the schema's own
    entity, row, tup = opts
    assert all(o.valid and not o.reasons for o in opts)
    # plain words naming this schema's tables
    assert entity.entity == "planes" and entity.title == "Entity unit (planes)"
    assert "one plane and all of its flights" in entity.description
    assert "τ = 1,500" in entity.description
    for o in (row, tup):
        assert "one plane or one flight" in o.description
        assert "planes and flights is public" in o.description
    assert "re-pointed" in row.description
    assert "not hidden as a whole" in tup.description
    assert all("airlines and airports are public" in o.description for o in opts)
    # σ is the default plan's noise preview under each unit, component by component
    for o in opts:
        s = with_unit(db.schema, o.kind)
        expected = Plan.default(s, 1.0, 1e-6).noise_preview(s, db)
        assert [r.name for r in o.releases] == [p.name for p in expected]
        assert [r.sigma for r in o.releases] == [p.sigma for p in expected]
        assert all(r.sigma is not None and r.sigma > 0 for r in o.releases)
        assert all(CURATOR_VIEW in r.n_label for r in o.releases)  # sizes read from the data
    # what the units buy: the entity unit pays for a plane's 1,500 flights in every flight
    # statistic; the tuple unit is the cheapest on the flights-per-plane histogram
    assert entity.sigma("flights") > 100 * row.sigma("flights")
    assert row.sigma("flights") == tup.sigma("flights")
    assert tup.sigma(TAIL) < row.sigma(TAIL)


def test_missing_cap_is_a_reason_not_an_exception(flights: Database) -> None:
    db = nf.planes_private(flights, "row")
    s = db.schema.with_privacy_unit(replace(db.schema.privacy_unit, caps={}))
    opts = unit_options(s, 1.0, 1e-6)
    assert [o.selected for o in opts] == [False, True, False]
    for o in opts:
        assert not o.valid
        assert any(TAIL in r and "degree cap" in r for r in o.reasons), o.reasons
        assert o.sigma(TAIL) is None  # that release has no σ until τ is set, and says why
        assert next(r for r in o.releases if r.name == TAIL).note.startswith("σ unavailable")
        # under the entity unit a flight statistic depends on τ too; under the row-level units not
        assert (o.sigma("flights") is None) == (o.kind == "entity")
        assert "τ (not set yet)" in o.description
    # no data: σ only, no curator-view sizes
    assert unit_table(s, 1.0, 1e-6)["view"] == ""


def test_no_entity_and_nothing_private_are_reasons(flights: Database) -> None:
    # airports made private too: nothing depends on both planes and airports, no entity fits
    db = nf.planes_private(flights, "tuple")
    s = db.schema.with_public("airports", False)
    entity, row, tup = unit_options(s, 1.0, 1e-6)
    assert not entity.valid and entity.entity is None
    assert "no private table has every other private table depending on it" in entity.reasons[0]
    assert tup.selected and "airports" in tup.description
    # every table public
    pub = flights.schema.with_public("flights", True)
    for o in unit_options(pub, 1.0, 1e-6):
        assert not o.valid and "nothing to protect" in o.reasons[0]


def test_draft_set_unit_and_table(flights: Database) -> None:
    from relviz.ui.schema_state import SchemaDraft

    draft = SchemaDraft(nf.planes_private(flights, "tuple"), propose=False)
    t = draft.unit_table(2.0, 1e-5)
    assert t["epsilon"] == 2.0 and t["view"] == CURATOR_VIEW
    assert [u["selected"] for u in t["units"]] == [False, False, True]
    assert draft.apply({"op": "set_unit", "kind": "entity"}).ok
    assert draft.schema.privacy_unit.entity == "planes"
    assert draft.schema.privacy_unit.caps == {TAIL: nf.PLANE_CAP}  # the caps are kept
    assert draft.apply({"op": "set_unit", "kind": "row"}).ok
    assert draft.schema.privacy_unit.kind == "row"
    r = draft.apply({"op": "set_unit", "kind": "household"})
    assert not r.ok and "unknown privacy unit" in r.message
