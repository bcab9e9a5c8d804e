"""Schema of a relational database: attributes with public domains, tables, foreign keys, the
privacy unit, and a first guess of all of these from data frames (``infer_schema``).

Everything here is *public* by construction: a schema is what the curator declares before any
private data are read (docs/privacy.md, "Public facts and inferred schemas"). The one exception is :func:`infer_schema`, which
reads the data to *propose* a schema, with the reason for each proposal in ``Schema.proposals``
(curator material, left out of the JSON of a release); every domain and key format it proposes is
marked ``provenance="inferred"`` (an FK's nullability ``nullable_provenance="inferred"``); relviz warns
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
from relviz.keys import KeyFormat, propose_key_format

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
DAY_SECONDS = 86_400.0

#: Attribute-name prefixes of relviz's own model variables: PrivLava's latent group variables
#: ``__Z1[fk]`` / ``__Z2[fk]`` (docs/methods/privlava.md); a column so named would be taken for one.
RESERVED_PREFIXES = ("__Z1[", "__Z2[")
#: Attribute-name suffixes of the two digits of a split attribute (``a#hi``, ``a#lo``:
#: docs/methods/privpetal.md §3.1, PrivLava's splits).
RESERVED_SUFFIXES = ("#hi", "#lo")


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
        date: Datetime only: the values are calendar dates (no time of day); they are decoded to
            whole days (midnight), and when there are no more days than bins each day gets its
            own bin.
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
    date: bool = False

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
        date: bool = False,
        **kw: Any,
    ) -> Attribute:
        """A datetime attribute with public bounds (binned uniformly in time; ``date=True``:
        calendar dates, decoded to whole days)."""
        return cls(
            name,
            "datetime",
            lower=pd.Timestamp(lower).isoformat(),
            upper=pd.Timestamp(upper).isoformat(),
            bins=bins,
            nullable=nullable,
            date=date,
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
            if self.date and self.kind != "datetime":
                bad("date=True applies to datetime attributes only")
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
        unit = DAY_SECONDS if self.date else 1.0
        if self.integer or self.date:  # whole numbers (of days for dates)
            lo_u, hi_u = lo / unit, hi / unit
            n_int = math.floor(hi_u) - math.ceil(lo_u) + 1
            if n_int <= int(self.bins):  # one bin per integer, exact round trip
                return (np.arange(math.ceil(lo_u), math.floor(hi_u) + 2, dtype=float) - 0.5) * unit
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
            if self.kind == "datetime" and self.date:
                first = pd.to_datetime(np.ceil(e[:-1] / DAY_SECONDS - 1e-9) * DAY_SECONDS, unit="s")
                last_day = np.ceil(e[1:] / DAY_SECONDS - 1e-9) - 1
                last_day[-1] = np.floor(e[-1] / DAY_SECONDS + 1e-9)  # the upper bound is in the last bin
                last = pd.to_datetime(last_day * DAY_SECONDS, unit="s")
                labels = [f"{a:%Y-%m-%d}" if a == b else f"[{a:%Y-%m-%d}, {b:%Y-%m-%d}]"
                          for a, b in zip(first, last)]
            elif self.kind == "datetime":
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
        for key, default in (("integer", False), ("date", False), ("nullable", False),
                             ("provenance", "declared"), ("description", "")):
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
        exclude: Columns of the data that are deliberately not modelled (identifiers, personal
            data, free text): a database built on this schema drops them, validation does not
            report them, and synthetic tables omit them. They must not be key, FK or attribute
            columns.
        key_format: The public format of synthetic values of primary-key columns
            (:class:`~relviz.keys.KeyFormat`, at most one per PK column; see
            :func:`relviz.keys.format_synthetic_keys`). PK columns without one get integers.
    """

    name: str
    primary_key: tuple[str, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    public: bool = False
    description: str = ""
    exclude: tuple[str, ...] = ()
    key_format: tuple[KeyFormat, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.primary_key, str):
            object.__setattr__(self, "primary_key", (self.primary_key,))
        object.__setattr__(self, "primary_key", tuple(self.primary_key))
        object.__setattr__(self, "attributes", tuple(self.attributes))
        object.__setattr__(self, "exclude", (self.exclude,) if isinstance(self.exclude, str)
                           else tuple(self.exclude))
        object.__setattr__(self, "key_format", tuple(self.key_format))
        problems = []
        declared = set(self.primary_key) | {a.name for a in self.attributes}
        both = sorted(set(self.exclude) & declared)
        if both:
            problems.append(Problem("duplicate_column", "an excluded column cannot also be a key or an "
                                    "attribute", self.name, ", ".join(both)))
        if len(set(self.exclude)) != len(self.exclude):
            problems.append(Problem("duplicate_column", "exclude lists a column twice", self.name))
        fmt_cols = [f.column for f in self.key_format]
        stray = sorted(set(fmt_cols) - set(self.primary_key))
        if stray:
            problems.append(Problem("bad_key_format", "a key format applies to primary-key columns "
                                    "only", self.name, ", ".join(stray)))
        if len(set(fmt_cols)) != len(fmt_cols):
            problems.append(Problem("bad_key_format", "two key formats for one column", self.name))
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

    def format_of(self, column: str) -> KeyFormat | None:
        """The declared key format of primary-key column ``column``, if any."""
        return next((f for f in self.key_format if f.column == column), None)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "primary_key": list(self.primary_key),
            "public": self.public,
            "attributes": [a.to_dict() for a in self.attributes],
        }
        if self.exclude:
            d["exclude"] = list(self.exclude)
        if self.key_format:
            d["key_format"] = {f.column: f.to_dict() for f in self.key_format}
        if self.description:
            d["description"] = self.description
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Table:
        """From :meth:`to_dict`'s form; ``key_format`` maps a PK column to a format dict or a
        format string such as ``"N{:05d}"``."""
        return cls(
            name=d["name"],
            primary_key=tuple(d.get("primary_key", ())),
            attributes=tuple(Attribute.from_dict(a) for a in d.get("attributes", ())),
            public=bool(d.get("public", False)),
            description=d.get("description", ""),
            exclude=tuple(d.get("exclude", ())),
            key_format=tuple(KeyFormat.from_dict(c, f) for c, f in (d.get("key_format") or {}).items()),
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
class Proposal:
    """One thing :func:`infer_schema` proposes, and why: the curator accepts or corrects it.

    Attributes:
        table: The table concerned.
        column: The column(s) concerned (composite keys joined with ``", "``); ``None`` for a
            whole-table proposal.
        kind: What is proposed: ``"primary_key"``, ``"near_key"`` (a key with a few duplicate
            values, reported in ``examples``), ``"foreign_key"``, ``"public_table"``,
            ``"excluded"`` (identifier, personal data or free text: left out of the model),
            ``"datetime"``, ``"integer"``, ``"categorical"``, ``"numeric"``, ``"key_format"``.
        proposal: What the schema now says, in a few words (e.g. ``"exclude"``, ``"datetime on
            [1992-01-01, 1998-08-02], whole days"``).
        reason: The evidence and the rule, one or two sentences a curator can check.
        count: Rows concerned, when the evidence counts rows (duplicates, values matching a shape).
        examples: Up to five values (duplicate keys); read from the data, like everything here.

    Proposals read the data: they are curator material (not private), never part of a release
    (``Schema.to_json`` leaves them out unless asked).
    """

    table: str
    column: str | None
    kind: str
    proposal: str
    reason: str
    count: int = 0
    examples: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "examples", tuple(_python_scalar(v) for v in self.examples)[:5])

    def __str__(self) -> str:
        where = self.table + (f".{self.column}" if self.column else "")
        ex = (" (e.g. " + ", ".join(repr(v) for v in self.examples) + ")") if self.examples else ""
        return f"{where}: [{self.kind}] {self.proposal} — {self.reason}{ex}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"table": self.table, "column": self.column, "kind": self.kind,
                             "proposal": self.proposal, "reason": self.reason}
        if self.count:
            d["count"] = self.count
        if self.examples:
            d["examples"] = list(self.examples)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Proposal:
        return cls(d["table"], d.get("column"), d["kind"], d.get("proposal", ""), d.get("reason", ""),
                   int(d.get("count", 0)), tuple(d.get("examples", ())))


