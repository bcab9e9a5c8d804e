"""Column shapes, column pair trends and marginal TVDs, real vs synthetic.

* **Column Shapes** (docs/evaluation.md §1): KSComplement (numeric/datetime; raw values, nulls
  dropped) and TVComplement (categorical; nulls as a category), per attribute of every table.
* **Column Pair Trends** (docs/evaluation.md §2): CorrelationSimilarity (both numeric:
  ``1 − |r_real − r_syn| / 2``, Pearson) or ContingencySimilarity (otherwise: ``1 − TVD`` of the 2-D contingency table,
  numerics in 10 equal-width bins over the real range), for every pair of attributes of a table.
  relviz's headline average counts all pairs; the SDMetrics 0.32 average (only strongly associated
  real pairs, bins over each dataset's own range) is computed beside it.
* **Fidelity** (docs/evaluation.md §7.3; Chen et al., "Benchmarking differentially private tabular
  data synthesis", §8.3): 1-way TVD per attribute and mean 2-way TVD per table on the public-domain
  codes (``relviz.encoding``) — what the benchmark calls "fidelity error" (lower is better).
* 1-way frequency frames for bar plots (labels from ``Attribute.labels()``).

Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import (
    MAX_DECIMALS,
    PAIR_COLUMNS,
    REAL,
    SYNTHETIC,
    PairColumn,
    PropertyResult,
    codes,
    contingency_tvd,
    finish_details,
    ks_statistic,
    numeric_values,
    pair_score,
    prepare_columns,
    property_result,
)
from relviz.marginals import distribution_l1, pair_cells

__all__ = [
    "column_pair_trends",
    "column_shapes",
    "contingency_similarity",
    "correlation_similarity",
    "fidelity_summary",
    "frequencies",
    "ks_complement",
    "tv_complement",
    "tvd_one_way",
    "tvd_two_way",
]


def _tables_with_attributes(db: Database, tables: Sequence[str] | None) -> list[str]:
    names = db.schema.table_names if tables is None else tables
    return [t for t in names if db.schema.table(t).attributes]


# ------------------------------------------------------------------------------------------------
# Single-column and pair metrics (SDMetrics definitions)
# ------------------------------------------------------------------------------------------------

def ks_complement(real: pd.Series | np.ndarray, synthetic: pd.Series | np.ndarray) -> float:
    """KSComplement = 1 − D, D = the ``scipy.stats.ks_2samp`` statistic (docs/evaluation.md §1).

    As SDMetrics 0.32: nulls dropped, datetimes compared as int64 nanoseconds, values rounded to
    14 decimals first.

    Args:
        real: ``(n_real,)`` numeric or datetime values.
        synthetic: ``(n_syn,)`` values of the same kind.

    Returns:
        Score in [0, 1]; NaN when either side has no non-null value.
    """
    r = numeric_values(pd.Series(real))
    s = numeric_values(pd.Series(synthetic))
    r, s = np.round(r[~np.isnan(r)], MAX_DECIMALS), np.round(s[~np.isnan(s)], MAX_DECIMALS)
    if r.size == 0 or s.size == 0:
        return math.nan
    return 1.0 - ks_statistic(r, s)


def tv_complement(real: pd.Series | np.ndarray, synthetic: pd.Series | np.ndarray, *,
                  nulls: str = "category") -> float:
    """TVComplement = 1 − TVD of two categorical columns (docs/evaluation.md §1).

    Args:
        real: ``(n_real,)`` category values.
        synthetic: ``(n_syn,)`` category values.
        nulls: ``"category"`` (relviz, docs/evaluation.md §1: nulls are a category; TVD over the union of
            observed categories, ``½ Σ_c |p_real(c) − p_syn(c)|``) or ``"sdmetrics"`` (SDMetrics
            0.32 ``TVComplement``: nulls dropped, and a synthetic-only category gets a real count of
            1e-6 — ``sdmetrics.utils.get_frequencies`` — reproduced to floating-point rounding).

    Returns:
        Score in [0, 1].

    Raises:
        ValueError: for an unknown ``nulls``, or with ``nulls="sdmetrics"`` when a side has no
            non-null value (SDMetrics raises ``IncomputableMetricError`` there).
    """
    r, s = pd.Series(real), pd.Series(synthetic)
    if nulls == "category":
        col = PairColumn.from_series("", False, r, s)
        pr = np.bincount(col.real, minlength=col.n_codes) / max(col.real.size, 1)
        ps = np.bincount(col.synthetic, minlength=col.n_codes) / max(col.synthetic.size, 1)
        if col.real.size == 0 or col.synthetic.size == 0:
            return math.nan
        return 1.0 - 0.5 * float(np.abs(pr - ps).sum())
    if nulls != "sdmetrics":
        raise ValueError("nulls must be 'category' or 'sdmetrics'")
    r, s = r.dropna(), s.dropna()
    if len(r) == 0 or len(s) == 0:
        raise ValueError("The TVComplement metric must have 1 or more non-null values.")
    # sdmetrics.utils.get_frequencies, vectorised: same keys, same regularisation, same order.
    real_c, syn_c = Counter(r.tolist()), Counter(s.tolist())
    for value in syn_c:
        if value not in real_c:
            real_c[value] += 1e-6
    keys = list(real_c)
    f_obs = np.array([syn_c[k] for k in keys], dtype=np.float64) / sum(syn_c.values())
    f_exp = np.array([real_c[k] for k in keys], dtype=np.float64) / sum(real_c.values())
    return 1.0 - 0.5 * float(np.abs(f_obs - f_exp).sum())


def correlation_similarity(real: pd.DataFrame, synthetic: pd.DataFrame) -> float:
    """CorrelationSimilarity of two numeric/datetime columns: ``1 − |r_real − r_syn| / 2``.

    Args:
        real: Two columns (Pearson on the rows where both are non-null).
        synthetic: The same two columns.

    Returns:
        Score in [0, 1] (NaN when a correlation is undefined).

    Raises:
        ValueError: on a constant column (SDMetrics' ``ConstantInputError``) or fewer than two
            complete rows.
    """
    a, b = real.columns[:2]
    c1 = PairColumn.from_series(str(a), True, real[a], synthetic[a])
    c2 = PairColumn.from_series(str(b), True, real[b], synthetic[b])
    out = pair_score(c1, c2)
    if out["Error"]:
        raise ValueError(out["Error"])
    return float(out["Score"])


def contingency_similarity(real: pd.DataFrame, synthetic: pd.DataFrame,
                           continuous_columns: Sequence[str] = (), *, own_range: bool = False) -> float:
    """ContingencySimilarity of two columns: ``1 − TVD`` of their 2-D contingency tables.

    Args:
        real: Two columns (nulls are a category).
        synthetic: The same two columns.
        continuous_columns: Columns to discretise into 10 equal-width bins, over the real range
            (default; SDMetrics' ``discretize_column``) or, with ``own_range``, over each dataset's
            own range (SDMetrics' QualityReport).
        own_range: See above.

    Returns:
        Score in [0, 1].
    """
    cols = []
    for c in real.columns[:2]:
        cont = c in continuous_columns
        cols.append(PairColumn.from_series(str(c), cont, real[c], synthetic[c]))
    mode = "own_range" if own_range else "real_range"
    ra, sa, na = cols[0].discrete(mode)
    rb, sb, nb = cols[1].discrete(mode)
    return 1.0 - contingency_tvd(ra, rb, sa, sb, na, nb)


# ------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------

def column_shapes(real: Database, synthetic: Database, *, tables: Sequence[str] | None = None,
                  sdmetrics_compatible: bool = False) -> PropertyResult:
    """Column Shapes property (docs/evaluation.md §1): one score per attribute of every table.

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        tables: Tables to include (default all, as SDMetrics).
        sdmetrics_compatible: Make ``score`` SDMetrics' average (TVComplement with nulls dropped).

    Returns:
        :class:`PropertyResult` with details ``Table, Column, Metric, Score, SDMetrics Score``
        (+ ``Error``).
    """
    rows = []
    for t in _tables_with_attributes(real, tables):
        rdf, sdf = real[t], synthetic[t]
        for a in real.schema.table(t).attributes:
            row = {"Table": t, "Column": a.name, "Score": math.nan, "SDMetrics Score": math.nan,
                   "Error": None}
            try:
                if a.kind in ("numeric", "datetime"):
                    row["Metric"] = "KSComplement"
                    r = numeric_values(rdf[a.name], a.kind)
                    s = numeric_values(sdf[a.name], a.kind)
                    row["Score"] = row["SDMetrics Score"] = ks_complement(r, s)
                else:
                    row["Metric"] = "TVComplement"
                    row["Score"] = tv_complement(rdf[a.name], sdf[a.name])
                    row["SDMetrics Score"] = tv_complement(rdf[a.name], sdf[a.name], nulls="sdmetrics")
            except Exception as e:  # noqa: BLE001 - SDMetrics convention: record, do not raise
                row["Error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
    cols = ["Table", "Column", "Metric", "Score", "SDMetrics Score", "Error"]
    return property_result("Column Shapes", finish_details(pd.DataFrame(rows, columns=cols)),
                           sdmetrics_compatible)


def pair_trend_rows(columns: dict[str, PairColumn], pairs: Sequence[tuple[str, str]]) -> list[dict]:
    """Pair-score rows ``Column 1, Column 2, Metric, Score, …`` for the given column pairs."""
    out = []
    for a, b in pairs:
        out.append({"Column 1": a, "Column 2": b, **pair_score(columns[a], columns[b])})
    return out


def column_pair_trends(real: Database, synthetic: Database, *, tables: Sequence[str] | None = None,
                       sdmetrics_compatible: bool = False) -> PropertyResult:
    """Column Pair Trends property (docs/evaluation.md §2): every attribute pair of every table.

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        tables: Tables to include (default all).
        sdmetrics_compatible: Make ``score`` SDMetrics 0.32's QualityReport average (strongly
            associated real pairs only, own-range bins); relviz's default averages all pairs.

    Returns:
        :class:`PropertyResult` with details ``Table, Column 1, Column 2, Metric, Score,
        SDMetrics Score, Real Correlation, Synthetic Correlation, Real Association,
        Meets Threshold?`` (+ ``Error``).
    """
    rows = []
    for t in _tables_with_attributes(real, tables):
        attrs = real.schema.table(t).attributes
        cols = prepare_columns(attrs, real[t], synthetic[t])
        pairs = list(itertools.combinations([a.name for a in attrs], 2))
        rows += [{"Table": t, **r} for r in pair_trend_rows(cols, pairs)]
    frame = pd.DataFrame(rows, columns=["Table", "Column 1", "Column 2", *PAIR_COLUMNS])
    return property_result("Column Pair Trends", finish_details(frame), sdmetrics_compatible,
                           thresholded=True)


# ------------------------------------------------------------------------------------------------
# Fidelity on public-domain codes
# ------------------------------------------------------------------------------------------------

def _shares(c: np.ndarray, size: int) -> np.ndarray:
    n = c.size
    counts = np.bincount(c, minlength=size).astype(np.float64)
    return counts / n if n else np.full(size, np.nan)


def tvd_one_way(real: Database, synthetic: Database, *, tables: Sequence[str] | None = None) -> pd.DataFrame:
    """1-way TVD per attribute on public-domain codes: ``½ Σ_v |p_syn(v) − p_real(v)|``.

    Nulls are their own code (docs/evaluation.md §7.3). Lower is better.

    Returns:
        Frame ``Table, Attribute, TVD`` (NaN when a table is empty).
    """
    rows = []
    for t in _tables_with_attributes(real, tables):
        er, es = codes(real, t), codes(synthetic, t)
        for j, (a, size) in enumerate(zip(er.attributes, er.sizes)):
            tv = 0.5 * float(np.abs(_shares(er.codes[:, j], size) - _shares(es.codes[:, j], size)).sum())
            rows.append({"Table": t, "Attribute": a, "TVD": tv})
    return pd.DataFrame(rows, columns=["Table", "Attribute", "TVD"])


def tvd_two_way(real: Database, synthetic: Database, *, tables: Sequence[str] | None = None,
                dense_budget: int | None = None) -> pd.DataFrame:
    """2-way TVD for every attribute pair of every table, on public-domain codes.

    The mean per table is the benchmark's "fidelity error" (docs/evaluation.md §7.3;
    Chen et al., "Benchmarking differentially private tabular data synthesis", §8.3), on relviz's public bins
    rather than the benchmark's own discretisation. A pair's counts are dense while
    ``size_i · size_j`` fits :data:`relviz.marginals.DENSE_CELL_BUDGET` (or ``dense_budget``), else
    sparse group-by counts over the occupied cells (same value; docs/evaluation.md, "Memory").

    Returns:
        Frame ``Table, Column 1, Column 2, TVD`` (TVD in [0, 1]; NaN when a side has no rows).
    """
    rows = []
    for t in _tables_with_attributes(real, tables):
        er, es = codes(real, t), codes(synthetic, t)
        rc = [np.ascontiguousarray(er.codes[:, j], dtype=np.int64) for j in range(len(er.sizes))]
        sc = [np.ascontiguousarray(es.codes[:, j], dtype=np.int64) for j in range(len(es.sizes))]
        empty = not rc or rc[0].size == 0 or sc[0].size == 0
        for i, j in itertools.combinations(range(len(er.sizes)), 2):
            tv = math.nan
            if not empty:
                cr, cs, n_cells = pair_cells(rc[i], rc[j], sc[i], sc[j], er.sizes[i], er.sizes[j])
                tv = 0.5 * distribution_l1(cr, cs, n_cells, dense_budget=dense_budget)[0]
            rows.append({"Table": t, "Column 1": er.attributes[i], "Column 2": er.attributes[j], "TVD": tv})
    return pd.DataFrame(rows, columns=["Table", "Column 1", "Column 2", "TVD"])


def fidelity_summary(real: Database, synthetic: Database, *, tables: Sequence[str] | None = None,
                     one_way: pd.DataFrame | None = None, two_way: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per table: mean 1-way TVD, mean 2-way TVD ("fidelity error") and the worst pair.

    Args:
        real: Real database.
        synthetic: Synthetic database.
        tables: Tables (default: all with attributes).
        one_way: Precomputed :func:`tvd_one_way` frame (computed when ``None``).
        two_way: Precomputed :func:`tvd_two_way` frame.

    Returns:
        Frame ``Table, Attributes, Mean 1-way TVD, Mean 2-way TVD, Worst Pair, Worst Pair TVD``
        (no worst pair when every 2-way TVD is 0, e.g. a public table copied verbatim).
    """
    one_way = tvd_one_way(real, synthetic, tables=tables) if one_way is None else one_way
    two_way = tvd_two_way(real, synthetic, tables=tables) if two_way is None else two_way
    rows = []
    for t in _tables_with_attributes(real, tables):
        o = one_way[one_way["Table"] == t]
        w = two_way[two_way["Table"] == t]
        worst = w.loc[w["TVD"].idxmax()] if len(w) and w["TVD"].max() > 0 else None
        rows.append({"Table": t, "Attributes": len(o),
                     "Mean 1-way TVD": float(o["TVD"].mean()) if len(o) else math.nan,
                     "Mean 2-way TVD": float(w["TVD"].mean()) if len(w) else math.nan,
                     "Worst Pair": "" if worst is None else f"{worst['Column 1']} × {worst['Column 2']}",
                     "Worst Pair TVD": math.nan if worst is None else float(worst["TVD"])})
    return pd.DataFrame(rows, columns=["Table", "Attributes", "Mean 1-way TVD", "Mean 2-way TVD",
                                       "Worst Pair", "Worst Pair TVD"])


def frequencies(real: Database, synthetic: Database, table: str, attribute: str) -> pd.DataFrame:
    """1-way frequencies of one attribute on its public domain, real and synthetic (tidy).

    Returns:
        Frame ``Source, Code, Value, Count, Share`` with one row per (source, code) — every
        code of the public domain, zeros included, labels from ``Attribute.labels()``, the null
        code last when nullable; ``Real`` rows first.
    """
    attr = real.schema.table(table).attribute(attribute)
    labels = attr.labels()
    parts = []
    for source, db in ((REAL, real), (SYNTHETIC, synthetic)):
        c = codes(db, table).column(attribute)
        counts = np.bincount(c, minlength=attr.size)
        parts.append(pd.DataFrame({"Source": source, "Code": np.arange(attr.size), "Value": labels,
                                   "Count": counts, "Share": counts / max(int(counts.sum()), 1)}))
    return pd.concat(parts, ignore_index=True)
