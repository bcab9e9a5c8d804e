"""Plain-Python state behind the schema editor; works without Jupyter (no widget imports).

:class:`SchemaDraft` edits a :class:`~relviz.schema.Schema` against the data it describes: add,
delete and re-point foreign keys, accept or reject the keys proposed by
:func:`~relviz.schema.propose_foreign_keys`, mark tables public or private, choose the protected
entity, set degree caps τ, repair orphans. It is a small editor over a frozen value object (the
widget never computes, it mirrors it). Every edit returns an :class:`EditResult`; an edit that
would make the schema meaningless (a cycle, a type mismatch, an FK that does not reference the
parent's primary key, a public entity) is *refused* with its reason and changes nothing: the
schema's own :meth:`~relviz.schema.Schema.foreign_key_problems` decides for FKs, the draft adds
the checks that need the data (column types). Problems an editor may leave for later (orphans,
missing caps, undeclared columns, …) are listed all at once by :meth:`SchemaDraft.problems`.
Degree distributions (:meth:`SchemaDraft.degree_view`) read the private data: they are a curator
view, not private.

A schema proposed by :func:`~relviz.schema.infer_schema` carries what it proposed and why
(``Schema.proposals``): :meth:`SchemaDraft.schema_proposals` lists them with the curator's decision
(:meth:`SchemaDraft.schema_review` groups them per table for the panel). Accepting one keeps it as
proposed and marks it reviewed; rejecting undoes it in the schema where that is one clear edit (a
public reference table made private, an ``integer=True`` column allowed fractions, an ISO date
read as text again). Both are edits like the others: Undo takes them back.

The draft keeps a ``history`` of :class:`EditResult` objects; the widget shows the last one
(:class:`~relviz.ui.budget_state.BudgetDraft` does the same for the plan). Every applied edit can
be undone (:meth:`SchemaDraft.undo`), the orphan repairs included: a repair replaces the draft's
frames by repaired copies (the caller's frames are never modified), and undo puts the previous
ones back. :meth:`SchemaDraft.repair_preview` says, before a repair, how many rows it would remove
from each table (the cascade to children included) or set to null, so that a view can ask for a
confirmation; :attr:`SchemaDraft.data_version` changes whenever the frames do.

>>> import pandas as pd
>>> from relviz import Database, Schema, Table, Attribute, PrivacyUnit
>>> s = Schema((Table("a", ("id",), (Attribute.categorical("x", [0, 1]),)), Table("b", ("id",))),
...            privacy_unit=PrivacyUnit())
>>> db = Database(s, {"a": pd.DataFrame({"id": [1, 2], "x": [0, 1]}),
...                   "b": pd.DataFrame({"id": [1, 2]})}, validate=False)
>>> draft = SchemaDraft(db, propose=False)
>>> draft.add_foreign_key("a", ["id"], "b").ok
True
>>> r = draft.add_foreign_key("b", ["id"], "a")
>>> r.ok, r.message.split(":")[0]
(False, 'refused')
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.errors import Problem, RelvizError, SchemaError
from relviz.errors import error_reason as _error_reason
from relviz.privacy.measure import CURATOR_VIEW
from relviz.schema import (
    Attribute,
    FKProposal,
    ForeignKey,
    PrivacyUnit,
    Proposal,
    Schema,
    propose_foreign_keys,
)

_log = logging.getLogger(__name__)
_UNDO_STEPS = 50  # undo steps kept (each holds references to frames, not copies)
_PLACEHOLDER_CAP = 1000  # the cap infer_schema puts on FKs between private tables ("review them")
_MAX_CATEGORIES = 200  # infer_schema's default max_categories

__all__ = [
    "EditResult",
    "SchemaDraft",
    "column_family",
    "error_reason",
    "problem_dict",
    "proposal_mark",
]


@dataclass(frozen=True)
class EditResult:
    """The outcome of one edit.

    Attributes:
        ok: Whether the edit was applied (``False``: refused, nothing changed).
        op: The edit, e.g. ``"add_fk"``, ``"set_share"``.
        message: One sentence for the user (the reason, when refused).
    """

    ok: bool
    op: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "op": self.op, "message": self.message}

    def __bool__(self) -> bool:
        return self.ok


class EditHistory:
    """The edit log of a draft: every :class:`EditResult`, oldest first (``history``), and the
    two ways an edit ends. ``_subject`` names what a refused edit leaves unchanged."""

    _subject = "draft"
    history: list[EditResult]

    @property
    def last(self) -> EditResult | None:
        return self.history[-1] if self.history else None

    def _record(self, ok: bool, op: str, message: str) -> EditResult:
        r = EditResult(ok, op, message)
        self.history.append(r)
        return r

    def _refuse(self, op: str, reason: str) -> EditResult:
        return self._record(False, op, f"refused: {reason}. The {self._subject} is unchanged.")


def problem_dict(p: Problem) -> dict[str, Any]:
    """A JSON-able view of a :class:`~relviz.errors.Problem` (for the widgets)."""
    return {"kind": p.kind, "message": p.message, "table": p.table, "column": p.column,
            "count": int(p.count), "examples": [_example_text(v) for v in p.examples], "text": str(p)}


def _example_text(v: Any) -> str:
    """An offending value as the widgets show it (a numpy scalar as the Python value it holds)."""
    item = getattr(v, "item", None)
    return str(item() if callable(item) and not isinstance(v, str) else v)


def column_family(s: pd.Series) -> str:
    """Coarse type of a column for matching FK columns: ``integer``, ``float``, ``text``,
    ``datetime``, ``boolean`` (or ``empty`` when every value is null).

    Floats whose values are all whole numbers count as ``integer`` (a nullable integer column
    read from CSV); ``object`` columns are classified by their values.
    """
    if pd.api.types.is_bool_dtype(s):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(s):
        return "datetime"
    values = s.dropna()
    if values.empty:
        return "empty"
    if pd.api.types.is_integer_dtype(s):
        return "integer"
    if pd.api.types.is_float_dtype(s):
        return "integer" if bool(np.all(np.mod(values.to_numpy(dtype=float), 1) == 0)) else "float"
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "integer":
        return "integer"
    if kind in ("floating", "mixed-integer-float", "decimal"):
        arr = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        return "integer" if bool(np.all(np.mod(arr, 1) == 0)) else "float"
    if kind == "boolean":
        return "boolean"
    if kind in ("datetime", "datetime64", "date"):
        return "datetime"
    return "text"


def _families_match(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == "empty" or b == "empty" or a == b


def _undo_text(message: str) -> str:
    """An edit's message as the undo button and the undo message name it."""
    return message.split(". Undo restores")[0]


