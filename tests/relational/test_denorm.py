"""The Denorm baseline (issue 11 item 4; relviz/relational/denorm.py, docs/methods/denorm.md)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from relviz import datasets
from relviz.database import Database
from relviz.errors import CancelledError, PlanError
from relviz.plan import Plan
from relviz.privacy.sensitivity import multipliers
from relviz.progress import CancelToken, Reporter, silent
from relviz.relational import available_databases, get_database
from relviz.relational.degree import DegreeLink
from relviz.relational.denorm import FittedDenorm, Join, _FittedJoin, joined_multipliers, joined_table, joins
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import tiny_frames, tiny_schema

FAST = {"iters": 100}  # MST's mirror descent: enough for these checks, a fraction of the time


def _fast(plan: Plan) -> Plan:
    for c in plan.tables:
        if c.method == "mst":
            plan = plan.with_params(c.name, **FAST)
    return plan


def _census(n: int = 300, seed: int = 0) -> Database:
    return datasets.load("census", n_households=n, seed=seed)


SMALL_CENSUS = {"households": ("OWNERSHP", "ROOMS", "FARM"),
                "persons": ("RELATE", "SEX", "AGE", "MARST")}


def _small_census(n: int = 300, seed: int = 0) -> Database:
    """The census stand-in on 3 household and 4 person attributes (MST fits in seconds)."""
    from dataclasses import replace

    db = _census(n, seed)
    schema, frames = db.schema, {}
    for name, keep in SMALL_CENSUS.items():
        t = schema.table(name)
        schema = schema.with_table(replace(t, attributes=tuple(a for a in t.attributes
                                                               if a.name in keep)))
        drop = [a.name for a in t.attributes if a.name not in keep]
        frames[name] = db[name].drop(columns=drop)
    return Database(schema, frames)


def _groups(db: Database, fk_name: str) -> tuple[np.ndarray, int]:
    fk = db.schema.foreign_key(fk_name)
    idx = db.parent_index(fk)
    return np.bincount(idx[idx >= 0], minlength=len(db[fk.parent])), int((idx < 0).sum())


# ------------------------------------------------------------------------------------------------
# plan and structure
# ------------------------------------------------------------------------------------------------

def test_registered_and_components_give_80_to_the_join() -> None:
    assert "denorm" in available_databases()
    tpch = datasets.load("tpch", sf=0.01, seed=0).schema
    plan = Plan.default(tpch, 1.0, 1e-6, method="denorm")
    assert plan.database_method == "denorm" and not plan.problems(tpch)
    # one join (lineitem ⋈ orders) gets 4/5; the three private FKs share 1/5
    assert {c.name: c.share for c in plan.tables} == {"lineitem": Fraction(4, 5)}
    assert {c.name: c.share for c in plan.edges} == {
        "lineitem.l_orderkey->orders": Fraction(1, 15), "orders.o_custkey->customer": Fraction(1, 15),
        "lineitem.l_partkey+l_suppkey->partsupp": Fraction(1, 15)}
    assert [j.fk.name for j in joins(tpch)] == ["lineitem.l_orderkey->orders"]
    linked = plan.with_method("orders.o_custkey->customer", "degree")  # denorm takes no linker
    assert [p.message for p in linked.problems(tpch) if p.kind == "mixed_methods"] == [
        "denorm models every FK to a private parent; this FK names 'degree' (use denorm here: it "
        "takes no linker)"]
    census = _census().schema
    assert [(c.name, c.kind, c.share) for c in Plan.default(census, method="denorm").components] == [
        ("persons", "table", Fraction(4, 5)), ("persons.household_id->households", "edge", Fraction(1, 5))]


def test_unsupported_schemas_are_refused_with_every_reason() -> None:
    from tests.privacy.neighbours import household_schema, parent_child_schema

    chain = household_schema()  # regions → households → persons → trips: persons in two joins
    problems = Plan.default(chain, method="denorm").problems(chain)
    assert any(p.kind == "unsupported_schema" and p.table == "persons" for p in problems)
    nullable = parent_child_schema(nullable=True)
    problems = Plan.default(nullable, method="denorm").problems(nullable)
    assert any(p.kind == "unsupported_fk" and "nullable" in p.message for p in problems)
    # the parent of a join must not have its own component, the child must
    s = tiny_schema()
    plan = Plan.default(s, method="denorm")
    extra = Plan(1.0, 1e-6, plan.components + (plan.component("persons").__class__(
        "households", "table", "mst", Fraction(1, 10)),)).with_share("persons", Fraction(7, 10))
    assert any(p.kind == "extra_component" for p in extra.problems(s))
    with pytest.raises(ValueError):
        get_database("denorm", histogram_share=1.5)


def test_joined_table_sensitivities_per_unit() -> None:
    """Entity unit: r(C) (census τ·1 = 10); row unit √2·2τ / 2·2τ; tuple unit √2·τ / 2·τ."""
    census = _census().schema
    j = joins(census)[0]
    assert joined_multipliers(multipliers(census), j) == (10.0, 10.0)
    assert [a.name for a in joined_table(census, j).attributes][:2] == ["households.FARM",
                                                                         "households.OWNERSHP"]
    parents = Table("parents", ("id",), (Attribute.categorical("a", ["a0", "a1"]),))
    children = Table("children", ("cid",), (Attribute.categorical("c", ["c0", "c1"]),))
    fk = ForeignKey("children", ("pid",), "parents", ("id",))
    for neighbour, d in (("row", 6), ("tuple", 3)):
        s = Schema((parents, children), (fk,), PrivacyUnit(None, {fk.name: 3}, neighbour=neighbour))
        assert joined_multipliers(multipliers(s), Join(fk)) == pytest.approx((math.sqrt(2) * d, 2.0 * d))


# ------------------------------------------------------------------------------------------------
# normalisation (the paper's algorithm, on a known joint sample)
# ------------------------------------------------------------------------------------------------

class _RowIds:
    """A stand-in joint model: parent attribute codes drawn at random, the child attribute is the
    row's own id (so every normalised child can be traced back to its joined row)."""

    total = 0.0

    def __init__(self, n_parent_codes: int) -> None:
        self.k = n_parent_codes
        self.rows: np.ndarray | None = None

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        self.rows = np.stack([rng.integers(0, 2, n), rng.integers(0, self.k, n), np.arange(n)], axis=1)
        return self.rows


