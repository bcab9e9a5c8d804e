"""Independent marginals: the sanity floor (docs/methods/independent.md).

Measure every 1-way marginal with the Gaussian mechanism (the concatenated vector has L2
sensitivity √d per row, times the privacy unit's multiplier), project each onto non-negative
counts, and sample every attribute independently. Written with numpy: it needs no graphical
model, and a PGM fit of 1-way cliques would only add a JIT compilation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.registry import register

__all__ = ["Independent", "IndependentModel"]


@dataclass(frozen=True)
class IndependentModel:
    """Product of noisy 1-way marginals.

    Attributes:
        probabilities: One probability vector per attribute.
        total: Estimated row count (the mean of the noisy marginal sums).
        total_variance: Variance of ``total``: ``σ²·Σ_j cells_j / d²`` for ``d`` marginal sums.
    """

    probabilities: tuple[np.ndarray, ...]
    total: float
    total_variance: float = math.inf

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        cols = [rng.choice(len(p), size=n, p=p) for p in self.probabilities]
        return np.stack(cols, axis=1).astype(np.int64) if cols else np.zeros((n, 0), np.int64)


@register
@dataclass(frozen=True)
class Independent:
    """Independent 1-way marginals (Gaussian), sampled as a product distribution.

    Args:
        max_domain: Largest attribute domain accepted (codes).
    """

    name: ClassVar[str] = "independent"
    label: ClassVar[str] = "Independent marginals (baseline)"
    gaussian_only: ClassVar[bool] = True
    max_domain: int = 1_000_000

    def problems(self, table: Table) -> list[Problem]:
        return [Problem("oversized_domain", f"{a.size:,} codes exceed this mechanism's limit "
                        f"{self.max_domain:,}", table.name, a.name)
                for a in table.attributes if a.size > self.max_domain]

    def noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float = 2.0) -> dict[str, float]:
        """σ of every Gaussian release :meth:`fit` makes on ``table`` with budget ``rho``.

        Public computation (reads no data): the same sensitivities and ρ split as ``fit``, so the
        values equal the ``sigma`` of the ledger entries a fit records.

        Args:
            table: The table (its attributes fix ``d``).
            rho: The table's ρ (exact ``Fraction`` as in ``Plan.rho_of``; floats are converted).
            histogram_sensitivity: The unit's histogram multiplier for the table.
            score_sensitivity: Unused (no selection step); accepted for a uniform signature.

        Returns:
            ``{release label: σ}``; σ is per cell (count) of the released vector.
        """
        rho = Fraction(rho)
        d = len(table.attributes)
        if d == 0:
            return {"row count": gaussian_sigma(histogram_sensitivity, rho)}
        return {f"1-way marginals ({d} attributes)":
                gaussian_sigma(histogram_sensitivity * math.sqrt(d), rho)}

    def fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
            score_sensitivity: float, progress: Reporter) -> IndependentModel:
        d = len(data.attributes)
        progress(0.0, "measuring 1-way marginals")
        if d == 0:
            noisy, sigma = budget.gaussian(np.array([data.total()], float), rho=budget.rho,
                                       sensitivity=histogram_sensitivity, label="row count",
                                       source="Gaussian mechanism (Bun & Steinke 2016)", integer=True)
            return IndependentModel((), max(1.0, float(noisy[0])), float(sigma) ** 2)
        exact = [data.marginal((a,)) for a in data.attributes]
        noisy, sigma = budget.gaussian(
            np.concatenate(exact), rho=budget.rho, sensitivity=histogram_sensitivity * math.sqrt(d),
            label=f"1-way marginals ({d} attributes)",
            source="independent baseline: Gaussian 1-way marginals (docs/methods/independent.md)", integer=True)
        splits = np.cumsum([len(x) for x in exact])[:-1]
        probs, totals = [], []
        for y in np.split(noisy, splits):
            totals.append(y.sum())
            p = np.clip(y, 0, None)
            probs.append(p / p.sum() if p.sum() > 0 else np.full(len(p), 1 / len(p)))
        progress(1.0, "done")
        variance = float(sigma) ** 2 * sum(len(x) for x in exact) / d**2
        return IndependentModel(tuple(probs), max(1.0, float(np.mean(totals))), variance)
