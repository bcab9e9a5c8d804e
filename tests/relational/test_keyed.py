"""fk-attribute: the FK to a public parent as a categorical attribute of the child
(relviz.relational.keyed, docs/methods/keyed.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.errors import PlanError
from relviz.plan import Plan
from relviz.relational.keyed import key_attribute_name, match_to_modelled_parents, with_key_attributes
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer

REGIONS = ("n", "e", "s", "w")


def _shop(n_child: int = 3000, n_parent: int = 24, seed: int = 0, agree: float = 0.9) -> Database:
    """Public stores (a region each, 6 per region) and private sales whose ``region_seen``
    equals their store's region with probability ``agree`` (else uniform): a child attribute
    that depends on the parent's attribute only through the FK. Row unit."""
    rng = np.random.default_rng(seed)
    stores = pd.DataFrame({"store": np.arange(n_parent),
                           "region": [REGIONS[i % 4] for i in range(n_parent)]})
    store = rng.integers(0, n_parent, n_child)
    region = stores["region"].to_numpy()[store]
    seen = np.where(rng.random(n_child) < agree, region, rng.choice(REGIONS, n_child))
    sales = pd.DataFrame({"sale": np.arange(n_child), "store": store, "region_seen": seen})
    schema = Schema(
        (Table("stores", ("store",), (Attribute.categorical("region", REGIONS),), public=True),
         Table("sales", ("sale",), (Attribute.categorical("region_seen", REGIONS),))),
        (ForeignKey("sales", ("store",), "stores"),), PrivacyUnit(None))
    return Database(schema, {"stores": stores, "sales": sales})


def _agreement(db: Database) -> float:
    j = db["sales"].merge(db["stores"], on="store")
    return float((j["region_seen"] == j["region"]).mean())


def test_matching_keeps_modelled_parents_within_their_slots() -> None:
    """Every parent gets exactly its slots; a child keeps its modelled parent while the parent
    has room, so the kept number is Σ_p min(children modelled to p, slots of p)."""
    modelled = np.array([0, 0, 0, 1, 2, 2, -1, 5])  # -1 and 5 (≥ n_p): no modelled parent
    counts = np.array([2, 1, 5])
    for seed in range(5):
        out, kept = match_to_modelled_parents(modelled, counts, np.random.default_rng(seed))
        assert np.array_equal(np.bincount(out, minlength=3), counts)
        assert kept == 2 + 1 + 2
        assert out[3] == 1 and out[4] == 2 and out[5] == 2
        assert (out[:3] == 0).sum() == 2  # one of the three children of parent 0 moved
    with pytest.raises(ValueError, match="slots"):
        match_to_modelled_parents(modelled, np.array([1, 1, 1]), np.random.default_rng(0))


def test_children_left_over_go_to_parents_alike_to_their_modelled_one() -> None:
    """Parents 0, 1 share their public attributes (group 0), 2, 3 too (group 1). Parents 0 and
    2 have one slot each for three modelled children: the two left over of each stay in their
    group (parents 1 and 3 have exactly two free slots each). Without the groups the last
    round mixes them: over 20 seeds some child modelled to 0 lands in group 1."""
    modelled = np.array([0, 0, 0, 2, 2, 2])
    counts = np.array([1, 2, 1, 2])
    groups = np.array([0, 0, 1, 1])
    mixed = 0
    for seed in range(20):
        out, kept = match_to_modelled_parents(modelled, counts, np.random.default_rng(seed), groups)
        assert kept == 2 and np.array_equal(np.bincount(out, minlength=4), counts)
        assert set(out[:3]) == {0, 1} and set(out[3:]) == {2, 3}
        plain, _ = match_to_modelled_parents(modelled, counts, np.random.default_rng(seed))
        mixed += bool(set(plain[:3]) & {2, 3})
    assert mixed > 0


def test_key_attribute_is_the_parent_row_and_the_input_is_untouched() -> None:
    db = _shop(200)
    before = db["sales"].copy()
    fk = db.schema.foreign_keys[0]
    aug, names = with_key_attributes(db, [fk])
    name = names[fk.name]
    assert name == key_attribute_name(db.schema, fk) == "store→stores"
    attr = aug.schema.table("sales").attribute(name)
    assert attr.kind == "categorical" and attr.categories == tuple(range(24))
    assert np.array_equal(aug["sales"][name].to_numpy(dtype=np.int64), db.parent_index(fk))
    assert list(db["sales"].columns) == list(before.columns)
    pd.testing.assert_frame_equal(db["sales"], before)


