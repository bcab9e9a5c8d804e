"""A private database read out of core: validated, cap-enforced and encoded chunk by chunk.

:class:`~relviz.database.Database` holds every table as a pandas frame. For a database larger
than memory (issue 15, item 5: TPC-H sf 10 is 6·10⁷ line items) :class:`EncodedDatabase` reads a
DuckDB file or a folder of Parquet files through DuckDB and never builds those frames. What a fit
needs is kept in memory, and nothing else:

* the **codes** of every private table over its public domains (``relviz.encoding``, in their
  smallest unsigned type: one byte a cell for most attributes);
* the **parent row** of every child row, per foreign key (``(n_child,)`` int64);
* a 64-bit **hash of each row's primary key** (pandas' ``hash_pandas_object``, unsalted), from
  which cap enforcement and the methods' per-row seeds derive their keyed hashes
  (:func:`relviz.privacy.measure.keyed_row_hash`);
* the **public tables** as frames (they are released verbatim, and are small).

How each piece is computed:

* **Columns, one chunk at a time.** Each table is scanned once, ``chunk_rows`` rows at a time
  (DuckDB's ``fetch_df_chunk``, the same pandas dtypes as ``Database.from_duckdb``'s ``.df()``).
  Each chunk is cast as :class:`Database` casts a whole frame (``_coerce``), checked against the
  public domains (:func:`~relviz.encoding.column_problems`, merged over the chunks), encoded
  (:func:`~relviz.encoding.encode_column`) and its key hashed. Every one of these is a function
  of one row at a time, so the codes and hashes equal the in-memory path's.
* **Keys in SQL.** Null and duplicate primary keys, partly null, null and orphan foreign keys,
  and the parent row of every child row are DuckDB queries (``GROUP BY``, anti-join, join on the
  key columns), which DuckDB runs out of core (it spills to ``temp_directory``).
* **Caps in numpy.** :func:`relviz.privacy.measure.enforce_caps` runs its one cap loop on the
  codes, parent rows and hashes (:meth:`EncodedDatabase.truncation_state`): the same hash, order
  and cascade of dropped dependants as on a ``Database``.

The result is what :class:`~relviz.privacy.measure.Curator` and
:class:`~relviz.synthesizer.RelationalSynthesizer` need: ``synth.fit(EncodedDatabase...)`` gives
the same fitted models, hence the same synthetic database for a seed, as ``synth.fit(Database...)``
on the same data (``tests/test_source.py``). What needs the real values themselves is not
available: the comparison report (a curator view), ``repair_orphans``, DP caps chosen from the
data (``relviz.privacy.caps``).

Known differences from the in-memory path, both outside a valid TPC-H-like schema: a table with
*no* primary key hashes all its columns, and a nullable numeric column's pandas dtype can differ
between chunks, so such a table's per-row hashes (its cap order) may differ; dates that are not
ISO 8601 are parsed with a format pandas infers per chunk rather than per column.

SQLite files are staged first: DuckDB reads SQLite only through its ``sqlite`` extension, which
is downloaded on first use (this project's machines cannot), so :meth:`from_sqlite` copies each
table batch by batch (``fetchmany``) into a temporary Parquet file with Arrow types from the
declared column types, and reads those out of core; the staging folder is removed with the
object.

Why our own code: the engine (DuckDB) does every scan, join and group-by; what is ours is the
glue that keeps the codes, keys and cap enforcement identical to the in-memory path's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import ARROW_CHUNK_ROWS, _coerce, _without_excluded, column_set_problems
from relviz.encoding import EncodedTable, code_dtype, column_problems, encode_column
from relviz.errors import DataError, PlanError, Problem
from relviz.schema import ForeignKey, Schema

__all__ = ["EncodedDatabase"]

_VECTOR = 2048  # rows of one DuckDB vector (fetch_df_chunk counts in vectors)
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN")


def _q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + str(name).replace('"', '""') + '"'


def _numeric_type(sql_type: str) -> bool:
    return str(sql_type).upper().split("(")[0] in _NUMERIC


def _counted(con: Any, groups: str, k: int) -> tuple[int, tuple, int]:
    """Rows, the first five values (in stored order) and the number of distinct values of a
    ``GROUP BY`` of offending key values (``groups`` selects the ``k`` key columns, ``n`` and
    ``first``), without fetching every group."""
    rows, values = con.execute(f"SELECT coalesce(sum(n), 0), count(*) FROM ({groups})").fetchall()[0]
    ex: tuple = ()
    if rows:
        first = con.execute(f"SELECT * FROM ({groups}) ORDER BY first LIMIT 5").fetchall()
        ex = tuple(tuple(r[:k]) if k > 1 else r[0] for r in first)
    return int(rows), ex, int(values)


def _merge(problems: dict[tuple, Problem], found: list[Problem]) -> None:
    """Add one chunk's column problems: counts summed, the first five distinct examples kept."""
    for p in found:
        key = (p.kind, p.column)
        old = problems.get(key)
        if old is None:
            problems[key] = p
            continue
        ex = list(old.examples or ())
        for v in p.examples or ():
            if len(ex) >= 5:
                break
            if v not in ex:
                ex.append(v)
        problems[key] = replace(old, count=(old.count or 0) + (p.count or 0), examples=tuple(ex))


