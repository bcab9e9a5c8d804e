"""The stakeholder page (``notebooks/stakeholder-demo.ipynb``) under Voila in headless Chromium
(issue 14, item 5): with its ε sweep in the cache it renders both figures within 5 s on three
fresh loads, each figure with a non-zero size that fits the page, and keeps them through window
resizes and slider moves.

The page is served as the notebook says to serve it, ``voila --preheat_kernel=True`` (Voila runs
the notebook in a waiting kernel before a visitor comes; a first load after the server starts is
made, not timed, so that the pool is full); a plain ``voila`` serves it too (one load, sizes
checked, time printed: it adds the kernel's start and the notebook's run to every load).

The cache is built first, for a two-point grid (ε ∈ {0.5, 4}), with ``relviz demo-cache`` in a
temporary cache folder (two nycflights13 syntheses: a minute or two on a 2-core machine); the page
reads the same folder (``RELVIZ_CACHE_DIR``) and grid (``RELVIZ_DEMO_EPSILONS``). The cache key
holds a digest of relviz's sources, so both run on a copy of the ``relviz`` package taken when the
test starts: an edit to the working tree while the test runs cannot make the cache stale midway.

The 5 s is a performance goal, so it lives in ``benchmarks/stakeholder_page.py`` (guide: timed
goals go to benchmarks/, not to unit tests): that script runs this test with
``RELVIZ_PAGE_SECONDS=5``, which turns the wall-time check on. In ``make test`` the load times are
measured and printed (``-s``) and every other check runs; a wall-time check there failed CI once at
5.1 s on a shared 2-core machine (load average 2.3 → 1.7). Screenshots go to
``tests/ui/screenshots/stakeholder_*.png``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.harness import SCREENSHOTS, jupyter_env, serve

pytestmark = pytest.mark.ui

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "stakeholder-demo.ipynb"
GRID = "0.5,4"
FIGURES = (".relviz-demo-tradeoff", ".relviz-demo-degrees")
# issue 14: the page renders within 5 s when its sweep is cached; checked when the variable is set
# (benchmarks/stakeholder_page.py sets it), printed otherwise
SECONDS = float(os.environ.get("RELVIZ_PAGE_SECONDS", "0")) or None

# the size of each figure's plot (its outer <svg>) and of the page, in CSS pixels
_SIZES = """(sels) => ({page: document.documentElement.clientWidth,
  figs: sels.map(s => { const svg = document.querySelector(s + ' .js-plotly-plot .main-svg');
                        if (!svg) return null; const r = svg.getBoundingClientRect();
                        return {w: r.width, h: r.height, left: r.left, right: r.right}; })})"""
_DRAWN = """(sels) => sels.every(s => { const svg = document.querySelector(s + ' .js-plotly-plot .main-svg');
                                    if (!svg) return false; const r = svg.getBoundingClientRect();
                                    return r.width > 0 && r.height > 0; })"""


@pytest.fixture(scope="module")
def page_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Jupyter environment of the page (a frozen copy of relviz first on the path), with its sweep
    cached by ``relviz demo-cache``."""
    pytest.importorskip("voila", reason="voila is not installed (pip install voila)")
    base = tmp_path_factory.mktemp("stakeholder")
    shutil.copytree(REPO / "relviz", base / "src" / "relviz", ignore=shutil.ignore_patterns("__pycache__"))
    env = jupyter_env(base, RELVIZ_DEMO_EPSILONS=GRID, RELVIZ_CACHE_DIR=str(base / "cache"),
                      PYTHONPATH=str(base / "src"), OMP_NUM_THREADS="1", RELVIZ_WARMUP="0")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "relviz.cli", "demo-cache", "--quiet"], env=env, cwd=base,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    path = Path(out.stdout.splitlines()[1])
    assert path.exists() and path.parent == base / "cache" / "sweeps"
    print(f"\nrelviz demo-cache (ε ∈ {{{GRID}}}): {time.perf_counter() - t0:.0f} s → {path.name}")
    env["RELVIZ_TEST_BASE"] = str(base)
    return env


def _serve(page_env: dict[str, str], *flags: str) -> Any:
    base = Path(page_env["RELVIZ_TEST_BASE"])
    argv = ["voila", "--no-browser", "--Voila.ip=127.0.0.1", *flags, str(NOTEBOOK)]
    name = "voila" + "".join(f.split("=")[0].replace("--", "-") for f in flags)
    return serve(argv, env=page_env, cwd=base, log_path=base / f"{name}.log", what="voila")


@pytest.fixture(scope="module")
def voila(page_env: dict[str, str], browser: Any) -> Iterator[str]:
    """The page served with a pre-heated kernel, after one untimed load (the pool is full)."""
    with _serve(page_env, "--preheat_kernel=True") as url:
        ctx = browser.new_context(viewport={"width": 1280, "height": 1800})
        p = ctx.new_page()
        p.goto(url + "/", timeout=300_000)
        p.wait_for_function(_DRAWN, arg=list(FIGURES), timeout=300_000)
        ctx.close()
        time.sleep(10)  # the next kernel of the pool runs the notebook
        yield url + "/"


