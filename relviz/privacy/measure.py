"""The one place where private rows are read.

Every count over private rows that a mechanism needs (marginals of a table, degrees and degree
histograms of a foreign key, per-parent child counts, cross-table contingency counts along a
foreign key) is a group-by count computed here, on integer codes over public domains, and logged
in a :class:`ReadLog`. Mechanisms receive :class:`PrivateTable` / :class:`PrivateForeignKey`
handles, never frames; model fitting and sampling work on noisy summaries only
(docs/privacy.md, "Where private data is read"). The counts are computed by a
:class:`~relviz.privacy.backends.CountBackend`: numpy ``bincount``s in memory by default, or the
same GROUP BY queries in DuckDB or Spark (``Curator(db, backend="duckdb")``), with the same
answers; only the place where the counting happens changes.

Reading is not releasing: every exact count returned here must only reach the outside world
through an accounted mechanism (``relviz.privacy.mechanisms``). Tests check that sampling reads
nothing and that every read happens inside ``fit``. A number shown to the curator that was read
here or from the real data without noise carries the label :data:`CURATOR_VIEW`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relviz.database import Database, drop_rows
from relviz.encoding import EncodedTable, encode_table
from relviz.marginals import Workload, all_marginals
from relviz.privacy.backends import CountBackend, Cross, PandasBackend, get_backend
from relviz.schema import ForeignKey

__all__ = ["Read", "ReadLog", "PrivateTable", "PrivateForeignKey", "PrivateLink", "Curator",
           "CapReport", "enforce_caps", "keyed_row_hash", "splitmix64", "CURATOR_VIEW"]

CURATOR_VIEW = "curator view (not private)"
"""Label of every number read from private data that is not a noisy release: degree views, row
counts, comparisons and their figures (docs/privacy.md, docs/evaluation.md)."""


@dataclass(frozen=True)
class Read:
    """One group-by count over private rows."""

    target: str
    query: str
    rows: int
    at: float = field(default_factory=time.time)


class ReadLog:
    """Append-only, thread-safe log of private reads."""

    def __init__(self) -> None:
        self._reads: list[Read] = []
        self._lock = threading.Lock()

    def add(self, target: str, query: str, rows: int) -> None:
        with self._lock:
            self._reads.append(Read(target, query, rows))

    @property
    def reads(self) -> tuple[Read, ...]:
        with self._lock:
            return tuple(self._reads)

    def __len__(self) -> int:
        return len(self._reads)

    def __getstate__(self) -> dict:  # pickled without its lock (a fresh one on load)
        return {"_reads": self.reads}

    def __setstate__(self, state: dict) -> None:
        self._reads = list(state["_reads"])
        self._lock = threading.Lock()


class PrivateTable:
    """Handle on a private table's codes: public metadata plus logged group-by counts.

    Attributes:
        name: Table name.
        attributes: Attribute names (public).
        sizes: Domain sizes (public).
    """

    def __init__(self, enc: EncodedTable, log: ReadLog, backend: CountBackend | None = None) -> None:
        self._enc = enc
        self._log = log
        self._backend = backend or PandasBackend()
        self.name = enc.name
        self.attributes = enc.attributes
        self.sizes = enc.sizes

    def domain(self) -> dict[str, int]:
        return dict(zip(self.attributes, self.sizes))

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Exact counts of the marginal on ``attrs``: shape ``(Π sizes,)`` float64, C order."""
        attrs = tuple(attrs)
        cols = [self.attributes.index(a) for a in attrs]
        sizes = [self.sizes[c] for c in cols]
        self._log.add(self.name, f"marginal{attrs}", self._enc.n_rows)
        return self._backend.marginal(self._enc.codes, cols, sizes).astype(np.float64)

    def total(self) -> int:
        """Exact row count (a read: only ever released through a mechanism)."""
        self._log.add(self.name, "count(*)", self._enc.n_rows)
        return self._enc.n_rows