def _affinity(declared: str) -> Any:
    """The Arrow type of a SQLite column from its declared type (SQLite's affinity rules, §3.1 of
    its datatype documentation); ``None`` (infer from the values) for NUMERIC/BLOB/untyped."""
    import pyarrow as pa

    d = (declared or "").upper()
    if "INT" in d:
        return pa.int64()
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return pa.string()
    if any(k in d for k in ("REAL", "FLOA", "DOUB")):
        return pa.float64()
    return None


class _Mixed(Exception):
    """A SQLite column whose values do not all fit one Arrow type (SQLite types per value)."""

    def __init__(self, column: int) -> None:
        super().__init__(column)
        self.column = column


def _stage_sqlite_table(con: Any, name: str, target: Path, batch_rows: int) -> None:
    """Copy one SQLite table to a Parquet file, ``batch_rows`` rows at a time (one row group
    each). Columns without a declared affinity take the type Arrow infers from the first batch
    with values (later batches are cast to it). A column whose values do not fit its type (SQLite
    keeps a type per value: text in an INTEGER column, a real after integers) is staged as text,
    every value as ``str``, and the table copied again; validation then reports what does not
    parse, as it does for ``Database.from_sqlite``'s object column."""
    text: set[int] = set()
    while True:
        try:
            _stage_once(con, name, target, batch_rows, text)
            return
        except _Mixed as e:
            text.add(e.column)


