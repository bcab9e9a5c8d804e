"""``Comparison.single_table``: the single-table benchmark's measures per synthesised table (Chen,
Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data Synthesis", §8.3;
docs/evaluation.md §7.3), on a small database built here:

* ``shops`` (public, copied: never scored) ← ``orders`` (private, 3,000 rows): the target
  ``paid`` (yes / no, the first categorical attribute), ``channel`` (web / shop / phone),
  ``size`` (S / M / L / XL), ``items`` (integer 1–5), ``amount`` (numeric, five price points).
  ``paid`` is a deterministic function of ``channel`` and ``size`` with 10 % of the labels
  flipped, so a model that learns the pair predicts it well and one that does not is near chance.
  Every feature is discrete with few values (300 cells of ≈ 10 rows), so a model trained on rows
  that include the test rows (TSTR on a copy: in-sample) cannot memorise them: with a unique
  value per row (a continuous amount) a forest would, and a copy would score TSTR above TRTR;
* ``notes`` (private, 2 attributes, no categorical attribute of 2–20 categories): scored, with
  query error and ML efficacy undefined.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from relviz.comparison import SINGLE_TABLE_IN_SAMPLE_NOTE, Comparison, ml_target
from relviz.database import Database
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

N = 3000
COLUMNS = ["Table", "Rows (real)", "Rows (synthetic)", "Fidelity error", "Query error", "Target",
           "TRTR macro-F1", "TSTR macro-F1", "Note"]


def _schema() -> Schema:
    shops = Table("shops", ("shop_id",), (Attribute.categorical("city", ["A", "B"]),), public=True)
    orders = Table("orders", ("order_id",), (
        Attribute.numeric("items", 1, 5, bins=5, integer=True),
        Attribute.categorical("paid", ["yes", "no"]),
        Attribute.categorical("channel", ["web", "shop", "phone"]),
        Attribute.categorical("size", ["S", "M", "L", "XL"]),
        Attribute.numeric("amount", 0, 100, bins=10),
    ))
    notes = Table("notes", ("note_id",), (
        Attribute.categorical("code", [f"c{i}" for i in range(30)]),  # 30 categories: not a target
        Attribute.numeric("score", 0, 1, bins=4),
    ))
    fk = ForeignKey("orders", ("shop_id",), "shops", ("shop_id",))
    return Schema((shops, orders, notes), (fk,), PrivacyUnit(None), name="orders")


def _real(seed: int = 0) -> Database:
    rng = np.random.default_rng(seed)
    channel = rng.choice(["web", "shop", "phone"], N)
    size = rng.choice(["S", "M", "L", "XL"], N)
    rule = (np.isin(channel, ["web"]) ^ np.isin(size, ["L", "XL"]))  # needs both columns
    flip = rng.random(N) < 0.1
    paid = np.where(rule ^ flip, "yes", "no")
    orders = pd.DataFrame({"order_id": np.arange(N), "shop_id": rng.integers(1, 3, N),
                           "items": rng.integers(1, 6, N), "channel": channel, "size": size,
                           "amount": rng.choice([9.99, 19.99, 49.5, 75.0, 99.0], N), "paid": paid})
    notes = pd.DataFrame({"note_id": np.arange(200), "code": rng.choice([f"c{i}" for i in range(30)], 200),
                          "score": rng.uniform(0, 1, 200)})
    shops = pd.DataFrame({"shop_id": [1, 2], "city": ["A", "B"]})
    return Database(_schema(), {"shops": shops, "orders": orders, "notes": notes})


def _independent(real: Database, seed: int = 1) -> Database:
    """Every attribute column permuted on its own: right 1-way marginals, no association."""
    rng = np.random.default_rng(seed)
    frames = {}
    for name in real.table_names:
        df = real[name].copy()
        for a in real.schema.table(name).attribute_names:
            df[a] = df[a].to_numpy()[rng.permutation(len(df))]
        frames[name] = df
    return Database(real.schema, frames)


@pytest.fixture(scope="module")
def real() -> Database:
    return _real()


def _row(df: pd.DataFrame, table: str) -> dict:
    rows = df[df["Table"] == table].to_dict(orient="records")
    assert len(rows) == 1
    return rows[0]


def test_target_rule_reads_the_schema_only() -> None:
    s = _schema()
    assert ml_target(s.table("orders")) == "paid"  # the first categorical with 2–20 categories
    assert ml_target(s.table("notes")) is None  # 30 categories


def test_copy_scores_perfect_fidelity_and_tstr_near_trtr(real: Database) -> None:
    before = {n: real[n].copy(deep=True) for n in real.table_names}
    copy = Database(real.schema, {n: real[n].copy() for n in real.table_names})
    seen: list[tuple[float, str]] = []
    cmp = Comparison(real, copy, random_state=0)
    df = cmp.single_table(lambda f, m: seen.append((f, m)))
    assert list(df.columns) == COLUMNS
    assert list(df["Table"]) == ["orders", "notes"]  # the public table is copied, not synthesised
    o = _row(df, "orders")
    assert (o["Rows (real)"], o["Rows (synthetic)"]) == (N, N)
    assert o["Fidelity error"] == pytest.approx(0.0, abs=1e-12)  # same rows: every 2-way TVD is 0
    assert o["Query error"] == pytest.approx(0.0, abs=1e-12)
    assert o["Target"] == "paid"
    # Tolerance: both models are tested on the same fixed 20 % (≈ 600 rows); a macro-F1 there has a
    # sampling standard deviation ≤ √(0.25 / 600) ≈ 0.02. TSTR (trained on all the rows, test rows
    # included: in-sample) and TRTR (the other 80 %) learn the same majority label in each cell of
    # ≈ 10 rows, so they differ by less than 3 standard deviations: 0.06.
    assert not math.isnan(o["TRTR macro-F1"]) and o["TSTR macro-F1"] == pytest.approx(o["TRTR macro-F1"], abs=0.06)
    n = _row(df, "notes")
    assert n["Fidelity error"] == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(n["Query error"]) and "3 attributes" in n["Note"]
    assert n["Target"] == "" and math.isnan(n["TRTR macro-F1"]) and math.isnan(n["TSTR macro-F1"])
    assert "no ML target" in n["Note"]
    assert df.attrs["notes"][0] == SINGLE_TABLE_IN_SAMPLE_NOTE and "in-sample" in SINGLE_TABLE_IN_SAMPLE_NOTE
    assert not any("sample of" in x for x in df.attrs["notes"])  # under the cap: every row read
    # progress: per table and measure, then done
    assert [round(f, 3) for f, _ in seen] == [0.0, 0.167, 0.333, 0.5, 0.667, 0.833, 1.0]
    assert "orders" in seen[0][1] and "notes" in seen[3][1] and "ML efficacy" in seen[5][1]
    # the inputs are untouched
    for name, frame in before.items():
        pd.testing.assert_frame_equal(real[name], frame)
        pd.testing.assert_frame_equal(copy[name], frame)


def test_independent_columns_score_worse(real: Database) -> None:
    fake = _independent(real)
    o = _row(Comparison(real, fake, random_state=0).single_table(), "orders")
    copy = _row(Comparison(real, real, random_state=0).single_table(), "orders")
    # Permutations keep every 1-way marginal, so every 2-way TVD is the sampling noise of an
    # independent table (≈ √(cells / N) / 2 ≈ 0.05 for the 3 × 4 and 100-bin pairs) plus the lost
    # association of channel × size × paid; either way far above the copy's 0.
    assert o["Fidelity error"] > copy["Fidelity error"] + 0.02
    assert o["Query error"] > copy["Query error"]
    # Without channel × size the target is near chance (macro-F1 ≈ 0.5 for 2 classes), while the
    # real rows carry it (TRTR ≈ 0.9): a gap of 0.15 is ≥ 7 standard deviations (≈ 0.02).
    assert o["TRTR macro-F1"] == pytest.approx(copy["TRTR macro-F1"])  # same real split and models
    assert o["TSTR macro-F1"] < o["TRTR macro-F1"] - 0.15


def test_large_tables_are_sampled_and_said_so(real: Database) -> None:
    cmp = Comparison(real, real, random_state=3)
    df = cmp.single_table(max_rows=500, max_query_rows=1000)
    o = _row(df, "orders")
    assert (o["Rows (real)"], o["Rows (synthetic)"]) == (N, N)  # the full sizes are reported
    assert "query error on 1,000 real and 1,000 synthetic sampled rows" in o["Note"]
    assert "ML efficacy on 500 real and 500 synthetic sampled rows" in o["Note"]
    assert any("uniform sample of 1,000 rows" in x and "query error: orders" in x for x in df.attrs["notes"])
    assert any("uniform sample of 500 rows" in x and "ML efficacy: orders" in x for x in df.attrs["notes"])
    assert "sampled" not in _row(df, "notes")["Note"]  # 200 rows: under the caps
    # the fidelity error reads every row (a copy: 0); two samples of one table differ a little
    assert o["Fidelity error"] == pytest.approx(0.0, abs=1e-12)
    assert 0 < o["Query error"] < 0.05
    # the same seed draws the same samples
    again = Comparison(real, real, random_state=3).single_table(max_rows=500, max_query_rows=1000)
    pd.testing.assert_frame_equal(df, again)
    with pytest.raises(ValueError, match="at least 10"):
        cmp.single_table(max_rows=5)


def test_second_call_is_a_cache_hit(real: Database) -> None:
    cmp = Comparison(real, _independent(real), random_state=0)
    first = cmp.single_table()
    misses, hits = cmp.misses, cmp.hits
    calls: list[float] = []
    second = cmp.single_table(lambda f, m: calls.append(f))
    assert second is first and cmp.misses == misses and cmp.hits == hits + 1
    assert calls == []  # nothing recomputed, no progress
    assert cmp.cached(("single_table", 20_000, 100_000))


def test_compare_panel_scores_tab_shows_the_single_table_block(real: Database) -> None:
    """The Scores tab (no browser): the block comes after the two reports, one row per synthesised
    table with numbers, a tooltip per column and the in-sample note; a revisit reuses the cache."""
    pytest.importorskip("ipywidgets")
    from relviz.ui import ComparePanel
    from relviz.ui.compare import SINGLE_TABLE_TIPS
    from tests.conftest import until

    fake = _independent(real)
    p = ComparePanel(real, fake)
    p.select("Scores")
    assert until(lambda: "relviz-cp-single'" in p._sc_single.value, timeout=120)
    v = p._sc_single.value
    assert "Quality score" in p._sc_info.value and "relviz-cp-fks" in p._sc_info.value
    assert "Single tables (Chen et al. benchmark)" in v
    assert v.count("<tr data-table=") == 2 and "data-table='shops'" not in v
    df = p.comparison.single_table()
    o = _row(df, "orders")
    assert f">{o['Fidelity error']:.3g}<" in v and f">{o['TSTR macro-F1']:.3g}<" in v
    assert v.count("title='") == len(SINGLE_TABLE_TIPS)  # one tooltip per column
    assert "in-sample" in v and "benchmarks/single_table.py" in v
    # done: the status line clears after the block is drawn (the same background thread, a
    # moment later: a fresh-clone run under load read it in between)
    assert until(lambda: p._status["Scores"].value == "", timeout=30)
    # a redraw (e.g. another FK chosen below) reads every report from the cache
    misses, hits = p.comparison.misses, p.comparison.hits
    p._refresh("Scores")
    assert until(lambda: p.comparison.hits >= hits + 3 and p._status["Scores"].value == "")
    assert p.comparison.misses == misses and "relviz-cp-single'" in p._sc_single.value