def test_normalise_sorts_cuts_and_copies_one_members_parent_attributes() -> None:
    hh = Table("hh", ("hid",), (Attribute.categorical("a", ["x", "y"]),
                                Attribute.categorical("b", [str(i) for i in range(5)])))
    pp = Table("pp", ("pid",), (Attribute.categorical("id", [str(i) for i in range(10_000)]),))
    fk = ForeignKey("pp", ("hid",), "hh")
    schema = Schema((hh, pp), (fk,), PrivacyUnit("hh", {fk.name: 4}))
    model = _RowIds(5)
    sizes = DegreeLink(False, np.array([0.1, 0.3, 0.3, 0.2, 0.1]), 0.0, 4)
    fitted = FittedDenorm(schema, [_FittedJoin(Join(fk), model, sizes, 500.0, None)], {}, {})
    out, links = fitted.sample({}, scale=1.0, seed=3, progress=lambda c: silent())
    parent, child, idx = out["hh"], out["pp"], links[fk.name]
    rows = model.rows
    assert parent.n_rows == 500 and child.n_rows == len(idx) and (idx >= 0).all()
    deg = np.bincount(idx, minlength=parent.n_rows)
    assert deg.max() <= 4 and (deg == 0).any()  # group sizes follow H* (0 … τ)
    assert abs(np.mean(deg) - 1.9) < 0.1  # mean of H*: 0.3 + 0.6 + 0.6 + 0.4
    # the sorted order of the joined rows (parent attributes first, then the child's)
    grouped = rows[: child.n_rows]
    order = np.lexsort(grouped.T[::-1])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    member_rows = child.codes[:, 0]  # the joined row each child came from
    for p in np.flatnonzero(deg):
        members = member_rows[idx == p]
        r = np.sort(rank[members])
        assert (np.diff(r) == 1).all(), "a group is a consecutive run of the sorted rows"
        # the parent's attributes are those of one member: the same for every member of the group
        assert any((rows[m, :2] == parent.codes[p]).all() for m in members)
    # childless parents take the parent part of extra joined rows
    assert len(rows) == child.n_rows + int((deg == 0).sum())


