"""Relational methods: per foreign key, how the FK column of synthetic child rows is drawn.

A :class:`Linker` fits on a :class:`~relviz.privacy.measure.PrivateForeignKey` with a
:class:`~relviz.privacy.budget.Budget` and the privacy unit's multipliers, and returns a
:class:`FittedLink` that, given the synthetic child rows and the (synthetic or public) parent
rows as codes, returns the parent row of every child (``-1`` for a null FK). Registered by name:
``relviz.relational.get("degree")``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.schema import ForeignKey, Schema

__all__ = ["Linker", "FittedLink", "get", "get_class", "available", "register"]


class FittedLink(Protocol):
    """A fitted relational model for one FK."""

    def link(self, child: EncodedTable, parent: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> np.ndarray:
        """Parent row position of every synthetic child row, ``(child.n_rows,)`` int64; ``-1``
        means a null FK."""
        ...


class Linker(Protocol):
    """A relational method that links two independently synthesised tables along one FK."""

    name: ClassVar[str]
    label: ClassVar[str]
    gaussian_only: ClassVar[bool]

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        ...

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter) -> FittedLink:
        ...


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    _REGISTRY[cls.name] = cls
    return cls


def get_class(name: str) -> type:
    _load()
    if name not in _REGISTRY:
        raise KeyError(f"unknown relational method {name!r}; available: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def get(name: str, **params: Any) -> Linker:
    return get_class(name)(**params)


def available() -> dict[str, str]:
    _load()
    return {k: v.label for k, v in _REGISTRY.items()}


def _load() -> None:
    from relviz.relational import degree  # noqa: F401
    try:
        from relviz.relational.biadjacency import linker  # noqa: F401
    except ImportError:
        pass
