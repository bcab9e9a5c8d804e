"""The synthesis plan: how the privacy budget is shared and which method each part uses.

A :class:`Plan` holds the run's (ε, δ) (or a total ρ), one :class:`Component` per private table
(a single-table mechanism) and per private foreign key (a relational method), each with a share
of the total ρ. A link table with two foreign keys may instead be modelled as one many-to-many
*relation* component (``Plan.with_relation``), which replaces its two FK components. Shares are exact fractions that always add up to exactly 1, so the component
budgets add up to exactly the run's ρ (no float drift; docs/privacy.md). Locks and rebalancing
follow the budget table of OpenDP's DP Creator: a locked share keeps its value, the unlocked ones
absorb every change.

Conversion of (ε, δ) to ρ: ``"auto"`` picks the exact Gaussian-DP curve when every mechanism of
the plan releases only Gaussian noise (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022;
as PrivLava, Cai, Xiao & Cormode, SIGMOD 2023, Thm 6.2; 17 % more ρ at ε = 1, δ = 1e-5), and the
optimal zCDP conversion otherwise (Canonne, Kamath & Steinke, NeurIPS 2020; docs/privacy.md).

What a share buys (:meth:`Plan.noise_preview`, the budget panel's rows): per component the noise σ
of its releases (each method's ``noise_scales``, a public computation) and the expected error of a
typical cell relative to the table size, ``σ·√(2/π)/n`` (the mean absolute value of N(0, σ²)
divided by ``n``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx

from relviz.errors import ParameterError, PlanError, Problem, SchemaError, error_reason
from relviz.privacy.accountant import epsilon_from_rho, rho_from_epsilon_delta
from relviz.privacy.budget import to_fraction
from relviz.privacy.measure import CURATOR_VIEW
from relviz.schema import Schema

if TYPE_CHECKING:  # pragma: no cover
    from relviz.database import Database

__all__ = ["Component", "Plan", "NoisePreview", "to_fraction", "RELATION_SUFFIX", "relation_name",
           "MEAN_ABS_NORMAL", "SMALL_SHARE_ERROR", "PRESETS"]

RELATION_SUFFIX = " (m:n)"

PRESETS: dict[str, str] = {
    "default": "Plan.default: tables share 2/3 equally, private FKs 1/3 equally, degree "
               "baseline on every FK (bi-adjacency or another method with --method).",
    "privlava-degree": "PrivLava on the FKs to private parents (children generated as groups of "
                       "their parent), the degree baseline on the FKs to public parents (relviz's "
                       "mixed mode: large public groups need no latent model or cap); "
                       "docs/methods/privlava.md §5.",
    "baseline-80-20": "The papers' per-relation baseline (PrivLava, Cai, Xiao & Cormode, SIGMOD "
                      "2023, §7.1): 80 % of the budget synthesises each private table "
                      "independently (split equally among them), 20 % releases one noisy "
                      "group-size histogram per private FK (split equally), and synthetic "
                      "children are linked at random so that the group sizes follow it "
                      "(degree baseline, docs/methods/degree.md).",
    "denorm": "The papers' Denorm baseline (same §7.1): 20 % for the noisy group-size "
              "histograms, 80 % for the single-relation synthesis of each private child joined "
              "with its private parent, normalised back by the noisy group sizes "
              "(docs/methods/denorm.md).",
}
"""Named plans (:meth:`Plan.preset`, CLI ``relviz synth --preset NAME``): ``{name: description}``."""


def relation_name(table: str) -> str:
    """Plan component name of the many-to-many relation through link table ``table``."""
    return table + RELATION_SUFFIX

ConversionChoice = Literal["auto", "zcdp", "gdp", "closed_form"]
# Noise sampler of the run (relviz.privacy.noise): "auto" is OpenDP's exact samplers for an
# unseeded run and numpy's seedable ones for a seeded run (study, teaching, tests).
NoiseChoice = Literal["auto", "numpy", "opendp"]
NOISE_CHOICES: tuple[str, ...] = ("auto", "numpy", "opendp")


@dataclass(frozen=True)
class Component:
    """One budgeted part of a plan.

    Attributes:
        name: Table name (``kind="table"``), FK name (``kind="edge"``) or link-table name
            (``kind="relation"``: the many-to-many relation between the two parents of the link
            table).
        kind: ``"table"``, ``"edge"`` or ``"relation"``.
        method: Registered single-table mechanism (tables), relational method (edges) or
            many-to-many method (relations).
        share: Exact share of the run's ρ, in (0, 1].
        locked: A locked share is kept by :meth:`Plan.with_share` and :meth:`Plan.rebalance`.
        params: Keyword hyper-parameters of the method.
    """

    name: str
    kind: Literal["table", "edge", "relation"]
    method: str
    share: Fraction
    locked: bool = False
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "share", to_fraction(self.share))
        object.__setattr__(self, "params", dict(self.params))

    def __hash__(self) -> int:
        return hash((self.name, self.kind, self.method, self.share, self.locked))

    @property
    def table(self) -> str:
        """The table a component is about: itself, an FK's child, or a relation's link table."""
        if self.kind == "relation":
            return self.name[: -len(RELATION_SUFFIX)] if self.name.endswith(RELATION_SUFFIX) else self.name
        return self.name

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "method": self.method,
                "share": f"{self.share.numerator}/{self.share.denominator}",
                "locked": self.locked, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Component:
        return cls(d["name"], d["kind"], d["method"], Fraction(d["share"]), bool(d.get("locked")),
                   dict(d.get("params", {})))


MEAN_ABS_NORMAL = math.sqrt(2.0 / math.pi)
"""E|N(0, 1)|: the expected absolute error of a Gaussian release is σ·√(2/π)."""

SMALL_SHARE_ERROR = 0.25
"""A component whose typical cell is off by more than this fraction of the table is flagged."""


@dataclass(frozen=True)
class NoisePreview:
    """What one component's share buys, before any data are read (:meth:`Plan.noise_preview`).

    Attributes:
        name: Table, FK or relation name.
        kind: ``"table"``, ``"edge"`` or ``"relation"``.
        method: Mechanism / relational method.
        share: Exact share of ρ.
        locked: Whether the share is locked.
        rho: Exact ρ of the component.
        sigmas: ``{release label: σ}`` from the method's ``noise_scales`` (empty if unavailable).
        sigma: σ of the first release (a typical marginal cell or degree bin), or ``None``.
        n: Size the error is relative to (rows of the table; parents of a degree histogram;
            children per parent on average for per-parent counts), or ``None``.
        n_label: What ``n`` is, and where it comes from (a count read from the private data says
            so: ``CURATOR_VIEW``).
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


