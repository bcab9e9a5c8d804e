"""Plans: exact shares, locks, rebalance, conversion choice, validation, what the shares buy."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.errors import PlanError
from relviz.plan import MEAN_ABS_NORMAL, Plan
from relviz.privacy.accountant import gdp_mu, zcdp_rho
from relviz.privacy.measure import CURATOR_VIEW
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from tests.conftest import tiny_frames, tiny_schema


def test_default_split_and_exact_sum() -> None:
    p = Plan.default(tiny_schema(), 1.0, 1e-6)
    assert p.total_share() == 1
    assert p.component("households").share == p.component("persons").share == Fraction(1, 3)
    assert p.component("persons.hid->households").share == Fraction(1, 6)  # two private FKs share 1/3
    assert sum(p.budgets().values(), Fraction(0)) == Fraction(p.rho_total)


def test_shares_locks_and_rebalance_stay_exact() -> None:
    p = Plan.default(tiny_schema(), 1.0, 1e-6)
    p = p.with_share("households", 0.3, lock=True)
    assert p.component("households").share == Fraction(3, 10) and p.component("households").locked
    assert p.total_share() == 1
    p = p.with_share("persons", 0.123456789)
    assert p.total_share() == 1 and p.component("households").share == Fraction(3, 10)
    p = p.rebalance()
    # three unlocked components share the 7/10 left by the lock
    assert p.component("persons").share == p.component("persons.hid->households").share == Fraction(7, 30)
    with pytest.raises(PlanError):
        p.with_share("persons", 0.7)  # 0.3 locked: 0.7 leaves nothing for the other unlocked ones
    with pytest.raises(PlanError):
        p.with_share("persons", 0.0)
    assert p.total_share() == 1


def test_conversion_auto() -> None:
    s = tiny_schema()
    gauss = Plan.default(s, 1.0, 1e-5, mechanism="independent")
    assert gauss.resolved_conversion() == "gdp"
    assert gauss.rho_total == pytest.approx(gdp_mu(1.0, 1e-5) ** 2 / 2)
    mst = Plan.default(s, 1.0, 1e-5)
    assert mst.resolved_conversion() == "zcdp" and mst.rho_total == pytest.approx(zcdp_rho(1.0, 1e-5))
    direct = Plan.default(s, 1.0, 1e-5).with_budget(rho=0.5)
    assert direct.rho_total == 0.5 and direct.epsilon_effective > 1


def test_problems_all_at_once() -> None:
    s = tiny_schema()
    p = Plan.default(s, 1.0, 1e-6)
    comps = [c for c in p.components if c.name != "persons"]
    bad = Plan(1.0, 1e-6, tuple(comps) + (p.component("persons").__class__(
        "regions", "table", "mst", Fraction(1, 3)),))
    kinds = {q.kind for q in bad.problems(s)}
    assert {"missing_component", "public_spends"} <= kinds
    unknown = p.with_method("persons", "no-such-mechanism")
    assert any(q.kind == "unknown_mechanism" for q in unknown.problems(s))
    big = s.with_table(s.table("persons").__class__(
        "persons", ("pid",), (Attribute.categorical("c", list(range(20000))),)))
    assert any(q.kind == "oversized_domain" for q in Plan.default(big, 1.0, 1e-6).problems(big))
    with pytest.raises(PlanError):
        Plan(0.0, 1e-6, ())


def test_json_roundtrip(tmp_path) -> None:
    p = Plan.default(tiny_schema(), 2.0, 1e-7).with_share("persons", 0.5, lock=True)
    assert Plan.from_json(p.to_json()) == p
    p.to_json(tmp_path / "plan.json")
    assert Plan.from_json(tmp_path / "plan.json") == p


def test_gdp_with_non_gaussian_method_is_a_plan_problem(tiny_db) -> None:
    from relviz import RelationalSynthesizer

    s = tiny_schema()
    mst = Plan.default(s, 1.0, 1e-6, conversion="gdp")  # mst uses the exponential mechanism
    bad = [q for q in mst.problems(s) if q.kind == "bad_conversion"]
    assert {q.table for q in bad} == {"households", "persons"}  # the degree FK is Gaussian
    assert all("'mst'" in q.message and "gdp" in q.message for q in bad)
    with pytest.raises(PlanError):
        mst.validate(s)
    synth = RelationalSynthesizer(mst, random_state=0)
    with pytest.raises(PlanError, match="bad_conversion") as e:  # refused before anything is read
        synth.fit(tiny_db)
    assert "gdp" in str(e.value) and not hasattr(synth, "accountant_")
    gauss = Plan.default(s, 1.0, 1e-6, mechanism="independent", conversion="gdp")
    assert not [q for q in gauss.problems(s) if q.kind == "bad_conversion"]
    assert not [q for q in replace(mst, conversion="zcdp").problems(s) if q.kind == "bad_conversion"]


# -- what the shares buy: noise_scales and Plan.noise_preview ------------------------------------

def _tiny_ready() -> Database:
    rng = np.random.default_rng(3)
    people = pd.DataFrame({"pid": np.arange(60), "a": rng.integers(0, 3, 60), "b": rng.integers(0, 2, 60),
                           "c": rng.integers(0, 4, 60)})
    orders = pd.DataFrame({"oid": np.arange(150), "pid": rng.integers(0, 60, 150),
                           "x": rng.integers(0, 3, 150)})
    s = Schema((Table("people", ("pid",), (Attribute.categorical("a", [0, 1, 2]),
                                          Attribute.categorical("b", [0, 1]),
                                          Attribute.categorical("c", [0, 1, 2, 3]))),
                Table("orders", ("oid",), (Attribute.categorical("x", [0, 1, 2]),))),
               (ForeignKey("orders", "pid", "people"),),
               PrivacyUnit(entity="people", caps={"orders.pid->people": 6}))
    return Database(s, {"people": people, "orders": orders})


@pytest.mark.parametrize("mechanism", ["mst", "independent"])
def test_noise_scales_match_the_ledger(mechanism: str) -> None:
    from relviz import RelationalSynthesizer
    from relviz.privacy.sensitivity import multipliers
    from relviz.relational import get as get_linker
    from relviz.single import get as get_mechanism

    db = _tiny_ready()
    plan = Plan.default(db.schema, 1.0, 1e-6, mechanism=mechanism)
    if mechanism == "mst":
        plan = plan.with_params("people", iters=100).with_params("orders", iters=100)
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    mult = multipliers(db.schema)
    ledger = [e for e in synth.accountant_.ledger if getattr(e, "sigma", None)]
    for t in ("people", "orders"):
        scales = get_mechanism(mechanism).noise_scales(
            db.schema.table(t), plan.rho_of(t), histogram_sensitivity=mult.table_histogram(t),
            score_sensitivity=mult.table_score(t))
        recorded = [e.sigma for e in ledger if e.component == t]
        assert list(scales.values()) == recorded, (t, scales, recorded)
    fk = db.schema.foreign_key("orders.pid->people")
    scales = get_linker("degree").noise_scales(db.schema, fk, plan.rho_of(fk.name), multipliers=mult)
    assert list(scales.values()) == [e.sigma for e in ledger if e.component == fk.name]


def test_noise_preview_of_the_tiny_database() -> None:
    """σ from each method's noise_scales; the error relative to the public or read row counts."""
    from relviz.privacy.mechanisms import gaussian_sigma
    from relviz.privacy.sensitivity import multipliers

    s = tiny_schema()
    db = Database(s, tiny_frames())
    plan = Plan.default(s, 1.0, 1e-6, mechanism="independent")
    mult = multipliers(s)
    rows = {r.name: r for r in plan.noise_preview(s, db)}
    assert list(rows) == [c.name for c in plan.components]
    persons = rows["persons"]
    rho = plan.rho_of("persons")
    assert persons.rho == rho and persons.share == plan.component("persons").share
    assert persons.sigma == gaussian_sigma(mult.table_histogram("persons") * math.sqrt(2), rho)
    n = len(db["persons"])
    assert persons.n == n and f"{n:,} rows of persons" in persons.n_label and CURATOR_VIEW in persons.n_label
    assert persons.error == pytest.approx(persons.sigma * MEAN_ABS_NORMAL)
    assert persons.relative_error == pytest.approx(persons.error / n)
    hid = rows["persons.hid->households"]  # a private parent: the degree histogram's parents
    assert hid.sigma is not None and hid.n == len(db["households"]) and "parents" in hid.n_label
    region = rows["households.region->regions"]  # a public parent: children per parent
    assert region.n == pytest.approx(len(db["households"]) / len(db["regions"]))
    # public counts are not labelled as read from the data; without sizes there is no error
    public = {r.name: r for r in plan.noise_preview(s, row_counts={"persons": 10})}
    assert public["persons"].n == 10 and CURATOR_VIEW not in public["persons"].n_label
    assert public["households"].n is None and public["households"].relative_error is None
    assert public["households"].sigma == rows["households"].sigma
    # bi-adjacency knows no σ before the run: a note instead
    bi = plan.with_method("persons.hid->households", "biadjacency")
    note = {r.name: r for r in bi.noise_preview(s)}["persons.hid->households"]
    assert note.sigmas == {} and note.sigma is None and "does not report its noise scale" in note.note
    # at a tiny ε the shares are flagged
    small = {r.name: r for r in plan.with_budget(epsilon=0.01).noise_preview(s, db)}
    assert "share too small" in small["persons"].warning