@dataclass(frozen=True)
class Schema:
    """Tables, foreign keys and the privacy unit of a relational database.

    Construction checks what makes the object meaningless (unknown tables or columns, duplicate
    names, FK columns that clash with attributes, FKs not pointing at a primary key) and raises
    one :class:`SchemaError` listing all such problems. Problems that a user may fix later in an
    editor (cycles, missing caps, an inconsistent privacy unit) are reported by
    :meth:`problems`, and by ``Database.validate`` together with the data problems.

    Edits return new schemas (``with_foreign_key``, ``without_foreign_key``, ``with_public``,
    ``with_privacy_unit``, ``with_table``, ``with_cap``, ``with_excluded``);
    :meth:`foreign_key_problems` says whether an FK may be added.

    ``proposals`` holds what :func:`infer_schema` proposed and why (:class:`Proposal`, for the
    curator and the schema editor); it is not part of the schema's meaning (ignored by ``==``)
    and not written by :meth:`to_json` unless asked, because its evidence is read from the data.
    """

    tables: tuple[Table, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    privacy_unit: PrivacyUnit | None = None
    name: str = ""
    description: str = ""
    proposals: tuple[Proposal, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", tuple(self.tables))
        object.__setattr__(self, "foreign_keys", tuple(self.foreign_keys))
        object.__setattr__(self, "proposals", tuple(self.proposals))
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
                gone = sorted(set(fk.columns) & set(child.exclude))
                if gone:
                    out.append(Problem("duplicate_column", f"FK {fk.name!r} uses excluded column(s)",
                                       fk.child, ", ".join(gone)))
                formatted = sorted(set(fk.columns) & {f.column for f in child.key_format})
                if formatted:
                    out.append(Problem("bad_key_format",
                                       f"a key format on a column of FK {fk.name!r}: its values come "
                                       f"from {fk.parent!r} (declare the format there)",
                                       fk.child, ", ".join(formatted)))
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

        Reports: attribute names of the form of relviz's own model variables
        (:data:`RESERVED_PREFIXES`, :data:`RESERVED_SUFFIXES`), FK cycles (a self-reference
        alone is allowed), public tables with an FK to a private table, and an inconsistent
        privacy unit (entity public, private tables that do
        not depend on the entity, missing caps for FKs with a private parent).
        """
        out: list[Problem] = []
        for t in self.tables:
            for a in t.attributes:
                if a.name.startswith(RESERVED_PREFIXES) or a.name.endswith(RESERVED_SUFFIXES):
                    out.append(Problem(
                        "reserved_name", f"attribute name {a.name!r} has the form relviz gives its "
                        "own model variables (a name starting with " + " or ".join(RESERVED_PREFIXES)
                        + ", or ending with " + " or ".join(RESERVED_SUFFIXES) + "); rename the column",
                        t.name, a.name))
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

    def inferred_key_formats(self) -> list[tuple[str, str]]:
        """``(table, column)`` pairs of private tables whose key format was read from the data."""
        return [(t.name, f.column) for t in self.tables for f in t.key_format
                if f.provenance == "inferred" and not t.public]

    def inferred_foreign_keys(self) -> list[ForeignKey]:
        """Private FKs whose nullability was read from the data (not public)."""
        return [fk for fk in self.private_foreign_keys if fk.nullable_provenance == "inferred"]

    def inferred_problems(self) -> list[Problem]:
        """One problem per private fact read from the data: each inferred attribute domain and
        each inferred FK nullability. A release built on them is not differentially private."""
        out = [Problem("inferred_domain", "domain was read from the data (not a public domain): "
                       "declare it", t, a) for t, a in self.inferred_attributes()]
        out += [Problem("inferred_domain", "key format (prefix, width) was read from the data (not "
                        "public): declare it", t, c) for t, c in self.inferred_key_formats()]
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

    def with_excluded(self, table: str, columns: Iterable[str]) -> Schema:
        """A new schema whose ``table`` also excludes ``columns`` (see ``Table.exclude``)."""
        t = self.table(table)
        extra = [c for c in columns if c not in t.exclude]
        return self.with_table(replace(t, exclude=t.exclude + tuple(dict.fromkeys(extra))))

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
    def to_dict(self, *, proposals: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; ``proposals=True`` adds ``"proposals"`` (curator material: their
        evidence is read from the data, so never put them in a release)."""
        d = {
            "name": self.name,
            "description": self.description,
            "tables": [t.to_dict() for t in self.tables],
            "foreign_keys": [fk.to_dict() for fk in self.foreign_keys],
            "privacy_unit": None if self.privacy_unit is None else self.privacy_unit.to_dict(),
        }
        if proposals and self.proposals:
            d["proposals"] = [p.to_dict() for p in self.proposals]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Schema:
        unit = d.get("privacy_unit")
        return cls(
            tables=tuple(Table.from_dict(t) for t in d["tables"]),
            foreign_keys=tuple(ForeignKey.from_dict(f) for f in d.get("foreign_keys", ())),
            privacy_unit=None if unit is None else PrivacyUnit.from_dict(unit),
            name=d.get("name", ""),
            description=d.get("description", ""),
            proposals=tuple(Proposal.from_dict(p) for p in d.get("proposals", ())),
        )

    def to_json(self, path: str | Path | None = None, *, indent: int = 2,
                proposals: bool = False) -> str:
        """JSON text of the schema; also written to ``path`` when given. ``proposals=True``
        includes :attr:`proposals` (curator material, never for a release)."""
        text = json.dumps(self.to_dict(proposals=proposals), indent=indent, ensure_ascii=False,
                          default=_json_default)
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


def _unprefixed(col: str) -> str:
    """``col`` normalised without a short table prefix (``"n_regionkey"`` → ``"regionkey"``,
    ``"ps_partkey"`` → ``"partkey"``), the TPC-H naming style."""
    m = re.match(r"^[A-Za-z]{1,3}_(.+)$", col)
    return _norm(m.group(1) if m else col)


_KEY_NAMES = _ID_PATTERNS + ("{t}", "{s}")
_EPOCH_NAME = re.compile(r"(time|date|epoch|timestamp|_at$|_ts$|created|updated|modified)", re.I)
_ID_NAME = re.compile(r"(id|key|code|number|num|no)$", re.I)
_PII_NAME = re.compile(r"(name|address|street|phone|mobile|fax|e_?mail|ssn|passport|iban|comment|"
                       r"note|remark|description|url)", re.I)
_EMAIL = r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}"
_URL = r"(https?|ftp)://\S+|www\.\S+"
_PHONE = r"\+?[\d\s().\-/]{7,24}"
_SHAPE_SAMPLE = 5_000


def _key_rank(table: str, col: str, position: int) -> int | None:
    """How strongly a column's name (or position) says it is ``table``'s key: 0 (``id``,
    ``<table>_id``, the table's own name …), 1 (ends in id/key/code), 2 (first column), else
    ``None``."""
    wanted = {_norm(p.format(t=table, s=_singular(table))) for p in _KEY_NAMES} | {"id", "key"}
    n = _norm(col)
    if n in wanted:
        return 0
    if n.endswith(("id", "key", "code")):
        return 1
    return 2 if position == 0 else None


def _guess_primary_key(name: str, df: pd.DataFrame, max_key_duplicates: float = 0.05
                       ) -> tuple[tuple[str, ...], Proposal | None]:
    """The proposed primary key of one table and its proposal.

    A column is a candidate when its name or position says key (:func:`_key_rank`), it has no
    nulls and it is not a float, boolean or datetime column. A unique candidate wins (best
    rank first); failing that, a *near-key*: a candidate named like a key whose duplicate rows are
    at most ``max_key_duplicates`` of the rows, proposed with its duplicates reported (they must
    be fixed before synthesis; ``Database.validate`` lists them).
    """
    exact: list[tuple[int, int, str]] = []
    near: list[tuple[int, int, str]] = []
    n = len(df)
    for pos, c in enumerate(df.columns):
        rank = _key_rank(name, str(c), pos)
        s = df[c]
        if rank is None or n == 0 or s.isna().any() or pd.api.types.is_float_dtype(s) \
                or pd.api.types.is_bool_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
            continue
        if s.is_unique:
            exact.append((rank, pos, c))
        elif rank < 2 and (n - s.nunique()) <= max_key_duplicates * n:
            near.append((rank, pos, c))
    if exact:
        c = min(exact)[2]
        why = {0: "its name says it is the table's key", 1: "its name ends like a key's",
               2: "it is the first column"}[min(exact)[0]]
        return (c,), Proposal(name, c, "primary_key", "primary key",
                              f"unique and never null in {n:,} rows, and {why}")
    if near:
        c = min(near)[2]
        dup = df[c].duplicated(keep=False)
        values = pd.unique(df.loc[dup, c])
        return (c,), Proposal(
            name, c, "near_key", "primary key (with duplicates to fix)",
            f"named like a key and unique but for {len(values):,} value(s) repeated over "
            f"{int(dup.sum()):,} of {n:,} rows: kept as the key so that the FKs into it are "
            "proposed too; fix or remove the duplicate rows before synthesis (relviz validate "
            "lists them)", count=int(dup.sum()), examples=tuple(values[:5]))
    return (), None


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else 0.0


def _text_shape(values: pd.Series) -> tuple[str, str] | None:
    """``(label, reason)`` when text values look like personal data or free text, else ``None``.
    Tested on up to 5,000 distinct values."""
    uniq = pd.Series(pd.unique(values.astype(str)))
    if len(uniq) > _SHAPE_SAMPLE:
        uniq = uniq.sample(_SHAPE_SAMPLE, random_state=0)
    uniq = uniq.str.strip()
    for label, pattern, what in (("e-mail", _EMAIL, "e-mail addresses"),
                                 ("url", _URL, "web addresses"),
                                 ("phone", _PHONE, "phone numbers")):
        hit = uniq.str.fullmatch(pattern)
        if label == "phone":
            hit &= uniq.str.count(r"\d") >= 7
        if _share(hit) >= 0.9:
            return label, f"personal data: {_share(hit):.0%} of the distinct values look like {what}"
    words = uniq.str.split().str.len()
    length = uniq.str.len()
    if len(uniq) and (words.median() >= 5 or length.median() >= 40):
        return "free text", (f"free text: the distinct values have a median of {words.median():.0f} "
                             f"words and {length.median():.0f} characters")
    return None


def _datetime_values(values: pd.Series) -> pd.Series | None:
    """The values parsed as ISO 8601 datetimes (pandas' ``format="ISO8601"``) when at least 99 %
    of the distinct values parse and they are not plain numbers; else ``None``."""
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "date", "datetime", "mixed"):
        return None
    uniq = pd.Series(pd.unique(values))
    sample = uniq.sample(min(len(uniq), _SHAPE_SAMPLE), random_state=0).astype(str)
    if sample.str.fullmatch(r"\s*[+-]?\d+(\.\d*)?\s*").any():
        return None  # a number (a year alone) is not proposed as a date
    if _share(pd.to_datetime(sample, format="ISO8601", errors="coerce").notna()) < 0.99:
        return None
    parsed = pd.to_datetime(values, format="ISO8601", errors="coerce")
    if getattr(parsed.dt, "tz", None) is not None:
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    return parsed