# ------------------------------------------------------------------------------------------------
# end to end: structure, sizes, privacy bookkeeping
# ------------------------------------------------------------------------------------------------

def test_census_structure_sizes_noisy_and_ledger_exact() -> None:
    real = _small_census(300)
    plan = _fast(Plan.default(real.schema, 1.0, 1e-6, method="denorm"))
    synth = RelationalSynthesizer(plan, random_state=0).fit(real)
    syn = synth.sample()
    assert not syn.problems()  # referential integrity (sample() validates too)
    fk = "persons.household_id->households"
    deg, null = _groups(syn, fk)
    assert null == 0 and deg.max() <= 10  # τ = 10
    # sizes come from the noisy group-size histogram, never the true counts
    assert syn.row_counts()["households"] != 300
    assert synth.database_.totals["households"] != 300
    # the ledger spends exactly the plan's ρ; every release is labelled and paid by a component
    assert synth.accountant_.spent() == Fraction(plan.rho_total)
    names = {c.name for c in plan.components}
    assert all(e.label and e.component in names for e in synth.ledger_)
    per = {}
    for e in synth.ledger_:
        per[e.component] = per.get(e.component, Fraction(0)) + e.rho
    assert per == plan.budgets()
    # the σ previewed before any data are read are the ledger's
    preview = {p.name: p.sigmas for p in plan.noise_preview(real.schema)}
    for e in synth.ledger_:
        if e.sigma is not None:
            assert preview[e.component][e.label] == pytest.approx(e.sigma, rel=1e-12)
    assert synth.sample(scale=2.0).row_counts()["households"] == pytest.approx(
        2 * syn.row_counts()["households"], abs=2)


def test_tpch_joins_lineitem_with_orders_and_links_public_parents() -> None:
    real = datasets.load("tpch", sf=0.01, seed=0)
    # the independent mechanism keeps this end-to-end check fast (MST is covered on census)
    plan = Plan.default(real.schema, 1.0, 1e-6, method="denorm", mechanism="independent")
    synth = RelationalSynthesizer(plan, random_state=1).fit(real)
    syn = synth.sample()
    assert not syn.problems()
    deg, _ = _groups(syn, "lineitem.l_orderkey->orders")
    assert deg.max() <= 7
    for t in ("customer", "partsupp", "part"):  # public tables are copied verbatim
        assert syn[t].equals(real[t])
    assert synth.accountant_.spent() == Fraction(plan.rho_total)
    assert {e.component for e in synth.ledger_} == {c.name for c in plan.components}


def test_row_unit_uses_the_public_sizes() -> None:
    from tests.privacy.neighbours import parent_child_schema

    schema = parent_child_schema(nullable=False, tau=3)
    rng = np.random.default_rng(0)
    n_p = 200
    deg = rng.integers(0, 4, n_p)
    parents = {"id": np.arange(1, n_p + 1), "a": rng.choice(["a0", "a1"], n_p),
               "b": rng.choice(["b0", "b1", "b2"], n_p)}
    pid = np.repeat(parents["id"], deg)
    children = {"cid": np.arange(1, len(pid) + 1), "pid": pid,
                "c": rng.choice(["c0", "c1"], len(pid)), "e": rng.choice(["e0", "e1"], len(pid))}
    import pandas as pd

    real = Database(schema, {"parents": pd.DataFrame(parents), "children": pd.DataFrame(children)})
    plan = _fast(Plan.default(schema, 1.0, 1e-6, method="denorm"))
    syn = RelationalSynthesizer(plan, random_state=0).fit_sample(real)
    assert syn.row_counts() == real.row_counts()  # table sizes are public under the row unit
    assert _groups(syn, "children.pid->parents")[0].max() <= 3


