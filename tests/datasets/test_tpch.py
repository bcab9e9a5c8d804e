"""The TPC-H dataset (relviz.datasets.tpch): schema, encodings, the four correlation revisions,
determinism and the cache.

Everything runs at sf 0.01 (60,175 line items before the revisions) in a temporary cache folder
(``cache_dir``), generated once per module by ``tpchgen-cli``. Statistical checks use tolerances
of four binomial standard deviations (the data are deterministic, so a check passes or fails for
good; four SDs leave room for any seed).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

import relviz.datasets as datasets
from relviz.database import Database
from relviz.datasets import tpch
from relviz.schema import Schema

SF = 0.01
try:
    tpch._generator()
except RuntimeError:  # pragma: no cover - the generator is a project dependency
    pytest.skip("tpchgen-cli is not installed", allow_module_level=True)

ROWS_UNREVISED = {"region": 5, "nation": 25, "supplier": 100, "customer": 1_500, "part": 2_000,
                  "partsupp": 8_000, "orders": 15_000, "lineitem": 60_175}
ROWS_REVISED = {**ROWS_UNREVISED, "orders": 5_156, "lineitem": 19_772}  # seed 0


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tpch-cache")


@pytest.fixture(scope="module")
def revised(cache: Path) -> dict[str, pd.DataFrame]:
    return tpch.tables(SF, 0, True, cache_dir=cache)


@pytest.fixture(scope="module")
def unrevised(cache: Path) -> dict[str, pd.DataFrame]:
    return tpch.tables(SF, 0, False, cache_dir=cache)


@pytest.fixture(scope="module")
def raw(cache: Path) -> dict[str, pd.DataFrame]:
    return tpch.raw_tables(SF, cache_dir=cache)


@pytest.fixture(scope="module")
def log(cache: Path, revised: dict) -> dict:
    return tpch.revision_log(SF, 0, True, cache_dir=cache)


def _lines_per_order(raw: dict[str, pd.DataFrame]) -> pd.Series:
    return raw["lineitem"].groupby("l_orderkey").size()


# -- schema and loading --------------------------------------------------------------------------

def test_registered_and_loads_through_the_registry(cache: Path) -> None:
    assert "tpch" in datasets.available()
    db = datasets.load("tpch", sf=SF, seed=0, revisions=True, cache_dir=cache)
    assert datasets.load("tpch", sf=SF, seed=0, revisions=True, cache_dir=cache) is db
    assert db.problems() == []
    assert db.row_counts() == ROWS_REVISED
    assert db.schema.table("lineitem").attribute("l_quantity").upper == 100
    plain = datasets.load("tpch", sf=SF, revisions=False, cache_dir=cache)
    assert plain.row_counts() == ROWS_UNREVISED
    assert plain.schema.table("lineitem").attribute("l_quantity").upper == 50
    info = datasets.describe("tpch")
    assert info.title and info.source and info.licence and info.notes == tpch.__doc__


def test_schema_is_written_and_validates(revised: dict, unrevised: dict) -> None:
    for frames, rev in ((revised, True), (unrevised, False)):
        s = tpch.schema(frames)
        assert s == tpch.schema(revisions=rev)
        assert Database(s, frames, validate=False).problems() == []
    s = tpch.schema()
    assert s.table_names == ("region", "nation", "supplier", "customer", "part", "partsupp",
                             "orders", "lineitem")
    assert s.private_tables == ("orders", "lineitem")
    assert s.problems() == [] and s.inferred_problems() == []
    assert all(a.provenance == "declared" for t in s.tables for a in t.attributes)
    fks = {fk.name: fk for fk in s.foreign_keys}
    assert len(fks) == 8
    ps = fks[tpch.FK_PARTSUPP]
    assert ps.columns == ("l_partkey", "l_suppkey") and ps.parent_columns == ("ps_partkey", "ps_suppkey")
    assert {(fk.child, fk.parent) for fk in s.foreign_keys} == {
        ("nation", "region"), ("supplier", "nation"), ("customer", "nation"), ("partsupp", "part"),
        ("partsupp", "supplier"), ("orders", "customer"), ("lineitem", "orders"),
        ("lineitem", "partsupp")}
    unit = s.privacy_unit
    assert unit.entity == "orders" and unit.caps == {tpch.FK_ORDERS: 7}
    assert "1 to 7 line items" in unit.rationale
    assert Schema.from_json(s.to_json()) == s


def test_composite_fk_links_every_line_item(revised: dict) -> None:
    db = Database(tpch.schema(revised), revised)
    idx = db.parent_index(tpch.FK_PARTSUPP)
    assert (idx >= 0).all()
    ps = revised["partsupp"].iloc[idx]
    li = revised["lineitem"]
    assert (ps["ps_partkey"].to_numpy() == li["l_partkey"].to_numpy()).all()
    assert (ps["ps_suppkey"].to_numpy() == li["l_suppkey"].to_numpy()).all()
    assert db.degrees(tpch.FK_ORDERS).max() <= tpch.ORDER_CAP


def test_docstring_states_the_row_counts() -> None:
    doc = tpch.__doc__
    for t in ("orders", "lineitem"):
        assert re.search(rf"{t} {ROWS_UNREVISED[t]:,} → {ROWS_REVISED[t]:,}", doc), t
    for t in ("region", "nation", "supplier", "customer", "part", "partsupp"):
        assert re.search(rf"{t} {ROWS_UNREVISED[t]:,}\b", doc), t


def test_encoding_round_trips_the_tpch_columns(unrevised: dict, raw: dict) -> None:
    li, o, p = unrevised["lineitem"], unrevised["orders"], unrevised["part"]
    r = raw["lineitem"].merge(raw["orders"], left_on="l_orderkey", right_on="o_orderkey")
    assert (li[["l_orderkey", "l_linenumber"]].to_numpy()
            == r[["l_orderkey", "l_linenumber"]].to_numpy()).all()
    od = pd.to_datetime(pd.DataFrame({"year": o["o_year"], "month": o["o_month"], "day": o["o_day"]}))
    assert (od.to_numpy() == raw["orders"]["o_orderdate"].to_numpy()).all()
    day = pd.Timedelta(days=1)
    assert ((r["l_shipdate"] - r["o_orderdate"]) / day == li["l_shipdelta"]).all()
    assert ((r["l_commitdate"] - r["o_orderdate"]) / day - 30 == li["l_commitdelta"]).all()
    assert ((r["l_receiptdate"] - r["l_shipdate"]) / day == li["l_receiptdelta"]).all()
    assert (r["l_quantity"] == li["l_quantity"]).all()
    assert (np.round(r["l_discount"] * 100) == li["l_discount"]).all()
    price = p.set_index("p_partkey")["p_retailprice"].reindex(li["l_partkey"]).to_numpy()
    np.testing.assert_allclose(li["l_quantity"] * price, r["l_extendedprice"], rtol=1e-12)
    assert (p["p_green"] == raw["part"]["p_name"].str.contains("green")).all()
    assert (li["l_shipmode"] == r["l_shipmode"]).all()


def test_unrevised_tables_are_encoded_in_duckdb_like_in_pandas(unrevised: dict, cache: Path,
                                                               tmp_path: Path) -> None:
    """The unrevised tables are written by DuckDB straight to Parquet (out of core, for large
    scale factors); read back they equal the in-memory encoding the revisions start from, value
    for value, with the same dtypes and row order, and no spill folder is left behind."""
    raw_dir = tpch._raw_dir(SF, cache)
    tpch._encode_to_parquet(raw_dir, tmp_path)
    in_pandas = tpch._encoded(raw_dir)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{t}.parquet" for t in tpch.TABLES)
    for t in tpch.TABLES:
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"{t}.parquet"), in_pandas[t])
        pd.testing.assert_frame_equal(unrevised[t], in_pandas[t])


# -- the revisions --------------------------------------------------------------------------------

def test_weights_in_their_ranges(log: dict) -> None:
    tw, bw = log["type_weights"], log["brand_weights"]
    assert set(tw) == set(tpch.TYPES) and len(tw) == 150
    assert set(bw) == set(tpch.BRANDS) and len(bw) == 25
    assert all(0.2 <= w <= 1.0 for w in tw.values())
    assert all(0.2 <= w <= 2.0 for w in bw.values())
    assert np.std(list(bw.values())) > 0.2  # drawn, not constant


def test_quantity_scaled_by_type_and_brand_weights(revised: dict, raw: dict, log: dict) -> None:
    li = revised["lineitem"].merge(raw["lineitem"][["l_orderkey", "l_linenumber", "l_quantity"]],
                                   on=["l_orderkey", "l_linenumber"], suffixes=("", "_raw"))
    assert len(li) == len(revised["lineitem"])  # every revised line item is a generated one
    part = revised["part"].set_index("p_partkey")
    w = (part["p_type"].map(log["type_weights"]) * part["p_brand"].map(log["brand_weights"]))
    expected = np.maximum(1, np.floor(li["l_quantity_raw"] * w.reindex(li["l_partkey"]).to_numpy() + 0.5))
    assert (li["l_quantity"].to_numpy() == expected.to_numpy()).all()
    assert 1 <= li["l_quantity"].min() and li["l_quantity"].max() <= 100
    assert li["l_quantity"].max() > 50  # the revised domain is used


def test_customer_skew_per_year(revised: dict, raw: dict, log: dict) -> None:
    o = revised["orders"]
    heavy = log["heavy_customers"]
    assert sorted(heavy) == list(range(1992, 1999))
    for y, keys in heavy.items():
        assert len(keys) == round(0.15 * ROWS_UNREVISED["customer"]) == len(set(keys))
        stats = log["orders_per_year"][y]
        assert stats["to_heavy"] == int(np.floor(0.4 * stats["orders"] + 0.5))
        oy = o[o["o_year"] == y]
        share = oy["o_custkey"].isin(keys).mean()
        sd = np.sqrt(0.4 * 0.6 / len(oy))
        assert abs(share - 0.4) < 4 * sd, (y, share, sd)
    # the sets differ between years
    assert len(set(heavy[1993]) & set(heavy[1994])) < 0.3 * len(heavy[1993])
    # unrevised: the heavy sets hold their natural ~15 %
    o0 = raw["orders"]
    y0 = o0["o_orderdate"].dt.year == 1995
    assert o0.loc[y0, "o_custkey"].isin(heavy[1995]).mean() < 0.25


def test_drop_rule_per_year(revised: dict, raw: dict) -> None:
    n_lines = _lines_per_order(raw)
    o0 = raw["orders"].assign(n=lambda d: d["o_orderkey"].map(n_lines),
                              year=lambda d: d["o_orderdate"].dt.year)
    o0["kept"] = o0["o_orderkey"].isin(revised["orders"]["o_orderkey"])
    for y, g in o0.groupby("year"):
        exempt = g["n"] == y - 1992
        assert g.loc[exempt, "kept"].all(), y
        if y == 1992:
            assert not exempt.any()
        else:
            assert exempt.sum() > 100
        rate, n = g.loc[~exempt, "kept"].mean(), int((~exempt).sum())
        assert abs(rate - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n), (y, rate, n)
    # the cascade: kept orders keep all their line items, dropped ones none
    li = revised["lineitem"]
    assert set(li["l_orderkey"]) == set(revised["orders"]["o_orderkey"])
    kept_lines = li.groupby("l_orderkey").size()
    assert (kept_lines == n_lines.reindex(kept_lines.index)).all()


def test_shipmode_depends_on_priority(revised: dict, unrevised: dict) -> None:
    def table(frames: dict) -> pd.DataFrame:
        pr = frames["orders"].set_index("o_orderkey")["o_orderpriority"]
        li = frames["lineitem"]
        return pd.crosstab(li["l_orderkey"].map(pr), li["l_shipmode"]).reindex(
            index=list(tpch.PRIORITIES), columns=list(tpch.SHIPMODES))

    t = table(revised)
    stat, p, dof, _ = chi2_contingency(t.to_numpy())
    assert dof == 24 and p < 1e-50
    # each priority's modes follow its row of SHIPMODE_WEIGHTS
    for prio, row in t.iterrows():
        w = np.asarray(tpch.SHIPMODE_WEIGHTS[prio], dtype=float)
        w /= w.sum()
        n = row.sum()
        emp = row.to_numpy() / n
        assert np.all(np.abs(emp - w) < 4 * np.sqrt(w * (1 - w) / n) + 1e-9), prio
    # unrevised, the generator draws the mode independently of the priority
    _, p0, _, _ = chi2_contingency(table(unrevised).to_numpy())
    assert p0 > 1e-3


def test_revisions_leave_the_rest_alone(revised: dict, unrevised: dict) -> None:
    for t in ("region", "nation", "supplier", "customer", "part", "partsupp"):
        pd.testing.assert_frame_equal(revised[t], unrevised[t])
    kept = unrevised["orders"].set_index("o_orderkey").loc[revised["orders"]["o_orderkey"]]
    for c in ("o_orderstatus", "o_year", "o_month", "o_day", "o_orderpriority"):
        assert (kept[c].to_numpy() == revised["orders"][c].to_numpy()).all(), c
    li0 = unrevised["lineitem"].set_index(["l_orderkey", "l_linenumber"]).loc[
        pd.MultiIndex.from_frame(revised["lineitem"][["l_orderkey", "l_linenumber"]])]
    for c in ("l_partkey", "l_suppkey", "l_discount", "l_shipdelta", "l_commitdelta",
              "l_receiptdelta", "l_shipinstruct"):
        assert (li0[c].to_numpy() == revised["lineitem"][c].to_numpy()).all(), c


# -- determinism and the cache --------------------------------------------------------------------

def test_deterministic_per_seed(tmp_path: Path, revised: dict, unrevised: dict, cache: Path) -> None:
    again = tpch.tables(SF, 0, True, cache_dir=tmp_path)  # generated from scratch
    for t in revised:
        pd.testing.assert_frame_equal(again[t], revised[t])
    other = tpch.tables(SF, 1, True, cache_dir=cache)
    assert not other["orders"]["o_custkey"].equals(revised["orders"]["o_custkey"])
    assert tpch.revision_log(SF, 1, True, cache_dir=cache)["type_weights"] != \
        tpch.revision_log(SF, 0, True, cache_dir=cache)["type_weights"]
    # unrevised data do not depend on the seed
    assert tpch.tables(SF, 5, False, cache_dir=cache)["lineitem"].equals(unrevised["lineitem"])


def test_cache_layout_and_fast_hit(cache: Path, revised: dict) -> None:
    folder = cache / f"sf{SF:g}-seed0-rev1"
    assert {p.name for p in folder.iterdir()} == {f"{t}.parquet" for t in revised} | {"revisions.json"}
    assert (cache / f"raw-sf{SF:g}" / "lineitem.parquet").is_file()
    t0 = time.perf_counter()
    tpch.tables(SF, 0, True, cache_dir=cache)
    assert time.perf_counter() - t0 < 2.0


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RELVIZ_CACHE_DIR", str(tmp_path))
    assert tpch.cache_root() == tmp_path / "tpch"
    monkeypatch.delenv("RELVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tpch.cache_root() == tmp_path / "xdg" / "relviz" / "tpch"
    with pytest.raises(ValueError):
        tpch.tables(-1, cache_dir=tmp_path)
