"""Association matrices (within a table or across an FK join) and the Intertable Trends property.

Association of a pair of attributes (docs/evaluation.md §2, heatmaps): Pearson r when both are
numeric (datetimes as numbers; rows where both are non-null), Cramér's V when both are categorical
(nulls as a category; ``scipy.stats.contingency.association``, no continuity correction), and the
correlation ratio η when one is numeric and the other categorical. Real, synthetic and their
difference (synthetic − real) are returned as square frames for side-by-side heatmaps.

**Intertable Trends** (docs/evaluation.md §4): for every FK edge, the child and parent tables are joined (inner join
on the FK, real and synthetic separately) and every (parent attribute, child attribute) pair gets
the docs/evaluation.md §2 pair score; the property is the mean over all such pairs of all edges (and, in
``sdmetrics_compatible`` mode, over the strongly associated pairs only, as SDMetrics 0.32).

Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import (
    PAIR_COLUMNS,
    PairColumn,
    PropertyResult,
    as_fk,
    association_of,
    finish_details,
    join_rows,
    prepare_columns,
    property_result,
)
from relviz.evaluate.marginals import pair_trend_rows
from relviz.schema import ForeignKey

__all__ = [
    "AssociationComparison",
    "associations",
    "intertable_trends",
    "join_columns",
    "pearson_matrix",
]


@dataclass(frozen=True)
class AssociationComparison:
    """Association matrices of one table or one FK join, real vs synthetic.

    Attributes:
        title: Table name or FK label (``child.col → parent``).
        real: Square frame of real associations (index = columns = attribute labels; diagonal 1).
        synthetic: Same for the synthetic data.
        measures: Square frame naming the measure of each cell (``Pearson``, ``Cramér's V``,
            ``Correlation ratio η``).
        n_real: Rows used on the real side (joined rows for an FK).
        n_synthetic: Rows used on the synthetic side.
    """

    title: str
    real: pd.DataFrame
    synthetic: pd.DataFrame
    measures: pd.DataFrame
    n_real: int
    n_synthetic: int

    @property
    def difference(self) -> pd.DataFrame:
        """Synthetic − real, cell by cell."""
        return self.synthetic - self.real

    def tidy(self) -> pd.DataFrame:
        """One row per unordered pair: ``Column 1, Column 2, Measure, Real, Synthetic, Difference``."""
        labels = list(self.real.index)
        i, j = np.triu_indices(len(labels), k=1)
        r, s = self.real.to_numpy(), self.synthetic.to_numpy()
        return pd.DataFrame({"Column 1": [labels[a] for a in i], "Column 2": [labels[b] for b in j],
                             "Measure": self.measures.to_numpy()[i, j], "Real": r[i, j],
                             "Synthetic": s[i, j], "Difference": s[i, j] - r[i, j]})


def join_columns(real: Database, synthetic: Database, fk: ForeignKey | str) -> tuple[
        dict[str, PairColumn], dict[str, PairColumn], int, int]:
    """Prepared columns of the inner join ``child ⋈ parent`` on ``fk`` (docs/evaluation.md §4).

    Args:
        real: Real database.
        synthetic: Synthetic database.
        fk: The FK (or its name).

    Returns:
        ``(parent_columns, child_columns, n_real_rows, n_synthetic_rows)``; columns are keyed by
        attribute name and labelled ``table.attribute`` (``parent.attribute`` for the parent side
        of a self-referential FK); each holds the joined rows only.
    """
    fk = as_fk(real.schema, fk)
    rc, rp = join_rows(real, fk)
    sc, sp = join_rows(synthetic, fk)
    child_t, parent_t = real.schema.table(fk.child), real.schema.table(fk.parent)
    cprefix = f"{fk.child}."
    pprefix = "parent." if fk.self_referential else f"{fk.parent}."
    child = {k: c.take(rc, sc) for k, c in
             prepare_columns(child_t.attributes, real[fk.child], synthetic[fk.child], cprefix).items()}
    parent = {k: c.take(rp, sp) for k, c in
              prepare_columns(parent_t.attributes, real[fk.parent], synthetic[fk.parent], pprefix).items()}
    return parent, child, int(rc.size), int(sc.size)


def pearson_matrix(columns: list[np.ndarray]) -> np.ndarray:
    """Pairwise-complete Pearson r of many columns at once (same values as ``pearson`` per pair).

    Each column is centred on its own non-null mean and zero-filled; with the presence mask ``M``
    the pairwise sums are matrix products (``Xᵀ X``, ``Xᵀ M``, ``(X²)ᵀ M``, ``Mᵀ M``), so a
    ``(n, k)`` block costs four ``k × n × k`` products instead of ``k²/2`` passes over the rows.

    Args:
        columns: ``k`` float64 arrays of length ``n`` (NaN = null).

    Returns:
        ``(k, k)`` float64 matrix, diagonal 1; NaN where fewer than two complete rows or a column
        is constant on the complete rows.
    """
    x = np.column_stack(columns)
    m = ~np.isnan(x)
    counts = m.sum(axis=0)
    means = np.where(counts > 0, np.nansum(x, axis=0) / np.maximum(counts, 1), 0.0)
    xc = np.where(m, x - means, 0.0)
    mf = m.astype(np.float64)
    n = mf.T @ mf
    sxy = xc.T @ xc
    sx = xc.T @ mf  # sx[i, j] = Σ x_i over rows where x_j is present
    sxx = (xc * xc).T @ mf
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sx.T / n
        var = sxx - sx * sx / n
        r = cov / np.sqrt(var * var.T)
    scale = np.maximum(sxx, np.finfo(np.float64).tiny)
    bad = (n < 2) | (var <= 1e-12 * scale) | (var.T <= 1e-12 * scale.T) | ~np.isfinite(r)
    r = np.clip(np.where(bad, np.nan, r), -1.0, 1.0)
    np.fill_diagonal(r, 1.0)
    return r


def _matrix(cols: list[PairColumn], side: str) -> tuple[np.ndarray, np.ndarray]:
    """Association values and measure names of all column pairs on one side."""
    k = len(cols)
    values = np.eye(k)
    measures = np.full((k, k), "", dtype=object)
    cont = [i for i, c in enumerate(cols) if c.continuous]
    if len(cont) > 1:
        block = pearson_matrix([getattr(cols[i], side) for i in cont])
        idx = np.asarray(cont)
        values[np.ix_(idx, idx)] = block
        measures[np.ix_(idx, idx)] = "Pearson"
    for i, j in itertools.combinations(range(k), 2):
        if cols[i].continuous and cols[j].continuous:
            continue
        name, v = association_of(cols[i], cols[j], side)
        values[i, j] = values[j, i] = v
        measures[i, j] = measures[j, i] = name
    np.fill_diagonal(values, 1.0)
    np.fill_diagonal(measures, "")
    return values, measures


def associations(real: Database, synthetic: Database, *, table: str | None = None,
                 fk: ForeignKey | str | None = None) -> AssociationComparison:
    """Association matrices of one table, or of one FK join, real and synthetic.

    Exactly one of ``table`` and ``fk`` must be given. For a join the child's attributes come
    first, then the parent's, labelled ``table.attribute``.

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        table: Table name.
        fk: FK (or its name) whose inner join to evaluate.

    Returns:
        :class:`AssociationComparison`.

    Raises:
        ValueError: unless exactly one of ``table``/``fk`` is given, or when there are fewer
            than two attributes.
    """
    if (table is None) == (fk is None):
        raise ValueError("give exactly one of table= or fk=")
    if table is not None:
        attrs = real.schema.table(table).attributes
        cols = list(prepare_columns(attrs, real[table], synthetic[table]).values())
        title, n_r, n_s = table, len(real[table]), len(synthetic[table])
    else:
        fk = as_fk(real.schema, fk)  # type: ignore[arg-type]
        parent, child, n_r, n_s = join_columns(real, synthetic, fk)
        cols = list(child.values()) + list(parent.values())
        title = fk.label()
    if len(cols) < 2:
        raise ValueError(f"{title}: associations need at least two attributes")
    labels = [c.name for c in cols]
    rv, measures = _matrix(cols, "real")
    sv, _ = _matrix(cols, "synthetic")
    frame = lambda m: pd.DataFrame(m, index=labels, columns=labels)  # noqa: E731
    return AssociationComparison(title, frame(rv), frame(sv), frame(measures), n_r, n_s)


def intertable_trends(real: Database, synthetic: Database, *, fks: Sequence[ForeignKey | str] | None = None,
                      sdmetrics_compatible: bool = False) -> PropertyResult:
    """Intertable Trends property (docs/evaluation.md §4).

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        fks: FK edges (default: every FK of the schema, as SDMetrics' relationships).
        sdmetrics_compatible: Make ``score`` SDMetrics 0.32's average (strongly associated real
            pairs only, own-range bins).

    Returns:
        :class:`PropertyResult` with details ``Parent Table, Child Table, Foreign Key, Column 1
        (parent attribute), Column 2 (child attribute), Metric, Score, SDMetrics Score, Real
        Correlation, Synthetic Correlation, Real Association, Meets Threshold?`` (+ ``Error``).
        Edges whose child or parent has no attributes contribute no pairs.
    """
    rows = []
    for fk in (real.schema.foreign_keys if fks is None else fks):
        fk = as_fk(real.schema, fk)
        if not real.schema.table(fk.child).attributes or not real.schema.table(fk.parent).attributes:
            continue
        parent, child, _, _ = join_columns(real, synthetic, fk)
        cols = {**{("p", k): c for k, c in parent.items()}, **{("c", k): c for k, c in child.items()}}
        pairs = [(("p", a), ("c", b)) for a in parent for b in child]
        for r in pair_trend_rows(cols, pairs):  # type: ignore[arg-type]
            r["Column 1"], r["Column 2"] = r["Column 1"][1], r["Column 2"][1]
            rows.append({"Parent Table": fk.parent, "Child Table": fk.child, "Foreign Key": fk.name, **r})
    frame = pd.DataFrame(rows, columns=["Parent Table", "Child Table", "Foreign Key", "Column 1", "Column 2",
                                        *PAIR_COLUMNS])
    return property_result("Intertable Trends", finish_details(frame), sdmetrics_compatible, thresholded=True)

