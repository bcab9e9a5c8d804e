"""The out-of-core source (``relviz.source.EncodedDatabase``) against the in-memory ``Database``:
the same problems, the same cap enforcement, the same codes, parent rows and key hashes, and so
the same fitted models and synthetic database for a seed (issue 15, item 5)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.errors import DataError
from relviz.plan import Plan
from relviz.privacy.measure import Curator, enforce_caps
from relviz.schema import PrivacyUnit
from relviz.source import EncodedDatabase
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import shop_frames, shop_schema, tiny_frames, tiny_schema
from tests.test_stream import _enrolment, _tailnum_db


def _write(frames: dict[str, pd.DataFrame], tmp_path: Path) -> tuple[Path, Path]:
    """The frames as a DuckDB file and a Parquet folder, stored as they are (no constraints, so
    broken keys can be stored too)."""
    path, folder = tmp_path / "db.duckdb", tmp_path / "parquet"
    folder.mkdir()
    con = duckdb.connect(str(path))
    for name, df in frames.items():
        con.register("frame", df)
        con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')
        con.unregister("frame")
        df.to_parquet(folder / f"{name}.parquet", index=False)
    con.close()
    return path, folder


def _sources(db: Database, tmp_path: Path, chunk_rows: int) -> list[tuple[Database, EncodedDatabase]]:
    path, folder = _write(dict(db.tables), tmp_path)
    return [(Database.from_duckdb(path, db.schema, validate=False),
             EncodedDatabase.from_duckdb(path, db.schema, chunk_rows=chunk_rows)),
            (Database.from_parquet_dir(folder, db.schema, validate=False),
             EncodedDatabase.from_parquet_dir(folder, db.schema, chunk_rows=chunk_rows))]


def _tiny_parents() -> Database:
    s = tiny_schema(caps={"persons.hid->households": 2})
    return Database(s.with_privacy_unit(PrivacyUnit("households", {"persons.hid->households": 2},
                                                    truncate="parents")), tiny_frames())


CASES = {
    "caps bind (children dropped)": lambda: Database(tiny_schema(caps={"persons.hid->households": 2}),
                                                     tiny_frames(n_h=300)),
    "caps bind (parents dropped with dependants)": _tiny_parents,
    "formatted keys, nullable self-reference": _tailnum_db,
    "link table with two caps": _enrolment,
    "nullable FK": lambda: Database(shop_schema(nullable_fk=True), {
        **shop_frames(), "sales": shop_frames()["sales"].assign(store_id=[1, None, 1, 2, 2, None, 3, 3])}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_encoded_source_gives_the_in_memory_fit_and_sample(case: str, tmp_path: Path) -> None:
    db = CASES[case]()
    for ref, src in _sources(db, tmp_path, chunk_rows=1):  # one 2,048-row vector per chunk
        assert src.problems() == [] and ref.problems() == []
        a, report_a = enforce_caps(ref)
        b, report_b = enforce_caps(src)
        pd.testing.assert_frame_equal(report_a.rows, report_b.rows)
        assert a.row_counts() == b.row_counts()
        ca, cb = Curator(a), Curator(b)
        for t in db.schema.tables:
            assert np.array_equal(ca._enc(t.name).codes, cb._enc(t.name).codes), t.name
            if not t.public:
                assert np.array_equal(ca.row_keys(t.name, 11), cb.row_keys(t.name, 11)), t.name
        for fk in db.schema.foreign_keys:
            assert np.array_equal(ca._pidx(fk), cb._pidx(fk)), fk.name
        plan = Plan.default(db.schema, 2.0, 1e-6)
        s1 = RelationalSynthesizer(plan, random_state=5).fit(ref)
        s2 = RelationalSynthesizer(plan, random_state=5).fit(src)
        assert [e.sigma for e in s1.ledger_] == [e.sigma for e in s2.ledger_]
        x, y = s1.sample(), s2.sample()
        for t in db.schema.table_names:
            pd.testing.assert_frame_equal(x[t], y[t])


@pytest.mark.parametrize("case", ["caps bind (children dropped)", "formatted keys, nullable self-reference",
                                  "nullable FK"])
def test_a_sqlite_file_is_staged_and_read_like_database_from_sqlite(case: str, tmp_path: Path) -> None:
    """SQLite: staged batch by batch into Parquet (declared types), then read out of core; the
    same fit and sample as ``Database.from_sqlite``. Batches of 7 rows make many row groups."""
    db = CASES[case]()
    db.to_sqlite(tmp_path / "db.sqlite")
    ref = Database.from_sqlite(tmp_path / "db.sqlite", db.schema)
    src = EncodedDatabase.from_sqlite(tmp_path / "db.sqlite", db.schema, batch_rows=7, chunk_rows=1)
    assert src.problems() == []
    plan = Plan.default(db.schema, 2.0, 1e-6)
    x = RelationalSynthesizer(plan, random_state=1).fit(ref).sample()
    y = RelationalSynthesizer(plan, random_state=1).fit(src).sample()
    for t in db.schema.table_names:
        pd.testing.assert_frame_equal(x[t], y[t])
    staging = src._path
    assert staging.exists()
    del src
    import gc

    gc.collect()
    assert not staging.exists()  # the staging folder goes with the object


def test_a_staged_sqlite_source_outlives_the_database_it_was_derived_from(tmp_path: Path) -> None:
    """``drop_undeclared`` (CLI ``--drop-undeclared``) gives a new source over the same staged
    files: the first one may go, the files stay until the last one is gone."""
    import gc
    import sqlite3

    db = Database(tiny_schema(), tiny_frames())
    db.to_sqlite(tmp_path / "db.sqlite")
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        con.execute("ALTER TABLE persons ADD COLUMN note TEXT DEFAULT 'x'")
    src = EncodedDatabase.from_sqlite(tmp_path / "db.sqlite", db.schema)
    staging = src._path
    src, dropped = src.drop_undeclared()  # the first source is no longer referenced
    gc.collect()
    assert dropped == {"persons": ["note"]} and staging.exists()
    assert src.problems() == [] and src.encoded("persons").n_rows == len(db["persons"])
    del src
    gc.collect()
    assert not staging.exists()


def test_sqlite_staging_types_untyped_columns_from_their_first_values(tmp_path: Path) -> None:
    """A column with no declared type, null in the first batches, takes the type of its first
    values; declared INTEGER/TEXT/REAL columns keep theirs even when a batch is all null."""
    import sqlite3

    import pyarrow.parquet as pq

    from relviz.source import _stage_sqlite_table

    with sqlite3.connect(tmp_path / "x.sqlite") as con:
        con.execute("CREATE TABLE t (a, b INTEGER, c TEXT, d REAL)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                        [(None if i < 10 else i / 2, None if i < 5 else i, None if i < 5 else f"s{i}",
                          None if i % 2 else i) for i in range(20)])
        _stage_sqlite_table(con, "t", tmp_path / "t.parquet", batch_rows=4)
    table = pq.read_table(tmp_path / "t.parquet")
    assert [str(f.type) for f in table.schema] == ["double", "int64", "string", "double"]
    assert pq.ParquetFile(tmp_path / "t.parquet").num_row_groups == 5
    df = table.to_pandas()
    assert df["a"].isna().sum() == 10 and df["a"].iloc[-1] == 9.5
    assert df["b"].tolist()[5:] == list(range(5, 20)) and df["c"].iloc[5] == "s5"


def test_sqlite_values_that_do_not_fit_their_column_type_are_reported_like_database(tmp_path: Path) -> None:
    """SQLite keeps a type per value: text in an INTEGER column, or a real after integers in an
    untyped one, is staged as text and reported as ``Database.from_sqlite`` reports it."""
    import sqlite3

    db = Database(tiny_schema(), tiny_frames())
    db.to_sqlite(tmp_path / "db.sqlite")
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        n = len(db["persons"])
        con.execute("UPDATE persons SET age = 'unknown' WHERE pid = ?", (n,))  # the last batch
    ref = Database.from_sqlite(tmp_path / "db.sqlite", db.schema, validate=False)
    src = EncodedDatabase.from_sqlite(tmp_path / "db.sqlite", db.schema, batch_rows=16)
    assert _listed(src.problems()) == _listed(ref.problems())
    assert [(p.kind, p.column, p.examples) for p in src.problems()] == [("not_parsable", "age", ("unknown",))]


def test_caps_that_bind_drop_rows_out_of_core(tmp_path: Path) -> None:
    """The first case's caps do bind (so the equality above covers a real truncation)."""
    db = CASES["caps bind (children dropped)"]()
    src = EncodedDatabase.from_duckdb(_write(dict(db.tables), tmp_path)[0], db.schema)
    truncated, report = enforce_caps(src)
    assert report.changed and truncated.degrees("persons.hid->households").max() == 2
    assert truncated.row_counts()["persons"] < src.row_counts()["persons"]


