"""Association measures, matrices and Intertable Trends (docs/evaluation.md §2, §4), hand-computed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from relviz.evaluate import associations, intertable_trends
from relviz.evaluate._common import correlation_ratio, cramers_v_table, pearson
from relviz.evaluate.correlation import pearson_matrix


def test_cramers_v_by_hand() -> None:
    assert cramers_v_table(np.array([[5, 0], [0, 5]])) == pytest.approx(1.0)  # perfect association
    assert cramers_v_table(np.array([[5, 5], [5, 5]])) == pytest.approx(0.0)  # independence
    # 2×2 with chi² = n·(ad − bc)²/(r1 r2 c1 c2) = 20·(8·6 − 2·4)²/(10·10·12·8) → V = sqrt(chi²/n)
    t = np.array([[8, 2], [4, 6]])
    assert cramers_v_table(t) == pytest.approx(math.sqrt((8 * 6 - 2 * 4) ** 2 / (10 * 10 * 12 * 8)))
    assert math.isnan(cramers_v_table(np.array([[3, 4]])))  # one row: undefined
    # empty rows/columns are dropped first
    assert cramers_v_table(np.array([[5, 0, 0], [0, 0, 5]])) == pytest.approx(1.0)


def test_correlation_ratio_by_hand() -> None:
    cats = np.array([0, 0, 1, 1])
    assert correlation_ratio(cats, np.array([1.0, 1.0, 3.0, 3.0]), 2) == pytest.approx(1.0)
    assert correlation_ratio(cats, np.array([1.0, 3.0, 1.0, 3.0]), 2) == pytest.approx(0.0)
    # groups {1, 2} and {4, 5}: grand mean 3, SS_between = 2·1.5² + 2·1.5² = 9, SS_total = 10
    assert correlation_ratio(cats, np.array([1.0, 2.0, 4.0, 5.0]), 2) == pytest.approx(math.sqrt(0.9))
    assert correlation_ratio(cats, np.array([1.0, np.nan, 4.0, 5.0]), 2) == pytest.approx(
        math.sqrt(((1 - 10 / 3) ** 2 + 2 * (4.5 - 10 / 3) ** 2) / ((1 - 10 / 3) ** 2 + (4 - 10 / 3) ** 2
                                                                    + (5 - 10 / 3) ** 2)))
    assert math.isnan(correlation_ratio(cats, np.ones(4), 2))


def test_pearson_matrix_equals_pairwise() -> None:
    rng = np.random.default_rng(0)
    cols = [rng.normal(size=300) for _ in range(4)]
    cols[1] = cols[1] + cols[0]
    cols[1][::5] = np.nan
    cols[3][::3] = np.nan
    m = pearson_matrix(cols)
    for i, j in itertools.combinations(range(4), 2):
        assert m[i, j] == pytest.approx(pearson(cols[i], cols[j]), abs=1e-10)
    assert np.allclose(np.diag(m), 1.0)
    const = pearson_matrix([cols[0], np.full(300, 0.1)])
    assert math.isnan(const[0, 1])


def test_table_associations(kit) -> None:
    syn = kit.with_sales(amount=[8.0, 7, 6, 5, 4, 3, 2, 1])
    a = associations(kit.shop(), syn, table="sales")
    assert list(a.real.index) == ["kind", "amount"]
    assert a.measures.loc["kind", "amount"] == "Correlation ratio η"
    assert np.allclose(np.diag(a.real), 1.0)
    assert a.difference.loc["kind", "amount"] == pytest.approx(a.synthetic.loc["kind", "amount"]
                                                               - a.real.loc["kind", "amount"])
    tidy = a.tidy()
    assert len(tidy) == 1 and tidy.loc[0, "Measure"] == "Correlation ratio η"
    assert a.n_real == 8 and a.n_synthetic == 8
    with pytest.raises(ValueError):
        associations(kit.shop(), syn)


def test_join_associations(kit) -> None:
    a = associations(kit.shop(), kit.shop(), fk=kit.FK)
    assert list(a.real.index) == ["sales.kind", "sales.amount", "stores.region", "stores.size"]
    assert a.measures.loc["sales.kind", "stores.region"] == "Cramér's V"
    assert a.measures.loc["sales.amount", "stores.size"] == "Pearson"
    # joined rows: amount 1..8 against store sizes 10,10,10,20,20,60,60,60
    size = np.array([10, 10, 10, 20, 20, 60, 60, 60.0])
    assert a.real.loc["sales.amount", "stores.size"] == pytest.approx(np.corrcoef(np.arange(1.0, 9), size)[0, 1])
    assert (a.difference.abs().fillna(0) == 0).all().all()


def test_intertable_trends(kit) -> None:
    prop = intertable_trends(kit.shop(), kit.shop())
    d = prop.details
    assert len(d) == 4  # 2 parent attributes × 2 child attributes
    assert list(zip(d["Column 1"], d["Column 2"])) == [("region", "kind"), ("region", "amount"),
                                                       ("size", "kind"), ("size", "amount")]
    assert list(d["Metric"]) == ["ContingencySimilarity"] * 3 + ["CorrelationSimilarity"]
    assert (d["Score"] == 1.0).all() and prop.score == 1.0
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=[4, 4, 4, 4, 3, 3, 1, 1])  # links moved across stores
    moved = intertable_trends(kit.shop(), kit.shop(f))
    assert moved.score < 1.0
    assert moved.details.loc[3, "Real Correlation"] == pytest.approx(
        np.corrcoef(np.arange(1.0, 9), [10, 10, 10, 20, 20, 60, 60, 60.0])[0, 1])


def test_intertable_trends_records_constant_error(kit) -> None:
    f = kit.shop_frames()
    f["stores"] = f["stores"].assign(size=50.0)
    prop = intertable_trends(kit.shop(f), kit.shop(f))
    d = prop.details
    assert "Error" in d.columns
    bad = d[(d["Column 1"] == "size") & (d["Column 2"] == "amount")].iloc[0]
    assert bad["Error"].startswith("ConstantInputError") and math.isnan(bad["Score"])
    assert prop.score == 1.0  # the other pairs still count


def test_caller_frames_not_mutated(kit) -> None:
    f = kit.shop_frames()
    before = {k: v.copy() for k, v in f.items()}
    db = kit.shop(f)
    associations(db, db, fk=kit.FK)
    intertable_trends(db, db)
    for k in f:
        pd.testing.assert_frame_equal(f[k], before[k])
