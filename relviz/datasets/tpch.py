"""tpch: the TPC-H benchmark database with the correlation revisions of PrivLava and PrivPetal.

Sources:

* Transaction Processing Performance Council, *TPC Benchmark H (Decision Support) Standard
  Specification*, revision 3 (the schema, §1.4; the value distributions of the data generator,
  §4.2.3; the queries and their validation parameters, §2.4).
* K. Cai, X. Xiao, G. Cormode, *PrivLava: Synthesizing Relational Data with Foreign Keys under
  Differential Privacy*, SIGMOD 2023, §7.1 (the TPC-H yardstick: the three correlation revisions
  (a)–(c) below, the attribute encodings, the eight queries and their error).
* K. Cai, X. Xiao, Y. Yang, *PrivPetal: Relational Data Synthesis via Permutation Relations*,
  arXiv:2503.22970, 2025 (the follow-up on the same yardstick): the fourth revision (d), a
  dependence of the ship mode on the order priority, whose exact table is relviz's own.

The data are generated offline by ``tpchgen-cli`` (a Rust reimplementation of the TPC's ``dbgen``
from the Apache DataFusion community, Apache-2.0; deterministic per scale factor, written as
Parquet and read with DuckDB), then revised with numpy's ``Generator`` seeded by ``seed``.
``relviz.datasets.load("tpch", sf=0.01, seed=0, revisions=True)`` (defaults: ``sf=0.1``,
``seed=0``, ``revisions=True``); ``revisions=False`` gives the unrevised data (the seed is then
unused). Rows are sorted by their keys.

Tables (rows at sf 0.01 unrevised → revised with seed 0): region 5, nation 25, supplier 100,
customer 1,500, part 2,000, partsupp 8,000, orders 15,000 → 5,156, lineitem 60,175 → 19,772.
At sf 0.1: orders 150,000 → 51,005, lineitem 600,572 → 194,729 (the other tables × 10 but region
and nation). The revisions keep about a third of the orders (a quarter, plus the exempt ones of
(c)): sf 1 has 1.5·10⁶ orders and about 6·10⁶ line items before, about 2·10⁶ after; sf 2 about
4·10⁶ revised line items.

Schema (written here, not inferred; every domain is the TPC-H specification's, §4.2.3):

* ``region(r_regionkey; r_name)``, ``nation(n_nationkey; n_regionkey→region; n_name)`` — public:
  the 5 regions and 25 nations of the specification.
* ``supplier(s_suppkey; s_nationkey→nation; s_acctbal)`` and ``customer(c_custkey;
  c_nationkey→nation; c_mktsegment, c_acctbal)`` — public (account balances on the specification's
  range [−999.99, 9999.99]).
* ``part(p_partkey; p_mfgr, p_brand, p_type, p_size, p_container, p_retailprice, p_green)`` —
  public. The 150 types, 25 brands and 40 containers are the specification's word lists;
  ``p_retailprice`` lies in [900, 2100] by its formula. ``p_green`` (boolean) replaces the
  free-text ``p_name``: it is whether the name contains the colour word ``green``, the one fact
  about the name that the eight queries use (Q9).
* ``partsupp(ps_partkey→part, ps_suppkey→supplier; ps_availqty, ps_supplycost)`` — public.
* ``orders(o_orderkey; o_custkey→customer; o_orderstatus, o_year, o_month, o_day,
  o_orderpriority)`` — private, **the protected entity**. ``o_orderdate`` is encoded as year
  (1992–1998, 7 values), month (12) and day (31) as in PrivLava §7.1; the query layer rebuilds it
  as ``make_date(o_year, o_month, 1) + (o_day − 1)`` (a synthetic 31 February rolls over into
  March).
* ``lineitem(l_orderkey→orders, l_linenumber; (l_partkey, l_suppkey)→partsupp; l_quantity,
  l_discount, l_shipdelta, l_commitdelta, l_receiptdelta, l_shipinstruct, l_shipmode)`` —
  private, depends on ``orders``; primary key ``(l_orderkey, l_linenumber)``; the FK to
  ``partsupp`` is **composite**. Encodings (PrivLava §7.1), each an integer with one code per
  value: ``l_quantity`` on [1, 50] unrevised or [1, 100] revised (the revised quantity is at most
  50 · 1 · 2, see (a); kept whole rather than split into tens and units, so every query threshold
  is exact); ``l_discount`` = 100 · L_DISCOUNT on [0, 10]; ``l_shipdelta`` = L_SHIPDATE −
  O_ORDERDATE on [1, 121]; ``l_commitdelta`` = L_COMMITDATE − O_ORDERDATE − 30 on [0, 60];
  ``l_receiptdelta`` = L_RECEIPTDATE − L_SHIPDATE on [1, 30] (the ranges of §4.2.3). The query
  layer (``relviz.evaluate.tpch_queries``) rebuilds L_SHIPDATE, L_COMMITDATE, L_RECEIPTDATE from
  these and the order date, and L_EXTENDEDPRICE = L_QUANTITY · P_RETAILPRICE (the specification's
  definition, kept by revision (a)), so the queries run unchanged on real and synthetic databases.

Left out (not used by Q4, Q5, Q7, Q9, Q12, Q14, Q17, Q19, or derived from what is kept): names,
addresses, phones and comments; ``p_name`` (but ``p_green``); ``o_totalprice``, ``o_clerk``,
``o_shippriority`` (always 0); ``l_extendedprice`` (derived), ``l_tax``, ``l_returnflag`` and
``l_linestatus``. :func:`raw_tables` gives the generator's full unrevised tables (free text
dropped) for checks.

Privacy unit: the **order** (entity table ``orders``): a neighbouring database removes one order
and its line items. All other tables are public (the papers' setting). The only FK with a private
parent is ``lineitem.l_orderkey → orders``; its cap is **τ = 7 line items per order**, from public
reasoning: the specification generates 1 to 7 line items per order (§4.2.3), and the revisions
only remove line items (never add any), so the cap never binds. ``orders → customer`` and
``lineitem → partsupp`` point at public tables and need no cap.

Correlation revisions (``revisions=True``; PrivLava §7.1, PrivPetal), applied in this order with
four independent numpy generators spawned from ``numpy.random.SeedSequence(seed)``:

(a) every part type (the 150 values of ``p_type``, drawn in sorted order) gets a weight uniform
    in [0.2, 1] and every brand (25, sorted) a weight uniform in [0.2, 2]; each line item's
    quantity becomes ``max(1, ⌊q · w_type · w_brand + ½⌋)`` (rounded half up) and
    L_EXTENDEDPRICE = L_QUANTITY · P_RETAILPRICE is recomputed (implicitly: it is derived).
(b) for every order year y (in increasing order): a random 15 % of all customers
    (``round(0.15 · |customer|)``, without replacement) is the year's heavy set; a random 40 % of
    the year's orders (``round(0.4 · n_y)``) get a customer drawn uniformly from the heavy set,
    the other orders one drawn uniformly from the other 85 %.
(c) for every year y, each order of year y is dropped with probability 0.75 unless it has exactly
    y − 1992 line items (no 1992 order is exempt); a dropped order's line items are dropped too.
(d) PrivPetal's fourth revision: every remaining line item's ship mode is redrawn from a
    distribution that depends on its order's priority, ∝ the row of :data:`SHIPMODE_WEIGHTS`
    (columns AIR, FOB, MAIL, RAIL, REG AIR, SHIP, TRUCK; each row sums to 20):

    ==================  ===  ===  ====  ====  =======  ====  =====
    priority            AIR  FOB  MAIL  RAIL  REG AIR  SHIP  TRUCK
    ==================  ===  ===  ====  ====  =======  ====  =====
    1-URGENT              8    1     1     1        6     1      2
    2-HIGH                6    1     2     1        6     1      3
    3-MEDIUM              3    2     3     3        3     2      4
    4-NOT SPECIFIED       3    3     3     3        3     3      2
    5-LOW                 1    1     4     4        1     6      3
    ==================  ===  ===  ====  ====  =======  ====  =====

    Urgent orders fly, low-priority ones go by ship, rail or mail (unrevised, the generator draws
    the mode uniformly, independently of the priority).

The weights, heavy customer sets and counts are recorded (:func:`revision_log`).

Cache: generated data are kept as Parquet under ``$RELVIZ_CACHE_DIR/tpch`` (default
``$XDG_CACHE_HOME/relviz/tpch``, i.e. ``~/.cache/relviz/tpch``; or the ``cache_dir`` argument):
the generator's output in ``raw-sf{sf}/`` (shared by all seeds) and the loaded tables in
``sf{sf}-seed{seed}-rev1/`` (``sf{sf}-rev0/`` unrevised). A cache hit reads Parquet only.
Measured on the 2-core development machine: generating and revising take about 4 s at sf 0.01
and 11 s at sf 0.1 (the generator's own output is then cached, so another seed takes under 2 s);
a cache hit reads the tables in under 0.1 s (``load`` then validates: 0.3 s at sf 0.01). At
sf 2: 26 s for the generator and 42 s to encode, revise and write (1,022,383 orders and 3,905,479
line items after the revisions), about 7 GB of memory at the peak; the cache holds 707 MB of
generator output and 88 MB of tables, and a hit takes 0.5 s.

Orphans and nulls: none (the generator's keys are complete; revisions keep them so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relviz.cache import cache_folder
from relviz.database import read_parquet_frame
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

__all__ = [
    "schema", "ORPHANS", "INFO", "DEFAULT_SF", "ORDER_CAP", "SHIPMODE_WEIGHTS", "raw_tables",
    "revision_log", "tables", "cache_root", "REGIONS", "NATIONS", "SEGMENTS", "PRIORITIES",
    "SHIPMODES", "SHIPINSTRUCTS", "TYPES", "BRANDS", "CONTAINERS", "MFGRS", "ORDER_STATUS",
    "FK_ORDERS", "FK_PARTSUPP",
]

DEFAULT_SF = 0.1
#: Public cap τ on line items per order (TPC-H §4.2.3: 1 to 7; the revisions add none).
ORDER_CAP = 7
GENERATOR_VERSION = "4.0.0"

# -- the specification's public value lists (TPC-H §4.2.2–4.2.3) ----------------------------------
REGIONS: tuple[str, ...] = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
NATIONS: tuple[tuple[str, int], ...] = (
    ("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4), ("ETHIOPIA", 0),
    ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2), ("IRAN", 4), ("IRAQ", 4),
    ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0), ("MOZAMBIQUE", 0), ("PERU", 1),
    ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4), ("VIETNAM", 2), ("RUSSIA", 3),
    ("UNITED KINGDOM", 3), ("UNITED STATES", 1),
)
SEGMENTS: tuple[str, ...] = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
PRIORITIES: tuple[str, ...] = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
SHIPMODES: tuple[str, ...] = ("AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK")
SHIPINSTRUCTS: tuple[str, ...] = ("COLLECT COD", "DELIVER IN PERSON", "NONE", "TAKE BACK RETURN")
ORDER_STATUS: tuple[str, ...] = ("F", "O", "P")
MFGRS: tuple[str, ...] = tuple(f"Manufacturer#{m}" for m in range(1, 6))
BRANDS: tuple[str, ...] = tuple(f"Brand#{m}{n}" for m in range(1, 6) for n in range(1, 6))
TYPES: tuple[str, ...] = tuple(sorted(
    f"{a} {b} {c}"
    for a in ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
    for b in ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
    for c in ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER")))
CONTAINERS: tuple[str, ...] = tuple(sorted(
    f"{a} {b}" for a in ("SM", "LG", "MED", "JUMBO", "WRAP")
    for b in ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM")))

#: Revision (d): ship-mode weights per order priority (columns in :data:`SHIPMODES` order).
SHIPMODE_WEIGHTS: dict[str, tuple[int, ...]] = {
    "1-URGENT": (8, 1, 1, 1, 6, 1, 2),
    "2-HIGH": (6, 1, 2, 1, 6, 1, 3),
    "3-MEDIUM": (3, 2, 3, 3, 3, 2, 4),
    "4-NOT SPECIFIED": (3, 3, 3, 3, 3, 3, 2),
    "5-LOW": (1, 1, 4, 4, 1, 6, 3),
}

FK_ORDERS = "lineitem.l_orderkey->orders"
FK_PARTSUPP = "lineitem.l_partkey+l_suppkey->partsupp"

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
_ACCTBAL = dict(lower=-999.99, upper=9999.99, bins=11)


# -- cache and generator --------------------------------------------------------------------------

def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Folder of the TPC-H cache: ``cache_dir``, else ``$RELVIZ_CACHE_DIR/tpch``, else
    ``$XDG_CACHE_HOME/relviz/tpch`` (``~/.cache/relviz/tpch``)."""
    if cache_dir is not None:
        return Path(cache_dir)
    return cache_folder("tpch")