def _epoch_unit(col: str, values: pd.Series) -> str | None:
    """``"s"`` or ``"ms"`` when an integer column is named like a time and its range is that of
    Unix epoch seconds (1973–2099) or milliseconds; else ``None``."""
    if not _EPOCH_NAME.search(col) or values.empty:
        return None
    lo, hi = float(values.min()), float(values.max())
    for unit, scale in (("s", 1.0), ("ms", 1e3)):
        if 1e8 * scale <= lo and hi <= 4.1e9 * scale:
            return unit
    return None


def _datetime_attribute(col: str, ts: pd.Series, nullable: bool, bins: int,
                        source: str) -> tuple[Attribute, Proposal]:
    ts = ts.dropna()
    lo, hi = ts.min(), ts.max()
    date = bool((ts == ts.dt.normalize()).all())
    if lo == hi:
        hi = lo + pd.Timedelta(days=1)
    attr = Attribute.datetime(col, lo, hi, bins=bins, nullable=nullable, date=date,
                              provenance="inferred")
    fmt = "%Y-%m-%d" if date else "%Y-%m-%d %H:%M:%S"
    return attr, Proposal("", col, "datetime", f"datetime on [{lo:{fmt}}, {hi:{fmt}}]"
                          + (", whole days" if date else ""),
                          f"{source}; the bounds are the observed range: replace them with public "
                          "bounds (e.g. the period the data cover) and confirm")


