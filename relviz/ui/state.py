"""Plain-Python state behind relviz's widgets; works without Jupyter (no widget imports).

Two objects, each a small editor over a frozen value object (widgets never compute, they mirror
these):

* :class:`SchemaDraft` edits a :class:`~relviz.schema.Schema` against the data it describes:
  add, delete and re-point foreign keys, accept or reject the keys proposed by
  :func:`~relviz.schema.propose_foreign_keys`, mark tables public or private, choose the
  protected entity, set degree caps τ, repair orphans. Every edit returns an :class:`EditResult`;
  an edit that would make the schema meaningless (a cycle, a type mismatch, an FK that does not
  reference the parent's primary key, a public entity) is *refused* with its reason and changes
  nothing. Problems an editor may leave for later (orphans, missing caps, undeclared columns, …)
  are listed all at once by :meth:`SchemaDraft.problems`. Degree distributions
  (:meth:`SchemaDraft.degree_view`) read the private data: they are a curator view, not private.
* :class:`BudgetDraft` edits a :class:`~relviz.plan.Plan`: total (ε, δ), one share and method
  per private table and private FK, locks, rebalance, presets. Shares stay exact fractions whose
  sum is exactly 1. :meth:`BudgetDraft.rows` gives, per component, the noise σ its share buys
  (each method's ``noise_scales``) and the expected error of a typical cell relative to the table
  size, ``σ·√(2/π)/n`` (the mean absolute value of N(0, σ²) divided by ``n``).

Both keep a ``history`` of :class:`EditResult` objects; the widgets show the last one.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

import networkx as nx
import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.errors import PlanError, Problem, RelvizError, SchemaError
from relviz.plan import Component, Plan, to_fraction
from relviz.schema import Attribute, FKProposal, ForeignKey, PrivacyUnit, Schema, propose_foreign_keys

__all__ = [
    "EditResult",
    "SchemaDraft",
    "BudgetDraft",
    "ComponentView",
    "column_family",
    "problem_dict",
    "CURATOR_VIEW",
    "EPSILON_WARN",
    "SMALL_SHARE_ERROR",
    "PRESETS",
]

CURATOR_VIEW = "curator view (not private)"
"""Label of every number read from private data that is not a noisy release (docs/privacy.md,
docs/evaluation.md)."""

EPSILON_WARN = 5.0
"""Above this total ε the panel warns (OpenDP's ``loss_of`` warns above 5)."""

SMALL_SHARE_ERROR = 0.25
"""A component whose typical cell is off by more than this fraction of the table is flagged."""

MEAN_ABS_NORMAL = math.sqrt(2.0 / math.pi)
"""E|N(0, 1)|: the expected absolute error of a Gaussian release is σ·√(2/π)."""

PRESETS: dict[str, str] = {
    "equal": "equal split — Plan.default: private tables share 2/3 of ρ equally, private FKs "
             "share 1/3 equally",
    "papers": "papers' defaults — bi-adjacency FKs get ε_rel = 2 against ε = 1 per table "
              "(Alimohammadi et al. §8), i.e. 4× a table's ρ since ρ grows as ε²; every "
              "other component an equal share (PrivLava, Cai, Xiao & Cormode §6, leaves the split "
              "across components open)",
}


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


def problem_dict(p: Problem) -> dict[str, Any]:
    """A JSON-able view of a :class:`~relviz.errors.Problem` (for the widgets)."""
    return {"kind": p.kind, "message": p.message, "table": p.table, "column": p.column,
            "count": int(p.count), "examples": [str(_plain(v)) for v in p.examples], "text": str(p)}


def _plain(v: Any) -> Any:
    item = getattr(v, "item", None)
    return item() if callable(item) and not isinstance(v, str) else v


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


def _default_fk_name(fk: ForeignKey) -> str:
    return f"{fk.child}.{'+'.join(fk.columns)}->{fk.parent}"


def _same_key(a: ForeignKey, b: ForeignKey) -> bool:
    return (a.child, tuple(a.columns), a.parent) == (b.child, tuple(b.columns), b.parent)


# ------------------------------------------------------------------------------------------------
# Schema
# ------------------------------------------------------------------------------------------------

class SchemaDraft:
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
    def database(self) -> Database | None:
        """The frames under the current schema (not validated), or ``None`` without data."""
        if self._frames is None:
            return None
        return Database(self._schema, self._frames, validate=False)

    @property
    def last(self) -> EditResult | None:
        return self.history[-1] if self.history else None

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

    def problems(self) -> list[Problem]:
        """Every problem of the schema and, with data, of the data under it (all at once)."""
        if self._problems is not None and self._problems[0] is self._schema:
            return list(self._problems[1])
        db = self.database
        probs = db.problems() if db is not None else self._schema.problems()
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
    def _done(self, op: str, message: str) -> EditResult:
        r = EditResult(True, op, message)
        self.history.append(r)
        return r

    def _refuse(self, op: str, reason: str) -> EditResult:
        r = EditResult(False, op, f"refused: {reason}. The schema is unchanged.")
        self.history.append(r)
        return r

    def _cycle_through(self, schema: Schema, child: str, parent: str) -> list[str] | None:
        """The reference path ``parent → … → child`` if adding ``child → parent`` closes a cycle."""
        if child == parent:
            return None  # a self-reference alone is allowed
        g = nx.DiGraph()
        g.add_nodes_from(schema.table_names)
        g.add_edges_from((fk.child, fk.parent) for fk in schema.foreign_keys if not fk.self_referential)
        try:
            return list(nx.shortest_path(g, parent, child))  # parent refers (transitively) to child
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return None

    def _check_fk(self, schema: Schema, fk: ForeignKey) -> str | None:
        """Why ``fk`` may not join ``schema`` (``None`` when it may)."""
        names = schema.table_names
        for t in (fk.child, fk.parent):
            if t not in names:
                return f"there is no table {t!r}"
        ptable = schema.table(fk.parent)
        if not ptable.primary_key:
            return f"{fk.parent!r} has no primary key to reference"
        if len(fk.columns) != len(ptable.primary_key):
            return (f"{fk.parent}'s key has {len(ptable.primary_key)} column(s) "
                    f"({', '.join(ptable.primary_key)}); pick as many child columns")
        available = self.frame_columns(fk.child)
        missing = [c for c in fk.columns if c not in available]
        if missing:
            return f"{fk.child!r} has no column {', '.join(map(repr, missing))}"
        if len(set(fk.columns)) != len(fk.columns):
            return "a child column is listed twice"
        for cc, pc in zip(fk.columns, fk.parent_columns):
            cf, pf = self.family(fk.child, cc), self.family(fk.parent, pc)
            if not _families_match(cf, pf):
                return (f"type mismatch: {fk.child}.{cc} holds {cf} values but {fk.parent}.{pc} "
                        f"holds {pf} values")
        for other in schema.foreign_keys:
            if _same_key(other, fk):
                return f"this foreign key already exists ({other.name})"
        path = self._cycle_through(schema, fk.child, fk.parent)
        if path is not None:
            loop = " → ".join([fk.child, *path])
            return f"{fk.label()} would create a cycle: {loop} (arrows read 'refers to')"
        return None

    def _with_fk(self, schema: Schema, fk: ForeignKey, *, replace_name: str | None = None
                 ) -> Schema:
        """``schema`` with ``fk`` (FK columns that were attributes stop being attributes)."""
        child = schema.table(fk.child)
        clash = [a for a in child.attributes if a.name in fk.columns]
        if clash:
            for a in clash:
                self._removed_attributes.setdefault((fk.child, a.name), a)
            child = replace(child, attributes=tuple(a for a in child.attributes if a.name not in fk.columns))
            schema = schema.with_table(child)
        fks = list(schema.foreign_keys)
        unit = schema.privacy_unit
        if replace_name is not None:
            fks = [fk if f.name == replace_name else f for f in fks]
            if unit is not None and replace_name in unit.caps and fk.name != replace_name:
                unit = replace(unit, caps={(fk.name if k == replace_name else k): v
                                           for k, v in unit.caps.items()})
        else:
            fks.append(fk)
        return replace(schema, foreign_keys=tuple(fks), privacy_unit=unit)

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
            return self._refuse(op, _reason(e))
        self._schema = new
        return self._done(op, f"added {fk.label()} (references {fk.parent}."
                              f"{'+'.join(fk.parent_columns)})")

    def remove_foreign_key(self, name: str) -> EditResult:
        """Delete an FK (and its cap); its columns become attributes again if they were."""
        try:
            fk = self._schema.foreign_key(name)
        except KeyError as e:
            return self._refuse("remove_fk", _reason(e))
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
            return self._refuse("repoint_fk", _reason(e))
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
        base = self._schema.without_foreign_key(name)
        reason = self._check_fk(base, fk)
        if reason is not None:
            return self._refuse("repoint_fk", reason)
        try:
            new = self._with_fk(self._schema, fk, replace_name=name)  # the cap moves with it
            new = self._restore_attributes(new, old.child, [c for c in old.columns if c not in cols])
        except (SchemaError, KeyError) as e:
            return self._refuse("repoint_fk", _reason(e))
        self._schema = new
        return self._done("repoint_fk", f"re-pointed {old.label()} to {fk.label()}")

    def set_public(self, table: str, public: bool = True) -> EditResult:
        """Mark a table public (released verbatim, no budget) or private."""
        try:
            t = self._schema.table(table)
        except KeyError as e:
            return self._refuse("set_public", _reason(e))
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
                return self._refuse("set_entity", _reason(e))
            if t.public:
                return self._refuse("set_entity", f"{table!r} is public; mark it private first")
        unit = self._schema.privacy_unit or PrivacyUnit()
        self._schema = self._schema.with_privacy_unit(replace(unit, entity=table))
        return self._done("set_entity", f"protected entity: {table}" if table else
                          "row-level privacy unit (every row of every private table)")

    def set_cap(self, fk: str, cap: int | None) -> EditResult:
        """Set (or, with ``None``, remove) the public degree cap τ of an FK."""
        try:
            self._schema.foreign_key(fk)
        except KeyError as e:
            return self._refuse("set_cap", _reason(e))
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
            return self._refuse("set_cap", _reason(e))
        self._schema = self._schema.with_cap(fk, rel.tau, source=rel.source())
        return self._done("set_cap", f"τ = {rel.tau} for {fk} (DP {quantile:g}-quantile, ρ = {rho:g} "
                          "charged to the run)")

    def accept_proposal(self, name: str) -> EditResult:
        """Add a proposed FK (validated like any added FK)."""
        try:
            p = self.proposal(name)
        except KeyError as e:
            return self._refuse("accept", _reason(e))
        return self._add(p.fk, "accept")

    def reject_proposal(self, name: str) -> EditResult:
        """Dismiss a proposal (it is not offered again)."""
        try:
            p = self.proposal(name)
        except KeyError as e:
            return self._refuse("reject", _reason(e))
        self._rejected.add((p.fk.child, tuple(p.fk.columns), p.fk.parent))
        return self._done("reject", f"rejected the proposal {p.fk.label()}")

    def repair_orphans(self, how: Literal["drop", "null"] = "null",
                       fk: str | None = None) -> EditResult:
        """Repair orphan FK values in the draft's data (``Database.repair_orphans``)."""
        db = self.database
        if db is None:
            return self._refuse("repair", "there are no data to repair")
        if how not in ("drop", "null"):
            return self._refuse("repair", "how must be 'drop' or 'null'")
        try:
            repaired, report = db.repair_orphans(how, None if fk is None else [fk])
        except (RelvizError, KeyError, ValueError) as e:
            return self._refuse("repair", _reason(e))
        self._frames = {n: repaired[n] for n in repaired.table_names if n in repaired}
        self._schema = repaired.schema
        self._degrees.clear()
        self._families.clear()
        self._problems = None
        return self._done("repair", str(report).replace("\n", "; "))

    def set_schema(self, schema: Schema) -> EditResult:
        """Replace the whole schema (a Python-side edit; problems are reported, not refused)."""
        if not isinstance(schema, Schema):
            return self._refuse("set_schema", f"expected a Schema, got {type(schema).__name__}")
        self._schema = schema
        return self._done("set_schema", "schema replaced")

    def apply(self, request: Mapping[str, Any]) -> EditResult:
        """Apply one edit described by a JSON request (what the widget's front end sends).

        ``{"op": "add_fk", "child", "columns", "parent"}``, ``{"op": "remove_fk", "fk"}``,
        ``{"op": "repoint_fk", "fk", "parent"}``, ``{"op": "set_public", "table", "public"}``,
        ``{"op": "set_entity", "table"}``, ``{"op": "set_cap", "fk", "cap"}``,
        ``{"op": "accept", "fk"}``, ``{"op": "reject", "fk"}``,
        ``{"op": "repair", "how", "fk"}``. Anything else is refused.
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
            if op == "set_cap":
                cap = request.get("cap")
                return self.set_cap(str(request["fk"]), None if cap in (None, "") else cap)
            if op == "accept":
                return self.accept_proposal(str(request["fk"]))
            if op == "reject":
                return self.reject_proposal(str(request["fk"]))
            if op == "repair":
                return self.repair_orphans(request.get("how", "null"), request.get("fk") or None)
        except (KeyError, TypeError, ValueError) as e:
            return self._refuse(op or "request", f"malformed request ({_reason(e)})")
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
                          "problems": kinds})
        proposals = [{"id": p.fk.name, "child": p.fk.child, "parent": p.fk.parent,
                      "columns": list(p.fk.columns), "parent_columns": list(p.fk.parent_columns),
                      "label": p.fk.label(), "reason": p.reason, "containment": p.containment,
                      "name_match": p.name_match, "orphans": p.orphans,
                      "view": CURATOR_VIEW} for p in self.proposals()]
        return {"name": s.name, "nodes": nodes, "edges": edges, "proposals": proposals,
                "entity": None if unit is None else unit.entity,
                "unit": None if unit is None else unit.describe(),
                "has_unit": unit is not None, "has_data": self.has_data}


def _reason(e: BaseException) -> str:
    if isinstance(e, RelvizError) and hasattr(e, "problems"):
        return "; ".join(p.message for p in e.problems)  # type: ignore[attr-defined]
    if isinstance(e, KeyError) and e.args:
        return str(e.args[0])
    return str(e)


# ------------------------------------------------------------------------------------------------
# Budget
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ComponentView:
    """One row of the budget panel: a plan component and what its share buys.

    Attributes:
        name: Table or FK name.
        kind: ``"table"`` or ``"edge"``.
        method: Mechanism / relational method.
        share: Exact share of ρ.
        locked: Whether the share is locked.
        rho: Exact ρ of the component.
        sigmas: ``{release label: σ}`` from the method's ``noise_scales`` (empty if unavailable).
        sigma: σ of the first release (a typical marginal cell or degree bin), or ``None``.
        n: Size the error is relative to (rows of the table; parents of a degree histogram;
            children per parent on average for per-parent counts), or ``None``.
        n_label: What ``n`` is, and where it comes from.
        error: Expected absolute error of a typical cell, ``σ·√(2/π)``.
        relative_error: ``error / n``, or ``None``.
        note: Why σ is unavailable (empty otherwise).
        warning: Plain-words warning when the share is too small to be useful (empty otherwise).
    """

    name: str
    kind: str
    method: str
    share: Fraction
    locked: bool
    rho: Fraction
    sigmas: dict[str, float] = field(default_factory=dict)
    sigma: float | None = None
    n: float | None = None
    n_label: str = ""
    error: float | None = None
    relative_error: float | None = None
    note: str = ""
    warning: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "method": self.method,
                "share": f"{self.share.numerator}/{self.share.denominator}",
                "share_float": float(self.share), "locked": self.locked, "rho": float(self.rho),
                "sigmas": dict(self.sigmas), "sigma": self.sigma, "n": self.n, "n_label": self.n_label,
                "error": self.error, "relative_error": self.relative_error, "note": self.note,
                "warning": self.warning}


class BudgetDraft:
    """An editable plan (the state behind ``BudgetPanel``).

    Args:
        source: A :class:`~relviz.database.Database` (row counts are read from it: a curator
            view for private tables) or a :class:`~relviz.schema.Schema`.
        plan: Starting plan (default: ``Plan.default(schema, epsilon, delta)``).
        row_counts: Public row counts (override the data's; without data, enable errors).
        epsilon, delta: Used only when ``plan`` is not given.

    Attributes:
        history: Every :class:`EditResult`, oldest first.
    """

    def __init__(self, source: Database | Schema, plan: Plan | None = None, *,
                 row_counts: Mapping[str, int] | None = None, epsilon: float = 1.0,
                 delta: float = 1e-6) -> None:
        if isinstance(source, Database):
            self.schema = source.schema
            counts = source.row_counts()
            self._counts_from_data = True
        elif isinstance(source, Schema):
            self.schema = source
            counts = {}
            self._counts_from_data = False
        else:
            raise TypeError(f"expected a Database or a Schema, got {type(source).__name__}")
        self._public_counts = dict(row_counts or {})
        self.row_counts: dict[str, int] = {**counts, **self._public_counts}
        self._plan = plan if plan is not None else Plan.default(self.schema, epsilon, delta)
        self.history: list[EditResult] = []

    # -- state ---------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def last(self) -> EditResult | None:
        return self.history[-1] if self.history else None

    def _done(self, op: str, message: str, plan: Plan) -> EditResult:
        self._plan = plan
        r = EditResult(True, op, message)
        self.history.append(r)
        return r

    def _refuse(self, op: str, reason: str) -> EditResult:
        r = EditResult(False, op, f"refused: {reason}. The plan is unchanged.")
        self.history.append(r)
        return r

    def _counts_are_curator(self, table: str) -> bool:
        return table not in self._public_counts and self._counts_from_data and \
            table in self.schema.table_names and not self.schema.table(table).public

    # -- edits ---------------------------------------------------------------------------------
    def set_plan(self, plan: Plan) -> EditResult:
        if not isinstance(plan, Plan):
            return self._refuse("set_plan", f"expected a Plan, got {type(plan).__name__}")
        return self._done("set_plan", "plan replaced", plan)

    def set_share(self, name: str, share: float | Fraction | str, *, lock: bool = False) -> EditResult:
        """Set one share exactly (``0.3`` means 3/10); the unlocked others absorb the change."""
        try:
            value = to_fraction(share) if not isinstance(share, str) else Fraction(share)
            plan = self._plan.with_share(name, value, lock=lock)
        except (PlanError, KeyError, ValueError, ZeroDivisionError) as e:
            return self._refuse("set_share", _reason(e))
        return self._done("set_share", f"{name}: share {_fmt_share(value)}", plan)

    def set_lock(self, name: str, locked: bool = True) -> EditResult:
        try:
            self._plan.component(name)
        except KeyError as e:
            return self._refuse("set_lock", _reason(e))
        return self._done("set_lock", f"{name} {'locked' if locked else 'unlocked'}",
                          self._plan.with_lock(name, locked))

    def rebalance(self) -> EditResult:
        """Split what the locked shares leave equally among the unlocked components."""
        if not any(not c.locked for c in self._plan.components):
            return self._refuse("rebalance", "every share is locked; unlock one first")
        return self._done("rebalance", "unlocked shares rebalanced equally", self._plan.rebalance())

    def set_method(self, name: str, method: str) -> EditResult:
        """Change a component's mechanism (tables) or relational method (FKs)."""
        from relviz.relational import available as edge_methods
        from relviz.single import available as table_methods

        try:
            comp = self._plan.component(name)
        except KeyError as e:
            return self._refuse("set_method", _reason(e))
        registry = table_methods() if comp.kind == "table" else edge_methods()
        if method not in registry:
            return self._refuse("set_method", f"unknown {'mechanism' if comp.kind == 'table' else 'method'} "
                                f"{method!r}; available: {', '.join(registry)}")
        plan = self._plan.with_method(name, method)
        return self._done("set_method", f"{name}: {registry[method]}", plan)

    def set_budget(self, epsilon: float | str | None = None, delta: float | str | None = None
                   ) -> EditResult:
        """Change the total ε and/or δ (shares are kept); text is parsed (``"1e-6"``)."""
        try:
            eps = None if epsilon is None else float(epsilon)
            dlt = None if delta is None else float(delta)
        except (TypeError, ValueError):
            bad = [f"{k} = {v!r}" for k, v in (("ε", epsilon), ("δ", delta))
                   if v is not None and not _is_number(v)]
            return self._refuse("set_budget", f"ε and δ must be numbers (got {', '.join(bad)})")
        try:
            plan = self._plan.with_budget(epsilon=eps, delta=dlt)
            _ = plan.rho_total
        except (PlanError, ValueError, TypeError, ArithmeticError) as e:
            return self._refuse("set_budget", _reason(e))
        return self._done("set_budget", f"ε = {plan.epsilon:g}, δ = {plan.delta:g}", plan)

    def preset(self, name: str) -> EditResult:
        """Apply a share preset (see :data:`PRESETS`); methods and (ε, δ) are kept, locks cleared."""
        comps = self._plan.components
        if not comps:
            return self._refuse("preset", "the plan has no components")
        if name == "equal":
            base = Plan.default(self.schema, self._plan.epsilon, self._plan.delta)
            shares = {c.name: c.share for c in base.components}
            if set(shares) != {c.name for c in comps}:  # a hand-made plan: equal shares
                shares = {c.name: Fraction(1, len(comps)) for c in comps}
        elif name == "papers":
            weights = {c.name: Fraction(4 if c.kind == "edge" and "biadj" in c.method else 1)
                       for c in comps}
            total = sum(weights.values(), Fraction(0))
            shares = {k: w / total for k, w in weights.items()}
        else:
            return self._refuse("preset", f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        new = tuple(replace(c, share=shares[c.name], locked=False) for c in comps)
        return self._done("preset", PRESETS[name], replace(self._plan, components=new))

    def apply(self, request: Mapping[str, Any]) -> EditResult:
        """Apply one edit described by a JSON request (``{"op": "set_share", "name", "share"}``,
        ``set_lock``, ``rebalance``, ``set_method``, ``set_budget``, ``preset``)."""
        op = str(request.get("op", ""))
        try:
            if op == "set_share":
                return self.set_share(str(request["name"]), request["share"], lock=bool(request.get("lock")))
            if op == "set_lock":
                return self.set_lock(str(request["name"]), bool(request["locked"]))
            if op == "rebalance":
                return self.rebalance()
            if op == "set_method":
                return self.set_method(str(request["name"]), str(request["method"]))
            if op == "set_budget":
                return self.set_budget(request.get("epsilon"), request.get("delta"))
            if op == "preset":
                return self.preset(str(request["name"]))
        except (KeyError, TypeError, ValueError) as e:
            return self._refuse(op or "request", f"malformed request ({_reason(e)})")
        return self._refuse(op or "request", f"unknown edit {op!r}")

    # -- views ---------------------------------------------------------------------------------
    def conversion_text(self) -> str:
        """Which (ε, δ) → ρ conversion the plan uses, and why."""
        conv = self._plan.resolved_conversion()
        if conv == "gdp":
            return "exact Gaussian-DP conversion, since every release of this plan is Gaussian"
        if conv == "closed_form":
            return "closed-form conversion ρ = (√(log 1/δ + ε) − √(log 1/δ))², valid but looser"
        why = ", since a mechanism uses exponential-mechanism selection" if self._plan.conversion == "auto" else ""
        return "optimal zCDP conversion" + why

    def total_share(self) -> Fraction:
        return self._plan.total_share()

    def rows(self) -> list[ComponentView]:
        """Per component: share, ρ, σ bought, expected error of a typical cell (see module doc)."""
        from relviz.privacy.sensitivity import multipliers
        from relviz.relational import get as get_linker
        from relviz.single import get as get_mechanism

        plan, schema = self._plan, self.schema
        mult, why = None, ""
        try:
            mult = multipliers(schema)
        except (SchemaError, KeyError, nx.NetworkXException) as e:
            why = f"σ unavailable until the schema is fixed: {_reason(e)}"
        try:
            total = Fraction(plan.rho_total)
        except (ValueError, ArithmeticError) as e:
            total, why = Fraction(0), f"σ unavailable: {e}"
        out = []
        for c in plan.components:
            rho = total * c.share
            sigmas: dict[str, float] = {}
            note = why
            if mult is not None and rho > 0:
                try:
                    sigmas = self._sigmas(c, rho, mult, get_mechanism, get_linker)
                    if not sigmas:
                        note = f"{c.method} does not report its noise scale"
                except (KeyError, SchemaError, ValueError, TypeError, AttributeError) as e:
                    note = f"σ unavailable: {_reason(e)}"
            out.append(self._view(c, rho, sigmas, note))
        return out

    @staticmethod
    def _sigmas(c: Component, rho: Fraction, mult: Any, get_mechanism: Any, get_linker: Any
                ) -> dict[str, float]:
        schema = mult.schema
        if c.kind == "table":
            mech = get_mechanism(c.method, **c.params)
            fn = getattr(mech, "noise_scales", None)
            if fn is None:
                return {}
            return dict(fn(schema.table(c.name), rho, histogram_sensitivity=mult.table_histogram(c.name),
                           score_sensitivity=mult.table_score(c.name)))
        linker = get_linker(c.method, **c.params)
        fn = getattr(linker, "noise_scales", None)
        if fn is None:
            return {}
        return dict(fn(schema, schema.foreign_key(c.name), rho, multipliers=mult))

    def _view(self, c: Component, rho: Fraction, sigmas: dict[str, float], note: str) -> ComponentView:
        sigma = next(iter(sigmas.values()), None)
        n: float | None = None
        n_label = ""
        if c.kind == "table":
            if c.name in self.row_counts:
                n = float(self.row_counts[c.name])
                n_label = f"{int(n):,} rows of {c.name}"
                if self._counts_are_curator(c.name):
                    n_label += f" — {CURATOR_VIEW}"
        else:
            try:
                fk = self.schema.foreign_key(c.name)
            except KeyError:
                fk = None
            if fk is not None and self.schema.table(fk.parent).public:
                nc, npar = self.row_counts.get(fk.child), self.row_counts.get(fk.parent)
                if nc is not None and npar:
                    n = nc / npar
                    n_label = f"{n:,.1f} {fk.child} rows per {fk.parent} row on average"
                    if self._counts_are_curator(fk.child):
                        n_label += f" — {CURATOR_VIEW}"
            elif fk is not None and fk.parent in self.row_counts:
                n = float(self.row_counts[fk.parent])
                n_label = f"{int(n):,} {fk.parent} rows (parents in the degree histogram)"
                if self._counts_are_curator(fk.parent):
                    n_label += f" — {CURATOR_VIEW}"
        error = None if sigma is None else sigma * MEAN_ABS_NORMAL
        rel = None if error is None or not n else error / n
        warning = ""
        if rel is not None and rel > SMALL_SHARE_ERROR:
            what = "marginal cell" if c.kind == "table" else "bin"
            warning = (f"share too small to be useful: a typical {what} is off by about {rel:.0%} of "
                       f"{'the table' if c.kind == 'table' else 'its size'}; give {c.name} a larger share "
                       "(or raise ε)")
        return ComponentView(c.name, c.kind, c.method, c.share, c.locked, rho, sigmas, sigma, n, n_label,
                             error, rel, note, warning)

    def warnings(self) -> list[str]:
        """Plain-words warnings about the whole plan and each component."""
        plan = self._plan
        out = []
        if plan.epsilon > EPSILON_WARN:
            out.append(f"ε = {plan.epsilon:g} is above {EPSILON_WARN:g}: a weak guarantee (OpenDP warns "
                       "above 5); most deployments use ε ≤ 1–5")
        n, who = self._unit_count()
        if n and plan.delta >= 1 / n:
            out.append(f"δ = {plan.delta:g} ≥ 1/n = 1/{n:,} ({who}): with δ this large a mechanism may "
                       f"release a record outright; choose δ well below 1/n, e.g. {_nice_delta(n):g}")
        for r in self.rows():
            if r.warning:
                out.append(f"{r.name}: {r.warning}")
        for p in plan.problems(self.schema):
            out.append(str(p))
        return out

    def _unit_count(self) -> tuple[int | None, str]:
        """Rows of the protected entity table (or of the largest private table)."""
        unit = self.schema.privacy_unit
        if unit is not None and unit.entity and unit.entity in self.row_counts:
            return self.row_counts[unit.entity], f"rows of the protected entity {unit.entity}"
        private = [(self.row_counts[t], t) for t in self.schema.private_tables if t in self.row_counts]
        if not private:
            return None, ""
        n, t = max(private)
        return n, f"rows of {t}"

    def summary(self) -> dict[str, Any]:
        """Totals for the panel header (JSON-able)."""
        plan = self._plan
        try:
            rho = plan.rho_total
        except (ValueError, ArithmeticError):
            rho = float("nan")
        total = self.total_share()
        return {"epsilon": plan.epsilon, "delta": plan.delta, "rho": rho,
                "conversion": plan.resolved_conversion(), "conversion_text": self.conversion_text(),
                "total_share": f"{total.numerator}/{total.denominator}", "total_is_one": total == 1}


def _fmt_share(x: Fraction) -> str:
    exact = f" (= {x})" if 1 < x.denominator <= 10_000 else ""
    return f"{float(x):.4g}{exact}"


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _nice_delta(n: int) -> float:
    """A round δ at most 1/(100·n)."""
    return 10.0 ** math.floor(math.log10(1 / (100 * n)))
