"""Streamed sampling (``RelationalSynthesizer.sample_to``, ``relviz.stream``): the files hold
exactly the database ``sample()`` returns, whatever the chunk size, and the out-of-core checks
find broken keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.encoding import EncodedTable, decode_table
from relviz.errors import NotFittedError
from relviz.plan import Plan
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.stream import check_files, decode_rows
from relviz.synthesizer import RelationalSynthesizer
from tests.test_keys import messy_csv, tailnum_schema


def _table() -> Table:
    return Table("t", ("id",), (
        Attribute.categorical("c", ["x", "y", "z"], nullable=True),
        Attribute.numeric("f", 0, 10, bins=5, nullable=True),
        Attribute.categorical("d", [1, 2]),
        Attribute.numeric("i", 0, 100, bins=7, integer=True),
        Attribute.datetime("when", "2020-01-01", "2021-01-01", bins=12, date=True),
    ))


@pytest.mark.parametrize("chunk", [1, 7, 250, 1000])
def test_decode_rows_gives_decode_tables_values_chunk_by_chunk(chunk: int) -> None:
    """Every chunk's values equal the whole-table decode's rows: the generator is jumped to
    ``column · n + first row`` (PCG64 ``advance``) instead of drawing what comes before."""
    t = _table()
    rng = np.random.default_rng(4)
    n = 613
    codes = np.column_stack([rng.integers(0, a.size + (1 if a.nullable else 0), n) for a in t.attributes])
    enc = EncodedTable("t", tuple(a.name for a in t.attributes), tuple(a.size for a in t.attributes),
                       codes.astype(np.uint8))
    gen = np.random.default_rng(11)
    gen.random(5)  # a generator that has drawn before (sampling draws from it first)
    state = gen.bit_generator.state
    whole = decode_table(t, enc, gen)
    parts = pd.concat([decode_rows(t, enc, state, a, min(a + chunk, n)) for a in range(0, n, chunk)],
                      ignore_index=True)
    pd.testing.assert_frame_equal(parts, whole, check_dtype=False)
    assert whole["f"].isna().any() and whole["c"].isna().any()  # nulls were exercised
    with pytest.raises(ValueError, match="outside"):
        decode_rows(t, enc, state, 5, n + 1)
    with pytest.raises(ValueError, match="PCG64"):
        decode_rows(t, enc, np.random.Generator(np.random.MT19937(0)).bit_generator.state, 0, 1)


def _tailnum_db(public_planes: bool = False) -> Database:
    """Planes and flights with formatted keys (``N…``, ``F-…``) and a nullable self-reference."""
    frames = messy_csv()
    planes = frames["planes"][["tailnum", "seats"]]
    flights = frames["flights"][["flight_id", "tailnum", "dep_delay"]].assign(
        flight_id=lambda d: "F-" + d["flight_id"].astype(str),
        previous=lambda d: d["flight_id"].shift(1))
    return Database(tailnum_schema(public_planes=public_planes), {"planes": planes, "flights": flights})


def test_sample_to_keeps_nulls_of_a_foreign_key_into_a_formatted_key(tmp_path) -> None:  # noqa: ANN001
    """A nullable FK into ``planes.tailnum`` (formatted ``N…``): the in-memory path formats after
    masking the nulls, the streamed one masks after formatting; the same files."""
    from relviz.keys import KeyFormat

    base = _tailnum_db()
    planes_t = base.schema.table("planes")
    flights_t = Table("flights", ("flight_id",), (Attribute.numeric("dep_delay", -60, 70, bins=10),),
                      key_format=(KeyFormat("flight_id", prefix="F-"),))
    fk = ForeignKey("flights", ("tailnum",), "planes", nullable=True)
    schema = Schema((planes_t, flights_t), (fk,), PrivacyUnit(None, {fk.name: 20}))
    flights = base["flights"][["flight_id", "tailnum", "dep_delay"]].copy()
    flights.loc[np.random.default_rng(1).random(len(flights)) < 0.4, "tailnum"] = None
    real = Database(schema, {"planes": base["planes"], "flights": flights})
    synth = RelationalSynthesizer(Plan.default(real.schema, 4.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(real)
    _same_files(synth, tmp_path, 29)
    tail = pd.read_parquet(tmp_path / "stream" / "flights.parquet")["tailnum"]
    assert 0 < tail.isna().mean() < 1 and tail.dropna().str.fullmatch(r"N\d{5}").all()


def _same_files(synth: RelationalSynthesizer, tmp_path, chunk: int, **kw) -> dict[str, int]:  # noqa: ANN001
    mem = synth.sample(**kw)
    mem.to_parquet(tmp_path / "mem")
    out = synth.sample_to(tmp_path / "stream", chunk_rows=chunk, **kw)
    for name in mem.schema.table_names:
        a = pd.read_parquet(tmp_path / "mem" / f"{name}.parquet")
        b = pd.read_parquet(out.paths[name])
        pd.testing.assert_frame_equal(b, a)  # values, keys, dtypes and row order
        assert out.rows[name] == len(mem[name])
    return out.rows


@pytest.mark.parametrize("public_planes", [False, True])
def test_sample_to_writes_samples_database_with_formatted_and_self_referencing_keys(
        tmp_path, public_planes: bool) -> None:  # noqa: ANN001
    real = _tailnum_db(public_planes)
    synth = RelationalSynthesizer(Plan.default(real.schema, 2.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(real)
    for chunk in (1, 13, 10**6):
        rows = _same_files(synth, tmp_path / str(chunk), chunk)
    assert rows["flights"] > 13
    st = pd.read_parquet(tmp_path / "13" / "stream" / "flights.parquet")
    assert st["flight_id"].str.fullmatch(r"F-\d+").all()
    assert st["previous"].dropna().isin(st["flight_id"]).all()
    # another draw and another scale stream the same way
    _same_files(synth, tmp_path / "s", 50, random_state=9, scale=0.5)


def test_sample_to_keeps_null_foreign_keys_in_every_chunk(tmp_path) -> None:  # noqa: ANN001
    from tests.conftest import random_shop, shop

    base = random_shop(n_stores=30, n_sales=600, seed=3)
    sales = base["sales"].astype({"store_id": "Int64"})
    sales.loc[np.random.default_rng(0).random(len(sales)) < 0.3, "store_id"] = pd.NA
    real = shop({"stores": base["stores"], "sales": sales}, nullable_fk=True)
    synth = RelationalSynthesizer(Plan.default(real.schema, 4.0, 1e-6, mechanism="independent"),
                                  random_state=2).fit(real)
    _same_files(synth, tmp_path, 64)
    st = pd.read_parquet(tmp_path / "stream" / "sales.parquet")
    assert 0 < st["store_id"].isna().mean() < 1  # nulls and links both written


def _enrolment() -> Database:
    rng = np.random.default_rng(2)
    students = pd.DataFrame({"sid": np.arange(80), "year": rng.integers(1, 4, 80)})
    courses = pd.DataFrame({"cid": np.arange(12), "dept": rng.choice(["m", "p", "c"], 12)})
    pairs = pd.DataFrame({"sid": rng.integers(0, 80, 400), "cid": rng.integers(0, 12, 400)}
                         ).drop_duplicates().reset_index(drop=True)
    pairs["grade"] = rng.integers(0, 5, len(pairs))
    students["club"] = rng.choice(["a", "b"], 80)
    courses["level"] = rng.integers(1, 3, 12)
    schema = Schema(
        (Table("students", ("sid",), (Attribute.categorical("year", [1, 2, 3]),
                                      Attribute.categorical("club", ["a", "b"]))),
         Table("courses", ("cid",), (Attribute.categorical("dept", ["m", "p", "c"]),
                                     Attribute.categorical("level", [1, 2]))),
         Table("enrolment", ("sid", "cid"), (Attribute.categorical("grade", [0, 1, 2, 3, 4]),))),
        (ForeignKey("enrolment", ("sid",), "students", ("sid",)),
         ForeignKey("enrolment", ("cid",), "courses", ("cid",))),
        PrivacyUnit(None, {"enrolment.sid->students": 20, "enrolment.cid->courses": 60}))
    return Database(schema, {"students": students, "courses": courses, "enrolment": pairs})


def test_sample_to_drops_repeated_link_keys_like_sample(tmp_path) -> None:  # noqa: ANN001
    """A table keyed by its two FKs: independent links draw some pairs twice, and both paths
    drop the same repeats (only the key columns are built whole) and say so."""
    real = _enrolment()
    synth = RelationalSynthesizer(Plan.default(real.schema, 4.0, 1e-6, mechanism="independent"),
                                  random_state=1).fit(real)
    mem_report = (synth.sample(), list(synth.sample_report_))[1]
    assert any("dropped" in line for line in mem_report)  # the case is exercised
    rows = _same_files(synth, tmp_path, 37)
    assert synth.sample_report_ == mem_report
    dropped = int(next(line for line in mem_report if "dropped" in line).split()[2].replace(",", ""))
    assert rows["enrolment"] + dropped == synth._rows("enrolment", 1.0)


def test_check_files_counts_broken_keys_out_of_core(tmp_path) -> None:  # noqa: ANN001
    real = _enrolment()
    paths = {}
    for name in real.schema.table_names:
        df = real[name]
        if name == "enrolment":  # a repeated key and an orphan course
            df = pd.concat([df, df.iloc[:1]], ignore_index=True)
            df.loc[len(df) - 2, "cid"] = 99
        if name == "students":
            df = df.astype({"sid": "Int64"})
            df.loc[3, "sid"] = pd.NA
        paths[name] = tmp_path / f"{name}.parquet"
        df.to_parquet(paths[name], index=False)
    found = {(p.table, p.kind): p.count for p in check_files(real.schema, paths)}
    assert found[("enrolment", "duplicate_key")] == 1
    assert found[("students", "null_key")] == 1
    assert found[("enrolment", "orphan")] >= 1  # the course 99, and the pairs of student 3
    good = {n: tmp_path / f"good_{n}.parquet" for n in real.schema.table_names}
    for n, p in good.items():
        real[n].to_parquet(p, index=False)
    assert check_files(real.schema, good) == []


def test_sample_to_validates_its_arguments(tmp_path, tiny_db) -> None:  # noqa: ANN001
    synth = RelationalSynthesizer(Plan.default(tiny_db.schema, 1.0, 1e-6, mechanism="independent"),
                                  random_state=0)
    with pytest.raises(NotFittedError):
        synth.sample_to(tmp_path)
    synth.fit(tiny_db)
    with pytest.raises(ValueError, match="chunk_rows"):
        synth.sample_to(tmp_path, chunk_rows=0)


def test_parquet_to_sqlite_writes_what_to_sqlite_writes(tmp_path) -> None:  # noqa: ANN001
    """Batch by batch from the files, the same rows, types and constraints as the in-memory
    export (dates stay dates, datetimes keep their time, nulls stay null)."""
    import sqlite3

    from relviz.stream import parquet_to_sqlite

    real = _tailnum_db()
    synth = RelationalSynthesizer(Plan.default(real.schema, 2.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(real)
    mem = synth.sample()
    mem.to_sqlite(tmp_path / "mem.sqlite")
    out = synth.sample_to(tmp_path / "files", chunk_rows=11)
    parquet_to_sqlite(mem.schema, out.paths, tmp_path / "stream.sqlite", batch_rows=7)
    a, b = sqlite3.connect(tmp_path / "mem.sqlite"), sqlite3.connect(tmp_path / "stream.sqlite")
    for name in mem.schema.table_names:
        ddl = "SELECT sql FROM sqlite_master WHERE name = ?"
        assert a.execute(ddl, (name,)).fetchone() == b.execute(ddl, (name,)).fetchone()
        rows = f'SELECT * FROM "{name}" ORDER BY rowid'
        assert a.execute(rows).fetchall() == b.execute(rows).fetchall()
    assert b.execute("PRAGMA foreign_key_check").fetchall() == []
    a.close()
    b.close()
    # and to DuckDB, copied by DuckDB from the files
    import duckdb

    from relviz.stream import parquet_to_duckdb

    mem.to_duckdb(tmp_path / "mem.duckdb")
    parquet_to_duckdb(mem.schema, out.paths, tmp_path / "stream.duckdb")
    a, b = duckdb.connect(str(tmp_path / "mem.duckdb")), duckdb.connect(str(tmp_path / "stream.duckdb"))
    cons = "SELECT constraint_type, constraint_column_names FROM duckdb_constraints() WHERE table_name = ? ORDER BY 1, 2"
    for name in mem.schema.table_names:
        rows = f'SELECT * FROM "{name}" ORDER BY 1'
        assert a.execute(rows).fetchall() == b.execute(rows).fetchall()
        assert a.execute(cons, [name]).fetchall() == b.execute(cons, [name]).fetchall()
    a.close()
    b.close()


def test_parquet_to_sqlite_keeps_dates_times_and_nulls(tmp_path) -> None:  # noqa: ANN001
    import sqlite3

    from relviz.stream import parquet_to_sqlite

    schema = Schema((Table("e", ("id",), (
        Attribute.datetime("day", "2020-01-01", "2021-01-01", bins=4, date=True, nullable=True),
        Attribute.datetime("at", "2020-01-01", "2021-01-01", bins=4, nullable=True),
        Attribute.numeric("x", 0, 1, bins=2, nullable=True))),), (), PrivacyUnit(None, {}))
    days = pd.to_datetime(["2020-02-01", None, "2020-12-31", "2020-05-05"])
    at = pd.to_datetime(["2020-02-01 10:30:00", "2020-03-01 00:00:00", None, "2020-07-07 00:00:01"])
    db = Database(schema, {"e": pd.DataFrame({"id": [1, 2, 3, 4], "day": days, "at": at,
                                              "x": [0.5, None, 0.25, 1.0]})})
    db.to_sqlite(tmp_path / "mem.sqlite")
    paths = dict(zip(schema.table_names, db.to_parquet(tmp_path / "files")))
    parquet_to_sqlite(schema, paths, tmp_path / "stream.sqlite", batch_rows=3)
    a, b = sqlite3.connect(tmp_path / "mem.sqlite"), sqlite3.connect(tmp_path / "stream.sqlite")
    got = b.execute("SELECT * FROM e ORDER BY id").fetchall()
    assert got == a.execute("SELECT * FROM e ORDER BY id").fetchall()
    assert got[0][1] == "2020-02-01" and got[0][2] == "2020-02-01 10:30:00" and got[1][1] is None
    a.close()
    b.close()


def test_cli_no_report_streams_the_same_release(tmp_path) -> None:  # noqa: ANN001
    """``relviz synth --no-report`` streams its tables (``sample_to``) and converts them to
    SQLite batch by batch; the release equals the in-memory path's for the same seed."""
    import sqlite3

    from relviz.cli import main

    args = ["synth", "--dataset", "galton", "--epsilon", "2", "--seed", "3", "--quiet"]
    assert main([*args, "--out", str(tmp_path / "mem")]) == 0
    assert main([*args, "--out", str(tmp_path / "stream"), "--no-report"]) == 0
    for name in ("families", "children"):
        a = pd.read_parquet(tmp_path / "mem" / "release" / "tables" / f"{name}.parquet")
        b = pd.read_parquet(tmp_path / "stream" / "release" / "tables" / f"{name}.parquet")
        pd.testing.assert_frame_equal(b, a)
        q = f'SELECT * FROM "{name}" ORDER BY rowid'
        with sqlite3.connect(tmp_path / "mem" / "release" / "synthetic.sqlite") as x, \
                sqlite3.connect(tmp_path / "stream" / "release" / "synthetic.sqlite") as y:
            assert x.execute(q).fetchall() == y.execute(q).fetchall()


