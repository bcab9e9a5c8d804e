"""The registries of relational methods: per-FK linkers, many-to-many relation methods and
database methods (which generate child tables from their parents).

A method's module registers its class here (``@register`` / ``@register_relation``); the lookups
(``relviz.relational.get``, ``get_relation``, ``available``, …) are in :mod:`relviz.relational`,
which imports the built-in methods first. This module imports no method, so a method never
imports the package that loads it (:mod:`relviz.registry`).
"""

from __future__ import annotations

from collections.abc import Callable

from relviz.registry import Registry

__all__ = ["LINKERS", "RELATIONS", "DATABASE_METHODS", "register", "register_relation",
           "register_database"]

LINKERS = Registry("relational method")
"""Per-FK linkers (``Linker``), by name."""

RELATIONS = Registry("many-to-many method")
"""Many-to-many relation methods (``RelationMethod``), by name."""

DATABASE_METHODS = Registry("database method")
"""Methods that generate child tables from their parents (``DatabaseMethod``), by name."""

register: Callable[[type], type] = LINKERS.register
register_relation: Callable[[type], type] = RELATIONS.register
register_database: Callable[[type], type] = DATABASE_METHODS.register
