"""The compare panel's single-table block in real JupyterLab + headless Chromium (issue 17 item 4).

A notebook written into the server's root at the start builds a small census-like database
(``regions`` public ← ``households`` ← ``persons``), synthesises it with the independent mechanism
(seconds) and shows a :class:`~relviz.ui.ComparePanel`. The test clicks the Scores tab and waits for
the "Single tables (Chen et al. benchmark)" table (class ``relviz-cp-single``): one row per
synthesised table (the public ``regions`` is copied, not scored) with numbers, a tooltip on every
column, the in-sample note in grey; it checks the numbers against the kernel's
``Comparison.single_table()`` and saves ``tests/ui/screenshots/compare_single_table.png``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import nbformat
import pytest

from tests.ui.harness import Lab

pytestmark = pytest.mark.ui

COMPARE = ".relviz-cp"
SINGLE = f"{COMPARE} table.relviz-cp-single"
NUMBER = re.compile(r"^-?[0-9][0-9,]*(\.[0-9]+)?(e-?[0-9]+)?$")

SETUP = '''\
import numpy as np
import pandas as pd

from relviz import Attribute, Database, ForeignKey, Plan, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer
from relviz.ui import ComparePanel

rng = np.random.default_rng(0)
schema = Schema(
    (Table("regions", ("region",), (Attribute.categorical("climate", ["cold", "warm"]),), public=True),
     Table("households", ("hid",), (Attribute.categorical("tenure", ["own", "rent"]),
                                    Attribute.numeric("income", 0, 200, bins=4),
                                    Attribute.categorical("car", ["none", "one", "two"]))),
     Table("persons", ("pid",), (Attribute.categorical("sex", ["F", "M"]),
                                 Attribute.numeric("age", 0, 100, bins=5, integer=True),
                                 Attribute.categorical("job", ["yes", "no"])))),
    (ForeignKey("households", ("region",), "regions"), ForeignKey("persons", ("hid",), "households")),
    PrivacyUnit("households", {"persons.hid->households": 4}), name="census-toy")
n_h = 400
hh = pd.DataFrame({"hid": np.arange(1, n_h + 1), "region": rng.choice(["N", "S", "E"], n_h),
                   "tenure": rng.choice(["own", "rent"], n_h), "income": rng.uniform(0, 200, n_h).round(1),
                   "car": rng.choice(["none", "one", "two"], n_h)})
hid = np.repeat(hh["hid"].to_numpy(), rng.integers(1, 5, n_h))
age = rng.integers(0, 101, len(hid))
persons = pd.DataFrame({"pid": np.arange(1, len(hid) + 1), "hid": hid, "sex": rng.choice(["F", "M"], len(hid)),
                        "age": age, "job": np.where((age > 20) & (age < 65), "yes", "no")})
regions = pd.DataFrame({"region": ["N", "S", "E"], "climate": ["cold", "warm", "warm"]})
real = Database(schema, {"regions": regions, "households": hh, "persons": persons})
fake = RelationalSynthesizer(Plan.default(schema, 2.0, 1e-6, mechanism="independent"),
                             random_state=0).fit(real).sample()
panel = ComparePanel(real, fake, tsne_n=100)
panel
'''


def _notebook(path: Any) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Compare panel: single-table benchmark (UI test notebook)"),
                nbformat.v4.new_code_cell(SETUP)]
    nbformat.write(nb, str(path))


def test_scores_tab_shows_one_row_per_synthesised_table(page: Lab, lab: dict[str, Any]) -> None:
    _notebook(lab["root"] / "compare_single_table.ipynb")
    p = page.page
    page.open("compare_single_table.ipynb")
    page.run_all(wait_for=f"{COMPARE} .relviz-cp-tabs", timeout=180_000)
    p.locator(COMPARE).scroll_into_view_if_needed()
    t0 = time.perf_counter()
    p.locator(f"{COMPARE} .relviz-cp-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Scores").click()
    p.locator(SINGLE).wait_for(timeout=180_000)
    print(f"\nScores tab (quality, relational, single tables): {time.perf_counter() - t0:.1f} s")
    p.locator(f"{COMPARE} .relviz-cp-fks").wait_for()  # the reports above are there too

    rows = p.locator(f"{SINGLE} tr[data-table]")
    assert rows.count() == 2
    shown = {rows.nth(i).get_attribute("data-table"): [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
             for i in range(rows.count())}
    assert set(shown) == {"households", "persons"}  # regions is public: copied, not scored
    for table, cells in shown.items():
        # table, rows real / synthetic, fidelity, query, target, TRTR, TSTR, note
        assert all(NUMBER.match(x.strip()) for x in cells[1].split("/")), cells
        for x in (cells[2], cells[3], cells[5], cells[6]):
            assert NUMBER.match(x), (table, cells)
        assert cells[4] in ("tenure", "sex")
    # tooltips on every scored column, the in-sample note in grey
    titles = p.locator(f"{SINGLE} th[title]")
    assert titles.count() == 7
    assert "lower is better" in (p.locator(f"{SINGLE} th[title]", has_text="fidelity error").get_attribute("title") or "")
    assert "closer to TRTR" in (p.locator(f"{SINGLE} th[title]", has_text="TSTR").get_attribute("title") or "")
    note = p.locator(f"{COMPARE} .relviz-cp-single-note")
    assert "in-sample" in note.inner_text() and "benchmarks/single_table.py" in note.inner_text()
    # the numbers are the comparison's (read back through the kernel)
    frame = json.loads(page.kernel(
        "import json; df = panel.comparison.single_table()\n"
        "print(json.dumps(df[['Table', 'Fidelity error', 'TSTR macro-F1']].to_dict(orient='records')))"
    ).strip().splitlines()[-1])
    for r in frame:
        assert shown[r["Table"]][2] == f"{r['Fidelity error']:.3g}"
        assert shown[r["Table"]][6] == f"{r['TSTR macro-F1']:.3g}"
    p.locator(SINGLE).scroll_into_view_if_needed()
    path = page.screenshot("compare_single_table", p.locator(COMPARE))
    assert path.stat().st_size > 10_000  # a drawn panel, not a blank box
