"""Degree distributions and CardinalityShapeSimilarity (docs/evaluation.md §3), hand-computed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from relviz.evaluate import (
    cardinality,
    cardinality_shape_similarity,
    compare_degrees,
    degree_similarity,
    degree_stats,
)


def test_identical_degrees_score_one(kit) -> None:
    c = compare_degrees(kit.shop(), kit.shop(), kit.FK)
    assert c.real.tolist() == [3, 2, 3, 0]  # 0-degree parent included
    assert c.synthetic.tolist() == [3, 2, 3, 0]
    assert c.score == 1.0
    assert c.error is None


def test_shifted_degrees_hand_computed(kit) -> None:
    # synthetic degrees 4, 4, 0, 0; ECDFs differ most at x = 3: F_real = 1, F_syn = 0.5 → D = 0.5
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=[1, 1, 1, 1, 2, 2, 2, 2])
    c = compare_degrees(kit.shop(), kit.shop(f), kit.FK)
    assert c.synthetic.tolist() == [4, 4, 0, 0]
    assert c.score == pytest.approx(0.5)
    assert c.score < 1.0
    assert cardinality_shape_similarity([3, 2, 3, 0], [4, 4, 0, 0]) == pytest.approx(
        1 - stats.ks_2samp([3, 2, 3, 0], [4, 4, 0, 0]).statistic)


def test_nullable_fk_counts_non_null_links_only(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=pd.array([1, None, 1, 2, 2, 3, None, 3], dtype="Int64"))
    c = compare_degrees(kit.shop(), kit.shop(f, nullable_fk=True), kit.FK)
    assert c.synthetic.tolist() == [2, 2, 2, 0]
    assert c.synthetic.sum() == 6  # two null links are not children of anyone


def test_degree_stats_by_hand() -> None:
    s = degree_stats(np.array([3, 2, 3, 0]))
    assert s["Max"] == 3 and s["Mean"] == 2.0 and s["Zero share"] == 0.25
    assert s["Parents"] == 4 and s["Children"] == 8
    assert s["p99"] == pytest.approx(np.percentile([3, 2, 3, 0], 99))
    assert math.isnan(degree_stats(np.array([], dtype=int))["Max"])


def test_frames_are_tidy(kit) -> None:
    c = compare_degrees(kit.shop(), kit.shop(), kit.FK)
    fr = c.frame()
    assert list(fr.columns) == ["Foreign Key", "Source", "Degree", "Parents", "Share"]
    real = fr[fr["Source"] == "Real"]
    assert real["Degree"].tolist() == [0, 2, 3] and real["Parents"].tolist() == [1, 1, 2]
    assert real["Share"].sum() == pytest.approx(1.0)
    cc = c.ccdf()
    assert cc[cc["Source"] == "Real"]["CCDF"].tolist() == [1.0, 0.75, 0.5]
    b = c.binned_frame()
    rb = b[b["Source"] == "Real"]
    assert rb["Bin"].tolist() == ["0", "1", "2–3"] and rb["Parents"].tolist() == [1, 0, 3]
    st = c.stats().set_index("Statistic")
    assert st.loc["Zero share", "Real"] == 0.25


def test_degree_similarity_and_cardinality_property(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=[1, 1, 1, 1, 2, 2, 2, 2])
    table = degree_similarity(kit.shop(), kit.shop(f))
    assert table.loc[0, "Score"] == pytest.approx(0.5)
    assert table.loc[0, "Synthetic Max"] == 4 and table.loc[0, "Real Zero Share"] == 0.25
    assert "Error" not in table.columns  # nothing failed
    prop = cardinality(kit.shop(), kit.shop(f))
    assert prop.score == pytest.approx(0.5) and prop.score_sdmetrics == pytest.approx(0.5)
    assert list(prop.details.columns[:3]) == ["Child Table", "Parent Table", "Foreign Key"]


def test_empty_parent_records_error(kit) -> None:
    f = kit.shop_frames()
    f["stores"] = f["stores"].iloc[:0]
    f["sales"] = f["sales"].iloc[:0]
    c = compare_degrees(kit.shop(), kit.shop(f), kit.FK)
    assert math.isnan(c.score) and c.error
    table = degree_similarity(kit.shop(), kit.shop(f))
    assert "Error" in table.columns and table.loc[0, "Error"].startswith("ValueError")
