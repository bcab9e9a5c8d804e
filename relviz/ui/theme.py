"""The page's theme (JupyterLab light or dark), seen from the browser and told to Python.

Python cannot see whether JupyterLab shows its light or its dark theme; :class:`ThemeProbe`, an
invisible anywidget placed in a panel, reads it in the browser (JupyterLab's ``data-jp-theme-light``
attribute on ``<body>``, else the luminance of the page's background), sends it to its ``theme``
trait, and again whenever the theme changes. Python then sets the page's theme of
:mod:`relviz.plots` (``"auto"`` follows it, see :func:`relviz.plots.set_theme`) and calls the
probe's callbacks (the compare panel restyles the figures it shows). The probe also defines the CSS
variable ``--relviz-real-color`` (the colour of real data: :data:`relviz.plots.REAL_COLOR`, or
:data:`relviz.plots.REAL_COLOR_DARK` in a dark theme) for the panels' HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

__all__ = ["THEME_JS", "ThemeProbe"]

# JavaScript: `pageTheme()` → "light" | "dark"; `watchTheme(cb)` → a function that stops watching
THEME_JS = r"""
function pageTheme() {
  const flag = document.body.dataset.jpThemeLight;
  if (flag === "true" || flag === "false") return flag === "true" ? "light" : "dark";
  // no JupyterLab theme attribute: the luminance of the page's background
  const cs = getComputedStyle(document.body);
  const bg = (cs.getPropertyValue("--jp-layout-color0") || "").trim() || cs.backgroundColor;
  const probe = document.createElement("div");
  probe.style.color = bg;
  document.body.appendChild(probe);
  const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?/.exec(getComputedStyle(probe).color);
  probe.remove();
  if (!m || (m[4] !== undefined && Number(m[4]) === 0)) return "light";
  const y = 0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3];
  return y < 128 ? "dark" : "light";
}

function watchTheme(cb) {
  const seen = new MutationObserver(() => cb(pageTheme()));
  seen.observe(document.body, { attributes: true,
                                attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class", "style"] });
  cb(pageTheme());
  return () => seen.disconnect();
}
"""

_REAL, _REAL_DARK = "#1f2937", "#e2e8f0"  # relviz.plots.REAL_COLOR(_DARK), without importing plotly here
_CSS = (f":root {{ --relviz-real-color: {_REAL}; }} "
        f"body[data-jp-theme-light='false'] {{ --relviz-real-color: {_REAL_DARK}; }}")

_ESM = THEME_JS + r"""
const STYLE_ID = "relviz-theme-style";

export default {
  render({ model, el }) {
    el.classList.add("relviz-theme-probe");
    el.style.display = "none";
    if (!document.getElementById(STYLE_ID)) {
      const style = document.createElement("style");
      style.id = STYLE_ID;
      style.textContent = model.get("css");
      document.head.appendChild(style);
    }
    const stop = watchTheme((theme) => {
      el.dataset.theme = theme;
      if (model.get("theme") !== theme) { model.set("theme", theme); model.save_changes(); }
    });
    return stop;
  },
};
"""


class ThemeProbe(anywidget.AnyWidget):
    """Invisible; tells Python the page's theme (``theme``: ``""`` until the browser ran it).

    Args:
        on_change: Called with ``"light"`` or ``"dark"`` after :mod:`relviz.plots` learnt the theme.
    """

    _esm = _ESM
    theme = traitlets.Unicode("").tag(sync=True)
    css = traitlets.Unicode(_CSS).tag(sync=True)

    def __init__(self, on_change: Callable[[str], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("relviz-theme-probe")
        self._callbacks: list[Callable[[str], None]] = [on_change] if on_change else []
        self.observe(self._on_theme, names="theme")

    def _on_theme(self, change: dict[str, Any]) -> None:
        theme = change["new"]
        if theme not in ("light", "dark"):
            return
        from relviz import plots

        plots._set_page_theme(theme)
        for cb in self._callbacks:
            cb(theme)
