"""Database loading, validation (every problem at once), repair and exports."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database, _key_problems
from relviz.errors import DataError, SchemaError
from relviz.schema import ForeignKey, Schema
from tests.conftest import tiny_frames, tiny_schema


def _inject(kind: str, schema: Schema, f: dict[str, pd.DataFrame]) -> Schema:
    """Inject one defect of ``kind`` into ``f`` (in place); return the (possibly new) schema."""
    if kind == "cycle":  # regions → persons closes regions → households → persons → regions
        schema = Schema(schema.tables, schema.foreign_keys + (
            ForeignKey("regions", ("pid_ref",), "persons", ("pid",)),), schema.privacy_unit)
        f["regions"]["pid_ref"] = [1, 2, 3]
    elif kind == "orphan":
        f["persons"].loc[[0, 5], "hid"] = [999, 998]
    elif kind == "duplicate_key":
        f["persons"].loc[3, "pid"] = f["persons"].loc[4, "pid"]
    elif kind == "null_foreign_key":
        f["households"]["region"] = f["households"]["region"].astype(object)
        f["households"].loc[[1, 2], "region"] = None
    elif kind == "unknown_category":
        f["persons"].loc[[2, 7, 9], "sex"] = ["X", "X", "unknown"]
    elif kind == "out_of_bounds":
        f["households"].loc[[0, 1], "income"] = [250.0, -3.0]
    return schema


def _broken(*kinds: str) -> tuple[Schema, dict[str, pd.DataFrame]]:
    schema, f = tiny_schema(), {k: v.copy() for k, v in tiny_frames().items()}
    for kind in kinds:
        schema = _inject(kind, schema, f)
    return schema, f


KINDS = ["cycle", "orphan", "duplicate_key", "null_foreign_key", "unknown_category", "out_of_bounds"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_defect_is_reported(kind: str) -> None:
    schema, frames = _broken(kind)
    with pytest.raises(DataError) as e:
        Database(schema, frames)
    assert kind in e.value.kinds()


def test_all_defects_in_one_error_with_counts_and_examples() -> None:
    schema, f = _broken(*KINDS)
    with pytest.raises(DataError) as e:
        Database(schema, f)
    kinds = e.value.kinds()
    assert set(KINDS) <= kinds, kinds
    by_kind = {p.kind: p for p in e.value.problems}
    assert by_kind["orphan"].count == 2 and set(by_kind["orphan"].examples) == {999, 998}
    assert by_kind["unknown_category"].count == 3
    assert set(by_kind["unknown_category"].examples) == {"X", "unknown"}
    assert by_kind["out_of_bounds"].count == 2
    assert by_kind["null_foreign_key"].count == 2
    text = str(e.value)
    assert "persons.hid" in text and "cycle" in text


def test_caller_frames_are_never_mutated(tiny_db: Database) -> None:
    frames = tiny_frames()
    before = {k: v.copy() for k, v in frames.items()}
    db = Database(tiny_schema(), frames)
    handed_out = db["persons"]
    handed_out.loc[0, "sex"] = "M" if handed_out.loc[0, "sex"] == "F" else "F"
    out = db.tables["persons"]
    out["age"] = -1
    for k in frames:
        pd.testing.assert_frame_equal(frames[k], before[k])
    pd.testing.assert_frame_equal(db["persons"], before["persons"])
    fixed, _ = Database(*_broken("orphan"), validate=False).repair_orphans("drop")
    assert len(fixed["persons"]) == len(before["persons"]) - 2


def test_databases_made_from_a_database_share_buffers_but_not_edits() -> None:
    """``with_schema``/``with_table``/``drop_rows``-style results adopt the frames they already
    own (no deep copy: memory at scale); copy-on-write still keeps every edit local."""
    frames = tiny_frames()
    db = Database(tiny_schema(), frames)
    assert not np.shares_memory(db["persons"]["age"].to_numpy(), frames["persons"]["age"].to_numpy())
    other = db.with_schema(tiny_schema())
    assert np.shares_memory(other["persons"]["age"].to_numpy(), db["persons"]["age"].to_numpy())
    before = db["persons"].copy()
    edited = other["persons"]
    edited.loc[0, "age"] = -5
    edited["sex"] = "X"
    pd.testing.assert_frame_equal(db["persons"], before)
    pd.testing.assert_frame_equal(other["persons"], before)
    new = before.assign(age=before["age"] + 1)
    swapped = db.with_table("persons", new, validate=False)
    new.loc[0, "age"] = -7  # the caller's frame after the call: not seen by the database
    assert swapped["persons"]["age"].iloc[0] == before["age"].iloc[0] + 1
    pd.testing.assert_frame_equal(db["persons"], before)


def test_problems_are_found_once_and_known_valid_says_so() -> None:
    db = Database(tiny_schema(), tiny_frames())
    assert db.known_valid and db.problems() == []
    broken = Database(*_broken("orphan"), validate=False)
    assert not broken.known_valid  # not checked yet
    first = broken.problems()
    assert first and not broken.known_valid
    first.clear()  # the caller's list is a copy
    assert broken.problems() and broken.problems() == broken.problems()
    assert not db.with_schema(tiny_schema(), validate=False).known_valid  # a new database checks anew


def test_repair_orphans_null_marks_fk_nullable_and_reports() -> None:
    db = Database(*_broken("orphan"), validate=False)
    fixed, report = db.repair_orphans("null")
    assert fixed.schema.foreign_key("persons.hid->households").nullable
    assert report.rows.loc[0, "rows"] == 2 and "set to null" in str(report)
    fixed.validate()
    assert db.problems() and any(p.kind == "orphan" for p in db.problems())  # original untouched


def test_repair_drop_cascades() -> None:
    schema, f = tiny_schema(), tiny_frames()
    f["households"].loc[0, "region"] = "ZZ"
    db = Database(schema, f, validate=False)
    fixed, report = db.repair_orphans("drop")
    hid = f["households"].loc[0, "hid"]
    assert hid not in set(fixed["households"]["hid"])
    assert hid not in set(fixed["persons"]["hid"])  # children of the dropped row went too
    fixed.validate()
    assert report.rows.iloc[0]["action"] == "dropped"


def test_degrees_and_parent_index(tiny_db: Database) -> None:
    deg = tiny_db.degrees("persons.hid->households")
    assert deg.sum() == len(tiny_db["persons"]) and deg.min() >= 1 and deg.max() <= 4
    idx = tiny_db.parent_index("persons.hid->households")
    assert (tiny_db["households"]["hid"].to_numpy()[idx] == tiny_db["persons"]["hid"].to_numpy()).all()


def test_sqlite_roundtrip_with_constraints(tmp_path, tiny_db: Database) -> None:
    path = tiny_db.to_sqlite(tmp_path / "db.sqlite")
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    ddl = con.execute("SELECT sql FROM sqlite_master WHERE name='persons'").fetchone()[0]
    assert "PRIMARY KEY" in ddl and 'REFERENCES "households"' in ddl
    con.close()
    back = Database.from_sqlite(path, tiny_db.schema)
    pd.testing.assert_frame_equal(back["persons"].astype({"age": "int64"}),
                                  tiny_db["persons"][list(back["persons"].columns)],
                                  check_dtype=False)
    inferred = Database.from_sqlite(path)  # keys come from the DDL
    assert {fk.parent for fk in inferred.schema.foreign_keys} == {"households", "regions"}
    assert inferred.schema.table("persons").primary_key == ("pid",)


def test_duckdb_and_csv_roundtrip(tmp_path, tiny_db: Database) -> None:
    p = tiny_db.to_duckdb(tmp_path / "db.duckdb")
    back = Database.from_duckdb(p)
    assert back.row_counts() == tiny_db.row_counts()
    assert {fk.name for fk in back.schema.foreign_keys} == {fk.name for fk in tiny_db.schema.foreign_keys}
    tiny_db.to_csv_dir(tmp_path / "csv")
    back = Database.from_csv_dir(tmp_path / "csv", tiny_db.schema)
    assert back.row_counts() == tiny_db.row_counts()


def test_parquet_roundtrip_and_the_cli_reads_a_parquet_folder(tmp_path, tiny_db: Database) -> None:
    """``to_parquet`` → ``from_parquet_dir`` gives back the same tables (values and dtypes), with
    the declared schema or an inferred one; a problem in the files is reported, not raised, when
    ``validate`` is off; the CLI takes a folder of Parquet files as ``--data``."""
    from relviz.cli import main

    tiny_db.to_parquet(tmp_path / "pq")
    back = Database.from_parquet_dir(tmp_path / "pq", tiny_db.schema)
    for name in tiny_db.schema.table_names:
        pd.testing.assert_frame_equal(back[name], tiny_db[name])
    assert Database.from_parquet_dir(tmp_path / "pq", validate=False).row_counts() == tiny_db.row_counts()
    with pytest.raises(DataError, match="no .parquet files"):
        Database.from_parquet_dir(tmp_path)
    name = tiny_db.schema.table_names[0]
    key = tiny_db.schema.table(name).primary_key[0]
    broken = tiny_db[name].copy()
    broken.loc[1, key] = broken.loc[0, key]  # a duplicate key
    broken.to_parquet(tmp_path / "pq" / f"{name}.parquet")
    bad = Database.from_parquet_dir(tmp_path / "pq", tiny_db.schema, validate=False)
    assert "duplicate_key" in {p.kind for p in bad.problems()}
    with pytest.raises(DataError):
        Database.from_parquet_dir(tmp_path / "pq", tiny_db.schema)
    tiny_db.to_parquet(tmp_path / "pq")
    (tmp_path / "schema.json").write_text(tiny_db.schema.to_json())
    assert main(["validate", "--data", str(tmp_path / "pq"), "--schema", str(tmp_path / "schema.json")]) == 0


def test_unknown_columns_and_tables_are_problems(tiny_db: Database) -> None:
    f = tiny_frames()
    f["persons"]["extra"] = 1
    f["ghost"] = pd.DataFrame({"a": [1]})
    kinds = {p.kind for p in Database(tiny_schema(), f, validate=False).problems()}
    assert {"undeclared_column", "undeclared_table"} <= kinds


def test_cycle_in_schema_is_not_a_construction_error() -> None:
    schema, _ = _broken("cycle")
    assert any(p.kind == "cycle" for p in schema.problems())
    with pytest.raises(SchemaError):
        schema.topological_order()


def test_row_counts_and_repr(tiny_db: Database) -> None:
    assert tiny_db.row_counts()["regions"] == 3
    assert "persons" in repr(tiny_db)
    assert np.isfinite(list(tiny_db.row_counts().values())).all()


def _chunky_db() -> Database:
    """One table whose first rows are all null in a text column and whose datetimes have a time of
    day only in the last rows: a per-chunk decision would write them differently."""
    from relviz.schema import Attribute, PrivacyUnit, Table

    n = 30
    t = pd.Timestamp("2021-03-01") + pd.to_timedelta(np.arange(n), unit="D")
    t = t.where(np.arange(n) < n - 3, t + pd.Timedelta(hours=5))  # last 3 rows: 05:00
    frame = pd.DataFrame({"id": np.arange(n),
                          "s": [None] * 9 + ["a", "b", "c"] * 7,
                          "x": np.where(np.arange(n) % 4 == 0, np.nan, np.arange(n) / 2),
                          "t": t})
    table = Table("r", ("id",), (Attribute.categorical("s", ["a", "b", "c"], nullable=True),
                                 Attribute.numeric("x", 0, 20, bins=4, nullable=True),
                                 Attribute("t", "datetime", lower="2021-01-01", upper="2021-12-31", bins=4)))
    return Database(Schema((table,), (), PrivacyUnit("r")), {"r": frame})


def test_writes_in_chunks_equal_one_piece(tmp_path, monkeypatch) -> None:
    """SQLite, DuckDB and Parquet writes convert a chunk of rows at a time; with chunks of 7
    rows (5 chunks, the first with no text and no time of day) the files hold the same rows as
    with one chunk, and the same text as before chunking (dates with a time in every row)."""
    import duckdb

    import relviz.database as database

    db = _chunky_db()
    got = {}
    for chunk in (7, 10**6):
        monkeypatch.setattr(database, "WRITE_CHUNK_ROWS", chunk)
        monkeypatch.setattr(database, "ARROW_CHUNK_ROWS", chunk)
        d = tmp_path / str(chunk)
        d.mkdir()
        con = sqlite3.connect(db.to_sqlite(d / "db.sqlite"))
        got[chunk, "sqlite"] = con.execute('SELECT id, s, x, t FROM "r" ORDER BY id').fetchall()
        con.close()
        con = duckdb.connect(str(db.to_duckdb(d / "db.duckdb")))
        got[chunk, "duckdb"] = con.execute('SELECT * FROM "r" ORDER BY id').df()
        con.close()
        got[chunk, "parquet"] = pd.read_parquet(db.to_parquet(d / "pq")[0])
    rows = got[7, "sqlite"]
    assert rows == got[10**6, "sqlite"] and len(rows) == 30
    assert rows[0] == (0, None, None, "2021-03-01 00:00:00") and rows[-1][3] == "2021-03-30 05:00:00"
    pd.testing.assert_frame_equal(got[7, "duckdb"], got[10**6, "duckdb"])
    pd.testing.assert_frame_equal(got[7, "parquet"], got[10**6, "parquet"])
    pd.testing.assert_frame_equal(got[7, "parquet"], db["r"], check_dtype=False)
    assert got[7, "duckdb"]["s"].isna().sum() == 9 and got[7, "duckdb"]["x"].isna().sum() == 8


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("spread", [1, 10 ** 6])
def test_integer_keys_are_matched_like_the_general_path(seed: int, spread: int) -> None:
    """The integer fast path of ``parent_index`` (keys combined in mixed radix over the parent's
    ranges; a lookup table over a dense range, ``spread`` 1, or one hash probe per child over a
    sparse one, ``spread`` 10⁶) finds the same parent rows as the general ``MultiIndex`` path,
    for single and composite keys, negative values, nullable children, nulls and orphans inside
    and outside the parent's ranges; where it cannot apply (duplicate parent keys, text keys)
    the general path answers."""
    from relviz.database import _integer_parent_index, _key_frame

    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, 400)
    b = 1_000 + rng.integers(0, 60, 400) * spread
    parent = pd.DataFrame({"a": a, "b": b}).drop_duplicates().reset_index(drop=True)
    pick = rng.integers(0, len(parent), 3_000)
    child = pd.DataFrame({"x": parent["a"].to_numpy()[pick], "y": parent["b"].to_numpy()[pick]})
    child.loc[rng.random(3_000) < 0.1, "x"] += rng.integers(-200, 200)  # orphans, in range or not
    child.loc[rng.random(3_000) < 0.05, "y"] = 5_000  # beyond the parent's range
    child["y"] = child["y"].astype("Int64")
    child.loc[rng.random(3_000) < 0.05, "y"] = pd.NA
    before = child.copy()

    def general(cols: list[str], pcols: list[str]) -> np.ndarray:
        pkey = _key_frame(parent, pcols)
        ckey = _key_frame(child.astype({"y": "float64"}), cols)
        idx = np.asarray(pkey.get_indexer(ckey), dtype=np.int64)
        idx[child[cols].isna().any(axis=1).to_numpy()] = -1
        return idx

    for cols, pcols in ((["x", "y"], ["a", "b"]), (["y"], ["b"]), (["x"], ["a"])):
        fast = _integer_parent_index(child, cols, parent, pcols)
        if len(pcols) == 1 and not parent[pcols[0]].is_unique:
            assert fast is None  # duplicate parent keys: the general path keeps the first row
            continue
        assert fast is not None and fast.dtype == np.int64
        np.testing.assert_array_equal(fast, general(cols, pcols))
        assert (fast >= 0).any() and (fast < 0).any()
    pd.testing.assert_frame_equal(child, before)
    huge = pd.DataFrame({"a": np.array([1, 2 ** 63 + 5], dtype=np.uint64)})
    assert _integer_parent_index(pd.DataFrame({"x": np.array([2 ** 63 + 5], dtype=np.uint64)}), ["x"],
                                 huge, ["a"]) is None  # beyond int64: the general path
    text = parent.assign(a=parent["a"].astype(str))
    assert _integer_parent_index(child.assign(x=child["x"].astype(str)), ["x"], text, ["a"]) is None


def test_keys_stored_in_order_are_checked_without_hashing() -> None:
    """A primary key of integer columns stored in strictly increasing order has no null and no
    duplicate (the fast check); any other order, a duplicate or a null goes to the general search,
    which still reports it."""
    from relviz.database import _sorted_integer_key
    from relviz.schema import Table

    t = Table("li", ("o", "n"), ())
    ordered = pd.DataFrame({"o": [1, 1, 2, 5, 5, 5], "n": [1, 2, 1, 1, 2, 3]})
    assert _sorted_integer_key(ordered, ["o", "n"]) and _key_problems(t, ordered) == []
    shuffled = ordered.iloc[[3, 0, 5, 1, 4, 2]].reset_index(drop=True)
    assert not _sorted_integer_key(shuffled, ["o", "n"]) and _key_problems(t, shuffled) == []
    dup = pd.DataFrame({"o": [1, 1, 2, 2], "n": [1, 2, 1, 1]})
    assert not _sorted_integer_key(dup, ["o", "n"])
    assert [p.kind for p in _key_problems(t, dup)] == ["duplicate_key"]
    null = pd.DataFrame({"o": pd.array([1, 2, None], dtype="Int64"), "n": [1, 1, 1]})
    assert not _sorted_integer_key(null, ["o", "n"])
    assert [p.kind for p in _key_problems(t, null)] == ["null_key"]
    assert not _sorted_integer_key(ordered.astype({"o": str}), ["o", "n"])
    surrogate = pd.DataFrame({"o": [5, 2, 5, 2], "n": [1, 2, 3, 4]})  # n alone is in order
    assert _key_problems(t, surrogate) == []
    assert [p.kind for p in _key_problems(t, surrogate.assign(o=pd.array([5, None, 5, 2], dtype="Int64")))] \
        == ["null_key"]