class PrivateForeignKey:
    """Handle on a private foreign key: degrees, degree histograms, cross-table counts.

    Attributes:
        fk: The foreign key.
        n_parent: Number of parent rows (public when the parent is public; otherwise only used
            as an array length, never released).
        parent_attributes: For an FK to a public parent whose public attributes were copied
            into the child (``relviz.relational.parent_attributes``), their codes on the parent
            rows, ``(n_parent, a)`` (public); else ``None``.
    """

    def __init__(self, fk: ForeignKey, parent_index: np.ndarray, n_parent: int,
                 child: EncodedTable, parent: EncodedTable | None, log: ReadLog,
                 backend: CountBackend | None = None) -> None:
        self.fk = fk
        self.parent_attributes: EncodedTable | None = None  # public; set by Curator.foreign_key
        self._idx = np.asarray(parent_index, dtype=np.int64)
        self.n_parent = int(n_parent)
        self._child = child
        self._parent = parent
        self._log = log
        self._backend = backend or PandasBackend()

    def degrees(self) -> np.ndarray:
        """Exact children per parent row, ``(n_parent,)`` int64 (0 included)."""
        self._log.add(self.fk.name, "degrees", len(self._idx))
        return self._backend.parent_counts(self._idx, self.n_parent)[:-1]

    def degree_histogram(self, cap: int, edges: np.ndarray | None = None) -> np.ndarray:
        """Exact number of parents per degree bin (degrees above ``cap`` count in the last bin).

        Args:
            cap: τ.
            edges: Public bin starts ``0 = e_0 < e_1 < … ≤ cap`` (bin ``k`` holds degrees
                ``e_k … e_{k+1} − 1``); default one bin per degree ``0…cap``.

        Returns:
            ``(len(edges),)`` (default ``(cap + 1,)``) float64.
        """
        deg = np.minimum(self.degrees(), cap)
        if edges is None:
            return np.bincount(deg, minlength=cap + 1).astype(np.float64)
        b = np.searchsorted(np.asarray(edges), deg, side="right") - 1
        return np.bincount(b, minlength=len(edges)).astype(np.float64)

    def child_rows(self) -> int:
        """Number of child rows (a read; a public fact only under row-level units, where table
        sizes are public)."""
        self._log.add(self.fk.name, "count(*) of the child table", len(self._idx))
        return len(self._idx)

    def parent_counts(self) -> np.ndarray:
        """Exact children per parent, then the number of children with a null FK:
        shape ``(n_parent + 1,)`` float64."""
        self._log.add(self.fk.name, "children per parent", len(self._idx))
        return self._backend.parent_counts(self._idx, self.n_parent).astype(np.float64)

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact edge list ``(child rows, parent rows)`` of non-null links (for relational
        mechanisms that only derive group-by counts from it)."""
        self._log.add(self.fk.name, "edge list", len(self._idx))
        keep = np.flatnonzero(self._idx >= 0)
        return keep, self._idx[keep]

    def cross_marginal(self, child_attrs: Sequence[str], parent_attrs: Sequence[str]) -> np.ndarray:
        """Exact counts of (child attrs, parent attrs) over the non-null links, C order."""
        if self._parent is None:
            raise ValueError(f"{self.fk.name}: parent codes are not available")
        self._log.add(self.fk.name, f"cross{tuple(child_attrs)}x{tuple(parent_attrs)}", len(self._idx))
        cc = tuple(self._child.attributes.index(a) for a in child_attrs)
        pc = tuple(self._parent.attributes.index(a) for a in parent_attrs)
        sizes = tuple(self._child.sizes[c] for c in cc) + tuple(self._parent.sizes[c] for c in pc)
        [counts] = self._backend.cross(self._child.codes, self._parent.codes, self._idx,
                                       [Cross(cc, pc, sizes)])
        return counts.astype(np.float64)

    def link_count(self) -> int:
        """Exact number of non-null links (a read; public in the bi-adjacency paper, Alimohammadi et al. §2.2;
        docs/methods/biadjacency.md §1.4)."""
        self._log.add(self.fk.name, "count(non-null links)", len(self._idx))
        return int((self._idx >= 0).sum())

    def workload_marginals(self, workloads: Sequence[Workload], *, normalise: bool = True
                           ) -> list[np.ndarray]:
        """Exact cross-table marginals (child attributes × parent attributes) of ``workloads`` over
        the non-null links, normalised by the link count (docs/methods/biadjacency.md §2.4).

        Args:
            workloads: :class:`~relviz.marginals.Workload` objects (S1 indexes
                child attributes, S2 parent attributes).

        Returns:
            One ``(C1·C2,)`` float64 array per workload, C order.
        """
        if self._parent is None:
            raise ValueError(f"{self.fk.name}: parent codes are not available")
        self._log.add(self.fk.name, f"cross-table marginals ({len(workloads)} workloads)", len(self._idx))
        norm = float(max(int((self._idx >= 0).sum()), 1)) if normalise else 1.0
        counts = self._backend.cross(self._child.codes, self._parent.codes, self._idx,
                                     [Cross(w.S1, w.S2, (*w.dims1, *w.dims2)) for w in workloads])
        return [c.astype(np.float64) / norm for c in counts]


class PrivateLink:
    """Handle on a many-to-many relation through a link table with two foreign keys.

    The relation's edges are the *distinct* pairs (row of parent 1, row of parent 2) over the link
    rows whose two FKs are non-null (docs/methods/biadjacency.md §1.2, §6.1).

    Attributes:
        fk1, fk2: The link table's foreign keys (to table 1 and table 2).
        n1, n2: Row counts of the two parent tables.
    """

    def __init__(self, fk1: ForeignKey, fk2: ForeignKey, idx1: np.ndarray, idx2: np.ndarray,
                 enc1: EncodedTable, enc2: EncodedTable, log: ReadLog) -> None:
        self.fk1, self.fk2 = fk1, fk2
        keep = (idx1 >= 0) & (idx2 >= 0)
        pairs = np.unique(np.stack([idx1[keep], idx2[keep]], axis=1), axis=0) if keep.any() \
            else np.zeros((0, 2), dtype=np.int64)
        self._e1, self._e2 = pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)
        self._enc1, self._enc2 = enc1, enc2
        self.n1, self.n2 = enc1.n_rows, enc2.n_rows
        self._log = log
        self.name = fk1.child

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact distinct pairs (a read)."""
        self._log.add(self.name, "edge list (distinct pairs)", len(self._e1))
        return self._e1, self._e2

    def link_count(self) -> int:
        """Exact number of distinct pairs (public in the bi-adjacency method)."""
        self._log.add(self.name, "count(distinct pairs)", len(self._e1))
        return len(self._e1)

    def workload_marginals(self, workloads: Sequence[Workload], *, normalise: bool = True
                           ) -> list[np.ndarray]:
        """Exact cross-table marginals of ``workloads`` over the distinct pairs, normalised by
        their number."""
        self._log.add(self.name, f"cross-table marginals ({len(workloads)} workloads)", len(self._e1))
        m = max(len(self._e1), 1)
        return all_marginals(self._enc1.codes, self._enc2.codes, self._e1, self._e2, list(workloads),
                             normalise_by=float(m) if normalise else 1.0)


