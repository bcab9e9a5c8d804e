"""Column shapes, pair trends, TVDs and frequencies (docs/evaluation.md §1–§2), hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from relviz.evaluate import (
    column_pair_trends,
    column_shapes,
    contingency_similarity,
    correlation_similarity,
    fidelity_summary,
    frequencies,
    ks_complement,
    tv_complement,
    tvd_one_way,
    tvd_two_way,
)
from relviz.evaluate._common import PairColumn, ks_statistic, pair_score, pearson

# -- KSComplement ------------------------------------------------------------------------------------


def test_ks_complement_by_hand() -> None:
    assert ks_complement([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    # ECDFs of {1,2,3,4} and {3,4,5,6} differ by 0.5 at x = 2 → D = 0.5
    assert ks_complement([1, 2, 3, 4], [3, 4, 5, 6]) == pytest.approx(0.5)
    assert ks_complement([1.0, 2.0, np.nan], [1.0, 2.0]) == 1.0  # nulls dropped
    assert math.isnan(ks_complement([np.nan], [1.0]))


def test_ks_complement_datetimes() -> None:
    r = pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03", "2020-01-04"]))
    assert ks_complement(r, r + pd.Timedelta(days=2)) == pytest.approx(0.5)


def test_ks_statistic_equals_scipy_with_ties() -> None:
    rng = np.random.default_rng(1)
    for _ in range(5):
        a = rng.integers(0, 20, rng.integers(5, 300)).astype(float)
        b = rng.integers(3, 25, rng.integers(5, 300)).astype(float)
        assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-15)


# -- TVComplement ------------------------------------------------------------------------------------

def test_tv_complement_nulls_as_category() -> None:
    # real: a .5, b .25, null .25; synthetic: a .25, b .75 → TV = ½(.25 + .5 + .25) = .5
    r, s = ["a", "a", "b", None], ["a", "b", "b", "b"]
    assert tv_complement(r, s) == pytest.approx(0.5)
    assert tv_complement(r, r) == 1.0


def test_tv_complement_sdmetrics_drops_nulls() -> None:
    # real without nulls: a 2/3, b 1/3; synthetic a 1/4, b 3/4 → TV = ½(5/12 + 5/12)
    r, s = ["a", "a", "b", None], ["a", "b", "b", "b"]
    assert tv_complement(r, s, nulls="sdmetrics") == pytest.approx(1 - 5 / 12)


def test_tv_complement_sdmetrics_regularisation() -> None:
    # synthetic-only category "c" gets a real count of 1e-6 (sdmetrics.utils.get_frequencies)
    got = tv_complement(["a", "a"], ["a", "c"], nulls="sdmetrics")
    f_exp = np.array([2, 1e-6]) / (2 + 1e-6)
    assert got == pytest.approx(1 - 0.5 * (abs(0.5 - f_exp[0]) + abs(0.5 - f_exp[1])), abs=1e-15)
    assert got != 0.5  # the regulariser is really there
    with pytest.raises(ValueError):
        tv_complement([None], ["a"], nulls="sdmetrics")


# -- pair metrics --------------------------------------------------------------------------------------

def test_correlation_similarity_by_hand() -> None:
    real = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, 2, 3, 4]})  # r = 1
    syn = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [4.0, 3, 2, 1]})  # r = −1
    assert correlation_similarity(real, syn) == pytest.approx(0.0)
    assert correlation_similarity(real, real) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="constant"):
        correlation_similarity(real, syn.assign(y=1.0))


def test_pearson_matches_scipy_with_nulls() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=200), rng.normal(size=200)
    y += x
    x[::9] = np.nan
    ok = ~np.isnan(x)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x[ok], y[ok]).statistic, abs=1e-12)


def test_contingency_similarity_by_hand() -> None:
    # real cells (x1, x2, y1, y2) each .25; synthetic x1 .5, x2 .25, y2 .25 → TV = .25
    real = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": [1, 2, 1, 2]})
    syn = pd.DataFrame({"a": ["x", "x", "x", "y"], "b": [1, 1, 2, 2]})
    assert contingency_similarity(real, syn) == pytest.approx(0.75)


def test_contingency_bins_over_real_range() -> None:
    # real values 0..9 → 10 bins of width 0.9 over [0, 9] with open outer bins; synthetic 100 and −5
    # fall into the last and first bins; nulls are a category of their own.
    real = pd.DataFrame({"v": np.arange(10.0), "c": ["k"] * 10})
    syn = pd.DataFrame({"v": [0.0, 1, 2, 3, 4, 5, 6, 7, 8, 100.0], "c": ["k"] * 10})
    assert contingency_similarity(real, syn, ["v"]) == pytest.approx(1.0)
    syn2 = syn.assign(v=[-5.0, 1, 2, 3, 4, 5, 6, 7, 8, np.nan])
    # −5 stays in bin 1 with 0, the null leaves bin 10 → TV = 0.1
    assert contingency_similarity(real, syn2, ["v"]) == pytest.approx(0.9)


def test_own_range_binning_reproduces_sdmetrics_quirk() -> None:
    # SDMetrics' QualityReport: np.histogram_bin_edges per dataset, np.digitize → the maximum and
    # nulls share code 11
    col = PairColumn.from_series("v", True, pd.Series([0.0, 5.0, 10.0, np.nan]), pd.Series([0.0, 1.0]))
    real, syn, n = col.discrete("own_range")
    assert real.tolist() == [1, 6, 11, 11]
    assert syn.tolist() == [1, 11]
    assert n == 12
    r2, _, _ = col.discrete("real_range")
    assert r2.tolist() == [1, 6, 10, 11]  # open outer bins: the maximum stays in bin 10


def test_pair_score_thresholds() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    strong = PairColumn.from_series("y", True, pd.Series(x + 0.1 * rng.normal(size=500)),
                                    pd.Series(rng.normal(size=500)))
    base = PairColumn.from_series("x", True, pd.Series(x), pd.Series(rng.normal(size=500)))
    weak = PairColumn.from_series("z", True, pd.Series(rng.normal(size=500)), pd.Series(rng.normal(size=500)))
    s = pair_score(base, strong)
    assert s["Metric"] == "CorrelationSimilarity" and s["Meets Threshold?"]
    assert s["SDMetrics Score"] == s["Score"] < 0.6  # synthetic lost the correlation
    w = pair_score(base, weak)
    assert not w["Meets Threshold?"] and math.isnan(w["SDMetrics Score"]) and w["Score"] > 0.9


# -- properties on a database -----------------------------------------------------------------------------

def test_column_shapes_identical_is_one(kit) -> None:
    prop = column_shapes(kit.shop(), kit.shop())
    d = prop.details
    assert list(d["Column"]) == ["region", "size", "kind", "amount"]
    assert list(d["Metric"]) == ["TVComplement", "KSComplement", "TVComplement", "KSComplement"]
    assert (d["Score"] == 1.0).all() and prop.score == 1.0
    assert "Error" not in d.columns


def test_column_shapes_by_hand(kit) -> None:
    syn = kit.with_sales(kind=["a", "a", "a", "a", "b", "b", "c", "c"],
                         amount=[5.0, 6, 7, 8, 9, 9.5, 9.6, 9.7])
    d = column_shapes(kit.shop(), syn).details.set_index("Column")
    # kind: real a 3/8 b 2/8 c 2/8 null 1/8; syn a 4/8 b 2/8 c 2/8 → TV = ½(1/8 + 1/8)
    assert d.loc["kind", "Score"] == pytest.approx(1 - 1 / 8)
    # SDMetrics (nulls dropped): real a 3/7 b 2/7 c 2/7 → TV = ½(|4/8-3/7| + |2/8-2/7|·2)
    assert d.loc["kind", "SDMetrics Score"] == pytest.approx(1 - 0.5 * (1 / 14 + 2 * 1 / 28))
    assert d.loc["amount", "Score"] == pytest.approx(1 - stats.ks_2samp(np.arange(1.0, 9), syn["sales"]["amount"]).statistic)


def test_column_shapes_records_errors(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(kind=pd.Series([None] * 8, dtype=object))
    prop = column_shapes(kit.shop(), kit.shop(f))
    d = prop.details.set_index("Column")
    assert "Error" in prop.details.columns
    assert d.loc["kind", "Error"].startswith("ValueError")  # SDMetrics' TVComplement needs non-nulls
    assert d.loc["kind", "Score"] == pytest.approx(1 - 7 / 8)  # relviz's: nulls are a category


def test_column_pair_trends_both_averages(kit) -> None:
    prop = column_pair_trends(kit.shop(), kit.shop())
    d = prop.details
    assert len(d) == 2  # one pair per table
    assert set(d["Metric"]) == {"ContingencySimilarity"}
    assert (d["Score"] == 1.0).all() and prop.score_relviz == 1.0
    syn = kit.with_sales(kind=["c", "c", "c", "a", "a", "a", "b", "b"])
    prop2 = column_pair_trends(kit.shop(), syn, tables=["sales"])
    assert prop2.score < 1.0
    compat = column_pair_trends(kit.shop(), syn, tables=["sales"], sdmetrics_compatible=True)
    assert compat.score == compat.score_sdmetrics
    row = compat.details.iloc[0]
    assert row["Meets Threshold?"] == (row["Real Association"] > 0.3)


# -- fidelity on public codes -------------------------------------------------------------------------------

def test_tvd_one_and_two_way_by_hand(kit) -> None:
    syn = kit.with_sales(kind=["a", "a", "a", "a", "b", "b", "c", "c"])
    one = tvd_one_way(kit.shop(), syn).set_index(["Table", "Attribute"])["TVD"]
    assert one[("sales", "kind")] == pytest.approx(1 / 8)
    assert one[("sales", "amount")] == 0.0 and one[("stores", "region")] == 0.0
    two = tvd_two_way(kit.shop(), syn)
    assert len(two) == 2
    # (kind, amount bin) cells: amount bins of width 2 → [1],[2,3],[4,5],[6,7],[8]
    # real cells: a0 b1 a1 c2 null2 b3 a3 c4; synthetic: a0 a1 a1 a2 b2 b3 c3 c4
    # → |Δ| = 1/8 on b1 a1 c2 null2 a3 a2 b2 c3: TV = ½ · 8/8
    row = two[(two["Table"] == "sales")].iloc[0]
    assert row["TVD"] == pytest.approx(0.5)
    fid = fidelity_summary(kit.shop(), syn).set_index("Table")
    assert fid.loc["sales", "Mean 1-way TVD"] == pytest.approx(1 / 16)
    assert fid.loc["sales", "Worst Pair"] == "kind × amount"
    assert fid.loc["stores", "Mean 2-way TVD"] == 0.0


def test_frequencies_use_public_labels(kit) -> None:
    fr = frequencies(kit.shop(), kit.shop(), "sales", "kind")
    real = fr[fr["Source"] == "Real"]
    assert real["Value"].tolist() == ["a", "b", "c", "(null)"]
    assert real["Count"].tolist() == [3, 2, 2, 1]
    assert real["Share"].sum() == pytest.approx(1.0)
    amt = frequencies(kit.shop(), kit.shop(), "sales", "amount")
    assert len(amt) == 2 * 5 and amt["Value"].iloc[0] == "[0, 2)"