def _default_fk_name(fk: ForeignKey) -> str:
    return f"{fk.child}.{'+'.join(fk.columns)}->{fk.parent}"


def _same_key(a: ForeignKey, b: ForeignKey) -> bool:
    return (a.child, tuple(a.columns), a.parent) == (b.child, tuple(b.columns), b.parent)


class SchemaDraft(EditHistory):
    """An editable schema over the data it describes (the state behind ``SchemaEditor``).

    Args:
        source: A :class:`~relviz.database.Database` (its frames are used for row counts, type
            checks, orphan counts, degree distributions and FK proposals) or a bare
            :class:`~relviz.schema.Schema` (then those data checks are skipped).
        propose: Run :func:`~relviz.schema.propose_foreign_keys` on the data once, at
            construction, and offer the proposals not already in the schema (reads the data:
            a curator view).
        min_containment: Passed to ``propose_foreign_keys``.

    Attributes:
        history: Every :class:`EditResult`, oldest first.
    """

    def __init__(self, source: Database | Schema, *, propose: bool = True,
                 min_containment: float = 0.9) -> None:
        if isinstance(source, Database):
            self._schema = source.schema
            self._frames: dict[str, pd.DataFrame] | None = {n: source[n] for n in source.table_names
                                                              if n in source}
        elif isinstance(source, Schema):
            self._schema = source
            self._frames = None
        else:
            raise TypeError(f"expected a Database or a Schema, got {type(source).__name__}")
        self.history: list[EditResult] = []
        self._removed_attributes: dict[tuple[str, str], Attribute] = {}
        self._rejected: set[tuple[str, tuple[str, ...], str]] = set()
        self._families: dict[tuple[str, str], str] = {}
        self._degrees: dict[tuple[str, tuple[str, ...], str, tuple[str, ...]], np.ndarray] = {}
        self._problems: tuple[Schema, list[Problem]] | None = None
        self._proposals: list[FKProposal] = []
        # what infer_schema proposed (Schema.proposals) and the curator's decisions on them
        self._inferred: tuple[Proposal, ...] = tuple(self._schema.proposals)
        self._reviewed: dict[str, tuple[str, str]] = {}  # proposal id -> (status, what it did)
        self._data_version = 0
        self._undo: list[tuple[tuple[Any, ...], EditResult]] = []  # (state before, the edit)
        self._committed = self._state()
        self._preview: tuple[tuple[Any, ...], Database, Any] | None = None
        if propose and self._frames is not None:
            pks = {t.name: t.primary_key for t in self._schema.tables if t.name in self._frames}
            frames = {n: self._frames[n] for n in pks}
            self._proposals = propose_foreign_keys(frames, pks, min_containment=min_containment)

    # -- read access ---------------------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """The current schema (a frozen value; edits replace it)."""
        return self._schema

    @property
    def has_data(self) -> bool:
        return self._frames is not None

    @property
    def data_version(self) -> int:
        """A counter that changes whenever the draft's frames are replaced (a repair, an undo)."""
        return self._data_version

    # -- undo ----------------------------------------------------------------------------------
    def _state(self) -> tuple[Any, ...]:
        return (self._schema, self._frames, dict(self._removed_attributes), frozenset(self._rejected),
                self._inferred, dict(self._reviewed))

    def _restore(self, state: tuple[Any, ...]) -> None:
        schema, frames, removed, rejected, inferred, reviewed = state
        if frames is not self._frames:
            self._set_frames(frames)
        self._schema = schema
        self._removed_attributes = dict(removed)
        self._rejected = set(rejected)
        self._inferred = inferred
        self._reviewed = dict(reviewed)

    def _set_frames(self, frames: dict[str, pd.DataFrame] | None) -> None:
        self._frames = frames
        self._data_version += 1
        self._degrees.clear()
        self._families.clear()
        self._problems = None
        self._preview = None

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def undo_label(self) -> str:
        """What :meth:`undo` would undo (empty when nothing)."""
        return _undo_text(self._undo[-1][1].message) if self._undo else ""

    def undo(self) -> EditResult:
        """Restore the schema and the data as they were before the last applied edit (refused
        edits changed nothing and are skipped); an orphan repair's rows come back."""
        if not self._undo:
            return self._refuse("undo", "nothing to undo")
        state, edit = self._undo.pop()
        data = state[1] is not self._frames
        self._restore(state)
        self._committed = self._state()
        tail = " — the data are back as they were" if data else ""
        return self._record(True, "undo", f"undone: {_undo_text(edit.message)}{tail}")

    @property
    def database(self) -> Database | None:
        """The frames under the current schema (not validated), or ``None`` without data."""
        if self._frames is None:
            return None
        return Database(self._schema, self._frames, validate=False)

    def row_count(self, table: str) -> int | None:
        """Rows of ``table`` (read from the data: a curator view for private tables)."""
        if self._frames is None or table not in self._frames:
            return None
        return len(self._frames[table])

    def frame_columns(self, table: str) -> list[str]:
        """Columns of the table's frame (or the declared columns without data)."""
        if self._frames is not None and table in self._frames:
            return [str(c) for c in self._frames[table].columns]
        return list(self._schema.columns(table))

    def family(self, table: str, column: str) -> str | None:
        """:func:`column_family` of a column (cached; ``None`` without data or column)."""
        if self._frames is None or table not in self._frames or column not in self._frames[table]:
            return None
        key = (table, column)
        if key not in self._families:
            self._families[key] = column_family(self._frames[table][column])
        return self._families[key]

    def column_candidates(self, child: str, parent: str) -> list[list[str]]:
        """Child columns whose type matches each of the parent's primary-key columns.

        Returns:
            One list per parent key column (in key order); empty when the parent has no key.
            Columns whose name matches the key column or the parent's name come first.
        """
        pk = self._schema.table(parent).primary_key
        cols = self.frame_columns(child)
        out = []
        for pc in pk:
            pf = self.family(parent, pc)
            ok = [c for c in cols if _families_match(self.family(child, c), pf)
                  and not (child == parent and c == pc)]
            ok.sort(key=lambda c: (c != pc, parent.rstrip("s").lower() not in c.lower()))
            out.append(ok)
        return out

    def proposals(self) -> list[FKProposal]:
        """Proposed FKs that are neither in the schema nor rejected (with their evidence)."""
        out = []
        names = set(self._schema.table_names)
        for p in self._proposals:
            key = (p.fk.child, tuple(p.fk.columns), p.fk.parent)
            if key in self._rejected or p.fk.child not in names or p.fk.parent not in names:
                continue
            if any(_same_key(p.fk, fk) for fk in self._schema.foreign_keys):
                continue
            if self._schema.table(p.fk.parent).primary_key != tuple(p.fk.parent_columns):
                continue
            out.append(p)
        return out

    def proposal(self, name: str) -> FKProposal:
        for p in self.proposals():
            if p.fk.name == name:
                return p
        raise KeyError(f"no open proposal {name!r}")

    # -- what infer_schema proposed (Schema.proposals) -----------------------------------------------
    def _inferred_ids(self) -> list[tuple[str, Proposal]]:
        """``(id, proposal)`` for each of ``Schema.proposals``, in their order; the id is
        ``table.column:kind`` (``table:kind`` for a whole-table proposal), unique."""
        out, seen = [], set()
        for p in self._inferred:
            base = f"{p.table}.{p.column}:{p.kind}" if p.column else f"{p.table}:{p.kind}"
            pid, i = base, 1
            while pid in seen:
                i += 1
                pid = f"{base}#{i}"
            seen.add(pid)
            out.append((pid, p))
        return out

    def _inferred_proposal(self, pid: str) -> Proposal:
        for i, p in self._inferred_ids():
            if i == pid:
                return p
        raise KeyError(f"no schema proposal {pid!r}")

    def _attribute(self, table: str, column: str | None) -> Attribute | None:
        if column is None or table not in self._schema.table_names:
            return None
        t = self._schema.table(table)
        return next((a for a in t.attributes if a.name == column), None)

    def _holds(self, p: Proposal) -> bool:
        """Whether the schema still says what ``p`` proposed (an edit may have changed it since)."""
        if p.table not in self._schema.table_names:
            return False
        t = self._schema.table(p.table)
        a = self._attribute(p.table, p.column)
        if p.kind == "public_table":
            return t.public
        if p.kind == "excluded":
            return p.column in t.exclude
        if p.kind == "datetime":
            return a is not None and (a.kind == "datetime" or (a.kind == "numeric" and a.integer))
        if p.kind == "integer":
            return a is not None and a.kind == "numeric" and a.integer
        if p.kind in ("categorical", "numeric"):
            return a is not None and a.kind == p.kind
        if p.kind in ("primary_key", "near_key"):
            return ", ".join(t.primary_key) == p.column
        if p.kind == "foreign_key":
            return any(", ".join(fk.columns) == p.column for fk in self._schema.fks_from(p.table))
        if p.kind == "key_format":
            return p.column is not None and t.format_of(p.column) is not None
        return True

    def _reject_plan(self, p: Proposal) -> str | None:
        """What rejecting ``p`` would do, in a few words (``None``: it cannot be rejected here)."""
        if not self._holds(p):
            return None
        if p.kind == "public_table":
            return "make the table private (a DP release instead of a verbatim copy)"
        if p.kind == "integer":
            return "keep the column numeric with fractional values allowed (integer=False)"
        if p.kind == "datetime":
            a = self._attribute(p.table, p.column)
            s = self._column(p.table, p.column)
            if a is None or a.kind != "datetime" or s is None or pd.api.types.is_datetime64_any_dtype(s):
                return None  # epoch integers stay integers; a datetime column stays a datetime
            return "keep the column as text: categorical over its observed values (excluded if they are too many)"
        return None

    def _accept_only(self, p: Proposal) -> str:
        """Why ``p`` has no Reject (when :meth:`_reject_plan` is ``None``)."""
        if not self._holds(p):
            return "the schema no longer says it (an edit changed it)"
        if p.kind == "excluded":
            return "its values were left out of the data when they were loaded"
        if p.kind in ("primary_key", "near_key", "foreign_key"):
            return "keys and foreign keys are edited in the graph"
        if p.kind == "datetime":
            return ("the column holds datetimes (or epoch integers), not text"
                    if self._frames is not None else "there are no data to read the text values from")
        return "correct it in the schema's JSON if it is wrong"

    def _column(self, table: str, column: str | None) -> pd.Series | None:
        if self._frames is None or column is None or table not in self._frames:
            return None
        df = self._frames[table]
        return df[column] if column in df.columns else None

    def schema_proposals(self) -> list[dict[str, Any]]:
        """What :func:`~relviz.schema.infer_schema` proposed (``Schema.proposals``, in the order
        ``relviz schema`` prints them), each with the curator's decision (JSON-able).

        Returns:
            One dict per proposal: ``{"id", "table", "column", "kind", "mark"`` (a short label,
            e.g. ``"excluded: identifier"``, see :func:`proposal_mark`), ``"proposal"`` (what the
            schema says), ``"reason"`` (the evidence, plain words), ``"count", "examples",
            "status"`` (``"open"``, ``"accepted"``, ``"rejected"``, or ``"changed"``: still open
            but the schema no longer says this, an edit changed it), ``"note"`` (what a reject
            did), ``"can_reject"`` and ``"reject"`` (what Reject would do, or why there is none)``}``.
            Read from the data: a curator view.
        """
        out = []
        for pid, p in self._inferred_ids():
            status, note = self._reviewed.get(pid, ("open", ""))
            holds = self._holds(p)
            if status == "open" and not holds:
                status = "changed"
            plan = self._reject_plan(p) if status == "open" else None
            out.append({"id": pid, "table": p.table, "column": p.column, "kind": p.kind,
                        "mark": proposal_mark(p), "proposal": p.proposal, "reason": p.reason,
                        "count": int(p.count), "examples": [_example_text(v) for v in p.examples],
                        "status": status, "note": note, "can_reject": plan is not None,
                        "reject": plan or self._accept_only(p)})
        return out

    def schema_review(self) -> dict[str, Any]:
        """:meth:`schema_proposals` grouped per table (in the schema's table order) for the
        panel: ``{"groups": [{"table", "public", "open", "items"}], "total", "open", "reviewed",
        "view"}``; ``open`` counts the proposals not yet accepted or rejected."""
        items = self.schema_proposals()
        order = {n: i for i, n in enumerate(self._schema.table_names)}
        tables = sorted(dict.fromkeys(it["table"] for it in items), key=lambda t: order.get(t, len(order)))
        groups = []
        for t in tables:
            its = [it for it in items if it["table"] == t]
            public = t in order and self._schema.table(t).public
            groups.append({"table": t, "public": public, "items": its,
                           "open": sum(it["status"] in ("open", "changed") for it in its)})
        n_open = sum(g["open"] for g in groups)
        return {"groups": groups, "total": len(items), "open": n_open,
                "reviewed": len(items) - n_open, "view": CURATOR_VIEW}

    def problems(self) -> list[Problem]:
        """Every problem of the schema and, with data, of the data under it (all at once)."""
        if self._problems is not None and self._problems[0] is self._schema:
            return list(self._problems[1])
        db = self.database
        try:
            probs = db.problems() if db is not None else self._schema.problems()
        except Exception as e:  # noqa: BLE001 - a check that breaks is a problem to show, not a crash
            _log.exception("checking the schema and data failed")
            probs = [Problem("check_failed", f"the data could not be checked ({type(e).__name__}: {e}); "
                             "undo the last edit or fix the schema")]
        self._problems = (self._schema, probs)
        return list(probs)

    # -- curator views -------------------------------------------------------------------------
    def degrees(self, fk: str | ForeignKey) -> np.ndarray | None:
        """Children per parent row of ``fk``, ``(n_parent,)`` int64 (curator view), or ``None``."""
        fk = self._schema.foreign_key(fk) if isinstance(fk, str) else fk
        if self._frames is None or fk.child not in self._frames or fk.parent not in self._frames:
            return None
        key = (fk.child, tuple(fk.columns), fk.parent, tuple(fk.parent_columns))
        if key not in self._degrees:
            try:
                self._degrees[key] = Database(self._schema, self._frames, validate=False).degrees(fk)
            except (KeyError, TypeError, ValueError):
                return None
        return self._degrees[key]

    def truncated_rows(self, fk: str | ForeignKey, cap: int) -> int | None:
        """Child rows a cap τ would drop (``Σ max(degree − τ, 0)``; curator view)."""
        deg = self.degrees(fk)
        if deg is None:
            return None
        return int(np.clip(deg - int(cap), 0, None).sum())

    def degree_view(self, fk: str) -> dict[str, Any]:
        """The degree distribution of ``fk`` for the cap editor (JSON-able; curator view).

        Returns:
            ``{"fk", "label", "view", "cap", "needs_cap", "n_parent", "n_linked", "max", "mean",
            "quantiles": {"50", "90", "99"}, "hist": [[degree, parents], ...] (every degree that
            occurs), "truncation": [[τ, child rows dropped], ...] for a few τ}``; without data
            only the cap fields.
        """
        f = self._schema.foreign_key(fk)
        unit = self._schema.privacy_unit
        cap = None if unit is None else unit.caps.get(f.name)
        needs = any(p.kind == "missing_cap" and p.message.startswith(f"FK {f.name!r}")
                    for p in self._schema.problems())
        out: dict[str, Any] = {"fk": f.name, "label": f.label(), "view": CURATOR_VIEW,
                               "cap": cap, "needs_cap": needs, "child": f.child, "parent": f.parent}
        deg = self.degrees(f)
        if deg is None or len(deg) == 0:
            return out
        values, counts = np.unique(deg, return_counts=True)
        mx = int(deg.max())
        qs = {str(q): int(np.ceil(np.quantile(deg, q / 100))) for q in (50, 90, 99)}
        taus = sorted({t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000,
                                   qs["50"], qs["90"], qs["99"], mx) if 1 <= t <= max(mx, 1)}
                      | ({int(cap)} if cap else set()))
        out.update({
            "n_parent": int(len(deg)), "n_linked": int(deg.sum()), "max": mx,
            "mean": float(deg.mean()), "quantiles": qs,
            "hist": [[int(v), int(c)] for v, c in zip(values, counts)],
            "truncation": [[int(t), int(np.clip(deg - t, 0, None).sum())] for t in taus],
        })
        return out

    # -- edits ---------------------------------------------------------------------------------
    _subject = "schema"

    def _done(self, op: str, message: str) -> EditResult:
        result = self._record(True, op, message)
        before, now = self._committed, self._state()
        if any(a is not b if i < 2 else a != b for i, (a, b) in enumerate(zip(before, now))):
            self._undo.append((before, result))
            del self._undo[:-_UNDO_STEPS]
            self._committed = now
        return result

    def _check_fk(self, schema: Schema, fk: ForeignKey, *, replacing: str | None = None) -> str | None:
        """Why ``fk`` may not join ``schema`` (``None`` when it may): the schema's own check
        (:meth:`~relviz.schema.Schema.foreign_key_problems`), then, with data, that the child
        columns exist and hold values of the key's type."""
        problems = schema.foreign_key_problems(fk, replacing=replacing)
        if problems:
            return problems[0].message
        available = self.frame_columns(fk.child)
        missing = [c for c in fk.columns if c not in available]
        if missing:
            return f"{fk.child!r} has no column {', '.join(map(repr, missing))}"
        for cc, pc in zip(fk.columns, fk.parent_columns):
            cf, pf = self.family(fk.child, cc), self.family(fk.parent, pc)
            if not _families_match(cf, pf):
                return (f"type mismatch: {fk.child}.{cc} holds {cf} values but {fk.parent}.{pc} "
                        f"holds {pf} values")
        return None

    def _with_fk(self, schema: Schema, fk: ForeignKey, *, replacing: str | None = None) -> Schema:
        """``schema`` with ``fk`` (:meth:`~relviz.schema.Schema.with_foreign_key`); FK columns
        that were attributes stop being attributes (remembered, to restore them)."""
        child = schema.table(fk.child)
        clash = [a for a in child.attributes if a.name in fk.columns]
        if clash:
            for a in clash:
                self._removed_attributes.setdefault((fk.child, a.name), a)
            child = replace(child, attributes=tuple(a for a in child.attributes if a.name not in fk.columns))
            schema = schema.with_table(child)
        return schema.with_foreign_key(fk, replacing=replacing)

    def _restore_attributes(self, schema: Schema, child: str, columns: Sequence[str]) -> Schema:
        """Columns of a removed FK become attributes again if they were before this editor."""
        used = {c for f in schema.fks_from(child) for c in f.columns}
        table = schema.table(child)
        back = [self._removed_attributes.pop((child, c)) for c in columns
                if c not in used and (child, c) in self._removed_attributes
                and c not in table.attribute_names and c not in table.primary_key]
        if back:
            schema = schema.with_table(replace(table, attributes=table.attributes + tuple(back)))
        return schema

    def _nullable(self, child: str, columns: Sequence[str]) -> bool:
        if self._frames is None or child not in self._frames:
            return False
        df = self._frames[child]
        return bool(df[[c for c in columns if c in df.columns]].isna().any().any())

    def add_foreign_key(self, child: str, columns: Sequence[str] | str, parent: str, *,
                        nullable: bool | None = None, name: str = "") -> EditResult:
        """Add ``child(columns) → parent(primary key)``.

        Refused (schema unchanged) when a table or column is unknown, the parent has no key or
        a different number of key columns, a column type does not match the key's, the same FK
        exists, or the FK would close a cycle. Child columns declared as attributes stop being
        attributes (they are restored if the FK is deleted again).

        Args:
            nullable: Default: whether the child columns hold nulls in the data.
        """
        columns = (columns,) if isinstance(columns, str) else tuple(columns)
        if child not in self._schema.table_names or parent not in self._schema.table_names:
            return self._refuse("add_fk", f"unknown table {child if child not in self._schema.table_names else parent!r}")
        pk = self._schema.table(parent).primary_key
        try:
            fk = ForeignKey(child, columns, parent, pk or columns,
                            nullable=self._nullable(child, columns) if nullable is None else nullable,
                            name=name)
        except SchemaError as e:
            return self._refuse("add_fk", "; ".join(p.message for p in e.problems))
        return self._add(fk, "add_fk")

    def _add(self, fk: ForeignKey, op: str) -> EditResult:
        reason = self._check_fk(self._schema, fk)
        if reason is not None:
            return self._refuse(op, reason)
        try:
            new = self._with_fk(self._schema, fk)
        except (SchemaError, KeyError) as e:
            return self._refuse(op, error_reason(e))
        self._schema = new
        return self._done(op, f"added {fk.label()} (references {fk.parent}."
                              f"{'+'.join(fk.parent_columns)})")

    def remove_foreign_key(self, name: str) -> EditResult:
        """Delete an FK (and its cap); its columns become attributes again if they were."""
        try:
            fk = self._schema.foreign_key(name)
        except KeyError as e:
            return self._refuse("remove_fk", error_reason(e))
        new = self._schema.without_foreign_key(name)
        new = self._restore_attributes(new, fk.child, fk.columns)
        self._schema = new
        return self._done("remove_fk", f"deleted {fk.label()}")

    def repoint_foreign_key(self, name: str, parent: str,
                            columns: Sequence[str] | None = None) -> EditResult:
        """Point an FK at another parent table (its primary key); the cap moves with it.

        Args:
            columns: New child columns (default: keep them; their number must match the new
                parent's key).
        """
        try:
            old = self._schema.foreign_key(name)
            ptable = self._schema.table(parent)
        except KeyError as e:
            return self._refuse("repoint_fk", error_reason(e))
        cols = tuple(columns) if columns is not None else tuple(old.columns)
        if not ptable.primary_key:
            return self._refuse("repoint_fk", f"{parent!r} has no primary key to reference")
        if len(cols) != len(ptable.primary_key):
            return self._refuse("repoint_fk", f"{parent}'s key has {len(ptable.primary_key)} column(s); "
                                f"{old.name} has {len(cols)}")
        new_name = "" if old.name == _default_fk_name(old) else old.name
        try:
            fk = ForeignKey(old.child, cols, parent, ptable.primary_key,
                            nullable=old.nullable if columns is None else self._nullable(old.child, cols),
                            name=new_name,
                            nullable_provenance=old.nullable_provenance if columns is None else "declared")
        except SchemaError as e:
            return self._refuse("repoint_fk", "; ".join(p.message for p in e.problems))
        reason = self._check_fk(self._schema, fk, replacing=name)
        if reason is not None:
            return self._refuse("repoint_fk", reason)
        try:
            new = self._with_fk(self._schema, fk, replacing=name)  # the cap moves with it
            new = self._restore_attributes(new, old.child, [c for c in old.columns if c not in cols])
        except (SchemaError, KeyError) as e:
            return self._refuse("repoint_fk", error_reason(e))
        self._schema = new
        return self._done("repoint_fk", f"re-pointed {old.label()} to {fk.label()}")

    def set_public(self, table: str, public: bool = True) -> EditResult:
        """Mark a table public (released verbatim, no budget) or private."""
        try:
            t = self._schema.table(table)
        except KeyError as e:
            return self._refuse("set_public", error_reason(e))
        unit = self._schema.privacy_unit
        if public and unit is not None and unit.entity == table:
            return self._refuse("set_public", f"{table!r} is the protected entity; choose another "
                                "entity (or the row-level unit) before making it public")
        if t.public == bool(public):
            return self._done("set_public", f"{table} is already {'public' if public else 'private'}")
        self._schema = self._schema.with_public(table, bool(public))
        return self._done("set_public", f"{table} is now {'public' if public else 'private'}")

    def set_entity(self, table: str | None) -> EditResult:
        """Protect one entity table (``None``: the row-level unit)."""
        if table is not None:
            try:
                t = self._schema.table(table)
            except KeyError as e:
                return self._refuse("set_entity", error_reason(e))
            if t.public:
                return self._refuse("set_entity", f"{table!r} is public; mark it private first")
        unit = self._schema.privacy_unit or PrivacyUnit()
        self._schema = self._schema.with_privacy_unit(replace(unit, entity=table))
        return self._done("set_entity", f"protected entity: {table}" if table else
                          "row-level privacy unit (every row of every private table)")

    def set_unit(self, kind: str, entity: str | None = None) -> EditResult:
        """Choose the privacy unit: ``"entity"`` (``entity``, default the current entity or the
        private table every other private table depends on), ``"row"`` or ``"tuple"``; the caps
        are kept (:func:`relviz.ui.units.with_unit`)."""
        from relviz.ui.units import UNIT_KINDS, with_unit

        if kind not in UNIT_KINDS:
            return self._refuse("set_unit", f"unknown privacy unit {kind!r}: one of "
                                f"{', '.join(UNIT_KINDS)}")
        try:
            new = with_unit(self._schema, kind, entity)
            unit = new.privacy_unit
            assert unit is not None
            if unit.entity is not None and new.table(unit.entity).public:
                return self._refuse("set_unit", f"{unit.entity!r} is public; mark it private first")
        except (ValueError, SchemaError, KeyError) as e:
            return self._refuse("set_unit", error_reason(e))
        self._schema = new
        return self._done("set_unit", f"privacy unit: {unit.describe()}")

    def unit_table(self, epsilon: float = 1.0, delta: float = 1e-6) -> dict[str, Any]:
        """The three privacy units on the current schema, what each protects and the σ each buys
        under the default plan (:func:`relviz.ui.units.unit_table`; sizes from the data are a
        curator view)."""
        from relviz.ui.units import unit_table

        return unit_table(self._schema, epsilon, delta, self.database)

    def set_cap(self, fk: str, cap: int | None) -> EditResult:
        """Set (or, with ``None``, remove) the public degree cap τ of an FK."""
        try:
            self._schema.foreign_key(fk)
        except KeyError as e:
            return self._refuse("set_cap", error_reason(e))
        if cap is None:
            unit = self._schema.privacy_unit
            if unit is None or fk not in unit.caps:
                return self._done("set_cap", f"{fk} has no cap")
            self._schema = self._schema.with_privacy_unit(
                replace(unit, caps={k: v for k, v in unit.caps.items() if k != fk}))
            return self._done("set_cap", f"removed the cap of {fk}")
        try:
            value = float(cap)
        except (TypeError, ValueError):
            return self._refuse("set_cap", f"a cap must be a whole number ≥ 1 (got {cap!r})")
        if not math.isfinite(value) or value != int(value) or value < 1:
            return self._refuse("set_cap", f"a cap must be a whole number ≥ 1 (got {cap!r})")
        # with the data loaded the editor shows the real degrees next to the cap: a τ typed
        # here may depend on them, so it is recorded (the ledger says it is not DP)
        seen = self._frames is not None
        self._schema = self._schema.with_cap(fk, int(value),
                                             source={"how": "curator view"} if seen else None)
        dropped = self.truncated_rows(fk, int(value))
        tail = "" if dropped is None else f"; it truncates {dropped:,} child row(s) ({CURATOR_VIEW})"
        return self._done("set_cap", f"τ = {int(value)} for {fk}{tail}")

    def set_cap_dp(self, fk: str, *, quantile: float = 0.95, rho: float = 1e-3,
                   candidates: tuple[int, int] = (1, 100), random_state: int | None = None
                   ) -> EditResult:
        """Set the cap τ of ``fk`` to a DP quantile of its degrees (charged to the run's ledger
        as ``rho``; :func:`relviz.privacy.caps.dp_degree_cap`)."""
        from relviz.privacy.caps import dp_degree_cap

        if self._frames is None:
            return self._refuse("set_cap", "load the data first: a DP quantile reads the degrees")
        try:
            db = Database(self._schema, self._frames, validate=False)
            rel = dp_degree_cap(db, fk, quantile=quantile, rho=rho, candidates=candidates,
                                rng=np.random.default_rng(random_state))
        except (KeyError, ValueError, SchemaError) as e:
            return self._refuse("set_cap", error_reason(e))
        self._schema = self._schema.with_cap(fk, rel.tau, source=rel.source())
        return self._done("set_cap", f"τ = {rel.tau} for {fk} (DP {quantile:g}-quantile, ρ = {rho:g} "
                          "charged to the run)")

    def accept_proposal(self, name: str) -> EditResult:
        """Add a proposed FK (validated like any added FK)."""
        try:
            p = self.proposal(name)
        except KeyError as e:
            return self._refuse("accept", error_reason(e))
        return self._add(p.fk, "accept")

    def reject_proposal(self, name: str) -> EditResult:
        """Dismiss a proposal (it is not offered again)."""
        try:
            p = self.proposal(name)
        except KeyError as e:
            return self._refuse("reject", error_reason(e))
        self._rejected.add((p.fk.child, tuple(p.fk.columns), p.fk.parent))
        return self._done("reject", f"rejected the proposal {p.fk.label()}")

    def accept_schema_proposal(self, pid: str) -> EditResult:
        """Mark one of :meth:`schema_proposals` reviewed and kept as proposed (the schema does not
        change; :meth:`undo` reopens it). Refused when it was already decided, or when the schema
        no longer says what it proposed (an edit changed it since: undo that edit first)."""
        try:
            p = self._inferred_proposal(pid)
        except KeyError as e:
            return self._refuse("accept_inferred", error_reason(e))
        status = self._reviewed.get(pid, ("open", ""))[0]
        if status != "open":
            return self._refuse("accept_inferred", f"{_where(p)} was already {status}")
        if not self._holds(p):
            return self._refuse("accept_inferred", f"the schema no longer says {p.proposal!r} for "
                                f"{_where(p)} (an edit changed it); undo that edit to accept it")
        self._reviewed[pid] = ("accepted", "")
        return self._done("accept_inferred", f"accepted {_where(p)} — {proposal_mark(p)}: {p.proposal}")

    def accept_schema_proposals(self, table: str | None = None) -> EditResult:
        """Accept every open proposal (of ``table``, or of every table) that the schema still
        says, in one edit (one undo step)."""
        todo = [(pid, p) for pid, p in self._inferred_ids()
                if (table is None or p.table == table) and pid not in self._reviewed and self._holds(p)]
        if not todo:
            return self._refuse("accept_inferred", "no open proposal to accept"
                                + (f" in {table}" if table else ""))
        for pid, _ in todo:
            self._reviewed[pid] = ("accepted", "")
        return self._done("accept_inferred", f"accepted {len(todo)} proposal(s)"
                          + (f" of {table}" if table else ""))

    def reject_schema_proposal(self, pid: str) -> EditResult:
        """Undo one of :meth:`schema_proposals` in the schema and mark it rejected (one undo step).

        ``public_table``: the table becomes private (the FKs from private tables into it get the
        placeholder cap τ = 1000 that :func:`~relviz.schema.infer_schema` gives the FKs between
        private tables: review them); ``integer``: the column stays numeric with fractional values
        allowed; ``datetime`` (ISO 8601 text): the column stays text, categorical over its observed
        values, or excluded when they are more than 200 or nearly all distinct (like other text).
        Other kinds (and an ``excluded`` column, whose values were dropped when the data were
        loaded) can only be accepted here; keys and FKs are edited in the graph.
        """
        try:
            p = self._inferred_proposal(pid)
        except KeyError as e:
            return self._refuse("reject_inferred", error_reason(e))
        status = self._reviewed.get(pid, ("open", ""))[0]
        if status != "open":
            return self._refuse("reject_inferred", f"{_where(p)} was already {status}")
        if self._reject_plan(p) is None:
            return self._refuse("reject_inferred", f"{_where(p)} cannot be rejected here: "
                                f"{self._accept_only(p)}")
        t = self._schema.table(p.table)
        if p.kind == "public_table":
            unit = self._schema.privacy_unit
            if unit is not None and unit.entity == p.table:  # pragma: no cover - a public entity is refused
                return self._refuse("reject_inferred", f"{p.table!r} is the protected entity")
            new = self._schema.with_public(p.table, False)
            caps = (new.privacy_unit or PrivacyUnit()).caps
            capped = [fk.name for fk in new.foreign_keys if fk.parent == p.table
                      and not new.table(fk.child).public and fk.name not in caps]
            for name in capped:
                new = new.with_cap(name, _PLACEHOLDER_CAP)
            note = f"{p.table} is private" + (
                f"; placeholder cap τ = {_PLACEHOLDER_CAP} on {', '.join(capped)}: review it" if capped else "")
            self._schema = new
        elif p.kind == "integer":
            a = self._attribute(p.table, p.column)
            assert a is not None
            self._schema = self._schema.with_table(replace(
                t, attributes=tuple(replace(a, integer=False) if x.name == a.name else x for x in t.attributes)))
            note = f"{p.column} is numeric with fractional values allowed"
        else:  # datetime written as ISO 8601 text: keep it as text
            a = self._attribute(p.table, p.column)
            s = self._column(p.table, p.column)
            assert a is not None and s is not None and p.column is not None
            values = s.dropna().astype(str)
            n, n_uniq = len(values), int(values.nunique())
            if n_uniq > _MAX_CATEGORIES or (n_uniq > 20 and n_uniq >= 0.9 * n):
                self._schema = self._schema.with_table(replace(
                    t, attributes=tuple(x for x in t.attributes if x.name != a.name),
                    exclude=t.exclude + (p.column,)))
                note = (f"{p.column} is excluded: {n_uniq:,} distinct text values in {n:,} rows, "
                        "too many for a categorical")
            else:
                cat = Attribute.categorical(p.column, sorted(values.unique().tolist()),
                                            nullable=a.nullable, provenance="inferred")
                self._schema = self._schema.with_table(replace(
                    t, attributes=tuple(cat if x.name == a.name else x for x in t.attributes)))
                note = (f"{p.column} is categorical over its {n_uniq:,} observed text values "
                        "(inferred: confirm the list is public)")
        self._reviewed[pid] = ("rejected", note)
        return self._done("reject_inferred", f"rejected {_where(p)} — {proposal_mark(p)}: {note}")

    def _repaired(self, how: str, fk: str | None) -> tuple[Database, Any]:
        """``Database.repair_orphans`` on the draft's data (cached for the preview → apply pair)."""
        key = (how, fk, self._schema, self._frames)
        if self._preview is not None and self._preview[0] == key:
            return self._preview[1], self._preview[2]
        db = self.database
        assert db is not None
        repaired, report = db.repair_orphans(how, None if fk is None else [fk])  # type: ignore[arg-type]
        self._preview = (key, repaired, report)
        return repaired, report

    def repair_preview(self, how: Literal["drop", "null"] = "drop", fk: str | None = None) -> dict[str, Any]:
        """What :meth:`repair_orphans` would change, before it changes anything (curator view).

        Returns:
            ``{"how", "fk", "tables": [{"table", "before", "after", "removed", "emptied",
            "cascade"}], "removed": total rows removed, "nulls": [{"fk", "rows"}], "lines":
            [sentences], "advice": str, "ok"}``; ``ok`` is ``False`` (with ``"reason"``) when
            there is nothing to repair or the repair is impossible.
        """
        out: dict[str, Any] = {"how": how, "fk": fk, "tables": [], "removed": 0, "nulls": [],
                               "lines": [], "advice": "", "ok": False, "view": CURATOR_VIEW}
        if self._frames is None:
            out["reason"] = "there are no data to repair"
            return out
        if how not in ("drop", "null"):
            out["reason"] = "how must be 'drop' or 'null'"
            return out
        try:
            repaired, report = self._repaired(how, fk)
        except (RelvizError, KeyError, ValueError) as e:
            out["reason"] = error_reason(e)
            return out
        rows = report.rows
        if not len(rows):
            out["reason"] = "there are no orphans to repair"
            return out
        direct = {r["child"] for r in rows.to_dict(orient="records")}
        for r in rows.to_dict(orient="records"):
            n_child = len(self._frames[r["child"]])
            if how == "null":
                out["nulls"].append({"fk": r["fk"], "rows": int(r["rows"])})
                out["lines"].append(f"{r['fk']}: {int(r['rows']):,} of {n_child:,} {r['child']} row(s) get a "
                                    "null foreign key (the FK becomes nullable)")
            if int(r["rows"]) == n_child and n_child:
                out["advice"] = (f"every {r['child']} row is an orphan of {r['fk']}: that foreign key is "
                                 "probably wrong — delete it (or re-point it) instead of repairing the data")
        if how == "drop":
            for t in self._schema.table_names:
                if t not in self._frames or t not in repaired:
                    continue
                before, after = len(self._frames[t]), len(repaired[t])
                if after == before:
                    continue
                item = {"table": t, "before": before, "after": after, "removed": before - after,
                        "emptied": after == 0, "cascade": t not in direct}
                out["tables"].append(item)
                out["removed"] += before - after
                why = " — their parent rows are dropped (cascade)" if item["cascade"] else " (orphans)"
                out["lines"].append(f"{t}: {before - after:,} of {before:,} rows removed"
                                    + (", the table becomes empty" if after == 0 else "") + why)
        out["ok"] = True
        return out

    def repair_orphans(self, how: Literal["drop", "null"] = "null",
                       fk: str | None = None) -> EditResult:
        """Repair orphan FK values in the draft's data (``Database.repair_orphans``).

        ``"drop"`` removes the orphan rows and, in cascade, the rows that depend on them;
        ``"null"`` nulls the orphan values. The message counts the rows changed per table; the
        caller's frames are never modified, and :meth:`undo` restores the previous data.
        """
        if self._frames is None:
            return self._refuse("repair", "there are no data to repair")
        if how not in ("drop", "null"):
            return self._refuse("repair", "how must be 'drop' or 'null'")
        preview = self.repair_preview(how, fk)
        if not preview["ok"]:
            return self._refuse("repair", preview["reason"])
        repaired, report = self._repaired(how, fk)
        self._set_frames({n: repaired[n] for n in repaired.table_names if n in repaired})
        self._schema = repaired.schema
        if how == "drop":
            what = "; ".join(f"{t['table']} −{t['removed']:,} of {t['before']:,}"
                             + (" (now empty)" if t["emptied"] else "") + (" (cascade)" if t["cascade"] else "")
                             for t in preview["tables"])
            message = f"dropped {preview['removed']:,} row(s): {what}. Undo restores them"
        else:
            message = str(report).replace("\n", "; ") + ". Undo restores the values"
        return self._done("repair", message)

    def set_schema(self, schema: Schema) -> EditResult:
        """Replace the whole schema (a Python-side edit; problems are reported, not refused)."""
        if not isinstance(schema, Schema):
            return self._refuse("set_schema", f"expected a Schema, got {type(schema).__name__}")
        self._schema = schema
        if schema.proposals and schema.proposals != self._inferred:  # a newly inferred schema
            self._inferred = tuple(schema.proposals)
            ids = {pid for pid, _ in self._inferred_ids()}
            self._reviewed = {k: v for k, v in self._reviewed.items() if k in ids}
        return self._done("set_schema", "schema replaced")

    def apply(self, request: Mapping[str, Any]) -> EditResult:
        """Apply one edit described by a JSON request (what the widget's front end sends).

        ``{"op": "add_fk", "child", "columns", "parent"}``, ``{"op": "remove_fk", "fk"}``,
        ``{"op": "repoint_fk", "fk", "parent"}``, ``{"op": "set_public", "table", "public"}``,
        ``{"op": "set_entity", "table"}``, ``{"op": "set_unit", "kind", "entity"}``,
        ``{"op": "set_cap", "fk", "cap"}``, ``{"op": "set_cap_dp", "fk", "quantile", "rho",
        "candidates"}``, ``{"op": "accept", "fk"}``, ``{"op": "reject", "fk"}``,
        ``{"op": "repair", "how", "fk"}``, ``{"op": "accept_inferred", "id"}`` (one of
        :meth:`schema_proposals`; ``{"op": "accept_inferred", "table"}`` without ``id``: every
        open one of the table), ``{"op": "reject_inferred", "id"}``, ``{"op": "undo"}``. Anything
        else is refused.
        """
        op = str(request.get("op", ""))
        try:
            if op == "add_fk":
                return self.add_foreign_key(str(request["child"]), [str(c) for c in request["columns"]],
                                            str(request["parent"]))
            if op == "remove_fk":
                return self.remove_foreign_key(str(request["fk"]))
            if op == "repoint_fk":
                return self.repoint_foreign_key(str(request["fk"]), str(request["parent"]))
            if op == "set_public":
                return self.set_public(str(request["table"]), bool(request["public"]))
            if op == "set_entity":
                t = request.get("table")
                return self.set_entity(None if t in (None, "") else str(t))
            if op == "set_unit":
                t = request.get("entity")
                return self.set_unit(str(request["kind"]), None if t in (None, "") else str(t))
            if op == "set_cap":
                cap = request.get("cap")
                return self.set_cap(str(request["fk"]), None if cap in (None, "") else cap)
            if op == "set_cap_dp":
                return self.set_cap_dp(str(request["fk"]), quantile=float(request.get("quantile", 0.95)),
                                       rho=float(request.get("rho", 1e-3)),
                                       candidates=tuple(request.get("candidates", (1, 100))))
            if op == "accept":
                return self.accept_proposal(str(request["fk"]))
            if op == "reject":
                return self.reject_proposal(str(request["fk"]))
            if op == "accept_inferred":
                if request.get("id"):
                    return self.accept_schema_proposal(str(request["id"]))
                t = request.get("table")
                return self.accept_schema_proposals(None if t in (None, "") else str(t))
            if op == "reject_inferred":
                return self.reject_schema_proposal(str(request["id"]))
            if op == "repair":
                return self.repair_orphans(request.get("how", "null"), request.get("fk") or None)
            if op == "undo":
                return self.undo()
        except (KeyError, TypeError, ValueError) as e:
            return self._refuse(op or "request", f"malformed request ({error_reason(e)})")
        return self._refuse(op or "request", f"unknown edit {op!r}")

    # -- the view model the widget draws ------------------------------------------------------------
    def graph(self) -> dict[str, Any]:
        """JSON-able nodes, edges and proposals for the front end (see ``SchemaEditor``)."""
        s = self._schema
        unit = s.privacy_unit
        probs = self.problems()
        nodes = []
        for t in s.tables:
            fk_cols = {c for fk in s.fks_from(t.name) for c in fk.columns}
            cols = []
            for c in self.frame_columns(t.name):
                role = ("key" if c in t.primary_key else "fk" if c in fk_cols else
                        "attribute" if c in t.attribute_names else "undeclared")
                cols.append({"name": c, "family": self.family(t.name, c), "role": role})
            nodes.append({
                "id": t.name, "rows": self.row_count(t.name), "primary_key": list(t.primary_key),
                "key_families": [self.family(t.name, c) for c in t.primary_key],
                "public": t.public, "entity": unit is not None and unit.entity == t.name,
                "attributes": [{"name": a.name, "kind": a.kind, "size": a.size,
                                "inferred": a.provenance == "inferred"} for a in t.attributes],
                "columns": cols,
                "problems": sum(1 for p in probs if p.table == t.name),
            })
        keyed = {t.name: len(t.primary_key) for t in s.tables if t.primary_key}
        edges = []
        for fk in s.foreign_keys:
            cols = {", ".join(fk.columns), *fk.columns}
            kinds = sorted({p.kind for p in probs
                            if f"'{fk.name}'" in p.message
                            or (p.kind == "cycle" and fk.name in p.message)
                            or (p.table == fk.child and p.column in cols
                                and p.kind in ("type_mismatch", "orphan", "null_foreign_key"))})
            edges.append({"id": fk.name, "child": fk.child, "parent": fk.parent,
                          "columns": list(fk.columns), "parent_columns": list(fk.parent_columns),
                          "nullable": fk.nullable, "label": fk.label(),
                          "cap": None if unit is None else unit.caps.get(fk.name),
                          "problems": kinds,
                          # where "Re-point" may send it: another table with a key of as many
                          # columns (neither its parent nor the child table itself)
                          "repoint": [t for t, k in keyed.items()
                                      if t not in (fk.parent, fk.child) and k == len(fk.columns)]})
        proposals = [{"id": p.fk.name, "child": p.fk.child, "parent": p.fk.parent,
                      "columns": list(p.fk.columns), "parent_columns": list(p.fk.parent_columns),
                      "label": p.fk.label(), "reason": p.reason, "containment": p.containment,
                      "name_match": p.name_match, "orphans": p.orphans,
                      "view": CURATOR_VIEW} for p in self.proposals()]
        return {"name": s.name, "nodes": nodes, "edges": edges, "proposals": proposals,
                "review": self.schema_review(),
                "entity": None if unit is None else unit.entity,
                "unit": None if unit is None else unit.describe(),
                "has_unit": unit is not None, "has_data": self.has_data,
                "can_undo": self.can_undo, "undo": self.undo_label}


_EXCLUDED_MARKS = (("identifier", "identifier"), ("personal data:", "personal data"),
                   ("the name suggests personal data", "personal data or free text"),
                   ("free text:", "free text"), ("every value is null", "empty column"))


def proposal_mark(p: Proposal) -> str:
    """A short label for a :class:`~relviz.schema.Proposal`, as the Schema panel marks it:
    ``"excluded: identifier"``, ``"datetime"``, ``"public (small reference table)"``, …"""
    if p.kind == "excluded":
        why = next((label for start, label in _EXCLUDED_MARKS if p.reason.startswith(start)),
                   "too many values" if "max_categories" in p.reason else "")
        return f"excluded: {why}" if why else "excluded"
    if p.kind == "datetime" and p.proposal.startswith("integer epoch"):
        return "datetime (epoch integers)"
    return {"primary_key": "primary key", "near_key": "near-key (duplicates)",
            "foreign_key": "foreign key", "public_table": "public (small reference table)",
            "key_format": "key format"}.get(p.kind, p.kind)


def _where(p: Proposal) -> str:
    return p.table + (f".{p.column}" if p.column else "")


error_reason = _error_reason  # one rule for every refusal (relviz.errors.error_reason)