@dataclass(frozen=True)
class CapReport:
    """What :func:`enforce_caps` did (a curator view: counts of private rows).

    Attributes:
        rows: Frame with ``fk, cap, action, parents_over_cap, rows_removed, stable``; ``stable``
            is the public, schema-level property of :func:`~relviz.privacy.sensitivity.truncation_stable`
            (the same whether or not rows were removed).
    """

    rows: pd.DataFrame

    @property
    def changed(self) -> bool:
        return bool(len(self.rows) and self.rows["rows_removed"].sum() > 0)

    @property
    def stable(self) -> bool:
        """Whether every cap enforcement of the schema is stable (decided from the schema, so
        that publishing it reveals nothing about the data)."""
        return bool(self.rows["stable"].all()) if len(self.rows) else True

    def __str__(self) -> str:
        if not self.changed:
            return "every degree cap holds: nothing truncated"
        out = []
        for r in self.rows[self.rows["rows_removed"] > 0].itertuples():
            out.append(f"{r.fk}: τ = {r.cap}, {r.parents_over_cap:,} parent(s) over the cap, "
                       f"{r.action}: {r.rows_removed:,} row(s) removed"
                       + ("" if r.stable else " (not stable: guarantee w.r.t. the truncated data)"))
        return "\n".join(out)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser (Steele, Lea, Flood 2014), a bijective mix of uint64."""
    z = z * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def keyed_row_hash(df: pd.DataFrame, columns: Sequence[str], salt: int) -> np.ndarray:
    """Keyed hash of each row's values in ``columns`` (all columns when empty).

    pandas' ``hash_pandas_object`` hashes the values (its key only reaches text columns), then
    the splitmix64 finaliser mixes in the public ``salt``. A function of the row's own values
    only, so the order it induces within a group does not depend on any other row (what makes
    cap enforcement stable).

    Returns:
        ``(len(df),)`` uint64.
    """
    cols = list(columns) or list(df.columns)
    return salted(pd.util.hash_pandas_object(df[cols], index=False).to_numpy().astype(np.uint64), salt)


def salted(row_hash: np.ndarray, salt: int) -> np.ndarray:
    """The keyed hash of :func:`keyed_row_hash` from the rows' unsalted ``hash_pandas_object``
    values ``row_hash`` (``(n,)`` uint64): the public ``salt`` mixed in by splitmix64, twice."""
    with np.errstate(over="ignore"):
        return splitmix64(splitmix64(np.asarray(row_hash, dtype=np.uint64)
                                     ^ np.uint64(int(salt) & 0xFFFFFFFFFFFFFFFF)))


def enforce_caps(db: Database, *, salt: int = 0x5EED) -> tuple[Database, CapReport]:
    """Make every degree cap of the privacy unit true (``relviz.privacy.sensitivity``, Truncation).

    For each capped FK with a private child, each parent keeps the τ children that come first in
    the keyed hash of their primary key (of all their columns when the table has none); ties,
    which need equal keys, keep the stored order. With ``PrivacyUnit(truncate="parents")`` an FK
    whose parent is the entity instead loses the parents over the cap with their dependants.

    Args:
        db: The private database (unchanged); an out-of-core
            :class:`~relviz.source.EncodedDatabase` is truncated on its codes, with the same rows
            kept.
        salt: Public key of the hash.

    Returns:
        ``(truncated database, report)``.
    """
    # an out-of-core relviz.source.EncodedDatabase is truncated on its arrays
    state = db.truncation_state() if hasattr(db, "truncation_state") else _FrameState(db)
    report = truncate_to_caps(db.schema, state, salt)
    return state.result(), report


class _FrameState:
    """A :class:`Database` as :func:`truncate_to_caps` reads and truncates it."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def parent_index(self, fk: ForeignKey) -> np.ndarray:
        return self.db.parent_index(fk)

    def n_rows(self, name: str) -> int:
        return len(self.db[name])

    def row_keys(self, name: str, salt: int) -> np.ndarray:
        return keyed_row_hash(self.db[name], self.db.schema.table(name).primary_key, salt)

    def drop(self, name: str, mask: np.ndarray) -> None:
        self.db = drop_rows(self.db, name, mask)

    def result(self) -> Database:
        return self.db


