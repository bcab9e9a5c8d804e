"""relviz — differentially private synthetic relational databases, and the tools to understand them.

A relational database (several tables linked by primary and foreign keys) goes in; a synthetic
database with the same schema comes out, produced under one zCDP privacy accountant, together with
a ledger of every noisy release and a comparison report.

>>> import relviz
>>> db = relviz.datasets.load("nycflights13")                         # doctest: +SKIP
>>> plan = relviz.Plan.default(db.schema, epsilon=1.0, delta=1e-6)      # doctest: +SKIP
>>> synth = relviz.RelationalSynthesizer(plan, random_state=0).fit(db)  # doctest: +SKIP
>>> fake = synth.sample()                                               # doctest: +SKIP
>>> relviz.Studio(db)            # the JupyterLab app: schema → budget → run → compare  # doctest: +SKIP

Modules: ``schema`` (attributes, tables, foreign keys, the privacy unit), ``database``
(loading, validation, exports), ``privacy`` (accountant, mechanisms, sensitivities), ``plan``
(budget shares, methods and what they buy), ``marginals`` (cross-table workloads and marginals),
``single`` (single-table mechanisms), ``relational`` (relational methods), ``synthesizer``, ``run``
(a synthesis in a background thread), ``sweep`` (syntheses over a grid of ε), ``evaluate``,
``plots`` and ``comparison`` (comparisons), ``datasets`` (built-in real data), ``ui`` (JupyterLab
widgets; ``relviz.Studio`` is imported from there on first use, so ``import relviz`` does not
import ipywidgets), ``cli`` (the ``relviz`` command), ``demo_checks`` (the demo's output checker).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relviz import datasets
from relviz.database import Database
from relviz.errors import (
    BudgetError,
    CancelledError,
    DataError,
    NotFittedError,
    ParameterError,
    PlanError,
    Problem,
    RelvizError,
    SchemaError,
)
from relviz.plan import Component, Plan
from relviz.privacy.accountant import Accountant
from relviz.progress import ProgressEvent
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table, infer_schema
from relviz.synthesizer import RelationalSynthesizer

if TYPE_CHECKING:  # pragma: no cover
    from relviz.ui.studio import Studio

from relviz._version import __version__ as __version__  # noqa: E402 (re-exported)

__all__ = [
    "Accountant",
    "Attribute",
    "BudgetError",
    "CancelledError",
    "Component",
    "DataError",
    "Database",
    "ForeignKey",
    "NotFittedError",
    "ParameterError",
    "Plan",
    "PlanError",
    "PrivacyUnit",
    "Problem",
    "ProgressEvent",
    "RelationalSynthesizer",
    "RelvizError",
    "Schema",
    "SchemaError",
    "Studio",
    "Table",
    "datasets",
    "infer_schema",
]


def __getattr__(name: str) -> object:
    """``relviz.Studio`` is imported lazily (it needs ipywidgets and anywidget)."""
    if name == "Studio":
        from relviz.ui.studio import Studio

        return Studio
    raise AttributeError(f"module 'relviz' has no attribute {name!r}")
