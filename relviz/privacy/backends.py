"""Where the exact counts are computed: pandas/numpy, DuckDB or Spark.

Every count a mechanism asks for (the marginal of a table over some attributes, the children per
parent of a foreign key with the null/orphan children last, the cross-table counts of child
attributes × parent attributes over the non-null links) is a plain GROUP BY count over integer
codes of public domains. A :class:`CountBackend` runs those group-by queries; the handles of
:mod:`relviz.privacy.measure` ask it, log the read, and hand the exact counts to a mechanism.

Backends only compute exact counts. They release nothing and know nothing of budgets: every
count still reaches the outside world only through the one accountant of
:mod:`relviz.privacy.mechanisms` (via the handles of :mod:`relviz.privacy.measure`), so the
privacy analysis does not depend on the backend. All three answer with the same integers, so a
seeded run gives the same synthetic database on each (``tests/privacy/test_backends.py``).

* :class:`PandasBackend` (default): numpy ``bincount`` over the codes in memory; the fastest for
  data that fits in memory and no start-up cost.
* :class:`DuckDBBackend`: the queries in SQL (``GROUP BY`` on the coded columns, the cross-table
  counts as a ``JOIN`` of child to parent on the parent row), run by DuckDB's vectorised,
  multi-threaded engine, which can spill to disk (pass a database file or ``temp_directory``).
* :class:`SparkBackend`: the same queries as Spark DataFrame ``groupBy().count()`` and ``join``,
  for clusters (pass a ``SparkSession``); by default one lazily created ``local[2]`` session.

What is pushed down today: the *encoded* tables (``relviz.encoding``: codes over the public
domains, in their small unsigned type) and the parent row of each child row
(``Database.parent_index``) are registered with the engine as Arrow tables, and every count is a
query on them. When a fit ends the curator has the backend forget them (``forget()``), so no
private array outlives the fit inside an engine. A database larger than memory is read out of
core by :class:`relviz.source.EncodedDatabase`: DuckDB scans a ``.duckdb`` file or Parquet folder a
chunk at a time, checks and joins the keys, and only the codes and parent rows reach memory, so no
pandas frame of a private table is ever built.

Why our own glue: DP libraries (OpenDP, Tumult Analytics, PipelineDP, smartnoise-sql) each bind
measurement to their own accountant and query model and none of them measures relational
counts (degree histograms, per-parent counts, cross-table marginals along a foreign key) with
relviz's sensitivities; here the engines only count, which keeps the accounting in one place.
"""

from __future__ import annotations

import itertools
import math
import threading
import warnings
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from relviz.marginals import Workload, all_marginals, mixed_radix_codes

__all__ = ["CountBackend", "Cross", "PandasBackend", "DuckDBBackend", "SparkBackend",
           "get_backend", "BACKENDS"]

BACKENDS = ("pandas", "duckdb", "spark")


class Cross(NamedTuple):
    """One cross-table count: child columns × parent columns, ``sizes`` of all of them in that
    order (child first; C order, first column most significant)."""

    child_cols: tuple[int, ...]
    parent_cols: tuple[int, ...]
    sizes: tuple[int, ...]


