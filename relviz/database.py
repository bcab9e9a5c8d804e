"""A relational database: a :class:`~relviz.schema.Schema` plus one pandas frame per table.

Loading (``from_frames``, ``from_csv_dir``, ``from_sqlite``, ``from_duckdb``), whole-database
validation that reports every problem at once (``validate``), an explicit orphan repair
(``repair_orphans``), and exports with primary/foreign-key DDL (``to_sqlite``, ``to_duckdb``,
``to_parquet``, ``to_csv_dir``).

A ``Database`` never mutates the frames it is given: it keeps its own copies (pandas' copy on
write makes them cheap) and hands out frames that cannot write back into it. Columns a table's
schema excludes (``Table.exclude``: identifiers, personal data, free text) are left out of those
copies, so nothing downstream (validation, synthesis, reports, exports) sees them.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

import numpy as np
import pandas as pd

from relviz.encoding import column_problems, parse_datetimes
from relviz.errors import DataError, Problem
from relviz.schema import ForeignKey, Schema, Table, infer_schema

__all__ = ["Database", "RepairReport", "read_parquet_frame", "release_freed_memory"]


@dataclass(frozen=True)
class RepairReport:
    """What :meth:`Database.repair_orphans` changed, per foreign key.

    Attributes:
        rows: Tidy frame with columns ``fk, child, action, rows, distinct_values, examples``.
    """

    rows: pd.DataFrame

    def __str__(self) -> str:
        if self.rows.empty:
            return "no orphans: nothing repaired"
        lines = []
        for r in self.rows.itertuples():
            lines.append(f"{r.fk}: {r.action} {r.rows:,} row(s) "
                         f"({r.distinct_values:,} distinct missing key(s), e.g. {r.examples})")
        return "\n".join(lines)


def _key_frame(df: pd.DataFrame, cols: Sequence[str]) -> pd.Index:
    """The key columns ``cols`` of ``df`` as an index (a MultiIndex for composite keys)."""
    if len(cols) == 1:
        return pd.Index(df[cols[0]])
    return pd.MultiIndex.from_arrays([df[c] for c in cols])


def read_parquet_frame(path: str | Path) -> pd.DataFrame:
    """One Parquet file as a frame, each Arrow column freed as it is converted (pyarrow's
    ``self_destruct``), so the peak stays near one copy of the data (TPC-H sf 3: 3.9 → 3.1 GB,
    11.4 → 5.4 s against a plain ``pd.read_parquet``)."""
    return pd.read_parquet(path, to_pandas_kwargs={"self_destruct": True, "split_blocks": True})


def release_freed_memory() -> None:
    """Give freed memory back to the system once large frames are dropped: Python's cycles, and
    the pages Arrow's allocator (mimalloc) keeps for Arrow's own reuse, which numpy's arrays
    cannot use (TPC-H sf 1 after its real tables are dropped: 1,752 → 983 MB resident)."""
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()


def _is_integer(s: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def _integer_ranges(df: pd.DataFrame, cols: Sequence[str]) -> tuple[list[int], list[int]] | None:
    """``(minimum, max − min + 1)`` of each integer column without nulls, or ``None`` (a column
    that is not integer-typed or holds nulls, values beyond ±2⁶² such as large uint64, or ranges
    whose product passes 2⁶²: the combined key would not fit int64)."""
    if not all(_is_integer(df[c]) and not df[c].hasnans for c in cols):
        return None
    lows, spans = [], []
    for c in cols:
        if not len(df):
            lows.append(0)
            spans.append(1)
            continue
        lo, hi = int(df[c].min()), int(df[c].max())
        if not -2 ** 62 < lo <= hi < 2 ** 62:
            return None
        lows.append(lo)
        spans.append(hi - lo + 1)
    return (lows, spans) if math.prod(spans) < 2 ** 62 else None


def _radix_key(df: pd.DataFrame, cols: Sequence[str], lows: Sequence[int], spans: Sequence[int],
               *, clip: bool = False) -> np.ndarray:
    """One int64 per row: the columns shifted by ``lows`` and combined in mixed radix over
    ``spans`` (first column most significant). ``clip`` bounds each shifted value (and a null,
    read as its column's low) to its span first, for rows outside the ranges (masked by the
    caller). The caller's columns are never written."""
    key = np.zeros(len(df), dtype=np.int64)
    for c, lo, span in zip(cols, lows, spans):
        shifted = df[c].to_numpy(dtype=np.int64, na_value=lo) - lo
        if clip:
            np.clip(shifted, 0, span - 1, out=shifted)
        key *= span
        key += shifted
    return key