def _propose_column(table: str, col: str, s: pd.Series, *, public: bool, max_categories: int,
                    bins: int) -> tuple[Attribute | None, Proposal]:
    """One column's proposed attribute (``None``: exclude it) and the proposal that explains it."""
    nullable = bool(s.isna().any())
    values = s.dropna()
    n, kind_of = len(values), pd.api.types.infer_dtype(values, skipna=True)

    def done(attr: Attribute | None, kind: str, proposal: str, reason: str,
             count: int = 0) -> tuple[Attribute | None, Proposal]:
        return attr, Proposal(table, col, kind, proposal, reason, count)

    if n == 0:
        return done(None, "excluded", "exclude", "every value is null: nothing to model")
    if pd.api.types.is_bool_dtype(values) or kind_of == "boolean":
        return done(Attribute.categorical(col, [False, True], nullable=nullable, provenance="inferred"),
                    "categorical", "categorical {False, True}", "boolean values")
    if pd.api.types.is_datetime64_any_dtype(values):
        attr, p = _datetime_attribute(col, values, nullable, bins, "a datetime column")
        return attr, replace(p, table=table)
    if pd.api.types.is_numeric_dtype(values):
        nums = values.to_numpy(dtype=float)
        whole = bool(np.all(np.mod(nums, 1) == 0))
        n_uniq = len(np.unique(nums))
        unit = _epoch_unit(col, values) if whole else None
        if unit is not None:
            lo, hi = float(nums.min()), float(nums.max())
            first, last = (pd.to_datetime(v, unit=unit) for v in (lo, hi))
            return done(Attribute.numeric(col, lo, hi if hi > lo else lo + 1, bins=bins, integer=True,
                                          nullable=nullable, provenance="inferred"),
                        "datetime", f"integer epoch {'seconds' if unit == 's' else 'milliseconds'} "
                        f"on [{first:%Y-%m-%d}, {last:%Y-%m-%d}]",
                        "named like a time, with the range of Unix epoch "
                        f"{'seconds' if unit == 's' else 'milliseconds'}: kept as integers on the "
                        "observed bounds; replace them with public bounds and confirm")
        if whole and not public and n >= 50 and n_uniq == n and _ID_NAME.search(col):
            return done(None, "excluded", "exclude", f"identifier: named like an id and every one of "
                        f"the {n:,} values is distinct (not a key of this table)")
        if whole and n_uniq <= max(2, min(max_categories, 20)):
            cats = sorted(int(u) for u in np.unique(nums))
            return done(Attribute.categorical(col, cats, nullable=nullable, provenance="inferred"),
                        "categorical", f"categorical over {len(cats)} integer(s)",
                        f"whole numbers with only {len(cats)} distinct value(s) (≤ 20); the list is "
                        "the observed one: confirm it is public")
        if not whole and n_uniq <= min(max_categories, 20) and 5 * n_uniq <= n:
            cats = sorted(float(u) for u in np.unique(nums))
            return done(Attribute.categorical(col, cats, nullable=nullable, provenance="inferred"),
                        "categorical", f"categorical over {len(cats)} numbers",
                        f"only {len(cats)} distinct values (≤ 20), each repeated (e.g. rates in "
                        "steps): synthetic values are among them; the list is the observed one: "
                        "confirm it is public")
        lo, hi = float(nums.min()), float(nums.max())
        attr = Attribute.numeric(col, lo, hi if hi > lo else lo + 1.0, bins=bins, integer=whole,
                                 nullable=nullable, provenance="inferred")
        if whole:
            why = ("an integer column" if pd.api.types.is_integer_dtype(values)
                   else f"every one of the {n:,} values is a whole number")
            return done(attr, "integer", f"numeric, integer=True, on [{_fmt(lo)}, {_fmt(hi)}]",
                        f"{why}: synthetic values are whole too; the bounds are the observed "
                        f"range ({bins} bins): replace them with public bounds and confirm")
        return done(attr, "numeric", f"numeric on [{_fmt(lo)}, {_fmt(hi)}]",
                    f"numbers with {n_uniq:,} distinct values; the bounds are the observed range "
                    f"({bins} bins): replace them with public bounds and confirm")
    ts = _datetime_values(values)
    if ts is not None:
        bad = int(ts.isna().sum())
        attr, p = _datetime_attribute(col, ts, nullable, bins, "text in ISO 8601 date/time form"
                                      + (f" ({bad:,} values do not parse: relviz validate lists them)"
                                         if bad else ""))
        return attr, replace(p, table=table)
    text = values.astype(str) if values.map(type).nunique() > 1 else values
    n_uniq = int(text.nunique())
    if not public:
        shape = _text_shape(text)
        if shape is not None:
            return done(None, "excluded", "exclude", shape[1])
        if _PII_NAME.search(col) and n_uniq > 20 and n_uniq >= 0.5 * n:
            return done(None, "excluded", "exclude", f"the name suggests personal data or free text "
                        f"and {n_uniq:,} of {n:,} values ({n_uniq / n:.0%}) are distinct")
        if n_uniq > 20 and n_uniq >= 0.9 * n:
            return done(None, "excluded", "exclude", f"identifier-like: {n_uniq:,} distinct values in "
                        f"{n:,} rows ({n_uniq / n:.0%}); a categorical over them would release "
                        "them")
        if n_uniq > max_categories:
            return done(None, "excluded", "exclude", f"{n_uniq:,} distinct values: more than "
                        f"max_categories={max_categories} for a categorical domain; declare a "
                        "coarser public domain to model it")
    cats = sorted(text.unique().tolist())
    return done(Attribute.categorical(col, cats, nullable=nullable, provenance="inferred"),
                "categorical", f"categorical over {len(cats)} values",
                "text with few distinct values" + (" (a public table: kept whole)" if public else "")
                + "; the category list is the observed one: confirm it is public")