def _sf_label(sf: float) -> str:
    if not (isinstance(sf, (int, float)) and sf > 0):
        raise ValueError(f"sf must be a positive number (got {sf!r})")
    return f"{float(sf):g}"


def _generator() -> str:
    """Path of the ``tpchgen-cli`` executable (this interpreter's scripts folder first)."""
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        exe = Path(folder) / "tpchgen-cli"
        if exe.is_file():
            return str(exe)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("the TPC-H generator tpchgen-cli is not installed: "
                           f"pip install tpchgen-cli=={GENERATOR_VERSION}")
    return found


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished temporary folder into place (a concurrent writer may have won; an
    incomplete folder left by hand is replaced)."""
    if final.is_dir() and not all((final / f"{t}.parquet").is_file() for t in TABLES):
        shutil.rmtree(final, ignore_errors=True)
    try:
        tmp.rename(final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _raw_dir(sf: float, cache_dir: str | os.PathLike | None) -> Path:
    """The generator's Parquet files for ``sf`` (generated on a miss)."""
    root = cache_root(cache_dir)
    final = root / f"raw-sf{_sf_label(sf)}"
    if all((final / f"{t}.parquet").is_file() for t in TABLES):
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".raw-sf{_sf_label(sf)}-", dir=root))
    try:
        threads = max(1, min(os.cpu_count() or 1, 8))
        subprocess.run([_generator(), "parquet", "-s", _sf_label(sf), "-o", str(tmp),
                        "-n", str(threads), "-q"], check=True, capture_output=True, text=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _publish(tmp, final)
    return final


# Free-text columns the loader never needs.
_TEXT = ("comment", "address", "phone", "clerk")


def raw_tables(sf: float = DEFAULT_SF, *, cache_dir: str | os.PathLike | None = None,
               columns: dict[str, list[str]] | None = None) -> dict[str, pd.DataFrame]:
    """The generator's unrevised TPC-H tables (TPC-H column names; free text dropped; decimals as
    floats, dates as datetimes), sorted by their keys. For checks and the curator, not the loader.

    Args:
        sf: Scale factor.
        cache_dir: Cache folder (see :func:`cache_root`).
        columns: Optional ``{table: [columns]}`` to read only some columns of some tables.
    """
    import duckdb

    folder = _raw_dir(sf, cache_dir)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    out = {}
    keys = {"lineitem": "l_orderkey, l_linenumber", "partsupp": "ps_partkey, ps_suppkey"}
    for t in TABLES:
        path = str(folder / f"{t}.parquet").replace("'", "''")
        desc = con.sql(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
        wanted = (columns or {}).get(t)
        cols = []
        for name, typ, *_ in desc:
            if wanted is not None and name not in wanted:
                continue
            if wanted is None and any(name.endswith(s) for s in _TEXT):
                continue
            cols.append(f"CAST({name} AS DOUBLE) AS {name}" if typ.startswith("DECIMAL") else name)
        order = keys.get(t, desc[0][0])
        out[t] = con.sql(f"SELECT {', '.join(cols)} FROM read_parquet('{path}') "
                         f"ORDER BY {order}").df()
    con.close()
    return out


# -- encoding and revisions -----------------------------------------------------------------------

_ENCODE_SQL = {
    "region": "SELECT r_regionkey, r_name FROM {region} ORDER BY r_regionkey",
    "nation": "SELECT n_nationkey, n_regionkey, n_name FROM {nation} ORDER BY n_nationkey",
    "supplier": "SELECT s_suppkey, s_nationkey, CAST(s_acctbal AS DOUBLE) AS s_acctbal "
                "FROM {supplier} ORDER BY s_suppkey",
    "customer": "SELECT c_custkey, c_nationkey, c_mktsegment, CAST(c_acctbal AS DOUBLE) AS c_acctbal "
                "FROM {customer} ORDER BY c_custkey",
    "part": "SELECT p_partkey, p_mfgr, p_brand, p_type, CAST(p_size AS BIGINT) AS p_size, p_container, "
            "CAST(p_retailprice AS DOUBLE) AS p_retailprice, contains(p_name, 'green') AS p_green "
            "FROM {part} ORDER BY p_partkey",
    "partsupp": "SELECT ps_partkey, ps_suppkey, CAST(ps_availqty AS BIGINT) AS ps_availqty, "
                "CAST(ps_supplycost AS DOUBLE) AS ps_supplycost FROM {partsupp} "
                "ORDER BY ps_partkey, ps_suppkey",
    "orders": "SELECT o_orderkey, o_custkey, o_orderstatus, CAST(year(o_orderdate) AS BIGINT) AS o_year, "
              "CAST(month(o_orderdate) AS BIGINT) AS o_month, CAST(day(o_orderdate) AS BIGINT) AS o_day, "
              "o_orderpriority FROM {orders} ORDER BY o_orderkey",
    "lineitem": "SELECT l_orderkey, CAST(l_linenumber AS BIGINT) AS l_linenumber, l_partkey, l_suppkey, "
                "CAST(round(l_quantity) AS BIGINT) AS l_quantity, "
                "CAST(round(l_discount * 100) AS BIGINT) AS l_discount, "
                "CAST(l_shipdate - o_orderdate AS BIGINT) AS l_shipdelta, "
                "CAST(l_commitdate - o_orderdate - 30 AS BIGINT) AS l_commitdelta, "
                "CAST(l_receiptdate - l_shipdate AS BIGINT) AS l_receiptdelta, "
                "l_shipinstruct, l_shipmode "
                "FROM {lineitem} JOIN {orders} ON l_orderkey = o_orderkey "
                "ORDER BY l_orderkey, l_linenumber",
}


def _encoded(folder: Path) -> dict[str, pd.DataFrame]:
    """The loader's (unrevised) tables, encoded, from the generator's Parquet files."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    src = {t: "read_parquet('{}')".format(str(folder / f"{t}.parquet").replace("'", "''"))
           for t in TABLES}
    out = {t: con.sql(_ENCODE_SQL[t].format(**src)).df() for t in TABLES}
    con.close()
    return out


def _encode_to_parquet(folder: Path, out: Path, *, memory_limit: str = "2GB") -> None:
    """Write the loader's unrevised tables (:data:`_ENCODE_SQL`) from the generator's Parquet
    files in ``folder`` to ``out/<table>.parquet`` inside DuckDB, out of core: the line-item
    join and sort spill to ``out/.spill`` past ``memory_limit``, and no table passes through
    pandas (TPC-H sf 10's 6·10⁷ line items would take about 8 GB there; issue 15, item 5)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET preserve_insertion_order = true")
        spill = str(out / ".spill").replace("'", "''")
        con.execute(f"SET temp_directory = '{spill}'")
        src = {t: "read_parquet('{}')".format(str(folder / f"{t}.parquet").replace("'", "''"))
               for t in TABLES}
        for t in TABLES:
            target = str(out / f"{t}.parquet").replace("'", "''")
            con.execute(f"COPY ({_ENCODE_SQL[t].format(**src)}) TO '{target}' (FORMAT parquet)")
    finally:
        con.close()
        shutil.rmtree(out / ".spill", ignore_errors=True)


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5).astype(np.int64)


def _revise(frames: dict[str, pd.DataFrame], seed: int) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Revisions (a)–(d) of the module docstring on encoded frames (new frames returned)."""
    rng_a, rng_b, rng_c, rng_d = (np.random.default_rng(s)
                                  for s in np.random.SeedSequence(seed).spawn(4))
    part, customer = frames["part"], frames["customer"]
    orders, lineitem = frames["orders"].copy(), frames["lineitem"].copy()
    log: dict[str, Any] = {"seed": int(seed)}

    # (a) quantity ∝ type weight · brand weight
    type_w = rng_a.uniform(0.2, 1.0, len(TYPES))
    brand_w = rng_a.uniform(0.2, 2.0, len(BRANDS))
    t_idx = pd.Index(TYPES).get_indexer(part["p_type"])
    b_idx = pd.Index(BRANDS).get_indexer(part["p_brand"])
    if (t_idx < 0).any() or (b_idx < 0).any():
        raise ValueError("tpch: part type or brand outside the specification's lists")
    part_w = type_w[t_idx] * brand_w[b_idx]
    pos = pd.Index(part["p_partkey"]).get_indexer(lineitem["l_partkey"])
    q = lineitem["l_quantity"].to_numpy(dtype=float)
    lineitem["l_quantity"] = np.maximum(1, _round_half_up(q * part_w[pos]))
    log["type_weights"] = dict(zip(TYPES, map(float, type_w)))
    log["brand_weights"] = dict(zip(BRANDS, map(float, brand_w)))

    # (b) per year: 40 % of the orders to a random 15 % of the customers
    years = orders["o_year"].to_numpy()
    custkeys = customer["c_custkey"].to_numpy()
    n_heavy = int(_round_half_up(np.array(0.15 * len(custkeys))))
    new_cust = orders["o_custkey"].to_numpy().copy()
    log["heavy_customers"] = {}
    log["orders_per_year"] = {}
    for y in np.unique(years):
        idx = np.flatnonzero(years == y)
        heavy_mask = np.zeros(len(custkeys), dtype=bool)
        heavy_mask[rng_b.choice(len(custkeys), size=n_heavy, replace=False)] = True
        heavy, light = custkeys[heavy_mask], custkeys[~heavy_mask]
        k = int(_round_half_up(np.array(0.4 * len(idx))))
        perm = rng_b.permutation(idx)
        new_cust[perm[:k]] = heavy[rng_b.integers(0, len(heavy), size=k)]
        new_cust[perm[k:]] = light[rng_b.integers(0, len(light), size=len(idx) - k)]
        log["heavy_customers"][int(y)] = [int(c) for c in heavy]
        log["orders_per_year"][int(y)] = {"orders": int(len(idx)), "to_heavy": k}
    orders["o_custkey"] = new_cust

    # (c) per year: keep orders with exactly y − 1992 line items; the others with probability 1/4
    o_pos = pd.Index(orders["o_orderkey"]).get_indexer(lineitem["l_orderkey"])
    n_lines = np.bincount(o_pos, minlength=len(orders))
    keep = np.zeros(len(orders), dtype=bool)
    for y in np.unique(years):
        idx = np.flatnonzero(years == y)
        keep[idx] = (n_lines[idx] == y - 1992) | (rng_c.random(len(idx)) >= 0.75)
        log["orders_per_year"][int(y)].update(kept=int(keep[idx].sum()),
                                              exempt=int((n_lines[idx] == y - 1992).sum()))
    orders = orders[keep].reset_index(drop=True)
    lineitem = lineitem[keep[o_pos]].reset_index(drop=True)

    # (d) ship mode | order priority
    o_pos = pd.Index(orders["o_orderkey"]).get_indexer(lineitem["l_orderkey"])
    prio = pd.Index(PRIORITIES).get_indexer(orders["o_orderpriority"])[o_pos]
    mode = np.empty(len(lineitem), dtype=np.int64)
    for i, p in enumerate(PRIORITIES):
        rows = np.flatnonzero(prio == i)
        w = np.asarray(SHIPMODE_WEIGHTS[p], dtype=float)
        mode[rows] = rng_d.choice(len(SHIPMODES), size=len(rows), p=w / w.sum())
    if (prio < 0).any():
        raise ValueError("tpch: order priority outside the specification's list")
    lineitem["l_shipmode"] = pd.Series(np.asarray(SHIPMODES, dtype=object)[mode], dtype="str")
    log["shipmode_weights"] = {p: list(w) for p, w in SHIPMODE_WEIGHTS.items()}
    log["rows"] = {"orders": int(len(orders)), "lineitem": int(len(lineitem))}
    return {**frames, "orders": orders, "lineitem": lineitem}, log


def _table_dir(sf: float, seed: int, revisions: bool, cache_dir: str | os.PathLike | None) -> Path:
    name = f"sf{_sf_label(sf)}-seed{int(seed)}-rev1" if revisions else f"sf{_sf_label(sf)}-rev0"
    return cache_root(cache_dir) / name


def tables(sf: float = DEFAULT_SF, seed: int = 0, revisions: bool = True, *,
           cache_dir: str | os.PathLike | None = None) -> dict[str, pd.DataFrame]:
    """The loader's frames (encoded, revised when asked), from the cache or generated into it.

    Deterministic per ``(sf, seed, revisions)``; the seed is unused when ``revisions`` is false.
    """
    if int(seed) != seed:
        raise ValueError(f"seed must be an integer (got {seed!r})")
    folder = _table_dir(sf, seed, revisions, cache_dir)
    if not all((folder / f"{t}.parquet").is_file() for t in TABLES):
        raw = _raw_dir(sf, cache_dir)
        log: dict[str, Any] = {"revisions": bool(revisions), "sf": float(sf),
                               "generator": f"tpchgen-cli {GENERATOR_VERSION}"}
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            if revisions:
                frames, rev = _revise(_encoded(raw), int(seed))
                log.update(rev, revisions=True)
                for t, df in frames.items():
                    df.to_parquet(tmp / f"{t}.parquet", index=False)
            else:
                _encode_to_parquet(raw, tmp)
            (tmp / "revisions.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _publish(tmp, folder)
    out = {t: read_parquet_frame(folder / f"{t}.parquet") for t in TABLES}
    params = {"sf": float(sf), "seed": int(seed) if revisions else None, "revisions": bool(revisions)}
    for df in out.values():
        df.attrs["tpch"] = dict(params)
    return out


def revision_log(sf: float = DEFAULT_SF, seed: int = 0, revisions: bool = True, *,
                 cache_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """What the revisions drew: type and brand weights, each year's heavy customers (custkeys),
    orders per year (total, given to the heavy set, exempt from the drop, kept), the ship-mode
    weights and the row counts (generates the data on a cache miss)."""
    tables(sf, seed, revisions, cache_dir=cache_dir)
    text = (_table_dir(sf, seed, revisions, cache_dir) / "revisions.json").read_text(encoding="utf-8")
    log = json.loads(text)
    for key in ("heavy_customers", "orders_per_year"):
        if key in log:
            log[key] = {int(y): v for y, v in log[key].items()}
    return log


def _frames(sf: float = DEFAULT_SF, seed: int = 0, revisions: bool = True,
            cache_dir: str | os.PathLike | None = None) -> dict[str, pd.DataFrame]:
    return tables(sf, seed, revisions, cache_dir=cache_dir)


# -- schema -----------------------------------------------------------------------------------------

def schema(frames: dict[str, pd.DataFrame] | None = None, *,
           revisions: bool | None = None) -> Schema:
    """The written schema (nothing in it is read from the data's values).

    Args:
        frames: The frames of :func:`tables` (optional): when ``revisions`` is not given, it is
            the generation parameter that :func:`tables` records in ``frames["lineitem"].attrs``
            (a parameter, not a statistic of the data).
        revisions: Whether the data are revised: the quantity's public upper bound is 100 then,
            50 otherwise (default: from ``frames``, else ``True``).
    """
    if revisions is None:
        params = frames["lineitem"].attrs.get("tpch", {}) if frames and "lineitem" in frames else {}
        revisions = bool(params.get("revisions", True))
    q_max = 100 if revisions else 50
    region = Table("region", ("r_regionkey",), (Attribute.categorical("r_name", REGIONS),),
                   public=True, description="the 5 TPC-H regions (public)")
    nation = Table("nation", ("n_nationkey",), (
        Attribute.categorical("n_name", [n for n, _ in NATIONS]),
    ), public=True, description="the 25 TPC-H nations (public)")
    supplier = Table("supplier", ("s_suppkey",), (
        Attribute.numeric("s_acctbal", **_ACCTBAL, description="account balance"),
    ), public=True, description="suppliers (public)")
    customer = Table("customer", ("c_custkey",), (
        Attribute.categorical("c_mktsegment", SEGMENTS),
        Attribute.numeric("c_acctbal", **_ACCTBAL, description="account balance"),
    ), public=True, description="customers (public)")
    part = Table("part", ("p_partkey",), (
        Attribute.categorical("p_mfgr", MFGRS),
        Attribute.categorical("p_brand", BRANDS),
        Attribute.categorical("p_type", TYPES),
        Attribute.numeric("p_size", 1, 50, bins=50, integer=True),
        Attribute.categorical("p_container", CONTAINERS),
        Attribute.numeric("p_retailprice", 900, 2100, bins=12),
        Attribute.categorical("p_green", [False, True], description="p_name contains 'green'"),
    ), public=True, description="parts catalogue (public)")
    partsupp = Table("partsupp", ("ps_partkey", "ps_suppkey"), (
        Attribute.numeric("ps_availqty", 1, 9999, bins=10, integer=True),
        Attribute.numeric("ps_supplycost", 1, 1000, bins=10),
    ), public=True, description="which supplier sells which part, at what cost (public)")
    orders = Table("orders", ("o_orderkey",), (
        Attribute.categorical("o_orderstatus", ORDER_STATUS),
        Attribute.numeric("o_year", 1992, 1998, bins=7, integer=True, description="order year"),
        Attribute.numeric("o_month", 1, 12, bins=12, integer=True, description="order month"),
        Attribute.numeric("o_day", 1, 31, bins=31, integer=True, description="order day of month"),
        Attribute.categorical("o_orderpriority", PRIORITIES),
    ), description="orders (private: the protected entity)")
    lineitem = Table("lineitem", ("l_orderkey", "l_linenumber"), (
        Attribute.numeric("l_quantity", 1, q_max, bins=q_max, integer=True),
        Attribute.numeric("l_discount", 0, 10, bins=11, integer=True, description="discount × 100"),
        Attribute.numeric("l_shipdelta", 1, 121, bins=121, integer=True,
                          description="ship date − order date (days)"),
        Attribute.numeric("l_commitdelta", 0, 60, bins=61, integer=True,
                          description="commit date − order date − 30 (days)"),
        Attribute.numeric("l_receiptdelta", 1, 30, bins=30, integer=True,
                          description="receipt date − ship date (days)"),
        Attribute.categorical("l_shipinstruct", SHIPINSTRUCTS),
        Attribute.categorical("l_shipmode", SHIPMODES),
    ), description="line items of the orders (private)")
    fks = (
        ForeignKey("nation", ("n_regionkey",), "region", ("r_regionkey",)),
        ForeignKey("supplier", ("s_nationkey",), "nation", ("n_nationkey",)),
        ForeignKey("customer", ("c_nationkey",), "nation", ("n_nationkey",)),
        ForeignKey("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
        ForeignKey("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
        ForeignKey("orders", ("o_custkey",), "customer", ("c_custkey",)),
        ForeignKey("lineitem", ("l_orderkey",), "orders", ("o_orderkey",)),
        ForeignKey("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")),
    )
    assert fks[-2].name == FK_ORDERS and fks[-1].name == FK_PARTSUPP
    unit = PrivacyUnit(
        entity="orders", caps={FK_ORDERS: ORDER_CAP},
        rationale="an order and its line items are protected; regions, nations, suppliers, "
                  "customers, parts and partsupp are public (PrivLava's TPC-H setting). "
                  f"τ = {ORDER_CAP} line items per order: the TPC-H specification (§4.2.3) "
                  "generates 1 to 7 line items per order and the correlation revisions only "
                  "remove line items, so the cap is public and never binds")
    return Schema((region, nation, supplier, customer, part, partsupp, orders, lineitem), fks, unit,
                  name="tpch",
                  description="TPC-H" + (" with the PrivLava/PrivPetal correlation revisions"
                                         if revisions else " (unrevised)"))


ORPHANS = "drop"
"""How :func:`relviz.datasets.load` repairs orphan foreign keys (there are none)."""

INFO = dict(
    title="TPC-H (8 tables) with the PrivLava/PrivPetal correlation revisions",
    source="generated offline by tpchgen-cli (a Rust reimplementation of the TPC's dbgen, "
           "TPC-H specification revision 3); revisions of PrivLava (SIGMOD 2023 §7.1) and PrivPetal",
    licence="generated data; generator Apache-2.0 (tpchgen-rs); TPC-H is a trademark of the TPC",
    repairs=("no orphans: nothing repaired",),
)
