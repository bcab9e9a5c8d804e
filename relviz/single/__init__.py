"""Single-table DP mechanisms behind one protocol, registered by name.

``relviz.single.get("mst", iters=2000)`` returns a configured mechanism; ``available()`` lists
the registry. A mechanism fits on a :class:`~relviz.privacy.measure.PrivateTable` (codes over
public domains, read only through logged group-by counts) with a
:class:`~relviz.privacy.budget.Budget` and the privacy unit's sensitivity multipliers, and
returns a :class:`TableModel` that samples integer codes without touching private data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.progress import Reporter
from relviz.registry import Registry
from relviz.schema import Table

__all__ = ["Mechanism", "TableModel", "get", "get_class", "available", "register"]


@runtime_checkable
class TableModel(Protocol):
    """A fitted single-table model: it samples codes from noisy summaries only."""

    total: float
    """Estimated number of rows (from noisy measurements)."""

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``(n, n_attributes)`` int64 codes."""
        ...


class Mechanism(Protocol):
    """A single-table DP synthesis mechanism."""

    name: ClassVar[str]
    label: ClassVar[str]
    gaussian_only: ClassVar[bool]

    def problems(self, table: Table) -> list[Problem]:
        """Domains this mechanism cannot handle (reported with the data problems)."""
        ...

    def fit(self, data: PrivateTable, budget: Budget, *, histogram_sensitivity: float,
            score_sensitivity: float, progress: Reporter) -> TableModel:
        """Spend ``budget`` on ``data`` and return a model."""
        ...


def _load() -> None:
    from relviz.single import independent, mst  # noqa: F401  (registration side effect)


_MECHANISMS = Registry("single-table mechanism", _load)
register: Callable[[type], type] = _MECHANISMS.register
get_class: Callable[[str], type] = _MECHANISMS.get_class
available: Callable[[], dict[str, str]] = _MECHANISMS.available


def get(name: str, **params: Any) -> Mechanism:
    """A configured mechanism instance (keyword-only hyper-parameters, range-checked)."""
    return _MECHANISMS.get(name, **params)
