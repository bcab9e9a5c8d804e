"""parent-attributes: a large public parent's public attributes copied into the child
(relviz.relational.parent_attributes, docs/methods/keyed.md §6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.encoding import encode_table
from relviz.errors import PlanError
from relviz.plan import Plan
from relviz.relational.parent_attributes import (
    association_order,
    is_copied_attribute,
    match_by_attributes,
    parent_attribute_sources,
    with_parent_attributes,
)
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer

MAKERS = ("a", "b", "c")
FK = "sales.product->products"


def _catalogue(n_child: int = 3000, n_products: int = 300, seed: int = 0, agree: float = 0.9,
               nullable: bool = False) -> Database:
    """Public brands (a maker each) and products (a size, a brand); private sales whose
    ``maker_seen`` is their product's brand's maker with probability ``agree`` (else uniform):
    a child attribute that depends on an attribute one FK above the parent. 300 products: too
    many for a row-id attribute to be measured per product at these sizes. Row unit. With
    ``nullable``, one sale in ten has no product (and a uniform ``maker_seen``)."""
    rng = np.random.default_rng(seed)
    brands = pd.DataFrame({"brand": np.arange(6), "maker": [MAKERS[i % 3] for i in range(6)]})
    products = pd.DataFrame({"product": np.arange(n_products),
                             "brand_id": rng.integers(0, 6, n_products),
                             "size": rng.integers(1, 5, n_products)})
    product = rng.integers(0, n_products, n_child)
    maker = brands["maker"].to_numpy()[products["brand_id"].to_numpy()[product]]
    seen = np.where(rng.random(n_child) < agree, maker, rng.choice(MAKERS, n_child))
    sales = pd.DataFrame({"sale": np.arange(n_child), "product": product.astype(float),
                          "maker_seen": seen})
    if nullable:
        none = rng.random(n_child) < 0.1
        sales.loc[none, "product"] = np.nan
        sales.loc[none, "maker_seen"] = rng.choice(MAKERS, int(none.sum()))
    schema = Schema(
        (Table("brands", ("brand",), (Attribute.categorical("maker", MAKERS),), public=True),
         Table("products", ("product",), (Attribute.numeric("size", 1, 4, bins=4, integer=True),),
               public=True),
         Table("sales", ("sale",), (Attribute.categorical("maker_seen", MAKERS),))),
        (ForeignKey("products", ("brand_id",), "brands", ("brand",)),
         ForeignKey("sales", ("product",), "products", nullable=nullable)),
        PrivacyUnit(None))
    return Database(schema, {"brands": brands, "products": products, "sales": sales})


def _agreement(db: Database) -> float:
    j = db["sales"].dropna(subset=["product"]).merge(db["products"], on="product") \
        .merge(db["brands"], left_on="brand_id", right_on="brand")
    return float((j["maker_seen"] == j["maker"]).mean())


def test_sources_default_to_every_attribute_one_hop_up_fewest_values_first() -> None:
    db = _catalogue(100)
    fk = db.schema.foreign_key(FK)
    srcs = parent_attribute_sources(db.schema, fk)
    assert [(s.name, s.source, len(s.path)) for s in srcs] == [
        ("product→brands.maker", "brands.maker", 1),  # 3 values
        ("product→products.size", "products.size", 0)]  # 4 values
    assert [s.source for s in parent_attribute_sources(db.schema, fk, hops=0)] == ["products.size"]
    named = parent_attribute_sources(db.schema, fk, ["size", "brands.maker"])
    assert [s.source for s in named] == ["products.size", "brands.maker"]  # the order given
    # PrivLava's split_copied_above recognises these names, not fk-attribute's row attribute
    from relviz.relational.keyed import key_attribute_name

    assert all(is_copied_attribute(s.name) for s in srcs)
    assert not is_copied_attribute(key_attribute_name(db.schema, fk))
    assert not any(is_copied_attribute(a) for a in db.schema.columns("sales"))


def test_every_bad_attribute_is_reported_at_once() -> None:
    db = _catalogue(100)
    fk = db.schema.foreign_key(FK)
    with pytest.raises(PlanError) as err:
        parent_attribute_sources(db.schema, fk, ["colour", "brands.maker", "maker", "sales.x"])
    text = str(err.value)
    assert "'colour' is not an attribute" in text and "'maker' is named twice" in text
    assert "'sales.x' is not an attribute" in text and "known: products.size, brands.maker" in text
    assert len(err.value.problems) == 3
    plan = Plan.default(db.schema, 1.0, 1e-6).with_method(FK, "parent-attributes")
    assert plan.problems(db.schema) == []
    bad = plan.with_params(FK, attributes=("colour",))
    assert any("'colour' is not an attribute" in str(p) for p in bad.problems(db.schema))


def test_a_private_parent_is_refused() -> None:
    from tests.conftest import tiny_schema

    schema = tiny_schema()
    fk = schema.foreign_key("persons.hid->households")
    with pytest.raises(PlanError, match="needs a public parent"):
        parent_attribute_sources(schema, fk)
    plan = Plan.default(schema, 1.0, 1e-6).with_method(fk.name, "parent-attributes")
    assert plan.problems(schema), "a private parent must be a plan problem"


@pytest.mark.parametrize("nullable", [False, True])
def test_copied_values_are_the_ancestors_and_the_input_is_untouched(nullable: bool) -> None:
    db = _catalogue(500, nullable=nullable)
    before = {n: db[n].copy() for n in db.schema.table_names}
    fk = db.schema.foreign_key(FK)
    srcs = parent_attribute_sources(db.schema, fk)
    aug, classes = with_parent_attributes(db, {FK: srcs})
    for n, df in before.items():
        pd.testing.assert_frame_equal(db[n], df)
    assert db.schema.table("sales").attribute_names == ("maker_seen",)
    sales = aug["sales"]
    truth = db["sales"].merge(db["products"], on="product", how="left") \
        .merge(db["brands"], left_on="brand_id", right_on="brand", how="left")
    got_maker = sales["product→brands.maker"].astype(object).where(sales["product"].notna())
    assert got_maker.fillna("∅").tolist() == truth["maker"].fillna("∅").tolist()
    assert sales["product→products.size"].fillna(-1).astype(int).tolist() == \
        truth["size"].fillna(-1).astype(int).tolist()
    attrs = aug.schema.table("sales").attributes
    assert [a.name for a in attrs] == ["maker_seen", "product→brands.maker", "product→products.size"]
    assert attrs[1].categories == MAKERS and attrs[1].nullable == nullable
    assert aug.problems() == []
    # the parent rows' codes: one row per product, the codes the child's encoding gives
    enc = encode_table(aug.schema.table("sales"), sales)
    par = classes[FK].codes
    assert par.shape == (300, 2)
    linked = sales["product"].notna().to_numpy()
    rows = sales["product"].to_numpy()[linked].astype(int)
    assert np.array_equal(enc.codes[linked, 1:], par[rows])
    if nullable:  # a null FK: the null code of every copied attribute
        assert np.array_equal(enc.codes[~linked, 1:], np.tile(np.array([3, 4]), ((~linked).sum(), 1)))


def test_the_out_of_core_source_gets_the_same_codes(tmp_path: Path) -> None:
    from relviz.source import EncodedDatabase

    db = _catalogue(400, nullable=True)
    folder = tmp_path / "parquet"
    folder.mkdir()
    for name, df in db.tables.items():
        df.to_parquet(folder / f"{name}.parquet", index=False)
    src = EncodedDatabase.from_parquet_dir(folder, db.schema)
    srcs = parent_attribute_sources(db.schema, db.schema.foreign_key(FK))
    aug_mem, cls_mem = with_parent_attributes(db, {FK: srcs})
    aug_src, cls_src = with_parent_attributes(src, {FK: srcs})
    assert aug_src.schema == aug_mem.schema
    assert np.array_equal(cls_src[FK].codes, cls_mem[FK].codes)
    mem = encode_table(aug_mem.schema.table("sales"), aug_mem["sales"]).codes
    assert np.array_equal(aug_src.encoded("sales").codes.astype(np.int64), mem.astype(np.int64))


def test_matching_fills_every_slot_and_prefers_the_longest_matching_prefix() -> None:
    """Parents (x, y): 0 = (0, 0), 1 = (0, 1), 2 = (1, 0); children A = D = (0, 0), B = C =
    (0, 1). Slots (1, 2, 1): one of A, D and both B, C match exactly; the other of A, D finds
    the x = 0 parents full and takes parent 2 in the last round. Slots (1, 1, 2): one of A, D
    and one of B, C match exactly, the other two take parent 2's two slots. Every parent gets
    exactly its slots."""
    child = np.array([[0, 0], [0, 1], [0, 1], [0, 0]])
    parent = np.array([[0, 0], [0, 1], [1, 0]])
    for seed in range(10):
        rng = np.random.default_rng(seed)
        out, exact = match_by_attributes(child, parent, (2, 2), np.array([1, 2, 1]), rng)
        assert np.array_equal(np.bincount(out, minlength=3), [1, 2, 1])
        assert exact == 3 and set(out[[1, 2]]) == {1} and sorted(out[[0, 3]]) == [0, 2]
        out, exact = match_by_attributes(child, parent, (2, 2), np.array([1, 1, 2]), rng)
        assert np.array_equal(np.bincount(out, minlength=3), [1, 1, 2])
        assert exact == 2 and sorted(out[[0, 3]]) == [0, 2] and sorted(out[[1, 2]]) == [1, 2]
    # a prefix match: the child (1, 1) has no exact parent, (1, 0) shares its first attribute
    out, exact = match_by_attributes(np.array([[1, 1], [0, 0]]), parent, (2, 2),
                                     np.array([1, 0, 1]), np.random.default_rng(0))
    assert out.tolist() == [2, 0] and exact == 1
    with pytest.raises(ValueError, match="slots"):
        match_by_attributes(child, parent, (2, 2), np.array([1, 1, 1]), np.random.default_rng(0))


def test_association_order_puts_what_the_children_depend_on_first() -> None:
    """Three copied attributes over 20,000 children: a 150-value one drawn independently of the
    child's own attribute, a 3-value one equal to it with probability 0.5, and a 25-value one
    that is a copy of it (MI = ln 3 ≈ 1.10). The independent one's plug-in MI has bias
    (149·2)/(2n) ≈ 0.0075 nats, which the correction removes: its score is within ±0.005 (the
    estimator's SD is about √(2·(r−1)(c−1))/(2n) ≈ 0.0006), below the dependent ones'."""
    rng = np.random.default_rng(0)
    n = 20_000
    own = rng.integers(0, 3, n)
    noise = rng.integers(0, 150, n)
    half = np.where(rng.random(n) < 0.5, own, rng.integers(0, 3, n))
    copy = own * 8 + rng.integers(0, 8, n)  # 24 of 25 codes, a function of own plus noise
    codes = np.stack([noise, half, copy], axis=1)
    order, scores = association_order(codes, (150, 3, 25), own[:, None], (3,))
    assert order.tolist() == [2, 1, 0]
    assert abs(scores[0]) < 0.005 and scores[1] > 0.1 and abs(scores[2] - np.log(3)) < 0.01


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_association_one_hop_above_the_parent_is_kept(seed: int) -> None:
    """Real agreement of ``maker_seen`` with the maker of the product's brand is
    0.9 + 0.1/3 ≈ 0.933. Linked at random (degree) it is Σ_m P(seen=m)·P(maker=m) ≈ 1/3
    (binomial SD √(1/3·2/3/3000) ≈ 0.009, so < 0.40 is 7 SD above). parent-attributes: MST's
    tree holds the edge (maker_seen, product→brands.maker), measured at ε = 8 with σ ≈ 2 per
    cell against ≈ 330 rows per cell, and a child goes to a product with its copied maker
    whenever one has room (each maker has about a third of the products and of the slots), so
    ≥ 0.8 leaves 0.13 for noise and the children that find no such product."""
    db = _catalogue(3000, seed=seed)
    assert abs(_agreement(db) - 0.933) < 0.03
    out = {}
    for method in ("degree", "parent-attributes"):
        plan = Plan.default(db.schema, 8.0, 1e-6, mechanism="mst", method=method)
        synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
        syn = synth.sample()
        assert syn.problems() == [] and set(syn["sales"].columns) == set(db["sales"].columns)
        out[method] = _agreement(syn)
        if method == "parent-attributes":
            assert synth.key_attributes_ == {FK: ("product→brands.maker", "product→products.size")}
            assert synth.model_schema_.table("sales").attribute_names == (
                "maker_seen", "product→brands.maker", "product→products.size")
            link = synth.links_[FK]
            assert link.matched_share >= 0.5
            assert link.matched_order[0] == "product→brands.maker"  # what maker_seen depends on
            assert link.association["product→brands.maker"] > 0.3 > link.association["product→products.size"]
            assert link.matched_prefix[0] >= link.matched_prefix[1] == pytest.approx(link.matched_share)
    assert out["degree"] < 0.40
    assert out["parent-attributes"] >= 0.8


def test_same_fk_release_as_the_degree_baseline() -> None:
    """The FK's budget buys the degree baseline's release: same label, σ and ρ; the copied
    attributes are measured by the child's mechanism (the table's budget)."""
    db = _catalogue(500)
    entries = {}
    for method in ("degree", "parent-attributes"):
        plan = Plan.default(db.schema, 1.0, 1e-6, method=method)
        synth = RelationalSynthesizer(plan, random_state=0).fit(db)
        entries[method] = [(e.label, e.rho, e.sigma) for e in synth.ledger_ if e.component == FK]
        assert float(synth.accountant_.spent()) <= float(plan.rho_total) * (1 + 1e-12)
    assert entries["degree"] == entries["parent-attributes"] and len(entries["degree"]) == 1


def test_nullable_fk_keeps_its_null_share() -> None:
    db = _catalogue(2000, nullable=True)
    plan = Plan.default(db.schema, 8.0, 1e-6, method="parent-attributes")
    syn = RelationalSynthesizer(plan, random_state=0).fit(db).sample()
    assert syn.problems() == []
    share = float(syn["sales"]["product"].isna().mean())
    assert abs(share - 0.1) < 0.03  # binomial SD √(0.09/2000) ≈ 0.007, plus σ ≈ 2 of 200 nulls


def test_noise_preview_counts_the_copied_attributes_like_the_fit() -> None:
    db = _catalogue(500)
    plan = Plan.default(db.schema, 1.0, 1e-6, method="parent-attributes")
    preview = next(p.sigmas for p in plan.noise_preview(db.schema, db) if p.name == "sales")
    assert "1-way marginals (3 attributes)" in preview
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    fitted = {e.label: e.sigma for e in synth.ledger_ if e.component == "sales" and e.sigma}
    shared = set(preview) & set(fitted)
    assert shared and all(np.isclose(preview[k], fitted[k]) for k in shared), (preview, fitted)


@pytest.mark.parametrize("method", ["privlava", "privpetal"])
def test_database_methods_model_the_copied_attributes_of_a_child_they_generate(method: str) -> None:
    """PrivLava's child model and PrivPetal's flattened relation take persons' rows with the
    copied attributes (their mixed mode, as for fk-attribute): the plan has no problem, the fit
    links every person and the sample has the real columns only."""
    from tests.conftest import tiny_frames, tiny_schema

    base = tiny_schema()
    frames = tiny_frames(n_h=150)
    rng = np.random.default_rng(3)
    frames["persons"] = frames["persons"].assign(region=rng.choice(["N", "S", "E"], len(frames["persons"])))
    schema = base.with_foreign_key(ForeignKey("persons", ("region",), "regions"))
    fk = "persons.region->regions"
    plan = Plan.default(schema, 4.0, 1e-6, method=method).with_method(fk, "parent-attributes")
    if method == "privpetal":
        plan = plan.with_params("persons.hid->households", **PETAL_SMALL)
    assert plan.problems(schema) == []
    db = Database(schema, frames)
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    syn = synth.sample()
    assert syn.problems() == [] and set(syn["persons"].columns) == set(db["persons"].columns)
    assert 0.0 <= synth.database_.linkers[fk].matched_share <= 1.0


PETAL_SMALL = dict(k=20, fit_iters=80, refit_iters=20, t1_picks=2, t1_iters=2, n_mrf=4)


def _shop(seed: int, n_customers: int = 1000, n_products: int = 300, agree: float = 0.9) -> Database:
    """customers (entity) ← sales (≤ 3 each) → products (public, a category each, no cap): a
    sale's ``kind`` is its product's category with probability ``agree`` (else uniform), a child
    attribute PrivPetal generates that depends on a public parent's attribute."""
    rng = np.random.default_rng(seed)
    products = pd.DataFrame({"product": np.arange(n_products),
                             "category": rng.choice(MAKERS, n_products)})
    size = rng.integers(1, 4, n_customers)
    customer = np.repeat(np.arange(n_customers), size)
    product = rng.integers(0, n_products, len(customer))
    category = products["category"].to_numpy()[product]
    kind = np.where(rng.random(len(customer)) < agree, category, rng.choice(MAKERS, len(customer)))
    schema = Schema(
        (Table("customers", ("customer",), (Attribute.categorical("tier", ["x", "y"]),)),
         Table("products", ("product",), (Attribute.categorical("category", MAKERS),), public=True),
         Table("sales", ("sale",), (Attribute.categorical("kind", MAKERS),))),
        (ForeignKey("sales", ("customer",), "customers"), ForeignKey("sales", ("product",), "products")),
        PrivacyUnit("customers", {"sales.customer->customers": 3}), name="shop")
    return Database(schema, {
        "customers": pd.DataFrame({"customer": np.arange(n_customers),
                                   "tier": rng.choice(["x", "y"], n_customers)}),
        "products": products,
        "sales": pd.DataFrame({"sale": np.arange(len(customer)), "customer": customer,
                               "product": product, "kind": kind})})