def _propose_columns(table: str, df: pd.DataFrame, skip: Iterable[str], *, public: bool = False,
                     max_categories: int = 200, bins: int = 32
                     ) -> tuple[tuple[Attribute, ...], tuple[str, ...], list[Proposal]]:
    """Proposed attributes, excluded columns and one proposal per column of ``df`` not in
    ``skip``."""
    skip = set(skip)
    attrs, excluded, props = [], [], []
    for c in df.columns:
        if c in skip:
            continue
        attr, p = _propose_column(table, c, df[c], public=public, max_categories=max_categories,
                                  bins=bins)
        props.append(p)
        if attr is None:
            excluded.append(c)
        else:
            attrs.append(attr)
    return tuple(attrs), tuple(excluded), props


def infer_attributes(df: pd.DataFrame, exclude: Iterable[str] = (), *, max_categories: int = 200,
                     bins: int = 32) -> tuple[Attribute, ...]:
    """Proposed attributes (``provenance="inferred"``) for the columns of ``df`` not in ``exclude``.

    Booleans and text with few distinct values become categorical over the observed values,
    integers with at most 20 distinct values categorical too; ISO 8601 text and datetime columns
    datetime (``date=True`` when every value is midnight); integer columns named like a time with
    an epoch range numeric integers; other numbers numeric on the observed range with ``bins``
    uniform bins (``integer=True`` when every value is whole). Columns that look like identifiers,
    personal data or free text are left out: :func:`infer_schema` proposes them for the table's
    ``exclude`` list, with the reason. Reads the data: not a public domain.
    """
    return _propose_columns("", df, exclude, max_categories=max_categories, bins=bins)[0]


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
    ``<parent>_id``, ``<parent singular>_id``, …, also after a short table prefix such as TPC-H's
    ``o_custkey`` ~ ``c_custkey``) or it is a text column fully contained in the
    parent's keys. Parent keys may hold a few duplicates (a near-key, see :func:`infer_schema`).
    Reads the data: a curator view, not private.

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
            is_text = not pd.api.types.is_numeric_dtype(values)
            for parent, keys in key_sets.items():
                if parent == child and own_pk == (col,):
                    continue
                pk = primary_keys[parent][0]
                names = {_norm(p.format(t=parent, s=_singular(parent))) for p in _ID_PATTERNS}
                name_match = (_norm(col) == _norm(pk) or _norm(col) in names
                              or _unprefixed(col) == _unprefixed(pk) or _unprefixed(col) in names)
                if not (name_match or is_text):
                    continue  # neither named like the parent's key nor text: never proposed
                try:
                    inside = values.isin(keys)
                except TypeError:
                    continue
                containment = float(inside.mean())
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


