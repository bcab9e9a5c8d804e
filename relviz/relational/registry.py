"""The registries of relational methods: per-FK linkers, many-to-many relation methods and
database methods (which generate child tables from their parents).

A method's module registers its class here (``@register`` / ``@register_relation``); the lookups
(``relviz.relational.get``, ``get_relation``, ``available``, …) are in :mod:`relviz.relational`,
which imports the built-in methods first. This module imports no method, so a method never
imports the package that loads it (:mod:`relviz.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from relviz.registry import Registry

__all__ = ["LINKERS", "RELATIONS", "DATABASE_METHODS", "register", "register_relation",
           "register_database", "mixed_mode_linker_problems", "fit_mixed_mode_linkers",
           "LINKED_RELATIONAL_SHARE", "mixed_mode_shares"]

LINKERS = Registry("relational method")
"""Per-FK linkers (``Linker``), by name."""

RELATIONS = Registry("many-to-many method")
"""Many-to-many relation methods (``RelationMethod``), by name."""

DATABASE_METHODS = Registry("database method")
"""Methods that generate child tables from their parents (``DatabaseMethod``), by name."""

register: Callable[[type], type] = LINKERS.register
register_relation: Callable[[type], type] = RELATIONS.register
register_database: Callable[[type], type] = DATABASE_METHODS.register


LINKED_RELATIONAL_SHARE = Fraction(1, 3)
"""``Plan.default``'s ``relational_share``: a linked FK of a mixed mode gets what the default plan
gives an FK, ``LINKED_RELATIONAL_SHARE / (private FKs)``."""


def mixed_mode_shares(n_private_fks: int, n_linked: int, n_modelled: int) -> tuple[Fraction, Fraction]:
    """``(share of each linked FK, share of each modelled component)`` of a database method's
    default plan (its mixed mode): a linked FK costs what ``Plan.default`` charges an FK
    (``1/3`` of ρ over the schema's private FKs: TPC-H's three FKs, 1/9 each), and the method's own
    components (an FK model, a stand-alone table) share the rest equally. With nothing modelled,
    the linked FKs share everything. Equal shares for every component, linked ones included,
    would give nycflights13's three linked FKs to public parents 3/5 of ρ and leave the flights
    model one fifth of it (docs/methods/privlava.md §6).

    Raises:
        ValueError: ``n_linked > n_private_fks`` or no component at all.
    """
    if n_linked > n_private_fks or n_linked + n_modelled == 0:
        raise ValueError("mixed_mode_shares: more linked FKs than private FKs, or no component")
    if n_modelled == 0:
        return Fraction(1, n_linked), Fraction(0)
    each = LINKED_RELATIONAL_SHARE / n_private_fks if n_linked else Fraction(0)
    return each, (1 - each * n_linked) / n_modelled


def mixed_mode_linker_problems(method: str, components: Iterable[Any], linked: set[str],
                               schema: Any = None, *, generated_key_attributes: bool = False) -> list:
    """Plan problems of the linkers a database method's mixed mode gives its ``linked`` FKs: a
    linker that learns on the synthetic tables while fitting (bi-adjacency) cannot be used,
    since the database method's generated tables do not exist yet then; a linker that models the
    FK as a child attribute (fk-attribute) only where the child is one of the plan's stand-alone
    tables (a ``"table"`` component, fitted by a single-table mechanism on the child's rows with
    that attribute; ``schema`` names the FK's child), or anywhere when the method models every
    attribute of the children it generates (``generated_key_attributes``: PrivLava's child model
    takes the child's rows with the attribute, Cai, Xiao & Cormode, SIGMOD 2023, §3). ``method``
    names the database method in the message (``"PrivLava"``, ``"PrivPetal"``)."""
    from relviz.errors import Problem

    components = list(components)
    tables = {c.name for c in components if c.kind == "table"}
    out = []
    for c in components:
        if c.name not in linked:
            continue
        try:
            keyed = getattr(LINKERS.get_class(c.method), "models_key_attribute", False)
            if keyed and not generated_key_attributes and (
                    schema is None or schema.foreign_key(c.name).child not in tables):
                out.append(Problem("unsupported_linker", f"{c.method} models the FK as an "
                                   f"attribute of the child's single-table model, which {method}'s "
                                   "mixed mode does not build for a child it generates; use "
                                   "degree", column=c.name))
            elif not keyed and LINKERS.get_class(c.method).needs_synthetic_tables:
                out.append(Problem("unsupported_linker", f"{c.method} learns on the synthetic "
                                   f"tables while fitting, which {method}'s generated tables do "
                                   "not provide; use degree", column=c.name))
        except KeyError:
            pass
    return out


def fit_mixed_mode_linkers(curator: Any, budgets: Any, *, schema: Any, components: Iterable[Any],
                           linked: set[str], multipliers: Any, progress: Callable) -> dict[str, Any]:
    """Fit the linker of every ``linked`` FK of a database method's plan (its mixed mode), each
    with its own component budget and the schema's sensitivities: ``{fk name: fitted linker}``."""
    out: dict[str, Any] = {}
    for c in components:
        if c.name not in linked:
            continue
        fk = schema.foreign_key(c.name)
        rep = progress(fk.name)
        rep(0.0, f"{c.method} on {fk.label()} (mixed mode)")
        out[fk.name] = LINKERS.get(c.method, **dict(c.params)).fit(
            curator.foreign_key(fk), budgets[c.name], schema=schema, multipliers=multipliers,
            progress=rep)
        rep(1.0, "fitted")
    return out
