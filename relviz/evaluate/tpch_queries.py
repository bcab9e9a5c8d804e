"""The eight TPC-H queries of the PrivLava / PrivPetal yardstick and the papers' query error —
**curator view (not private)** when run on the real database.

Sources: TPC, *TPC Benchmark H Standard Specification*, revision 3, §2.4 (the queries Q4, Q5, Q7,
Q9, Q12, Q14, Q17, Q19 and their **validation** substitution parameters, used here); K. Cai,
X. Xiao, G. Cormode, *PrivLava*, SIGMOD 2023, §7.1 (the query set and the error), and its
follow-up *PrivPetal* (K. Cai, X. Xiao, Y. Yang, arXiv:2503.22970, 2025), which uses the same
yardstick.

The queries run through DuckDB on a :class:`~relviz.database.Database` with the schema of
:mod:`relviz.datasets.tpch` — the real database or a synthetic one, which have the same schema.
They are the specification's SQL text, unchanged but for Q9's colour test (below), run on views
that rebuild the TPC-H columns from what relviz stores and synthesises:

* ``orders``: ``o_orderdate = make_date(o_year, o_month, 1) + (o_day − 1)`` (an impossible
  synthetic date such as 31 February rolls over into March);
* ``lineitem``: ``l_extendedprice = l_quantity · p_retailprice`` (the specification's definition),
  ``l_discount = l_discount / 100``, ``l_shipdate = o_orderdate + l_shipdelta``,
  ``l_commitdate = o_orderdate + 30 + l_commitdelta``, ``l_receiptdate = l_shipdate +
  l_receiptdelta``;
* the public tables as stored. Q9's ``p_name LIKE '%green%'`` reads the public boolean
  ``p_green`` (whether the part's name contains ``green``), the one fact of the name it uses.

Q19 keeps the specification's ``l_shipmode IN ('AIR', 'AIR REG')`` verbatim (``AIR REG`` is not
a ship mode; only ``AIR`` matches) so that the answers compare with other implementations.

Error (PrivLava §7.1): for each query, the average relative error ``|v* − v| / |v|`` over the
values the real query returns — every numeric aggregate column of every returned row; a
synthetic row is matched to a real one on the GROUP BY key columns. A real row with no synthetic
row counts error 1 for each of its values, and so does a synthetic NULL (an aggregate over no
rows). Additive aggregates (COUNT, SUM, and SUM / 7 in Q17) are first rescaled by
``|Orders| / |Orders*|`` (real over synthetic orders: the synthetic database may be smaller or
larger); ratios (Q14) are not. A real value 0 counts error 0 when the synthetic value is 0 and 1
otherwise; real NULLs (e.g. Q17 with no qualifying line item) are left out. Synthetic rows whose
key the real answer lacks are not counted (the error is over the *returned* real values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.database import Database

__all__ = ["TPCHQuery", "QUERIES", "tpch_connection", "tpch_query_answers", "tpch_errors",
           "answer_error"]


@dataclass(frozen=True)
class TPCHQuery:
    """One TPC-H query with what its error needs.

    Attributes:
        name: ``"Q4"`` …
        title: The specification's name of the query.
        sql: DuckDB SQL on the views of :func:`tpch_connection`.
        keys: GROUP BY columns of the answer (empty: one row).
        additive: COUNT/SUM aggregate columns (rescaled by |Orders| / |Orders*|).
        ratios: Ratio/average aggregate columns (not rescaled).
    """

    name: str
    title: str
    sql: str
    keys: tuple[str, ...] = ()
    additive: tuple[str, ...] = ()
    ratios: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        return self.additive + self.ratios


_QUERIES = (
    TPCHQuery("Q4", "order priority checking", """
        SELECT o_orderpriority, count(*) AS order_count
        FROM orders
        WHERE o_orderdate >= DATE '1993-07-01'
          AND o_orderdate < DATE '1993-07-01' + INTERVAL 3 MONTH
          AND EXISTS (SELECT * FROM lineitem
                      WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
        GROUP BY o_orderpriority
        ORDER BY o_orderpriority""", keys=("o_orderpriority",), additive=("order_count",)),
    TPCHQuery("Q5", "local supplier volume", """
        SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM customer, orders, lineitem, supplier, nation, region
        WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
          AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey
          AND n_regionkey = r_regionkey AND r_name = 'ASIA'
          AND o_orderdate >= DATE '1994-01-01'
          AND o_orderdate < DATE '1994-01-01' + INTERVAL 1 YEAR
        GROUP BY n_name
        ORDER BY revenue DESC""", keys=("n_name",), additive=("revenue",)),
    TPCHQuery("Q7", "volume shipping", """
        SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
        FROM (SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation,
                     extract(year FROM l_shipdate) AS l_year,
                     l_extendedprice * (1 - l_discount) AS volume
              FROM supplier, lineitem, orders, customer, nation n1, nation n2
              WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
                AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
                AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')
                  OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
                AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31') AS shipping
        GROUP BY supp_nation, cust_nation, l_year
        ORDER BY supp_nation, cust_nation, l_year""",
              keys=("supp_nation", "cust_nation", "l_year"), additive=("revenue",)),
    TPCHQuery("Q9", "product type profit measure", """
        SELECT nation, o_year, sum(amount) AS sum_profit
        FROM (SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year,
                     l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
              FROM part, supplier, lineitem, partsupp, orders, nation
              WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey
                AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey
                AND p_green) AS profit
        GROUP BY nation, o_year
        ORDER BY nation, o_year DESC""", keys=("nation", "o_year"), additive=("sum_profit",)),
    TPCHQuery("Q12", "shipping modes and order priority", """
        SELECT l_shipmode,
               sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH'
                        THEN 1 ELSE 0 END) AS high_line_count,
               sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH'
                        THEN 1 ELSE 0 END) AS low_line_count
        FROM orders, lineitem
        WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')
          AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate
          AND l_receiptdate >= DATE '1994-01-01'
          AND l_receiptdate < DATE '1994-01-01' + INTERVAL 1 YEAR
        GROUP BY l_shipmode
        ORDER BY l_shipmode""", keys=("l_shipmode",),
              additive=("high_line_count", "low_line_count")),
    TPCHQuery("Q14", "promotion effect", """
        SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%'
                                 THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
               / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
        FROM lineitem, part
        WHERE l_partkey = p_partkey
          AND l_shipdate >= DATE '1995-09-01'
          AND l_shipdate < DATE '1995-09-01' + INTERVAL 1 MONTH""", ratios=("promo_revenue",)),
    TPCHQuery("Q17", "small-quantity-order revenue", """
        SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
        FROM lineitem, part
        WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX'
          AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem
                            WHERE l_partkey = p_partkey)""", additive=("avg_yearly",)),
    TPCHQuery("Q19", "discounted revenue", """
        SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
        FROM lineitem, part
        WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12'
               AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
               AND l_quantity >= 1 AND l_quantity <= 1 + 10 AND p_size BETWEEN 1 AND 5
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
           OR (p_partkey = l_partkey AND p_brand = 'Brand#23'
               AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
               AND l_quantity >= 10 AND l_quantity <= 10 + 10 AND p_size BETWEEN 1 AND 10
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')
           OR (p_partkey = l_partkey AND p_brand = 'Brand#34'
               AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
               AND l_quantity >= 20 AND l_quantity <= 20 + 10 AND p_size BETWEEN 1 AND 15
               AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')""",
              additive=("revenue",)),
)