@dataclass(frozen=True)
class Plan:
    """Budget and methods of a synthesis run.

    Attributes:
        epsilon: Target ε of the whole database (ignored for ρ when ``rho`` is given).
        delta: Target δ.
        components: One per private table and per private FK.
        conversion: ``"auto"``, ``"zcdp"``, ``"gdp"`` or ``"closed_form"``.
        rho: Optional total ρ given directly (then ε is derived for display).
        noise: Noise sampler: ``"auto"`` (OpenDP's exact samplers, or numpy's when the run is
            seeded), ``"numpy"`` or ``"opendp"``; see :meth:`resolved_noise`.
    """

    epsilon: float
    delta: float
    components: tuple[Component, ...]
    conversion: ConversionChoice = "auto"
    rho: float | None = None
    noise: NoiseChoice = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", tuple(self.components))
        problems = []
        if self.rho is None and not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            problems.append(Problem("bad_budget", f"ε must be positive and finite (got {self.epsilon!r})"))
        if not 0 < self.delta < 1:
            problems.append(Problem("bad_budget", f"δ must be in (0, 1) (got {self.delta!r})"))
        if self.rho is not None and not self.rho > 0:
            problems.append(Problem("bad_budget", "ρ must be positive"))
        if self.noise not in NOISE_CHOICES:
            problems.append(Problem("bad_noise", f"noise must be one of {', '.join(NOISE_CHOICES)} "
                                    f"(got {self.noise!r})"))
        names = [c.name for c in self.components]
        for n in sorted({n for n in names if names.count(n) > 1}):
            problems.append(Problem("duplicate_component", "component listed twice", n))
        if problems:
            raise PlanError(problems)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def default(
        cls,
        schema: Schema,
        epsilon: float = 1.0,
        delta: float = 1e-6,
        *,
        mechanism: str = "mst",
        method: str = "degree",
        relational_share: Fraction | float = Fraction(1, 3),
        conversion: ConversionChoice = "auto",
        fallback: str | None = "degree",
    ) -> Plan:
        """Tables share ``1 − relational_share`` equally, private FKs share the rest equally.

        (Equal ρ per table after the relationship share is set aside; with no private FK the tables
        get everything.)

        Args:
            fallback: Method for an FK that ``method`` cannot handle (e.g. bi-adjacency on an FK
                whose parent has no attribute: no cross-table workload). The substitution is
                listed by :meth:`substitutions`; ``None`` keeps ``method`` (``problems`` then
                reports the FK).
        """
        from relviz.relational import get as get_edge_method
        from relviz.relational import get_database, is_database_method

        if is_database_method(method):  # the method says which components it needs
            comps = [Component(n, k, m, sh) for n, k, m, sh in
                     get_database(method).default_components(schema, mechanism=mechanism)]
            return cls(float(epsilon), float(delta), tuple(comps), conversion)
        tables = list(schema.private_tables)
        edges = list(schema.private_foreign_keys)
        rel = to_fraction(relational_share) if edges and tables else (Fraction(1) if edges else Fraction(0))
        comps = [Component(t, "table", mechanism, (1 - rel) / len(tables)) for t in tables]
        for fk in edges:
            chosen = method
            if fallback is not None and fallback != method:
                try:
                    if get_edge_method(method).problems(schema, fk):
                        chosen = fallback
                except KeyError:
                    pass
            comps.append(Component(fk.name, "edge", chosen, rel / len(edges)))
        return cls(float(epsilon), float(delta), tuple(comps), conversion)

    @classmethod
    def preset(cls, schema: Schema, name: str, epsilon: float = 1.0, delta: float = 1e-6, *,
               mechanism: str = "mst", conversion: ConversionChoice = "auto") -> Plan:
        """A named plan of :data:`PRESETS` (``"baseline-80-20"``: ``Plan.default`` with the degree
        baseline and ``relational_share=1/5``; ``"denorm"``: ``Plan.default(method="denorm")``,
        whose own split is 80/20; ``"default"``: ``Plan.default``).

        Raises:
            PlanError: for an unknown preset name (the known ones are listed).
        """
        if name == "baseline-80-20":
            return cls.default(schema, epsilon, delta, mechanism=mechanism, method="degree",
                               relational_share=Fraction(1, 5), conversion=conversion)
        if name == "denorm":
            return cls.default(schema, epsilon, delta, mechanism=mechanism, method="denorm",
                               conversion=conversion)
        if name == "default":
            return cls.default(schema, epsilon, delta, mechanism=mechanism, conversion=conversion)
        if name == "privlava-degree":
            from relviz.relational import get_database

            comps = [Component(n, k, m, sh) for n, k, m, sh in get_database("privlava")
                     .default_components(schema, mechanism=mechanism, public="degree")]
            return cls(float(epsilon), float(delta), tuple(comps), conversion)
        raise PlanError([Problem("unknown_preset", f"unknown preset {name!r}; available: "
                                 + ", ".join(PRESETS))])

    def substitutions(self, schema: Schema, method: str) -> list[str]:
        """Plain-words lines for the edges whose method is not ``method`` (and why)."""
        return [f"{fk}: {used} instead of {method} ({why})"
                for fk, used, why in self._substitution_reasons(schema, method)]

    def substitution_summary(self, schema: Schema, method: str) -> list[str]:
        """:meth:`substitutions` with the edges that share a method and a reason on one line
        (``"degree instead of privpetal for 4 FKs (reason): a, b, c, d"``): what the CLI prints."""
        groups: dict[tuple[str, str], list[str]] = {}
        for fk, used, why in self._substitution_reasons(schema, method):
            groups.setdefault((used, why), []).append(fk)
        return [f"{fks[0]}: {used} instead of {method} ({why})" if len(fks) == 1 else
                f"{used} instead of {method} for {len(fks)} FKs ({why}): {', '.join(fks)}"
                for (used, why), fks in groups.items()]

    def _substitution_reasons(self, schema: Schema, method: str) -> list[tuple[str, str, str]]:
        from relviz.relational import get as get_edge_method
        from relviz.relational import get_database, is_database_method

        # a database method that links some FKs itself says why (its mixed mode)
        reason = getattr(get_database(method), "linked_reason", None) \
            if is_database_method(method) else None
        out = []
        for c in self.edges:
            if c.method != method:
                why = reason(schema, schema.foreign_key(c.name)) if reason else None
                if not why:
                    try:
                        why = "; ".join(p.message for p in get_edge_method(method).problems(
                            schema, schema.foreign_key(c.name)))
                    except KeyError:
                        why = f"unknown method {method!r}"
                out.append((c.name, c.method, why))
        return out

    # -- queries -----------------------------------------------------------------------------
    @property
    def tables(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.kind == "table")

    @property
    def edges(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.kind == "edge")

    @property
    def relations(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if c.kind == "relation")

    @property
    def database_method(self) -> str | None:
        """The database method (PrivLava, Denorm) that owns this plan, if an edge names one."""
        from relviz.relational import is_database_method

        for c in self.edges:
            if is_database_method(c.method):
                return c.method
        return None

    def component_of(self, name: str, kind: str) -> Component | None:
        for c in self.components:
            if c.name == name and c.kind == kind:
                return c
        return None

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no plan component {name!r}")

    def resolved_conversion(self) -> Literal["zcdp", "gdp", "closed_form"]:
        """The conversion actually used (``"auto"`` → ``"gdp"`` iff every method is Gaussian-only)."""
        if self.conversion != "auto":
            return self.conversion
        from relviz.relational import get_class as edge_class
        from relviz.relational import get_database_class, is_database_method
        from relviz.relational import get_relation_class as relation_class
        from relviz.single import get_class as table_class

        if self.database_method is not None:
            def edge_class(name: str) -> type:  # noqa: F811 - the database method's class
                return get_database_class(name) if is_database_method(name) else \
                    _linker_class(name)
        try:
            gaussian = all(table_class(c.method).gaussian_only for c in self.tables) and \
                all(edge_class(c.method).gaussian_only for c in self.edges) and \
                all(relation_class(c.method).gaussian_only for c in self.relations)
        except KeyError:
            return "zcdp"
        return "gdp" if gaussian and self.components else "zcdp"

    @property
    def rho_total(self) -> float:
        """Total ρ of the run (from (ε, δ) under the resolved conversion, or as given)."""
        if self.rho is not None:
            return float(self.rho)
        return rho_from_epsilon_delta(self.epsilon, self.delta, self.resolved_conversion())

    @property
    def epsilon_effective(self) -> float:
        """ε at δ of the total ρ (equals ``epsilon`` unless ρ was given directly)."""
        if self.rho is None:
            return self.epsilon
        return epsilon_from_rho(self.rho, self.delta, self.resolved_conversion())

    def rho_of(self, name: str) -> Fraction:
        """Exact ρ of one component: ``Fraction(ρ_total) × share``."""
        return Fraction(self.rho_total) * self.component(name).share

    def budgets(self) -> dict[str, Fraction]:
        total = Fraction(self.rho_total)
        return {c.name: total * c.share for c in self.components}

    def total_share(self) -> Fraction:
        return sum((c.share for c in self.components), Fraction(0))

    # -- edits (each returns a new plan) --------------------------------------------------------
    def _replace_components(self, comps: list[Component]) -> Plan:
        return replace(self, components=tuple(comps))

    def with_share(self, name: str, share: float | Fraction, *, lock: bool = False) -> Plan:
        """Set one share; unlocked others are rescaled (proportionally) so the sum stays 1.

        Raises:
            PlanError: if the share is not in (0, 1], or the locked shares leave no room.
        """
        share = to_fraction(share)
        target = self.component(name)
        locked = sum((c.share for c in self.components if c.locked and c.name != name), Fraction(0))
        free = [c for c in self.components if not c.locked and c.name != name]
        if not 0 < share <= 1:
            raise PlanError([Problem("bad_share", f"a share must be in (0, 1] (got {float(share):.4g})", name)])
        room = 1 - locked
        if not free:
            if share != room:
                raise PlanError([Problem("bad_share", "every other share is locked: this share must "
                                         f"stay {float(room):.4g}", name)])
        elif share >= room:
            raise PlanError([Problem("bad_share", f"locked shares leave {float(room):.4g}; "
                                     f"{float(share):.4g} leaves nothing for the unlocked components",
                                     name)])
        rest = room - share
        free_total = sum((c.share for c in free), Fraction(0))
        new = []
        for c in self.components:
            if c.name == name:
                new.append(replace(c, share=share, locked=c.locked or lock))
            elif c in free:
                s = c.share * rest / free_total if free_total > 0 else rest / len(free)
                new.append(replace(c, share=s))
            else:
                new.append(c)
        _ = target
        return self._replace_components(new)

    def with_lock(self, name: str, locked: bool = True) -> Plan:
        return self._replace_components([replace(c, locked=locked) if c.name == name else c
                                         for c in self.components])

    def rebalance(self) -> Plan:
        """Split what the locked shares leave equally among the unlocked components."""
        locked = sum((c.share for c in self.components if c.locked), Fraction(0))
        free = [c for c in self.components if not c.locked]
        if not free:
            return self
        each = (1 - locked) / len(free)
        return self._replace_components([c if c.locked else replace(c, share=each)
                                         for c in self.components])

    def with_method(self, name: str, method: str, **params: Any) -> Plan:
        """Change a component's mechanism / relational method (and its parameters)."""
        return self._replace_components([replace(c, method=method, params=params) if c.name == name
                                         else c for c in self.components])

    def with_relation(self, schema: Schema, table: str, method: str = "biadjacency",
                      **params: Any) -> Plan:
        """Model link table ``table`` as one many-to-many relation between its two parents.

        The components of its two foreign keys are replaced by one ``"relation"`` component
        whose share is their sum (so the total stays exactly 1).

        Raises:
            PlanError: if ``table`` is not a private table with exactly two foreign keys.
        """
        fks = schema.fks_from(table) if table in schema.table_names else ()
        if len(fks) != 2 or schema.table(table).public:
            raise PlanError([Problem("bad_relation", "a many-to-many relation needs a private link "
                                     "table with exactly two foreign keys", table)])
        names = {fk.name for fk in fks}
        share = sum((c.share for c in self.components if c.kind == "edge" and c.name in names),
                    Fraction(0))
        comps = [c for c in self.components if not (c.kind == "edge" and c.name in names)
                 and not (c.kind == "relation" and c.table == table)]
        if share == 0:
            raise PlanError([Problem("bad_relation", "the link table's FKs have no budget to merge",
                                     table)])
        comps.append(Component(relation_name(table), "relation", method, share, params=params))
        return self._replace_components(comps)

    def with_public_links(self, schema: Schema, method: str, **params: Any) -> Plan:
        """Every linked FK to a public parent (an ``"edge"`` component of this plan whose parent
        table is public) with the linker ``method``: e.g. ``"fk-attribute"``, the FK as an
        attribute of the child's mechanism (docs/methods/keyed.md). Components a database
        method models itself are left alone; ``problems`` says where ``method`` does not apply."""
        public = {fk.name for fk in schema.foreign_keys if schema.table(fk.parent).public}
        return self._replace_components([
            replace(c, method=method, params=params)
            if c.kind == "edge" and c.name in public and c.method != self.database_method else c
            for c in self.components])

    def with_params(self, name: str, **params: Any) -> Plan:
        return self._replace_components([replace(c, params={**c.params, **params}) if c.name == name
                                         else c for c in self.components])

    def with_budget(self, epsilon: float | None = None, delta: float | None = None,
                    rho: float | None = None) -> Plan:
        return replace(self, epsilon=self.epsilon if epsilon is None else float(epsilon),
                       delta=self.delta if delta is None else float(delta),
                       rho=rho if rho is not None else (None if epsilon is not None else self.rho))

    def with_noise(self, noise: NoiseChoice) -> Plan:
        return replace(self, noise=noise)

    def resolved_noise(self, seeded: bool) -> Literal["numpy", "opendp"]:
        """The noise sampler a run uses (``"auto"``: ``"numpy"`` if seeded, else ``"opendp"``).

        OpenDP draws from the operating system's CSPRNG and cannot be seeded, while a seed
        promises a reproducible run; a seeded run is for study, never for release, so exact
        noise buys it nothing. An explicit ``"opendp"`` with a seed is therefore refused
        rather than silently half-reproducible.

        Raises:
            PlanError: if ``noise == "opendp"`` and the run is seeded.
        """
        if self.noise == "auto":
            return "numpy" if seeded else "opendp"
        if self.noise == "opendp" and seeded:
            raise PlanError([Problem(
                "seeded_exact_noise", "OpenDP's exact noise cannot be seeded: drop the seed "
                "(random_state / --seed) for a release, or use noise='numpy' for a reproducible "
                "study run")])
        return self.noise  # type: ignore[return-value]

    # -- what the shares buy ---------------------------------------------------------------------
    def noise_preview(self, schema: Schema, db: Database | None = None, *,
                      row_counts: Mapping[str, int] | None = None) -> list[NoisePreview]:
        """Per component: share, ρ, the σ its share buys and the expected error of a typical cell.

        σ comes from each method's ``noise_scales`` (public: the schema's sensitivities and the
        component's ρ). The error is relative to a size ``n``: the table's rows; for an FK to a
        public parent, the children per parent on average; for an FK to a private parent, the
        parents (the cells of its degree histogram). Sizes come from ``row_counts`` (public
        counts) and else from ``db`` (read from the private data: a curator view, and the label
        says so).

        Args:
            schema: The schema the plan is for.
            db: The data, for row counts (optional).
            row_counts: Public row counts; they override the data's.

        Returns:
            One :class:`NoisePreview` per component, in plan order.
        """
        from relviz.privacy.sensitivity import multipliers

        read = db.row_counts() if db is not None else {}
        public = dict(row_counts or {})
        counts = {**read, **public}

        def from_data(table: str) -> bool:
            return table not in public and table in read and table in schema.table_names and \
                not schema.table(table).public

        mult, why = None, ""
        try:
            mult = multipliers(schema)
        except (SchemaError, KeyError, nx.NetworkXException) as e:
            why = f"σ unavailable until the schema is fixed: {_reason(e)}"
        try:
            total = Fraction(self.rho_total)
        except (ValueError, ArithmeticError) as e:
            total, why = Fraction(0), f"σ unavailable: {e}"
        model = _key_attribute_schema(self, schema, counts)  # with fk-attribute's child attributes
        out = []
        for c in self.components:
            rho = total * c.share
            sigmas: dict[str, float] = {}
            note = why
            if mult is not None and rho > 0:
                try:
                    sigmas = _noise_scales(c, rho, model, mult, self.components)
                    if not sigmas:
                        note = f"{c.method} does not report its noise scale"
                except (KeyError, SchemaError, ValueError, TypeError, AttributeError) as e:
                    note = f"σ unavailable: {_reason(e)}"
            n, n_label = _preview_size(c, schema, counts, from_data)
            sigma = next(iter(sigmas.values()), None)
            error = None if sigma is None else sigma * MEAN_ABS_NORMAL
            rel = None if error is None or not n else error / n
            warning = ""
            if rel is not None and rel > SMALL_SHARE_ERROR:
                what = "marginal cell" if c.kind == "table" else "bin"
                warning = (f"share too small to be useful: a typical {what} is off by about {rel:.0%} of "
                           f"{'the table' if c.kind == 'table' else 'its size'}; give {c.name} a larger "
                           "share (or raise ε)")
            out.append(NoisePreview(c.name, c.kind, c.method, c.share, c.locked, rho, sigmas, sigma, n,
                                    n_label, error, rel, note, warning))
        return out

    # -- validation ---------------------------------------------------------------------------
    def problems(self, schema: Schema) -> list[Problem]:
        """Everything inconsistent between this plan and ``schema`` (all at once)."""
        from relviz.relational import get_class as edge_class
        from relviz.relational import get_relation_class as relation_class
        from relviz.single import get_class as table_class

        out: list[Problem] = []
        if self.total_share() != 1:
            out.append(Problem("bad_share", f"shares add up to {float(self.total_share()):.12g}, not 1"))
        if self.database_method is not None:
            return out + self._database_problems(schema)
        private = set(schema.private_tables)
        edges = {fk.name for fk in schema.private_foreign_keys}
        for c in self.components:
            if c.share <= 0:
                out.append(Problem("bad_share", "a component must get a positive share", c.name))
            if c.kind == "table":
                if c.name not in schema.table_names:
                    out.append(Problem("unknown_table", "plan names an unknown table", c.name))
                    continue
                if c.name not in private:
                    out.append(Problem("public_spends", "public tables are released verbatim and "
                                       "spend nothing: remove this component", c.name))
                    continue
                out += _method_problems(c, table_class, "unknown_mechanism", schema.table(c.name))
            elif c.kind == "relation":
                fks = schema.fks_from(c.table) if c.table in schema.table_names else ()
                if len(fks) != 2 or schema.table(c.table).public:
                    out.append(Problem("bad_relation", "a many-to-many relation needs a private link "
                                       "table with exactly two foreign keys", c.table))
                    continue
                out += _method_problems(c, relation_class, "unknown_method", schema, fks[0], fks[1])
            else:
                if c.name not in {fk.name for fk in schema.foreign_keys}:
                    out.append(Problem("unknown_foreign_key", "plan names an unknown FK", c.name))
                    continue
                if c.name not in edges:
                    out.append(Problem("public_spends", "FK between public tables is copied and "
                                       "spends nothing: remove this component", c.name))
                    continue
                out += _method_problems(c, edge_class, "unknown_method", schema,
                                        schema.foreign_key(c.name))
        named = {c.name for c in self.components if c.kind != "relation"}
        covered = {fk.name for c in self.relations if c.table in schema.table_names
                   for fk in schema.fks_from(c.table)}
        for c in self.edges:
            if c.name in covered:
                out.append(Problem("duplicate_component", "FK is modelled by a relation component "
                                   "and by an edge component", column=c.name))
        if self.conversion == "gdp":  # the accountant accepts only Gaussian releases under GDP
            lookups = {"table": table_class, "edge": edge_class, "relation": relation_class}
            for c in self.components:
                try:
                    gaussian = lookups[c.kind](c.method).gaussian_only
                except KeyError:
                    continue  # an unknown method is reported above
                if not gaussian:
                    out.append(Problem(
                        "bad_conversion",
                        f"conversion='gdp' accounts only Gaussian releases, but {c.method!r} also "
                        "uses non-Gaussian ones (e.g. the exponential mechanism); use "
                        "conversion='auto' or 'zcdp', or a Gaussian-only method here", c.name))
        for t in sorted(private - named):
            out.append(Problem("missing_component", "private table has no mechanism in the plan", t))
        for e in sorted(edges - named - covered):
            out.append(Problem("missing_component", "private FK has no relational method in the plan",
                               column=e))
        return out

    def _database_problems(self, schema: Schema) -> list[Problem]:
        """Problems of a plan owned by a database method: every private FK names it, no
        relation component, bad shares, and what the method itself reports."""
        from relviz.relational import get_database_class
        from relviz.single import get_class as table_class

        name = self.database_method
        cls = get_database_class(name)
        may_link = getattr(cls, "may_link", None)  # which FKs a linker may take
        out: list[Problem] = []
        for c in self.components:
            if c.share <= 0:
                out.append(Problem("bad_share", "a component must get a positive share", c.name))
            if c.kind == "edge" and c.method != name:
                fk = next((f for f in schema.foreign_keys if f.name == c.name), None)
                if fk is None or may_link is None or not may_link(schema, fk):
                    where = getattr(cls, "linkable", None)
                    tail = f" (use {name} here; a linker is possible only on {where})" if where \
                        else f" (use {name} here: it takes no linker)"
                    out.append(Problem("mixed_methods", f"{name} models every FK to a private "
                                       f"parent; this FK names {c.method!r}{tail}", column=c.name))
                else:
                    out += _method_problems(c, _linker_class, "unknown_method", schema, fk)
            elif c.kind == "relation":
                out.append(Problem("mixed_methods", f"{name} does not model many-to-many "
                                   "relations; model the link table's FKs with it instead", c.table))
            elif c.kind == "table" and c.name in schema.table_names:
                out += _method_problems(c, table_class, "unknown_mechanism", schema.table(c.name))
        out += self._ignored_parameters(name, getattr(cls, "shared_params", None))
        try:
            method = get_database_class(name)(**self.component_of_method(name).params)
        except (TypeError, ValueError) as e:
            return out + [Problem("bad_parameter", f"{name}: {e}")]
        return out + list(method.plan_problems(schema, self.components))

    def _ignored_parameters(self, name: str, shared: tuple[str, ...] | None) -> list[Problem]:
        """Parameters on a database method's component, other than its first, that the run
        would ignore: the method is configured by its first component (:meth:`component_of_method`)
        for the parameters named in ``shared`` (``None``: all of them; the method's class
        attribute ``shared_params``, e.g. PrivPetal's table encodings). A parameter given again
        with the first component's value is no problem."""
        own = [c for c in self.components if c.method == name]
        if not own:
            return []
        first = dict(own[0].params)
        out: list[Problem] = []
        for c in own[1:]:
            differ = {k: v for k, v in dict(c.params).items()
                      if (shared is None or k in shared) and (k not in first or first[k] != v)}
            if differ:
                what = "is configured once" if shared is None else \
                    f"takes {', '.join(shared)} once"
                out.append(Problem(
                    "ignored_parameters",
                    f"{name} {what} for the whole database, by its first component "
                    f"({own[0].name}): {', '.join(f'{k}={v!r}' for k, v in differ.items())} here "
                    f"would be ignored; set {'them' if len(differ) > 1 else 'it'} on "
                    f"{own[0].name} (Plan.with_params)", column=c.name))
        return out

    def component_of_method(self, method: str) -> Component:
        """The first component whose method is ``method`` (its params configure the method)."""
        return next(c for c in self.components if c.method == method)

    def validate(self, schema: Schema) -> Plan:
        problems = self.problems(schema)
        if problems:
            raise PlanError(problems)
        return self

    # -- display & serialisation ------------------------------------------------------------------
    def frame(self):  # noqa: ANN201 - pandas.DataFrame
        """Tidy view: component, kind, method, share, ρ, locked."""
        import pandas as pd

        total = self.rho_total
        return pd.DataFrame([{"component": c.name, "kind": c.kind, "method": c.method,
                              "share": float(c.share), "rho": float(Fraction(total) * c.share),
                              "locked": c.locked} for c in self.components])

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "conversion": self.conversion,
                "rho": self.rho, "noise": self.noise,
                "components": [c.to_dict() for c in self.components]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Plan:
        return cls(float(d["epsilon"]), float(d["delta"]),
                   tuple(Component.from_dict(c) for c in d["components"]),
                   d.get("conversion", "auto"), d.get("rho"), d.get("noise", "auto"))

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> Plan:
        s = str(text_or_path)
        text = s if s.lstrip().startswith("{") else Path(s).read_text(encoding="utf-8")
        return cls.from_dict(json.loads(text))


