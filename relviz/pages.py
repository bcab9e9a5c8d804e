"""plotly figures that fit a Voila page (the stakeholder page, ``notebooks/stakeholder-demo.ipynb``).

A figure on a page should take the width of the page, whatever it is and however it changes, and
keep the height it was given. Inside Voila, plotly's MIME renderer alone does neither reliably:

* without ``responsive`` nothing re-lays a figure out when the window is resized, so a figure
  drawn at 1,400 px stays 1,400 px wide in an 800 px window (cut off on the right);
* with ``responsive``, a resize deletes the figure's height and measures it again from the figure's
  own element, whose height comes from the figure itself: the figure can collapse to 0 px;
* neither notices a change of the page's width that is not a window resize (a scroll bar that
  appears when the page grows, a side panel).

So :func:`figure_output` draws with ``responsive`` and a fixed height, and :class:`FitToPage` (a
small anywidget placed once on the page) pins each figure element's CSS height to that height (so a
re-layout measures the height it was given, never 0) and tells plotly to re-lay out whenever the
page's width changes (a ``ResizeObserver`` on the page, debounced, that sends one window
``resize`` event — what plotly's ``responsive`` listens to).

>>> from relviz.pages import FitToPage, figure_output                    # doctest: +SKIP
>>> out = figure_output(fig, height=450)          # an ipywidgets Output    # doctest: +SKIP
>>> FitToPage()                                   # once on the page        # doctest: +SKIP

The figures follow the page's light or dark theme: :class:`FitToPage` also tells Python the page's
theme (as :class:`relviz.ui.theme.ThemeProbe` does), every figure is shown styled with
:func:`relviz.plots.apply_theme`, and the page's figures are shown again when the theme changes.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import anywidget
import ipywidgets as W
import traitlets

from relviz.ui.theme import THEME_JS

__all__ = ["FitToPage", "PageFigure", "figure_bundle", "figure_output"]

MIME = "application/vnd.plotly.v1+json"
CONFIG = {"displaylogo": False, "responsive": True}


def figure_bundle(fig: Any, *, height: int) -> dict[str, Any]:
    """The display-data output of ``fig`` at the container's width and ``height`` px.

    The figure itself is not changed: the copy in the bundle gets ``autosize``, no ``width`` and
    ``height``, plotly's ``responsive`` configuration, and the current theme
    (:func:`relviz.plots.apply_theme`).
    """
    import plotly.graph_objects as go
    import plotly.io as pio

    from relviz.plots import apply_theme

    spec = json.loads(pio.to_json(apply_theme(go.Figure(fig)), validate=False))
    layout = spec.setdefault("layout", {})
    layout.pop("width", None)
    layout.update(autosize=True, height=int(height))
    spec["config"] = dict(CONFIG)
    title = (layout.get("title") or {}).get("text", "") if isinstance(layout.get("title"), dict) else ""
    return {"output_type": "display_data", "metadata": {},
            "data": {MIME: spec, "text/plain": f"<plotly figure: {title}>"}}


class PageFigure(W.Output):
    """An output area showing one plotly figure at the page's width and a fixed height.

    Attributes:
        height: Height of the figure in px (also the area's CSS height, read by :class:`FitToPage`).
        figure: The figure shown (``None`` before :meth:`show`).
    """

    def __init__(self, height: int = 450, **kwargs: Any) -> None:
        kwargs.setdefault("layout", W.Layout(width="100%"))
        super().__init__(**kwargs)
        self.height = int(height)
        self.add_class("relviz-page-figure")
        self.add_class(f"relviz-page-figure-h{self.height}")
        self.figure: Any = None
        _SHOWN.add(self)

    def show(self, fig: Any) -> None:
        self.figure = fig
        self.outputs = (figure_bundle(fig, height=self.height),)


_SHOWN: weakref.WeakSet[PageFigure] = weakref.WeakSet()  # restyled when the page's theme changes


def figure_output(fig: Any, *, height: int = 450, **kwargs: Any) -> PageFigure:
    """A :class:`PageFigure` showing ``fig``."""
    out = PageFigure(height, **kwargs)
    out.show(fig)
    return out


_ESM = THEME_JS + r"""
const STYLE_ID = "relviz-fit-to-page-style";

function pinHeights(root) {
  // a figure element's height comes from its class relviz-page-figure-h<px>: plotly measures it
  for (const out of root.querySelectorAll("[class*='relviz-page-figure-h']")) {
    const m = /relviz-page-figure-h(\d+)/.exec(out.className);
    if (!m) continue;
    for (const gd of out.querySelectorAll(".js-plotly-plot")) {
      if (gd.style.height !== m[1] + "px") gd.style.height = m[1] + "px";
    }
  }
}

export default {
  render({ model, el }) {
    el.classList.add("relviz-fit-to-page");
    el.style.display = "none";
    if (!document.getElementById(STYLE_ID)) {
      const style = document.createElement("style");
      style.id = STYLE_ID;
      style.textContent = ".relviz-page-figure { overflow: hidden; max-width: 100%; }" +
                          ".relviz-page-figure .js-plotly-plot { max-width: 100%; }";
      document.head.appendChild(style);
    }
    let lastWidth = document.documentElement.clientWidth;
    let timer = null;
    const relayout = () => {
      pinHeights(document);
      window.dispatchEvent(new Event("resize"));  // plotly's responsive handler re-lays out
    };
    const resized = new ResizeObserver(() => {
      const w = document.documentElement.clientWidth;
      if (w === lastWidth) return;
      lastWidth = w;
      clearTimeout(timer);
      timer = setTimeout(relayout, 150);
    });
    resized.observe(document.body);
    // new figures (a slider moved): pin their height as soon as plotly has drawn them
    const added = new MutationObserver(() => pinHeights(document));
    added.observe(document.body, { childList: true, subtree: true });
    pinHeights(document);
    const first = setTimeout(relayout, 300);
    model.set("ready", true);
    model.save_changes();
    const stopTheme = watchTheme((theme) => {
      if (model.get("theme") !== theme) { model.set("theme", theme); model.save_changes(); }
    });
    return () => { resized.disconnect(); added.disconnect(); clearTimeout(timer); clearTimeout(first); stopTheme(); };
  },
};
"""


class FitToPage(anywidget.AnyWidget):
    """Keeps the page's :class:`PageFigure` figures at the page's width and their own heights.

    Place one anywhere on the page (it is invisible). ``ready`` turns ``True`` once the browser ran it;
    ``theme`` is the page's theme (``"light"``/``"dark"``; ``""`` before), told to :mod:`relviz.plots`,
    and the page's figures are shown again in it when it changes.
    """

    _esm = _ESM
    ready = traitlets.Bool(False).tag(sync=True)
    theme = traitlets.Unicode("").tag(sync=True)

    @traitlets.observe("theme")
    def _on_theme(self, change: dict[str, Any]) -> None:
        if change["new"] not in ("light", "dark"):
            return
        from relviz import plots

        plots._set_page_theme(change["new"])
        for out in list(_SHOWN):
            if out.figure is not None:
                out.show(out.figure)