def _propose_public(frames: Mapping[str, pd.DataFrame], fks: Sequence[ForeignKey],
                    small_table_rows: int) -> tuple[set[str], list[Proposal]]:
    """Small reference tables proposed public: at most ``small_table_rows`` rows, referenced by
    an FK of another table, and referring only to tables proposed public (a public table may not
    refer to a private one)."""
    g = nx.DiGraph()
    g.add_nodes_from(frames)
    g.add_edges_from((fk.parent, fk.child) for fk in fks if not fk.self_referential)
    try:
        order = list(nx.topological_sort(g))
    except nx.NetworkXUnfeasible:
        return set(), []
    public: set[str] = set()
    props = []
    for t in order:
        users = sorted({f"{fk.child}.{'+'.join(fk.columns)}" for fk in fks
                        if fk.parent == t and fk.child != t})
        parents = {fk.parent for fk in fks if fk.child == t}
        n = len(frames[t])
        if n <= small_table_rows and users and parents <= public:
            public.add(t)
            props.append(Proposal(t, None, "public_table", "public (released verbatim, no budget)",
                                  f"a small reference table: {n:,} rows (≤ {small_table_rows}), "
                                  f"referenced by {', '.join(users[:3])}"
                                  + (" …" if len(users) > 3 else "")
                                  + (", referring only to public tables" if parents else "")
                                  + "; confirm that its contents are public knowledge, or mark "
                                  "it private"))
    return public, props


