"""Comparison: cached evaluation per selection, figures returned, progress for t-SNE (no browser; the
panel over it is tested in tests/ui/test_compare.py, the ε sweep in tests/test_sweep.py)."""

from __future__ import annotations

import math
import threading

import plotly.graph_objects as go
import pytest

from relviz.comparison import Comparison, utility_summary
from relviz.database import Database
from relviz.plots import CURATOR_VIEW, REAL_COLOR, SYNTHETIC_COLOR


def _subtitle(fig: go.Figure) -> str:
    return fig.layout.title.subtitle.text


def test_selections_and_degrees_are_cached(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
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


def test_associations_for_a_table_and_a_join(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
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


def test_embedding_cached_per_selection_and_n_colour_independent(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
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


def test_one_computation_per_key_across_threads(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
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


def test_marginals_and_scores(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
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


def test_utility_summary(tiny_pair: tuple[Database, Database]) -> None:
    real, fake = tiny_pair
    u = utility_summary(real, fake)
    assert set(u["degree_similarity"]) == {"households.region->regions", "persons.hid->households"}
    assert all(0 <= v <= 1 for v in u["degree_similarity"].values())
    assert u["cross_table_error"] and all(0 <= v <= 2 for v in u["cross_table_error"].values())
    assert 0 <= u["mean_two_way_tvd"] <= 1 and not math.isnan(u["mean_cross_table_error"])
