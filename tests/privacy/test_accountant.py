"""The zCDP accountant and its exact conversions (golden values from the specs)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from relviz.errors import BudgetError
from relviz.privacy.accountant import (
    Accountant,
    epsilon_from_rho,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    rho_closed_form,
    zcdp_delta,
    zcdp_epsilon,
    zcdp_rho,
)

# Canonne-Kamath-Steinke conversion (Private-PGM's cdp_rho), δ = 1e-5, rounded to 6 decimals
ZCDP_GOLDEN = {0.1: 0.000433, 0.2: 0.001559, 0.5: 0.008506, 1: 0.030557, 2: 0.108256,
               5: 0.550973, 10: 1.782696}
# γ_max of the exact Gaussian-DP curve (Dong, Roth & Su; PrivLava Thm 6.2 with e^{+ε}), 6 decimals
GDP_GOLDEN = [(1.0, 1e-5, 0.268051), (3.2, 1e-5, 0.761132), (0.2, 1 / 1690642, 0.051113),
              (0.4, 1 / 1690642, 0.097986), (0.8, 1 / 1690642, 0.187510), (1.6, 1 / 1690642, 0.356932),
              (3.2, 1 / 1690642, 0.672098), (1.6, 1 / 4297133, 0.343134), (3.2, 1 / 4297133, 0.648589)]


@pytest.mark.parametrize("eps,rho", sorted(ZCDP_GOLDEN.items()))
def test_zcdp_golden_values(eps: float, rho: float) -> None:
    assert zcdp_rho(eps, 1e-5) == pytest.approx(rho, abs=5e-7)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1, 2, 5, 8])
def test_zcdp_roundtrip(eps: float) -> None:
    rho = zcdp_rho(eps, 1e-5)
    assert zcdp_delta(rho, eps) <= 1e-5
    assert zcdp_epsilon(rho, 1e-5) == pytest.approx(eps, rel=1e-9)
    # the conversion is tight: a slightly larger ρ violates δ
    assert zcdp_delta(rho * (1 + 1e-6), eps) > 1e-5


@pytest.mark.parametrize("eps,delta,mu", GDP_GOLDEN)
def test_gdp_golden_values(eps: float, delta: float, mu: float) -> None:
    m = gdp_mu(eps, delta)
    assert m == pytest.approx(mu, abs=5e-7)
    assert gdp_delta(eps, m) <= delta
    assert gdp_epsilon(m, delta) == pytest.approx(eps, rel=1e-8)


def test_gdp_buys_more_than_zcdp_for_gaussian_plans() -> None:
    # the Gaussian-DP conversion buys ~17 % more: ρ ≈ 0.0359 vs ≈ 0.0306 at ε = 1, δ = 1e-5
    assert gdp_mu(1.0, 1e-5) ** 2 / 2 == pytest.approx(0.0359, abs=1e-4)
    assert zcdp_rho(1.0, 1e-5) == pytest.approx(0.0306, abs=1e-4)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1, 2, 5, 8])
def test_closed_form(eps: float) -> None:
    rho = rho_closed_form(eps, 1e-5)
    assert rho + 2 * math.sqrt(rho * math.log(1e5)) == pytest.approx(eps, abs=1e-12)
    assert rho_closed_form(2.0, 1e-5) == pytest.approx(0.0800454, abs=1e-7)
    assert epsilon_from_rho(rho, 1e-5, "closed_form") == pytest.approx(eps, abs=1e-12)


def test_exact_sums_never_drift() -> None:
    acc = Accountant(0.1, delta=1e-6)
    for _ in range(10):
        acc.charge("x", Fraction(acc.rho_total) / 10, component="t", module="m", mechanism="gaussian",
                   sensitivity=1.0, sigma=1.0)
    assert acc.spent() == acc.rho_total  # exactly, despite 0.1 not being representable
    with pytest.raises(BudgetError):
        acc.charge("one more", Fraction(1, 10**30), component="t", module="m", mechanism="gaussian",
                   sensitivity=1.0)
    assert len(acc.ledger) == 10  # nothing recorded by the refused charge


def test_component_caps_and_gdp_restriction() -> None:
    acc = Accountant(1.0, delta=1e-6, budgets={"a": Fraction(1, 4), "b": Fraction(3, 4)})
    acc.charge("ok", Fraction(1, 4), component="a", module="m", mechanism="gaussian", sensitivity=1)
    with pytest.raises(BudgetError, match="component 'a'"):
        acc.charge("over", Fraction(1, 100), component="a", module="m", mechanism="gaussian",
                   sensitivity=1)
    assert acc.remaining("b") == Fraction(3, 4)
    gdp = Accountant.from_epsilon_delta(1.0, 1e-5, conversion="gdp")
    with pytest.raises(BudgetError, match="Gaussian"):
        gdp.charge("em", Fraction(1, 1000), component="a", module="select", mechanism="exponential",
                   sensitivity=1)
    with pytest.raises(BudgetError):
        Accountant(1.0, delta=1e-6, budgets={"a": 0.6, "b": 0.6})


def test_ledger_export_and_listeners(tmp_path) -> None:
    seen = []
    acc = Accountant.from_epsilon_delta(1.0, 1e-6)
    acc.on_charge(seen.append)
    acc.charge("m", acc.rho_total / 2, component="t", module="measure", mechanism="gaussian",
               sensitivity=2.0, sigma=3.0, source="test")
    d = acc.to_dict()
    assert d["entries"][0]["sigma"] == 3.0 and d["entries"][0]["epsilon_equivalent"] > 0
    assert d["rho_spent_exact"] == f"{(acc.rho_total / 2).numerator}/{(acc.rho_total / 2).denominator}"
    acc.to_json(tmp_path / "ledger.json")
    assert (tmp_path / "ledger.json").read_text().startswith("{")
    assert len(seen) == 1 and acc.epsilon_spent() < 1.0