def _method_problems(c: Component, lookup: Callable[[str], type], unknown: str,
                     *args: Any) -> list[Problem]:
    """The problems of component ``c``'s method on ``args``: unknown name, bad parameters or what
    the configured method itself reports (``method.problems(*args)``)."""
    try:
        cls = lookup(c.method)
    except KeyError as e:
        return [Problem(unknown, str(e.args[0]), c.name)]
    try:
        return list(cls(**c.params).problems(*args))
    except (TypeError, ValueError) as e:
        return [Problem("bad_parameter", f"{c.method}: {e}", c.name)]


def _linker_class(name: str) -> type:
    from relviz.relational import get_class

    return get_class(name)


def _key_attribute_schema(plan: Plan, schema: Schema, counts: Mapping[str, int]) -> Schema:
    """``schema`` with the parent-row attribute of every FK whose linker models it as a child
    attribute (fk-attribute, docs/methods/keyed.md), and the copied parent attributes of every
    FK whose linker models those (parent-attributes, docs/methods/keyed.md §6), as the child's
    mechanism will see them."""
    from relviz.relational import LINKERS
    from relviz.relational import get as get_linker
    from relviz.relational.keyed import key_attribute_schema
    from relviz.relational.parent_attributes import parent_attribute_schema

    fks, copied = [], []
    for c in plan.edges:
        try:
            cls = LINKERS.get_class(c.method)
            if getattr(cls, "models_parent_attributes", False):
                fk = schema.foreign_key(c.name)
                copied.append((fk, get_linker(c.method, **c.params).sources(schema, fk)))
            elif getattr(cls, "models_key_attribute", False):
                fks.append(schema.foreign_key(c.name))
        except (KeyError, SchemaError, PlanError, ParameterError):
            continue
    try:
        out = key_attribute_schema(schema, fks, counts) if fks else schema
        for fk, sources in copied:
            out = parent_attribute_schema(out, fk, sources)
        return out
    except (SchemaError, KeyError, ValueError):
        return schema


