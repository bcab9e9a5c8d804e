"""Noise primitives that spend through the accountant: Gaussian and exponential mechanisms.

Each takes the ρ it may spend (budget first), derives its noise scale from it, charges the
accountant, and only then draws noise, from the sampler the accountant names
(``accountant.noise``, see :mod:`relviz.privacy.noise`): numpy's floating-point draws from the
caller's ``numpy.random.Generator``, or OpenDP's exact samplers. Float rounding is resolved in
favour of privacy: σ is rounded *up* and the exponential mechanism's ε *down* until the exact
rational cost (and, with OpenDP, OpenDP's own privacy map) is within the charged ρ.

* Gaussian mechanism: ``f(D) + N(0, σ² I)`` with L2 sensitivity Δ is ρ-zCDP for
  ρ = Δ²/(2σ²) (Bun & Steinke 2016, Prop. 1.6); so is the discrete Gaussian for
  integer-valued ``f`` (Canonne, Kamath & Steinke 2020).
* Exponential mechanism: ``Pr[r] ∝ exp(ε·q_r/(2Δ))`` with score sensitivity Δ is ε²/8-zCDP
  (Cesar & Rogers 2021), sampled with the Gumbel-max trick (report-noisy-max with Gumbel noise
  of scale 2Δ/ε).
* Laplace mechanism: ``f(D) + Lap(b)`` with L1 sensitivity Δ₁ is ε-DP for ε = Δ₁/b (Dwork,
  McSherry, Nissim & Smith 2006), hence ε²/2-zCDP (Bun & Steinke 2016, Prop. 1.4): the pure-DP
  releases of PrivBayes (docs/methods/privbayes.md).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from relviz.privacy.accountant import Accountant
from relviz.privacy.noise import (
    base_em_epsilon,
    base_gaussian_sigma,
    calibrate_exponential,
    calibrate_gaussian,
    calibrate_laplace,
)

__all__ = ["gaussian_sigma", "em_epsilon", "laplace_scale", "gaussian_mechanism", "exponential_mechanism",
           "laplace_mechanism"]


def gaussian_sigma(sensitivity: float, rho: Fraction | float) -> float:
    """Smallest float σ with Δ²/(2σ²) ≤ ρ exactly (σ = Δ/√(2ρ), rounded up).

    The σ of the ``"numpy"`` sampler; OpenDP's may be a few float steps larger (see
    :func:`relviz.privacy.noise.calibrate_gaussian`).

    Args:
        sensitivity: L2 sensitivity Δ > 0.
        rho: zCDP budget ρ > 0.

    Returns:
        σ as a float; ``Fraction(Δ)**2 / (2*Fraction(σ)**2) <= Fraction(ρ)`` holds exactly.
    """
    return base_gaussian_sigma(sensitivity, rho)


def em_epsilon(rho: Fraction | float) -> float:
    """Largest float ε with ε²/8 ≤ ρ exactly (ε = √(8ρ), rounded down)."""
    return base_em_epsilon(rho)


def laplace_scale(sensitivity: float, rho: Fraction | float) -> float:
    """Laplace scale b of the ``"numpy"`` sampler for L1 sensitivity Δ₁ and budget ρ
    (ε = √(2ρ) rounded down, b = Δ₁/ε rounded up; standard deviation √2·b)."""
    return calibrate_laplace("numpy", sensitivity, rho).scale


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
    integer: bool | None = None,
) -> tuple[np.ndarray, float]:
    """Release ``values + N(0, σ²)`` after charging ``rho`` to the accountant.

    Args:
        values: Exact answers (any shape).
        accountant: The run's accountant; ``accountant.noise`` picks the sampler.
        rho: ρ to spend on this release.
        sensitivity: L2 sensitivity of ``values`` under the privacy unit (multipliers included).
        rng: Noise source of the ``"numpy"`` sampler (OpenDP draws from the OS CSPRNG).
        label, component, module, source, count: Ledger fields.
        integer: The query is integer-valued on *every* database (counts): with OpenDP the
            noise is then the discrete Gaussian and the release is integer. ``None``: an integer
            dtype of ``values`` says so. Never decided from the values themselves (that choice
            would depend on the data; see :mod:`relviz.privacy.noise`).

    Returns:
        ``(noisy values as float64, σ actually used)``.

    Raises:
        BudgetError: if the accountant refuses (nothing is released, no noise is drawn).
        ValueError: with OpenDP, if a query declared integer-valued returns non-integers, or
            values are not finite (nothing is charged).
    """
    values = np.asarray(values)
    if integer is None:
        integer = bool(np.issubdtype(values.dtype, np.integer))
    noise = calibrate_gaussian(accountant.noise, sensitivity, rho, integer=integer, size=values.size)
    if noise.noise == "opendp":  # check the answers before anything is charged
        noise.check(values)
    accountant.charge(label, rho, component=component, module=module, mechanism="gaussian",
                      sensitivity=sensitivity, sigma=noise.sigma, count=count, source=source,
                      sampler=noise.kind)
    return noise.sample(values, rng), noise.sigma


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
        accountant: The run's accountant; ``accountant.noise`` picks the sampler.
        sensitivity: Score sensitivity Δ under the privacy unit.
        rng: Noise source of the ``"numpy"`` sampler (Gumbel-max); OpenDP's report-noisy-max
            draws its Gumbel noise from the OS CSPRNG.

    Returns:
        The chosen index.

    Raises:
        BudgetError: if the accountant refuses (nothing is released, no noise is drawn).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0:
        raise ValueError("scores must be a non-empty 1-d array")
    noise = calibrate_exponential(accountant.noise, sensitivity, rho)
    if noise.noise == "opendp" and not np.all(np.isfinite(scores)):
        raise ValueError("the exact exponential mechanism needs finite scores")
    accountant.charge(label, rho, component=component, module=module, mechanism="exponential",
                      sensitivity=sensitivity, epsilon_em=noise.epsilon, source=source,
                      sampler=noise.kind)
    return noise.sample(scores, rng)


def laplace_mechanism(
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
    integer: bool | None = None,
) -> tuple[np.ndarray, float]:
    """Release ``values + Lap(b)`` (ε = Δ₁/b pure DP, charged ρ = ε²/2) after charging ``rho``.

    The ledger records the L1 sensitivity and, in ``sigma``, the noise's standard deviation
    √2·b (so ε = √2·Δ₁/σ).

    Args:
        values: Exact answers (any shape).
        accountant: The run's accountant; ``accountant.noise`` picks the sampler (OpenDP: the
            discrete Laplace for integer-valued queries).
        rho: ρ to spend on this release.
        sensitivity: L1 sensitivity Δ₁ of ``values`` under the privacy unit.
        rng: Noise source of the ``"numpy"`` sampler.
        label, component, module, source, count: Ledger fields.
        integer: The query is integer-valued on every database (see :func:`gaussian_mechanism`).

    Returns:
        ``(noisy values as float64, Laplace scale b actually used)``.

    Raises:
        BudgetError: if the accountant refuses (nothing is released, no noise is drawn).
    """
    values = np.asarray(values)
    if integer is None:
        integer = bool(np.issubdtype(values.dtype, np.integer))
    noise = calibrate_laplace(accountant.noise, sensitivity, rho, integer=integer, size=values.size)
    if noise.noise == "opendp":
        noise.check(values)
    accountant.charge(label, rho, component=component, module=module, mechanism="laplace",
                      sensitivity=sensitivity, sigma=noise.std, count=count, source=source,
                      sampler=noise.kind)
    return noise.sample(values, rng), noise.scale
