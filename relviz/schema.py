"""Schema of a relational database: attributes with public domains, tables, foreign keys, the
privacy unit, and a first guess of all of these from data frames (``infer_schema``).

Everything here is *public* by construction: a schema is what the curator declares before any
private data are read (docs/privacy.md, "Public facts and inferred schemas"). The one exception is :func:`infer_schema`, which
reads the data to *propose* a schema; every domain it proposes is marked
``provenance="inferred"`` (an FK's nullability ``nullable_provenance="inferred"``); relviz warns
about them and refuses to synthesise on them unless explicitly allowed (the release is then not
differentially private), because observed values are not a public domain
(Chen, Li, Gong, McKenna & Wang, "Benchmarking differentially private tabular data synthesis",
§5.2: domains and bins come from public bounds).

The FK graph is held in networkx (a ``MultiDiGraph`` with edges parent → child, so a topological
order lists parents first; several FKs between the same two tables are parallel edges).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import networkx as nx
import numpy as np
import pandas as pd

from relviz.errors import Problem, SchemaError

__all__ = [
    "Attribute",
    "Table",
    "ForeignKey",
    "PrivacyUnit",
    "Schema",
    "FKProposal",
    "infer_schema",
    "infer_attributes",
    "propose_foreign_keys",
]

AttributeKind = Literal["categorical", "numeric", "datetime"]
DEFAULT_BINS = 100  # uniform, 100 bins on public bounds (Chen et al., tabular DP benchmark, §5.2)


def _to_seconds(value: Any) -> float:
    """A datetime-like value as float seconds since the Unix epoch (UTC, naive)."""
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return ts.value / 1e9


@dataclass(frozen=True)
class Attribute:
    """A non-key column with a public domain.

    Use the constructors :meth:`categorical`, :meth:`numeric` and :meth:`datetime`.

    Attributes:
        name: Column name.
        kind: ``"categorical"``, ``"numeric"`` or ``"datetime"`` (a datetime is numeric on
            seconds since the epoch).
        categories: Categorical only: the public category list, in code order.
        lower, upper: Numeric/datetime only: public bounds (inclusive). Datetimes are stored as
            ISO strings.
        bins: Numeric/datetime only: number of uniform bins on ``[lower, upper]``.
        edges: Optional explicit public bin edges (strictly increasing, first = lower,
            last = upper); overrides ``bins``.
        integer: Numeric only: values are integers (decoded to integers inside the bin; when
            there are no more integers than bins each integer gets its own bin).
        nullable: Whether nulls are allowed (they get their own code, the last one).
        provenance: ``"declared"`` (public) or ``"inferred"`` (read from the data by
            :func:`infer_schema`; not a public domain until confirmed).
        description: Free text shown in the UI.
    """

    name: str
    kind: AttributeKind
    categories: tuple[Any, ...] | None = None
    lower: float | str | None = None
    upper: float | str | None = None
    bins: int | None = None
    edges: tuple[float, ...] | None = None
    integer: bool = False
    nullable: bool = False
    provenance: Literal["declared", "inferred"] = "declared"
    description: str = ""

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise SchemaError(problems, headline=f"invalid attribute {self.name!r}")
        if self.categories is not None:
            object.__setattr__(self, "categories", tuple(_python_scalar(c) for c in self.categories))
        if self.edges is not None:
            object.__setattr__(self, "edges", tuple(float(e) for e in self.edges))
        if self.kind in ("numeric", "datetime") and self.edges is None and self.bins is None:
            object.__setattr__(self, "bins", DEFAULT_BINS)

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def categorical(
        cls, name: str, categories: Iterable[Any], *, nullable: bool = False, **kw: Any
    ) -> Attribute:
        """A categorical attribute over a public category list (code = position in the list)."""
        return cls(name, "categorical", categories=tuple(categories), nullable=nullable, **kw)

    @classmethod
    def numeric(
        cls,
        name: str,
        lower: float,
        upper: float,
        *,
        bins: int | None = None,
        edges: Sequence[float] | None = None,
        integer: bool = False,
        nullable: bool = False,
        **kw: Any,
    ) -> Attribute:
        """A numeric attribute with public bounds, binned uniformly (or on explicit edges)."""
        return cls(
            name,
            "numeric",
            lower=float(lower),
            upper=float(upper),
            bins=bins,
            edges=None if edges is None else tuple(edges),
            integer=integer,
            nullable=nullable,
            **kw,
        )

    @classmethod
    def datetime(
        cls,
        name: str,
        lower: Any,
        upper: Any,
        *,
        bins: int | None = None,
        nullable: bool = False,
        **kw: Any,
    ) -> Attribute:
        """A datetime attribute with public bounds (binned uniformly in time)."""
        return cls(
            name,
            "datetime",
            lower=pd.Timestamp(lower).isoformat(),
            upper=pd.Timestamp(upper).isoformat(),
            bins=bins,
            nullable=nullable,
            **kw,
        )

    # -- derived ------------------------------------------------------------------------------
    def problems(self) -> list[Problem]:
        """Consistency problems of this attribute alone (empty when fine)."""
        out: list[Problem] = []

        def bad(msg: str) -> None:
            out.append(Problem("bad_domain", msg, column=self.name))

        if not isinstance(self.name, str) or not self.name:
            bad("attribute names must be non-empty strings")
        if self.kind == "categorical":
            if self.categories is None or len(self.categories) == 0:
                bad("a categorical attribute needs a non-empty public category list")
            elif len(set(self.categories)) != len(self.categories):
                bad("the category list has duplicates")
            elif any(_is_null(c) for c in self.categories):
                bad("null is not a category; declare nullable=True instead")
        elif self.kind in ("numeric", "datetime"):
            try:
                lo, hi = self.bounds_numeric()
            except (TypeError, ValueError):
                bad("bounds must be numbers (or datetimes for a datetime attribute)")
                return out
            if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
                bad(f"bounds must be finite with lower < upper (got {self.lower!r}, {self.upper!r})")
            if self.edges is not None:
                e = np.asarray(self.edges, dtype=float)
                if len(e) < 2 or np.any(np.diff(e) <= 0):
                    bad("bin edges must be strictly increasing (at least two)")
                elif not (np.isclose(e[0], lo) and np.isclose(e[-1], hi)):
                    bad("the first and last bin edges must equal the bounds")
            elif self.bins is not None and (int(self.bins) != self.bins or self.bins < 1):
                bad("bins must be a positive integer")
            if self.integer and self.kind != "numeric":
                bad("integer=True applies to numeric attributes only")
        else:
            bad(f"unknown attribute kind {self.kind!r}")
        return out

    def bounds_numeric(self) -> tuple[float, float]:
        """Bounds as floats (datetimes in seconds since the epoch)."""
        if self.kind == "datetime":
            return _to_seconds(self.lower), _to_seconds(self.upper)
        return float(self.lower), float(self.upper)  # type: ignore[arg-type]

    def bin_edges(self) -> np.ndarray:
        """Bin edges, shape ``(n_bins + 1,)`` float64 (numeric/datetime only)."""
        if self.kind == "categorical":
            raise TypeError(f"{self.name!r} is categorical and has no bin edges")
        if self.edges is not None:
            return np.asarray(self.edges, dtype=float)
        lo, hi = self.bounds_numeric()
        if self.integer:
            n_int = math.floor(hi) - math.ceil(lo) + 1
            if n_int <= int(self.bins):  # one bin per integer, exact round trip
                return np.arange(math.ceil(lo), math.floor(hi) + 2, dtype=float) - 0.5
        return np.linspace(lo, hi, int(self.bins) + 1)

    @property
    def n_values(self) -> int:
        """Number of non-null codes: categories or bins."""
        if self.kind == "categorical":
            return len(self.categories)  # type: ignore[arg-type]
        return len(self.bin_edges()) - 1

    @property
    def size(self) -> int:
        """Domain size in codes, the null code included when nullable."""
        return self.n_values + int(self.nullable)

    def labels(self) -> list[str]:
        """Human-readable label of each code (for plots), null last."""
        if self.kind == "categorical":
            labels = [str(c) for c in self.categories]  # type: ignore[union-attr]
        else:
            e = self.bin_edges()
            if self.kind == "datetime":
                ts = pd.to_datetime(e, unit="s")
                labels = [f"[{a:%Y-%m-%d %H:%M}, {b:%Y-%m-%d %H:%M})" for a, b in zip(ts[:-1], ts[1:])]
            elif self.integer and np.allclose(np.diff(e), 1.0) and np.allclose(e % 1, 0.5):
                labels = [str(int(a + 0.5)) for a in e[:-1]]
            else:
                labels = [f"[{_fmt(a)}, {_fmt(b)})" for a, b in zip(e[:-1], e[1:])]
        if self.nullable:
            labels.append("(null)")
        return labels

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        for key in ("categories", "lower", "upper", "bins", "edges"):
            val = getattr(self, key)
            if val is not None:
                d[key] = list(val) if isinstance(val, tuple) else val
        for key, default in (("integer", False), ("nullable", False), ("provenance", "declared"),
                             ("description", "")):
            if getattr(self, key) != default:
                d[key] = getattr(self, key)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Attribute:
        d = dict(d)
        for key in ("categories", "edges"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _python_scalar(v: Any) -> Any:
    """A category as a Python value (numpy scalars unwrapped, so categories compare and serialise
    as the values they hold); strings and bytes unchanged."""
    item = getattr(v, "item", None)
    return item() if callable(item) and not isinstance(v, (str, bytes)) else v


def _is_null(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _reference_problems(fk: ForeignKey, tables: Mapping[str, Table]) -> list[Problem]:
    """What is wrong with what ``fk`` references: unknown tables, a parent without a primary key,
    parent columns that are not its key (the checks shared by construction and
    :meth:`Schema.foreign_key_problems`)."""
    out = [Problem("unknown_table", f"FK {fk.name!r} refers to unknown {role} table {t!r}", t)
           for role, t in (("child", fk.child), ("parent", fk.parent)) if t not in tables]
    parent = tables.get(fk.parent)
    if parent is None:
        return out
    pk = parent.primary_key
    if not pk:
        out.append(Problem("bad_foreign_key", f"FK {fk.name!r} points at {fk.parent!r}, which has no "
                           "primary key to reference", fk.parent))
    elif len(fk.columns) != len(pk) or set(fk.parent_columns) != set(pk):
        out.append(Problem("bad_foreign_key", f"FK {fk.name!r} must reference the primary key of "
                           f"{fk.parent} ({', '.join(pk)}) with one child column per key column",
                           fk.parent, ", ".join(fk.parent_columns)))
    return out


@dataclass(frozen=True)
class Table:
    """A relation: a primary key (possibly composite, possibly empty) and attributes.

    Foreign-key columns are declared by :class:`ForeignKey` objects on the :class:`Schema`; they
    are neither attributes nor necessarily part of the primary key.

    Attributes:
        name: Table name.
        primary_key: Column names of the primary key (may be empty: no key).
        attributes: Modelled non-key columns with public domains.
        public: Public tables are released verbatim and spend no budget.
        description: Free text.
    """

    name: str
    primary_key: tuple[str, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    public: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.primary_key, str):
            object.__setattr__(self, "primary_key", (self.primary_key,))
        object.__setattr__(self, "primary_key", tuple(self.primary_key))
        object.__setattr__(self, "attributes", tuple(self.attributes))
        problems = []
        names = [a.name for a in self.attributes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            problems.append(Problem("duplicate_column", "attribute declared twice", self.name,
                                    ", ".join(dup)))
        clash = sorted(set(names) & set(self.primary_key))
        if clash:
            problems.append(Problem("duplicate_column", "a primary-key column cannot also be an attribute",
                                    self.name, ", ".join(clash)))
        if len(set(self.primary_key)) != len(self.primary_key):
            problems.append(Problem("duplicate_column", "primary key lists a column twice", self.name))
        if problems:
            raise SchemaError(problems, headline=f"invalid table {self.name!r}")

    def attribute(self, name: str) -> Attribute:
        for a in self.attributes:
            if a.name == name:
                return a
        raise KeyError(f"table {self.name!r} has no attribute {name!r}")

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "primary_key": list(self.primary_key),
            "public": self.public,
            "attributes": [a.to_dict() for a in self.attributes],
        }
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Table:
        return cls(
            name=d["name"],
            primary_key=tuple(d.get("primary_key", ())),
            attributes=tuple(Attribute.from_dict(a) for a in d.get("attributes", ())),
            public=bool(d.get("public", False)),
            description=d.get("description", ""),
        )


@dataclass(frozen=True)
class ForeignKey:
    """A foreign key: ``child(columns) → parent(parent_columns)``, the parent's primary key.

    Several FKs from one child to the same parent are distinct edges (``flights.origin`` and
    ``flights.dest`` → ``airports``); an FK from a table to itself is self-referential.

    Attributes:
        child: Referencing table.
        columns: Referencing columns in ``child`` (composite keys allowed).
        parent: Referenced table.
        parent_columns: The parent's primary-key columns, paired with ``columns``.
        nullable: Whether a child row may have no parent (all FK columns null).
        name: Identifier, by default ``"child.col1+col2->parent"``.
        nullable_provenance: ``"declared"`` (public) or ``"inferred"`` (``nullable`` was read
            from the data by :func:`infer_schema`: whether the FK holds nulls is then not a public
            fact until confirmed).
    """

    child: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...] = ()
    nullable: bool = False
    name: str = ""
    nullable_provenance: Literal["declared", "inferred"] = "declared"

    def __post_init__(self) -> None:
        for key in ("columns", "parent_columns"):
            val = getattr(self, key)
            object.__setattr__(self, key, (val,) if isinstance(val, str) else tuple(val))
        if not self.parent_columns:
            object.__setattr__(self, "parent_columns", self.columns)
        if not self.name:
            object.__setattr__(self, "name", f"{self.child}.{'+'.join(self.columns)}->{self.parent}")
        if len(self.columns) != len(self.parent_columns) or not self.columns:
            raise SchemaError([Problem("bad_foreign_key",
                                       "an FK needs as many child columns as parent columns (≥ 1)",
                                       self.child, ", ".join(self.columns))])

    @property
    def self_referential(self) -> bool:
        return self.child == self.parent

    def label(self) -> str:
        """Short label for figures: ``child.col → parent``."""
        return f"{self.child}.{'+'.join(self.columns)} → {self.parent}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "child": self.child,
            "columns": list(self.columns),
            "parent": self.parent,
            "parent_columns": list(self.parent_columns),
            "nullable": self.nullable,
            **({"nullable_provenance": "inferred"} if self.nullable_provenance == "inferred" else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ForeignKey:
        return cls(
            child=d["child"],
            columns=tuple(d["columns"]),
            parent=d["parent"],
            parent_columns=tuple(d.get("parent_columns") or d["columns"]),
            nullable=bool(d.get("nullable", False)),
            name=d.get("name", ""),
            nullable_provenance=d.get("nullable_provenance", "declared"),
        )


@dataclass(frozen=True)
class PrivacyUnit:
    """What one individual is, for the DP guarantee.

    * Entity unit (``entity`` set): neighbouring databases differ by one tuple of the protected
      entity table and every tuple depending on it through FKs (PrivLava, Cai, Xiao & Cormode,
      SIGMOD 2023, §2). Each FK on
      a path to the entity needs a public cap ``τ`` on its group size (children per parent,
      docs/privacy.md); sensitivities are the entity's multipliers (PrivLava §6,
      ``relviz.privacy.sensitivity``).
    * Row unit (``entity=None``, ``neighbour="row"``): one row of one private table changes, with
      its values and every relationship attached to it (its own FK values and the FK values of
      the rows that reference it), bounded by the caps (the bi-adjacency paper's Definition 1).
    * Tuple unit (``entity=None``, ``neighbour="tuple"``): one row of one private table changes,
      its values and its own FK values (a child's FK values are part of its row); a parent's set
      of children changes only through its children's rows. Common in relational DP; it
      protects less than the row unit (a parent's relationships are not hidden as a whole).
    See docs/privacy.md for what each unit protects and the sensitivities each implies.

    Attributes:
        entity: Protected entity table, or ``None`` for the row-level unit.
        caps: Degree cap per FK name (children per parent), public integers ≥ 1.
        accounting: ``"strict"`` (default; moved mass counts √2) or ``"paper"`` (PrivLava §6's multipliers without the √2 of moved mass).
        truncate: How a cap is enforced on an FK whose parent is the entity: ``"children"``
            (default: keep τ children per parent, chosen by a salted hash of their position) or
            ``"parents"`` (the paper: remove parents over the cap with their dependants). Both
            are stable there, because a neighbour removes a whole group; other capped FKs always
            drop surplus children (not stable; reported).
        rationale: Why this unit and these caps (shown in reports).
        cap_sources: How a cap was chosen, for caps not declared from public reasoning:
            ``{fk: {"how": "curator view"}}`` (picked while looking at the real degrees: the
            choice is not differentially private, and the ledger says so) or ``{fk: {"how": "dp",
            "quantile": q, "rho": "p/q", "sensitivity": Δ, "candidates": [lo, hi]}}`` (a DP
            quantile of the degrees, :func:`relviz.privacy.caps.dp_degree_cap`, whose ρ the run's
            ledger charges).
    """

    entity: str | None = None
    caps: Mapping[str, int] = field(default_factory=dict)
    accounting: Literal["strict", "paper"] = "strict"
    truncate: Literal["children", "parents"] = "children"
    rationale: str = ""
    cap_sources: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    neighbour: Literal["row", "tuple"] = "row"

    def __post_init__(self) -> None:
        object.__setattr__(self, "caps", dict(self.caps))
        object.__setattr__(self, "cap_sources", {k: dict(v) for k, v in self.cap_sources.items()
                                                 if k in self.caps})
        bad_src = [k for k, v in self.cap_sources.items() if v.get("how") not in ("curator view", "dp")]
        if bad_src:
            raise SchemaError([Problem("bad_cap", "a cap source is 'curator view' or 'dp'", column=k)
                               for k in bad_src])
        bad = [k for k, v in self.caps.items() if int(v) != v or v < 1]
        if bad:
            raise SchemaError([Problem("bad_cap", "degree caps must be integers ≥ 1", column=k)
                               for k in bad])
        if self.accounting not in ("strict", "paper"):
            raise SchemaError([Problem("bad_unit", f"unknown accounting {self.accounting!r}")])
        if self.truncate not in ("children", "parents"):
            raise SchemaError([Problem("bad_unit", f"unknown truncation {self.truncate!r}")])
        if self.neighbour not in ("row", "tuple"):
            raise SchemaError([Problem("bad_unit", f"unknown row-level neighbour {self.neighbour!r}: "
                                       "'row' or 'tuple'")])

    def __hash__(self) -> int:  # caps is a dict; hash on its items
        return hash((self.entity, tuple(sorted(self.caps.items())), self.accounting, self.truncate,
                     self.neighbour))

    @property
    def kind(self) -> str:
        """``"entity"``, ``"row"`` or ``"tuple"``."""
        return "entity" if self.entity else self.neighbour

    def describe(self) -> str:
        if self.entity:
            return f"one {self.entity!r} tuple and every tuple that depends on it"
        if self.neighbour == "tuple":
            return ("one row of any private table, with its own values and foreign keys "
                    "(tuple unit; table sizes public)")
        return "one row of any private table (with its relationships, bounded by the caps)"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"entity": self.entity, "caps": dict(self.caps),
                             "accounting": self.accounting, "truncate": self.truncate}
        if self.rationale:
            d["rationale"] = self.rationale
        if self.cap_sources:
            d["cap_sources"] = {k: dict(v) for k, v in self.cap_sources.items()}
        if self.neighbour != "row":
            d["neighbour"] = self.neighbour
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PrivacyUnit:
        return cls(entity=d.get("entity"), caps=dict(d.get("caps", {})),
                   accounting=d.get("accounting", "strict"), truncate=d.get("truncate", "children"),
                   rationale=d.get("rationale", ""), cap_sources=dict(d.get("cap_sources", {})),
                   neighbour=d.get("neighbour", "row"))


@dataclass(frozen=True)
class Schema:
    """Tables, foreign keys and the privacy unit of a relational database.

    Construction checks what makes the object meaningless (unknown tables or columns, duplicate
    names, FK columns that clash with attributes, FKs not pointing at a primary key) and raises
    one :class:`SchemaError` listing all such problems. Problems that a user may fix later in an
    editor (cycles, missing caps, an inconsistent privacy unit) are reported by
    :meth:`problems`, and by ``Database.validate`` together with the data problems.

    Edits return new schemas (``with_foreign_key``, ``without_foreign_key``, ``with_public``,
    ``with_privacy_unit``, ``with_table``, ``with_cap``); :meth:`foreign_key_problems` says
    whether an FK may be added.
    """

    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    privacy_unit: PrivacyUnit | None = None
    name: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", tuple(self.tables))
        object.__setattr__(self, "foreign_keys", tuple(self.foreign_keys))
        problems = self._structural_problems()
        if problems:
            raise SchemaError(problems)

    # -- structure ------------------------------------------------------------------------------
    def _structural_problems(self) -> list[Problem]:
        out: list[Problem] = []
        names = [t.name for t in self.tables]
        for n in sorted({n for n in names if names.count(n) > 1}):
            out.append(Problem("duplicate_table", "table declared twice", n))
        by_name = {t.name: t for t in self.tables}
        fk_names = [fk.name for fk in self.foreign_keys]
        for n in sorted({n for n in fk_names if fk_names.count(n) > 1}):
            out.append(Problem("duplicate_foreign_key", f"foreign key name {n!r} used twice"))
        for fk in self.foreign_keys:
            out += _reference_problems(fk, by_name)
            child = by_name.get(fk.child)
            if child is not None:
                clash = sorted(set(fk.columns) & set(child.attribute_names))
                if clash:
                    out.append(Problem("duplicate_column",
                                       f"FK {fk.name!r} uses column(s) declared as attributes",
                                       fk.child, ", ".join(clash)))
        if self.privacy_unit is not None:
            unit = self.privacy_unit
            if unit.entity is not None and unit.entity not in by_name:
                out.append(Problem("unknown_table", "the privacy unit names an unknown entity table",
                                   unit.entity))
            for k in unit.caps:
                if k not in fk_names:
                    out.append(Problem("unknown_foreign_key", "a degree cap names an unknown FK", column=k))
        return out

    def problems(self) -> list[Problem]:
        """Everything wrong with the schema that an editor may still fix (all at once).

        Reports: FK cycles (a self-reference alone is allowed), public tables with an FK to a
        private table, and an inconsistent privacy unit (entity public, private tables that do
        not depend on the entity, missing caps for FKs with a private parent).
        """
        out: list[Problem] = []
        for cycle in nx.simple_cycles(self._fk_graph()):
            path = " → ".join(reversed(cycle + [cycle[0]]))
            fks = [fk.name for fk in self.foreign_keys
                   if fk.child in cycle and fk.parent in cycle and not fk.self_referential]
            out.append(Problem("cycle", f"foreign keys form a cycle: {path} (FKs: {', '.join(fks)})",
                               cycle[0]))
        for fk in self.foreign_keys:
            if self.table(fk.child).public and not self.table(fk.parent).public:
                out.append(Problem("public_refers_private",
                                   f"public table refers to private table {fk.parent!r} through "
                                   f"{fk.name!r}; mark {fk.child!r} private or {fk.parent!r} public",
                                   fk.child))
        unit = self.privacy_unit
        private = [t.name for t in self.tables if not t.public]
        if unit is None:
            if private:
                out.append(Problem("no_privacy_unit",
                                   "private tables need a privacy unit (an entity table or row level)"))
            return out
        if unit.entity is not None and unit.entity in self.table_names:
            if self.table(unit.entity).public:
                out.append(Problem("bad_unit", "the protected entity table is marked public",
                                   unit.entity))
            if not out or all(p.kind != "cycle" for p in out):
                dependants = self.dependants(unit.entity)
                for t in private:
                    if t != unit.entity and t not in dependants:
                        out.append(Problem(
                            "bad_unit",
                            f"private table does not depend on the protected entity {unit.entity!r}; "
                            f"mark it public or choose another entity", t))
        for fk in self.foreign_keys:
            if unit.entity is not None and fk.self_referential and fk.child in private:
                out.append(Problem("bad_unit", f"self-referential FK {fk.name!r} on a private table "
                                   "needs the row-level privacy unit", fk.child))
            if fk.child in private and not self.table(fk.parent).public and fk.name not in unit.caps:
                out.append(Problem("missing_cap",
                                   f"FK {fk.name!r} has a private parent and needs a public degree cap τ "
                                   "(children per parent)", fk.child, ", ".join(fk.columns)))
        return out

    # -- queries -----------------------------------------------------------------------------
    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"no table {name!r} (tables: {', '.join(self.table_names)})")

    def foreign_key(self, name: str) -> ForeignKey:
        for fk in self.foreign_keys:
            if fk.name == name:
                return fk
        raise KeyError(f"no foreign key {name!r}")

    def fks_from(self, child: str) -> tuple[ForeignKey, ...]:
        return tuple(fk for fk in self.foreign_keys if fk.child == child)

    def fks_into(self, parent: str) -> tuple[ForeignKey, ...]:
        return tuple(fk for fk in self.foreign_keys if fk.parent == parent)

    def columns(self, table: str) -> tuple[str, ...]:
        """All declared columns of a table: key, FK and attribute columns, in that order."""
        t = self.table(table)
        cols = list(t.primary_key)
        for fk in self.fks_from(table):
            cols += [c for c in fk.columns if c not in cols]
        return tuple(cols) + t.attribute_names

    def graph(self) -> nx.MultiDiGraph:
        """The FK graph: one node per table (with its ``Table``), one edge parent → child per FK."""
        g = nx.MultiDiGraph()
        for t in self.tables:
            g.add_node(t.name, table=t)
        for fk in self.foreign_keys:
            g.add_edge(fk.parent, fk.child, key=fk.name, fk=fk)
        return g

    def _fk_graph(self, *, without: str | None = None) -> nx.DiGraph:
        """One node per table, one edge parent → child per FK (the FK named ``without`` left out);
        self-references are not edges (a self-reference alone is not a cycle)."""
        g = nx.DiGraph()
        g.add_nodes_from(self.table_names)
        g.add_edges_from((fk.parent, fk.child) for fk in self.foreign_keys
                         if not fk.self_referential and fk.name != without)
        return g

    def foreign_key_problems(self, fk: ForeignKey, *, replacing: str | None = None) -> list[Problem]:
        """Why ``fk`` may not join this schema (empty when it may); reads no data.

        The one check behind every FK edit (the schema editor refuses an FK for the first of these
        reasons): both tables exist, the parent has a primary key and ``fk`` references it with
        one child column per key column, no child column is listed twice, the same FK (child,
        columns, parent) does not exist yet and no other FK has its name, and ``fk`` closes no
        cycle of references (a self-reference alone is allowed). Child columns declared as attributes are not a reason
        here: an editor turns them into FK columns (:meth:`with_foreign_key` does not, and
        construction reports them).

        Args:
            fk: The foreign key to add.
            replacing: Name of an FK that ``fk`` replaces (it is left out of the checks).

        Returns:
            Problems of kinds ``unknown_table``, ``bad_foreign_key``, ``duplicate_column``,
            ``duplicate_foreign_key`` and ``cycle``, in that order.
        """
        by_name = {t.name: t for t in self.tables}
        out = _reference_problems(fk, by_name)
        if len(set(fk.columns)) != len(fk.columns):
            out.append(Problem("duplicate_column", "a child column is listed twice", fk.child,
                               ", ".join(fk.columns)))
        if out:
            return out
        key = (fk.child, tuple(fk.columns), fk.parent)
        for other in self.foreign_keys:
            if other.name == replacing:
                continue
            if (other.child, tuple(other.columns), other.parent) == key:
                out.append(Problem("duplicate_foreign_key",
                                   f"this foreign key already exists ({other.name})", fk.child,
                                   ", ".join(fk.columns)))
            elif other.name == fk.name:
                out.append(Problem("duplicate_foreign_key",
                                   f"the name {fk.name!r} is taken by {other.label()}", fk.child,
                                   ", ".join(fk.columns)))
        if fk.self_referential:
            return out
        # fk.child → fk.parent closes a cycle when the parent already refers (transitively) to the child
        refers_to = self._fk_graph(without=replacing).reverse(copy=False)
        try:
            path = nx.shortest_path(refers_to, fk.parent, fk.child)
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            return out
        loop = " → ".join([fk.child, *path])
        out.append(Problem("cycle", f"{fk.label()} would create a cycle: {loop} (arrows read "
                           "'refers to')", fk.child))
        return out

    def topological_order(self) -> tuple[str, ...]:
        """Tables with parents first (ties in declaration order); raises on a cycle."""
        g = self._fk_graph()
        pos = {n: i for i, n in enumerate(self.table_names)}
        try:
            return tuple(nx.lexicographical_topological_sort(g, key=pos.__getitem__))
        except nx.NetworkXUnfeasible:
            raise SchemaError([p for p in self.problems() if p.kind == "cycle"]) from None

    def dependants(self, table: str) -> set[str]:
        """Tables with an FK path to ``table`` (its descendants in the FK graph)."""
        return set(nx.descendants(self._fk_graph(), table))

    @property
    def private_tables(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables if not t.public)

    @property
    def private_foreign_keys(self) -> tuple[ForeignKey, ...]:
        """FKs whose child is private: these are modelled (public–public FKs are copied)."""
        return tuple(fk for fk in self.foreign_keys if not self.table(fk.child).public)

    def inferred_attributes(self) -> list[tuple[str, str]]:
        """``(table, attribute)`` pairs whose domain was read from the data (not public)."""
        return [(t.name, a.name) for t in self.tables for a in t.attributes
                if a.provenance == "inferred" and not t.public]

    def inferred_foreign_keys(self) -> list[ForeignKey]:
        """Private FKs whose nullability was read from the data (not public)."""
        return [fk for fk in self.private_foreign_keys if fk.nullable_provenance == "inferred"]

    def inferred_problems(self) -> list[Problem]:
        """One problem per private fact read from the data: each inferred attribute domain and
        each inferred FK nullability. A release built on them is not differentially private."""
        out = [Problem("inferred_domain", "domain was read from the data (not a public domain): "
                       "declare it", t, a) for t, a in self.inferred_attributes()]
        out += [Problem("inferred_nullability", f"whether FK {fk.name!r} may be null was read from "
                        "the data (not public): declare nullable", fk.child, ", ".join(fk.columns))
                for fk in self.inferred_foreign_keys()]
        return out

    # -- edits ---------------------------------------------------------------------------------
    def with_foreign_key(self, fk: ForeignKey, *, replacing: str | None = None) -> Schema:
        """A new schema with ``fk`` added, or in place of the FK named ``replacing`` (default: the
        FK of the same name, if any), whose degree cap and its source move to ``fk``.

        Nothing is refused here beyond what construction checks; :meth:`foreign_key_problems`
        says whether ``fk`` may join.
        """
        old = fk.name if replacing is None else replacing
        if old not in {f.name for f in self.foreign_keys}:
            return replace(self, foreign_keys=self.foreign_keys + (fk,))
        fks = tuple(fk if f.name == old else f for f in self.foreign_keys)
        unit = self.privacy_unit
        if unit is not None and old != fk.name and old in unit.caps:
            rename = {old: fk.name}
            unit = replace(unit, caps={rename.get(k, k): v for k, v in unit.caps.items()},
                           cap_sources={rename.get(k, k): v for k, v in unit.cap_sources.items()})
        return replace(self, foreign_keys=fks, privacy_unit=unit)

    def without_foreign_key(self, name: str) -> Schema:
        self.foreign_key(name)
        unit = self.privacy_unit
        if unit is not None and name in unit.caps:
            unit = replace(unit, caps={k: v for k, v in unit.caps.items() if k != name})
        return replace(self, foreign_keys=tuple(f for f in self.foreign_keys if f.name != name),
                       privacy_unit=unit)

    def with_table(self, table: Table) -> Schema:
        """A new schema with ``table`` added, or replacing the table of the same name."""
        if table.name in self.table_names:
            tables = tuple(table if t.name == table.name else t for t in self.tables)
        else:
            tables = self.tables + (table,)
        return replace(self, tables=tables)

    def with_public(self, table: str, public: bool = True) -> Schema:
        return self.with_table(replace(self.table(table), public=public))

    def with_privacy_unit(self, unit: PrivacyUnit | None) -> Schema:
        return replace(self, privacy_unit=unit)

    def with_cap(self, fk: str, cap: int, *, source: Mapping[str, Any] | None = None) -> Schema:
        """A new schema with the degree cap τ of ``fk`` set; ``source`` says how it was chosen
        when not from public reasoning (see ``PrivacyUnit.cap_sources``)."""
        self.foreign_key(fk)
        unit = self.privacy_unit or PrivacyUnit()
        sources = {k: v for k, v in unit.cap_sources.items() if k != fk}
        if source is not None:
            sources[fk] = dict(source)
        return replace(self, privacy_unit=replace(unit, caps={**unit.caps, fk: int(cap)},
                                                  cap_sources=sources))

    # -- serialisation ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "tables": [t.to_dict() for t in self.tables],
            "foreign_keys": [fk.to_dict() for fk in self.foreign_keys],
            "privacy_unit": None if self.privacy_unit is None else self.privacy_unit.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        unit = d.get("privacy_unit")
        return cls(
            tables=tuple(Table.from_dict(t) for t in d["tables"]),
            foreign_keys=tuple(ForeignKey.from_dict(f) for f in d.get("foreign_keys", ())),
            privacy_unit=None if unit is None else PrivacyUnit.from_dict(unit),
            name=d.get("name", ""),
            description=d.get("description", ""),
        )

    def to_json(self, path: str | Path | None = None, *, indent: int = 2) -> str:
        """JSON text of the schema; also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=_json_default)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> Schema:
        """Read a schema from JSON text or from a ``.json`` file."""
        p = Path(text_or_path) if not str(text_or_path).lstrip().startswith("{") else None
        text = p.read_text(encoding="utf-8") if p is not None else str(text_or_path)
        return cls.from_dict(json.loads(text))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (pd.Timestamp,)):
        return o.isoformat()
    raise TypeError(f"cannot serialise {type(o).__name__}")


# ------------------------------------------------------------------------------------------------
# Inference: a first guess that a curator reviews (it reads the data; it is not private)
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FKProposal:
    """A foreign key proposed by :func:`propose_foreign_keys`, with its evidence.

    Attributes:
        fk: The proposed foreign key.
        containment: Share of non-null child values found among the parent's keys.
        name_match: Whether the column name matches the parent (``x_id``, same name as the PK).
        orphans: Number of child rows whose value is not a parent key.
        reason: One sentence for the UI.
    """

    fk: ForeignKey
    containment: float
    name_match: bool
    orphans: int
    reason: str


_ID_PATTERNS = ("{t}_id", "{s}_id", "{t}id", "{s}id", "id_{t}", "id_{s}", "{t}_key", "{s}_key")


def _singular(name: str) -> str:
    n = name.lower()
    if n.endswith("ies"):
        return n[:-3] + "y"
    if n.endswith("ses") or n.endswith("xes"):
        return n[:-2]
    if n.endswith("s") and not n.endswith("ss"):
        return n[:-1]
    return n


def _norm(col: str) -> str:
    return re.sub(r"[^a-z0-9]", "", col.lower())


def _guess_primary_key(name: str, df: pd.DataFrame) -> tuple[str, ...]:
    candidates = [c for c in df.columns if df[c].notna().all() and df[c].is_unique
                  and not pd.api.types.is_float_dtype(df[c])]
    if not candidates:
        return ()
    wanted = {_norm(p.format(t=name, s=_singular(name))) for p in _ID_PATTERNS} | {"id", "key"}
    for c in candidates:
        if _norm(c) in wanted:
            return (c,)
    for c in candidates:
        if _norm(c).endswith("id") or _norm(c).endswith("key") or _norm(c).endswith("code"):
            return (c,)
    first = df.columns[0]
    return (first,) if first in candidates else ()


def _infer_attribute(col: str, s: pd.Series, max_categories: int, bins: int) -> Attribute:
    nullable = bool(s.isna().any())
    values = s.dropna()
    if pd.api.types.is_bool_dtype(values) or (
        not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_datetime64_any_dtype(values)
    ):
        if pd.api.types.is_bool_dtype(values):
            cats = [False, True]
        else:
            cats = sorted(values.astype(str).unique().tolist()) if values.map(type).nunique() > 1 \
                else sorted(values.unique().tolist())
        if not cats:
            cats = ["(empty)"]
        return Attribute.categorical(col, cats, nullable=nullable, provenance="inferred")
    if pd.api.types.is_datetime64_any_dtype(values):
        lo, hi = values.min(), values.max()
        if lo == hi:
            hi = lo + pd.Timedelta(days=1)
        return Attribute.datetime(col, lo, hi, bins=bins, nullable=nullable, provenance="inferred")
    uniq = values.unique()
    integer = bool(pd.api.types.is_integer_dtype(values) or
                   (len(values) and np.all(np.mod(values.to_numpy(dtype=float), 1) == 0)))
    if integer and len(uniq) <= max(2, min(max_categories, 20)):
        return Attribute.categorical(col, sorted(int(u) for u in uniq), nullable=nullable,
                                     provenance="inferred")
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    if lo == hi:
        hi = lo + 1.0
    return Attribute.numeric(col, lo, hi, bins=bins, integer=integer, nullable=nullable,
                             provenance="inferred")


def infer_attributes(df: pd.DataFrame, exclude: Iterable[str] = (), *, max_categories: int = 200,
                     bins: int = 32) -> tuple[Attribute, ...]:
    """Proposed attributes (``provenance="inferred"``) for the columns of ``df`` not in ``exclude``.

    Text and boolean columns become categorical over the observed values; integer columns with at
    most 20 distinct values categorical too; other numbers numeric on the observed range with
    ``bins`` uniform bins; datetimes datetime. Reads the data: not a public domain.
    """
    exclude = set(exclude)
    return tuple(_infer_attribute(c, df[c], max_categories, bins) for c in df.columns
                 if c not in exclude)


def propose_foreign_keys(
    frames: Mapping[str, pd.DataFrame],
    primary_keys: Mapping[str, Sequence[str]],
    *,
    min_containment: float = 0.9,
) -> list[FKProposal]:
    """Propose single-column foreign keys from names and value containment.

    A child column ``c`` is proposed as an FK to a parent with single-column primary key ``p``
    when ``c`` is not the child's own single-column key, at least ``min_containment`` of its
    non-null values are parent keys, and either its name matches the parent (``c == p``,
    ``<parent>_id``, ``<parent singular>_id``, …) or it is a text column fully contained in the
    parent's keys. Reads the data: a curator view, not private.

    Returns:
        Proposals sorted by child table, then column; one per (child column, parent) pair.
    """
    proposals: list[FKProposal] = []
    key_sets: dict[str, pd.Index] = {}
    for parent, pk in primary_keys.items():
        if len(pk) == 1:
            key_sets[parent] = pd.Index(frames[parent][pk[0]].dropna().unique())
    for child, df in frames.items():
        own_pk = tuple(primary_keys.get(child, ()))
        for col in df.columns:
            if own_pk == (col,):
                continue
            values = df[col].dropna()
            if values.empty or pd.api.types.is_float_dtype(values) and not np.all(
                    np.mod(values.to_numpy(dtype=float), 1) == 0):
                continue
            for parent, keys in key_sets.items():
                if parent == child and own_pk == (col,):
                    continue
                pk = primary_keys[parent][0]
                names = {_norm(p.format(t=parent, s=_singular(parent))) for p in _ID_PATTERNS}
                name_match = _norm(col) == _norm(pk) or _norm(col) in names
                try:
                    inside = values.isin(keys)
                except TypeError:
                    continue
                containment = float(inside.mean())
                is_text = not pd.api.types.is_numeric_dtype(values)
                if containment < min_containment:
                    continue
                if not (name_match or (is_text and containment == 1.0 and len(keys) >= 2)):
                    continue
                orphans = int((~inside).sum())
                reason = (f"{containment:.1%} of {child}.{col} values are {parent}.{pk} keys"
                          + ("; names match" if name_match else ""))
                proposals.append(FKProposal(
                    ForeignKey(child, (col,), parent, (pk,), nullable=bool(df[col].isna().any())),
                    containment, name_match, orphans, reason))
    proposals.sort(key=lambda p: (p.fk.child, p.fk.columns, -p.containment))
    return proposals


def infer_schema(
    frames: Mapping[str, pd.DataFrame],
    *,
    max_categories: int = 200,
    bins: int = 32,
    min_containment: float = 0.9,
) -> Schema:
    """Propose a schema from data frames: primary keys, foreign keys, attribute domains.

    This is a starting point for a curator, not a private step: it reads the data. Every
    attribute domain is marked ``provenance="inferred"`` (and every FK's nullability
    ``nullable_provenance="inferred"``) and every table private with a row-level
    privacy unit; FKs come from :func:`propose_foreign_keys` (one parent per child column, the
    best-contained; name matches first). Caller frames are not modified.

    Args:
        frames: ``{table name: DataFrame}``.
        max_categories: Text columns with more distinct values than this are still categorical
            (the domain is what it is) — a warning sign that the column may be an identifier.
        bins: Uniform bins proposed for numeric columns.
        min_containment: See :func:`propose_foreign_keys`.

    Returns:
        A :class:`Schema`; review it (e.g. in ``relviz.ui.SchemaEditor``) before synthesis.
    """
    pks = {name: _guess_primary_key(name, df) for name, df in frames.items()}
    props = propose_foreign_keys(frames, pks, min_containment=min_containment)
    chosen: dict[tuple[str, str], FKProposal] = {}
    for p in sorted(props, key=lambda p: (not p.name_match, -p.containment)):
        chosen.setdefault((p.fk.child, p.fk.columns[0]), p)
    fks = []
    used_names: set[str] = set()
    for p in chosen.values():
        fk = p.fk
        if fk.name in used_names:
            continue
        used_names.add(fk.name)
        fks.append(replace(fk, nullable_provenance="inferred"))
    tables = []
    for name, df in frames.items():
        exclude = set(pks[name]) | {c for fk in fks if fk.child == name for c in fk.columns}
        tables.append(Table(name, pks[name], infer_attributes(df, exclude, max_categories=max_categories,
                                                              bins=bins)))
    caps = {fk.name: 1000 for fk in fks}
    return Schema(tuple(tables), tuple(fks),
                  PrivacyUnit(entity=None, caps=caps,
                              rationale="inferred: row-level unit with placeholder caps; review them"))
