"""Single-table DP mechanisms behind one protocol, registered by name.

``relviz.single.get("mst", iters=2000)`` returns a configured mechanism; ``available()`` lists
the registry. A mechanism fits on a :class:`~relviz.privacy.measure.PrivateTable` (codes over
public domains, read only through logged group-by counts) with a
:class:`~relviz.privacy.budget.Budget` and the privacy unit's sensitivity multipliers, and
returns a :class:`TableModel` that samples integer codes without touching private data. Its
``noise_scales`` says, before any data are read, the σ of every Gaussian release a fit would make
(the budget panel's preview, ``Plan.noise_preview``).

Mechanisms register themselves in :mod:`relviz.single.registry`; the lookups here import the
built-in ones first.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.progress import Reporter
from relviz.schema import Table
from relviz.single.registry import MECHANISMS, register

__all__ = ["Mechanism", "TableModel", "get", "get_class", "available", "register"]


@runtime_checkable
class TableModel(Protocol):
    """A fitted single-table model: it samples codes from noisy summaries only."""

    total: float
    """Estimated number of rows (from noisy measurements)."""

    total_variance: float
    """Variance of ``total`` (``math.inf`` when unknown): how much the size reconciliation
    (``relviz.privacy.postprocessing.reconcile_sizes``) trusts ``total`` against the other
    released facts about the table's size."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, n_attributes)`` int64 codes."""
        ...


class Mechanism(Protocol):
    """A single-table DP synthesis mechanism."""

    name: ClassVar[str]
    label: ClassVar[str]
    gaussian_only: ClassVar[bool]

    def problems(self, table: Table) -> list[Problem]:
        """Domains this mechanism cannot handle (reported with the plan's problems)."""
        ...

    def noise_scales(self, table: Table, rho: Fraction | float, *, histogram_sensitivity: float,
                     score_sensitivity: float) -> dict[str, float]:
        """``{release label: σ}`` of the Gaussian releases ``fit`` would make on ``table`` with
        budget ``rho`` (public: reads no data; empty when no σ is known before the run)."""
        ...

    def fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
            score_sensitivity: float, progress: Reporter) -> TableModel:
        """Spend ``budget`` on ``data`` and return a model."""
        ...


def _load() -> None:
    # registration side effect; MST first: it is the default and the first listed
    from relviz.single import independent, mst  # noqa: F401, I001
    from relviz.single import aim, privbayes, privsyn  # noqa: F401


def get_class(name: str) -> type:
    """The registered mechanism class. Raises KeyError naming the available ones."""
    _load()
    return MECHANISMS.get_class(name)


def available() -> dict[str, str]:
    """``{name: label}`` of the registered mechanisms."""
    _load()
    return MECHANISMS.available()


def get(name: str, **params: Any) -> Mechanism:
    """A configured mechanism instance (keyword-only hyper-parameters, range-checked)."""
    return get_class(name)(**params)