def truncate_to_caps(schema, state, salt: int) -> CapReport:  # noqa: ANN001 - Schema, a state
    """The cap enforcement of :func:`enforce_caps` on ``state``, a database being truncated in
    place: ``parent_index(fk)``, ``n_rows(table)``, ``row_keys(table, salt)`` (the keyed hash of
    :func:`keyed_row_hash`) and ``drop(table, mask)`` (rows and, transitively, their dependants).
    Shared by the in-memory :class:`Database` and the out-of-core
    :class:`~relviz.source.EncodedDatabase`, so both keep the same rows. Returns the report."""
    from relviz.privacy.ranking import rank_within_groups
    from relviz.privacy.sensitivity import truncation_stable

    unit = schema.privacy_unit
    rows: list[dict] = []
    if unit is None:
        return CapReport(pd.DataFrame(rows, columns=_CAP_COLUMNS))
    stable = truncation_stable(schema)
    for fk_name, tau in unit.caps.items():
        fk = schema.foreign_key(fk_name)
        if schema.table(fk.child).public:
            continue
        idx = state.parent_index(fk)
        deg = np.bincount(idx[idx >= 0], minlength=state.n_rows(fk.parent))
        over = deg > tau
        entity_parent = unit.entity is not None and fk.parent == unit.entity
        if entity_parent and unit.truncate == "parents":
            removed = int(over.sum() + deg[over].sum())
            if over.any():
                state.drop(fk.parent, over)
            rows.append({"fk": fk.name, "cap": tau, "action": "removed parents over the cap "
                         "with their dependants", "parents_over_cap": int(over.sum()),
                         "rows_removed": removed, "stable": stable[fk.name]})
            continue
        keep = np.ones(len(idx), dtype=bool)
        if over.any():
            key = state.row_keys(fk.child, salt)
            order = np.lexsort((np.arange(len(idx)), key))  # by hash, ties in stored order
            rank = np.empty(len(idx), dtype=np.int64)
            rank[order] = rank_within_groups(idx[order])
            keep = (rank < tau) | (idx < 0)
            state.drop(fk.child, ~keep)
        rows.append({"fk": fk.name, "cap": tau, "action": "dropped surplus children",
                     "parents_over_cap": int(over.sum()), "rows_removed": int((~keep).sum()),
                     "stable": stable[fk.name]})
    return CapReport(pd.DataFrame(rows, columns=_CAP_COLUMNS))


_CAP_COLUMNS = ["fk", "cap", "action", "parents_over_cap", "rows_removed", "stable"]