def _noise_scales(c: Component, rho: Fraction, schema: Schema, mult: Any,
                  plan_components: tuple[Component, ...] = ()) -> dict[str, float]:
    """``{release label: σ}`` of component ``c`` with budget ``rho`` (its method's ``noise_scales``)."""
    from relviz.relational import get as get_linker
    from relviz.relational import get_database, get_relation, is_database_method
    from relviz.single import get as get_mechanism

    owner = next((o.method for o in plan_components if o.kind == "edge"
                  and is_database_method(o.method)), None)
    if owner is not None:
        first = next(o for o in plan_components if o.method == owner)
        return dict(get_database(owner, **first.params).noise_scales(
            schema, c, rho, multipliers=mult, components=tuple(plan_components)))
    if c.kind == "table":
        mech = get_mechanism(c.method, **c.params)
        return dict(mech.noise_scales(schema.table(c.name), rho,
                                      histogram_sensitivity=mult.table_histogram(c.name),
                                      score_sensitivity=mult.table_score(c.name)))
    if c.kind == "relation":
        fk1, fk2 = schema.fks_from(c.table)
        method = get_relation(c.method, **c.params)
        return dict(method.noise_scales(schema, fk1, fk2, rho, multipliers=mult))
    linker = get_linker(c.method, **c.params)
    return dict(linker.noise_scales(schema, schema.foreign_key(c.name), rho, multipliers=mult))


def _preview_size(c: Component, schema: Schema, counts: Mapping[str, int],
                  from_data: Callable[[str], bool]) -> tuple[float | None, str]:
    """The size ``n`` a component's typical error is relative to, and its label."""
    tail = f" — {CURATOR_VIEW}"
    if c.kind == "table":
        if c.name not in counts:
            return None, ""
        n = float(counts[c.name])
        return n, f"{int(n):,} rows of {c.name}" + (tail if from_data(c.name) else "")
    try:
        fk = schema.foreign_key(c.name)
    except KeyError:
        return None, ""
    if schema.table(fk.parent).public:
        nc, npar = counts.get(fk.child), counts.get(fk.parent)
        if nc is None or not npar:
            return None, ""
        n = nc / npar
        return n, (f"{n:,.1f} {fk.child} rows per {fk.parent} row on average"
                   + (tail if from_data(fk.child) else ""))
    if fk.parent not in counts:
        return None, ""
    n = float(counts[fk.parent])
    return n, (f"{int(n):,} {fk.parent} rows (parents in the degree histogram)"
               + (tail if from_data(fk.parent) else ""))


_reason = error_reason
