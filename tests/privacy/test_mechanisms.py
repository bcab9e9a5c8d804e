"""Gaussian and exponential mechanisms: they charge first, and their noise matches their cost."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relviz.errors import BudgetError
from relviz.privacy.accountant import Accountant
from relviz.privacy.mechanisms import (
    em_epsilon,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
)


@pytest.mark.parametrize("delta_sens,rho", [(1.0, 0.01), (np.sqrt(2), Fraction(1, 3)), (7.5, 1e-4)])
def test_sigma_is_rounded_towards_privacy(delta_sens: float, rho) -> None:
    s = gaussian_sigma(delta_sens, rho)
    assert Fraction(delta_sens) ** 2 / (2 * Fraction(s) ** 2) <= Fraction(rho)
    assert s == pytest.approx(delta_sens / np.sqrt(2 * float(rho)), rel=1e-15)
    e = em_epsilon(rho)
    assert Fraction(e) ** 2 / 8 <= Fraction(rho)


def test_gaussian_empirical_variance_matches_sensitivity_and_rho() -> None:
    acc = Accountant(1.0, delta=1e-6)
    n = 200_000
    noisy, sigma = gaussian_mechanism(np.zeros(n), accountant=acc, rho=Fraction(1, 50), sensitivity=3.0,
                                      rng=np.random.default_rng(7), label="v", component="c")
    expected = 3.0**2 / (2 * (1 / 50))  # σ² = Δ²/(2ρ) = 225
    assert sigma**2 == pytest.approx(expected, rel=1e-12)
    # sample variance of n normals has relative s.d. sqrt(2/(n−1)) ≈ 0.32 %; allow 5 s.d.
    assert noisy.var(ddof=1) == pytest.approx(expected, rel=5 * np.sqrt(2 / (n - 1)))
    assert abs(noisy.mean()) < 5 * sigma / np.sqrt(n)
    entry = acc.ledger[0]
    assert entry.rho == Fraction(1, 50) and entry.sigma == sigma and entry.sensitivity == 3.0


def test_nothing_released_on_overspend() -> None:
    acc = Accountant(0.01, delta=1e-6)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(BudgetError):
        gaussian_mechanism(np.zeros(3), accountant=acc, rho=0.02, sensitivity=1, rng=rng,
                           label="too much", component="c")
    assert rng.bit_generator.state == state  # no noise was drawn
    assert acc.ledger == ()


def test_exponential_mechanism_frequencies() -> None:
    scores = np.array([0.0, 1.0, 2.0, 4.0])
    rho = Fraction(1, 8)  # ε = 1
    acc = Accountant(10_000.0, delta=1e-6)
    rng = np.random.default_rng(3)
    n = 20_000
    picks = np.array([exponential_mechanism(scores, accountant=acc, rho=rho, sensitivity=1.0, rng=rng,
                                            label="em", component="c") for _ in range(n)])
    eps = em_epsilon(rho)
    p = np.exp(eps * scores / 2)
    p /= p.sum()
    freq = np.bincount(picks, minlength=4) / n
    # binomial s.d. per cell; 5 s.d. tolerance
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n))
    assert acc.spent() == n * rho
