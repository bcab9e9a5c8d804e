"""Reports: SDMetrics-style :class:`QualityReport` and relviz's own :class:`RelationalReport`.

* :class:`QualityReport` (the API of SDMetrics' multi-table ``QualityReport``; docs/evaluation.md §1–§5): properties Column Shapes,
  Column Pair Trends, Cardinality and Intertable Trends; Quality = mean of the four (NaN
  properties skipped, as SDMetrics' ``np.nanmean``). ``get_properties()`` lists both averages of
  every property (relviz's, over all items; SDMetrics 0.32's, over strongly associated pairs);
  ``sdmetrics_compatible=True`` makes ``Score`` and ``get_score()`` SDMetrics' numbers.
* :class:`RelationalReport`: relviz's summary for the CLI and benchmarks — per table rows and
  fidelity (mean 1-way and 2-way TVD on public codes), per FK degree similarity and the 3-way
  cross-table error (average / max over all workloads), and validity.

Errors in one metric are recorded in an ``Error`` column (or a ``Note``), never raised (SDMetrics
convention). Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import PropertyResult, nanmean, report_progress
from relviz.evaluate.correlation import associations, intertable_trends
from relviz.evaluate.crosstable import CrossTableError, cross_table_errors, link_table_error
from relviz.evaluate.degree import DegreeComparison, cardinality, compare_degrees, degree_stats
from relviz.evaluate.marginals import (
    column_pair_trends,
    column_shapes,
    fidelity_summary,
    tvd_one_way,
    tvd_two_way,
)
from relviz.evaluate.validity import ValidityReport, validity
from relviz.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    import plotly.graph_objects as go

__all__ = ["PROPERTIES", "QualityReport", "RelationalReport"]

PROPERTIES = ("Column Shapes", "Column Pair Trends", "Cardinality", "Intertable Trends")


def _failed(name: str, error: Exception) -> PropertyResult:
    details = pd.DataFrame({"Score": [math.nan], "SDMetrics Score": [math.nan],
                            "Error": [f"{type(error).__name__}: {error}"]})
    return PropertyResult(name, details, math.nan, math.nan, math.nan)


class QualityReport:
    """Multi-table quality report with SDMetrics' API (``generate`` → ``get_*``).

    Args:
        sdmetrics_compatible: Report SDMetrics 0.32's averages as ``Score`` (pair properties over
            strongly associated real pairs only, numerics binned over each dataset's own range,
            TVComplement with nulls dropped). Default: relviz's averages over all items.

    Example:
        >>> report = QualityReport()                       # doctest: +SKIP
        >>> report.generate(real_db, synthetic_db)         # doctest: +SKIP
        >>> report.get_properties()                        # doctest: +SKIP
    """

    def __init__(self, *, sdmetrics_compatible: bool = False) -> None:
        self.sdmetrics_compatible = sdmetrics_compatible
        self._results: dict[str, PropertyResult] = {}
        self._real: Database | None = None
        self._synthetic: Database | None = None
        self._info: dict[str, Any] = {}

    # -- generation -------------------------------------------------------------------------------
    def generate(self, real: Database, synthetic: Database, verbose: bool = False,
                 progress: Progress | None = None) -> None:
        """Compute the four properties (docs/evaluation.md §1–§4).

        Args:
            real: Real database.
            synthetic: Synthetic database with the same schema.
            verbose: Print SDMetrics-style progress lines and property scores.
            progress: Optional ``progress(fraction, message)`` callback.
        """
        steps: dict[str, Callable[[], PropertyResult]] = {
            "Column Shapes": lambda: column_shapes(real, synthetic, sdmetrics_compatible=self.sdmetrics_compatible),
            "Column Pair Trends": lambda: column_pair_trends(real, synthetic,
                                                             sdmetrics_compatible=self.sdmetrics_compatible),
            "Cardinality": lambda: cardinality(real, synthetic, sdmetrics_compatible=self.sdmetrics_compatible),
            "Intertable Trends": lambda: intertable_trends(real, synthetic,
                                                           sdmetrics_compatible=self.sdmetrics_compatible),
        }
        t0 = time.perf_counter()
        self._real, self._synthetic = real, synthetic
        self._results = {}
        if verbose:
            print("Generating report ...\n")
        for i, (name, step) in enumerate(steps.items()):
            report_progress(progress, i / len(steps), f"({i + 1}/{len(steps)}) Evaluating {name}")
            try:
                res = step()
            except Exception as e:  # noqa: BLE001 - SDMetrics convention: record, do not raise
                res = _failed(name, e)
            self._results[name] = res
            if verbose:
                print(f"({i + 1}/{len(steps)}) Evaluating {name}: done\n{name} Score: "
                      f"{round(100 * res.score, 2) if not math.isnan(res.score) else 'n/a'}%\n")
        report_progress(progress, 1.0, "quality report done")
        self._info = {"generation_time": time.perf_counter() - t0,
                      "num_tables": len(real.schema.tables),
                      "num_rows_real_data": real.row_counts(),
                      "num_rows_synthetic_data": synthetic.row_counts(),
                      "sdmetrics_compatible": self.sdmetrics_compatible}
        if verbose:
            print(f"Overall Score (Average): {round(100 * self.get_score(), 2)}%\n")

    def _check(self) -> None:
        if not self._results:
            raise RuntimeError("call generate(real, synthetic) first")

    # -- results ---------------------------------------------------------------------------------
    def get_score(self) -> float:
        """Quality = mean of the four property scores (NaN properties skipped; docs/evaluation.md §5)."""
        self._check()
        return nanmean(r.score for r in self._results.values())

    def get_properties(self) -> pd.DataFrame:
        """Frame ``Property, Score, relviz Score, SDMetrics Score`` (``Score`` = the chosen mode)."""
        self._check()
        return pd.DataFrame([{"Property": n, "Score": r.score, "relviz Score": r.score_relviz,
                              "SDMetrics Score": r.score_sdmetrics} for n, r in self._results.items()])

    def get_info(self) -> dict[str, Any]:
        """Generation time, table and row counts, mode."""
        self._check()
        return dict(self._info)

    def _property(self, property_name: str) -> PropertyResult:
        self._check()
        if property_name not in self._results:
            raise ValueError(f"unknown property {property_name!r}; choose one of {list(PROPERTIES)}")
        return self._results[property_name]

    def get_details(self, property_name: str, table_name: str | None = None) -> pd.DataFrame:
        """Tidy details of a property, optionally for one table (parent or child for relations).

        Raises:
            ValueError: for an unknown property or table.
        """
        details = self._property(property_name).details.copy()
        if table_name is None:
            return details
        if self._real is not None and table_name not in self._real.schema.table_names:
            raise ValueError(f"unknown table {table_name!r}")
        if "Table" in details:
            return details[details["Table"] == table_name].reset_index(drop=True)
        if "Child Table" in details:
            mask = (details["Child Table"] == table_name) | (details["Parent Table"] == table_name)
            return details[mask].reset_index(drop=True)
        return details

    def get_visualization(self, property_name: str, table_name: str | None = None) -> go.Figure:
        """plotly figure of a property (scores on a fixed [0, 1] axis, average in the title).

        ``Column Pair Trends`` with a ``table_name`` gives the association heatmaps (real,
        synthetic, difference) of that table instead.
        """
        from relviz import plots

        details = self.get_details(property_name, table_name)
        y = "SDMetrics Score" if self.sdmetrics_compatible else "Score"
        title = f"Data Quality: {property_name}"
        if property_name == "Column Pair Trends" and table_name is not None:
            assert self._real is not None and self._synthetic is not None
            return plots.association_figure(associations(self._real, self._synthetic, table=table_name))
        details = details.copy()
        if property_name == "Column Shapes":
            details["Item"] = details["Table"] + "." + details["Column"]
        elif property_name == "Column Pair Trends":
            details["Item"] = details["Table"] + ": " + details["Column 1"] + " × " + details["Column 2"]
        elif property_name == "Cardinality":
            details["Item"] = details["Foreign Key"]
        else:
            details["Item"] = (details["Parent Table"] + "." + details["Column 1"] + " × " + details["Child Table"]
                               + "." + details["Column 2"] + " (" + details["Foreign Key"] + ")")
        if self.sdmetrics_compatible and "Meets Threshold?" in details:
            details = details[details["Meets Threshold?"].fillna(False).to_numpy(dtype=bool)]
        return plots.scores_figure(details, x="Item", y=y, title=title)


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, (np.floating,)):
        return None if np.isnan(v) else float(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [_json_safe(r) for r in frame.to_dict(orient="records")]


class RelationalReport:
    """relviz's summary of a synthetic database against the real one (for the CLI and benchmarks).

    Args:
        k: Order of the cross-table marginals (3 in the papers).
        expected_rows: Planned synthetic row counts ``{table: rows}`` (validity checks them).

    After :meth:`generate`:

    Attributes:
        tables: Frame ``Table, Private, Real Rows, Synthetic Rows, Attributes, Mean 1-way TVD,
            Mean 2-way TVD, Worst Pair, Worst Pair TVD``.
        foreign_keys: Frame ``Foreign Key, Child Table, Parent Table, Private, Degree Similarity,
            Real Max Degree, Synthetic Max Degree, Real Mean Degree, Synthetic Mean Degree,
            Real Zero Share, Synthetic Zero Share, Workloads, 3-way Avg Error (%), 3-way Max
            Error (%), Note``.
        validity: :class:`~relviz.evaluate.validity.ValidityReport` of the synthetic database.
        degrees: ``{fk name: DegreeComparison}``.
        cross_table: ``{fk name: CrossTableError}`` (private FKs).
        one_way: 1-way TVD frame; ``two_way``: 2-way TVD frame.
        timings: Seconds per step.
        errors: ``{step: "ErrorType: message"}`` for steps that failed (recorded, not raised).
    """

    def __init__(self, *, k: int = 3, expected_rows: Mapping[str, int] | None = None) -> None:
        self.k = k
        self.expected_rows = expected_rows
        self.name = ""
        self.tables: pd.DataFrame | None = None
        self.foreign_keys: pd.DataFrame | None = None
        self.validity: ValidityReport | None = None
        self.degrees: dict[str, DegreeComparison] = {}
        self.cross_table: dict[str, CrossTableError] = {}
        self.one_way: pd.DataFrame | None = None
        self.two_way: pd.DataFrame | None = None
        self.relations: dict[str, CrossTableError] = {}
        self.timings: dict[str, float] = {}
        self.errors: dict[str, str] = {}

    def generate(self, real: Database, synthetic: Database, *, progress: Progress | None = None) -> RelationalReport:
        """Compute every part of the summary; returns ``self``.

        Args:
            real: Real database.
            synthetic: Synthetic database with the same schema.
            progress: Optional ``progress(fraction, message)`` callback.
        """
        s = real.schema
        self.name = s.name
        timings: dict[str, float] = {}

        self.errors = {}

        def timed(key: str, fraction: float, fn: Callable[[], Any], fallback: Callable[[], Any]) -> Any:
            report_progress(progress, fraction, key)
            t = time.perf_counter()
            try:
                out = fn()
            except Exception as e:  # noqa: BLE001 - SDMetrics convention: record, do not raise
                self.errors[key] = f"{type(e).__name__}: {e}"
                out = fallback()
            timings[key] = time.perf_counter() - t
            return out

        self.validity = timed("validity", 0.0, lambda: validity(synthetic, expected_rows=self.expected_rows),
                              lambda: ValidityReport(pd.DataFrame(columns=["Check", "Table", "Column", "Valid",
                                                                           "Violations", "Rows", "Details"])))
        self.one_way = timed("1-way TVD", 0.1, lambda: tvd_one_way(real, synthetic),
                             lambda: pd.DataFrame(columns=["Table", "Attribute", "TVD"]))
        self.two_way = timed("2-way TVD", 0.2, lambda: tvd_two_way(real, synthetic),
                             lambda: pd.DataFrame(columns=["Table", "Column 1", "Column 2", "TVD"]))
        fid = fidelity_summary(real, synthetic, one_way=self.one_way, two_way=self.two_way).set_index("Table")
        rc, sc = real.row_counts(), synthetic.row_counts()
        rows = []
        for t in s.tables:
            f = fid.loc[t.name] if t.name in fid.index else None
            rows.append({"Table": t.name, "Private": not t.public, "Real Rows": rc.get(t.name, 0),
                         "Synthetic Rows": sc.get(t.name, 0), "Attributes": len(t.attributes),
                         "Mean 1-way TVD": math.nan if f is None else f["Mean 1-way TVD"],
                         "Mean 2-way TVD": math.nan if f is None else f["Mean 2-way TVD"],
                         "Worst Pair": "" if f is None else f["Worst Pair"],
                         "Worst Pair TVD": math.nan if f is None else f["Worst Pair TVD"]})
        self.tables = pd.DataFrame(rows)
        self.degrees = timed("degrees", 0.3, lambda: {fk.name: compare_degrees(real, synthetic, fk)
                                                      for fk in s.foreign_keys}, dict)

        def sub(fraction: float, message: str) -> None:
            report_progress(progress, 0.4 + 0.6 * fraction, message)

        errors = timed("cross-table errors", 0.4, lambda: cross_table_errors(real, synthetic, k=self.k,
                                                                             progress=sub), list)
        self.cross_table = {e.name: e for e in errors}
        private = {fk.name for fk in s.private_foreign_keys}
        rows = []
        for fk in s.foreign_keys:
            d = self.degrees.get(fk.name)
            if d is None:
                d = DegreeComparison(fk, np.zeros(0, np.int64), np.zeros(0, np.int64), math.nan,
                                     self.errors.get("degrees", "not computed"))
            r, y = degree_stats(d.real), degree_stats(d.synthetic)
            e = self.cross_table.get(fk.name)
            note = d.error or ""
            if e is None and fk.name in private:
                note = (note + "; " if note else "") + self.errors.get("cross-table errors", "not computed")
            elif e is None:
                note = (note + "; " if note else "") + "public child: copied, not modelled"
            elif e.reason:
                note = (note + "; " if note else "") + e.reason
            rows.append({"Foreign Key": fk.name, "Child Table": fk.child, "Parent Table": fk.parent,
                         "Private": fk.name in private, "Degree Similarity": d.score,
                         "Real Max Degree": r["Max"], "Synthetic Max Degree": y["Max"],
                         "Real Mean Degree": r["Mean"], "Synthetic Mean Degree": y["Mean"],
                         "Real Zero Share": r["Zero share"], "Synthetic Zero Share": y["Zero share"],
                         "Workloads": 0 if e is None else e.n_workloads,
                         f"{self.k}-way Avg Error (%)": math.nan if e is None else e.average_pct,
                         f"{self.k}-way Max Error (%)": math.nan if e is None else e.maximum_pct,
                         "Note": note})
        self.foreign_keys = pd.DataFrame(rows)

        def links() -> dict[str, CrossTableError]:
            # every private table with exactly two FKs is also read as a many-to-many relation
            return {t: link_table_error(real, synthetic, t) for t in s.private_tables
                    if len(s.fks_from(t)) == 2}

        self.relations = timed("many-to-many errors", 0.95, links, dict)
        self.timings = timings
        report_progress(progress, 1.0, "relational report done")
        return self

    def _check(self) -> None:
        if self.tables is None:
            raise RuntimeError("call generate(real, synthetic) first")

    def summary(self, indent: str = "") -> str:
        """A few lines of text for a terminal, each prefixed with ``indent``."""
        self._check()
        assert self.tables is not None and self.foreign_keys is not None and self.validity is not None
        out = [f"relviz report{': ' + self.name if self.name else ''} (curator view, not private)",
               self.validity.summary()]
        out += [f"ERROR in {k}: {v}" for k, v in self.errors.items()]
        out.append("tables:")
        for r in self.tables.to_dict(orient="records"):
            line = (f"  {r['Table']:<12} {r['Real Rows']:>10,} real / {r['Synthetic Rows']:>10,} synthetic rows"
                    f"{'' if r['Private'] else ' (public)'}")
            if r["Attributes"]:
                line += (f"; 1-way TVD {r['Mean 1-way TVD']:.4f}, 2-way TVD {r['Mean 2-way TVD']:.4f}")
                if r["Worst Pair"]:
                    line += f" (worst {r['Worst Pair']}: {r['Worst Pair TVD']:.3f})"
            out.append(line)
        for e in self.relations.values():
            if e.n_workloads:
                out.append(f"many-to-many {e.name}: {self.k}-way error avg {e.average_pct:.1f}%, max "
                           f"{e.maximum_pct:.1f}% ({e.n_workloads} workloads)")
        out.append("foreign keys:")
        for r in self.foreign_keys.to_dict(orient="records"):
            line = f"  {r['Foreign Key']}: degree similarity {r['Degree Similarity']:.3f}"
            avg, mx = r[f"{self.k}-way Avg Error (%)"], r[f"{self.k}-way Max Error (%)"]
            if not math.isnan(avg):
                line += f"; {self.k}-way error avg {avg:.1f}%, max {mx:.1f}% ({r['Workloads']} workloads)"
            if r["Note"]:
                line += f" [{r['Note']}]"
            out.append(line)
        return "\n".join(indent + line for line in "\n".join(out).splitlines())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (NaN → ``None``): tables, foreign keys, validity, timings."""
        self._check()
        assert self.tables is not None and self.foreign_keys is not None and self.validity is not None
        rel = [{"relation": e.name, "workloads": e.n_workloads,
                f"{self.k}-way Avg Error (%)": e.average_pct, f"{self.k}-way Max Error (%)": e.maximum_pct}
               for e in self.relations.values()]
        return {"name": self.name, "k": self.k, "tables": _records(self.tables),
                "foreign_keys": _records(self.foreign_keys), "relations": [_json_safe(r) for r in rel],
                "validity": _json_safe(self.validity.to_dict()),
                "timings": _json_safe(self.timings), "errors": dict(self.errors)}
