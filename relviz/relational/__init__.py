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

A linker with ``models_key_attribute = True`` (fk-attribute, :mod:`relviz.relational.keyed`) has
the synthesizer append the FK's parent row, as a categorical attribute over the public parent's
rows, to the child table its mechanism fits; its ``link`` reads that attribute from the child's
codes (docs/methods/keyed.md).

Every method's ``noise_scales`` says, before any data are read, the σ of the Gaussian releases a
fit would make (the budget panel's preview, ``Plan.noise_preview``); it is empty when no σ is
known before the run.

A :class:`DatabaseMethod` (PrivLava, PrivPetal, Denorm) does not link independently synthesised
tables: it *generates* child tables from their (synthetic or public) parents. It owns the plan:
every private FK's edge component names it, and it says which table components it needs (e.g.
PrivLava models the parents, augmented with latent columns, and generates every table that has a
private FK as groups of its parent). The synthesizer hands it the curator and one budget per
component.

Methods register themselves in :mod:`relviz.relational.registry`; the lookups here import the
built-in ones first. This package is the one module outside ``relviz.relational.biadjacency``
that imports it (``tests/test_imports.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, ClassVar, Protocol

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator, PrivateForeignKey, PrivateLink
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.registry import (
    DATABASE_METHODS,
    LINKERS,
    RELATIONS,
    register,
    register_database,
    register_relation,
)
from relviz.schema import ForeignKey, Schema

__all__ = ["Linker", "FittedLink", "RelationMethod", "FittedRelation", "get", "get_class",
           "available", "register", "register_relation", "get_relation", "get_relation_class",
           "available_relations", "DatabaseMethod", "FittedDatabase", "get_database",
           "get_database_class", "available_databases", "is_database_method",
           "register_database"]


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


class FittedDatabase(Protocol):
    """A fitted database method: it samples every private table it generates, and the links."""

    totals: Mapping[str, float]
    """Noisy (or public) row count of every private table it generates, ``{table: rows}``."""

    def sample(self, public: Mapping[str, EncodedTable], *, scale: float, seed: int,
               progress: Callable[[str], Reporter]) -> tuple[dict[str, EncodedTable],
                                                             dict[str, np.ndarray]]:
        """Codes of every private table and the parent row of every child row per private FK.

        Args:
            public: Codes of the public tables (released verbatim).
            scale: Multiplies the generated tables' sizes.
            seed: Seed of this draw (the same seed gives the same database).
            progress: ``progress(component) -> Reporter``.

        Returns:
            ``({table: EncodedTable}, {fk name: (n_child,) int64 parent rows, -1 = null})``.
        """
        ...


class DatabaseMethod(Protocol):
    """A method that generates child tables from their parents (see the module docstring)."""

    name: ClassVar[str]
    label: ClassVar[str]
    gaussian_only: ClassVar[bool]

    def default_components(self, schema: Schema, *, mechanism: str
                           ) -> list[tuple[str, str, str, Fraction]]:
        """The plan components this method needs on ``schema``: ``(name, kind, method, share)``
        with ``kind`` ``"table"`` or ``"edge"``; shares add up to 1."""
        ...

    def plan_problems(self, schema: Schema, components: tuple[Any, ...]) -> list[Problem]:
        """What is wrong with a plan's components for this method on ``schema`` (all at once)."""
        ...

    def noise_scales(self, schema: Schema, component: Any, rho: Fraction | float, *,
                     multipliers: Multipliers, components: tuple[Any, ...] = ()) -> dict[str, float]:
        """``{release label: σ}`` of one component's Gaussian releases (public: reads no data);
        ``components`` are the plan's (a method that links some FKs itself needs to know which)."""
        ...

    def fit(self, curator: Curator, budgets: Mapping[str, Budget], *, schema: Schema,
            components: tuple[Any, ...], multipliers: Multipliers,
            progress: Callable[[str], Reporter], seed: int) -> FittedDatabase:
        """Spend each component's budget and return the fitted model."""
        ...


def _load() -> None:
    from relviz.relational import (  # noqa: F401
        degree,  # noqa: F401  (registration side effect)
        denorm,
        keyed,
        parent_attributes,
        privlava,
        privpetal,
    )
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


def get_database_class(name: str) -> type:
    """The registered database method class. Raises KeyError naming the available ones."""
    _load()
    return DATABASE_METHODS.get_class(name)


def available_databases() -> dict[str, str]:
    """``{name: label}`` of the registered database methods."""
    _load()
    return DATABASE_METHODS.available()


def is_database_method(name: str) -> bool:
    """Whether ``name`` is a registered database method (it generates child tables)."""
    _load()
    return name in DATABASE_METHODS.available()


def get_database(name: str, **params: Any) -> DatabaseMethod:
    """A configured database method (e.g. ``get_database("privlava", assignment="hard")``)."""
    return get_database_class(name)(**params)
