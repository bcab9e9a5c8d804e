"""A name → class registry with lazy loading, shared by the mechanism and method registries.

``relviz.single`` (single-table mechanisms), ``relviz.relational`` (per-FK linkers) and its
many-to-many relation methods each hold one :class:`Registry`; the classes register themselves
with the ``register`` decorator when their module is imported, and the package's lookups import
those modules on first use (``load``), so listing the methods never needs a manual import.

The registries live in leaf modules (``relviz.single.registry``, ``relviz.relational.registry``)
that a method's module imports for ``register``; the packages' ``get``, ``get_class`` and
``available`` import the built-in methods before looking up. A method module therefore never imports the package that loads it, and
the import graph stays acyclic (``tests/test_imports.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    """Classes with ``name`` and ``label`` class attributes, looked up by name.

    Args:
        kind: What the entries are, for error messages (e.g. ``"single-table mechanism"``).
        load: Imports the modules that register the built-in entries (called before lookups);
            ``None`` when the caller loads them (see the module docstring).
    """

    def __init__(self, kind: str, load: Callable[[], None] | None = None) -> None:
        self.kind = kind
        self._load = load
        self._classes: dict[str, type] = {}

    def register(self, cls: type) -> type:
        """Class decorator adding ``cls`` under ``cls.name``."""
        self._classes[cls.name] = cls
        return cls

    def _loaded(self) -> None:
        if self._load is not None:
            self._load()

    def get_class(self, name: str) -> type:
        """The registered class. Raises KeyError naming the available entries."""
        self._loaded()
        if name not in self._classes:
            raise KeyError(f"unknown {self.kind} {name!r}; available: {', '.join(self._classes)}")
        return self._classes[name]

    def get(self, name: str, **params: Any) -> Any:
        """A configured instance (keyword-only hyper-parameters, range-checked by the class)."""
        return self.get_class(name)(**params)

    def available(self) -> dict[str, str]:
        """``{name: label}`` of the registered entries."""
        self._loaded()
        return {k: v.label for k, v in self._classes.items()}
