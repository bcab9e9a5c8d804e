"""Sensitivities under the privacy unit: the entity's multipliers, and cap enforcement.

Entity unit (spec/privlava.md §1.3, §10.3–10.4): neighbours differ by one tuple of the protected
entity table ``R_0`` and every tuple depending on it. With the public group-size caps ``τ_e``:

* ``r(R)``: tuples of ``R`` removed — ``r(R_0) = 1``, ``r(public) = 0``,
  ``r(R) = Σ_{e = R→X, X private} τ_e · r(X)`` (parents first);
* ``x(e)``: tuples of the child of ``e`` removed although their ``e``-parent survives —
  ``r(R)`` if the parent is public, else ``Σ_{e' ≠ e from R, private target} τ_{e'} r(target)``;
* ``m(R)``: surviving tuples of ``R`` whose columns may change — ``Σ_{e into R} g_mod(e)``
  (children first);
* ``g_rem(e) = r(parent)``; ``g_mod(e) = x(e) + m(child)``.

Sensitivity multipliers ("strict" mode is the default: a modified tuple or group moves mass
from one cell to another, √2 in L2, 2 in L1; "paper" mode drops those factors, §10.4):

=========================================  =====================  =================
query                                      paper                  strict
=========================================  =====================  =================
histograms of one table (marginals)        ``r + m``              ``r + √2·m``
scores of one table (L1 distances)         ``r + m``              ``r + 2·m``
group-size (degree) histogram of an FK     ``g_rem + g_mod``      ``g_rem + √2·g_mod``
=========================================  =====================  =================

and, relviz's addition, the per-parent child counts of an FK to a *public* parent (parent
identities are public, so the vector of children per parent can be released): removing the
closure removes ``x(e) = r(child)`` child tuples whose parents survive, so the L2 sensitivity is
``x(e)`` (all of them may share one parent).

Row unit (spec/relational-biadjacency.md §1.4): neighbours change one row of one private table
(its values and its relationships, each row having at most ``τ_e`` children through ``e``); table
sizes are public. Then a table histogram has L2 sensitivity √2 (one row moves between cells),
a score 2, per-parent counts to a public parent √2 (one child moves), and a degree histogram of an
FK with a private parent √2·(2τ_e + 1) (the changed row's own group and up to 2τ_e other groups
each move one bin; triangle inequality over groups).

Cap enforcement (:func:`enforce_caps`) makes the caps true before anything is measured. For an
FK whose parent is the entity, either the surplus children beyond ``τ`` are dropped (default;
kept in a data-independent order, a salted hash of the row position) or the parents over the cap
are removed with their dependants (the paper's rule, ``PrivacyUnit(truncate="parents")``). Both
are stable (spec/privlava.md §1.4): a neighbour removes a whole group, so which children of the
other groups survive does not change. For other capped FKs the surplus children are dropped the
same way, which is not stable (a child beyond the cap can slide in when another is removed): the
DP guarantee then holds for the truncated database, and the report says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relviz.database import Database, drop_rows
from relviz.errors import SchemaError
from relviz.schema import ForeignKey, PrivacyUnit, Schema

__all__ = ["Multipliers", "multipliers", "enforce_caps", "CapReport"]


@dataclass(frozen=True)
class Multipliers:
    """Sensitivity multipliers of a schema under its privacy unit.

    Multiply a mechanism's own add/remove-one-row sensitivity by the matching multiplier.
    """

    unit: PrivacyUnit
    schema: Schema
    r: dict[str, int]
    m: dict[str, int]
    x: dict[str, int]
    g_rem: dict[str, int]
    g_mod: dict[str, int]

    @property
    def strict(self) -> bool:
        return self.unit.accounting == "strict"

    def table_histogram(self, table: str) -> float:
        """L2 multiplier for histogram queries (marginals, totals) on ``table``."""
        if self.unit.entity is None:
            return math.sqrt(2.0)
        r, m = self.r[table], self.m[table]
        return r + (math.sqrt(2.0) if self.strict else 1.0) * m

    def table_score(self, table: str) -> float:
        """Multiplier for score queries (L1 distances between a marginal and a fixed model)."""
        if self.unit.entity is None:
            return 2.0
        r, m = self.r[table], self.m[table]
        return r + (2.0 if self.strict else 1.0) * m

    def degree_histogram(self, fk: str) -> float:
        """L2 sensitivity of the histogram of group sizes (children per parent) of ``fk``."""
        if self.unit.entity is None:
            tau = self.unit.caps.get(fk)
            if tau is None:
                raise SchemaError(f"FK {fk!r} needs a degree cap for the row-level unit")
            return math.sqrt(2.0) * (2 * int(tau) + 1)
        return self.g_rem[fk] + (math.sqrt(2.0) if self.strict else 1.0) * self.g_mod[fk]

    def parent_counts(self, fk: str) -> float:
        """L2 sensitivity of the vector of children per (public) parent of ``fk``."""
        if self.unit.entity is None:
            return math.sqrt(2.0)
        return float(max(self.x[fk], 0))

    def edges_changed(self, fk: str) -> int:
        """Most relationships of ``fk`` one neighbour can change (``d`` of the bi-adjacency spec)."""
        if self.unit.entity is None:
            return int(self.unit.caps.get(fk, 1))
        child = self.schema.foreign_key(fk).child
        return int(self.r[child] + self.m[child]) or 1

    def table_frame(self) -> pd.DataFrame:
        """Tidy view for reports: one row per table with r, m and both multipliers."""
        rows = [{"table": t, "removed r": self.r.get(t, 0), "modified m": self.m.get(t, 0),
                 "histogram": self.table_histogram(t), "score": self.table_score(t)}
                for t in self.schema.private_tables]
        return pd.DataFrame(rows)


def multipliers(schema: Schema) -> Multipliers:
    """Compute the §10.4 quantities of ``schema`` under its privacy unit (public, no data).

    Raises:
        SchemaError: if the schema has no privacy unit, a cycle, or a capless FK on a path to the
            entity.
    """
    unit = schema.privacy_unit
    if unit is None:
        raise SchemaError("the schema has no privacy unit")
    order = schema.topological_order()
    private = set(schema.private_tables)
    r = {t: 0 for t in schema.table_names}
    m = {t: 0 for t in schema.table_names}
    x: dict[str, int] = {}
    g_rem: dict[str, int] = {}
    g_mod: dict[str, int] = {}
    if unit.entity is None:
        for fk in schema.foreign_keys:
            x[fk.name] = g_rem[fk.name] = g_mod[fk.name] = 0
        return Multipliers(unit, schema, r, m, x, g_rem, g_mod)

    def cap(fk: ForeignKey) -> int:
        if fk.name not in unit.caps:
            raise SchemaError(f"FK {fk.name!r} is on a path to the protected entity and needs a cap τ")
        return int(unit.caps[fk.name])

    for t in order:  # parents first
        if t == unit.entity:
            r[t] = 1
        elif t in private:
            r[t] = sum(cap(fk) * r[fk.parent] for fk in schema.fks_from(t)
                       if fk.parent in private and not fk.self_referential)
    for fk in schema.foreign_keys:
        if fk.child not in private:
            x[fk.name] = 0
        elif fk.parent not in private:
            x[fk.name] = r[fk.child]
        else:
            x[fk.name] = sum(cap(o) * r[o.parent] for o in schema.fks_from(fk.child)
                             if o.name != fk.name and o.parent in private and not o.self_referential)
        g_rem[fk.name] = r[fk.parent] if fk.parent in private else 0
    for t in reversed(order):  # children first: m(t) needs g_mod of every edge into t
        m[t] = sum(g_mod.get(fk.name, 0) for fk in schema.fks_into(t)
                   if not fk.self_referential) if t in private else 0
        for fk in schema.fks_from(t):
            g_mod[fk.name] = x[fk.name] + m[t]
    return Multipliers(unit, schema, r, m, x, g_rem, g_mod)


@dataclass(frozen=True)
class CapReport:
    """What :func:`enforce_caps` removed (a curator view: counts of private rows).

    Attributes:
        rows: Frame with ``fk, cap, action, parents_over_cap, rows_removed, stable``.
    """

    rows: pd.DataFrame

    @property
    def changed(self) -> bool:
        return bool(len(self.rows) and self.rows["rows_removed"].sum() > 0)

    @property
    def stable(self) -> bool:
        """False when a non-stable truncation changed the data (guarantee w.r.t. truncated DB)."""
        if not self.changed:
            return True
        sub = self.rows[self.rows["rows_removed"] > 0]
        return bool(sub["stable"].all())

    def __str__(self) -> str:
        if not self.changed:
            return "every degree cap holds: nothing truncated"
        out = []
        for r in self.rows[self.rows["rows_removed"] > 0].itertuples():
            out.append(f"{r.fk}: τ = {r.cap}, {r.parents_over_cap:,} parent(s) over the cap, "
                       f"{r.action}: {r.rows_removed:,} row(s) removed"
                       + ("" if r.stable else " (not stable: guarantee w.r.t. the truncated data)"))
        return "\n".join(out)


def _salted_rank(n: int, salt: int) -> np.ndarray:
    """A data-independent pseudo-random order of row positions (splitmix64 of position ⊕ salt)."""
    z = (np.arange(n, dtype=np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def enforce_caps(db: Database, *, salt: int = 0x5EED) -> tuple[Database, CapReport]:
    """Make every degree cap of the privacy unit true (see the module docstring).

    Returns:
        ``(truncated database, report)``; ``db`` is unchanged.
    """
    from relviz.relational.biadjacency.clipping import rank_within_groups  # (import cycle)

    schema = db.schema
    unit = schema.privacy_unit
    rows = []
    if unit is None:
        return db, CapReport(pd.DataFrame(rows))
    for fk_name, tau in unit.caps.items():
        fk = schema.foreign_key(fk_name)
        if schema.table(fk.child).public:
            continue
        idx = db.parent_index(fk)
        deg = np.bincount(idx[idx >= 0], minlength=len(db[fk.parent]))
        over = deg > tau
        entity_parent = unit.entity is not None and fk.parent == unit.entity
        if entity_parent and unit.truncate == "parents":
            removed = int(over.sum() + deg[over].sum())
            db = drop_rows(db, fk.parent, over) if over.any() else db
            rows.append({"fk": fk.name, "cap": tau, "action": "removed parents over the cap "
                         "with their dependants", "parents_over_cap": int(over.sum()),
                         "rows_removed": removed, "stable": True})
        else:
            keep = np.ones(len(idx), dtype=bool)
            if over.any():
                # rank children within their parent in a public salted order, keep the first τ
                # (the clipping of spec/relational-biadjacency.md §1.5 with a public permutation)
                order = np.argsort(_salted_rank(len(idx), salt), kind="stable")
                rank = np.empty(len(idx), dtype=np.int64)
                rank[order] = rank_within_groups(idx[order])
                keep = (rank < tau) | (idx < 0)
                db = drop_rows(db, fk.child, ~keep)
            rows.append({"fk": fk.name, "cap": tau, "action": "dropped surplus children",
                         "parents_over_cap": int(over.sum()), "rows_removed": int((~keep).sum()),
                         "stable": entity_parent})
    return db, CapReport(pd.DataFrame(rows, columns=["fk", "cap", "action", "parents_over_cap",
                                                     "rows_removed", "stable"]))