def test_oversized_public_parent_is_refused_before_anything_is_spent() -> None:
    db = _shop(200)
    fk = db.schema.foreign_keys[0].name
    plan = Plan.default(db.schema, 1.0, 1e-6, method="degree").with_method(fk, "fk-attribute",
                                                                           max_parents=10)
    synth = RelationalSynthesizer(plan, random_state=0)
    with pytest.raises(PlanError, match="max_parents = 10"):
        synth.fit(db)
    assert not hasattr(synth, "accountant_") or not synth.ledger_


def test_a_private_parent_falls_back_to_degree_with_the_reason() -> None:
    from tests.conftest import tiny_frames, tiny_schema

    schema = tiny_schema()
    plan = Plan.default(schema, 1.0, 1e-6, method="fk-attribute")
    private_parent = [fk for fk in schema.private_foreign_keys
                      if not schema.table(fk.parent).public]
    assert private_parent
    assert all(plan.component_of(fk.name, "edge").method == "degree" for fk in private_parent)
    assert any("needs a public parent" in line for line in plan.substitutions(schema, "fk-attribute"))
    Database(schema, tiny_frames())  # the schema is valid with its data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_child_parent_dependence_is_kept_and_degree_loses_it(seed: int) -> None:
    """Real agreement of the child's region with its store's region is 0.9 + 0.1/4 = 0.925.
    Linked at random (degree) the synthetic agreement is Σ_r P(seen=r)·P(region=r) ≈ 1/4
    (binomial SD √(0.25·0.75/3000) ≈ 0.008, so < 0.32 is ≥ 8 SD above). fk-attribute: MST's
    tree over (region_seen, store→stores) is that one edge, measured at ε = 8 with σ ≈ 2 per
    cell of a 96-cell marginal against ≈ 30 rows per cell, and ≥ 95 % of children keep their
    modelled store, so agreement ≥ 0.8 leaves 0.12 for noise and the moved children."""
    db = _shop(3000, seed=seed)
    assert abs(_agreement(db) - 0.925) < 0.03
    fk = db.schema.foreign_keys[0].name
    out = {}
    for method in ("degree", "fk-attribute"):
        plan = Plan.default(db.schema, 8.0, 1e-6, mechanism="mst", method=method)
        synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
        syn = synth.sample()
        assert syn.schema == db.schema and set(syn["sales"].columns) == set(db["sales"].columns)
        out[method] = _agreement(syn)
        if method == "fk-attribute":
            assert synth.key_attributes_ == {fk: "store→stores"}
            assert synth.links_[fk].kept_share >= 0.95
            # the table's mechanism modelled it: the drawn codes carry it, the output does not
            assert synth.model_schema_.table("sales").attribute_names == ("region_seen", "store→stores")
    assert out["degree"] < 0.32
    assert out["fk-attribute"] >= 0.8


def test_same_fk_release_as_the_degree_baseline() -> None:
    """The FK's budget buys the degree baseline's release: same label, σ and ρ."""
    db = _shop(500)
    fk = db.schema.foreign_keys[0].name
    entries = {}
    for method in ("degree", "fk-attribute"):
        plan = Plan.default(db.schema, 1.0, 1e-6, method=method)
        synth = RelationalSynthesizer(plan, random_state=0).fit(db)
        entries[method] = [(e.label, e.rho, e.sigma) for e in synth.ledger_ if e.component == fk]
        assert float(synth.accountant_.spent()) <= float(plan.rho_total) * (1 + 1e-12)
    assert entries["degree"] == entries["fk-attribute"] and len(entries["degree"]) == 1


def _persons_with_region() -> tuple[Schema, dict[str, pd.DataFrame]]:
    """tests/conftest.py's tiny database with one more FK, persons → regions (public)."""
    from tests.conftest import tiny_frames, tiny_schema

    base = tiny_schema()
    frames = tiny_frames(n_h=120)
    rng = np.random.default_rng(3)
    frames["persons"] = frames["persons"].assign(
        region=rng.choice(["N", "S", "E"], len(frames["persons"])))
    schema = base.with_foreign_key(ForeignKey("persons", ("region",), "regions"))
    return schema, frames