def _integer_parent_index(child: pd.DataFrame, cols: Sequence[str], parent: pd.DataFrame,
                          pcols: Sequence[str]) -> np.ndarray | None:
    """:meth:`Database.parent_index` for integer key columns, or ``None`` when it does not apply
    (a column that is not integer-typed, a null or duplicate parent key, or key ranges whose
    product passes 2⁶²).

    Each key column is shifted by the parent column's minimum and the columns are combined in
    mixed radix over the parent's ranges, so a composite key becomes one int64 and the lookup is
    one hash probe per child row (pandas' ``Index.get_indexer``) instead of a ``MultiIndex``
    factorising every child column; when the combined range is at most about eight times the
    parent's rows, a lookup table over the range replaces the hash. Child values outside the
    parent's range are orphans. At 6·10⁷ line items (TPC-H sf 10) a FK then needs about two
    int64 arrays of the child's length beside the data (issue 15: memory at scale).
    """
    ranges = _integer_ranges(parent, pcols)
    if ranges is None or len(parent) == 0 or not all(_is_integer(child[c]) for c in cols):
        return None
    lows, spans = ranges
    pkey = _radix_key(parent, pcols, lows, spans)
    inside = np.ones(len(child), dtype=bool)
    for cc, lo, span in zip(cols, lows, spans):  # child values outside the parent's range
        col = child[cc]
        vals = col.to_numpy(dtype=np.int64, na_value=lo)
        inside &= ~col.isna().to_numpy() & (vals >= lo) & (vals < lo + span)
    ckey = _radix_key(child, cols, lows, spans, clip=True)
    cells = math.prod(spans)
    if cells <= 8 * len(parent) + 1_000_000:  # dense keys: a lookup table over the key range
        table = np.full(cells, -1, dtype=np.int64)
        table[pkey[::-1]] = np.arange(len(parent) - 1, -1, -1)  # duplicates: the first row wins
        if np.count_nonzero(table >= 0) != len(parent):
            return None  # duplicate parent keys: the general path reports and handles them
        idx = table[ckey]
    else:
        index = pd.Index(pkey)
        if not index.is_unique:
            return None
        idx = np.asarray(index.get_indexer(ckey), dtype=np.int64)
    idx[~inside] = -1
    return idx