def test_fk_attribute_on_the_codes(tmp_path: Path) -> None:
    """An FK to a public parent modelled as a child attribute (fk-attribute) out of core."""
    db = Database(tiny_schema(), tiny_frames(n_h=120))
    plan = Plan.default(db.schema, 2.0, 1e-6).with_method("households.region->regions", "fk-attribute")
    for ref, src in _sources(db, tmp_path, chunk_rows=1):
        s1 = RelationalSynthesizer(plan, random_state=2).fit(ref)
        s2 = RelationalSynthesizer(plan, random_state=2).fit(src)
        assert s2.key_attributes_ == s1.key_attributes_ and s1.key_attributes_
        x, y = s1.sample(), s2.sample()
        for t in db.schema.table_names:
            pd.testing.assert_frame_equal(x[t], y[t])


def test_parent_attributes_on_the_codes(tmp_path: Path) -> None:
    """A public parent's attributes copied into the child (parent-attributes) out of core: the
    same copied codes, fit and sample as in memory."""
    db = Database(tiny_schema(), tiny_frames(n_h=120))
    plan = Plan.default(db.schema, 2.0, 1e-6).with_method("households.region->regions",
                                                           "parent-attributes")
    for ref, src in _sources(db, tmp_path, chunk_rows=1):
        s1 = RelationalSynthesizer(plan, random_state=2).fit(ref)
        s2 = RelationalSynthesizer(plan, random_state=2).fit(src)
        assert s2.key_attributes_ == s1.key_attributes_ == {
            "households.region->regions": ("region→regions.climate",)}
        x, y = s1.sample(), s2.sample()
        for t in db.schema.table_names:
            pd.testing.assert_frame_equal(x[t], y[t])


