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

Every method's ``noise_scales`` says, before any data are read, the σ of the Gaussian releases a
fit would make (the budget panel's preview, ``Plan.noise_preview``); it is empty when no σ is
known before the run.

Methods register themselves in :mod:`relviz.relational.registry`; the lookups here import the
built-in ones first. This package is the one module outside ``relviz.relational.biadjacency``
that imports it (``tests/test_imports.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any, ClassVar, Protocol

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey, PrivateLink
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.registry import LINKERS, RELATIONS, register, register_relation
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

    def noise_scales(self, schema: Schema, fk: ForeignKey, rho: Fraction | float, *,
                     multipliers: Multipliers) -> dict[str, float]:
        """``{release label: σ}`` of the Gaussian releases ``fit`` would make for ``fk`` with
        budget ``rho`` (public: reads no data)."""
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

    def noise_scales(self, schema: Schema, fk1: ForeignKey, fk2: ForeignKey, rho: Fraction | float, *,
                     multipliers: Multipliers) -> dict[str, float]:
        """``{release label: σ}`` of the Gaussian releases ``fit`` would make for the relation
        with budget ``rho`` (public: reads no data)."""
        ...

    def fit(self, link: PrivateLink, budget: Budget, *, schema: Schema, multipliers: Multipliers,
            progress: Reporter, synthetic: Callable[[str], EncodedTable] | None = None
            ) -> FittedRelation:
        ...


def _load() -> None:
    from relviz.relational import degree  # noqa: F401  (registration side effect)
    from relviz.relational.biadjacency import linker  # noqa: F401


def get_class(name: str) -> type:
    """The registered per-FK linker class. Raises KeyError naming the available ones."""
    _load()
    return LINKERS.get_class(name)


def available() -> dict[str, str]:
    """``{name: label}`` of the registered per-FK linkers."""
    _load()
    return LINKERS.available()


def get_relation_class(name: str) -> type:
    """The registered many-to-many method class. Raises KeyError naming the available ones."""
    _load()
    return RELATIONS.get_class(name)


def available_relations() -> dict[str, str]:
    """``{name: label}`` of the registered many-to-many methods."""
    _load()
    return RELATIONS.available()


def get(name: str, **params: Any) -> Linker:
    """A configured per-FK linker (e.g. ``get("degree")``)."""
    return get_class(name)(**params)


def get_relation(name: str, **params: Any) -> RelationMethod:
    """A configured many-to-many relation method (e.g. ``get_relation("biadjacency")``)."""
    return get_relation_class(name)(**params)