# -- presets (issue 11 item 4) ----------------------------------------------------------------

def test_presets_are_named_and_described() -> None:
    from relviz.plan import PRESETS

    assert {"default", "baseline-80-20", "denorm"} <= set(PRESETS)
    assert all(isinstance(v, str) and v for v in PRESETS.values())
    with pytest.raises(PlanError, match="baseline-80-20"):
        Plan.preset(tiny_schema(), "no-such-preset")


def test_baseline_80_20_preset_splits_80_to_tables_and_20_to_fks() -> None:
    s = tiny_schema()
    p = Plan.preset(s, "baseline-80-20", 1.6, 1e-6)
    assert p.epsilon == 1.6 and p.delta == 1e-6 and not p.problems(s)
    # two private tables share 4/5 equally; the two private FKs 1/5 equally, degree baseline
    assert {c.name: c.share for c in p.tables} == {"households": Fraction(2, 5),
                                                   "persons": Fraction(2, 5)}
    assert {c.name: (c.method, c.share) for c in p.edges} == {
        "households.region->regions": ("degree", Fraction(1, 10)),
        "persons.hid->households": ("degree", Fraction(1, 10))}
    assert p.total_share() == 1
    assert p == Plan.default(s, 1.6, 1e-6, relational_share=Fraction(1, 5))


