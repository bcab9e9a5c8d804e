"""The Schema panel's "Proposals to review" in real JupyterLab + headless Chromium: a Studio opened on a
user's own messy frames (schema proposed by ``infer_schema``) lists every proposal per table with its
mark and reason; Reject and Accept change the row's state and ``studio.schema``; Undo reopens.
Screenshot: ``tests/ui/screenshots/schema_proposals.png``.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import nbformat
import pytest

from tests.ui.harness import Lab
from tests.ui.test_schema_proposals import messy_frames

pytestmark = pytest.mark.ui

NOTEBOOK = "schema_proposals.ipynb"
STUDIO = ".relviz-studio"
REVIEW = f"{STUDIO} .relviz-se-review"
CODE = ("import numpy as np\nimport pandas as pd\nimport relviz\n\n"
        + inspect.getsource(messy_frames)
        + "\n\nstudio = relviz.Studio(relviz.Database.from_frames(messy_frames(), validate=False),\n"
          "                       random_state=0, tsne_n=100, height=300)\nstudio")


def _row(lab: Lab, pid: str) -> Any:
    return lab.page.locator(f'{REVIEW} tr.rrow[data-id="{pid}"]')


def test_proposals_listed_with_reasons_then_reject_accept_undo(page: Lab, lab: dict[str, Any]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(CODE)]
    nbformat.write(nb, str(lab["root"] / NOTEBOOK))
    page.open(NOTEBOOK)
    page.run_all(wait_for=f"{REVIEW} .rhead", timeout=180_000)
    p = page.page
    n = int(page.kernel("print(len(studio.schema.proposals))").strip())
    assert n == 10
    head = p.locator(f"{REVIEW} .rhead")
    assert head.inner_text() == f"Proposals to review ({n})"
    assert f"read these {n} proposals from the data" in p.locator(f"{REVIEW} .rintro").inner_text()
    # one group per table, one row per proposal, each marked and explained
    assert p.locator(f"{REVIEW} details.rtable").count() == 2
    assert p.locator(f"{REVIEW} tr.rrow").count() == n
    marks = {
        "regions:public_table": ("public (small reference table)", "a small reference table: 5 rows"),
        "customers.full_name:excluded": ("excluded: personal data or free text", "60 of 60 values (100%) are distinct"),
        "customers.note:excluded": ("excluded: free text", "free text: the distinct values have a median of 8 words"),
        "customers.signup:datetime": ("datetime", "text in ISO 8601 date/time form"),
        "customers.spend:integer": ("integer", "every one of the 60 values is a whole number"),
    }
    for pid, (mark, reason) in marks.items():
        row = _row(page, pid)
        assert row.locator(".rbadge").inner_text() == mark, pid
        assert reason in row.locator(".rreason").inner_text(), pid
    assert _row(page, "customers.note:excluded").locator("button.rreject").count() == 0
    assert _row(page, "customers.note:excluded").locator(".ronly").inner_text() == "accept only"

    # Reject: the reference table becomes private in Python; the row shows it
    _row(page, "regions:public_table").locator("button.rreject").click()
    _row(page, "regions:public_table").locator(".rstate.rejected").wait_for()
    assert "regions is private" in _row(page, "regions:public_table").locator(".rnote").inner_text()
    assert "rejected regions" in p.locator(f"{STUDIO} .relviz-se-message.ok").inner_text()
    assert page.kernel("print(studio.schema.table('regions').public)").strip() == "False"
    assert head.inner_text() == f"Proposals to review ({n - 1})"
    # Accept: kept as proposed, marked
    _row(page, "customers.full_name:excluded").locator("button.raccept").click()
    _row(page, "customers.full_name:excluded").locator(".rstate.accepted").wait_for()
    assert head.inner_text() == f"Proposals to review ({n - 2})"
    state = json.loads(page.kernel(
        "import json; print(json.dumps({i['id']: i['status'] for i in studio.editor.draft.schema_proposals()}))"))
    assert state["regions:public_table"] == "rejected" and state["customers.full_name:excluded"] == "accepted"
    p.locator(REVIEW).scroll_into_view_if_needed()
    shot = page.screenshot("schema_proposals", p.locator(f"{STUDIO} .relviz-se-root"))
    assert shot.stat().st_size > 20_000

    # Undo twice: both decisions taken back, the table public again
    for _ in range(2):
        before = head.inner_text()
        p.locator(f"{STUDIO} .relviz-se-toolbar button.undo").click()
        p.wait_for_function("(b) => document.querySelector('.relviz-studio .relviz-se-review .rhead')"
                            ".textContent !== b", arg=before)
    assert head.inner_text() == f"Proposals to review ({n})"
    assert page.kernel("print(studio.schema.table('regions').public)").strip() == "True"
    assert _row(page, "regions:public_table").locator("button.rreject").count() == 1
