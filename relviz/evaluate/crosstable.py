"""3-way cross-table marginal error per relation (docs/evaluation.md §7.1; Alimohammadi et al. §8).

For every cross-table k-way workload ``w = (S1, S2)`` (**all** workloads, in the order of
docs/methods/biadjacency.md §2.1), ``err_w = Σ_c |P_w(syn)(c) − P_w(real)(c)|`` (L1 = 2·TV) with each
side's marginal normalised by its own edge count; the relation's error is the average and the maximum
over workloads (also as percentages, the unit of the papers' plots). The computation is
:func:`relviz.marginals.cross_marginal_error` (shared with the relational methods); this module
only feeds it:

* for an FK ``child → parent`` table 1 is the child and table 2 the parent (the orientation of
  the one-to-many solver, docs/methods/biadjacency.md §1.3), edges ``(i, parent_index[i])`` over the
  child rows with a non-null, existing parent (a nullable FK uses its non-null links);
* for a many-to-many link table with two FKs, the edges join the two parents (one edge per link
  row), table 1 = the first FK's parent;
* codes are the public-domain codes of ``relviz.encoding``, held in the smallest unsigned dtype:
  the per-workload gathers then read ~8× less memory (nycflights13, 3 FKs, real + synthetic:
  ~10 s with int64 codes, ~4 s with uint8);
* memory: one workload's counts at a time, dense only up to
  :data:`relviz.marginals.DENSE_CELL_BUDGET` cells, else sparse group-by counts over the
  occupied cells (same numbers); ``per_workload["Sparse"]`` and :attr:`CrossTableError.n_sparse`
  say which (docs/evaluation.md, "Memory").

An edge whose child or parent has no attributes, or without any k-way workload or edge, gets NaN
with the reason.

Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import as_fk, codes, parent_index, report_progress
from relviz.marginals import cross_marginal_error
from relviz.progress import Progress
from relviz.schema import ForeignKey

__all__ = [
    "CrossTableError",
    "cross_table_error",
    "cross_table_error_codes",
    "cross_table_errors",
    "cross_table_summary",
    "link_table_error",
]


@dataclass(frozen=True)
class CrossTableError:
    """Cross-table k-way marginal error of one relation (docs/evaluation.md §7.1).

    Attributes:
        name: Relation name (FK name, or the link table's name).
        table1: Table 1 (the FK's child, or the first parent of a link table).
        table2: Table 2 (the FK's parent, or the second parent).
        k: Marginal order.
        average: Mean L1 error over all workloads (in [0, 2]; NaN when not computed).
        maximum: Max L1 error over all workloads.
        n_workloads: Number of workloads.
        m_real: Real edges used.
        m_synthetic: Synthetic edges used.
        per_workload: Frame ``Workload, Table 1 Attributes, Table 2 Attributes, Cells, Error,
            Sparse`` in the order of docs/methods/biadjacency.md §2.1 (empty when not computed);
            ``Sparse`` marks the workloads counted sparsely (more cells than the dense budget).
        reason: Why the error is NaN ("" otherwise).
        seconds: Wall time of the computation.
        n_sparse: Number of workloads counted sparsely.
    """

    name: str
    table1: str
    table2: str
    k: int
    average: float
    maximum: float
    n_workloads: int
    m_real: int
    m_synthetic: int
    per_workload: pd.DataFrame = field(repr=False)
    reason: str = ""
    seconds: float = 0.0
    n_sparse: int = 0

    @property
    def average_pct(self) -> float:
        """``100 · average`` (the papers' unit)."""
        return 100.0 * self.average

    @property
    def maximum_pct(self) -> float:
        """``100 · maximum``."""
        return 100.0 * self.maximum

    def to_dict(self) -> dict[str, Any]:
        """Summary as plain Python values (no per-workload rows)."""
        return {"name": self.name, "table1": self.table1, "table2": self.table2, "k": self.k,
                "average": self.average, "maximum": self.maximum, "average_pct": self.average_pct,
                "maximum_pct": self.maximum_pct, "n_workloads": self.n_workloads,
                "m_real": self.m_real, "m_synthetic": self.m_synthetic, "reason": self.reason,
                "seconds": self.seconds, "n_sparse": self.n_sparse}


def _empty(name: str, t1: str, t2: str, k: int, reason: str, m_real: int = 0, m_syn: int = 0) -> CrossTableError:
    frame = pd.DataFrame(columns=["Workload", "Table 1 Attributes", "Table 2 Attributes", "Cells", "Error",
                                  "Sparse"])
    return CrossTableError(name, t1, t2, k, math.nan, math.nan, 0, m_real, m_syn, frame, reason)


def cross_table_error_codes(
    real_codes1: np.ndarray,
    real_codes2: np.ndarray,
    real_edges: tuple[np.ndarray, np.ndarray],
    syn_codes1: np.ndarray,
    syn_codes2: np.ndarray,
    syn_edges: tuple[np.ndarray, np.ndarray],
    domains1: Sequence[int],
    domains2: Sequence[int],
    *,
    k: int = 3,
    names1: Sequence[str] | None = None,
    names2: Sequence[str] | None = None,
    name: str = "",
    table1: str = "table1",
    table2: str = "table2",
    dense_budget: int | None = None,
) -> CrossTableError:
    """Cross-table k-way error of a relation given as explicit edge lists (any relation type).

    Args:
        real_codes1: ``(n1, d1)`` non-negative integer codes of real table 1 (any integer dtype;
            the smallest unsigned dtype is fastest).
        real_codes2: ``(n2, d2)`` codes of real table 2 (the same matrix for a self-relation).
        real_edges: ``(e1, e2)`` int arrays of equal length ``m``: real edges (row ids).
        syn_codes1: ``(n1s, d1)`` codes of synthetic table 1.
        syn_codes2: ``(n2s, d2)`` codes of synthetic table 2.
        syn_edges: ``(e1, e2)`` synthetic edges.
        domains1: Public domain sizes of table 1's attributes.
        domains2: Public domain sizes of table 2's attributes.
        k: Marginal order (3 in the papers).
        names1: Attribute names of table 1 (for the per-workload labels; default ``a0, a1, …``).
        names2: Attribute names of table 2.
        name: Relation name.
        table1: Table-1 name (labels).
        table2: Table-2 name.
        dense_budget: Largest dense count array per workload, in cells (default
            :data:`relviz.marginals.DENSE_CELL_BUDGET`); larger workloads are counted sparsely.

    Returns:
        :class:`CrossTableError` (NaN with a reason when there is no workload or no edge).

    Raises:
        ValueError: on codes outside their domains or mismatched edge arrays.
    """
    t0 = time.perf_counter()
    e1r, e2r = (np.asarray(e, dtype=np.int64).reshape(-1) for e in real_edges)
    e1s, e2s = (np.asarray(e, dtype=np.int64).reshape(-1) for e in syn_edges)
    d1, d2 = len(domains1), len(domains2)
    names1 = list(names1) if names1 is not None else [f"a{i}" for i in range(d1)]
    names2 = list(names2) if names2 is not None else [f"b{i}" for i in range(d2)]
    if d1 == 0 or d2 == 0:
        return _empty(name, table1, table2, k, "a table of the relation has no attributes",
                      e1r.size, e1s.size)
    if d1 + d2 < k:
        return _empty(name, table1, table2, k, f"fewer than {k} attributes across the two tables",
                      e1r.size, e1s.size)
    if e1r.size == 0 or e1s.size == 0:
        which = "real" if e1r.size == 0 else "synthetic"
        return _empty(name, table1, table2, k, f"no {which} edges", e1r.size, e1s.size)
    rep = cross_marginal_error(real_codes1, real_codes2, e1r, e2r, syn_codes1, syn_codes2, e1s, e2s,
                               domains1, domains2, k, dense_budget=dense_budget)
    wls = rep.workloads
    sparse = np.zeros(len(wls), dtype=bool) if rep.sparse is None else np.asarray(rep.sparse, dtype=bool)
    s1 = [", ".join(names1[i] for i in w.S1) for w in wls]
    s2 = [", ".join(names2[j] for j in w.S2) for w in wls]
    frame = pd.DataFrame({"Workload": [f"{a} × {b}" for a, b in zip(s1, s2)],
                          "Table 1 Attributes": s1, "Table 2 Attributes": s2,
                          "Cells": np.array([w.size for w in wls], dtype=np.int64),
                          "Error": np.asarray(rep.per_workload, dtype=np.float64),
                          "Sparse": sparse})
    return CrossTableError(name, table1, table2, k, float(rep.average), float(rep.maximum), len(wls),
                           int(e1r.size), int(e1s.size), frame, "", time.perf_counter() - t0,
                           int(sparse.sum()))


def _edges(db: Database, fk: ForeignKey) -> tuple[np.ndarray, np.ndarray]:
    idx = parent_index(db, fk)
    child = np.flatnonzero(idx >= 0)
    return child, idx[child]


def cross_table_error(real: Database, synthetic: Database, fk: ForeignKey | str, *, k: int = 3) -> CrossTableError:
    """Cross-table k-way error of one FK ``child → parent`` (table 1 = child, table 2 = parent).

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        fk: The FK or its name.
        k: Marginal order.

    Returns:
        :class:`CrossTableError`; NaN with a reason when the child or the parent has no
        attributes (e.g. ``flights.carrier → airlines``), or there are no edges.
    """
    fk = as_fk(real.schema, fk)
    child, parent = real.schema.table(fk.child), real.schema.table(fk.parent)
    if not child.attributes or not parent.attributes:
        empty = fk.child if not child.attributes else fk.parent
        return _empty(fk.name, fk.child, fk.parent, k, f"{empty} has no attributes")
    rc, rp = codes(real, fk.child), codes(real, fk.parent)
    sc, sp = codes(synthetic, fk.child), codes(synthetic, fk.parent)
    return cross_table_error_codes(rc.codes, rp.codes, _edges(real, fk), sc.codes, sp.codes,
                                   _edges(synthetic, fk), rc.sizes, rp.sizes, k=k, names1=rc.attributes,
                                   names2=rp.attributes, name=fk.name, table1=fk.child, table2=fk.parent)


def link_table_error(real: Database, synthetic: Database, link_table: str,
                     fks: tuple[ForeignKey | str, ForeignKey | str] | None = None, *, k: int = 3) -> CrossTableError:
    """Cross-table k-way error of a many-to-many relation stored as a link table.

    Each link row with both FKs non-null and found is an edge between the two parents (the link
    table's own attributes are not part of the metric, docs/evaluation.md §7.1).

    Args:
        real: Real database.
        synthetic: Synthetic database.
        link_table: The link table (child of both FKs).
        fks: The two FKs (default: the link table's FKs, which must be exactly two).
        k: Marginal order.

    Returns:
        :class:`CrossTableError` with table 1 = the first FK's parent, table 2 = the second's.

    Raises:
        ValueError: when ``fks`` is not given and the link table does not have exactly two FKs,
            or an FK does not start at the link table.
    """
    s = real.schema
    pair = s.fks_from(link_table) if fks is None else tuple(as_fk(s, f) for f in fks)
    if len(pair) != 2:
        raise ValueError(f"{link_table!r} needs exactly two FKs to be a link table (found {len(pair)})")
    f1, f2 = pair
    if f1.child != link_table or f2.child != link_table:
        raise ValueError("both FKs must start at the link table")
    name = f"{link_table}: {f1.parent} ⟷ {f2.parent}"
    t1, t2 = s.table(f1.parent), s.table(f2.parent)
    if not t1.attributes or not t2.attributes:
        empty = t1.name if not t1.attributes else t2.name
        return _empty(name, t1.name, t2.name, k, f"{empty} has no attributes")

    def edges(db: Database) -> tuple[np.ndarray, np.ndarray]:
        a, b = parent_index(db, f1), parent_index(db, f2)
        ok = (a >= 0) & (b >= 0)
        return a[ok], b[ok]

    r1, r2 = codes(real, t1.name), codes(real, t2.name)
    s1, s2 = codes(synthetic, t1.name), codes(synthetic, t2.name)
    return cross_table_error_codes(r1.codes, r2.codes, edges(real), s1.codes, s2.codes, edges(synthetic),
                                   r1.sizes, r2.sizes, k=k, names1=r1.attributes, names2=r2.attributes,
                                   name=name, table1=t1.name, table2=t2.name)


def cross_table_errors(real: Database, synthetic: Database, *, fks: Sequence[ForeignKey | str] | None = None,
                       k: int = 3, progress: Progress | None = None) -> list[CrossTableError]:
    """:func:`cross_table_error` for every private FK (default) or the given FKs.

    Args:
        real: Real database.
        synthetic: Synthetic database.
        fks: FKs (default ``schema.private_foreign_keys``: FKs whose child is private).
        k: Marginal order.
        progress: Optional ``progress(fraction, message)`` callback, called per FK.

    Returns:
        One :class:`CrossTableError` per FK, in schema order. Errors in one FK are recorded as
        NaN with the exception text as reason, never raised.
    """
    todo = list(real.schema.private_foreign_keys if fks is None else (as_fk(real.schema, f) for f in fks))
    out = []
    for i, fk in enumerate(todo):
        report_progress(progress, i / max(len(todo), 1), f"cross-table error: {fk.label()}")
        try:
            out.append(cross_table_error(real, synthetic, fk, k=k))
        except Exception as e:  # noqa: BLE001 - record, do not raise
            out.append(_empty(fk.name, fk.child, fk.parent, k, f"{type(e).__name__}: {e}"))
    report_progress(progress, 1.0, "cross-table errors done")
    return out


def cross_table_summary(errors: Sequence[CrossTableError]) -> pd.DataFrame:
    """Frame ``Relation, Table 1, Table 2, Workloads, Real Edges, Synthetic Edges, Average Error (%),
    Max Error (%), Reason`` — one row per relation."""
    return pd.DataFrame([{"Relation": e.name, "Table 1": e.table1, "Table 2": e.table2,
                          "Workloads": e.n_workloads, "Real Edges": e.m_real, "Synthetic Edges": e.m_synthetic,
                          "Average Error (%)": e.average_pct, "Max Error (%)": e.maximum_pct,
                          "Reason": e.reason} for e in errors],
                        columns=["Relation", "Table 1", "Table 2", "Workloads", "Real Edges",
                                 "Synthetic Edges", "Average Error (%)", "Max Error (%)", "Reason"])