def _listed(problems: list) -> list[str]:
    """Problems as comparable text (numpy scalars in the examples as Python values)."""
    def plain(v: object) -> object:
        return v.item() if hasattr(v, "item") else v
    return [str((p.kind, p.table, p.column, p.count, p.message, tuple(map(plain, p.examples or ()))))
            for p in problems]


def test_encoded_source_lists_every_problem_as_database_does(tmp_path: Path) -> None:
    f = tiny_frames()
    hh = f["households"].copy()
    hh.loc[3, "hid"] = hh.loc[2, "hid"]  # a duplicate key
    hh.loc[5, "tenure"] = "lease"  # an unknown category
    hh.loc[6, "income"] = 900.0  # out of bounds
    hh["note"] = "x"  # undeclared
    persons = f["persons"].copy()
    persons.loc[0, "hid"] = 10_000  # an orphan
    persons.loc[1, "sex"] = None  # a null in a non-nullable attribute
    persons = persons.drop(columns=["age"])  # a missing column
    frames = {"regions": f["regions"], "households": hh, "persons": persons}
    schema = tiny_schema()
    ref = Database(schema, frames, validate=False)
    path, folder = _write(frames, tmp_path)
    for src in (EncodedDatabase.from_duckdb(path, schema, chunk_rows=1),
                EncodedDatabase.from_parquet_dir(folder, schema)):
        got, want = _listed(src.problems()), _listed(ref.problems())
        assert sorted(got) == sorted(want)
        assert {p.kind for p in src.problems()} >= {"duplicate_key", "unknown_category", "out_of_bounds",
                                         "undeclared_column", "orphan", "null_value", "missing_column"}
        with pytest.raises(DataError):
            src.validate()
        with pytest.raises(DataError, match="orphan"):
            RelationalSynthesizer(Plan.default(schema), random_state=0).fit(src)