@runtime_checkable
class CountBackend(Protocol):
    """Runs the exact group-by counts of :mod:`relviz.privacy.measure` (never a release).

    Arrays passed in are not modified and must not change while the backend is in use (engines
    may keep a registered copy keyed by the array's identity). Every method returns int64 counts.
    """

    name: str

    def marginal(self, codes: np.ndarray, cols: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
        """Counts of the rows of ``codes`` (``(n, d)`` int) per cell of ``cols``:
        ``(Π sizes,)`` int64, C order; ``(1,)`` (the row count) when ``cols`` is empty."""
        ...

    def parent_counts(self, parent_index: np.ndarray, n_parent: int) -> np.ndarray:
        """Children per parent row, then the number of children whose ``parent_index`` is
        negative (null FK or orphan): ``(n_parent + 1,)`` int64."""
        ...

    def cross(self, child_codes: np.ndarray, parent_codes: np.ndarray, parent_index: np.ndarray,
              queries: Sequence[Cross]) -> list[np.ndarray]:
        """For each query, counts of (child columns, parent columns) over the child rows with a
        parent (``parent_index >= 0``), joined to that parent: ``(Π sizes,)`` int64, C order."""
        ...

    def close(self) -> None:
        """Release what the engine holds (registered tables, connections).

        A backend may also have ``forget()``: release the registered tables but stay usable
        (relviz's three do; :class:`~relviz.privacy.measure.Curator` calls it when a fit ends, so
        that no private array outlives the fit in the engine)."""
        ...


def ravel(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Mixed-radix cell index of every column of ``codes`` (C order, first attribute most
    significant): :func:`relviz.marginals.mixed_radix_codes`."""
    return mixed_radix_codes(codes, range(len(sizes)), sizes)


def _dense(keys: np.ndarray, counts: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Dense int64 array of ``(Π sizes,)`` cells from the rows of a group-by (``keys`` is
    ``(k, len(sizes))``, one count per group)."""
    out = np.zeros(math.prod(int(s) for s in sizes), dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts):
        np.add.at(out, ravel(np.asarray(keys, dtype=np.int64).reshape(len(counts), len(sizes)),
                             sizes), counts)
    return out


def _per_parent(parent: np.ndarray, counts: np.ndarray, n_parent: int) -> np.ndarray:
    out = np.zeros(n_parent + 1, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    np.add.at(out, np.where(parent >= 0, parent, n_parent), np.asarray(counts, dtype=np.int64))
    return out


class PandasBackend:
    """In memory: numpy ``bincount`` over the codes (the default)."""

    name = "pandas"

    def marginal(self, codes: np.ndarray, cols: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
        cols = list(cols)
        if not cols:
            return np.array([codes.shape[0]], dtype=np.int64)
        return np.bincount(ravel(codes[:, cols], sizes),
                           minlength=math.prod(int(s) for s in sizes)).astype(np.int64)

    def parent_counts(self, parent_index: np.ndarray, n_parent: int) -> np.ndarray:
        i = np.where(parent_index >= 0, parent_index, n_parent)
        return np.bincount(i, minlength=n_parent + 1).astype(np.int64)

    def cross(self, child_codes: np.ndarray, parent_codes: np.ndarray, parent_index: np.ndarray,
              queries: Sequence[Cross]) -> list[np.ndarray]:
        # relviz.marginals.all_marginals: endpoint codes gathered once, side codes cached per
        # attribute subset (the cross-table workloads of bi-adjacency share them)
        keep = np.flatnonzero(parent_index >= 0)
        k = [len(q.child_cols) for q in queries]
        wls = [Workload(tuple(q.child_cols), tuple(q.parent_cols), tuple(q.sizes[:i]), tuple(q.sizes[i:]))
               for q, i in zip(queries, k)]
        return [m.astype(np.int64) for m in all_marginals(child_codes, parent_codes, keep,
                                                          parent_index[keep], wls, normalise_by=1.0)]

    def forget(self) -> None:
        """Nothing to release: numpy counts hold no copy."""

    def close(self) -> None:
        pass


class _Registry:
    """Engine tables registered per array identity (the arrays are kept alive with them, so an
    identity is never reused while registered)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[int, ...], tuple[tuple[np.ndarray, ...], Any]] = {}
        self._names = itertools.count()

    def get(self, arrays: tuple[np.ndarray | None, ...], make) -> Any:  # noqa: ANN001
        key = tuple(id(a) for a in arrays)
        if key not in self._tables:
            self._tables[key] = (arrays, make(f"relviz_t{next(self._names)}"))
        return self._tables[key][1]

    def pop_all(self) -> list[Any]:
        values = [v for _, v in self._tables.values()]
        self._tables.clear()
        return values


def _code_columns(codes: np.ndarray, prefix: str = "c", *, dtype: Any = np.int64) -> dict[str, np.ndarray]:
    """One contiguous array per column of ``codes``, of ``dtype`` (``None``: the codes' own)."""
    return {f"{prefix}{j}": np.ascontiguousarray(codes[:, j], dtype=dtype)
            for j in range(codes.shape[1])}


def _rows(n: int) -> np.ndarray:
    """Row positions ``0 … n−1``, int32 when they fit (the join key of a parent table)."""
    return np.arange(n, dtype=np.int32 if n < 2 ** 31 else np.int64)


class DuckDBBackend:
    """In DuckDB: each count is a SQL ``GROUP BY`` (cross-table counts a ``JOIN``).

    Args:
        database: DuckDB database the connection opens (default in memory; a file path lets
            DuckDB spill to it).
        threads: DuckDB worker threads (default: DuckDB's, the number of cores).
        memory_limit: e.g. ``"2GB"``; DuckDB spills to ``temp_directory`` beyond it.
        temp_directory: Where DuckDB spills.
    """

    name = "duckdb"

    def __init__(self, database: str = ":memory:", *, threads: int | None = None,
                 memory_limit: str | None = None, temp_directory: str | None = None) -> None:
        import duckdb

        self._con = duckdb.connect(database)
        if threads is not None:
            self._con.execute(f"SET threads = {int(threads)}")
        if memory_limit is not None:
            self._con.execute("SET memory_limit = ?", [memory_limit])
        if temp_directory is not None:
            self._con.execute("SET temp_directory = ?", [temp_directory])
        self._reg = _Registry()
        self._lock = threading.Lock()  # a DuckDB connection is not for concurrent use

    def _register(self, columns: dict[str, np.ndarray], name: str) -> str:
        import pyarrow as pa

        self._con.register(name, pa.table(columns))
        return name

    def _codes(self, codes: np.ndarray) -> str:
        """Codes ``c0 …`` in their own (small unsigned) type."""
        return self._reg.get((codes,), lambda name: self._register(
            _code_columns(codes, dtype=None), name))

    def _parents(self, codes: np.ndarray) -> str:
        """Codes ``c0 …`` and the row position ``_row`` (a join's parent side)."""
        return self._reg.get((codes, None), lambda name: self._register(
            {**_code_columns(codes, dtype=None), "_row": _rows(codes.shape[0])}, name))

    def _links(self, parent_index: np.ndarray) -> str:
        return self._reg.get((parent_index,), lambda name: self._register(
            {"_p": np.asarray(parent_index, dtype=np.int64)}, name))

    def _children(self, codes: np.ndarray, parent_index: np.ndarray) -> str:
        """Child codes ``c0 …`` and the parent row ``_p`` (negative: no parent)."""
        return self._reg.get((codes, parent_index), lambda name: self._register(
            {**_code_columns(codes, dtype=None), "_p": np.asarray(parent_index, dtype=np.int64)},
            name))

    def _group_by(self, sql_cols: list[str], source: str) -> tuple[np.ndarray, np.ndarray]:
        """``SELECT cols, count(*) FROM source GROUP BY cols`` → (keys ``(k, len(cols))``,
        counts ``(k,)``)."""
        select = ", ".join([*(f"{c} AS k{i}" for i, c in enumerate(sql_cols)), "count(*) AS n"])
        group = f" GROUP BY {', '.join(f'k{i}' for i in range(len(sql_cols)))}" if sql_cols else ""
        res = self._con.execute(f"SELECT {select} FROM {source}{group}").fetchnumpy()
        counts = np.asarray(res["n"], dtype=np.int64)
        keys = np.stack([np.asarray(res[f"k{i}"], dtype=np.int64) for i in range(len(sql_cols))],
                        axis=1) if sql_cols else np.zeros((len(counts), 0), dtype=np.int64)
        return keys, counts

    def marginal(self, codes: np.ndarray, cols: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
        with self._lock:
            keys, counts = self._group_by([f"c{j}" for j in cols], self._codes(codes))
        return _dense(keys, counts, sizes)

    def parent_counts(self, parent_index: np.ndarray, n_parent: int) -> np.ndarray:
        with self._lock:
            keys, counts = self._group_by(["_p"], self._links(parent_index))
        return _per_parent(keys[:, 0], counts, n_parent)

    def cross(self, child_codes: np.ndarray, parent_codes: np.ndarray, parent_index: np.ndarray,
              queries: Sequence[Cross]) -> list[np.ndarray]:
        out = []
        with self._lock:
            source = (f"{self._children(child_codes, parent_index)} AS c JOIN "
                      f"{self._parents(parent_codes)} AS p ON c._p = p._row")
            for q in queries:
                keys, counts = self._group_by([f"c.c{j}" for j in q.child_cols]
                                              + [f"p.c{j}" for j in q.parent_cols], source)
                out.append(_dense(keys, counts, q.sizes))
        return out

    def forget(self) -> None:
        """Unregister every array this backend registered (the connection stays open)."""
        with self._lock:
            for name in self._reg.pop_all():
                self._con.unregister(name)

    def close(self) -> None:
        self.forget()
        with self._lock:
            self._con.close()


_SPARK_LOCK = threading.Lock()


def spark_session():  # noqa: ANN201 - pyspark.sql.SparkSession
    """The shared local Spark session (``local[2]``, quiet, Arrow transfers), created on first
    use and reused; an already active session is reused as it is."""
    import os

    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no warning about a loopback host name
    with _SPARK_LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        builder = (SparkSession.builder.master("local[2]").appName("relviz-measure")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.log.level", "ERROR")
                   .config("spark.sql.shuffle.partitions", "4")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")
                   .config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
        with warnings.catch_warnings():  # pyspark warns once that it does not fully support
            warnings.filterwarnings(  # pandas 3: we hand it Arrow tables only
                "ignore", "PySpark does not yet fully support pandas", FutureWarning)
            spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark


def _unpersist(frames: list[Any]) -> None:
    for df in frames:
        try:
            df.unpersist()
        except Exception:  # noqa: BLE001 - the session may already be stopped
            pass


class SparkBackend:
    """In Spark: each count a DataFrame ``groupBy().count()`` (cross-table counts a ``join``).

    Args:
        session: A ``SparkSession`` (e.g. on a cluster); default :func:`spark_session`, a
            lazily created ``local[2]`` session shared by every ``SparkBackend``.
    """

    name = "spark"

    def __init__(self, session: Any = None) -> None:
        self._session = session
        self._reg = _Registry()
        self._persisted: list[Any] = []
        self._lock = threading.Lock()
        weakref.finalize(self, _unpersist, self._persisted)

    @property
    def session(self):  # noqa: ANN201 - pyspark.sql.SparkSession
        if self._session is None:
            self._session = spark_session()
        return self._session

    def _frame(self, columns: dict[str, np.ndarray]):  # noqa: ANN202
        import pyarrow as pa

        df = self.session.createDataFrame(pa.table(columns)).persist()
        self._persisted.append(df)
        return df

    def _codes(self, codes: np.ndarray):  # noqa: ANN202
        return self._reg.get((codes,), lambda _: self._frame(
            {**_code_columns(codes), "_row": np.arange(codes.shape[0], dtype=np.int64)}))

    def _links(self, parent_index: np.ndarray):  # noqa: ANN202
        return self._reg.get((parent_index,), lambda _: self._frame(
            {"_p": np.asarray(parent_index, dtype=np.int64)}))

    def _children(self, codes: np.ndarray, parent_index: np.ndarray):  # noqa: ANN202
        return self._reg.get((codes, parent_index), lambda _: self._frame(
            {**_code_columns(codes), "_p": np.asarray(parent_index, dtype=np.int64)}))

    @staticmethod
    def _group_by(df, cols: list) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
        from pyspark.sql import functions as F

        if not cols:
            return np.zeros((1, 0), dtype=np.int64), np.array([df.count()], dtype=np.int64)
        keyed = [F.col(c).alias(f"k{i}") for i, c in enumerate(cols)]
        res = df.groupBy(*keyed).count().toArrow()
        keys = np.stack([res.column(f"k{i}").to_numpy().astype(np.int64) for i in range(len(cols))],
                        axis=1)
        return keys, res.column("count").to_numpy().astype(np.int64)

    def marginal(self, codes: np.ndarray, cols: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
        with self._lock:
            keys, counts = self._group_by(self._codes(codes), [f"c{j}" for j in cols])
        return _dense(keys, counts, sizes)

    def parent_counts(self, parent_index: np.ndarray, n_parent: int) -> np.ndarray:
        with self._lock:
            keys, counts = self._group_by(self._links(parent_index), ["_p"])
        return _per_parent(keys[:, 0], counts, n_parent)

    def cross(self, child_codes: np.ndarray, parent_codes: np.ndarray, parent_index: np.ndarray,
              queries: Sequence[Cross]) -> list[np.ndarray]:
        from pyspark.sql import functions as F

        out = []
        with self._lock:
            child = self._children(child_codes, parent_index).alias("c")
            parent = self._codes(parent_codes).alias("p")
            joined = child.join(parent, F.col("c._p") == F.col("p._row"))
            for q in queries:
                keys, counts = self._group_by(joined, [f"c.c{j}" for j in q.child_cols]
                                              + [f"p.c{j}" for j in q.parent_cols])
                out.append(_dense(keys, counts, q.sizes))
        return out

    def forget(self) -> None:
        """Unpersist every frame this backend created (the session stays)."""
        with self._lock:
            self._reg.pop_all()
            _unpersist(self._persisted)
            self._persisted.clear()

    def close(self) -> None:
        self.forget()


def get_backend(backend: str | CountBackend | None) -> CountBackend:
    """A backend from its name (``"pandas"``, ``"duckdb"``, ``"spark"``) or as given."""
    if backend is None or backend == "pandas":
        return PandasBackend()
    if backend == "duckdb":
        return DuckDBBackend()
    if backend == "spark":
        return SparkBackend()
    if isinstance(backend, str):
        raise ValueError(f"unknown count backend {backend!r} (one of {', '.join(BACKENDS)})")
    if not isinstance(backend, CountBackend):
        raise TypeError(f"{backend!r} is not a CountBackend")
    return backend
