"""Streamed sampling output: synthetic tables written to Parquet one chunk of rows at a time.

:meth:`relviz.synthesizer.RelationalSynthesizer.sample` builds every synthetic table as a pandas
frame, so its peak memory holds the whole decoded database (about 3 GB per TPC-H scale-factor unit,
``benchmarks/scale.py``). :meth:`~relviz.synthesizer.RelationalSynthesizer.sample_to` keeps only
what sampling itself needs (the integer codes of every table, in their smallest unsigned type, and
the parent row of every child row) and decodes, keys and writes each table in chunks of rows
(issue 15: "sampling writes large tables in chunks to Parquet/DuckDB"). The files hold exactly the
database :meth:`sample` returns for the same seed, whatever the chunk size:

* **Values.** Numeric and datetime attributes are decoded with a uniform draw inside their bin
  (:func:`relviz.encoding.decode_column`), one draw per row and column from the table's
  generator, column after column. A chunk's draws are found by jumping the generator (PCG64's
  ``advance``) to ``column · n_rows + first row`` instead of drawing everything before them
  (:func:`decode_rows`).
* **Keys.** A private table's own key columns are surrogate numbers ``1 … n`` in the schema's
  public key format (:class:`relviz.keys.KeyFormat`); a foreign-key column takes the parent row's
  key, followed through chains of keys (:class:`KeyValues`), so no key column is ever held whole.
* **Rows dropped.** A table whose primary key is made of foreign-key columns drops the rows that
  repeat an earlier key, as :meth:`sample` does; only those key columns are built whole.

Checks run where the files are (:func:`check_files`): DuckDB reads the Parquet files out of core
and counts null and duplicate primary keys and orphan foreign keys, the checks
:meth:`relviz.database.Database.problems` runs in memory.

Why our own glue: pyarrow's ``ParquetWriter`` and DuckDB do the input and output; what is relviz's
is deciding each chunk's values exactly as the in-memory sample does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relviz.encoding import EncodedTable, decode_column
from relviz.errors import Problem
from relviz.keys import key_roots

__all__ = ["decode_rows", "KeyValues", "StreamedSample", "check_files", "keyed_by_foreign_keys",
           "parquet_to_duckdb", "parquet_to_sqlite", "repeats_note", "write_table"]


class _NoDraws:
    """Stands for a generator where a decode must not draw (categorical attributes)."""

    def random(self, n: int) -> np.ndarray:  # pragma: no cover - categorical decodes do not draw
        raise AssertionError("a categorical attribute drew random numbers")


def decode_rows(table: Any, enc: EncodedTable, state: Mapping[str, Any], start: int, stop: int
                ) -> pd.DataFrame:
    """Decode rows ``start:stop`` of ``enc`` as :func:`relviz.encoding.decode_table` decodes them
    from a generator in ``state``.

    ``decode_table`` draws ``n_rows`` uniforms per numeric or datetime attribute, attribute after
    attribute (categorical attributes draw none), so the ``m``-th drawing attribute's row ``i``
    takes draw ``m · n_rows + i``. PCG64 makes one 64-bit step per float64 uniform, and
    ``advance(k)`` jumps ``k`` steps at once.

    Args:
        table: The schema's :class:`~relviz.schema.Table`.
        enc: The table's codes, ``(n_rows, n_attributes)``.
        state: ``Generator.bit_generator.state`` of the decode generator *before* any decode draw
            (a PCG64 state).
        start, stop: Row range, ``0 ≤ start ≤ stop ≤ n_rows``.

    Returns:
        A frame of ``stop − start`` rows with the table's attribute columns (index ``0…``).

    Raises:
        ValueError: a generator other than PCG64, or a bad row range.
    """
    if state.get("bit_generator") != "PCG64":
        raise ValueError(f"streamed decoding needs a PCG64 generator, not {state.get('bit_generator')}")
    n = enc.n_rows
    if not 0 <= start <= stop <= n:
        raise ValueError(f"rows {start}:{stop} outside 0:{n}")
    cols: dict[str, pd.Series] = {}
    drawn = 0
    for i, a in enumerate(table.attributes):
        codes = enc.codes[start:stop, i]
        if a.kind == "categorical":
            cols[a.name] = decode_column(a, codes, _NoDraws())  # type: ignore[arg-type]
            continue
        bits = np.random.PCG64()
        bits.state = dict(state)
        bits.advance(drawn * n + start)
        cols[a.name] = decode_column(a, codes, np.random.Generator(bits))
        drawn += 1
    return pd.DataFrame(cols, index=pd.RangeIndex(stop - start))


@dataclass
class KeyValues:
    """Key column values of synthetic rows, computed for the rows asked for.

    Args:
        schema: The synthetic database's schema.
        public: ``{table: frame}`` of the public tables (copied verbatim into the output).
        links: ``{fk name: parent row of every child row}`` (``int64``, ``-1`` for null) of every
            private foreign key.
        n_rows: Synthetic row count of every private table.
    """

    schema: Any
    public: Mapping[str, pd.DataFrame]
    links: Mapping[str, np.ndarray]
    n_rows: Mapping[str, int]
    _fk_of: dict[tuple[str, str], tuple[Any, str]] = field(default_factory=dict, init=False)
    _formats: dict[tuple[str, str], Any] = field(default_factory=dict, init=False)
    _has_null: dict[str, bool] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for fk in self.schema.private_foreign_keys:  # a column in two FKs: the last one's value,
            for c, pc in zip(fk.columns, fk.parent_columns):  # as sample() writes them in order
                self._fk_of[(fk.child, c)] = (fk, pc)
            self._has_null[fk.name] = bool((np.asarray(self.links[fk.name]) < 0).any())
        formats = {(t.name, f.column): f for t in self.schema.tables if not t.public
                   for f in t.key_format}
        for col, root in key_roots(self.schema).items():
            fmt = formats.get(root)
            if fmt is not None and fmt.dtype != "int" and col == root:
                self._formats[col] = fmt

    def values(self, table: str, column: str, rows: np.ndarray) -> pd.Series:
        """Values of ``table.column`` at synthetic row positions ``rows`` (``(k,)`` int64, ≥ 0);
        a Series with index ``0…k−1``, the dtype :meth:`RelationalSynthesizer.sample` gives."""
        rows = np.asarray(rows, dtype=np.int64)
        if table in self.public:
            return pd.Series(self.public[table][column].to_numpy()[rows])
        hit = self._fk_of.get((table, column))
        if hit is not None:
            fk, pc = hit
            idx = np.asarray(self.links[fk.name])[rows]
            null = idx < 0
            if self.n_rows.get(fk.parent, len(self.public.get(fk.parent, ()))) == 0:
                return pd.Series(np.full(len(rows), None, dtype=object))
            vals = self.values(fk.parent, pc, np.where(null, 0, idx))
            if self._has_null[fk.name]:
                vals = vals.astype("Int64") if vals.dtype.kind in "iu" else vals
                vals = vals.mask(null)
            return vals
        if column in self.schema.table(table).primary_key:
            nums = pd.Series(rows + 1)
            fmt = self._formats.get((table, column))
            return fmt.apply(nums) if fmt is not None else nums
        return pd.Series(np.full(len(rows), None, dtype=object))


@dataclass
class StreamedSample:
    """What :meth:`~relviz.synthesizer.RelationalSynthesizer.sample_to` wrote.

    Attributes:
        paths: ``{table: Parquet file}``.
        rows: ``{table: rows written}``.
        report: Notes on the sample (rows dropped because their key repeated).
    """

    paths: dict[str, Path]
    rows: dict[str, int]
    report: list[str]


def _arrow_schema(columns: list[str], probe: pd.DataFrame) -> Any:
    """Arrow types of ``columns`` from a frame holding a non-null value where the column has any
    (an object column's type inferred from its values, others from the dtype)."""
    import pyarrow as pa

    fields = []
    for c in columns:
        s = probe[c]
        if s.dtype == object:
            vals = s.dropna().head(1000).tolist()
            typ = pa.infer_type(vals) if vals else pa.null()  # as Database.to_parquet
        else:
            typ = pa.Schema.from_pandas(s.iloc[:0].to_frame(), preserve_index=False).field(c).type
        fields.append(pa.field(c, typ))
    return pa.schema(fields)


def keyed_by_foreign_keys(schema: Any, name: str) -> bool:
    """Whether ``name``'s primary key is made of foreign-key columns (a link table): its
    independently linked rows may repeat a key, and sampling drops the repeats."""
    t = schema.table(name)
    fk_cols = {c for fk in schema.fks_from(name) for c in fk.columns}
    return bool(t.primary_key) and set(t.primary_key) <= fk_cols


def repeats_note(name: str, primary_key: tuple[str, ...], count: int) -> str:
    """The sampling note for ``count`` rows dropped because their key repeated."""
    return (f"{name}: dropped {count:,} rows whose key {primary_key} repeated "
            "an earlier row (independent links drew the same pair twice)")


def _probe(schema: Any, name: str, keys: KeyValues, n: int) -> pd.DataFrame:
    """A few rows with a non-null value in every column that has one: each attribute decoded
    from its first (up to 64) non-null codes, each key column at row 0 and at the first row each
    FK links (the Arrow types of a streamed table, whatever its first chunk holds)."""
    cols: dict[str, pd.Series] = {}
    for a in schema.table(name).attributes:
        valid = np.arange(min(a.size, 64))
        cols[a.name] = decode_column(a, valid, np.random.default_rng(0)).dropna().reset_index(drop=True)
    rows = {0}
    for fk in schema.fks_from(name):
        if fk.name in keys.links:
            rows.update(np.flatnonzero(np.asarray(keys.links[fk.name]) >= 0)[:1].tolist())
    at = np.array(sorted(rows) if n else [], dtype=np.int64)
    for c in schema.columns(name):
        if c not in cols:
            cols[c] = keys.values(name, c, at).dropna().reset_index(drop=True)
    width = max([len(v) for v in cols.values()] + [1])  # shorter columns repeat their values
    return pd.DataFrame({c: v.iloc[np.arange(width) % len(v)].reset_index(drop=True) if len(v)
                         else pd.Series([None] * width, dtype=object) for c, v in cols.items()})


def write_table(path: Path, schema: Any, name: str, enc: EncodedTable, state: Mapping[str, Any],
                keys: KeyValues, chunk_rows: int, progress: Callable[[float, str], None]
                ) -> tuple[int, int]:
    """Write a sampled private table to one Parquet file, one row group per chunk of
    ``chunk_rows`` rows: attributes decoded by :func:`decode_rows`, key columns from ``keys``,
    and, for a table keyed by its FKs, the rows repeating an earlier key dropped.

    Args:
        path: The file (replaced).
        schema: The synthetic database's schema.
        name: The table.
        enc: Its sampled codes.
        state: Its decode generator's state before any decode draw (see :func:`decode_rows`).
        keys: The key values of every table.
        chunk_rows: Rows per chunk (≥ 1).
        progress: ``progress(fraction, message)`` after each chunk.

    Returns:
        ``(rows written, rows dropped as repeats)``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    t, n = schema.table(name), enc.n_rows
    columns = list(schema.columns(name))
    key_cols = [c for c in columns if c not in enc.attributes]
    keep = None
    if keyed_by_foreign_keys(schema, name):
        every = np.arange(n, dtype=np.int64)
        dup = pd.DataFrame({c: keys.values(name, c, every) for c in t.primary_key}).duplicated()
        keep = ~dup.to_numpy() if dup.any() else None
    arrow = _arrow_schema(columns, _probe(schema, name, keys, n))
    written = 0
    with pq.ParquetWriter(path, arrow) as writer:
        for a in range(0, max(n, 1), chunk_rows):
            b = min(a + chunk_rows, n)
            df = decode_rows(t, enc, state, a, b)
            rows = np.arange(a, b, dtype=np.int64)
            for c in key_cols:
                df[c] = keys.values(name, c, rows)
            if keep is not None:
                df = df[keep[a:b]].reset_index(drop=True)
            writer.write_table(pa.Table.from_pandas(df[columns], schema=arrow, preserve_index=False))
            written += len(df)
            del df
            progress(b / max(n, 1), f"writing {name}: {b:,} of {n:,} rows")
    return written, 0 if keep is None else int((~keep).sum())


def check_files(schema: Any, paths: Mapping[str, Path]) -> list[Problem]:
    """Null and duplicate primary keys and orphan foreign keys of a database in Parquet files,
    counted by DuckDB out of core (the key checks of :meth:`relviz.database.Database.problems`).

    Returns:
        The problems found (empty for a valid database).
    """
    import duckdb

    def q(name: str) -> str:
        return "'" + str(paths[name]).replace("'", "''") + "'"

    def ident(c: str) -> str:
        return '"' + c.replace('"', '""') + '"'

    out: list[Problem] = []
    con = duckdb.connect()
    try:
        for t in schema.tables:
            if not t.primary_key:
                continue
            cols = ", ".join(ident(c) for c in t.primary_key)
            any_null = " OR ".join(f"{ident(c)} IS NULL" for c in t.primary_key)
            n_null = con.execute(f"SELECT count(*) FROM read_parquet({q(t.name)}) WHERE {any_null}"
                                 ).fetchone()[0]
            if n_null:
                out.append(Problem("null_key", "nulls in the primary key", t.name, cols, int(n_null)))
            n_dup = con.execute(f"SELECT coalesce(sum(k - 1), 0) FROM (SELECT count(*) AS k FROM "
                                f"read_parquet({q(t.name)}) GROUP BY {cols} HAVING count(*) > 1)"
                                ).fetchone()[0]
            if n_dup:
                out.append(Problem("duplicate_key", "duplicate primary-key values", t.name, cols,
                                   int(n_dup)))
        for fk in schema.foreign_keys:
            on = " AND ".join(f"p.{ident(pc)} = c.{ident(cc)}"
                              for cc, pc in zip(fk.columns, fk.parent_columns))
            not_null = " AND ".join(f"c.{ident(cc)} IS NOT NULL" for cc in fk.columns)
            n_orphan = con.execute(
                f"SELECT count(*) FROM read_parquet({q(fk.child)}) c WHERE {not_null} AND NOT EXISTS "
                f"(SELECT 1 FROM read_parquet({q(fk.parent)}) p WHERE {on})").fetchone()[0]
            if n_orphan:
                out.append(Problem("orphan", f"foreign key without a parent row ({fk.label()})",
                                   fk.child, ", ".join(fk.columns), int(n_orphan)))
    finally:
        con.close()
    return out


def parquet_to_sqlite(schema: Any, paths: Mapping[str, Path], path: str | Path,
                      batch_rows: int | None = None) -> Path:
    """A SQLite file with PRIMARY KEY and FOREIGN KEY constraints from a database in Parquet
    files, read one batch of rows at a time (what :meth:`relviz.database.Database.to_sqlite`
    writes for the same tables, without holding any table whole).

    Args:
        schema: The database's schema (tables written parents first).
        paths: ``{table: Parquet file}``.
        path: The SQLite file (replaced).
        batch_rows: Rows converted to Python values at a time (default
            ``relviz.database.WRITE_CHUNK_ROWS``).

    Returns:
        The path written.
    """
    import sqlite3

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from relviz.database import WRITE_CHUNK_ROWS, _sql_type, _sqlite_rows, table_ddl

    batch_rows = batch_rows or WRITE_CHUNK_ROWS
    path = Path(path)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    try:
        for name in schema.topological_order():
            columns = list(schema.columns(name))
            pf = pq.ParquetFile(paths[name])
            empty = pf.schema_arrow.empty_table().to_pandas()
            con.execute(table_ddl(schema, name, {c: _sql_type(empty[c], "sqlite") for c in columns},
                                  "sqlite"))
            dt = [c for c in columns if pd.api.types.is_datetime64_any_dtype(empty[c])]
            whole_days = {c: True for c in dt}
            for batch in (pf.iter_batches(batch_size=batch_rows, columns=dt) if dt else ()):
                for c in dt:
                    col = batch.column(c).cast("int64")  # ns (or the file's unit) since the epoch
                    unit = batch.schema.field(c).type.unit
                    day = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000,
                           "ns": 86_400_000_000_000}[unit]
                    rem = pc.drop_null(pc.equal(pc.subtract(col, pc.multiply(pc.divide(col, day), day)), 0))
                    whole_days[c] = whole_days[c] and bool(pc.all(rem).as_py() in (True, None))
            cols = ", ".join(f'"{c}"' for c in columns)
            marks = ", ".join("?" for _ in columns)
            for batch in pf.iter_batches(batch_size=batch_rows, columns=columns):
                con.executemany(f'INSERT INTO "{name}" ({cols}) VALUES ({marks})',
                                _sqlite_rows(batch.to_pandas(), whole_days))
        con.commit()
    finally:
        con.close()
    return path


def parquet_to_duckdb(schema: Any, paths: Mapping[str, Path], path: str | Path) -> Path:
    """A DuckDB file with PRIMARY KEY and FOREIGN KEY constraints from a database in Parquet
    files, copied by DuckDB itself (``INSERT … SELECT * FROM read_parquet``, out of core): what
    :meth:`relviz.database.Database.to_duckdb` writes for the same tables.

    Returns:
        The path written.
    """
    import duckdb
    import pyarrow.parquet as pq

    from relviz.database import _sql_type, table_ddl

    path = Path(path)
    if path.exists():
        path.unlink()
    con = duckdb.connect(str(path))
    try:
        for name in schema.topological_order():
            columns = list(schema.columns(name))
            empty = pq.ParquetFile(paths[name]).schema_arrow.empty_table().to_pandas()
            con.execute(table_ddl(schema, name, {c: _sql_type(empty[c], "duckdb") for c in columns},
                                  "duckdb"))
            cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
            src = "'" + str(paths[name]).replace("'", "''") + "'"
            con.execute(f'INSERT INTO "{name}" ({cols}) SELECT {cols} FROM read_parquet({src})')
    finally:
        con.close()
    return path