def infer_schema(
    frames: Mapping[str, pd.DataFrame],
    *,
    primary_keys: Mapping[str, Sequence[str]] | None = None,
    foreign_keys: Sequence[ForeignKey] | None = None,
    max_categories: int = 200,
    bins: int = 32,
    min_containment: float = 0.9,
    small_table_rows: int = 30,
    max_key_duplicates: float = 0.05,
) -> Schema:
    """Propose a schema from data frames: keys, foreign keys, public tables, attribute domains,
    excluded columns and key formats, each with the reason (``Schema.proposals``).

    This is a starting point for a curator, not a private step: it reads the data. The rules:

    * Primary keys: declared ones (``primary_keys``, e.g. a database file's PRIMARY KEYs), else a
      unique never-null column named or placed like a key; failing that a *near-key* named like
      one with at most ``max_key_duplicates`` duplicate rows, kept as the key with its duplicates
      reported (kind ``"near_key"``), so the FKs into it are still proposed.
    * Foreign keys: declared ones (``foreign_keys``), else :func:`propose_foreign_keys` (one
      parent per child column, name matches first, then the best-contained); nullability is
      marked ``nullable_provenance="inferred"``.
    * Public tables: at most ``small_table_rows`` rows, referenced by another table and referring
      only to public tables (lookup lists such as TPC-H's 5 regions and 25 nations); every other
      table is private under a row-level unit, with a placeholder cap of 1000 on each FK between
      private tables (review the caps).
    * Attributes (:func:`infer_attributes`): ISO 8601 text and datetimes → datetime (whole days
      when every value is midnight); integers named like a time with an epoch range → integer
      numeric; whole-valued numbers → ``integer=True``; few distinct integers or text values →
      categorical. Columns of private tables that look like identifiers (near-unique text,
      unique integers named like an id), personal data (e-mail, phone or web-address shapes,
      names such as ``*_name``/``*_address`` with many distinct values), free text (≥ 5 words or
      ≥ 40 characters typically) or with more than ``max_categories`` values are proposed for
      the table's ``exclude`` list.
    * Key formats: a text primary key of a table gets a :class:`~relviz.keys.KeyFormat` proposed
      from its shape (``"N10156"`` → prefix ``"N"``, width 5), so synthetic keys keep the type.

    Every attribute domain and key format is marked ``provenance="inferred"``: not public until
    the curator confirms it (synthesis refuses it otherwise). Caller frames are not modified.

    Args:
        frames: ``{table name: DataFrame}``.
        primary_keys: Declared primary keys (tables missing here are guessed).
        foreign_keys: Declared foreign keys (then none is guessed).
        max_categories: Most distinct text values proposed as a categorical domain.
        bins: Uniform bins proposed for numeric and datetime columns.
        min_containment: See :func:`propose_foreign_keys`.
        small_table_rows: Largest referenced table proposed public.
        max_key_duplicates: Largest share of duplicate rows of a near-key.

    Returns:
        A :class:`Schema` whose ``proposals`` list what was proposed and why; review it (e.g. in
        ``relviz.ui.SchemaEditor``, or ``relviz schema``'s notes) before synthesis.
    """
    props: list[Proposal] = []
    pks: dict[str, tuple[str, ...]] = {}
    for name, df in frames.items():
        if primary_keys is not None and name in primary_keys:
            pks[name] = tuple(primary_keys[name])
            if pks[name]:
                cols = list(pks[name])
                dup = df[cols].duplicated(keep=False) if all(c in df for c in cols) else pd.Series([], dtype=bool)
                if dup.any():
                    ex = df.loc[dup, cols].drop_duplicates().head(5).to_numpy()
                    props.append(Proposal(name, ", ".join(cols), "near_key", "primary key (declared; "
                                          "duplicates to fix)", "declared by the database, but "
                                          f"{int(dup.sum()):,} rows repeat a key: fix them before "
                                          "synthesis (relviz validate lists them)", int(dup.sum()),
                                          tuple(v[0] if len(v) == 1 else tuple(v) for v in ex)))
                else:
                    props.append(Proposal(name, ", ".join(cols), "primary_key", "primary key",
                                          "declared by the database (PRIMARY KEY)"))
        else:
            pks[name], p = _guess_primary_key(name, df, max_key_duplicates)
            if p is not None:
                props.append(p)
    if foreign_keys is not None:
        fks = [replace(fk, nullable_provenance="inferred") for fk in foreign_keys]
        props += [Proposal(fk.child, ", ".join(fk.columns), "foreign_key", f"FK → {fk.parent}",
                           "declared by the database (FOREIGN KEY)") for fk in fks]
    else:
        fk_props = propose_foreign_keys(frames, pks, min_containment=min_containment)
        chosen: dict[tuple[str, str], FKProposal] = {}
        for p in sorted(fk_props, key=lambda p: (not p.name_match, -p.containment)):
            chosen.setdefault((p.fk.child, p.fk.columns[0]), p)
        fks, used_names = [], set()
        for p in chosen.values():
            if p.fk.name in used_names:
                continue
            used_names.add(p.fk.name)
            fks.append(replace(p.fk, nullable_provenance="inferred"))
            props.append(Proposal(p.fk.child, p.fk.columns[0], "foreign_key",
                                  f"FK → {p.fk.parent}.{p.fk.parent_columns[0]}", p.reason
                                  + (f"; {p.orphans:,} orphan rows (repair them)" if p.orphans else ""),
                                  p.orphans))
    public, pub_props = _propose_public(frames, fks, small_table_rows)
    props += pub_props
    tables = []
    for name, df in frames.items():
        fk_cols = {c for fk in fks if fk.child == name for c in fk.columns}
        attrs, excluded, col_props = _propose_columns(
            name, df, set(pks[name]) | fk_cols, public=name in public,
            max_categories=max_categories, bins=bins)
        props += col_props
        formats = []
        for c in pks[name]:
            if c in fk_cols or name in public:  # a public table's keys are copied verbatim
                continue
            fmt, why = propose_key_format(c, df[c])
            if fmt is not None:
                formats.append(fmt)
                props.append(Proposal(name, c, "key_format", f"key format {fmt.template!r}", why))
        tables.append(Table(name, pks[name], attrs, public=name in public, exclude=excluded,
                            key_format=tuple(formats)))
    caps = {fk.name: 1000 for fk in fks if fk.child not in public and fk.parent not in public}
    order = {n: i for i, n in enumerate(frames)}
    props.sort(key=lambda p: order.get(p.table, len(order)))
    return Schema(tuple(tables), tuple(fks),
                  PrivacyUnit(entity=None, caps=caps,
                              rationale="inferred: row-level unit with placeholder caps; review them"),
                  proposals=tuple(props))
