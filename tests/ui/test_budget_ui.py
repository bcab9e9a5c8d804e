"""BudgetPanel in real JupyterLab + headless Chromium: number box, slider drag, lock, rebalance.

Each test asserts on ``panel.plan`` read back through the notebook's kernel (the sum of the shares
must be exactly 1 as a Fraction) and saves a screenshot to ``tests/ui/screenshots``.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

pytestmark = pytest.mark.ui

NB = "budget_panel.ipynb"
PANEL = ".relviz-bp"

PLAN = ("import json\n"
        "p = panel.plan\n"
        "print(json.dumps({'total': str(p.total_share()), 'epsilon': p.epsilon,\n"
        "                  'shares': {c.name: str(c.share) for c in p.components},\n"
        "                  'locked': {c.name: c.locked for c in p.components},\n"
        "                  'methods': {c.name: c.method for c in p.components}}))")


def _plan(lab: Any) -> dict[str, Any]:
    return json.loads(lab.kernel(PLAN))


def _wait_message(lab: Any, text: str) -> None:
    lab.page.locator(f"{PANEL} .relviz-bp-message", has_text=text).wait_for()


def _open_panel(page: Any, lab: dict[str, Any], name: str, code: str) -> Any:
    """Write a one-cell notebook ``name`` whose ``code`` shows a BudgetPanel, open and run it;
    the Playwright page, once the panel's grid is visible."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(lab["root"] / name))
    page.open(name)
    page.run_all(wait_for=f"{PANEL} .relviz-bp-grid")
    return page.page


def test_number_box_slider_lock_rebalance_keep_the_sum_exactly_one(page: Any) -> None:
    page.open(NB)
    page.run_all(wait_for=f"{PANEL} .relviz-bp-grid")
    p = page.page
    start = _plan(page)
    names = list(start["shares"])
    assert Fraction(start["total"]) == 1 and names[:3] == ["patients", "visits", "prescriptions"]
    page.screenshot("budget_panel_initial", p.locator(PANEL))
    info = p.locator(f"{PANEL} .relviz-bp-info-1").inner_text()
    assert "σ =" in info and "*" in info  # n read from the data: marked, and said once under the rows
    assert "curator view (not private)" not in info
    assert "curator view (not private)" in p.locator(f"{PANEL} .relviz-bp-footnote").inner_text()

    # 1. type a share into the number box of `visits`
    box = p.locator(f"{PANEL} .relviz-bp-share-1 input")
    box.fill("0.35")
    box.press("Enter")
    _wait_message(page, "visits: share 0.35")
    after = _plan(page)
    assert Fraction(after["shares"]["visits"]) == Fraction(7, 20)
    assert Fraction(after["total"]) == 1
    assert sum(Fraction(s) for s in after["shares"].values()) == 1
    assert "Σ shares = 1" in p.locator(f"{PANEL} .relviz-bp-sum").inner_text()
    # the slider of visits followed the number box
    handle1 = p.locator(f"{PANEL} .relviz-bp-slider-1 .noUi-handle")
    assert handle1.get_attribute("aria-valuetext") == "0.35"

    # 2. lock `visits`, then drag the slider of `patients` with the real mouse
    p.locator(f"{PANEL} .relviz-bp-lock-1 button, {PANEL} button.relviz-bp-lock-1").first.click()
    _wait_message(page, "visits locked")
    handle = p.locator(f"{PANEL} .relviz-bp-slider-0 .noUi-handle")
    track = p.locator(f"{PANEL} .relviz-bp-slider-0 .noUi-base")
    hb, tb = handle.bounding_box(), track.bounding_box()
    assert hb and tb
    p.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
    p.mouse.down()
    p.mouse.move(tb["x"] + tb["width"] * 0.30, hb["y"] + hb["height"] / 2, steps=12)
    p.mouse.up()
    _wait_message(page, "patients: share")
    dragged = _plan(page)
    assert dragged["locked"]["visits"]
    assert Fraction(dragged["shares"]["visits"]) == Fraction(7, 20)  # locked: kept
    assert Fraction(dragged["shares"]["patients"]) != Fraction(after["shares"]["patients"])
    assert abs(float(Fraction(dragged["shares"]["patients"])) - 0.30) < 0.03
    assert Fraction(dragged["total"]) == 1
    page.screenshot("budget_panel_after_edits", p.locator(PANEL))

    # 3. rebalance: the unlocked shares split what `visits` leaves, exactly
    p.locator(f"{PANEL} .relviz-bp-rebalance").click()
    _wait_message(page, "rebalanced")
    reb = _plan(page)
    free = {n: Fraction(s) for n, s in reb["shares"].items() if not reb["locked"][n]}
    assert set(free.values()) == {Fraction(13, 20) / len(free)}
    assert Fraction(reb["total"]) == 1

    # 4. a mechanism change from the drop-down updates the plan
    p.locator(f"{PANEL} .relviz-bp-method-2 select").select_option(label="Independent marginals")
    _wait_message(page, "prescriptions: Independent")
    assert _plan(page)["methods"]["prescriptions"] == "independent"

    # 5. ε above 5 warns in plain words
    eps = p.locator(f"{PANEL} .relviz-bp-epsilon input")
    eps.fill("8")
    eps.press("Enter")
    p.locator(f"{PANEL} .relviz-bp-warnings", has_text="above 5").wait_for()
    assert _plan(page)["epsilon"] == 8.0
    page.screenshot("budget_panel_warnings", p.locator(PANEL))