@pytest.mark.parametrize("method", ["privlava", "privpetal"])
def test_database_methods_model_it_for_a_child_they_generate(method: str) -> None:
    """PrivLava's child model and PrivPetal's flattened relation take the generated child's rows
    with the attribute (one more child attribute), so both accept fk-attribute on persons →
    regions; the sample has the real columns only."""
    schema, frames = _persons_with_region()
    fk = "persons.region->regions"
    plan = Plan.default(schema, 4.0, 1e-6, method=method)
    assert plan.database_method == method
    plan = plan.with_method(fk, "fk-attribute")
    assert plan.problems(schema) == []
    db = Database(schema, frames)
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    syn = synth.sample()
    assert syn.problems() == [] and set(syn["persons"].columns) == set(db["persons"].columns)
    assert 0.0 <= synth.database_.linkers[fk].kept_share <= 1.0


def test_with_public_links_changes_only_linked_fks_to_public_parents() -> None:
    schema, _ = _persons_with_region()
    plan = Plan.default(schema, 1.0, 1e-6, method="degree").with_public_links(schema, "fk-attribute")
    methods = {c.name: c.method for c in plan.edges}
    assert methods == {"households.region->regions": "fk-attribute",
                       "persons.region->regions": "fk-attribute",
                       "persons.hid->households": "degree"}
    lava = Plan.default(schema, 1.0, 1e-6, method="privlava").with_public_links(schema, "fk-attribute")
    assert {c.name: c.method for c in lava.edges}["persons.hid->households"] == "privlava"


def test_privlava_uses_it_for_its_stand_alone_tables() -> None:
    """households is a stand-alone table of PrivLava's plan (its only FK goes to a public
    parent; PrivLava §6 augments it with the latent columns), so its single-table model learns
    households → regions as an attribute."""
    schema, frames = _persons_with_region()
    db = Database(schema, frames)
    fk = "households.region->regions"
    plan = Plan.default(schema, 4.0, 1e-6, method="privlava").with_method(fk, "fk-attribute")
    assert plan.problems(schema) == []
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    syn = synth.sample()
    assert syn.problems() == []
    assert set(syn["households"].columns) == set(db["households"].columns)
    # PrivLava's default links persons → regions with parent-attributes (the region's climate)
    assert synth.key_attributes_ == {fk: "region→regions",
                                     "persons.region->regions": ("region→regions.climate",)}
    assert 0.0 <= synth.database_.linkers[fk].kept_share <= 1.0


def test_entity_unit_fits_and_samples_a_valid_database() -> None:
    """Under the entity unit (private sizes) the link still fills exactly the noisy degrees."""
    from tests.conftest import tiny_frames, tiny_schema

    db = Database(tiny_schema(), tiny_frames(n_h=300))
    plan = Plan.default(db.schema, 2.0, 1e-6, method="degree").with_method(
        "households.region->regions", "fk-attribute")
    synth = RelationalSynthesizer(plan, random_state=1).fit(db)
    syn = synth.sample()
    assert syn.problems() == []
    assert set(syn["households"].columns) == set(db["households"].columns)
    assert 0.0 <= synth.links_["households.region->regions"].kept_share <= 1.0
    assert float(synth.accountant_.spent()) <= float(plan.rho_total) * (1 + 1e-12)


def test_noise_preview_counts_the_key_attribute_like_the_fit() -> None:
    """``Plan.noise_preview`` shows the σ's the child's mechanism will use once fk-attribute has
    appended its attribute (MST: one more 1-way marginal and tree edge); every previewed σ of the
    child's table equals the ledger's σ of the release with that label."""
    db = _shop(500)
    plan = Plan.default(db.schema, 1.0, 1e-6, method="fk-attribute")
    preview = next(p.sigmas for p in plan.noise_preview(db.schema, db) if p.name == "sales")
    assert "1-way marginals (2 attributes)" in preview  # region_seen + the key attribute
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    fitted = {e.label: e.sigma for e in synth.ledger_ if e.component == "sales" and e.sigma}
    shared = set(preview) & set(fitted)
    assert shared and all(np.isclose(preview[k], fitted[k]) for k in shared), (preview, fitted)
    plain = next(p.sigmas for p in Plan.default(db.schema, 1.0, 1e-6).noise_preview(db.schema)
                 if p.name == "sales")
    assert "1-way marginals (1 attributes)" in plain