#: The eight queries, by name.
QUERIES: dict[str, TPCHQuery] = {q.name: q for q in _QUERIES}

_PUBLIC = ("region", "nation", "supplier", "customer", "part", "partsupp")

_REBUILD = """
CREATE TEMP TABLE orders AS
SELECT o_orderkey, o_custkey, o_orderstatus, o_orderpriority,
       CAST(make_date(CAST(o_year AS BIGINT), CAST(o_month AS BIGINT), 1)
            + CAST(o_day - 1 AS INTEGER) AS DATE) AS o_orderdate
FROM _orders;
CREATE TEMP TABLE lineitem AS
SELECT l.l_orderkey, l.l_linenumber, l.l_partkey, l.l_suppkey,
       CAST(l.l_quantity AS DOUBLE) AS l_quantity,
       CAST(l.l_quantity AS DOUBLE) * CAST(p.p_retailprice AS DOUBLE) AS l_extendedprice,
       CAST(l.l_discount AS DOUBLE) / 100 AS l_discount,
       o.o_orderdate + CAST(l.l_shipdelta AS INTEGER) AS l_shipdate,
       o.o_orderdate + CAST(30 + l.l_commitdelta AS INTEGER) AS l_commitdate,
       o.o_orderdate + CAST(l.l_shipdelta + l.l_receiptdelta AS INTEGER) AS l_receiptdate,
       l.l_shipinstruct, l.l_shipmode
FROM _lineitem l JOIN orders o ON l.l_orderkey = o.o_orderkey
     JOIN part p ON l.l_partkey = p.p_partkey;
"""


