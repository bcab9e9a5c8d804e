"""Noise primitives that spend through the accountant: Gaussian and exponential mechanisms.

Each takes the ρ it may spend (budget first), derives its noise scale from it, charges the
accountant, and only then draws noise from the caller's ``numpy.random.Generator``. Float
rounding is resolved in favour of privacy: σ is rounded *up* and the exponential mechanism's ε
*down* until the exact rational cost is within the charged ρ.

* Gaussian mechanism: ``f(D) + N(0, σ² I)`` with L2 sensitivity Δ is ρ-zCDP for
  ρ = Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6; spec/single-table-benchmark.md §1.1).
* Exponential mechanism: ``Pr[r] ∝ exp(ε·q_r/(2Δ))`` with score sensitivity Δ is ε²/8-zCDP
  (Cesar & Rogers 2021; spec/single-table-benchmark.md §1.1, [J] Lemma 6), sampled with the
  Gumbel-max trick.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from relviz.privacy.accountant import Accountant

__all__ = ["gaussian_sigma", "em_epsilon", "gaussian_mechanism", "exponential_mechanism"]


def gaussian_sigma(sensitivity: float, rho: Fraction | float) -> float:
    """Smallest float σ with Δ²/(2σ²) ≤ ρ exactly (σ = Δ/√(2ρ), rounded up).

    Args:
        sensitivity: L2 sensitivity Δ > 0.
        rho: zCDP budget ρ > 0.

    Returns:
        σ as a float; ``Fraction(Δ)**2 / (2*Fraction(σ)**2) <= Fraction(ρ)`` holds exactly.
    """
    rho = Fraction(rho)
    if rho <= 0 or not sensitivity > 0:
        raise ValueError("sensitivity and rho must be positive")
    sigma = float(sensitivity) / math.sqrt(2 * float(rho))
    d2 = Fraction(float(sensitivity)) ** 2
    while d2 / (2 * Fraction(sigma) ** 2) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def em_epsilon(rho: Fraction | float) -> float:
    """Largest float ε with ε²/8 ≤ ρ exactly (ε = √(8ρ), rounded down)."""
    rho = Fraction(rho)
    if rho <= 0:
        raise ValueError("rho must be positive")
    eps = math.sqrt(8 * float(rho))
    while Fraction(eps) ** 2 / 8 > rho:
        eps = math.nextafter(eps, 0.0)
    return eps


def gaussian_mechanism(
    values: np.ndarray,
    *,
    accountant: Accountant,
    rho: Fraction | float,
    sensitivity: float,
    rng: np.random.Generator,
    label: str,
    component: str,
    module: str = "measure",
    source: str = "",
    count: int = 1,
) -> tuple[np.ndarray, float]:
    """Release ``values + N(0, σ²)`` after charging ``rho`` to the accountant.

    Args:
        values: Exact answers (any shape), float64.
        accountant: The run's accountant.
        rho: ρ to spend on this release.
        sensitivity: L2 sensitivity of ``values`` under the privacy unit (multipliers included).
        rng: Noise source.
        label, component, module, source, count: Ledger fields.

    Returns:
        ``(noisy values, σ)``.

    Raises:
        BudgetError: if the accountant refuses (nothing is released).
    """
    sigma = gaussian_sigma(sensitivity, rho)
    accountant.charge(label, rho, component=component, module=module, mechanism="gaussian",
                      sensitivity=sensitivity, sigma=sigma, count=count, source=source)
    values = np.asarray(values, dtype=np.float64)
    return values + rng.normal(0.0, sigma, size=values.shape), sigma


def exponential_mechanism(
    scores: np.ndarray,
    *,
    accountant: Accountant,
    rho: Fraction | float,
    sensitivity: float,
    rng: np.random.Generator,
    label: str,
    component: str,
    module: str = "select",
    source: str = "",
) -> int:
    """Pick an index with probability ∝ exp(ε·score/(2Δ)), ε = √(8ρ), after charging ``rho``.

    Args:
        scores: ``(k,)`` exact scores (higher is better).
        sensitivity: Score sensitivity Δ under the privacy unit.

    Returns:
        The chosen index.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-d array")
    eps = em_epsilon(rho)
    accountant.charge(label, rho, component=component, module=module, mechanism="exponential",
                      sensitivity=sensitivity, epsilon_em=eps, source=source)
    logits = eps * (scores - scores.max()) / (2.0 * sensitivity)
    return int(np.argmax(logits + rng.gumbel(size=logits.shape)))