def _kind_agreement(db: Database) -> float:
    cat = db["sales"].merge(db["products"], on="product")
    return float((cat["kind"] == cat["category"]).mean())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_privpetal_models_a_copied_attribute_of_a_child_it_generates(seed: int) -> None:
    """parent-attributes on an FK from a child PrivPetal generates to a public parent
    (``Plan.with_method``; the default links it with the degree method, docs/methods/privpetal.md
    §5.5): the flattened relation carries the sale's copied product category beside its own
    ``kind``, and the link gives each sale a product of that category. Real agreement 0.9 +
    0.1/3 ≈ 0.933. Linked at random (the degree link) it is about 1/3 (about 2,000 sales:
    binomial SD ≈ 0.011, so < 0.45 is 10 SD above). parent-attributes at ε = 20: each of
    PrivPetal's released marginals of (kind, category) has hundreds of sales per cell against a
    σ of a few, and every category has about 100 products without a cap, so ≥ 0.8 leaves 0.13
    for the model's error (PrivPetal's default parameters: 0.91–0.93 on seeds 0–2; with the
    few-iteration ones of the other tests, 0.78)."""
    db = _shop(seed)
    assert abs(_kind_agreement(db) - 0.933) < 0.03
    fk = "sales.product->products"
    plan = Plan.default(db.schema, 20.0, 1e-6, method="privpetal")
    assert {c.name: c.method for c in plan.edges}[fk] == "degree"  # a child PrivPetal generates
    out = {}
    for link in ("parent-attributes", "degree"):
        p = plan.with_method(fk, link)
        assert p.problems(db.schema) == []
        synth = RelationalSynthesizer(p, random_state=seed).fit(db)
        syn = synth.sample()
        assert syn.problems() == [] and set(syn["sales"].columns) == set(db["sales"].columns)
        out[link] = _kind_agreement(syn)
    assert out["degree"] < 0.45 and out["parent-attributes"] >= 0.8, out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_privpetal_default_links_a_stand_alone_child_through_its_parents_attributes(seed: int) -> None:
    """Sales is in no FK PrivPetal models (its only FK goes to a public parent without a cap), so
    it is a stand-alone table of the plan and its FK gets parent-attributes (the product's size
    and its brand's maker, copied into the table's mechanism); the fit is the MST plan of
    :func:`test_an_association_one_hop_above_the_parent_is_kept` on 1,000 sales (≥ 0.8 as there:
    about 110 sales per cell of the measured 3 × 3 marginal against σ ≈ 3; binomial SD of the
    agreement ≈ 0.015)."""
    db = _catalogue(1000, seed=seed)
    plan = Plan.default(db.schema, 8.0, 1e-6, method="privpetal")
    assert {(c.name, c.kind, c.method) for c in plan.components} == {
        (FK, "edge", "parent-attributes"), ("sales", "table", "mst")}
    assert plan.problems(db.schema) == []
    synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
    assert synth.key_attributes_ == {FK: ("product→brands.maker", "product→products.size")}
    assert _agreement(synth.sample()) >= 0.8
