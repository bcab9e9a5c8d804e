"""The Studio in JupyterLab's dark theme (issue 14, item 6), in real JupyterLab + headless Chromium.

A Studio on the miniflights look-alike of nycflights13 (``notebooks/miniflights.py``, the issue-14
tests' small database) is opened with JupyterLab switched to "JupyterLab Dark"; a run is launched
and the Compare tab shows its degree figure. Asserted in the page, from ``getComputedStyle``: the
text of the relviz panels (header, schema cards, budget, run status, the compare banner and its
curator-view label) has a WCAG contrast ratio ≥ 4.5 with the background it is drawn on, and the
plotly figure's background is transparent or dark, its title light and real data drawn light. In
the kernel, ``relviz.plots`` learnt the page's theme from the browser. Switching back to the light
theme restyles the figure (real data dark again). Screenshots: ``tests/ui/screenshots/dark_theme_*.png``.
The theme is set back to "JupyterLab Light" at the end (the setting is shared by the session's tests).
"""

from __future__ import annotations

import json
from typing import Any

from tests.ui.harness import Lab

STUDIO = ".relviz-studio"
COMPARE = f"{STUDIO} .relviz-cp"
FIGURE = f"{COMPARE} .relviz-cp-fig-degrees .js-plotly-plot"
NOTEBOOK = "dark_theme.ipynb"
CODE = """import relviz
from miniflights import miniflights_db, miniflights_plan

studio = relviz.Studio(miniflights_db(), plan=miniflights_plan(), random_state=0, propose=False,
                       tsne_n=100, height=360)
studio"""

# WCAG 2 contrast of an element's text with the background it sits on (the first opaque background
# among its ancestors, semi-transparent ones composited); the text colour's alpha composited too
_CONTRAST_JS = """(selectors) => {
  const parse = (c) => { const m = /rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?/.exec(c);
                         return m ? [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]] : null; };
  const over = (top, bottom) => [0, 1, 2].map((i) => top[3] * top[i] + (1 - top[3]) * bottom[i]).concat([1]);
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                       return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const out = {};
  for (const sel of selectors) {
    const el = document.querySelector(sel);
    if (!el) { out[sel] = null; continue; }
    const bg = background(el);
    const fg = over(parse(getComputedStyle(el).color), bg);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    out[sel] = { ratio: (a + 0.05) / (b + 0.05), fg: getComputedStyle(el).color, bg: 'rgb(' + bg.slice(0, 3) + ')',
                 bgLum: lum(bg) };
  }
  return out;
}"""

_FIGURE_JS = """(sel) => {
  const gd = document.querySelector(sel);
  const svg = gd.querySelector('.main-svg');
  const title = gd.querySelector('.gtitle');
  return { paper: gd._fullLayout.paper_bgcolor, plot: gd._fullLayout.plot_bgcolor,
           svgBackground: getComputedStyle(svg).backgroundColor,
           title: title ? getComputedStyle(title).fill : null,
           real: gd.data[0].marker.color, height: gd.getBoundingClientRect().height };
}"""


def _theme(lab: Lab, name: str) -> None:
    lab.page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", name)
    light = "true" if name == "JupyterLab Light" else "false"
    lab.page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=30_000)