def test_cancel_through_the_reporter() -> None:
    real = Database(tiny_schema(), tiny_frames(n_h=60))
    plan = _fast(Plan.default(real.schema, 1.0, 1e-6, method="denorm"))
    synth = RelationalSynthesizer(plan, random_state=0)

    def progress(event) -> None:  # noqa: ANN001
        if event.stage == "fit" and event.component == "persons.hid->households":
            synth.cancel()

    synth.progress = progress
    with pytest.raises(CancelledError):
        synth.fit(real)
    # the ledger is true: what was released before the cancellation, nothing after it (the
    # public-parent FK comes last)
    assert "households.region->regions" not in {e.component for e in synth.ledger_}
    assert synth.accountant_.spent() <= Fraction(plan.rho_total)
    synth.progress = None
    assert not synth.fit(real).sample().problems()
    rep = Reporter(None, CancelToken(), "sample", "x", lambda: 0.0)
    rep(0.5)  # a fresh reporter does not raise


def test_plan_problems_and_bad_parameters_reported() -> None:
    s = tiny_schema()
    bad = Plan.default(s, method="denorm").with_params("households.region->regions", bins="nope")
    assert any(p.kind == "bad_parameter" for p in bad.problems(s))
    with pytest.raises(PlanError):
        RelationalSynthesizer(bad).fit(Database(s, tiny_frames()))


# ------------------------------------------------------------------------------------------------
# statistical: within-household correlation at ε = 10⁶
# ------------------------------------------------------------------------------------------------

def _cross_tvd(real: Database, syn: Database) -> float:
    """Mean total-variation distance between the real and synthetic (household attribute, person
    attribute) distributions over the FK, over every pair of SMALL_CENSUS attributes."""
    from relviz.encoding import encode_table

    out = []
    codes = {}
    for db in (real, syn):
        fk = db.schema.foreign_key("persons.household_id->households")
        idx = db.parent_index(fk)
        h = encode_table(db.schema.table("households"), db["households"])
        p = encode_table(db.schema.table("persons"), db["persons"])
        codes[id(db)] = (h, p, idx)
    for ha in SMALL_CENSUS["households"]:
        for pa in SMALL_CENSUS["persons"]:
            dists = []
            for db in (real, syn):
                h, p, idx = codes[id(db)]
                x, y = h.column(ha)[idx], p.column(pa)
                ny = p.sizes[p.attributes.index(pa)]
                dists.append(np.bincount(x * ny + y, minlength=h.sizes[h.attributes.index(ha)] * ny)
                             / len(x))
            out.append(0.5 * np.abs(dists[0] - dists[1]).sum())
    return float(np.mean(out))


@pytest.mark.slow
def test_household_person_correlation_beats_the_degree_baseline() -> None:
    """At ε = 10⁶ the noise is negligible and what is left is each method's model. The degree
    baseline links persons to households at random, so a person's attributes carry no trace of
    their household's (its cross-table distributions are the product of the marginals); Denorm
    synthesises persons ⋈ households jointly and keeps that correlation. MST runs with its
    default 1,000 iterations: with 100 the mirror descent has not converged and even Denorm's
    1-way marginals are off (OWNERSHP = N/A at 6 % instead of 0.4 %), which hides the effect; so
    this test is marked slow. Requiring Denorm below the baseline on every seed: the baseline's
    error is structural (random links give the product of the marginals) while Denorm's is
    sampling error of a 7-attribute model on ≈ 900 persons.

    (The census workload's c = 2 error is *not* asserted: on this stand-in Denorm's households
    follow the size-biased distribution of the join and lose the size–attribute correlation, and
    its c = 2 error is measured worse than the baseline's; see docs/methods/denorm.md §4.)"""
    real = _small_census(300, seed=0)
    for seed in range(3):
        err = {}
        for preset in ("baseline-80-20", "denorm"):
            plan = Plan.preset(real.schema, preset, 1e6, 1e-6)
            syn = RelationalSynthesizer(plan, random_state=seed).fit(real).sample()
            err[preset] = _cross_tvd(real, syn)
        assert err["denorm"] < err["baseline-80-20"], (seed, err)
