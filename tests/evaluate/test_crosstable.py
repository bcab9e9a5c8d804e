"""3-way cross-table marginal error (docs/evaluation.md §7.1) through relviz.evaluate."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.evaluate import (
    cross_table_error,
    cross_table_error_codes,
    cross_table_errors,
    cross_table_summary,
    link_table_error,
)
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table


def test_real_against_itself_is_zero(kit) -> None:
    db = kit.random_shop()
    e = cross_table_error(db, db, kit.FK)
    # 2 child + 2 parent attributes: (1 child, 2 parent) + (2 child, 1 parent) = 2 + 2 workloads
    assert e.n_workloads == 4
    assert e.average == 0.0 and e.maximum == 0.0
    assert e.table1 == "sales" and e.table2 == "stores"
    assert e.m_real == e.m_synthetic == 700
    assert list(e.per_workload["Workload"]) == ["kind × region, size", "amount × region, size",
                                                "kind, amount × region", "kind, amount × size"]


def test_random_relation_is_worse(kit) -> None:
    db = kit.random_shop()
    # a random relation on the same tables: every sale linked to a random store
    f = {n: db[n] for n in db.table_names}
    rng = np.random.default_rng(5)
    f["sales"] = f["sales"].assign(store_id=rng.permutation(f["sales"]["store_id"].to_numpy()))
    e = cross_table_error(db, kit.shop(f), kit.FK)
    assert e.average > 0.0 and e.maximum >= e.average
    assert e.average_pct == pytest.approx(100 * e.average)


def test_error_codes_by_hand() -> None:
    # table 1: one attribute (2 values), table 2: two attributes (2 values each) → one 3-way workload.
    c1 = np.array([[0], [1]])
    c2 = np.array([[0, 0], [1, 1]])
    real = (np.array([0, 1]), np.array([0, 1]))  # cells (0,00) and (1,11), each 1/2
    syn = (np.array([0, 1]), np.array([1, 0]))  # cells (0,11) and (1,00)
    e = cross_table_error_codes(c1, c2, real, c1, c2, syn, [2], [2, 2], names1=["x"], names2=["y", "z"])
    assert e.n_workloads == 1 and e.per_workload.loc[0, "Workload"] == "x × y, z"
    assert e.average == pytest.approx(2.0)  # L1 of two disjoint distributions
    half = (np.array([0, 1]), np.array([0, 0]))  # cells (0,00), (1,00)
    e2 = cross_table_error_codes(c1, c2, real, c1, c2, half, [2], [2, 2])
    assert e2.average == pytest.approx(1.0)  # |½−½| + |0−½| + |½−0|


def test_nan_with_reason() -> None:
    c = np.zeros((2, 1), dtype=np.uint8)
    e = cross_table_error_codes(c, c, ([0], [0]), c, c, ([0], [0]), [1], [1])
    assert math.isnan(e.average) and "fewer than 3" in e.reason
    e = cross_table_error_codes(np.zeros((2, 2)), c, ([], []), np.zeros((2, 2)), c, ([0], [0]), [1, 1], [1])
    assert math.isnan(e.average) and e.reason == "no real edges"


def test_fk_without_attributes_is_skipped() -> None:
    carriers = Table("carriers", ("code",), ())
    flights = Table("flights", ("fid",), (Attribute.categorical("k", ["x", "y"]),
                                           Attribute.numeric("v", 0, 1, bins=2)))
    fk = ForeignKey("flights", ("code",), "carriers")
    schema = Schema((carriers, flights), (fk,), PrivacyUnit(None, {fk.name: 5}))
    db = Database(schema, {"carriers": pd.DataFrame({"code": ["A", "B"]}),
                           "flights": pd.DataFrame({"fid": [1, 2], "code": ["A", "B"], "k": ["x", "y"],
                                                    "v": [0.2, 0.7]})})
    (e,) = cross_table_errors(db, db)
    assert math.isnan(e.average) and e.reason == "carriers has no attributes"
    summary = cross_table_summary([e])
    assert summary.loc[0, "Reason"] == "carriers has no attributes" and summary.loc[0, "Workloads"] == 0


def test_nullable_fk_uses_non_null_links(kit) -> None:
    f = kit.shop_frames()
    f["sales"] = f["sales"].assign(store_id=pd.array([1, 1, 1, 2, 2, 3, 3, None], dtype="Int64"))
    db = kit.shop(f, nullable_fk=True)
    e = cross_table_error(db, db, kit.FK)
    assert e.m_real == 7 and e.average == 0.0


def test_link_table_edges_between_parents() -> None:
    users = Table("users", ("uid",), (Attribute.categorical("g", ["f", "m"]),
                                       Attribute.categorical("age", ["y", "o"])))
    movies = Table("movies", ("mid",), (Attribute.categorical("genre", ["d", "c"]),))
    ratings = Table("ratings", ("rid",), ())
    fks = (ForeignKey("ratings", ("uid",), "users"), ForeignKey("ratings", ("mid",), "movies"))
    schema = Schema((users, movies, ratings), fks, PrivacyUnit(None, {f.name: 5 for f in fks}))
    frames = {"users": pd.DataFrame({"uid": [1, 2], "g": ["f", "m"], "age": ["y", "o"]}),
              "movies": pd.DataFrame({"mid": [1, 2], "genre": ["d", "c"]}),
              "ratings": pd.DataFrame({"rid": [1, 2, 3], "uid": [1, 1, 2], "mid": [1, 2, 2]})}
    real = Database(schema, frames)
    e = link_table_error(real, real, "ratings")
    assert (e.table1, e.table2) == ("users", "movies")
    assert e.n_workloads == 1 and e.average == 0.0 and e.m_real == 3
    swapped = Database(schema, {**frames, "ratings": frames["ratings"].assign(mid=[2, 1, 1])})
    e2 = link_table_error(real, swapped, "ratings")
    # real cells (f,y,d) 1/3 (f,y,c) 1/3 (m,o,c) 1/3; synthetic (f,y,c) 1/3 (f,y,d) 1/3 (m,o,d) 1/3
    assert e2.average == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        link_table_error(real, real, "users")
