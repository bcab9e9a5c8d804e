"""Comparison: cached evaluation per selection, figures returned, progress for t-SNE (no browser)."""

from __future__ import annotations

import math
import threading

import plotly.graph_objects as go
import pytest

from relviz.comparison import Comparison, epsilon_sweep, utility_summary
from relviz.database import Database
from relviz.plan import Plan
from relviz.plots import CURATOR_VIEW, REAL_COLOR, SYNTHETIC_COLOR
from relviz.synthesizer import RelationalSynthesizer


@pytest.fixture(scope="module")
def pair() -> tuple[Database, Database]:
    from tests.conftest import tiny_frames, tiny_schema

    real = Database(tiny_schema(), tiny_frames(n_h=80))
    plan = Plan.default(real.schema, 2.0, 1e-6, mechanism="independent")
    return real, RelationalSynthesizer(plan, random_state=0).fit(real).sample()


def _subtitle(fig: go.Figure) -> str:
    return fig.layout.title.subtitle.text


def test_selections_and_degrees_are_cached(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    c = Comparison(real, fake)
    assert c.foreign_keys == ("households.region->regions", "persons.hid->households")
    keys = [s.key for s in c.selections()]
    # what was synthesised first: private tables, joins with a private child, then public tables
    assert keys == ["table:households", "table:persons", "join:households.region->regions",
                    "join:persons.hid->households", "table:regions"]
    assert c.tables == ("households", "persons", "regions")
    assert [s.key for s in c.selections(min_attributes=3)] == ["join:households.region->regions",
                                                               "join:persons.hid->households"]
    assert c.selection("join:persons.hid->households").kwargs() == {"fk": "persons.hid->households"}
    with pytest.raises(KeyError):
        c.selection("table:nope")
    fk = "persons.hid->households"
    d1 = c.degrees(fk)
    assert c.cache_info()["misses"] == 1 and c.hits == 0
    assert c.degrees(fk) is d1 and c.hits == 1
    fig = c.degree_figure(fk, kind="ccdf")
    assert c.hits == 2 and c.misses == 1  # the figure reused the cached degrees
    assert {t.name for t in fig.data} == {"Real", "Synthetic"}
    assert fig.layout.xaxis.type == "log"
    bars = c.degree_figure(fk, kind="bar", log_y=True)
    colours = {t.name: t.marker.color for t in bars.data}
    assert colours == {"Real": REAL_COLOR, "Synthetic": SYNTHETIC_COLOR}
    assert bars.layout.yaxis.type == "log"
    assert _subtitle(bars) == CURATOR_VIEW
    assert 0 <= d1.score <= 1


def test_associations_for_a_table_and_a_join(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    c = Comparison(real, fake)
    a = c.associations(table="persons")
    assert list(a.real.index) == ["sex", "age"]
    assert c.associations(table="persons") is a
    j = c.associations(fk="persons.hid->households")
    assert len(j.real) == 4  # persons' two attributes, then the households' two
    fig = c.association_figure(fk="persons.hid->households")
    assert [t.name for t in fig.data] == ["Real", "Synthetic", "Difference"]
    assert _subtitle(fig) == CURATOR_VIEW
    with pytest.raises(ValueError):
        c.associations()
    assert ("associations", "join:persons.hid->households") in c.cache_info()["keys"]


def test_embedding_cached_per_selection_and_n_colour_independent(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    c = Comparison(real, fake)
    seen: list[tuple[float, str]] = []
    fig = c.embedding_figure(table="persons", n=60, progress=lambda f, m: seen.append((f, m)))
    assert seen and seen[-1][0] == 1.0 and any("t-SNE" in m for _, m in seen)
    assert {t.name for t in fig.data} == {"Real", "Synthetic"}
    assert "60 real + 60 synthetic rows" in fig.layout.title.text
    misses = c.misses
    seen.clear()
    by_attr = c.embedding_figure(table="persons", n=60, color="sex", progress=lambda f, m: seen.append((f, m)))
    assert c.misses == misses and not seen  # re-colouring reuses the cached map, no progress
    assert len(by_attr.data) >= 2
    assert ("embedding", "table:persons", 60) in c.cache_info()["keys"]
    c.embedding(table="persons", n=40)  # another sample size is another key
    assert c.misses == misses + 1
    e = c.embedding(fk="persons.hid->households", n=40)
    assert e.n_real == 40 and "households" in " ".join(e.attributes)


def test_one_computation_per_key_across_threads(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    c = Comparison(real, fake)
    calls = []
    gate = threading.Event()

    def slow() -> int:
        calls.append(1)
        gate.wait(5)
        return 42

    out: list[int] = []
    threads = [threading.Thread(target=lambda: out.append(c._get(("k",), slow))) for _ in range(3)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert out == [42, 42, 42] and len(calls) == 1
    assert c.misses == 1 and c.hits == 2


def test_marginals_and_scores(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    c = Comparison(real, fake)
    f = c.frequencies("households", "tenure")
    assert set(f["Source"]) == {"Real", "Synthetic"}
    fig = c.frequency_figure("households", "tenure")
    assert {t.name for t in fig.data} == {"Real", "Synthetic"} and _subtitle(fig) == CURATOR_VIEW
    assert set(c.one_way()["Table"]) >= {"households", "persons"}
    props = c.quality().get_properties()
    assert list(props["Property"]) == ["Column Shapes", "Column Pair Trends", "Cardinality", "Intertable Trends"]
    sf = c.scores_figure()
    assert sf.layout.yaxis.range == (0, 1)
    rel = c.relational()
    assert "persons.hid->households" in rel.cross_table
    assert c.relational() is rel
    ct = c.cross_table_figure("persons.hid->households")
    assert "3-way cross-table error" in ct.layout.title.text
    with pytest.raises(KeyError):
        c.cross_table_figure("no such fk")
    assert "hits" in repr(c)


def test_utility_summary_and_epsilon_sweep(pair: tuple[Database, Database]) -> None:
    real, fake = pair
    u = utility_summary(real, fake)
    assert set(u["degree_similarity"]) == {"households.region->regions", "persons.hid->households"}
    assert all(0 <= v <= 1 for v in u["degree_similarity"].values())
    assert u["cross_table_error"] and all(0 <= v <= 2 for v in u["cross_table_error"].values())
    assert 0 <= u["mean_two_way_tvd"] <= 1 and not math.isnan(u["mean_cross_table_error"])
    plan = Plan.default(real.schema, 1.0, 1e-6, mechanism="independent")
    steps: list[float] = []
    sweep = epsilon_sweep(real, [4.0, 0.5], plan=plan, progress=lambda f, m: steps.append(f))
    assert sweep.epsilons == (0.5, 4.0)
    assert steps[-1] == 1.0 and steps == sorted(steps)
    frame = sweep.frame()
    assert set(frame["Metric"]) == {"Degree similarity", "3-way error", "Mean 2-way TVD"}
    assert set(frame["Epsilon"]) == {0.5, 4.0}
    t = sweep.timings()
    assert list(t["Epsilon"]) == [0.5, 4.0] and (t["total"] > 0).all()
    assert sweep.rho[4.0] > sweep.rho[0.5]


# -- the panel over Comparison, driven from Python (no browser) -----------------------------------

def _until(pred, timeout: float = 60.0) -> bool:  # noqa: ANN001
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def _traces(out) -> list[dict]:  # noqa: ANN001
    return out.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"] if out.outputs else []


def test_compare_panel_tabs_render_lazily_and_reuse_the_cache(pair: tuple[Database, Database]) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import ComparePanel

    real, fake = pair
    empty = ComparePanel()
    assert empty.comparison is None and "no synthetic database yet" in empty._banner.value
    p = ComparePanel(real, fake, tsne_n=40)
    c = p.comparison
    assert isinstance(c, Comparison)
    # the visible tab (Degrees) renders at once; the others wait until shown
    assert _until(lambda: len(_traces(p._deg_fig)) == 2)
    assert "data-score=" in p._deg_info.value and not p._ts_fig.outputs
    assert p._deg_fk.options[0][1] == "households.region->regions"
    p._deg_kind.value = "ccdf"
    assert _until(lambda: _traces(p._deg_fig) and _traces(p._deg_fig)[0]["type"] == "scatter")
    # t-SNE: progress while computing, then the map; re-colouring hits the cache
    p.select("t-SNE")
    assert _until(lambda: "Compute map" in p._status["t-SNE"].value)  # heavy: waits for the button
    assert not p._ts_fig.outputs
    p._ts_compute.click()
    assert _until(lambda: len(_traces(p._ts_fig)) == 2)
    assert "40 real + 40 synthetic rows" in p._ts_info.value and "data-cached='false'" in p._ts_info.value
    key = ("embedding", "table:households", 40)
    assert key in c.cache_info()["keys"]
    misses = c.misses
    p._ts_color.value = "tenure"
    assert _until(lambda: "data-cached='true'" in p._ts_info.value)
    assert c.misses == misses
    p._ts_n.value = 30  # another sample size: computed (and cached) once more, on request
    assert _until(lambda: "Compute map" in p._status["t-SNE"].value)
    p._ts_compute.click()
    assert _until(lambda: "data-n='30'" in p._ts_info.value)
    assert c.misses == misses + 1
    # the other tabs
    p.select("Correlations")
    assert _until(lambda: len(_traces(p._cor_fig)) == 3)
    assert "mean |synthetic − real|" in p._cor_info.value
    p.select("Marginals")
    assert _until(lambda: len(_traces(p._mar_fig)) == 2)
    p._mar_table.value = "persons"
    assert list(p._mar_attr.options) == [("sex", "sex"), ("age", "age")]
    p.select("Scores")
    assert _until(lambda: bool(p._sc_fig.outputs) and "Quality score" in p._sc_info.value)
    assert "relviz-cp-fks" in p._sc_info.value
    # every page says what it is
    for page in p.tabs.children:
        assert CURATOR_VIEW in page.children[0].value
    # new data: the cache is dropped, the visible tab redraws
    p.set_data(real, fake)
    assert p.comparison is not c
    assert _until(lambda: bool(p._sc_fig.outputs))


def test_compare_panel_shows_errors_in_the_tab(pair: tuple[Database, Database]) -> None:
    pytest.importorskip("ipywidgets")
    from relviz.ui import ComparePanel

    real, fake = pair
    p = ComparePanel(real, fake, tsne_n=40)
    assert _until(lambda: bool(p._deg_fig.outputs))

    def boom(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise RuntimeError("evaluation exploded")
    p.comparison.degree_figure = boom  # type: ignore[method-assign]
    p._deg_log.value = True
    assert _until(lambda: "evaluation exploded" in p._status["Degrees"].value)