@pytest.fixture()
def voila_plain(page_env: dict[str, str]) -> Iterator[str]:
    with _serve(page_env) as url:
        yield url + "/"


def _sizes(p: Any) -> dict[str, Any]:
    return p.evaluate(_SIZES, list(FIGURES))


def _assert_fits(p: Any, when: str) -> None:
    """Both figures drawn, non-zero, inside the page's width."""
    p.wait_for_function(_DRAWN, arg=list(FIGURES), timeout=15_000)
    s = _sizes(p)
    for sel, f in zip(FIGURES, s["figs"]):
        assert f is not None and f["w"] > 0 and f["h"] > 0, f"{when}: {sel} has no size: {s}"
        assert f["h"] >= 300, f"{when}: {sel} is only {f['h']:.0f} px high: {s}"
        assert f["left"] >= 0 and f["right"] <= s["page"] + 1, f"{when}: {sel} is wider than the page: {s}"
        assert f["w"] >= 0.6 * s["page"], f"{when}: {sel} does not use the page's width: {s}"


def test_three_loads_render_both_figures_fast(browser: Any, voila: str) -> None:
    times, loads = [], [os.getloadavg()[0]]
    for i in range(3):
        if i:
            time.sleep(8)  # a visitor, not a reload storm: the pool's next kernel has run the notebook
        ctx = browser.new_context(viewport={"width": 1280, "height": 1800}, device_scale_factor=1)
        p = ctx.new_page()
        try:
            t0 = time.perf_counter()
            p.goto(voila, timeout=120_000)
            p.wait_for_function(_DRAWN, arg=list(FIGURES), timeout=120_000)
            times.append(time.perf_counter() - t0)
            _assert_fits(p, f"load {i + 1}")
            p.wait_for_timeout(1000)  # a late re-layout must not collapse a figure either
            _assert_fits(p, f"load {i + 1}, a second later")
            text = p.locator("body").inner_text()
            assert "read from the cache" in text, text[:2000]
            assert "curator view (not private)" in text
            assert p.locator(".relviz-demo-cards").get_attribute("data-epsilon") in ("0.5", "4")
            p.screenshot(path=str(SCREENSHOTS / f"stakeholder_load{i + 1}.png"), full_page=True)
        finally:
            ctx.close()
    loads.append(os.getloadavg()[0])
    said = (f"stakeholder page, sweep cached: loads in {', '.join(f'{t:.1f}' for t in times)} s "
            f"(load average {loads[0]:.1f} → {loads[1]:.1f} on {os.cpu_count()} CPUs)")
    print("\n" + said)
    assert len(times) == 3 and all(t > 0 for t in times), said
    if SECONDS is not None:
        assert max(times) <= SECONDS, f"page loads took longer than {SECONDS:g} s: {said}"


def test_figures_survive_resizes_and_the_slider(browser: Any, voila: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1800}, device_scale_factor=1)
    p = ctx.new_page()
    try:
        p.goto(voila, timeout=120_000)
        _assert_fits(p, "loaded")
        for width in (820, 1500, 1000):
            p.set_viewport_size({"width": width, "height": 1800})
            p.wait_for_timeout(800)  # plotly's resize handler waits 100 ms, then re-lays out
            _assert_fits(p, f"resized to {width} px")
        p.screenshot(path=str(SCREENSHOTS / "stakeholder_resized_1000.png"), full_page=True)
        # move the slider with the keyboard: the cards and both figures are redrawn at the other end
        first = p.locator(".relviz-demo-cards").get_attribute("data-epsilon")
        target = "4" if first == "0.5" else "0.5"
        p.locator(".relviz-demo-slider .noUi-handle, .relviz-demo-slider .ui-slider-handle").first.click()
        p.keyboard.press("End" if target == "4" else "Home")
        p.locator(f".relviz-demo-cards[data-epsilon='{target}']").wait_for(timeout=30_000)
        p.wait_for_function(f"""() => {{ const d = document.querySelector('.relviz-demo-tradeoff .js-plotly-plot');
                                        return d && d.layout && d.layout.title.text.includes('ε = {target}'); }}""",
                            timeout=30_000)
        _assert_fits(p, f"slider at ε = {target}")
        p.set_viewport_size({"width": 900, "height": 1800})
        p.wait_for_timeout(800)
        _assert_fits(p, f"slider at ε = {target}, resized to 900 px")
        p.screenshot(path=str(SCREENSHOTS / "stakeholder_slider_moved_900.png"), full_page=True)
        print("\n" + json.dumps(_sizes(p)))
    finally:
        ctx.close()


def test_plain_voila_serves_it_too(browser: Any, voila_plain: str) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 1800}, device_scale_factor=1)
    p = ctx.new_page()
    try:
        t0 = time.perf_counter()
        p.goto(voila_plain, timeout=120_000)
        p.wait_for_function(_DRAWN, arg=list(FIGURES), timeout=120_000)
        seconds = time.perf_counter() - t0
        _assert_fits(p, "plain voila")
        assert "read from the cache" in p.locator(".relviz-demo-provenance").inner_text()
        print(f"\nstakeholder page under plain voila (kernel started per visit), sweep cached: {seconds:.1f} s "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    finally:
        ctx.close()
