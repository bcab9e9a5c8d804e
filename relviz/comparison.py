"""``Comparison``: real vs synthetic, per selection, cached — the object behind the compare panel.

Everything here reads the real data: it is a **curator view (not private)**, outside the DP
guarantee (docs/evaluation.md; every figure from :mod:`relviz.plots` carries that subtitle).

:class:`Comparison` wraps :mod:`relviz.evaluate` and :mod:`relviz.plots` for one pair of
databases and caches each result per selection, so a view can switch back and forth for free:

* degrees per FK (:func:`~relviz.evaluate.compare_degrees`);
* association matrices per table or per FK join (:func:`~relviz.evaluate.associations`);
* t-SNE embeddings keyed by (table or FK join, rows per side) — the colouring is applied when the
  figure is drawn, so re-colouring never re-embeds (:func:`~relviz.evaluate.embed`, with a
  ``progress(fraction, message)`` callback);
* 1-way frequencies per attribute, the 1-way TVD table, the SDMetrics-style
  :class:`~relviz.evaluate.QualityReport` and relviz's :class:`~relviz.evaluate.RelationalReport`;
* the single-table benchmark's measures per synthesised table (:meth:`Comparison.single_table`:
  fidelity error, query error, ML efficacy of Chen, Li, Gong, McKenna & Wang, "Benchmarking
  Differentially Private Tabular Data Synthesis", §8.3; docs/evaluation.md §7.3).

Each key is computed once even when several threads ask for it at the same time.

:func:`utility_summary` gives the numbers a stakeholder reads (degree similarity per FK, 3-way
cross-table error per private FK, mean 2-way TVD); :func:`relviz.sweep.epsilon_sweep` fits and
samples over a grid of ε and reports that summary at each.

Example:
    >>> cmp = Comparison(real_db, synthetic_db)                          # doctest: +SKIP
    >>> cmp.degree_figure("flights.tailnum->planes", log_y=True)         # doctest: +SKIP
    >>> cmp.embedding_figure(table="flights", n=300, color="month")      # doctest: +SKIP
    >>> cmp.cache_info()                                                 # doctest: +SKIP
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.progress import Progress
from relviz.schema import Table

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

    from relviz.evaluate import (
        AssociationComparison,
        DegreeComparison,
        Embedding,
        QualityReport,
        RelationalReport,
    )

__all__ = [
    "Comparison",
    "SINGLE_TABLE_IN_SAMPLE_NOTE",
    "SINGLE_TABLE_MAX_QUERY_ROWS",
    "SINGLE_TABLE_MAX_ROWS",
    "Selection",
    "ml_target",
    "utility_summary",
]

SINGLE_TABLE_MAX_ROWS = 20_000
"""Rows per side (real, synthetic) that the ML efficacy of :meth:`Comparison.single_table` reads
at most (a seeded uniform sample beyond it)."""

SINGLE_TABLE_MAX_QUERY_ROWS = 100_000
"""Rows per side that the query error of :meth:`Comparison.single_table` reads at most (1,000
queries on 100,000 rows take ≈ 2 s on one core; on all 336,776 flights of nycflights13 ≈ 9 s)."""

SINGLE_TABLE_QUERIES = 1000
"""Random 3-attribute queries of the query error (the benchmark's 1,000)."""

SINGLE_TABLE_IN_SAMPLE_NOTE = (
    "ML efficacy here is in-sample: the synthesizer saw these test rows (a fixed 20 % of the real rows, "
    "TRTR trained on the other 80 %, TSTR on the synthetic rows); benchmarks/single_table.py measures "
    "against an untouched holdout.")
"""What the ML efficacy of :meth:`Comparison.single_table` is (shown beside it wherever it is shown)."""


def ml_target(table: Table) -> str | None:
    """The ML-efficacy target of a table: its first categorical attribute with 2–20 declared
    categories (a public rule: it reads only the schema), or ``None``.

    Args:
        table: The table's schema.
    """
    for a in table.attributes:
        if a.kind == "categorical" and a.categories is not None and 2 <= len(a.categories) <= 20:
            return str(a.name)
    return None

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """Rows to compare: one table, or the inner join of one FK (child ⋈ parent).

    Attributes:
        kind: ``"table"`` or ``"join"``.
        name: Table name or FK name.
        label: What to show (``"flights"``, ``"flights.tailnum → planes (join)"``).
        attributes: Attribute count of the selection.
    """

    kind: Literal["table", "join"]
    name: str
    label: str
    attributes: int

    @property
    def key(self) -> str:
        """``"table:<name>"`` or ``"join:<fk name>"`` (a stable string for drop-downs)."""
        return f"{self.kind}:{self.name}"

    def kwargs(self) -> dict[str, str]:
        """``{"table": name}`` or ``{"fk": name}`` for the evaluation functions."""
        return {"table": self.name} if self.kind == "table" else {"fk": self.name}


class Comparison:
    """Cached comparisons of a synthetic database with the real one (curator view).

    Args:
        real: The real :class:`~relviz.database.Database`.
        synthetic: The synthetic database (same schema).
        random_state: Seed of the t-SNE samples, the t-SNE and the detection folds.
        n_jobs: Threads for openTSNE (1–2 on shared machines).

    Attributes:
        real: See above.
        synthetic: See above.
        hits: Cache hits so far; ``misses``: computations so far.
    """

    def __init__(self, real: Database, synthetic: Database, *, random_state: int = 0, n_jobs: int = 1) -> None:
        self.real = real
        self.synthetic = synthetic
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.hits = 0
        self.misses = 0
        self._cache: dict[Hashable, Any] = {}
        self._guard = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}

    # -- cache -----------------------------------------------------------------------------------
    def _get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._guard:
            if key in self._cache:
                self.hits += 1
                return self._cache[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one computation per key, even when two threads ask at once
            with self._guard:
                if key in self._cache:
                    self.hits += 1
                    return self._cache[key]
            value = compute()
            with self._guard:
                self._cache[key] = value
                self.misses += 1
            return value

    def cached(self, key: Hashable) -> bool:
        """Whether ``key`` (see :meth:`cache_info`) is computed already."""
        with self._guard:
            return key in self._cache

    def cache_info(self) -> dict[str, Any]:
        """``{"hits", "misses", "keys"}`` (keys as tuples, e.g. ``("embedding", "table:flights", 300)``)."""
        with self._guard:
            return {"hits": self.hits, "misses": self.misses, "keys": list(self._cache)}

    def clear_cache(self) -> None:
        with self._guard:
            self._cache.clear()

    # -- what can be compared --------------------------------------------------------------------
    @property
    def foreign_keys(self) -> tuple[str, ...]:
        """Every FK name of the schema (degrees are defined for each)."""
        return tuple(fk.name for fk in self.real.schema.foreign_keys)

    @property
    def tables(self) -> tuple[str, ...]:
        """Tables with at least one attribute: the private (synthesised) ones first."""
        ts = [t for t in self.real.schema.tables if t.attributes]
        return tuple(t.name for t in sorted(ts, key=lambda t: t.public))

    def attributes(self, table: str) -> tuple[str, ...]:
        return self.real.schema.table(table).attribute_names

    def selections(self, min_attributes: int = 1) -> list[Selection]:
        """Tables and FK joins (both sides with attributes) with at least ``min_attributes``.

        Order: private tables, joins whose child is private, public tables, other joins (what was
        synthesised comes first).
        """
        s = self.real.schema
        ranked: list[tuple[int, Selection]] = [
            (2 if t.public else 0, Selection("table", t.name, t.name, len(t.attributes)))
            for t in s.tables if len(t.attributes) >= min_attributes]
        for fk in s.foreign_keys:
            nc, np_ = len(s.table(fk.child).attributes), len(s.table(fk.parent).attributes)
            if nc and np_ and nc + np_ >= min_attributes:
                rank = 3 if s.table(fk.child).public else 1
                ranked.append((rank, Selection("join", fk.name, f"{fk.label()} (join)", nc + np_)))
        return [sel for _, sel in sorted(ranked, key=lambda r: r[0])]

    def selection(self, key: str | Selection) -> Selection:
        """The :class:`Selection` of a key ``"table:<name>"`` / ``"join:<fk>"``.

        Raises:
            KeyError: for an unknown key.
        """
        if isinstance(key, Selection):
            return key
        for sel in self.selections():
            if sel.key == key:
                return sel
        raise KeyError(f"unknown selection {key!r}")

    @staticmethod
    def _sel_key(table: str | None, fk: str | None) -> str:
        if (table is None) == (fk is None):
            raise ValueError("give exactly one of table= or fk=")
        return f"table:{table}" if table is not None else f"join:{fk}"

    # -- degrees ---------------------------------------------------------------------------------
    def degrees(self, fk: str) -> DegreeComparison:
        """Children per parent of ``fk``, real vs synthetic, with CardinalityShapeSimilarity."""
        from relviz.evaluate import compare_degrees

        return self._get(("degrees", fk), lambda: compare_degrees(self.real, self.synthetic, fk))

    def degree_figure(self, fk: str, *, kind: Literal["auto", "bar", "binned", "ccdf"] = "auto",
                      log_y: bool = False) -> go.Figure:
        from relviz import plots

        return plots.degree_figure(self.degrees(fk), kind=kind, log_y=log_y)

    # -- associations ----------------------------------------------------------------------------
    def associations(self, *, table: str | None = None, fk: str | None = None) -> AssociationComparison:
        """Association matrices of a table or an FK join (Pearson / Cramér's V / η)."""
        from relviz.evaluate import associations

        key = self._sel_key(table, fk)
        return self._get(("associations", key),
                         lambda: associations(self.real, self.synthetic, table=table, fk=fk))

    def association_figure(self, *, table: str | None = None, fk: str | None = None) -> go.Figure:
        from relviz import plots

        return plots.association_figure(self.associations(table=table, fk=fk))

    # -- t-SNE -----------------------------------------------------------------------------------
    def embedding(self, *, table: str | None = None, fk: str | None = None, n: int = 2000,
                  progress: Progress | None = None) -> Embedding:
        """t-SNE of ``n`` sampled rows per side of a table or FK join (cached by selection and n).

        Args:
            table, fk: The selection (exactly one).
            n: Rows sampled per side (docs/evaluation.md §8: 2,000 by default).
            progress: ``progress(fraction, message)``, called only when the map is computed.
        """
        from relviz.evaluate import embed

        key = self._sel_key(table, fk)
        return self._get(("embedding", key, int(n)),
                         lambda: embed(self.real, self.synthetic, table=table, fk=fk, n=int(n),
                                       random_state=self.random_state, n_jobs=self.n_jobs, progress=progress))

    def embedding_figure(self, *, table: str | None = None, fk: str | None = None, n: int = 2000,
                         color: str = "Source", progress: Progress | None = None) -> go.Figure:
        """t-SNE scatter coloured by ``"Source"`` or an attribute (recolouring reuses the map)."""
        from relviz import plots

        return plots.embedding_figure(self.embedding(table=table, fk=fk, n=n, progress=progress), color=color)

    # -- marginals -------------------------------------------------------------------------------
    def frequencies(self, table: str, attribute: str) -> pd.DataFrame:
        """1-way frequencies of one attribute on its public domain, real and synthetic."""
        from relviz.evaluate import frequencies

        return self._get(("frequencies", table, attribute),
                         lambda: frequencies(self.real, self.synthetic, table, attribute))

    def frequency_figure(self, table: str, attribute: str) -> go.Figure:
        from relviz import plots

        return plots.frequency_figure(self.frequencies(table, attribute), title=f"{table}.{attribute}")

    def one_way(self) -> pd.DataFrame:
        """1-way TVD per attribute of every table (``Table, Attribute, TVD``)."""
        from relviz.evaluate import tvd_one_way

        return self._get(("one_way",), lambda: tvd_one_way(self.real, self.synthetic))

    # -- reports ---------------------------------------------------------------------------------
    def quality(self, progress: Progress | None = None) -> QualityReport:
        """The SDMetrics-style quality report (four properties, scores in [0, 1])."""
        from relviz.evaluate import QualityReport

        def compute() -> QualityReport:
            q = QualityReport()
            q.generate(self.real, self.synthetic, progress=progress)
            return q
        return self._get(("quality",), compute)

    def relational(self, progress: Progress | None = None) -> RelationalReport:
        """relviz's relational report (validity, TVDs, degrees, 3-way cross-table errors)."""
        from relviz.evaluate import RelationalReport

        return self._get(("relational",),
                         lambda: RelationalReport().generate(self.real, self.synthetic, progress=progress))

    def single_table(self, progress: Progress | None = None, *, max_rows: int = SINGLE_TABLE_MAX_ROWS,
                     max_query_rows: int = SINGLE_TABLE_MAX_QUERY_ROWS) -> pd.DataFrame:
        """The single-table benchmark's measures, one row per synthesised table (curator view).

        Chen, Li, Gong, McKenna & Wang, "Benchmarking Differentially Private Tabular Data
        Synthesis", §8.3 (its three utility measures), with the functions of
        :mod:`relviz.evaluate.single_table`; docs/evaluation.md §7.3. Tables: every private table of
        the real schema with at least one attribute that both databases hold (public tables are
        copied, not synthesised). Columns are the table's attributes (no key or FK column).

        * ``Fidelity error``: mean 2-way TVD with the benchmark's 100-point binning
          (:func:`~relviz.evaluate.single_table.fidelity_error`), on **every** row (bincounts:
          0.4 s for nycflights13's 336,776 flights; a sample would add its own error, ≈ 0.13
          between two samples of 20,000 flights); NaN with fewer than 2 attributes.
        * ``Query error``: mean ``|q(syn) − q(real)|`` of 1,000 random 3-attribute range/point
          queries, seed ``random_state`` (:func:`~relviz.evaluate.single_table.query_error`), on at
          most ``max_query_rows`` rows per side; NaN with fewer than 3 attributes
          (``query_error`` would narrow the queries instead, and the column would mix widths).
        * ``Target``, ``TRTR macro-F1``, ``TSTR macro-F1``: ML efficacy
          (:func:`~relviz.evaluate.single_table.ml_efficacy`, the mean macro-F1 of its RandomForest
          and HistGradientBoosting) predicting :func:`ml_target` (the first categorical attribute
          with 2–20 declared categories; none: NaN), on at most ``max_rows`` rows per side. The
          test set is a fixed 20 % of those real rows
          (:func:`~relviz.evaluate.single_table.holdout_split`, seed ``random_state``), TRTR is
          trained on the other 80 %, TSTR on the synthetic rows. **In-sample**: the synthesizer saw
          the test rows (:data:`SINGLE_TABLE_IN_SAMPLE_NOTE`), so a synthesizer that copies rows
          can score TSTR above TRTR.

        A side over a cap is read through a uniform sample of the cap's size (seeded by
        ``random_state``), which the row's ``Note`` and ``frame.attrs["notes"]`` say. The inputs
        are not modified.

        Args:
            progress: ``progress(fraction, message)``, called per table and measure while computing.
            max_rows: Rows per side of the ML efficacy at most (20,000 by default).
            max_query_rows: Rows per side of the query error at most (100,000 by default).

        Returns:
            Frame ``Table, Rows (real), Rows (synthetic), Fidelity error, Query error, Target,
            TRTR macro-F1, TSTR macro-F1, Note`` (rows: the full table sizes; ``Note``: per-table
            caveats); ``frame.attrs["notes"]`` holds the frame-wide notes (the in-sample caveat,
            the target rule, the sampling caps when they applied).

        Raises:
            ValueError: for a cap under 10 rows.
        """
        if min(int(max_rows), int(max_query_rows)) < 10:
            raise ValueError("max_rows and max_query_rows must be at least 10")
        return self._get(("single_table", int(max_rows), int(max_query_rows)),
                         lambda: self._single_table(progress, int(max_rows), int(max_query_rows)))

    def _single_table(self, progress: Progress | None, max_rows: int, max_query_rows: int) -> pd.DataFrame:
        from relviz.evaluate.single_table import fidelity_error, holdout_split, ml_efficacy, query_error

        seed = int(self.random_state or 0)
        tables = [t for t in self.real.schema.tables
                  if t.attributes and not t.public and t.name in self.real and t.name in self.synthetic]
        columns = ["Table", "Rows (real)", "Rows (synthetic)", "Fidelity error", "Query error", "Target",
                   "TRTR macro-F1", "TSTR macro-F1", "Note"]
        rows: list[dict[str, Any]] = []
        sampled: dict[str, list[str]] = {"query": [], "ml": []}
        nan = float("nan")

        def step(i: int, k: int, what: str) -> None:
            if progress is not None:
                progress((i + k / 3) / len(tables), f"single-table benchmark: {tables[i].name} "
                         f"({i + 1}/{len(tables)}), {what}")

        for i, t in enumerate(tables):
            step(i, 0, "fidelity error")
            # the attribute columns only (no key or FK column): new frames, never views on the inputs
            real_all, syn_all = self.real[t.name], self.synthetic[t.name]
            attrs = [a for a in t.attribute_names if a in real_all.columns and a in syn_all.columns]
            real_all, syn_all = real_all[attrs].reset_index(drop=True), syn_all[attrs].reset_index(drop=True)
            notes: list[str] = []
            if len(attrs) < len(t.attributes):
                notes.append("attributes missing from a side left out: "
                             + ", ".join(a for a in t.attribute_names if a not in attrs))
            fid = qe = trtr = tstr = nan
            if len(attrs) >= 2 and len(real_all) and len(syn_all):
                fid = fidelity_error(real_all, syn_all, t, attributes=attrs).error
            elif len(attrs) < 2:
                notes.append("fidelity error needs 2 attributes (1-way TVD: Marginals tab)")
            step(i, 1, "query error")
            if len(attrs) >= 3 and len(real_all):
                real, syn = self._cap(real_all, max_query_rows, 0), self._cap(syn_all, max_query_rows, 1)
                if len(real) < len(real_all) or len(syn) < len(syn_all):
                    sampled["query"].append(t.name)
                    notes.append(f"query error on {len(real):,} real and {len(syn):,} synthetic sampled rows")
                qe = query_error(real, syn, t, n_queries=SINGLE_TABLE_QUERIES, width=3, seed=seed,
                                 attributes=attrs)
            elif len(attrs) < 3:
                notes.append("query error needs 3 attributes")
            step(i, 2, "ML efficacy")
            target = ml_target(t)
            if target is not None and target not in attrs:
                target = None
            if target is None:
                notes.append("no ML target (no categorical attribute with 2–20 categories)")
            elif len(real_all) < 10 or not len(syn_all):
                notes.append("too few rows for ML efficacy")
            else:
                real, syn = self._cap(real_all, max_rows, 2), self._cap(syn_all, max_rows, 3)
                if len(real) < len(real_all) or len(syn) < len(syn_all):
                    sampled["ml"].append(t.name)
                    notes.append(f"ML efficacy on {len(real):,} real and {len(syn):,} synthetic sampled rows")
                train, test = holdout_split(real, 0.2, seed=seed)
                sub = Table(t.name, (), tuple(a for a in t.attributes if a.name in attrs))  # features: attrs
                ml = ml_efficacy(train, test, syn, sub, target, seed=seed)
                f1 = ml[ml["metric"] == "macro_f1"].groupby("setting")["value"].mean()
                trtr, tstr = float(f1.get("TRTR", nan)), float(f1.get("TSTR", nan))
                if math.isnan(trtr) or math.isnan(tstr):
                    notes.append(f"{target}: one class only on a side, F1 undefined")
            rows.append({"Table": t.name, "Rows (real)": len(real_all), "Rows (synthetic)": len(syn_all),
                         "Fidelity error": fid, "Query error": qe, "Target": target or "",
                         "TRTR macro-F1": trtr, "TSTR macro-F1": tstr, "Note": "; ".join(notes)})
        if progress is not None:
            progress(1.0, "single-table benchmark: done")
        out = pd.DataFrame(rows, columns=columns)
        notes_all = [
            SINGLE_TABLE_IN_SAMPLE_NOTE,
            "ML target: the first categorical attribute with 2–20 declared categories; macro-F1 is the mean "
            "of a RandomForest and a HistGradientBoosting classifier.",
        ]
        for what, cap, label in (("query", max_query_rows, "the query error"), ("ml", max_rows, "the ML efficacy")):
            if sampled[what]:
                notes_all.append(f"Tables over {cap:,} rows on a side are read through a uniform sample of {cap:,} "
                                 f"rows per side (seed {seed}) for {label}: {', '.join(sampled[what])}; two samples "
                                 "differ by chance too, so even a copy does not score 0 there.")
        out.attrs["notes"] = notes_all
        return out

    def _cap(self, df: pd.DataFrame, max_rows: int, stream: int) -> pd.DataFrame:
        """At most ``max_rows`` rows of ``df``: itself, or a seeded uniform sample (a new frame)."""
        if len(df) <= max_rows:
            return df
        rng = np.random.default_rng([int(self.random_state or 0), stream])
        keep = np.sort(rng.choice(len(df), size=max_rows, replace=False))
        return df.iloc[keep].reset_index(drop=True)

    def scores_figure(self, progress: Progress | None = None) -> go.Figure:
        """The quality report's properties on a fixed [0, 1] axis (average in the title)."""
        from relviz import plots

        props = self.quality(progress).get_properties()
        return plots.scores_figure(props, x="Property", title="Quality properties", color=None)

    def cross_table_figure(self, fk: str) -> go.Figure:
        """Per-workload 3-way cross-table error of one private FK.

        Raises:
            KeyError: when the FK has no cross-table error (a public child, or not computed).
        """
        from relviz import plots

        return plots.cross_table_figure(self.relational().cross_table[fk])

    def __repr__(self) -> str:
        return (f"Comparison({self.real.schema.name or 'database'}: {len(self._cache)} cached, "
                f"{self.hits} hits, {self.misses} misses)")


# ------------------------------------------------------------------------------------------------
# utility at one ε (the stakeholder demo; over a grid of ε: relviz.sweep)
# ------------------------------------------------------------------------------------------------

def utility_summary(real: Database, synthetic: Database, *, k: int = 3) -> dict[str, Any]:
    """The utility numbers a stakeholder reads (curator view).

    Returns:
        ``{"degree_similarity": {fk: score}, "cross_table_error": {fk: average L1 error in [0, 2]},
        "two_way_tvd": {table: mean 2-way TVD}, "mean_two_way_tvd": float,
        "mean_cross_table_error": float, "degrees": {fk: DegreeComparison}}``; the cross-table
        error is given for private FKs with workloads (NaN-free), the TVD for tables with two or
        more attributes.
    """
    from relviz.evaluate import compare_degrees, cross_table_errors, tvd_two_way

    s = real.schema
    degrees = {fk.name: compare_degrees(real, synthetic, fk) for fk in s.foreign_keys}
    ct = {e.name: e.average for e in cross_table_errors(real, synthetic, k=k) if not math.isnan(e.average)}
    tv = tvd_two_way(real, synthetic)
    private = set(s.private_tables)
    by_table = {str(t): float(g["TVD"].mean()) for t, g in tv.groupby("Table", sort=False) if t in private}
    pair_mean = float(tv[tv["Table"].isin(list(private))]["TVD"].mean()) if len(tv) else math.nan
    return {"degree_similarity": {n: d.score for n, d in degrees.items()},
            "cross_table_error": ct, "two_way_tvd": by_table, "mean_two_way_tvd": pair_mean,
            "mean_cross_table_error": float(np.mean(list(ct.values()))) if ct else math.nan,
            "degrees": degrees}
