"""relviz.ui.studio without a browser: edits flow from the schema to the budget and the run, and the
comparison fills after a run."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relviz.database import Database
from relviz.plan import Plan
from tests.conftest import until


def test_studio_edits_flow_forward_and_compare_fills_after_a_run(tiny_db: Database) -> None:
    pytest.importorskip("ipywidgets")
    import relviz

    studio = relviz.Studio(tiny_db, plan=Plan.default(tiny_db.schema, 1.0, 1e-6, mechanism="independent"), random_state=0, tsne_n=40, propose=False)
    fk = "persons.hid->households"
    assert studio.run.plan == studio.plan and studio.comparison is None
    # schema → budget → run: delete an FK, the budget drops its row and the run follows
    assert studio.editor.remove_foreign_key(fk).ok
    assert fk not in {c.name for c in studio.plan.components}
    assert studio.run.plan == studio.plan
    assert sum(c.share for c in studio.plan.components) == 1
    assert studio.editor.add_foreign_key("persons", ["hid"], "households").ok
    assert studio.editor.set_cap(fk, 4).ok
    assert fk in {c.name for c in studio.plan.components}
    # an invalid edit (a cycle) is refused with its reason, and nothing flows
    before, flows = studio.plan, len(studio.history)
    refused = studio.editor.add_foreign_key("households", ["hid"], "persons")
    assert not refused.ok and "cycle" in refused.message
    assert studio.plan is before and len(studio.history) == flows
    assert studio.budget.set_share("households", "1/2").ok
    assert studio.run.plan.component("households").share == Fraction(1, 2)
    assert studio.run.plan.total_share() == 1
    # run → compare: the Run tab is showing, so the Studio switches to Compare and fills it
    studio.select("run")
    assert studio.run_panel.launch()
    assert studio.run.wait(60) and until(lambda: studio.comparison is not None)
    assert studio.tabs.selected_index == 3
    assert studio.comparison.synthetic is studio.run.result
    assert until(lambda: len(studio.compare._deg_fig.outputs) == 1)
    data = studio.compare._deg_fig.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert {t["name"] for t in data["data"]} == {"Real", "Synthetic"}
    assert "curator view (not private)" in studio.compare._banner.value
    steps = [what for _, what in studio.history]
    assert steps[-1] == "run → compare" and any(s.startswith("schema edit") for s in steps)
