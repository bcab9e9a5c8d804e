"""The budget panel's "Approach" (per-FK linkers, PrivLava, Denorm, the 80/20 baseline), without a
browser: the draft's ``set_approach`` op and the panel's widgets, on the census stand-in."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from relviz import Database, datasets
from relviz.ui.budget_state import LINKERS, BudgetDraft, approaches

FK = "persons.household_id->households"


@pytest.fixture(scope="module")
def census() -> Database:
    return datasets.load("census", n_households=300, seed=0)


def test_approaches_are_listed() -> None:
    a = approaches()
    assert list(a)[0] == LINKERS
    assert {"privlava", "denorm", "baseline-80-20"} <= set(a)


def test_set_approach_switches_components_and_undo_restores(census: Database) -> None:
    d = BudgetDraft(census, epsilon=8.0, delta=1e-6)
    start = d.plan
    assert d.approach() == LINKERS and not d.can_undo

    r = d.set_approach("privlava")
    assert r.ok and "PrivLava" in r.message
    comps = {(c.name, c.kind, c.method) for c in d.plan.components}
    assert comps == {(FK, "edge", "privlava"), ("households", "table", "mst")}  # persons: generated
    assert d.plan.database_method == "privlava" and d.approach() == "privlava"
    assert (d.plan.epsilon, d.plan.delta) == (8.0, 1e-6) and d.total_share() == 1
    rows = {v.name: v for v in d.rows()}
    assert all(v.sigmas and v.sigma is not None for v in rows.values())  # σ for every component
    assert any(k.startswith("Alg. 1 latent marginals") for k in rows[FK].sigmas)
    assert len(rows[FK].sigmas) == 4 and len(rows["households"].sigmas) == 2
    assert "latent" in d.approach_text()

    # under PrivLava: the FK names the method, the table offers only what PrivLava accepts (mst)
    assert d.method_locked(FK) and d.method_choices(FK) == {"privlava": "PrivLava"}
    assert list(d.method_choices("households")) == ["mst"]
    before = d.plan
    refused = d.set_method(FK, "degree")
    assert not refused.ok and "Approach" in refused.message and d.plan is before
    refused = d.set_method("households", "independent")
    assert not refused.ok and "graphical" in refused.message and d.plan is before

    assert d.set_approach("denorm").ok
    assert {c.method for c in d.plan.edges} == {"denorm"} and d.approach() == "denorm"
    assert all(v.sigmas for v in d.rows())
    assert d.apply({"op": "set_approach", "name": "baseline-80-20"}).ok
    assert d.approach() == "baseline-80-20"
    assert sum((c.share for c in d.plan.tables), Fraction(0)) == Fraction(4, 5)
    assert d.set_approach(LINKERS).ok and d.approach() == LINKERS
    assert [c.method for c in d.plan.edges] == ["degree"]

    # undo walks back through every applied approach, to the starting plan
    for expected in ("baseline-80-20", "denorm", "privlava", LINKERS):
        u = d.undo()
        assert u.ok and u.message.startswith("undone: approach") and d.approach() == expected
    assert d.plan == start and not d.can_undo
    assert not d.undo().ok
    assert not d.set_approach("nonsense").ok and d.plan == start


def test_set_approach_refuses_in_words(census: Database) -> None:
    schema = census.schema
    unit = schema.privacy_unit
    no_caps = schema.with_privacy_unit(replace(unit, caps={}))
    d = BudgetDraft(no_caps, epsilon=1.0)
    before = d.plan
    r = d.set_approach("privlava")
    assert not r.ok and d.plan is before and not d.can_undo
    assert FK in r.message and "cap τ" in r.message
    assert "Schema panel" in r.message and "DP cap" in r.message
    r = d.set_approach("denorm")
    assert not r.ok and "DP cap" in r.message and d.plan is before

    row_unit = schema.with_privacy_unit(replace(unit, entity=None, neighbour="row"))
    r = BudgetDraft(row_unit).set_approach("privlava")
    assert not r.ok and "row unit" in r.message and "entity or the tuple unit" in r.message


def test_budget_panel_approach_menu(census: Database) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import BudgetPanel

    panel = BudgetPanel(census, epsilon=8.0)
    assert panel._approach.value == LINKERS and panel._undo.disabled
    assert set(panel._rows) == {"households", "persons", FK}
    panel._approach.value = "privlava"  # as the front end would
    assert panel.plan.database_method == "privlava" and panel.history[-1].ok
    assert set(panel._rows) == {"households", FK}  # the rows follow the new components
    edge = panel._rows[FK]["method"]
    assert edge.disabled and edge.options == (("PrivLava", "privlava"),)
    assert panel._rows["households"]["method"].options == (("MST", "mst"),)
    info = panel._rows[FK]["info"].value
    for label in ("σ_ℓ", "σ_size", "σ_z", "σ_err"):
        assert label in info  # every release's σ is shown, not only the first
    assert "1-way marginals" in panel._rows["households"]["info"].value
    assert "2-way marginals" in panel._rows["households"]["info"].value
    assert "PrivLava" in panel._approach_text.value and "latent" in panel._approach_text.value
    assert not panel._undo.disabled
    panel._undo.click()
    assert panel._approach.value == LINKERS and set(panel._rows) == {"households", "persons", FK}
    assert panel.plan.database_method is None

    # a refused approach snaps the menu back
    no_caps = census.schema.with_privacy_unit(replace(census.schema.privacy_unit, caps={}))
    p2 = BudgetPanel(no_caps, epsilon=1.0)
    p2._approach.value = "privlava"
    assert not p2.history[-1].ok and p2._approach.value == LINKERS
    assert "DP cap" in p2._message.value


def test_set_approach_lists_the_fks_a_database_method_links() -> None:
    """Choosing PrivPetal on a schema with an uncapped FK to a public parent: the FK is linked with
    the degree method (mixed mode; PrivPetal generates households) and the message says which
    and why; when every FK is linked (caps above 64), the message says PrivPetal models nothing
    here, households is a stand-alone table and its FK to the public parent gets
    parent-attributes (the region's climate), the FK to the private parent the degree method."""
    import numpy as np
    import pandas as pd

    from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

    cat = lambda n, k: Attribute.categorical(n, list(range(k)))  # noqa: E731
    fks = (ForeignKey("households", ("region",), "regions"), ForeignKey("persons", ("hid",), "households"))
    schema = Schema((Table("regions", ("region",), (cat("climate", 2),), public=True),
                     Table("households", ("hid",), (cat("own", 2),)),
                     Table("persons", ("pid",), (cat("age", 3),))),
                    fks, PrivacyUnit("households", {fks[1].name: 4}))
    rng = np.random.default_rng(0)
    db = Database(schema, {
        "regions": pd.DataFrame({"region": range(3), "climate": [0, 1, 1]}),
        "households": pd.DataFrame({"hid": range(20), "region": rng.integers(0, 3, 20), "own": rng.integers(0, 2, 20)}),
        "persons": pd.DataFrame({"pid": range(40), "hid": np.repeat(np.arange(20), 2), "age": rng.integers(0, 3, 40)})})
    d = BudgetDraft(db, epsilon=1.0)
    r = d.set_approach("privpetal")
    assert r.ok and d.plan.database_method == "privpetal"
    assert "linked instead" in r.message and fks[0].name in r.message and "no declared cap N" in r.message
    assert "degree instead of privpetal" in r.message
    assert {c.name: c.method for c in d.plan.edges} == {fks[0].name: "degree", fks[1].name: "privpetal"}
    big = BudgetDraft(Database(schema.with_privacy_unit(PrivacyUnit("households", {fks[1].name: 100,
                                                                                   fks[0].name: 100})),
                               {t: db[t] for t in schema.table_names}), epsilon=1.0)
    r = big.set_approach("privpetal")
    assert r.ok and "models no FK" in r.message and "above 64" in r.message
    assert {c.name: c.method for c in big.plan.edges} == {fks[0].name: "parent-attributes",
                                                          fks[1].name: "degree"}


def test_fk_menus_offer_only_linkers_that_can_link_the_fk() -> None:
    """fk-attribute needs a public parent: offered on households → regions (public parent), not
    on persons → households (private); the σ row of a chosen fk-attribute is the degree
    baseline's public-parent release (docs/methods/keyed.md §2)."""
    from tests.conftest import tiny_frames, tiny_schema

    d = BudgetDraft(Database(tiny_schema(), tiny_frames()), epsilon=2.0, delta=1e-6)
    public_fk, private_fk = "households.region->regions", "persons.hid->households"
    assert "fk-attribute" in d.method_choices(public_fk)
    assert "fk-attribute" not in d.method_choices(private_fk) and "degree" in d.method_choices(private_fk)
    before = {v.name: v for v in d.rows()}[public_fk].sigmas
    assert d.set_method(public_fk, "fk-attribute").ok
    assert {v.name: v for v in d.rows()}[public_fk].sigmas == before