def test_private_tables_are_codes_only(tmp_path: Path) -> None:
    db = Database(tiny_schema(), tiny_frames())
    src = EncodedDatabase.from_duckdb(_write(dict(db.tables), tmp_path)[0], db.schema)
    pd.testing.assert_frame_equal(src["regions"], Database.from_duckdb(tmp_path / "db.duckdb",
                                                                       db.schema)["regions"])
    with pytest.raises(KeyError, match="codes only"):
        src["persons"]
    assert src.encoded("persons").n_rows == len(db["persons"])


def test_drop_undeclared_excludes_extra_columns_of_the_source(tmp_path: Path) -> None:
    db = Database(tiny_schema(), tiny_frames())
    frames = {**db.tables, "persons": db["persons"].assign(note="free text")}
    src = EncodedDatabase.from_parquet_dir(_write(frames, tmp_path)[1], db.schema)
    assert src.undeclared_columns() == {"persons": ["note"]}
    assert [p.kind for p in src.problems()] == ["undeclared_column"]
    kept, dropped = src.drop_undeclared()
    assert dropped == {"persons": ["note"]} and kept.problems() == []
    assert kept.excluded_columns() == {"persons": ("note",)}
    assert np.array_equal(kept.encoded("persons").codes, Curator(db)._enc("persons").codes)


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_cli_no_report_reads_a_database_file_out_of_core(kind: str, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """``relviz synth --no-report`` on a .duckdb or .sqlite file with a schema is read out of
    core, and releases what the in-memory path samples with the same seed (after a Parquet round
    trip)."""
    from relviz.cli import main

    db = Database(tiny_schema(caps={"persons.hid->households": 2}), tiny_frames(n_h=200))
    path, _ = _write(dict(db.tables), tmp_path)
    if kind == "sqlite":
        path = db.to_sqlite(tmp_path / "db.sqlite")
    db.schema.to_json(tmp_path / "schema.json")
    assert main(["synth", "--data", str(path), "--schema", str(tmp_path / "schema.json"), "--seed", "3",
                 "--epsilon", "2", "--quiet", "--out", str(tmp_path / "a"), "--no-report"]) == 0
    assert "read out of core" in capsys.readouterr().err
    read = Database.from_sqlite if kind == "sqlite" else Database.from_duckdb
    synth = RelationalSynthesizer(Plan.default(db.schema, 2.0, 1e-6), random_state=3).fit(
        read(path, db.schema))
    synth.sample().to_parquet(tmp_path / "want")
    for t in db.schema.table_names:
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "a" / "release" / "tables" / f"{t}.parquet"),
            pd.read_parquet(tmp_path / "want" / f"{t}.parquet"))


@pytest.mark.filterwarnings("ignore:DP cap of households:UserWarning")  # a 3-row public parent
def test_dp_caps_out_of_core_release_what_the_in_memory_path_releases(tmp_path: Path) -> None:
    """``with_dp_caps`` (CLI ``--dp-caps``) on the source: the same τ for the same generator,
    and the arrays are kept under the schema with the cap (nothing read again)."""
    from relviz.privacy.caps import with_dp_caps

    db = Database(tiny_schema(entity=None, caps={}), tiny_frames(n_h=200), validate=False)
    for ref, src in _sources(db, tmp_path, chunk_rows=1):
        assert [p.kind for p in src.problems()] == [p.kind for p in ref.problems()]
        a, ra = with_dp_caps(ref, rho=0.5, candidates=(1, 8), rng=np.random.default_rng(4))
        b, rb = with_dp_caps(src, rho=0.5, candidates=(1, 8), rng=np.random.default_rng(4))
        assert [(r.fk, r.tau) for r in ra] == [(r.fk, r.tau) for r in rb] and len(rb) == 2
        assert b.problems() == [] and b._arrays is src._arrays
        assert b.schema == a.schema