def _tab(lab: Lab, title: str) -> None:
    lab.page.locator(f"{STUDIO} .relviz-studio-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()


def _luminance(rgb: str) -> float:
    parts = rgb[rgb.index("(") + 1:rgb.index(")")].split(",")
    r, g, b = (float(x) / 255 for x in parts[:3])
    f = lambda v: v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4  # noqa: E731
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def _transparent_or_dark(color: str) -> bool:
    c = color.replace(" ", "")
    if c in ("transparent", "rgba(0,0,0,0)"):
        return True
    return c.startswith("rgb") and _luminance(c) < 0.05


def test_studio_and_figures_readable_in_the_dark_theme(page: Lab, lab: dict[str, Any]) -> None:
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": CODE}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (lab["root"] / NOTEBOOK).write_text(json.dumps(nb))
    p = page.page
    page.open(NOTEBOOK)
    try:
        _theme(page, "JupyterLab Dark")
        page.run_all(wait_for=f"{STUDIO} .relviz-se-root .relviz-card", timeout=180_000)
        p.wait_for_function("() => document.querySelectorAll('.relviz-studio .relviz-card').length === 3")
        p.locator(STUDIO).scroll_into_view_if_needed()
        # the browser told the kernel the page's theme: "auto" figures are now dark ones
        p.wait_for_function("() => { const e = document.querySelector('.relviz-theme-probe');"
                            " return e && e.dataset.theme === 'dark'; }")
        assert page.kernel("from relviz import plots; print(plots.get_theme(), plots.resolved_theme())").split() \
            == ["auto", "dark"]
        page.screenshot("dark_theme_schema", p.locator(STUDIO))

        # a run, then its degree figure in the Compare tab
        _tab(page, "3 · Run")
        p.locator(f"{STUDIO} .relviz-rp-launch").click()
        p.locator(FIGURE).wait_for(timeout=180_000)
        _tab(page, "4 · Compare")
        p.wait_for_function(f"() => {{ const f = document.querySelector('{FIGURE}');"
                            " return f && f.getBoundingClientRect().height > 200; }", timeout=30_000)
        p.wait_for_timeout(500)
        page.screenshot("dark_theme_compare", p.locator(STUDIO))

        ratios = p.evaluate(_CONTRAST_JS, [
            f"{STUDIO} .relviz-studio-header", f"{COMPARE} .relviz-cp-banner", f"{COMPARE} .relviz-cp-origin",
            f"{COMPARE} .relviz-cp-banner span", f"{COMPARE} .relviz-cp-curator",
            f"{STUDIO} .relviz-card", f"{STUDIO} .relviz-card .meta", f"{STUDIO} .relviz-rp-status-text",
            f"{STUDIO} .relviz-bp", f"{STUDIO} .relviz-studio-tabs > .lm-TabBar .lm-TabBar-tab.lm-mod-current"])
        print("\ncontrast in the dark theme: " + ", ".join(
            f"{sel.split(' ', 1)[-1]} {r['ratio']:.1f}" for sel, r in ratios.items() if r))
        for sel, r in ratios.items():
            assert r is not None, f"{sel} not found"
            assert r["ratio"] >= 4.5, (sel, r)
        # the panels are on JupyterLab's dark background, not a light box of their own
        assert ratios[f"{COMPARE} .relviz-cp-banner"]["bgLum"] < 0.05, ratios
        assert ratios[f"{STUDIO} .relviz-card"]["bgLum"] < 0.05, ratios

        fig = p.evaluate(_FIGURE_JS, FIGURE)
        assert _transparent_or_dark(fig["paper"]) and _transparent_or_dark(fig["plot"]), fig
        assert _transparent_or_dark(fig["svgBackground"]), fig
        assert fig["title"] and _luminance(fig["title"]) > 0.5, fig  # light title text
        assert fig["real"].lower() == "#e2e8f0", fig  # real data drawn light (plots.REAL_COLOR_DARK)

        # back to the light theme: the figure follows (real data dark again)
        _theme(page, "JupyterLab Light")
        p.wait_for_function(f"() => {{ const f = document.querySelector('{FIGURE}');"
                            " return f && f.data && f.data[0].marker.color === '#1f2937'; }", timeout=30_000)
        fig = p.evaluate(_FIGURE_JS, FIGURE)
        assert fig["paper"].replace(" ", "") in ("#fff", "white", "rgb(255,255,255)", "#ffffff"), fig
        page.screenshot("dark_theme_back_to_light", p.locator(STUDIO))
    finally:
        if p.evaluate("() => document.body.dataset.jpThemeLight") != "true":
            _theme(page, "JupyterLab Light")