class Database:
    """A schema and its tables.

    Args:
        schema: The schema (public).
        tables: ``{table name: DataFrame}``; copied, never modified; columns the schema excludes
            (``Table.exclude``) are left out of the copies.
        validate: Raise :class:`DataError` listing every problem when the data do not satisfy
            the schema (default). ``False`` keeps an invalid database so that an editor can
            show and fix its problems.

    Raises:
        DataError: when ``validate`` is true and anything is wrong.
    """

    def __init__(self, schema: Schema, tables: Mapping[str, pd.DataFrame], *,
                 validate: bool = True) -> None:
        self._hold(schema, tables, deep=True, validate=validate)

    def _hold(self, schema: Schema, tables: Mapping[str, pd.DataFrame], *, deep: bool,
              validate: bool) -> None:
        self._schema = schema
        self._tables = {name: _without_excluded(schema, name, df, deep=deep) for name, df in tables.items()}
        self._problems: tuple[Problem, ...] | None = None  # computed once: the frames never change
        if validate:
            self.validate()

    @classmethod
    def _adopt(cls, schema: Schema, tables: Mapping[str, pd.DataFrame], *,
               validate: bool = False) -> Database:
        """A database over frames relviz already owns: another database's frames, or frames
        relviz built (a synthetic sample). pandas' copy-on-write makes a shallow copy as safe as
        a deep one for those (an edit of either copies first), without the deep copy's memory:
        one more copy of every table per call, which at TPC-H sf 1 is about 0.8 GB. Frames from
        outside go through the constructor, which copies them deeply."""
        db = cls.__new__(cls)
        db._hold(schema, tables, deep=False, validate=validate)
        return db

    # -- access -------------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def tables(self) -> Mapping[str, pd.DataFrame]:
        """Read-only mapping of frames (each a copy-on-write copy: edits do not write back)."""
        return MappingProxyType({k: v.copy(deep=False) for k, v in self._tables.items()})

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            raise KeyError(f"no table {name!r} (tables: {', '.join(self._tables)})")
        return self._tables[name].copy(deep=False)

    def __contains__(self, name: object) -> bool:
        return name in self._tables

    @property
    def table_names(self) -> tuple[str, ...]:
        return self._schema.table_names

    def row_counts(self) -> dict[str, int]:
        """Rows per table (reads the data: a curator view for private tables)."""
        return {n: len(self._tables[n]) for n in self._schema.table_names if n in self._tables}

    def __repr__(self) -> str:
        counts = ", ".join(f"{n}: {c:,}" for n, c in self.row_counts().items())
        return f"Database({self._schema.name or 'unnamed'}; {counts})"

    def with_schema(self, schema: Schema, *, validate: bool = True) -> Database:
        """The same frames under another schema."""
        return Database._adopt(schema, self._tables, validate=validate)

    def with_table(self, name: str, df: pd.DataFrame, *, validate: bool = True) -> Database:
        """The same database with table ``name`` replaced by (a copy of) ``df``."""
        new = _without_excluded(self._schema, name, df)
        return Database._adopt(self._schema, {**self._tables, name: new}, validate=validate)

    def excluded_columns(self) -> dict[str, tuple[str, ...]]:
        """``{table: columns}`` the schema excludes (``Table.exclude``), for tables with any."""
        return {t.name: t.exclude for t in self._schema.tables if t.exclude}

    def undeclared_columns(self) -> dict[str, list[str]]:
        """``{table: columns}`` of data columns the schema neither declares nor excludes."""
        out = {}
        for t in self._schema.tables:
            df = self._tables.get(t.name)
            if df is not None:
                declared = set(self._schema.columns(t.name))
                extra = [str(c) for c in df.columns if c not in declared]
                if extra:
                    out[t.name] = extra
        return out

    def drop_undeclared(self, *, validate: bool = False) -> tuple[Database, dict[str, list[str]]]:
        """The same database with every undeclared column added to its table's ``exclude`` list
        (and so dropped), and what was dropped (``{table: columns}``); this one is unchanged."""
        extra = self.undeclared_columns()
        schema = self._schema
        for table, cols in extra.items():
            schema = schema.with_excluded(table, cols)
        return Database._adopt(schema, self._tables, validate=validate), extra

    # -- keys -----------------------------------------------------------------------------------
    def parent_index(self, fk: ForeignKey | str) -> np.ndarray:
        """For every child row, the position of its parent row (``-1`` if null or orphan).

        Returns:
            ``(n_child,)`` int64 array of row positions into the parent frame.
        """
        fk = self._schema.foreign_key(fk) if isinstance(fk, str) else fk
        child, parent = self._tables[fk.child], self._tables[fk.parent]
        pcols = list(fk.parent_columns)
        lean = _integer_parent_index(child, list(fk.columns), parent, pcols)
        if lean is not None:
            return lean
        pkey = _key_frame(parent, pcols)
        ckey = _key_frame(child, list(fk.columns))  # no renaming: a self-referencing child has both
        positions = np.arange(len(pkey))
        if not pkey.is_unique:  # duplicate parent keys (reported elsewhere): first row wins
            first = ~pkey.duplicated()
            pkey, positions = pkey[first], positions[first]
        try:
            idx = pkey.get_indexer(ckey)
            idx = np.where(idx >= 0, positions[np.maximum(idx, 0)], -1) if len(positions) else \
                np.full(len(child), -1)  # an empty parent table: every non-null child is an orphan
        except (TypeError, ValueError):  # mismatched key dtypes: nothing matches
            idx = np.full(len(child), -1)
        null = child[list(fk.columns)].isna().any(axis=1).to_numpy()
        idx = np.asarray(idx, dtype=np.int64)
        idx[null] = -1
        return idx

    def degrees(self, fk: ForeignKey | str) -> np.ndarray:
        """Children per parent row for ``fk``, shape ``(n_parent,)`` int64 (0 included)."""
        fk = self._schema.foreign_key(fk) if isinstance(fk, str) else fk
        idx = self.parent_index(fk)
        return np.bincount(idx[idx >= 0], minlength=len(self._tables[fk.parent])).astype(np.int64)

    # -- validation -------------------------------------------------------------------------------
    def problems(self) -> list[Problem]:
        """Every problem of the schema and the data, in one list (nothing raised).

        Checks: schema problems (:meth:`Schema.problems`), missing/undeclared tables and columns,
        null or duplicate primary keys, null non-nullable FKs, orphan FKs, FK type mismatches,
        nulls, unknown categories, unparsable or out-of-bounds numbers. What a plan's methods
        cannot model (e.g. a domain too large for a mechanism) is the plan's problem:
        ``Plan.problems(schema)``.

        Computed once per database (its frames are copies nobody can edit) and then remembered.
        """
        if getattr(self, "_problems", None) is None:  # (a database pickled before it had one)
            self._problems = tuple(self._find_problems())
        return list(self._problems)

    @property
    def known_valid(self) -> bool:
        """Whether :meth:`problems` has run and found nothing (what lets an encoder skip checking
        every column again)."""
        return getattr(self, "_problems", None) == ()

    def _find_problems(self) -> list[Problem]:
        s = self._schema
        out = list(s.problems())
        for name in self._tables:
            if name not in s.table_names:
                out.append(Problem("undeclared_table", "table not described by the schema", name))
        for t in s.tables:
            df = self._tables.get(t.name)
            if df is None:
                out.append(Problem("missing_table", "declared table has no data", t.name))
                continue
            missing, found = column_set_problems(s, t.name, list(df.columns))
            out += found
            if t.primary_key and not [c for c in t.primary_key if c in missing]:
                out += _key_problems(t, df)
            for a in t.attributes:
                if a.name in df.columns:
                    out += column_problems(a, df[a.name], t.name)
        for fk in s.foreign_keys:
            out += self._fk_problems(fk)
        return out

    def _fk_problems(self, fk: ForeignKey) -> list[Problem]:
        child, parent = self._tables.get(fk.child), self._tables.get(fk.parent)
        if child is None or parent is None:
            return []
        if any(c not in child.columns for c in fk.columns) or any(
                c not in parent.columns for c in fk.parent_columns):
            return []
        out = []
        col = ", ".join(fk.columns)
        null_any = child[list(fk.columns)].isna().any(axis=1)
        null_all = child[list(fk.columns)].isna().all(axis=1)
        partial = null_any & ~null_all
        if partial.any():
            out.append(Problem("null_foreign_key", f"FK {fk.name!r} is partly null", fk.child, col,
                               int(partial.sum())))
        if null_all.any() and not fk.nullable:
            out.append(Problem("null_foreign_key",
                               f"nulls in non-nullable FK {fk.name!r} (declare it nullable or fill it)",
                               fk.child, col, int(null_all.sum())))
        for cc, pc in zip(fk.columns, fk.parent_columns):
            ck, pk = child[cc].dropna(), parent[pc].dropna()
            if len(ck) and len(pk) and _is_numberlike(ck) != _is_numberlike(pk):
                out.append(Problem("type_mismatch",
                                   f"FK column has type {ck.dtype} but {fk.parent}.{pc} has {pk.dtype}",
                                   fk.child, cc))
                return out
        idx = self.parent_index(fk)
        orphan = (idx < 0) & ~null_any.to_numpy()
        if orphan.any():
            vals = child.loc[orphan, list(fk.columns)]
            ex = [tuple(r) if len(r) > 1 else r[0] for r in vals.drop_duplicates().head(5).to_numpy()]
            n_distinct = len(vals.drop_duplicates())
            out.append(Problem("orphan",
                               f"FK {fk.name!r} values with no {fk.parent} row "
                               f"({n_distinct:,} distinct; repair with repair_orphans)",
                               fk.child, col, int(orphan.sum()), tuple(ex)))
        return out

    def validate(self) -> Database:
        """Raise one :class:`DataError` listing every problem; return ``self`` when valid."""
        problems = self.problems()
        if problems:
            raise DataError(problems)
        return self

    def warnings(self) -> list[Problem]:
        """Things that are valid but deserve attention: domains (and FK nullability) inferred from
        the data (``Schema.inferred_problems``; synthesis refuses them unless allowed)."""
        return self._schema.inferred_problems()

    # -- repair -----------------------------------------------------------------------------------
    def repair_orphans(self, how: Literal["drop", "null"] = "null",
                       fks: Iterable[str] | None = None) -> tuple[Database, RepairReport]:
        """Repair orphan FK values explicitly, and report what changed.

        Args:
            how: ``"drop"`` removes child rows whose FK has no parent (cascading to their own
                children); ``"null"`` sets the orphan FK values to null and marks the FK nullable
                in the returned schema.
            fks: FK names to repair (default: every FK with orphans).

        Returns:
            ``(repaired database, report)``; this database is unchanged.
        """
        if how not in ("drop", "null"):
            raise ValueError("how must be 'drop' or 'null'")
        names = set(fks) if fks is not None else {fk.name for fk in self._schema.foreign_keys}
        tables = dict(self._tables)
        schema = self._schema
        rows = []
        for fk in self._schema.foreign_keys:
            if fk.name not in names:
                continue
            idx = Database._adopt(schema, tables).parent_index(fk)
            child = tables[fk.child]
            null = child[list(fk.columns)].isna().any(axis=1).to_numpy()
            orphan = (idx < 0) & ~null
            if not orphan.any():
                continue
            vals = child.loc[orphan, list(fk.columns)].drop_duplicates()
            ex = ", ".join(map(str, vals.head(5).to_numpy().ravel().tolist()))
            rows.append({"fk": fk.name, "child": fk.child,
                         "action": "dropped" if how == "drop" else "set to null",
                         "rows": int(orphan.sum()), "distinct_values": len(vals), "examples": ex})
            if how == "null":
                child = child.copy()
                for c in fk.columns:
                    col = child[c].astype("Int64") if child[c].dtype.kind in "iu" else child[c]
                    child[c] = col.mask(orphan)
                tables[fk.child] = child
                if not fk.nullable:
                    new_fk = ForeignKey(fk.child, fk.columns, fk.parent, fk.parent_columns,
                                        nullable=True, name=fk.name)
                    schema = Schema(tuple(schema.tables),
                                    tuple(new_fk if f.name == fk.name else f for f in schema.foreign_keys),
                                    schema.privacy_unit, schema.name, schema.description)
            else:
                tables = _drop_rows(schema, tables, fk.child, orphan)
        report = RepairReport(pd.DataFrame(rows, columns=["fk", "child", "action", "rows",
                                                          "distinct_values", "examples"]))
        return Database._adopt(schema, tables), report

    # -- constructors -----------------------------------------------------------------------------
    @classmethod
    def from_frames(cls, frames: Mapping[str, pd.DataFrame], schema: Schema | None = None, *,
                    validate: bool = True) -> Database:
        """A database from ``{table: DataFrame}``; the schema is inferred when not given.

        An inferred schema reads the data (see :func:`relviz.schema.infer_schema`): review its
        domains, keys and privacy unit before synthesis.
        """
        if schema is None:
            schema = infer_schema(frames)
        return cls(schema, frames, validate=validate)

    @classmethod
    def _from_read(cls, frames: dict[str, pd.DataFrame], schema: Schema | None,
                   validate: bool, *, inferred: Schema | None = None) -> Database:
        """A database over frames this module has just read from files (nobody else holds them):
        adopted, not copied again (a second copy of every table at load time; issue 15). A
        caller's ``schema`` casts the columns it declares (:func:`_coerce`); without one, the
        ``inferred`` schema (from the file's constraints) or :func:`infer_schema` describes the
        frames as read."""
        if schema is not None:
            frames = _coerce(frames, schema)
        else:
            schema = inferred if inferred is not None else infer_schema(frames)
        return cls._adopt(schema, frames, validate=validate)

    @classmethod
    def from_parquet_dir(cls, path: str | Path, schema: Schema | None = None, *,
                         validate: bool = True) -> Database:
        """One Parquet file per table (``<table>.parquet``) in ``path``, as :meth:`to_parquet`
        writes them; the schema is inferred when not given (review it, as for
        :meth:`from_frames`).

        Each file is read by :func:`read_parquet_frame`.

        Raises:
            DataError: no ``.parquet`` file in ``path``; with ``validate``, every problem of the
                data against the schema.
        """
        path = Path(path)
        files = sorted(path.glob("*.parquet"))
        if not files:
            raise DataError([Problem("missing_table", f"no .parquet files in {path}")])
        names = schema.table_names if schema is not None else [f.stem for f in files]
        frames = {name: read_parquet_frame(path / f"{name}.parquet")
                  for name in names if (path / f"{name}.parquet").exists()}
        return cls._from_read(frames, schema, validate)

    @classmethod
    def from_csv_dir(cls, path: str | Path, schema: Schema | None = None, *,
                     validate: bool = True) -> Database:
        """One CSV file per table (``<table>.csv``) in ``path``."""
        path = Path(path)
        files = sorted(path.glob("*.csv"))
        if not files:
            raise DataError([Problem("missing_table", f"no .csv files in {path}")])
        names = schema.table_names if schema is not None else [f.stem for f in files]
        frames = {}
        for name in names:
            f = path / f"{name}.csv"
            if not f.exists():
                continue
            frames[name] = pd.read_csv(f)
        return cls._from_read(frames, schema, validate)

    @classmethod
    def from_sqlite(cls, path: str | Path, schema: Schema | None = None, *,
                    validate: bool = True) -> Database:
        """Every table of a SQLite file; declared PRIMARY/FOREIGN KEYs seed an inferred schema."""
        con = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
            frames = {n: pd.read_sql_query(f'SELECT * FROM "{n}"', con) for n in names}
            pks, fks = {}, []
            for n in names:
                info = con.execute(f'PRAGMA table_info("{n}")').fetchall()
                pks[n] = tuple(r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0)
                groups: dict[int, list[tuple]] = {}
                for r in con.execute(f'PRAGMA foreign_key_list("{n}")').fetchall():
                    groups.setdefault(r[0], []).append(r)
                for rows in groups.values():
                    rows.sort(key=lambda r: r[1])
                    fks.append((n, tuple(r[3] for r in rows), rows[0][2],
                                tuple(r[4] for r in rows if r[4] is not None)))
        finally:
            con.close()
        inferred = _schema_from_constraints(frames, pks, fks) if schema is None else None
        return cls._from_read(frames, schema, validate, inferred=inferred)

    @classmethod
    def from_duckdb(cls, path: str | Path, schema: Schema | None = None, *,
                    validate: bool = True) -> Database:
        """Every table of a DuckDB file; declared PRIMARY/FOREIGN KEYs seed an inferred schema."""
        import duckdb

        con = duckdb.connect(str(path), read_only=True)
        try:
            names = [r[0] for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT internal ORDER BY table_name").fetchall()]
            frames = {n: con.execute(f'SELECT * FROM "{n}"').df() for n in names}
            pks: dict[str, tuple[str, ...]] = {n: () for n in names}
            fks = []
            for tname, ctype, cols, rtable, rcols in con.execute(
                    "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
                    "referenced_column_names FROM duckdb_constraints()").fetchall():
                if ctype == "PRIMARY KEY":
                    pks[tname] = tuple(cols)
                elif ctype == "FOREIGN KEY":
                    fks.append((tname, tuple(cols), rtable, tuple(rcols or ())))
        finally:
            con.close()
        inferred = _schema_from_constraints(frames, pks, fks) if schema is None else None
        return cls._from_read(frames, schema, validate, inferred=inferred)

    # -- exports ------------------------------------------------------------------------------------
    def _ordered(self) -> list[str]:
        try:
            return list(self._schema.topological_order())
        except Exception:  # noqa: BLE001 - cyclic schema: keep declaration order
            return list(self._schema.table_names)

    def to_sqlite(self, path: str | Path) -> Path:
        """Write a SQLite file with PRIMARY KEY and FOREIGN KEY constraints (replaced if present).

        Returns:
            The path written. ``PRAGMA foreign_key_check`` on it returns no rows for a valid
            database.
        """
        path = Path(path)
        if path.exists():
            path.unlink()
        con = sqlite3.connect(path)
        try:
            for name in self._ordered():
                con.execute(self._ddl(name, "sqlite"))
                columns = list(self._schema.columns(name))
                df = self._tables[name]
                whole_days = {c: _whole_days(df[c]) for c in columns
                              if pd.api.types.is_datetime64_any_dtype(df[c])}
                cols = ", ".join(f'"{c}"' for c in columns)
                marks = ", ".join("?" for _ in columns)
                for chunk in _chunks(df, columns, WRITE_CHUNK_ROWS):
                    con.executemany(f'INSERT INTO "{name}" ({cols}) VALUES ({marks})',
                                    _sqlite_rows(chunk, whole_days))
            con.commit()
        finally:
            con.close()
        return path

    def to_duckdb(self, path: str | Path) -> Path:
        """Write a DuckDB file with PRIMARY KEY and FOREIGN KEY constraints."""
        import duckdb

        path = Path(path)
        if path.exists():
            path.unlink()
        con = duckdb.connect(str(path))
        try:
            for name in self._ordered():
                con.execute(self._ddl(name, "duckdb"))
                for chunk in _chunks(self._tables[name], list(self._schema.columns(name)), ARROW_CHUNK_ROWS):
                    con.register("_relviz_chunk", chunk)
                    con.execute(f'INSERT INTO "{name}" SELECT * FROM _relviz_chunk')
                    con.unregister("_relviz_chunk")
        finally:
            con.close()
        return path

    def to_parquet(self, directory: str | Path) -> list[Path]:
        """One ``<table>.parquet`` per table in ``directory`` (created); returns the paths."""
        return self._write_files(directory, "parquet")

    def to_csv_dir(self, directory: str | Path) -> list[Path]:
        """One ``<table>.csv`` per table in ``directory`` (created); returns the paths."""
        return self._write_files(directory, "csv")

    def _write_files(self, directory: str | Path, fmt: Literal["parquet", "csv"]) -> list[Path]:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        out = []
        for name in self._schema.table_names:
            p = d / f"{name}.{fmt}"
            columns = list(self._schema.columns(name))
            if fmt == "csv":  # pandas writes CSV in chunks itself
                self._tables[name].to_csv(p, columns=columns, index=False)
            else:
                _write_parquet(self._tables[name], columns, p)
            out.append(p)
        return out

    def _ddl(self, name: str, dialect: Literal["sqlite", "duckdb"]) -> str:
        df = self._tables[name]
        return table_ddl(self._schema, name, {c: _sql_type(df[c], dialect) for c in self._schema.columns(name)},
                         dialect)


def table_ddl(schema: Schema, name: str, types: Mapping[str, str], dialect: Literal["sqlite", "duckdb"]) -> str:
    """``CREATE TABLE`` for ``name`` with its PRIMARY KEY and FOREIGN KEY constraints; ``types``
    maps each column to its SQL type (DuckDB skips a self-referencing FK: it cannot check one
    during a bulk insert)."""
    t = schema.table(name)
    parts = [f'"{c}" {types[c]}' for c in schema.columns(name)]
    if t.primary_key:
        parts.append("PRIMARY KEY (" + ", ".join(f'"{c}"' for c in t.primary_key) + ")")
    for fk in schema.fks_from(name):
        if dialect == "duckdb" and fk.self_referential:
            continue  # DuckDB cannot check a self-referencing FK during a bulk insert
        parts.append("FOREIGN KEY (" + ", ".join(f'"{c}"' for c in fk.columns) + f') REFERENCES "{fk.parent}" ('
                     + ", ".join(f'"{c}"' for c in fk.parent_columns) + ")")
    return f'CREATE TABLE "{name}" (\n  ' + ",\n  ".join(parts) + "\n)"


def column_set_problems(schema: Schema, table: str, present: Sequence[str]) -> tuple[list[str], list[Problem]]:
    """The declared columns of ``table`` absent from ``present`` (the data's columns, excluded
    ones left out), and one problem per missing or undeclared column."""
    declared = schema.columns(table)
    missing = [c for c in declared if c not in present]
    out = [Problem("missing_column", "declared column is absent", table, c) for c in missing]
    out += [Problem("undeclared_column", "column not described by the schema (declare it, list it "
                    "in the table's \"exclude\", or pass --drop-undeclared)", table, str(c))
            for c in present if c not in declared]
    return missing, out


def _is_numberlike(s: pd.Series) -> bool:
    return pd.api.types.infer_dtype(s, skipna=True) in (
        "integer", "floating", "mixed-integer-float", "decimal", "boolean")


def _sorted_integer_key(df: pd.DataFrame, cols: Sequence[str]) -> bool:
    """Whether ``cols`` are integer columns without nulls whose rows are in strictly increasing
    key order (then the key has no null and no duplicate): tables exported from a database are
    usually stored in key order, and this check needs one int64 array of the table's length where
    the general duplicate search hashes every row (issue 15: memory at scale)."""
    ranges = _integer_ranges(df, cols) if len(df) >= 2 else None
    if ranges is None:
        return False
    key = _radix_key(df, cols, *ranges)
    return bool((key[1:] > key[:-1]).all())


def _key_problems(t: Table, df: pd.DataFrame) -> list[Problem]:
    """Null and duplicate primary keys of one table."""
    out = []
    cols = list(t.primary_key)
    if _sorted_integer_key(df, cols):
        return out
    # one column of the key in strictly increasing order (a surrogate 1…n beside a FK, as in a
    # synthetic table) makes the whole key unique: only nulls remain to be found
    unique = len(cols) > 1 and any(_sorted_integer_key(df, [c]) for c in cols)
    null = df[cols].isna().any(axis=1)
    if null.any():
        out.append(Problem("null_key", "nulls in the primary key", t.name, ", ".join(cols),
                           int(null.sum())))
    if unique:
        return out
    dup = df[cols][~null].duplicated(keep=False)
    if dup.any():
        vals = df.loc[dup[dup].index, cols].drop_duplicates().head(5).to_numpy()
        ex = [tuple(v) if len(v) > 1 else v[0] for v in vals]
        out.append(Problem("duplicate_key", "duplicate primary-key values", t.name, ", ".join(cols),
                           int(dup.sum()), tuple(ex)))
    return out


def _sql_type(s: pd.Series, dialect: str) -> str:
    if pd.api.types.is_bool_dtype(s):
        return "INTEGER" if dialect == "sqlite" else "BOOLEAN"
    if pd.api.types.is_integer_dtype(s):
        return "INTEGER" if dialect == "sqlite" else "BIGINT"
    if pd.api.types.is_float_dtype(s):
        return "REAL" if dialect == "sqlite" else "DOUBLE"
    if pd.api.types.is_datetime64_any_dtype(s):
        return "TEXT" if dialect == "sqlite" else "TIMESTAMP"
    return "TEXT" if dialect == "sqlite" else "VARCHAR"


WRITE_CHUNK_ROWS = 100_000
"""Rows per chunk when a table is written to SQLite: rows are converted to Python tuples one chunk
at a time (≈ 50 bytes a cell), so writing n rows needs memory for ``min(n, WRITE_CHUNK_ROWS)``
of them, not n. Measured on 6·10⁶ rows × 6 columns: +1,967 MB → +58 MB, 26.5 s → 21.3 s."""

ARROW_CHUNK_ROWS = 1_000_000
"""Rows per chunk when a table is written to DuckDB or Parquet (one Parquet row group per chunk):
the columnar conversion copies one chunk at a time. Larger than SQLite's chunks because a
columnar row costs a few bytes and small inserts are slower."""


def _chunks(df: pd.DataFrame, columns: list[str], rows: int):  # noqa: ANN202 - iterator of frames
    """``df[columns]`` in slices of ``rows`` rows (one empty slice for no rows)."""
    n = len(df)
    for start in range(0, max(n, 1), rows):
        yield df.iloc[start:start + rows][columns]


def _whole_days(s: pd.Series) -> bool:
    """Whether every non-null datetime of ``s`` is a midnight (written as a date)."""
    v = s.dropna()
    return bool((v == v.dt.normalize()).all())


def _write_parquet(df: pd.DataFrame, columns: list[str], path: Path) -> None:
    """``df[columns]`` to one Parquet file, one row group per chunk of rows (pyarrow's writer).

    The Arrow schema comes from the whole frame's dtypes; an object column's type from its first
    non-null values (``pa.infer_type``), so a chunk that happens to be all null keeps it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = []
    for c in columns:
        s = df[c]
        if s.dtype == object:
            sample = s.dropna().head(1000).tolist()
            typ = pa.infer_type(sample) if sample else pa.null()
        else:
            typ = pa.Schema.from_pandas(s.iloc[:0].to_frame(), preserve_index=False).field(c).type
        fields.append(pa.field(c, typ))
    schema = pa.schema(fields)
    with pq.ParquetWriter(path, schema) as writer:
        for chunk in _chunks(df, columns, ARROW_CHUNK_ROWS):
            writer.write_table(pa.Table.from_pandas(chunk, schema=schema, preserve_index=False))


def _sqlite_rows(df: pd.DataFrame, whole_days: Mapping[str, bool] | None = None):  # noqa: ANN202
    """Rows of ``df`` as tuples of Python values SQLite accepts (None for nulls), column-wise.

    ``whole_days``: per datetime column, whether it is written as a date (default: read from
    ``df``; pass the whole table's answer when ``df`` is a chunk of it)."""
    cols = []
    for c in df.columns:
        s = df[c]
        null = s.isna().to_numpy()
        if pd.api.types.is_datetime64_any_dtype(s):
            days = whole_days[c] if whole_days and c in whole_days else _whole_days(s)
            vals = s.dt.strftime("%Y-%m-%d" if days else "%Y-%m-%d %H:%M:%S").to_numpy(
                dtype=object, na_value=None)
        elif pd.api.types.is_bool_dtype(s) or pd.api.types.is_integer_dtype(s):
            vals = s.to_numpy(dtype=object, na_value=None)
            vals = np.where(null, None, s.fillna(0).to_numpy(dtype=np.int64).astype(object)) \
                if null.any() else s.to_numpy(dtype=np.int64).tolist()
        elif pd.api.types.is_float_dtype(s):
            vals = s.to_numpy(dtype=float)
            vals = np.where(null, None, vals.astype(object)) if null.any() else vals.tolist()
        else:
            vals = s.to_numpy(dtype=object, na_value=None)
        cols.append(vals.tolist() if isinstance(vals, np.ndarray) else vals)
    return zip(*cols)


def _drop_rows(schema: Schema, tables: dict[str, pd.DataFrame], table: str,
               mask: np.ndarray) -> dict[str, pd.DataFrame]:
    """Drop rows ``mask`` of ``table`` and, transitively, every row referring to a dropped row."""
    tables = dict(tables)
    pending = [(table, np.asarray(mask, dtype=bool))]
    while pending:
        name, m = pending.pop()
        if not m.any():
            continue
        removed = tables[name][m]
        tables[name] = tables[name][~m].reset_index(drop=True)
        for fk in schema.fks_into(name):
            child = tables.get(fk.child)
            if child is None or not all(c in removed.columns for c in fk.parent_columns):
                continue
            gone = _key_frame(removed, list(fk.parent_columns))
            ckey = _key_frame(child, list(fk.columns))
            hit = np.asarray(ckey.isin(gone), dtype=bool)
            pending.append((fk.child, hit))
    return tables


def drop_rows(db: Database, table: str, mask: np.ndarray) -> Database:
    """A new database without rows ``mask`` of ``table`` and everything depending on them."""
    return Database._adopt(db.schema, _drop_rows(db.schema, dict(db._tables), table, mask))


def _coerce(frames: dict[str, pd.DataFrame], schema: Schema) -> dict[str, pd.DataFrame]:
    """Cast loaded columns to what the schema declares (text categories, datetimes)."""
    out = {}
    for name, df in frames.items():
        if name not in schema.table_names:
            out[name] = df
            continue
        df = df.copy(deep=False)  # copy-on-write: the columns cast below are new, the rest shared
        for a in schema.table(name).attributes:
            if a.name not in df.columns:
                continue
            if a.kind == "datetime" and not pd.api.types.is_datetime64_any_dtype(df[a.name]):
                parsed = parse_datetimes(df[a.name])
                if not (parsed.isna() & df[a.name].notna()).any():  # else validate reports them
                    df[a.name] = parsed
            elif a.kind == "categorical" and all(isinstance(c, str) for c in a.categories) \
                    and not pd.api.types.is_string_dtype(df[a.name]):
                df[a.name] = df[a.name].astype("str").where(df[a.name].notna())
        out[name] = df
    return out


def _schema_from_constraints(frames: Mapping[str, pd.DataFrame], pks: Mapping[str, tuple],
                             fks: Sequence[tuple]) -> Schema:
    """Declared keys of a database file + everything else proposed by ``infer_schema``."""
    if not any(pks.values()) and not fks:
        return infer_schema(frames)
    fk_objs = []
    for child, cols, parent, pcols in fks:
        pcols = tuple(pcols) or tuple(pks.get(parent, ()))
        if parent in frames and child in frames:
            fk_objs.append(ForeignKey(child, tuple(cols), parent, pcols,
                                      nullable=bool(frames[child][list(cols)].isna().any().any()),
                                      nullable_provenance="inferred"))
    return infer_schema(frames, primary_keys={n: tuple(pks.get(n, ())) for n in frames},
                        foreign_keys=fk_objs)


def _without_excluded(schema: Schema, name: str, df: pd.DataFrame, *, deep: bool = True) -> pd.DataFrame:
    """A copy of ``df`` (shallow unless ``deep``) without the columns ``schema`` excludes from
    table ``name``."""
    if name in schema.table_names:
        gone = [c for c in schema.table(name).exclude if c in df.columns]
        if gone:
            out = df.drop(columns=gone)
            return out.copy() if deep else out
    return df.copy(deep=deep)
