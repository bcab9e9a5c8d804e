"""Plans: exact shares, locks, rebalance, conversion choice, validation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relviz.errors import PlanError
from relviz.plan import Plan
from relviz.privacy.accountant import gdp_mu, zcdp_rho
from relviz.schema import Attribute
from tests.conftest import tiny_schema


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
    with pytest.raises(Exception, match="bad_conversion") as e:  # refused before anything is read
        synth.fit(tiny_db)
    assert "gdp" in str(e.value) and not hasattr(synth, "accountant_")
    gauss = Plan.default(s, 1.0, 1e-6, mechanism="independent", conversion="gdp")
    assert not [q for q in gauss.problems(s) if q.kind == "bad_conversion"]
    assert not [q for q in mst.with_conversion("zcdp").problems(s) if q.kind == "bad_conversion"]
