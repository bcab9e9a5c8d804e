"""JupyterLab widgets of relviz: thin views over plain Python objects.

* :class:`SchemaEditor` — the FK-DAG editor (an anywidget over :class:`~relviz.ui.schema_state.SchemaDraft`);
  ``editor.schema`` is the edited :class:`~relviz.schema.Schema`.
* :class:`BudgetPanel` — the budget allocator (ipywidgets over
  :class:`~relviz.ui.budget_state.BudgetDraft`); ``panel.plan`` is the edited :class:`~relviz.plan.Plan`.
* :class:`RunPanel` — launch, watch and cancel a synthesis (ipywidgets over :class:`~relviz.run.Run`);
  ``panel.run.result`` is the synthetic database, ``panel.run.ledger`` the ledger.
* :class:`ComparePanel` — tabs of plotly figures over :class:`~relviz.comparison.Comparison`
  (curator view, not private).
* :class:`Studio` — the four chained in one tabbed app: schema → budget → run → compare.

The state objects in :mod:`relviz.ui.schema_state` and :mod:`relviz.ui.budget_state` work without
Jupyter; the widget classes are imported lazily, so importing the state modules pulls in neither
anywidget nor ipywidgets.

>>> from relviz.ui import SchemaEditor, BudgetPanel        # doctest: +SKIP
>>> editor = SchemaEditor(db); editor                      # doctest: +SKIP
>>> panel = BudgetPanel(db); panel                         # doctest: +SKIP
>>> Studio(db)                                             # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from relviz.ui.budget import BudgetPanel
    from relviz.ui.budget_state import BudgetDraft
    from relviz.ui.compare import ComparePanel
    from relviz.ui.run_panel import RunPanel
    from relviz.ui.schema_editor import SchemaEditor
    from relviz.ui.schema_state import EditResult, SchemaDraft
    from relviz.ui.studio import Studio

__all__ = ["SchemaEditor", "BudgetPanel", "RunPanel", "ComparePanel", "Studio", "SchemaDraft", "BudgetDraft",
           "EditResult"]

_WHERE = {
    "SchemaEditor": "relviz.ui.schema_editor",
    "BudgetPanel": "relviz.ui.budget",
    "RunPanel": "relviz.ui.run_panel",
    "ComparePanel": "relviz.ui.compare",
    "Studio": "relviz.ui.studio",
    "SchemaDraft": "relviz.ui.schema_state",
    "BudgetDraft": "relviz.ui.budget_state",
    "EditResult": "relviz.ui.schema_state",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'relviz.ui' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
