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
  :class:`~relviz.evaluate.QualityReport` and relviz's :class:`~relviz.evaluate.RelationalReport`.

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
    "Selection",
    "utility_summary",
]

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
