"""Degree distributions per foreign key, real vs synthetic (docs/evaluation.md §3).

The degree of a parent row is the number of child rows whose FK points to it, 0 included; a
nullable FK counts its non-null links only. Every FK is its own edge, so a child with two FKs to
the same parent (``flights.origin`` and ``flights.dest`` → ``airports``) has two degree
distributions. **CardinalityShapeSimilarity** = 1 − D, D = two-sample Kolmogorov–Smirnov
statistic (``scipy.stats.ks_2samp``) between the real and synthetic degree samples, as SDMetrics'
``CardinalityShapeSimilarity``.

Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from relviz.database import Database
from relviz.evaluate._common import (
    REAL,
    SYNTHETIC,
    PropertyResult,
    as_fk,
    finish_details,
    parent_index,
    property_result,
)
from relviz.schema import ForeignKey

__all__ = [
    "DegreeComparison",
    "cardinality",
    "cardinality_shape_similarity",
    "compare_degrees",
    "degree_stats",
    "degree_similarity",
]

STAT_NAMES = ("Parents", "Children", "Max", "Mean", "p99", "Zero share")


def cardinality_shape_similarity(real_degrees: np.ndarray, synthetic_degrees: np.ndarray) -> float:
    """1 − KS statistic between two degree samples (SDMetrics' CardinalityShapeSimilarity).

    Args:
        real_degrees: ``(n_parent_real,)`` integer degrees.
        synthetic_degrees: ``(n_parent_syn,)`` integer degrees.

    Returns:
        Score in [0, 1]; 1.0 for identical distributions.

    Raises:
        ValueError: if either sample is empty (``ks_2samp``).
    """
    r, s = np.asarray(real_degrees), np.asarray(synthetic_degrees)
    if r.size == 0 or s.size == 0:  # scipy ≥ 1.15 returns NaN with a warning; say why instead
        raise ValueError("Data passed to ks_2samp must not be empty")
    return 1.0 - float(stats.ks_2samp(r, s, method="asymp").statistic)


def degree_stats(degrees: np.ndarray) -> dict[str, float]:
    """Summary of a degree sample: parents, children, max, mean, p99, share of zero-degree parents.

    Args:
        degrees: ``(n_parent,)`` integer degrees.

    Returns:
        ``{statistic: value}`` in :data:`STAT_NAMES` order (NaN for an empty sample).
    """
    d = np.asarray(degrees, dtype=np.float64)
    if d.size == 0:
        return {"Parents": 0.0, "Children": 0.0, "Max": math.nan, "Mean": math.nan, "p99": math.nan,
                "Zero share": math.nan}
    return {"Parents": float(d.size), "Children": float(d.sum()), "Max": float(d.max()),
            "Mean": float(d.mean()), "p99": float(np.percentile(d, 99)),
            "Zero share": float(np.mean(d == 0))}


@dataclass(frozen=True)
class DegreeComparison:
    """Real and synthetic degree samples of one FK, with their similarity.

    Attributes:
        fk: The foreign key (child → parent).
        real: ``(n_parent_real,)`` int64 degrees of the real parents (0 included).
        synthetic: ``(n_parent_syn,)`` int64 degrees of the synthetic parents.
        score: CardinalityShapeSimilarity (NaN when undefined; see ``error``).
        error: Why the score is undefined, else ``None``.
    """

    fk: ForeignKey
    real: np.ndarray
    synthetic: np.ndarray
    score: float
    error: str | None = None

    @property
    def label(self) -> str:
        """``child.col → parent``."""
        return self.fk.label()

    def stats(self) -> pd.DataFrame:
        """Frame ``Statistic, Real, Synthetic`` (parents, children, max, mean, p99, zero share)."""
        r, s = degree_stats(self.real), degree_stats(self.synthetic)
        return pd.DataFrame({"Statistic": list(STAT_NAMES), REAL: [r[k] for k in STAT_NAMES],
                             SYNTHETIC: [s[k] for k in STAT_NAMES]})

    def frame(self) -> pd.DataFrame:
        """Tidy degree histogram: ``Foreign Key, Source, Degree, Parents, Share``.

        One row per (source, observed degree), degrees ascending, ``Real`` rows first.
        """
        parts = []
        for source, d in ((REAL, self.real), (SYNTHETIC, self.synthetic)):
            values, counts = np.unique(np.asarray(d, dtype=np.int64), return_counts=True)
            parts.append(pd.DataFrame({"Foreign Key": self.fk.name, "Source": source, "Degree": values,
                                       "Parents": counts,
                                       "Share": counts / max(int(counts.sum()), 1)}))
        return pd.concat(parts, ignore_index=True)

    def binned_frame(self) -> pd.DataFrame:
        """Tidy histogram on doubling bins ``0, 1, 2–3, 4–7, …``: ``Source, Bin, Low, High, Parents, Share``.

        For heavy-tailed degrees (thousands of distinct values) where one bar per degree is
        unreadable; every bin of the common range appears for both sources (zeros included).
        """
        top = int(max(np.max(self.real, initial=0), np.max(self.synthetic, initial=0)))
        lows = [0, 1]
        while lows[-1] * 2 <= top:
            lows.append(lows[-1] * 2)
        lows_a = np.asarray(lows)
        highs = np.r_[lows_a[1:] - 1, max(top, lows_a[-1])]
        labels = [str(lo) if lo == hi else f"{lo}–{hi}" for lo, hi in zip(lows_a, highs)]
        parts = []
        for source, d in ((REAL, self.real), (SYNTHETIC, self.synthetic)):
            idx = np.searchsorted(lows_a, np.asarray(d, dtype=np.int64), side="right") - 1
            counts = np.bincount(idx, minlength=len(lows_a))
            parts.append(pd.DataFrame({"Source": source, "Bin": labels, "Low": lows_a, "High": highs,
                                       "Parents": counts, "Share": counts / max(int(counts.sum()), 1)}))
        return pd.concat(parts, ignore_index=True)

    def ccdf(self) -> pd.DataFrame:
        """Tidy complementary CDF ``P(degree ≥ x)``: ``Source, Degree, CCDF`` (for log–log plots)."""
        parts = []
        for source, d in ((REAL, self.real), (SYNTHETIC, self.synthetic)):
            values, counts = np.unique(np.asarray(d, dtype=np.int64), return_counts=True)
            tail = counts[::-1].cumsum()[::-1] / max(int(counts.sum()), 1)
            parts.append(pd.DataFrame({"Source": source, "Degree": values, "CCDF": tail}))
        return pd.concat(parts, ignore_index=True)


def compare_degrees(real: Database, synthetic: Database, fk: ForeignKey | str) -> DegreeComparison:
    """Degree samples of one FK in the real and synthetic databases (docs/evaluation.md §3).

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        fk: The FK or its name.

    Returns:
        :class:`DegreeComparison`; errors (e.g. an empty parent table) are recorded, not raised.
    """
    fk = as_fk(real.schema, fk)
    degs = []
    for db in (real, synthetic):
        idx = parent_index(db, fk)
        degs.append(np.bincount(idx[idx >= 0], minlength=len(db[fk.parent])).astype(np.int64))
    try:
        score, error = cardinality_shape_similarity(degs[0], degs[1]), None
    except Exception as e:  # noqa: BLE001 - SDMetrics convention: record, do not raise
        score, error = math.nan, f"{type(e).__name__}: {e}"
    return DegreeComparison(fk, degs[0], degs[1], score, error)


def degree_similarity(real: Database, synthetic: Database,
                      fks: Sequence[ForeignKey | str] | None = None) -> pd.DataFrame:
    """One row per FK: the Cardinality details with the degree statistics (docs/evaluation.md §3).

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        fks: FKs to compare (default: every FK of the schema, as SDMetrics' Cardinality).

    Returns:
        Frame ``Foreign Key, Child Table, Parent Table, Metric, Score, Real Max, Synthetic Max,
        Real Mean, Synthetic Mean, Real p99, Synthetic p99, Real Zero Share, Synthetic Zero Share``
        (+ ``Error`` when a score failed).
    """
    rows = []
    for fk in (real.schema.foreign_keys if fks is None else fks):
        c = compare_degrees(real, synthetic, fk)
        r, s = degree_stats(c.real), degree_stats(c.synthetic)
        rows.append({"Foreign Key": c.fk.name, "Child Table": c.fk.child, "Parent Table": c.fk.parent,
                     "Metric": "CardinalityShapeSimilarity", "Score": c.score,
                     "Real Max": r["Max"], "Synthetic Max": s["Max"],
                     "Real Mean": r["Mean"], "Synthetic Mean": s["Mean"],
                     "Real p99": r["p99"], "Synthetic p99": s["p99"],
                     "Real Zero Share": r["Zero share"], "Synthetic Zero Share": s["Zero share"],
                     "Error": c.error})
    cols = ["Foreign Key", "Child Table", "Parent Table", "Metric", "Score", "Real Max", "Synthetic Max",
            "Real Mean", "Synthetic Mean", "Real p99", "Synthetic p99", "Real Zero Share",
            "Synthetic Zero Share", "Error"]
    return finish_details(pd.DataFrame(rows, columns=cols))


def cardinality(real: Database, synthetic: Database, *, fks: Sequence[ForeignKey | str] | None = None,
                sdmetrics_compatible: bool = False) -> PropertyResult:
    """Cardinality property (docs/evaluation.md §3): mean CardinalityShapeSimilarity over FK edges.

    Both definitions coincide here (SDMetrics' ``CardinalityShapeSimilarity``), so ``Score`` and
    ``SDMetrics Score`` are equal.

    Returns:
        :class:`PropertyResult` with details ``Child Table, Parent Table, Foreign Key, Metric,
        Score, SDMetrics Score`` and the degree statistics (+ ``Error``).
    """
    details = degree_similarity(real, synthetic, fks)
    details.insert(details.columns.get_loc("Score") + 1, "SDMetrics Score", details["Score"])
    order = ["Child Table", "Parent Table", "Foreign Key"]
    details = details[order + [c for c in details.columns if c not in order]]
    return property_result("Cardinality", details, sdmetrics_compatible)