def test_sample_to_streams_a_database_methods_tables(tmp_path) -> None:  # noqa: ANN001
    """PrivPetal generates the household and person tables together (a database method): the
    streamed files are still ``sample()``'s database."""
    from relviz import datasets

    real = datasets.load("census", n_households=300)
    plan = Plan.default(real.schema, 2.0, 1e-6, mechanism="independent", method="privpetal")
    synth = RelationalSynthesizer(plan, random_state=1).fit(real)
    rows = _same_files(synth, tmp_path, 97)
    assert rows["persons"] > 97 and rows["households"] > 97  # several chunks each


def test_sample_to_streams_an_mn_relation(tmp_path) -> None:  # noqa: ANN001
    """A link table learned as a relation (its pairs drawn first, its rows after): streamed the
    same, repeated pairs dropped the same."""
    real = _enrolment()
    plan = Plan.default(real.schema, 4.0, 1e-6, mechanism="independent").with_relation(
        real.schema, "enrolment", "biadjacency")
    synth = RelationalSynthesizer(plan, random_state=0).fit(real)
    _same_files(synth, tmp_path, 41)


def test_a_cancelled_sample_to_leaves_no_partial_file_and_the_synthesizer_usable(tmp_path) -> None:  # noqa: ANN001
    from relviz.errors import CancelledError

    real = _tailnum_db()
    calls = []

    def progress(event) -> None:  # noqa: ANN001
        if not calls and event.stage == "sample" and "writing flights" in event.message:
            calls.append(event)  # cancel once, mid-way through the second table
            synth.cancel()

    synth = RelationalSynthesizer(Plan.default(real.schema, 2.0, 1e-6, mechanism="independent"),
                                  random_state=0, progress=progress).fit(real)
    (tmp_path / "planes.parquet").write_text("an older file")
    with pytest.raises(CancelledError):
        synth.sample_to(tmp_path, chunk_rows=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["planes.parquet"]  # the old one, untouched
    assert (tmp_path / "planes.parquet").read_text() == "an older file"
    assert calls  # the cancel happened while flights was being written
    out = synth.sample_to(tmp_path)  # the token is reset: the next call runs
    assert set(out.paths) == {"planes", "flights"} and len(pd.read_parquet(out.paths["planes"])) > 0
