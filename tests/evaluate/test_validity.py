"""Validity checks (docs/evaluation.md §6): each check catches what it is for."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from relviz.evaluate import validity


def _check(report, check: str, table: str, column: str = "") -> pd.Series:
    c = report.checks
    rows = c[(c["Check"] == check) & (c["Table"] == table) & (c["Column"] == column)]
    assert len(rows) == 1, (check, table, column)
    return rows.iloc[0]


def test_valid_database_scores_one(kit) -> None:
    r = validity(kit.shop(), expected_rows={"stores": 4, "sales": 8})
    assert r.valid and r.score == 1.0
    assert r.checks["Valid"].all()
    assert set(r.checks["Check"]) == {"Primary key non-null", "Primary key unique", "Inside public domain",
                                      "Row count", "Foreign key exists", "Foreign key non-null"}
    assert r.summary().startswith("validity 1.000") and len(r.checks) == 12
    json.dumps(r.to_dict())


def test_orphan_is_caught(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=[1, 1, 1, 2, 2, 3, 3, 99])
    r = validity(kit.shop(f, validate=False))
    row = _check(r, "Foreign key exists", "sales", "store_id")
    assert not row["Valid"] and row["Violations"] == 1 and "99" in row["Details"]
    assert not r.valid and r.score < 1.0
    assert "FAIL Foreign key exists" in r.summary()


def test_out_of_domain_values_are_caught(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(kind=["a", "b", "z", "c", None, "b", "a", "c"],
                                   amount=[1.0, 2, 3, 4, 5, 6, 7, 80.0])
    r = validity(kit.shop(f, validate=False))
    kind = _check(r, "Inside public domain", "sales", "kind")
    amount = _check(r, "Inside public domain", "sales", "amount")
    assert not kind["Valid"] and kind["Violations"] == 1 and "z" in kind["Details"]
    assert not amount["Valid"] and amount["Violations"] == 1 and "80" in amount["Details"]
    assert _check(r, "Inside public domain", "stores", "size")["Valid"]


def test_keys_nulls_and_row_counts(kit) -> None:
    f = kit.shop_frames()
    f["stores"] = f["stores"].assign(store_id=pd.array([1, 1, 3, None], dtype="Int64"))
    f["sales"] = f["sales"].assign(store_id=pd.array([1, 1, 1, 1, None, 3, 3, 3], dtype="Int64"))
    r = validity(kit.shop(f, validate=False), expected_rows={"stores": 5})
    assert _check(r, "Primary key non-null", "stores", "store_id")["Violations"] == 1
    assert _check(r, "Primary key unique", "stores", "store_id")["Violations"] == 2
    assert _check(r, "Foreign key non-null", "sales", "store_id")["Violations"] == 1  # FK is not nullable
    rc = _check(r, "Row count", "stores")
    assert not rc["Valid"] and rc["Details"] == "4 rows, 5 planned"


def test_missing_column_fails_the_check(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].drop(columns=["amount"])
    r = validity(kit.shop(f, validate=False))
    row = _check(r, "Inside public domain", "sales", "amount")
    assert not row["Valid"] and row["Details"] == "missing column"
    assert np.isclose(r.score, (len(r.checks) - 1) / len(r.checks))