def test_denorm_preset_gives_80_to_the_join_and_20_to_group_sizes() -> None:
    s = tiny_schema()
    p = Plan.preset(s, "denorm", 0.4, 1e-6)
    assert p.database_method == "denorm" and not p.problems(s)
    # the join persons ⋈ households is the table component "persons"; households has none
    assert [(c.name, c.kind, c.method, c.share) for c in p.components] == [
        ("persons", "table", "mst", Fraction(4, 5)),
        ("households.region->regions", "edge", "denorm", Fraction(1, 10)),
        ("persons.hid->households", "edge", "denorm", Fraction(1, 10))]
    assert Plan.preset(s, "default", 1.0) == Plan.default(s, 1.0)


def test_substitution_summary_puts_fks_linked_for_one_reason_on_one_line() -> None:
    """What ``relviz synth --method privpetal`` prints: one line per (linker, reason)."""
    from relviz import datasets

    schema = datasets.load("nycflights13").schema
    plan = Plan.default(schema, 1.0, 1e-6, method="privpetal")
    lines = plan.substitutions(schema, "privpetal")
    summary = plan.substitution_summary(schema, "privpetal")
    assert len(lines) >= 3 and len(summary) < len(lines)
    for line in lines:  # every linked FK is named on exactly one summary line, with its reason
        fk, rest = line.split(": ", 1)
        why = rest.split(" (", 1)[1][:-1]
        hits = [s for s in summary if fk in s.replace(",", " ").replace(":", " ").split()]
        assert len(hits) == 1 and why in hits[0], (fk, summary)