def test_tpch_with_its_composite_foreign_key_reads_like_the_database(tmp_path: Path) -> None:
    """TPC-H sf 0.01 with revisions (8 tables, the composite FK lineitem → partsupp, public
    parents, a cap): the same codes, parent rows and cap report out of core as in memory."""
    from relviz.datasets import tpch

    try:
        frames = tpch.tables(0.01, 0, True, cache_dir=tmp_path / "cache")
    except RuntimeError:  # pragma: no cover - the generator is a project dependency
        pytest.skip("tpchgen-cli is not installed")
    db = Database(tpch.schema(frames), frames)
    assert any(len(fk.columns) == 2 for fk in db.schema.foreign_keys)
    for ref, src in _sources(db, tmp_path, chunk_rows=4096):
        a, report_a = enforce_caps(ref)
        b, report_b = enforce_caps(src)
        pd.testing.assert_frame_equal(report_a.rows, report_b.rows)
        ca, cb = Curator(a), Curator(b)
        for t in db.schema.tables:
            assert np.array_equal(ca._enc(t.name).codes, cb._enc(t.name).codes), t.name
        for fk in db.schema.foreign_keys:
            assert np.array_equal(ca._pidx(fk), cb._pidx(fk)), fk.name
        assert (cb._pidx(db.schema.foreign_key("lineitem.l_partkey+l_suppkey->partsupp")) >= 0).all()


def test_cli_validate_out_of_core_lists_the_problems(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """``relviz validate --out-of-core``: every problem (as the in-memory validate prints them),
    or the row counts of a valid database."""
    from relviz.cli import main

    db = Database(tiny_schema(), tiny_frames())
    db.schema.to_json(tmp_path / "schema.json")
    frames = {**db.tables, "persons": db["persons"].assign(hid=lambda d: d["hid"].where(d.index != 3, 999))}
    (tmp_path / "bad").mkdir()
    bad, _ = _write(frames, tmp_path / "bad")
    good = db.to_duckdb(tmp_path / "good.duckdb")
    args = ["validate", "--schema", str(tmp_path / "schema.json"), "--out-of-core", "--data"]
    assert main([*args, str(bad)]) == 2
    err = capsys.readouterr().err
    assert "[orphan] persons.hid" in err and "999" in err
    assert main([*args, str(good)]) == 0
    out = capsys.readouterr().out
    assert f"persons: {len(db['persons']):,}" in out and "EncodedDatabase(tiny;" in out
    with pytest.raises(SystemExit, match="--out-of-core reads"):
        main(["validate", "--out-of-core", "--data", str(good)])


def test_fit_reports_the_read_and_a_cancelled_read_leaves_the_source_usable(tmp_path: Path) -> None:
    """``fit`` reads an out-of-core source with progress per chunk; cancelling during the read
    raises ``CancelledError``, keeps nothing, and the next fit reads again and gives the same
    synthetic database as the in-memory path."""
    from relviz.errors import CancelledError

    db = Database(tiny_schema(caps={"persons.hid->households": 2}), tiny_frames(n_h=3000))
    path, _ = _write(dict(db.tables), tmp_path)
    src = EncodedDatabase.from_duckdb(path, db.schema, chunk_rows=1)
    plan = Plan.default(db.schema, 2.0, 1e-6)
    events: list = []
    synth = RelationalSynthesizer(plan, random_state=0, progress=events.append)

    def cancel_in_read(ev) -> None:  # noqa: ANN001 - ProgressEvent
        events.append(ev)
        if "reading persons" in ev.message:
            synth.cancel()

    synth.progress = cancel_in_read
    with pytest.raises(CancelledError):
        synth.fit(src)
    assert src._problems is None and src._arrays is None  # nothing kept
    reads = [ev for ev in events if "out of core" in ev.message]
    assert {ev.message.split()[1] for ev in reads} >= {"regions", "households", "persons"}
    assert [ev.fraction for ev in reads] == sorted(ev.fraction for ev in reads)
    synth.progress = None
    y = synth.fit(src).sample()
    x = RelationalSynthesizer(plan, random_state=0).fit(Database.from_duckdb(path, db.schema)).sample()
    for t in db.schema.table_names:
        pd.testing.assert_frame_equal(x[t], y[t])
