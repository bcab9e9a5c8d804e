"""Validity of a (synthetic) database against its schema (docs/evaluation.md §6).

Checks, each one row of a tidy frame: primary keys non-null and unique; every non-null FK value
exists in its parent (and a non-nullable FK has no nulls); every attribute value inside its public
domain (``relviz.encoding.column_problems``: declared categories, public bounds, nulls only where
nullable); row counts as given. Every relviz output must score 1.0: a failure is a bug, not a low
score. Nothing is raised; a check that cannot run (missing column) fails with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.encoding import column_problems
from relviz.evaluate._common import parent_index

__all__ = ["ValidityReport", "validity"]

COLUMNS = ["Check", "Table", "Column", "Valid", "Violations", "Rows", "Details"]


@dataclass(frozen=True)
class ValidityReport:
    """Result of :func:`validity`.

    Attributes:
        checks: Frame ``Check, Table, Column, Valid, Violations, Rows, Details`` (one row per check).
    """

    checks: pd.DataFrame

    @property
    def score(self) -> float:
        """Share of checks passed: 1.0 exactly when the database is valid."""
        return float(self.checks["Valid"].mean()) if len(self.checks) else 1.0

    @property
    def valid(self) -> bool:
        """Whether every check passed."""
        return bool(self.checks["Valid"].all())

    def failures(self) -> pd.DataFrame:
        """The failed checks only."""
        return self.checks[~self.checks["Valid"]].reset_index(drop=True)

    def summary(self) -> str:
        """One line, plus one line per failed check."""
        head = f"validity {self.score:.3f}: {int(self.checks['Valid'].sum())}/{len(self.checks)} checks passed"
        lines = [head]
        for r in self.failures().itertuples(index=False):
            where = f"{r.Table}.{r.Column}" if r.Column else r.Table
            lines.append(f"  FAIL {r.Check} [{where}]: {r.Violations:,} violation(s) {r.Details}".rstrip())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python summary (score, valid, failed checks)."""
        return {"score": self.score, "valid": self.valid, "checks": len(self.checks),
                "failures": self.failures().to_dict(orient="records")}


def _row(check: str, table: str, column: str, violations: int, rows: int, details: str = "") -> dict[str, Any]:
    return {"Check": check, "Table": table, "Column": column, "Valid": violations == 0,
            "Violations": int(violations), "Rows": int(rows), "Details": details}


def _examples(values: pd.Series | np.ndarray) -> str:
    vals = pd.unique(pd.Series(values).astype(object))[:5]
    return "e.g. " + ", ".join(map(str, vals)) if len(vals) else ""


def validity(db: Database, *, expected_rows: Mapping[str, int] | None = None) -> ValidityReport:
    """Run every validity check of docs/evaluation.md §6 on ``db``.

    Args:
        db: The database (typically synthetic; build it with ``validate=False`` to inspect an
            invalid one).
        expected_rows: ``{table: rows}`` planned row counts (checked when given).

    Returns:
        :class:`ValidityReport` (score 1.0 when valid).
    """
    s = db.schema
    rows: list[dict[str, Any]] = []
    for t in s.tables:
        if t.name not in db:
            rows.append(_row("Table present", t.name, "", 1, 0, "declared table has no data"))
            continue
        df = db[t.name]
        n = len(df)
        if t.primary_key:
            key = ", ".join(t.primary_key)
            missing = [c for c in t.primary_key if c not in df.columns]
            if missing:
                rows.append(_row("Primary key non-null", t.name, key, n or 1, n, f"missing column(s) {missing}"))
                rows.append(_row("Primary key unique", t.name, key, n or 1, n, f"missing column(s) {missing}"))
            else:
                kf = df[list(t.primary_key)]
                null = kf.isna().any(axis=1).to_numpy()
                rows.append(_row("Primary key non-null", t.name, key, int(null.sum()), n))
                dup = kf[~null].duplicated(keep=False)
                rows.append(_row("Primary key unique", t.name, key, int(dup.sum()), n,
                                 _examples(kf[~null][dup.to_numpy()].iloc[:, 0]) if dup.any() else ""))
        for a in t.attributes:
            if a.name not in df.columns:
                rows.append(_row("Inside public domain", t.name, a.name, n or 1, n, "missing column"))
                continue
            probs = column_problems(a, df[a.name], t.name)
            bad = sum(int(p.count or 0) for p in probs)
            details = "; ".join(f"{p.message}" + (f" ({', '.join(map(str, p.examples))})" if p.examples else "")
                                for p in probs)
            rows.append(_row("Inside public domain", t.name, a.name, bad, n, details))
        if expected_rows is not None and t.name in expected_rows:
            want = int(expected_rows[t.name])
            rows.append(_row("Row count", t.name, "", abs(n - want), n,
                             "" if n == want else f"{n:,} rows, {want:,} planned"))
    for fk in s.foreign_keys:
        col = ", ".join(fk.columns)
        if fk.child not in db or fk.parent not in db:
            continue
        child = db[fk.child]
        if any(c not in child.columns for c in fk.columns) or any(
                c not in db[fk.parent].columns for c in fk.parent_columns):
            rows.append(_row("Foreign key exists", fk.child, col, len(child) or 1, len(child), "missing column"))
            continue
        null = child[list(fk.columns)].isna().any(axis=1).to_numpy()
        try:
            idx = parent_index(db, fk)
        except Exception as e:  # noqa: BLE001 - a check that cannot run fails with the reason
            rows.append(_row("Foreign key exists", fk.child, col, len(child) or 1, len(child),
                             f"{type(e).__name__}: {e}"))
            continue
        orphan = (idx < 0) & ~null
        rows.append(_row("Foreign key exists", fk.child, col, int(orphan.sum()), len(child),
                         (f"no {fk.parent} row; " + _examples(child.loc[orphan, fk.columns[0]]))
                         if orphan.any() else ""))
        if not fk.nullable:
            rows.append(_row("Foreign key non-null", fk.child, col, int(null.sum()), len(child)))
    return ValidityReport(pd.DataFrame(rows, columns=COLUMNS))
