"""SDMetrics compatibility (docs/evaluation.md: in ``sdmetrics_compatible`` mode a relviz report and an
SDMetrics report on the same data give the same number).

sdmetrics 0.32 requires pandas < 3, so it cannot be installed beside relviz. The golden numbers
below were produced by ``sdmetrics==0.32.0`` (pandas 2.3.3) in a separate virtualenv on exactly this
data (``multi_table.QualityReport().generate(real, synthetic, metadata)``, default settings: below
50,000 rows SDMetrics does not subsample). Where sdmetrics can be imported, the last test compares
live as well.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.evaluate import QualityReport
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

# sdmetrics 0.32.0 on golden_frames(0, 0.0) vs golden_frames(1, 0.7)
GOLDEN_SCORE = 0.774796325708837
GOLDEN_PROPERTIES = {
    "Column Shapes": 0.8819922850059829,
    "Column Pair Trends": 0.5658718966813229,
    "Cardinality": 0.9,
    "Intertable Trends": 0.7513211211480428,
}
GOLDEN_INTERTABLE = {  # (parent column, child column): SDMetrics score (NaN: below the threshold)
    ("region", "kind"): 0.89, ("region", "amount"): np.nan, ("size", "kind"): 0.5675,
    ("opened", "kind"): 0.33, ("opened", "amount"): np.nan,
}


def golden_frames(seed: int, shift: float) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_st, n_sa = 30, 400
    region = rng.choice(["N", "S", "E"], n_st)
    size = rng.uniform(0, 100, n_st).round(1)
    stores = pd.DataFrame({"store_id": np.arange(n_st), "region": region, "size": size,
                           "opened": pd.Timestamp("2000-01-01")
                           + pd.to_timedelta(rng.integers(0, 5000, n_st), unit="D")})
    store = rng.integers(0, n_st - 3, n_sa)  # three stores without sales
    amount = np.clip(size[store] / 12 + shift + rng.normal(0, 1.0, n_sa), 0, 10)
    amount[rng.random(n_sa) < 0.05] = np.nan
    kind = np.where(region[store] == "N", "a", rng.choice(["b", "c"], n_sa)).astype(object)
    kind[rng.random(n_sa) < 0.1] = None
    sales = pd.DataFrame({"sale_id": np.arange(n_sa), "store_id": store, "kind": kind, "amount": amount,
                          "qty": (np.nan_to_num(amount) * 2 + rng.normal(0, 1, n_sa)).round(),
                          "when": pd.Timestamp("2020-01-01")
                          + pd.to_timedelta(rng.integers(0, 86400 * 300, n_sa), unit="s")})
    return {"stores": stores, "sales": sales}


def golden_schema() -> Schema:
    stores = Table("stores", ("store_id",), (Attribute.categorical("region", ["N", "S", "E"]),
                                             Attribute.numeric("size", 0, 100),
                                             Attribute.datetime("opened", "2000-01-01", "2015-01-01")))
    sales = Table("sales", ("sale_id",), (Attribute.categorical("kind", ["a", "b", "c"], nullable=True),
                                          Attribute.numeric("amount", 0, 10, nullable=True),
                                          Attribute.numeric("qty", -10, 40),
                                          Attribute.datetime("when", "2020-01-01", "2021-01-01")))
    fk = ForeignKey("sales", ("store_id",), "stores")
    return Schema((stores, sales), (fk,), PrivacyUnit(None, {fk.name: 50}))


@pytest.fixture(scope="module")
def golden() -> tuple[Database, Database]:
    return (Database(golden_schema(), golden_frames(0, 0.0)), Database(golden_schema(), golden_frames(1, 0.7)))


def test_matches_sdmetrics_quality_report(golden) -> None:
    q = QualityReport(sdmetrics_compatible=True)
    q.generate(*golden)
    props = q.get_properties().set_index("Property")["Score"]
    for name, want in GOLDEN_PROPERTIES.items():
        assert props[name] == pytest.approx(want, abs=1e-12), name
    assert q.get_score() == pytest.approx(GOLDEN_SCORE, abs=1e-12)
    d = q.get_details("Intertable Trends").set_index(["Column 1", "Column 2"])
    for key, want in GOLDEN_INTERTABLE.items():
        got = d.loc[key, "SDMetrics Score"]
        assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(want, abs=1e-12), key


def test_relviz_average_uses_all_pairs(golden) -> None:
    q = QualityReport()
    q.generate(*golden)
    p = q.get_properties().set_index("Property")
    pairs = q.get_details("Column Pair Trends")
    assert p.loc["Column Pair Trends", "Score"] == pytest.approx(pairs["Score"].mean())
    assert pairs["Score"].notna().all()  # every pair counts, not only the 3 strong ones
    assert p.loc["Column Pair Trends", "SDMetrics Score"] == pytest.approx(GOLDEN_PROPERTIES["Column Pair Trends"],
                                                                         abs=1e-12)
    assert p.loc["Column Pair Trends", "Score"] != pytest.approx(GOLDEN_PROPERTIES["Column Pair Trends"])


def test_live_against_sdmetrics(golden) -> None:
    sdmetrics = pytest.importorskip("sdmetrics", reason="sdmetrics 0.32 needs pandas < 3")
    from sdmetrics.reports.multi_table import QualityReport as SDQualityReport

    meta = {"tables": {
        "stores": {"primary_key": "store_id", "columns": {
            "store_id": {"sdtype": "id"}, "region": {"sdtype": "categorical"}, "size": {"sdtype": "numerical"},
            "opened": {"sdtype": "datetime", "datetime_format": "%Y-%m-%d"}}},
        "sales": {"primary_key": "sale_id", "columns": {
            "sale_id": {"sdtype": "id"}, "store_id": {"sdtype": "id"}, "kind": {"sdtype": "categorical"},
            "amount": {"sdtype": "numerical"}, "qty": {"sdtype": "numerical"},
            "when": {"sdtype": "datetime", "datetime_format": "%Y-%m-%d %H:%M:%S"}}}},
        "relationships": [{"parent_table_name": "stores", "parent_primary_key": "store_id",
                           "child_table_name": "sales", "child_foreign_key": "store_id"}]}
    ref = SDQualityReport()
    ref.generate(golden_frames(0, 0.0), golden_frames(1, 0.7), meta, verbose=False)
    q = QualityReport(sdmetrics_compatible=True)
    q.generate(*golden)
    assert sdmetrics.__version__.startswith("0.32")
    assert q.get_score() == pytest.approx(ref.get_score(), abs=1e-12)
