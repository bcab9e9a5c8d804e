"""QualityReport (SDMetrics API), RelationalReport and report.html."""

from __future__ import annotations

import json
import math

import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs

from relviz.evaluate import PROPERTIES, QualityReport, RelationalReport, write_report
from relviz.privacy.accountant import Accountant


def test_quality_report_identical_is_one(kit) -> None:
    q = QualityReport()
    with pytest.raises(RuntimeError):
        q.get_score()
    q.generate(kit.shop(), kit.shop())
    props = q.get_properties()
    assert list(props["Property"]) == list(PROPERTIES)
    assert list(props.columns) == ["Property", "Score", "relviz Score", "SDMetrics Score"]
    assert props["Score"].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert q.get_score() == 1.0
    assert q.get_info()["num_rows_real_data"] == {"stores": 4, "sales": 8}


def test_quality_report_scores_and_details(kit, capsys) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=[1, 1, 1, 1, 2, 2, 2, 2])  # degrees 4, 4, 0, 0
    q = QualityReport()
    q.generate(kit.shop(), kit.shop(f), verbose=True)
    out = capsys.readouterr().out
    assert "(3/4) Evaluating Cardinality" in out and "Overall Score" in out
    props = q.get_properties().set_index("Property")["Score"]
    assert props["Cardinality"] == pytest.approx(0.5)
    assert q.get_score() == pytest.approx(props.mean())
    card = q.get_details("Cardinality")
    assert card.loc[0, "Foreign Key"] == kit.FK
    assert len(q.get_details("Column Shapes", "sales")) == 2
    assert len(q.get_details("Intertable Trends", "stores")) == 4
    with pytest.raises(ValueError):
        q.get_details("Nope")
    with pytest.raises(ValueError):
        q.get_details("Column Shapes", "nope")


def test_quality_report_visualizations(kit) -> None:
    q = QualityReport()
    q.generate(kit.shop(), kit.shop())
    for name in PROPERTIES:
        fig = q.get_visualization(name)
        assert isinstance(fig, go.Figure) and tuple(fig.layout.yaxis.range) == (0, 1)
    heat = q.get_visualization("Column Pair Trends", "sales")
    assert [t.name for t in heat.data] == ["Real", "Synthetic", "Difference"]


def test_quality_report_sdmetrics_mode_changes_the_average(kit) -> None:
    syn = kit.with_sales(kind=["c", "c", "c", "a", "a", "a", "b", "b"])
    relviz_mode, compat = QualityReport(), QualityReport(sdmetrics_compatible=True)
    relviz_mode.generate(kit.shop(), syn)
    compat.generate(kit.shop(), syn)
    a = relviz_mode.get_properties().set_index("Property")
    b = compat.get_properties().set_index("Property")
    assert (a["relviz Score"].fillna(-1) == b["relviz Score"].fillna(-1)).all()
    assert b.loc["Column Shapes", "Score"] == b.loc["Column Shapes", "SDMetrics Score"]
    assert a.loc["Column Shapes", "Score"] == a.loc["Column Shapes", "relviz Score"]
    # relviz counts the null kind as a category, SDMetrics drops it: the two differ here
    assert a.loc["Column Shapes", "Score"] != b.loc["Column Shapes", "Score"]


def test_quality_report_records_errors_instead_of_raising(kit) -> None:
    f = kit.shop_frames()
    f["stores"] = f["stores"].assign(size=50.0)
    q = QualityReport()
    q.generate(kit.shop(f), kit.shop(f))
    d = q.get_details("Intertable Trends")
    assert "Error" in d.columns and d["Error"].notna().sum() == 1
    assert not math.isnan(q.get_score())


def test_relational_report(kit) -> None:
    real = kit.random_shop(seed=0)
    syn = kit.random_shop(seed=1)
    r = RelationalReport(expected_rows={"sales": 700}).generate(real, syn)
    t = r.tables.set_index("Table")
    assert t.loc["sales", "Real Rows"] == 700 and t.loc["stores", "Attributes"] == 2
    assert 0 < t.loc["sales", "Mean 1-way TVD"] < 0.2
    fk = r.foreign_keys.set_index("Foreign Key")
    assert fk.loc[kit.FK, "Workloads"] == 4 and fk.loc[kit.FK, "3-way Avg Error (%)"] > 0
    assert r.validity.valid
    text = r.summary(indent="  ")
    assert all(line.startswith("  ") for line in text.splitlines())
    assert "sales.store_id->stores: degree similarity" in text and "3-way error avg" in text
    d = json.loads(json.dumps(r.to_dict()))
    assert d["tables"][1]["Table"] == "sales" and d["validity"]["valid"] is True
    assert set(r.timings) >= {"validity", "1-way TVD", "2-way TVD", "degrees", "cross-table errors"}


def test_write_report_html(kit, tmp_path) -> None:
    real, syn = kit.random_shop(seed=0), kit.random_shop(seed=1)
    acc = Accountant(0.5, delta=1e-6, epsilon=1.0, unit="one sale")
    acc.charge("1-way marginals (2 attributes)", 0.1, component="sales", module="measure",
               mechanism="gaussian", sensitivity=1.0, sigma=2.24)
    path = write_report(tmp_path / "out" / "report.html", real, syn, ledger=acc.to_dict(),
                        title="shop at ε = 1", extra={"seed": 0})
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "Privacy ledger" in text and "1-way marginals (2 attributes)" in text and "gaussian" in text
    assert "ε = 1" in text and "one sale" in text
    assert text.count(get_plotlyjs()[:500]) == 1  # plotly.js embedded exactly once
    assert text.count('id="plotly-js"') == 1 and "<script src=" not in text  # opens offline
    assert text.count("Plotly.newPlot") >= 5  # degrees, cross-table, 1-way ×2, associations ×2
    assert "curator view (not private)" in text
    assert "{BUILD_SECONDS}" not in text
    frames_before = pd.DataFrame(real["sales"])
    pd.testing.assert_frame_equal(frames_before, real["sales"])


def test_write_report_without_ledger(kit, tmp_path) -> None:
    db = kit.shop()
    path = write_report(tmp_path / "r.html", db, db)
    text = path.read_text(encoding="utf-8")
    assert "No ledger was given" in text
    assert text.count('id="plotly-js"') == 1


def test_invalid_synthetic_is_reported_not_raised(kit, tmp_path) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(amount=[1.0, 2, 3, 4, 5, 6, 7, 80.0])  # outside the public [0, 10]
    bad = kit.shop(f, validate=False)
    r = RelationalReport().generate(kit.shop(), bad)
    assert not r.validity.valid and "1-way TVD" in r.errors and "DataError" in r.errors["1-way TVD"]
    assert "ERROR in 1-way TVD" in r.summary()
    assert r.foreign_keys.loc[0, "Degree Similarity"] == 1.0  # the other steps still ran
    text = write_report(tmp_path / "bad.html", kit.shop(), bad, report=r).read_text(encoding="utf-8")
    assert "figure not drawn" in text and "Failed checks" in text