class Curator:
    """Holds a (cap-enforced) private database and hands out logged handles.

    Args:
        db: The database to protect (after :func:`~relviz.privacy.sensitivity.enforce_caps`): a
            :class:`~relviz.database.Database` or an out-of-core
            :class:`~relviz.source.EncodedDatabase` (its codes, parent rows and key hashes).
        backend: Where the group-by counts run: ``"pandas"`` (default, numpy in memory),
            ``"duckdb"``, ``"spark"`` or a :class:`~relviz.privacy.backends.CountBackend`
            (``relviz.privacy.backends``; every backend gives the same counts).
        parent_attributes: ``{fk name: EncodedTable}``: for FKs to public parents whose public
            attributes were copied into the child (``relviz.relational.parent_attributes``),
            those attributes' codes on the parent rows. Public data: each FK's handle carries
            its table as ``parent_attributes``.
    """

    def __init__(self, db: Database, backend: str | CountBackend = "pandas", *,
                 parent_attributes: dict[str, EncodedTable] | None = None) -> None:
        self._db = db
        self._parent_attributes = dict(parent_attributes or {})
        self.log = ReadLog()
        self.backend = get_backend(backend)
        self._owns_backend = isinstance(backend, str)
        self._encoded: dict[str, EncodedTable] = {}
        self._parent_index: dict[str, np.ndarray] = {}

    @property
    def schema(self):  # noqa: ANN201 - Schema
        return self._db.schema

    def close(self) -> None:
        """The end of a fit: the count backend forgets the arrays it registered (a backend made
        here from its name is closed), and the curator drops its encoded tables and parent rows.
        Handles given out before keep working only with the pandas backend."""
        forget = getattr(self.backend, "close" if self._owns_backend else "forget", None)
        if forget is not None:
            forget()
        self._encoded.clear()
        self._parent_index.clear()

    def _enc(self, name: str) -> EncodedTable:
        if name not in self._encoded and hasattr(self._db, "encoded"):  # EncodedDatabase
            self._encoded[name] = self._db.encoded(name)
        if name not in self._encoded:
            self._encoded[name] = encode_table(self._db.schema.table(name), self._db[name],
                                               checked=self._db.known_valid)
        return self._encoded[name]

    def _pidx(self, fk: ForeignKey) -> np.ndarray:
        """Parent row of each child row (cached: a backend keeps what it registered per array)."""
        if fk.name not in self._parent_index:
            self._parent_index[fk.name] = np.asarray(self._db.parent_index(fk), dtype=np.int64)
        return self._parent_index[fk.name]

    def table(self, name: str) -> PrivateTable:
        return PrivateTable(self._enc(name), self.log, self.backend)

    def rows(self, name: str, purpose: str) -> EncodedTable:
        """Tuple-level codes of table ``name`` (a logged read), for a mechanism that aggregates
        them itself before releasing (PrivLava's E-step and group statistics). ``purpose`` names
        the mechanism step in the read log."""
        enc = self._enc(name)
        self.log.add(name, f"tuple-level codes ({purpose})", enc.n_rows)
        return enc

    def row_keys(self, name: str, salt: int) -> np.ndarray:
        """Keyed hash of each row's primary key, ``(n,)`` uint64 (all columns when the table has
        no key): a per-row seed that depends on the row's own key only (PrivLava §4.6 draws).
        Never released."""
        self.log.add(name, "keyed hash of the primary key (per-row seeds)", self._rows(name))
        if hasattr(self._db, "row_keys"):  # EncodedDatabase: from the hashes read with the codes
            return self._db.row_keys(name, salt)
        return keyed_row_hash(self._db[name], list(self._db.schema.table(name).primary_key), salt)

    def _rows(self, name: str) -> int:
        return int(self._db.row_counts()[name])

    def link(self, fk1: ForeignKey | str, fk2: ForeignKey | str) -> PrivateLink:
        """The many-to-many relation through the link table of ``fk1`` and ``fk2``."""
        s = self._db.schema
        fk1 = s.foreign_key(fk1) if isinstance(fk1, str) else fk1
        fk2 = s.foreign_key(fk2) if isinstance(fk2, str) else fk2
        return PrivateLink(fk1, fk2, self._pidx(fk1), self._pidx(fk2),
                           self._enc(fk1.parent), self._enc(fk2.parent), self.log)

    def foreign_key(self, fk: ForeignKey | str) -> PrivateForeignKey:
        fk = self._db.schema.foreign_key(fk) if isinstance(fk, str) else fk
        rel = PrivateForeignKey(fk, self._pidx(fk), self._rows(fk.parent),
                                self._enc(fk.child), self._enc(fk.parent), self.log, self.backend)
        rel.parent_attributes = self._parent_attributes.get(fk.name)  # public (see __init__)
        return rel