def tpch_connection(db: Database):  # noqa: ANN201 - duckdb.DuckDBPyConnection
    """An in-memory DuckDB connection with the TPC-H tables of ``db`` (real or synthetic).

    The public tables are registered as views on the frames; ``orders`` and ``lineitem`` are
    rebuilt (temporary tables) with the TPC-H date and price columns, see the module docstring.
    """
    import duckdb

    missing = [t for t in (*_PUBLIC, "orders", "lineitem") if t not in db]
    if missing:
        raise KeyError(f"not a TPC-H database (relviz.datasets.tpch): no table(s) {missing}")
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    for t in _PUBLIC:
        con.register(t, db[t])
    con.register("_orders", db["orders"])
    con.register("_lineitem", db["lineitem"])
    con.execute(_REBUILD)
    return con


def tpch_query_answers(db: Database, queries: Iterable[str] | None = None) -> dict[str, pd.DataFrame]:
    """Answers of the TPC-H queries (all eight by default) on ``db``.

    Returns:
        ``{query name: answer frame}``: the GROUP BY keys, then the aggregates, in the
        specification's order of rows.
    """
    names = list(QUERIES) if queries is None else list(queries)
    con = tpch_connection(db)
    try:
        return {n: con.sql(QUERIES[n].sql).df() for n in names}
    finally:
        con.close()


def answer_error(real: pd.DataFrame, synthetic: pd.DataFrame, *, keys: Sequence[str] = (),
                 additive: Sequence[str] = (), ratios: Sequence[str] = (),
                 scale: float = 1.0) -> float:
    """Average relative error of one query's synthetic answer (see the module docstring).

    Args:
        real, synthetic: The two answers (key columns, then aggregates).
        keys: GROUP BY columns matching rows (empty: the answers' first rows are compared).
        additive: Aggregates multiplied by ``scale`` before comparing.
        ratios: Aggregates compared as they are.
        scale: ``|Orders| / |Orders*|``.

    Returns:
        The mean of ``|v* − v| / |v|`` over the real values (NaN when the real answer has none).
    """
    keys, values = list(keys), list(additive) + list(ratios)
    if keys:
        syn = synthetic[keys + values].rename(columns={c: f"{c}\0syn" for c in values})
        merged = real[keys + values].merge(syn, on=keys, how="left", validate="one_to_one")
    else:
        merged = real[values].head(1).reset_index(drop=True)
        first = synthetic[values].head(1).reset_index(drop=True)
        for c in values:
            merged[f"{c}\0syn"] = first[c] if len(first) else np.nan
    if merged.empty or not values:
        return float("nan")
    v = merged[values].to_numpy(dtype=float)
    s = merged[[f"{c}\0syn" for c in values]].to_numpy(dtype=float)
    s = s * np.array([scale if c in additive else 1.0 for c in values])
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(s - v) / np.abs(v)
    err = np.where(v == 0, np.where(s == 0, 0.0, 1.0), err)
    err = np.where(np.isnan(s), 1.0, err)
    err = err[~np.isnan(v)]
    return float(err.mean()) if err.size else float("nan")


def tpch_errors(real: Database, synthetic: Database, queries: Iterable[str] | None = None, *,
                real_answers: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """The papers' error of each TPC-H query on ``synthetic`` against ``real`` (curator view).

    Args:
        real, synthetic: TPC-H databases with the schema of :mod:`relviz.datasets.tpch`.
        queries: Query names (default: all eight).
        real_answers: Answers of ``real`` already computed by :func:`tpch_query_answers`
            (saves recomputing them for several synthetic databases).

    Returns:
        One row per query: ``query``, ``error`` (average relative error), ``rows`` (rows of the
        real answer) and ``missing`` (real rows without a synthetic row).
    """
    names = list(QUERIES) if queries is None else list(queries)
    ra = dict(real_answers or {})
    todo = [n for n in names if n not in ra]
    if todo:
        ra.update(tpch_query_answers(real, todo))
    sa = tpch_query_answers(synthetic, names)
    n_syn = len(synthetic["orders"])
    scale = len(real["orders"]) / n_syn if n_syn else float("nan")
    rows = []
    for n in names:
        q, r, s = QUERIES[n], ra[n], sa[n]
        if q.keys:
            found = r[list(q.keys)].merge(s[list(q.keys)].drop_duplicates(), on=list(q.keys),
                                          how="left", indicator=True)
            missing = int((found["_merge"] == "left_only").sum())
        else:
            missing = int(len(r) > 0 and len(s) == 0)
        rows.append({"query": n, "error": answer_error(r, s, keys=q.keys, additive=q.additive,
                                                       ratios=q.ratios, scale=scale),
                     "rows": len(r), "missing": missing})
    return pd.DataFrame(rows, columns=["query", "error", "rows", "missing"])