def _stage_once(con: Any, name: str, target: Path, batch_rows: int, text: set[int]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    info = con.execute(f"PRAGMA table_info({_q(name)})").fetchall()
    cols = [r[1] for r in info]
    types = [pa.string() if j in text else _affinity(r[2]) for j, r in enumerate(info)]
    cur = con.execute(f"SELECT {', '.join(_q(c) for c in cols)} FROM {_q(name)}")
    writer, pending = None, []
    try:
        while True:
            rows = cur.fetchmany(batch_rows)
            if not rows and writer is not None:
                break
            values = list(zip(*rows)) if rows else [()] * len(cols)
            arrays = []
            for j, v in enumerate(values):
                v = [None if x is None else str(x) for x in v] if j in text else list(v)
                try:
                    if types[j] is None:
                        inferred = pa.array(v)
                        if not pa.types.is_null(inferred.type):
                            types[j] = inferred.type
                    arrays.append(pa.array(v, type=types[j] if types[j] is not None else pa.null()))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as e:
                    if j in text:
                        raise
                    raise _Mixed(j) from e
            table = pa.table(arrays, names=cols)
            if writer is None and any(t is None for t in types) and rows:
                pending.append(table)  # wait for a batch that fixes every column's type
                continue
            if writer is None:
                schema = pa.schema([pa.field(c, t if t is not None else pa.string())
                                    for c, t in zip(cols, types)])
                writer = pq.ParquetWriter(target, schema)
                for early in pending:
                    writer.write_table(early.cast(schema))
                pending = []
            writer.write_table(table.cast(writer.schema))
            if not rows:
                break
    finally:
        if writer is not None:
            writer.close()


@dataclass
class _Progress:
    """Progress of one table's scan as a fraction of the whole read (tables count equally)."""

    callback: Callable[[float, str], None] | None
    index: int
    tables: int
    name: str

    def __call__(self, done: float) -> None:
        if self.callback is not None:
            self.callback(0.95 * (self.index + done) / self.tables,
                          f"reading {self.name} out of core ({done:.0%})")


@dataclass
class _Arrays:
    """What a fit reads, in memory: see the module docstring."""

    n_rows: dict[str, int] = field(default_factory=dict)
    codes: dict[str, EncodedTable] = field(default_factory=dict)
    key_hash: dict[str, np.ndarray] = field(default_factory=dict)
    parent: dict[str, np.ndarray] = field(default_factory=dict)
    public: dict[str, pd.DataFrame] = field(default_factory=dict)

    def copy(self) -> _Arrays:
        return _Arrays(dict(self.n_rows), dict(self.codes), dict(self.key_hash), dict(self.parent),
                       dict(self.public))


class _Staging:
    """The temporary folder of a staged SQLite file, removed when the last database reading it
    is gone (every database derived by ``with_schema`` holds this object)."""

    def __init__(self, path: Path) -> None:
        import shutil
        import weakref

        self.path = path
        weakref.finalize(self, shutil.rmtree, str(path), True)


class _ArrayState:
    """An :class:`EncodedDatabase`'s arrays as ``relviz.privacy.measure.truncate_to_caps``
    reads and truncates them."""

    def __init__(self, db: EncodedDatabase, arrays: _Arrays) -> None:
        self.db, self.arrays = db, arrays

    def parent_index(self, fk: ForeignKey) -> np.ndarray:
        return self.arrays.parent[fk.name]

    def n_rows(self, name: str) -> int:
        return self.arrays.n_rows[name]

    def row_keys(self, name: str, salt: int) -> np.ndarray:
        from relviz.privacy.measure import salted

        return salted(self.arrays.key_hash[name], salt)

    def drop(self, name: str, mask: np.ndarray) -> None:
        self.db._drop(self.arrays, name, mask)

    def result(self) -> EncodedDatabase:
        """The truncated database (in memory)."""
        return self.db._derived(self.db.schema, self.arrays)


class EncodedDatabase:
    """A private database read out of core from a DuckDB file, a folder of Parquet files or a
    SQLite file (staged into Parquet first).

    Use :meth:`from_duckdb`, :meth:`from_parquet_dir` or :meth:`from_sqlite`. The tables are
    scanned on the first call that needs them (:meth:`read`, :meth:`problems`, :meth:`encoded`,
    :meth:`parent_index`, ...), once; the source file is then closed. Duck-typed where :class:`RelationalSynthesizer.fit` and the
    curator use a :class:`~relviz.database.Database` (``schema``, ``problems``, ``row_counts``,
    ``parent_index``, ``degrees``; ``db[name]`` for public tables only).

    Args (of the constructors):
        path: A ``.duckdb`` file, a folder with one ``<table>.parquet`` per table, or a SQLite
            file.
        schema: The public schema (required: domains must be public, and nothing here infers
            one).
        chunk_rows: Rows per scanned chunk (rounded up to DuckDB's 2,048-row vectors).
        temp_directory: Where DuckDB spills its joins and group-bys (default: DuckDB's own).
        memory_limit: DuckDB's memory limit, e.g. ``"4GB"`` (default: DuckDB's, 80 % of RAM).

    Raises:
        DataError: from :meth:`validate` (and ``RelationalSynthesizer.fit``), every problem at
            once, as :meth:`Database.problems` lists them.
    """

    def __init__(self, schema: Schema, *, path: Path | None, kind: str,
                 chunk_rows: int = ARROW_CHUNK_ROWS, temp_directory: str | None = None,
                 memory_limit: str | None = None, arrays: _Arrays | None = None) -> None:
        self._schema = schema
        self._path = path
        self._kind = kind
        self._chunk_rows = max(int(chunk_rows), 1)
        self._settings = {"temp_directory": temp_directory, "memory_limit": memory_limit}
        self._arrays = arrays
        self._problems: tuple[Problem, ...] | None = () if arrays is not None else None
        self._staging: _Staging | None = None

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def from_duckdb(cls, path: str | Path, schema: Schema, **kwargs: Any) -> EncodedDatabase:
        """The tables of a DuckDB file (opened read-only), see the class docstring."""
        path = Path(path)
        if not path.exists():
            raise DataError([Problem("missing_table", f"no DuckDB file at {path}")])
        return cls(schema, path=path, kind="duckdb", **kwargs)

    @classmethod
    def from_sqlite(cls, path: str | Path, schema: Schema, *, batch_rows: int = 100_000,
                    **kwargs: Any) -> EncodedDatabase:
        """The tables of a SQLite file, staged batch by batch into temporary Parquet files (module
        docstring) and read from them out of core.

        Raises:
            DataError: no SQLite file at ``path``.
        """
        import shutil
        import sqlite3
        import tempfile

        path = Path(path)
        if not path.is_file():
            raise DataError([Problem("missing_table", f"no SQLite file at {path}")])
        staging = Path(tempfile.mkdtemp(prefix="relviz-sqlite-"))
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                names = [r[0] for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
                for name in names:
                    _stage_sqlite_table(con, name, staging / f"{name}.parquet", batch_rows)
            finally:
                con.close()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        out = cls(schema, path=staging, kind="parquet", **kwargs)
        out._staging = _Staging(staging)  # shared by every database derived from this one
        return out

    @classmethod
    def from_parquet_dir(cls, path: str | Path, schema: Schema, **kwargs: Any) -> EncodedDatabase:
        """One ``<table>.parquet`` per table in ``path`` (as ``Database.to_parquet`` and
        ``RelationalSynthesizer.sample_to`` write them), see the class docstring."""
        path = Path(path)
        if not path.is_dir() or not any(path.glob("*.parquet")):
            raise DataError([Problem("missing_table", f"no .parquet files in {path}")])
        return cls(schema, path=path, kind="parquet", **kwargs)

    # -- the Database-like surface ------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def table_names(self) -> tuple[str, ...]:
        return self._schema.table_names

    def __repr__(self) -> str:
        where = f"{self._kind} {self._path}" if self._path is not None else "truncated, in memory"
        if self._arrays is None:
            return f"EncodedDatabase({len(self.table_names)} tables, {where})"
        counts = ", ".join(f"{n}: {c:,}" for n, c in self._arrays.n_rows.items())
        return f"EncodedDatabase({self._schema.name or 'unnamed'}; {counts}; {where})"

    def with_schema(self, schema: Schema, *, validate: bool = False) -> EncodedDatabase:
        """The same data under another schema. When only the privacy unit differs (a cap set by
        :func:`relviz.privacy.caps.with_dp_caps`) and the data were read without problems, the
        arrays are kept (nothing read again); otherwise the source is read again when needed.
        ``validate`` raises the new schema's problems at once (:class:`DataError`)."""
        same = (self._arrays is not None and schema.tables == self._schema.tables
                and schema.foreign_keys == self._schema.foreign_keys)
        if same:
            out = EncodedDatabase(schema, path=self._path, kind=self._kind, chunk_rows=self._chunk_rows,
                                  arrays=self._arrays, **self._settings)
            out._problems = tuple(schema.problems())
        elif self._path is None:
            raise DataError([Problem("schema", "a truncated encoded database keeps its tables and keys")])
        else:
            out = EncodedDatabase(schema, path=self._path, kind=self._kind, chunk_rows=self._chunk_rows,
                                  **self._settings)
        out._staging = self._staging
        return out.validate() if validate else out

    def excluded_columns(self) -> dict[str, tuple[str, ...]]:
        return {t.name: t.exclude for t in self._schema.tables if t.exclude}

    def undeclared_columns(self) -> dict[str, list[str]]:
        """``{table: [columns in the source the schema neither declares nor excludes]}``."""
        out = {}
        with self._connect() as (con, sources):
            for t in self._schema.tables:
                if t.name in sources:
                    cols = [c for c, _ in self._columns(con, sources[t.name])]
                    extra = [c for c in cols if c not in self._schema.columns(t.name) and c not in t.exclude]
                    if extra:
                        out[t.name] = extra
        return out

    def drop_undeclared(self) -> tuple[EncodedDatabase, dict[str, list[str]]]:
        """The source with every undeclared column excluded (``Table.exclude``), and what was."""
        extra = self.undeclared_columns()
        if not extra:
            return self, {}
        schema = self._schema
        for name, cols in extra.items():
            schema = schema.with_excluded(name, cols)
        return self.with_schema(schema), extra

    def warnings(self) -> list[Problem]:
        return self._schema.inferred_problems()

    def problems(self) -> list[Problem]:
        """Every problem of the schema and the data, as :meth:`Database.problems` lists them
        (scans the source on first call; nothing raised)."""
        if self._problems is None:
            self._scan()
        return list(self._problems or ())

    @property
    def known_valid(self) -> bool:
        return self._problems == ()

    def validate(self) -> EncodedDatabase:
        problems = self.problems()
        if problems:
            raise DataError(problems)
        return self

    def row_counts(self) -> dict[str, int]:
        return dict(self._valid().n_rows)

    def encoded(self, name: str) -> EncodedTable:
        """Codes of table ``name``'s attributes (an :class:`~relviz.encoding.EncodedTable`)."""
        return self._valid().codes[name]

    def parent_index(self, fk: ForeignKey | str) -> np.ndarray:
        """For every child row the position of its parent row (``-1`` if null): ``(n_child,)``
        int64, as :meth:`Database.parent_index`."""
        name = fk if isinstance(fk, str) else fk.name
        return self._valid().parent[self._schema.foreign_key(name).name]

    def degrees(self, fk: ForeignKey | str) -> np.ndarray:
        """Children per parent row, ``(n_parent,)`` int64 (0 included)."""
        fk = self._schema.foreign_key(fk) if isinstance(fk, str) else fk
        idx = self.parent_index(fk)
        return np.bincount(idx[idx >= 0], minlength=self._valid().n_rows[fk.parent]).astype(np.int64)

    def key_hash(self, name: str) -> np.ndarray:
        """``hash_pandas_object`` of each row's primary key (all columns without one), unsalted:
        ``(n,)`` uint64. Never released; :meth:`row_keys` salts it."""
        return self._valid().key_hash[name]

    def row_keys(self, name: str, salt: int) -> np.ndarray:
        """:func:`relviz.privacy.measure.keyed_row_hash` of table ``name``'s rows: ``(n,)``
        uint64, the same values as on the table's frame."""
        from relviz.privacy.measure import salted

        return salted(self.key_hash(name), salt)

    def __getitem__(self, name: str) -> pd.DataFrame:
        """A public table's frame. Private tables are held as codes only (:meth:`encoded`).

        Raises:
            KeyError: ``name`` is private (or unknown).
        """
        arrays = self._valid()
        if name not in arrays.public:
            raise KeyError(f"{name!r}: an EncodedDatabase holds private tables as codes only "
                           "(EncodedDatabase.encoded)")
        return arrays.public[name]

    def __contains__(self, name: object) -> bool:
        return name in self.table_names

    # -- privacy-unit caps and key attributes -------------------------------------------------
    def truncation_state(self) -> _ArrayState:
        """A copy of the arrays that :func:`relviz.privacy.measure.enforce_caps` truncates (its
        shared loop, ``truncate_to_caps``: the same rows kept as on a ``Database``); ``self`` is
        unchanged."""
        return _ArrayState(self, self._valid().copy())

    def _drop(self, arrays: _Arrays, table: str, mask: np.ndarray) -> None:
        """Drop rows ``mask`` of ``table`` and, transitively, every row referring to a dropped
        row (``relviz.database._drop_rows`` on the arrays)."""
        schema = self._schema
        pending = [(table, np.asarray(mask, dtype=bool))]
        while pending:
            name, m = pending.pop()
            if not m.any():
                continue
            keep = ~m
            arrays.n_rows[name] = int(keep.sum())
            if name in arrays.codes:
                enc = arrays.codes[name]
                arrays.codes[name] = EncodedTable(enc.name, enc.attributes, enc.sizes, enc.codes[keep])
            if name in arrays.key_hash:
                arrays.key_hash[name] = arrays.key_hash[name][keep]
            if name in arrays.public:
                arrays.public[name] = arrays.public[name][keep].reset_index(drop=True)
            for fk in schema.fks_from(name):
                arrays.parent[fk.name] = arrays.parent[fk.name][keep]
            new_pos = np.cumsum(keep) - 1
            for fk in schema.fks_into(name):
                idx = arrays.parent[fk.name]
                linked = idx >= 0
                hit = np.zeros(len(idx), dtype=bool)
                hit[linked] = m[idx[linked]]
                arrays.parent[fk.name] = np.where(linked & ~hit, new_pos[np.maximum(idx, 0)], -1)
                pending.append((fk.child, hit))

    def with_key_attributes(self, fks: list[ForeignKey], *, max_parents: dict[str, int] | None = None):  # noqa: ANN201
        """:func:`relviz.relational.keyed.with_key_attributes` on the codes: each child gets the
        parent row (null code ``n_parent`` for a null FK) as its last attribute."""
        from relviz.relational.keyed import _with_key_attribute, key_attribute_name, key_attribute_problems

        arrays = self._valid()
        problems = key_attribute_problems(self._schema, fks, arrays.n_rows, max_parents)
        if problems:
            raise PlanError(problems)
        arrays = arrays.copy()
        schema, names = self._schema, {}
        for fk in fks:
            idx = arrays.parent[fk.name]
            n_p = arrays.n_rows[fk.parent]
            name = key_attribute_name(schema, fk)
            schema = _with_key_attribute(schema, fk, name, n_p)
            attr = schema.table(fk.child).attribute(name)
            enc = arrays.codes[fk.child]
            column = np.where(idx >= 0, idx, attr.n_values)
            sizes = (*enc.sizes, attr.size)
            codes = np.empty((enc.n_rows, len(sizes)), dtype=code_dtype(sizes))
            codes[:, :-1] = enc.codes
            codes[:, -1] = column
            arrays.codes[fk.child] = EncodedTable(enc.name, (*enc.attributes, name), sizes, codes)
            names[fk.name] = name
        return self._derived(schema, arrays), names

    def with_parent_attributes(self, fks, classes):  # noqa: ANN001, ANN201
        """:func:`relviz.relational.parent_attributes.with_parent_attributes` on the codes: each
        child gets the codes of its parent row's copied attributes (``classes[fk]``, the parent
        rows' codes) as its last attributes, the null code for a null FK."""
        from relviz.relational.parent_attributes import parent_attribute_schema

        arrays = self._valid().copy()
        schema = self._schema
        for name, sources in fks.items():
            fk = schema.foreign_key(name)
            idx = arrays.parent[fk.name]
            schema = parent_attribute_schema(schema, fk, sources)
            table = schema.table(fk.child)
            new = [table.attribute(pa.name) for pa in sources]
            par = np.asarray(classes[name].codes, dtype=np.int64)
            enc = arrays.codes[fk.child]
            sizes = (*enc.sizes, *(a.size for a in new))
            codes = np.empty((enc.n_rows, len(sizes)), dtype=code_dtype(sizes))
            codes[:, :enc.codes.shape[1]] = enc.codes
            k = enc.codes.shape[1]
            for j, a in enumerate(new):
                codes[:, k + j] = np.where(idx >= 0, par[np.maximum(idx, 0), j] if len(par) else 0,
                                           a.n_values)
            arrays.codes[fk.child] = EncodedTable(enc.name, (*enc.attributes, *(a.name for a in new)),
                                                  sizes, codes)
        return self._derived(schema, arrays)

    def _derived(self, schema: Schema, arrays: _Arrays) -> EncodedDatabase:
        return EncodedDatabase(schema, path=None, kind=self._kind, chunk_rows=self._chunk_rows,
                               arrays=arrays)  # (in memory: needs no staged files)

    # -- the scan ---------------------------------------------------------------------------------
    def _valid(self) -> _Arrays:
        """The arrays; raises ``DataError`` (every problem) when the data could not be read whole.
        The schema's own problems (e.g. a missing cap) leave them readable, as a ``Database``'s
        frames are; ``fit`` refuses such a database through :meth:`problems`."""
        if self._problems is None:
            self._scan()
        if self._arrays is None:
            raise DataError(list(self._problems or ()))
        return self._arrays

    @contextlib.contextmanager
    def _connect(self) -> Iterator[tuple[Any, dict[str, str]]]:
        """A DuckDB connection to the source (read-only for a file) and ``{table: SQL source}``
        (:meth:`_sources`); closed on exit."""
        import duckdb

        if self._path is None:
            raise DataError([Problem("missing_table", "this encoded database has no source left")])
        con = duckdb.connect(str(self._path), read_only=True) if self._kind == "duckdb" else duckdb.connect()
        try:
            for k, v in self._settings.items():
                if v is not None:
                    con.execute(f"SET {k} = '{v}'")
            yield con, self._sources(con)
        finally:
            con.close()

    def _sources(self, con: Any) -> dict[str, str]:
        """``{table: SQL relation with a 0-based row position __pos and the stored columns}``."""
        out = {}
        if self._kind == "duckdb":
            names = [r[0] for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY table_name").fetchall()]
            for n in names:
                lo, hi, count = con.execute(f"SELECT min(rowid), max(rowid), count(*) FROM {_q(n)}").fetchall()[0]
                if count == 0 or (lo == 0 and hi == count - 1):
                    out[n] = f"(SELECT rowid AS __pos, * FROM {_q(n)})"
                else:  # rows deleted at some point: number them in stored order
                    out[n] = f"(SELECT row_number() OVER (ORDER BY rowid) - 1 AS __pos, * FROM {_q(n)})"
        else:
            for f in sorted(self._path.glob("*.parquet")):  # type: ignore[union-attr]
                path = str(f).replace("'", "''")
                out[f.stem] = (f"(SELECT file_row_number AS __pos, * EXCLUDE (file_row_number) "
                               f"FROM read_parquet('{path}', file_row_number = true))")
        return out

    @staticmethod
    def _columns(con: Any, source: str) -> list[tuple[str, str]]:
        """``[(column, SQL type)]`` of a source, without ``__pos``."""
        return [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
                if r[0] != "__pos"]

    def read(self, progress: Callable[[float, str], None] | None = None) -> EncodedDatabase:
        """Read the source now (a no-op once read), reporting ``progress(fraction, message)`` after
        each chunk; ``RelationalSynthesizer.fit`` calls it with the run's reporter, whose cancel
        raises ``CancelledError`` here. A cancelled or failed read keeps nothing, and the next
        call reads again. Returns ``self``."""
        if self._problems is None:
            self._scan(progress)
        return self

    def _scan(self, progress: Callable[[float, str], None] | None = None) -> None:
        """Read everything a fit needs (module docstring) and every problem, in one pass."""
        s = self._schema
        out: list[Problem] = list(s.problems())
        n_schema = len(out)
        arrays = _Arrays()
        with self._connect() as (con, sources):
            for name in sources:
                if name not in s.table_names:
                    out.append(Problem("undeclared_table", "table not described by the schema", name))
            types: dict[str, dict[str, str]] = {}
            for i, t in enumerate(s.tables):
                if t.name not in sources:
                    out.append(Problem("missing_table", "declared table has no data", t.name))
                    continue
                stored = [(c, ty) for c, ty in self._columns(con, sources[t.name]) if c not in t.exclude]
                types[t.name] = dict(stored)
                missing, found = column_set_problems(s, t.name, [c for c, _ in stored])
                out += found
                if t.primary_key and not [c for c in t.primary_key if c in missing]:
                    out += self._key_problems(con, sources[t.name], t.name, list(t.primary_key))
                out += self._read_table(con, sources[t.name], t, [c for c, _ in stored], missing, arrays,
                                        _Progress(progress, i, len(s.tables), t.name))
            for fk in s.foreign_keys:
                out += self._foreign_key(con, sources, types, fk)
            # the arrays are complete when the data have no problem (the schema's own problems,
            # e.g. a missing cap, leave them usable once the schema is mended: with_schema)
            complete = len(out) == n_schema and all(t.name in arrays.codes for t in s.tables)
            if complete:
                try:
                    for fk in s.foreign_keys:
                        arrays.parent[fk.name] = self._parent_rows(con, sources, fk,
                                                                   arrays.n_rows[fk.child])
                except Exception:  # noqa: BLE001 - a schema problem (reported) left keys unjoinable
                    if not n_schema:
                        raise
                    complete = False
        self._problems = tuple(out)
        self._arrays = arrays if complete else None

    def _read_table(self, con: Any, source: str, t: Any, stored: list[str], missing: list[str],
                    arrays: _Arrays, progress: _Progress) -> list[Problem]:
        """One scan of table ``t``: column problems, codes, key hashes (public: the frame)."""
        cols = [c for c in stored if c in self._schema.columns(t.name)]
        sql = f"SELECT {', '.join(_q(c) for c in cols) or '1 AS __none'} FROM {source}"
        total = int(con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0])
        result = con.execute(sql)  # (the connection's one open result: no other query until read)
        vectors = max(1, -(-self._chunk_rows // _VECTOR))
        problems: dict[tuple, Problem] = {}
        attrs = [a for a in t.attributes if a.name not in missing]
        sizes = tuple(a.size for a in t.attributes)
        # filled in place, chunk by chunk (no list of chunks concatenated at the end: one copy)
        codes = np.empty((total, len(sizes)), dtype=code_dtype(sizes))
        hashes = np.zeros(total, dtype=np.uint64)
        frames, n = [], 0
        hash_cols = list(t.primary_key) or cols
        can_hash = all(c in cols for c in hash_cols)
        while True:
            chunk = result.fetch_df_chunk(vectors)
            if not len(chunk):
                break
            chunk = _coerce({t.name: chunk}, self._schema)[t.name]
            rows = slice(n, n + len(chunk))
            n += len(chunk)
            progress(n / max(total, 1))
            if t.public:
                frames.append(chunk)
            for a in attrs:
                _merge(problems, column_problems(a, chunk[a.name], t.name))
            if problems or missing:
                continue  # keep counting problems; nothing more is kept
            for j, a in enumerate(t.attributes):
                codes[rows, j] = encode_column(a, chunk[a.name], checked=True)
            if can_hash:
                hashes[rows] = pd.util.hash_pandas_object(chunk[hash_cols], index=False).to_numpy()
        arrays.n_rows[t.name] = n
        if not problems and not missing and n == total:
            arrays.codes[t.name] = EncodedTable(t.name, t.attribute_names, sizes, codes)
            arrays.key_hash[t.name] = hashes
            if t.public:
                frame = pd.concat(frames, ignore_index=True) if frames else \
                    con.execute(f"{sql} LIMIT 0").df()
                arrays.public[t.name] = _without_excluded(self._schema, t.name, frame, deep=False)
        return list(problems.values())

    @staticmethod
    def _key_problems(con: Any, source: str, table: str, cols: list[str]) -> list[Problem]:
        """Null and duplicate primary keys (``relviz.database._key_problems``), in SQL."""
        out = []
        key = ", ".join(_q(c) for c in cols)
        null = " OR ".join(f"{_q(c)} IS NULL" for c in cols)
        n_null = con.execute(f"SELECT count(*) FROM {source} WHERE {null}").fetchall()[0][0]
        if n_null:
            out.append(Problem("null_key", "nulls in the primary key", table, ", ".join(cols), int(n_null)))
        groups = (f"SELECT {key}, count(*) AS n, min(__pos) AS first FROM {source} WHERE NOT ({null}) "
                  f"GROUP BY {key} HAVING count(*) > 1")
        count, ex, _ = _counted(con, groups, len(cols))
        if count:
            out.append(Problem("duplicate_key", "duplicate primary-key values", table, ", ".join(cols),
                               count, ex))
        return out

    def _foreign_key(self, con: Any, sources: Mapping[str, str], types: Mapping[str, Mapping[str, str]],
                     fk: ForeignKey) -> list[Problem]:
        """FK problems (``Database._fk_problems``), in SQL."""
        ct, pt = types.get(fk.child), types.get(fk.parent)
        if ct is None or pt is None or any(c not in ct for c in fk.columns) or any(
                c not in pt for c in fk.parent_columns):
            return []
        child, parent = sources[fk.child], sources[fk.parent]
        col = ", ".join(fk.columns)
        out = []
        any_null = " OR ".join(f"{_q(c)} IS NULL" for c in fk.columns)
        all_null = " AND ".join(f"{_q(c)} IS NULL" for c in fk.columns)
        partial, nulls = con.execute(
            f"SELECT count(*) FILTER (WHERE ({any_null}) AND NOT ({all_null})), "
            f"count(*) FILTER (WHERE {all_null}) FROM {child}").fetchall()[0]
        if partial:
            out.append(Problem("null_foreign_key", f"FK {fk.name!r} is partly null", fk.child, col,
                               int(partial)))
        if nulls and not fk.nullable:
            out.append(Problem("null_foreign_key",
                               f"nulls in non-nullable FK {fk.name!r} (declare it nullable or fill it)",
                               fk.child, col, int(nulls)))
        for cc, pc in zip(fk.columns, fk.parent_columns):
            if _numeric_type(ct[cc]) != _numeric_type(pt[pc]):
                out.append(Problem("type_mismatch",
                                   f"FK column has type {ct[cc]} but {fk.parent}.{pc} has {pt[pc]}",
                                   fk.child, cc))
                return out
        on = " AND ".join(f"c.{_q(a)} = p.{_q(b)}" for a, b in zip(fk.columns, fk.parent_columns))
        ckeys = ", ".join(f"c.{_q(a)}" for a in fk.columns)
        groups = (f"SELECT {ckeys}, count(*) AS n, min(c.__pos) AS first FROM {child} c "
                  f"WHERE NOT ({' OR '.join(f'c.{_q(a)} IS NULL' for a in fk.columns)}) "
                  f"AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {on}) GROUP BY {ckeys}")
        count, ex, distinct = _counted(con, groups, len(fk.columns))
        if count:
            out.append(Problem("orphan",
                               f"FK {fk.name!r} values with no {fk.parent} row "
                               f"({distinct:,} distinct; repair with repair_orphans)",
                               fk.child, col, count, ex))
        return out

    def _parent_rows(self, con: Any, sources: Mapping[str, str], fk: ForeignKey, n_child: int) -> np.ndarray:
        """The parent row of each child row (``-1`` when null), by a join on the key columns
        fetched in batches of positions."""
        on = " AND ".join(f"c.{_q(a)} = p.{_q(b)}" for a, b in zip(fk.columns, fk.parent_columns))
        idx = np.full(int(n_child), -1, dtype=np.int64)
        reader = con.sql(
            f"SELECT c.__pos AS c, p.__pos AS p FROM {sources[fk.child]} c JOIN {sources[fk.parent]} p ON {on}"
        ).to_arrow_reader(self._chunk_rows)
        for batch in reader:
            idx[batch.column(0).to_numpy()] = batch.column(1).to_numpy()
        return idx
