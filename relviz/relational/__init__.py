"""Relational methods: per foreign key, how the FK column of synthetic child rows is drawn.

A :class:`Linker` fits on a :class:`~relviz.privacy.measure.PrivateForeignKey` with a
:class:`~relviz.privacy.budget.Budget` and the privacy unit's multipliers, and returns a
:class:`FittedLink` that, given the synthetic child rows and the (synthetic or public) parent
rows as codes, returns the parent row of every child (``-1`` for a null FK). Registered by name:
``relviz.relational.get("degree")``.

A :class:`RelationMethod` models a many-to-many relation through a link table with two foreign
keys (``Plan.with_relation``): it fits on a :class:`~relviz.privacy.measure.PrivateLink` and links
by returning distinct pairs of parent rows. Registered separately:
``relviz.relational.get_relation("biadjacency")``.

Methods that need the synthetic tables while fitting (bi-adjacency adapts its private selection
to the current synthetic relation) set ``needs_synthetic_tables = True``; the synthesizer then
passes ``synthetic(table) -> EncodedTable``, the codes of the synthetic table that ``sample()``
will return.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey, PrivateLink
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.registry import Registry
from relviz.schema import ForeignKey, Schema

__all__ = ["Linker", "FittedLink", "RelationMethod", "FittedRelation", "get", "get_class",
           "available", "register", "register_relation", "get_relation", "get_relation_class",
           "available_relations"]


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
    needs_synthetic_tables: ClassVar[bool]

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        ...

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter,
            synthetic: Callable[[str], EncodedTable] | None = None) -> FittedLink:
        ...


class FittedRelation(Protocol):
    """A fitted many-to-many model."""

    def link(self, table1: EncodedTable, table2: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> tuple[np.ndarray, np.ndarray]:
        """Distinct pairs ``(rows of table 1, rows of table 2)``, each ``(m_syn,)`` int64."""
        ...


class RelationMethod(Protocol):
    """A many-to-many method for a link table with two foreign keys."""

    name: ClassVar[str]
    label: ClassVar[str]
    gaussian_only: ClassVar[bool]
    needs_synthetic_tables: ClassVar[bool]

    def problems(self, schema: Schema, fk1: ForeignKey, fk2: ForeignKey) -> list[Problem]:
        ...

    def fit(self, link: PrivateLink, budget: Budget, *, schema: Schema, multipliers: Multipliers,
            progress: Reporter, synthetic: Callable[[str], EncodedTable] | None = None
            ) -> FittedRelation:
        ...


def _load() -> None:
    from relviz.relational import degree  # noqa: F401
    from relviz.relational.biadjacency import linker  # noqa: F401


_LINKERS = Registry("relational method", _load)
_RELATIONS = Registry("many-to-many method", _load)
register: Callable[[type], type] = _LINKERS.register
get_class: Callable[[str], type] = _LINKERS.get_class
available: Callable[[], dict[str, str]] = _LINKERS.available
register_relation: Callable[[type], type] = _RELATIONS.register
get_relation_class: Callable[[str], type] = _RELATIONS.get_class
available_relations: Callable[[], dict[str, str]] = _RELATIONS.available


def get(name: str, **params: Any) -> Linker:
    """A configured per-FK linker (e.g. ``get("degree")``)."""
    return _LINKERS.get(name, **params)


def get_relation(name: str, **params: Any) -> RelationMethod:
    """A configured many-to-many relation method (e.g. ``get_relation("biadjacency")``)."""
    return _RELATIONS.get(name, **params)
