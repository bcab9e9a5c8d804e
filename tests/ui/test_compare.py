"""relviz.ui.compare without a browser: the tabs over a Comparison render lazily, reuse its cache and
show errors in place."""

from __future__ import annotations

import pytest

from relviz.comparison import Comparison
from relviz.database import Database
from relviz.privacy.measure import CURATOR_VIEW
from tests.conftest import until


def _traces(out) -> list[dict]:  # noqa: ANN001
    return out.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"] if out.outputs else []


def test_compare_panel_tabs_render_lazily_and_reuse_the_cache(tiny_pair: tuple[Database, Database]) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import ComparePanel

    real, fake = tiny_pair
    empty = ComparePanel()
    assert empty.comparison is None and "no synthetic database yet" in empty._banner.value
    p = ComparePanel(real, fake, tsne_n=40)
    c = p.comparison
    assert isinstance(c, Comparison)
    # the visible tab (Degrees) renders at once; the others wait until shown
    assert until(lambda: len(_traces(p._deg_fig)) == 2)
    assert "data-score=" in p._deg_info.value and not p._ts_fig.outputs
    assert p._deg_fk.options[0][1] == "households.region->regions"
    p._deg_kind.value = "ccdf"
    assert until(lambda: _traces(p._deg_fig) and _traces(p._deg_fig)[0]["type"] == "scatter")
    # t-SNE: progress while computing, then the map; re-colouring hits the cache
    p.select("t-SNE")
    assert until(lambda: "Compute map" in p._status["t-SNE"].value)  # heavy: waits for the button
    assert not p._ts_fig.outputs
    p._ts_compute.click()
    assert until(lambda: len(_traces(p._ts_fig)) == 2)
    assert "40 real + 40 synthetic rows" in p._ts_info.value and "data-cached='false'" in p._ts_info.value
    key = ("embedding", "table:households", 40)
    assert key in c.cache_info()["keys"]
    misses = c.misses
    p._ts_color.value = "tenure"
    assert until(lambda: "data-cached='true'" in p._ts_info.value)
    assert c.misses == misses
    p._ts_n.value = 30  # another sample size: computed (and cached) once more, on request
    assert until(lambda: "Compute map" in p._status["t-SNE"].value)
    p._ts_compute.click()
    assert until(lambda: "data-n='30'" in p._ts_info.value)
    assert c.misses == misses + 1
    # the other tabs
    p.select("Correlations")
    assert until(lambda: len(_traces(p._cor_fig)) == 3)
    assert "mean |synthetic − real|" in p._cor_info.value
    p.select("Marginals")
    assert until(lambda: len(_traces(p._mar_fig)) == 2)
    p._mar_table.value = "persons"
    assert list(p._mar_attr.options) == [("sex", "sex"), ("age", "age")]
    p.select("Scores")
    assert until(lambda: bool(p._sc_fig.outputs) and "Quality score" in p._sc_info.value)
    assert "relviz-cp-fks" in p._sc_info.value
    # every page says what it is
    for page in p.tabs.children:
        assert CURATOR_VIEW in page.children[0].value
    # new data: the cache is dropped, the visible tab redraws
    p.set_data(real, fake)
    assert p.comparison is not c
    assert until(lambda: bool(p._sc_fig.outputs))


def test_compare_panel_shows_errors_in_the_tab(tiny_pair: tuple[Database, Database]) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import ComparePanel

    real, fake = tiny_pair
    p = ComparePanel(real, fake, tsne_n=40)
    assert until(lambda: bool(p._deg_fig.outputs))

    def boom(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("evaluation exploded")
    p.comparison.degree_figure = boom  # type: ignore[method-assign]
    p._deg_log.value = True
    assert until(lambda: "evaluation exploded" in p._status["Degrees"].value)
