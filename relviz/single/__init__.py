"""Single-table DP mechanisms behind one protocol, registered by name.

``relviz.single.get("mst", iters=2000)`` returns a configured mechanism; ``available()`` lists
the registry. A mechanism fits on a :class:`~relviz.privacy.measure.PrivateTable` (codes over
public domains, read only through logged group-by counts) with a
:class:`~relviz.privacy.budget.Budget` and the privacy unit's sensitivity multipliers, and
returns a :class:`TableModel` that samples integer codes without touching private data.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateTable
from relviz.progress import Reporter
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


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator adding a mechanism to the registry under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def get_class(name: str) -> type:
    _load()
    if name not in _REGISTRY:
        raise KeyError(f"unknown single-table mechanism {name!r}; available: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def get(name: str, **params: Any) -> Mechanism:
    """A configured mechanism instance (keyword-only hyper-parameters, range-checked)."""
    return get_class(name)(**params)


def available() -> dict[str, str]:
    """``{name: label}`` of the registered mechanisms."""
    _load()
    return {k: v.label for k, v in _REGISTRY.items()}


def _load() -> None:
    from relviz.single import independent, mst  # noqa: F401  (registration side effect)
