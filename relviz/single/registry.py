"""The registry of single-table mechanisms.

A mechanism's module registers its class here (``@register``); the lookups (``relviz.single.get``,
``get_class``, ``available``) are in :mod:`relviz.single`, which imports the built-in mechanisms
first. This module imports no mechanism, so a mechanism never imports the package that loads it
(:mod:`relviz.registry`).
"""

from __future__ import annotations

from collections.abc import Callable

from relviz.registry import Registry

__all__ = ["MECHANISMS", "register"]

MECHANISMS = Registry("single-table mechanism")
"""Single-table mechanisms (``Mechanism``), by name."""

register: Callable[[type], type] = MECHANISMS.register
