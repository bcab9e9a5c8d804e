"""The workshop notebooks (``notebooks/workshop/``): their structure, and every one of them run
headlessly from top to bottom (nbclient), with its key outputs checked.

The structure tests are quick. The execution tests are marked ``slow`` (``make test`` runs them,
``make test-fast`` does not): each notebook fits a few syntheses of Galton's families and takes
20–100 s on a busy 2-core machine (``pytest --durations=0`` prints the time of each).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

WORKSHOP = Path(__file__).resolve().parents[1] / "notebooks" / "workshop"
NOTEBOOKS = sorted(WORKSHOP.glob("*.ipynb"))
LESSONS = [p for p in NOTEBOOKS if not p.stem.endswith("-solutions")]
SOLUTIONS = [p for p in NOTEBOOKS if p.stem.endswith("-solutions")]

PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"

# What each notebook must produce: figures (a substring of each title), widgets shown, and text
# printed — the lesson's key outputs, not just "no error".
KEY: dict[str, dict[str, Any]] = {
    "01-what-dp-protects": {
        "figures": ["noisy answers on D and on D′", "Where the answers fall"],
        "text": ["← family", "one family can change the number of children by at most 15",
                 "second answer refused"]},
    "01-what-dp-protects-solutions": {
        "figures": ["1,000 noisy answers", "How often one answer gives the family away"],
        "text": ["families : sensitivity 1", "children : sensitivity 15", "refused"]},
    "02-splitting-the-budget": {
        "figures": ["Default split", "Children 60 %", "Moving budget", "The ledger"], "widgets": 1,
        "text": ["refused:", "same plan as the panel's: True", "shares add up to 1",
                 "spent = planned, exactly, for every component: True"]},
    "02-splitting-the-budget-solutions": {
        "figures": ["Worst typical error"], "text": ["same as the plan above: True", "approach: PrivLava"]},
    "03-why-degrees-matter": {
        "figures": ["linking children at random", "Children per family: real and three synthetic copies"],
        "text": ["degree baseline", "bi-adjacency", "PrivLava"]},
    "03-why-degrees-matter-solutions": {
        "figures": ["Degree baseline at two budgets"], "text": ["degree similarity at ε = 0.5"]},
    "04-reading-the-comparisons": {
        "figures": ["Quality properties", "Degrees of", "Associations: children", "t-SNE"],
        "text": ["detection score"]},
    "04-reading-the-comparisons-solutions": {
        "figures": ["t-SNE"], "text": ["new computations for the recoloured map: 0", "relviz's degree similarity"]},
    "05-choosing-epsilon": {
        "figures": ["What ε buys"], "widgets": 1, "text": ["5 syntheses in"]},
    "05-choosing-epsilon-solutions": {
        "figures": ["Three runs of the same sweep"], "text": ["smallest ε meeting both", "ρ(ε = 8) / ρ(ε = 1)"]},
}


def _code(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


# -- structure (quick) -----------------------------------------------------------------------------

def test_four_or_five_lessons_each_with_its_solutions() -> None:
    assert 4 <= len(LESSONS) <= 5, [p.name for p in LESSONS]
    assert sorted(p.stem + "-solutions" for p in LESSONS) == sorted(p.stem for p in SOLUTIONS)
    assert sorted(p.stem for p in NOTEBOOKS) == sorted(KEY)


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_has_exercises_and_points_to_its_answers(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    text = _markdown(nb)
    assert "## Exercises" in text
    exercises = re.findall(r"^\d+\. ", text.split("## Exercises", 1)[1], flags=re.M)
    assert len(exercises) >= 3, "a lesson has at least three exercises"
    assert f"{path.stem}-solutions.ipynb" in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_clean_and_says_seeds_are_for_teaching(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in _code(nb)), \
        "store the notebooks without outputs (the tests execute them)"
    setup = _code(nb)[0].source
    assert "SEED = 0" in setup and "teaching" in setup, "the seed is declared once, as teaching-only"
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_readme_lists_every_notebook_and_a_90_minute_schedule() -> None:
    readme = (WORKSHOP / "README.md").read_text(encoding="utf-8")
    for p in LESSONS:
        assert p.name in readme
    assert "90 minutes" in readme and "1:30" in readme


# -- execution (slow) ------------------------------------------------------------------------------

def _outputs(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    return [o for c in _code(nb) for o in c.get("outputs", [])]


def _figure_titles(outputs: list[dict[str, Any]]) -> list[str]:
    titles = []
    for o in outputs:
        fig = o.get("data", {}).get(PLOTLY)
        if fig is not None:
            title = fig.get("layout", {}).get("title", {})
            titles.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return titles


def _printed(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for o in outputs:
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            parts.append(o["text"])
        elif "text/plain" in o.get("data", {}):
            parts.append(o["data"]["text/plain"])
        if "text/html" in o.get("data", {}):
            parts.append(o["data"]["text/html"])
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_workshop_notebook_runs(path: Path, tmp_path: Path, record_property: Any) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()
    record_property("seconds", round(time.perf_counter() - t0, 1))

    outputs = _outputs(nb)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, [f"{o['ename']}: {o['evalue']}" for o in errors]
    assert all(c.get("execution_count") for c in _code(nb)), "every code cell ran"

    key = KEY[path.stem]
    titles = _figure_titles(outputs)
    for wanted in key.get("figures", []):
        assert any(wanted in t for t in titles), f"no figure titled {wanted!r} (figures: {titles})"
    for fig in (o["data"][PLOTLY] for o in outputs if PLOTLY in o.get("data", {})):
        assert fig["data"], "a figure with no trace"
    widgets = sum(WIDGET in o.get("data", {}) for o in outputs)
    assert widgets >= key.get("widgets", 0), f"{widgets} widget(s) shown"
    printed = _printed(outputs)
    for wanted in key.get("text", []):
        assert wanted in printed, f"{wanted!r} not in the notebook's output"