CENSUS_NB = "budget_panel_census.ipynb"
CENSUS_FK = "persons.household_id->households"


def _write_census_notebook(root: Any) -> None:
    """A notebook with the BudgetPanel on the census stand-in (300 households)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from relviz import datasets\nfrom relviz.ui import BudgetPanel\n\n"
        "db = datasets.load('census', n_households=300, seed=0)\n"
        "panel = BudgetPanel(db, epsilon=8.0, delta=1e-6)\npanel")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(root / CENSUS_NB))


def test_approach_menu_switches_to_privlava(page: Any, lab: dict[str, Any]) -> None:
    _write_census_notebook(lab["root"])
    page.open(CENSUS_NB)
    page.run_all(wait_for=f"{PANEL} .relviz-bp-grid")
    p = page.page
    assert set(_plan(page)["methods"].values()) == {"mst", "degree"}
    p.locator(f"{PANEL} .relviz-bp-approach select").select_option(label="PrivLava")
    _wait_message(page, "approach: PrivLava")
    plan = _plan(page)
    assert plan["methods"] == {CENSUS_FK: "privlava", "households": "mst"}
    assert Fraction(plan["total"]) == 1
    p.locator(f"{PANEL} .relviz-bp-info", has_text="σ_err").wait_for()
    info = p.locator(f"{PANEL} .relviz-bp-grid").inner_text()
    for label in ("latent marginals σ_ℓ", "group sizes σ_size", "latent states σ_z", "err~ scores σ_err",
                  "1-way marginals", "2-way marginals"):
        assert label in info
    assert p.locator(f"{PANEL} .relviz-bp-method-0 select").is_disabled()  # the FK names PrivLava
    assert "latent type" in p.locator(f"{PANEL} .relviz-bp-approach-text").inner_text()
    page.screenshot("budget_panel_privlava", p.locator(PANEL))
    p.locator(f"{PANEL} .relviz-bp-undo").click()
    _wait_message(page, "undone: approach")
    assert set(_plan(page)["methods"].values()) == {"mst", "degree"}


MIXED_NB = "budget_panel_mixed.ipynb"
#: regions (public, one attribute) ← households (entity) ← persons (τ = 4)
MIXED_CODE = (
    "import numpy as np, pandas as pd\n"
    "from relviz import Database\nfrom relviz.ui import BudgetPanel\n"
    "from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table\n"
    "cat = lambda n, k: Attribute.categorical(n, list(range(k)))\n"
    "fks = (ForeignKey('households', ('region',), 'regions'), ForeignKey('persons', ('hid',), 'households'))\n"
    "schema = Schema((Table('regions', ('region',), (cat('climate', 2),), public=True),\n"
    "                 Table('households', ('hid',), (cat('own', 2),)),\n"
    "                 Table('persons', ('pid',), (cat('age', 3),))), fks,\n"
    "                PrivacyUnit('households', {fks[1].name: 4}))\n"
    "rng = np.random.default_rng(0)\n"
    "db = Database(schema, {'regions': pd.DataFrame({'region': range(3), 'climate': [0, 1, 1]}),\n"
    "    'households': pd.DataFrame({'hid': range(20), 'region': rng.integers(0, 3, 20), 'own': rng.integers(0, 2, 20)}),\n"
    "    'persons': pd.DataFrame({'pid': range(40), 'hid': np.repeat(np.arange(20), 2), 'age': rng.integers(0, 3, 40)})})\n"
    "panel = BudgetPanel(db, epsilon=1.0, delta=1e-6)\npanel")


def test_approach_menu_lists_what_privpetal_links(page: Any, lab: dict[str, Any]) -> None:
    """PrivPetal chosen on a schema with an uncapped FK to a public parent: the message names the
    linked FK, its linker and why, the grid shows degree on it (PrivPetal generates the child)
    and PrivPetal on the other FK; undo restores the per-FK linkers."""
    p = _open_panel(page, lab, MIXED_NB, MIXED_CODE)
    start = _plan(page)["methods"]
    assert set(start.values()) == {"mst", "degree"}
    p.locator(f"{PANEL} .relviz-bp-approach select").select_option(label="PrivPetal")
    _wait_message(page, "linked instead")
    message = p.locator(f"{PANEL} .relviz-bp-message").inner_text()
    assert "households.region->regions" in message and "no declared cap N" in message
    assert "degree instead of privpetal" in message
    assert _plan(page)["methods"] == {"households.region->regions": "degree",
                                      "persons.hid->households": "privpetal"}
    page.screenshot("budget_panel_privpetal_mixed", p.locator(PANEL))
    p.locator(f"{PANEL} .relviz-bp-undo").click()
    _wait_message(page, "undone: approach")
    assert _plan(page)["methods"] == start


def test_privlava_links_a_public_parent_with_parent_attributes(page: Any, lab: dict[str, Any]
                                                                ) -> None:
    """PrivLava chosen where an uncapped FK points at a public parent with an attribute to copy
    (docs/methods/privlava.md §2): the message names the FK and parent-attributes, the grid's
    method menu of that FK shows parent-attributes and the PrivLava FK its σ lines; undo restores
    the per-FK linkers."""
    p = _open_panel(page, lab, "budget_panel_privlava_mixed.ipynb", MIXED_CODE)
    start = _plan(page)["methods"]
    p.locator(f"{PANEL} .relviz-bp-approach select").select_option(label="PrivLava")
    _wait_message(page, "linked instead")
    message = p.locator(f"{PANEL} .relviz-bp-message").inner_text()
    assert "households.region->regions: parent-attributes" in message, message
    methods = _plan(page)["methods"]
    assert methods == {"households.region->regions": "parent-attributes",
                       "persons.hid->households": "privlava", "households": "mst"}
    row = list(methods).index("households.region->regions")
    chosen = p.locator(f"{PANEL} .relviz-bp-method-{row} select").evaluate(
        "s => s.options[s.selectedIndex].text")
    assert chosen.replace("\xa0", " ").strip().startswith("Parent attributes"), chosen
    p.locator(f"{PANEL} .relviz-bp-info", has_text="σ_ℓ").wait_for()
    page.screenshot("budget_panel_privlava_mixed", p.locator(PANEL))
    p.locator(f"{PANEL} .relviz-bp-undo").click()
    _wait_message(page, "undone: approach")
    assert _plan(page)["methods"] == start


KEYED_NB = "budget_panel_fk_attribute.ipynb"


def test_fk_menu_offers_fk_attribute_only_on_an_fk_to_a_public_parent(page: Any, lab: dict[str, Any]
                                                                     ) -> None:
    """miniflights with planes private: the method menu of ``flights.carrier → airlines`` (a
    public parent of 4 rows) lists fk-attribute; that of ``flights.tailnum → planes`` (a private
    parent) does not (docs/methods/keyed.md). Choosing it from the menu changes the plan."""
    p = _open_panel(page, lab, KEYED_NB, (
        "from miniflights import miniflights_db\nfrom relviz import Database, PrivacyUnit\n"
        "from relviz.ui import BudgetPanel\n"
        "db0 = miniflights_db()\n"
        "s = db0.schema.with_public('planes', False).with_privacy_unit(\n"
        "    PrivacyUnit(None, {'flights.tailnum->planes': 60}, neighbour='tuple'))\n"
        "db = Database(s, {t: db0[t] for t in s.table_names})\n"
        "panel = BudgetPanel(db, epsilon=1.0, delta=1e-6)\npanel"))
    names = list(_plan(page)["methods"])
    carrier, tailnum = (names.index(n) for n in ("flights.carrier->airlines",
                                                 "flights.tailnum->planes"))

    def labels(i: int) -> list[str]:
        return [o.replace("\xa0", " ").strip() for o in
                p.locator(f"{PANEL} .relviz-bp-method-{i} select option").all_inner_texts()]

    assert "FK as a child attribute" in labels(carrier), labels(carrier)
    assert "Degree baseline" in labels(carrier)
    assert "FK as a child attribute" not in labels(tailnum), labels(tailnum)
    assert "Degree baseline" in labels(tailnum)
    p.locator(f"{PANEL} .relviz-bp-method-{carrier} select").select_option(
        label="FK as a child attribute")
    _wait_message(page, "flights.carrier->airlines")
    assert _plan(page)["methods"]["flights.carrier->airlines"] == "fk-attribute"
    p.locator(f"{PANEL} .relviz-bp-method-{carrier} select").focus()
    page.screenshot("budget_panel_fk_attribute", p.locator(PANEL))
