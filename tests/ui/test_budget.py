"""relviz.ui.budget without a browser: the panel's widgets drive the plan."""

from __future__ import annotations

from fractions import Fraction

from relviz import Database, Plan


def test_budget_panel_widgets_drive_the_plan(clinic_ready_db: Database) -> None:
    from relviz.ui import BudgetPanel

    panel = BudgetPanel(clinic_ready_db)
    row = panel._rows["visits"]
    row["text"].value = 0.4  # as the front end would
    assert panel.plan.component("visits").share == Fraction(2, 5) and panel.plan.total_share() == 1
    assert panel._rows["patients"]["slider"].value == round(float(panel.plan.component("patients").share), 3)
    assert "Σ shares = <b>1</b>" in panel._sum.value
    panel._rows["visits"]["lock"].value = True
    assert panel.plan.component("visits").locked
    panel._rows["patients"]["method"].value = "independent"
    assert panel.plan.component("patients").method == "independent"
    panel._eps.value = 6.0
    assert panel.plan.epsilon == 6.0 and "above 5" in panel._warnings.value
    panel._delta.value = "1e-7"
    assert panel.plan.delta == 1e-7
    panel.plan = Plan.default(panel.draft.schema, 2.0, 1e-6)
    assert panel._eps.value == 2.0 and panel.draft.plan is panel.plan
