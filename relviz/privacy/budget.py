"""The slice of a run's budget that one plan component (a table or an FK) may spend.

A :class:`Budget` binds the accountant, the component's name and planned ρ, and a random
generator; mechanisms split ``budget.rho`` exactly (``Fraction`` arithmetic) among their steps
and release through :meth:`Budget.gaussian` / :meth:`Budget.exponential`. :func:`to_fraction`
turns a share typed by a user (a plan's shares, a method's ``init_share``) into that exact
fraction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from relviz.privacy.accountant import Accountant
from relviz.privacy.mechanisms import exponential_mechanism, gaussian_mechanism, laplace_mechanism

__all__ = ["Budget", "to_fraction"]


def to_fraction(x: float | int | str | Fraction) -> Fraction:
    """An exact fraction from user input (``0.3`` → 3/10, not the binary float)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError("a share must be finite")
        return Fraction(repr(x)).limit_denominator(10**12)
    return Fraction(x)


@dataclass
class Budget:
    """ρ a component may spend, and the means to spend it.

    Attributes:
        accountant: The run's accountant (it enforces the component cap too).
        component: Plan component name (table or FK).
        rho: Planned ρ of the component (exact).
        rng: Noise source for this component.
    """

    accountant: Accountant
    component: str
    rho: Fraction
    rng: np.random.Generator

    def gaussian(self, values: np.ndarray, *, rho: Fraction, sensitivity: float, label: str,
                 module: str = "measure", source: str = "", count: int = 1,
                 integer: bool | None = None) -> tuple[np.ndarray, float]:
        """Gaussian release charged to this component (see ``gaussian_mechanism``).

        ``integer=True`` declares the query integer-valued (counts), whatever the data: the
        exact sampler then adds discrete Gaussian noise (a property of the query, never of the
        values, so the output type cannot reveal the database).
        """
        return gaussian_mechanism(values, accountant=self.accountant, rho=rho,
                                  sensitivity=sensitivity, rng=self.rng, label=label,
                                  component=self.component, module=module, source=source,
                                  count=count, integer=integer)

    def exponential(self, scores: np.ndarray, *, rho: Fraction, sensitivity: float, label: str,
                    module: str = "select", source: str = "") -> int:
        """Exponential-mechanism choice charged to this component."""
        return exponential_mechanism(scores, accountant=self.accountant, rho=rho,
                                     sensitivity=sensitivity, rng=self.rng, label=label,
                                     component=self.component, module=module, source=source)

    def laplace(self, values: np.ndarray, *, rho: Fraction, sensitivity: float, label: str,
                module: str = "measure", source: str = "", count: int = 1,
                integer: bool | None = None) -> tuple[np.ndarray, float]:
        """Laplace release (pure ε-DP, ε = √(2ρ); L1 ``sensitivity``) charged to this component;
        returns ``(noisy values, scale b)`` (see ``laplace_mechanism``)."""
        return laplace_mechanism(values, accountant=self.accountant, rho=rho, sensitivity=sensitivity,
                                 rng=self.rng, label=label, component=self.component, module=module,
                                 source=source, count=count, integer=integer)

    @property
    def remaining(self) -> Fraction:
        return self.accountant.remaining(self.component) if self.component in \
            self.accountant.budgets else self.rho - self.accountant.spent(self.component)
