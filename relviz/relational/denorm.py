"""Denorm: the denormalisation baseline of the relational DP papers.

Source: K. Cai, X. Xiao, G. Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys
under Differential Privacy", Proc. ACM Manag. Data 1(2), SIGMOD 2023, §7.1 (the "Denorm"
competitor; docs/methods/denorm.md). Instead of synthesising each table on its own and linking
the synthetic tables afterwards (the per-relation baseline, :mod:`relviz.relational.degree`),
Denorm *joins* every private child with its private parent into one denormalised table, synthesises
that table with a single-relation mechanism, and *normalises* the synthetic rows back into a parent
and a child table. Cross-table correlations between a child's and its parent's attributes are then
those of the single-table model of the join; correlations *between siblings* (two persons of the
same household) are not modelled, only kept by the sort (below).

Algorithm, per "private parent ``P`` ← private child ``C``" pair (FK ``e = C → P``, cap ``τ``):

1. **Join** ``J = C ⋈ P``: one row per child, with the child's attributes and its parent's
   (census: one row per person with the household's attributes; TPC-H: one row per line item with
   its order's attributes). ``J`` is read only through
   :meth:`~relviz.privacy.measure.PrivateForeignKey.cross_marginal` (its marginals are the
   cross-table counts along ``e``), so the single-table mechanism (MST by default: the plan's table
   component of ``C``) fits on it like on any private table.
2. **Group sizes**: the histogram ``H*`` of children per parent (``0 … τ``, the degree baseline's
   public bins :func:`~relviz.relational.degree.degree_bin_edges`) with the Gaussian mechanism.
3. **Normalise** (post-processing): draw the number of parents (the noisy histogram's total under
   the entity unit; the public size under row-level units) and one group size per parent from
   ``H*``; sample as many rows of ``J`` as the sizes add up to; **sort** them lexicographically,
   parent attributes first (schema order), then child attributes; **cut** the sorted sequence into
   consecutive groups of the drawn (positive) sizes, in random order; in each group **copy the
   parent attributes of one uniformly chosen member** to the group's parent row. Parents drawn
   with size 0 get the parent attributes of one more row of ``J`` each (an approximation: ``J``
   weights parents by their size; the paper is silent on childless parents).

FKs to **public** parents (TPC-H ``orders → customer``, ``lineitem → partsupp``) are released and
linked exactly as by the degree baseline (:class:`~relviz.relational.degree.DegreeLinker`: noisy
children per public parent, random assignment). A private table in no join (no private parent
and no private child) is synthesised alone with its table component's mechanism.

Supported schemas (:meth:`Denorm.plan_problems` lists every violation at once): every FK with a
private parent is non-nullable, not self-referential and capped; a private table is in at most
one join (no chains ``A → B → C`` of private tables, no parent with two private child tables, no
child with two private parents). Census (households ← persons) and TPC-H (orders ← lineitem, with
public customer and partsupp) qualify.

**Plan components** (``default_components``; ``histogram_share`` ``h = 1/5``, the paper's 20 %):

* ``"table"`` component named ``C`` for each join ``C ⋈ P`` (method: the single-table mechanism,
  the plan's ``mechanism``, default MST; its params configure it): the joint synthesis of ``J``.
  ``P`` has no component of its own;
* ``"table"`` component for each private table in no join (its mechanism on the table alone);
* ``"edge"`` component (method ``"denorm"``) for every private FK: the group-size histogram ``H*``
  (private parent) or the children per public parent (public parent).

With ``S`` synthesis components and ``H`` edge components, each synthesis component gets
``(1 − h)/S`` and each edge ``h/H``: 80 % to the joint synthesis, 20 % to the group-size
releases, both split equally (census: ``persons`` 4/5, the FK 1/5; TPC-H: ``lineitem`` 4/5 and
three FKs 1/15 each). Every component spends exactly its share; shares edited in the plan are
honoured as given.

**Sensitivities of the joined table** ``J_e`` (histograms: L2 of any marginal; scores: L1), from
each unit's single neighbour relation (relviz.privacy.sensitivity):

* *entity unit* — a neighbour removes an entity tuple and every tuple depending on it. A row of
  ``J_e`` is a row of ``C``; it disappears iff its ``C`` row is removed (a ``C`` row whose parent is
  removed depends on the entity tuple and is removed too), at most ``r(C)`` rows. A surviving row
  keeps its own attributes and its parent, whose attributes do not change either, so ``J_e``
  loses at most ``r(C)`` rows and nothing else changes: histogram and score multipliers ``r(C)``
  (no √2: rows are removed, not moved). Census: ``r(persons) = τ · r(households) = τ``
  (the paper's "tuple sensitivity τ", PrivLava §7.1); TPC-H: ``r(lineitem) = 7``. In a supported schema ``C`` has
  no private child, so ``m(C) = 0`` and this equals ``Multipliers.table_histogram(C)`` and
  ``table_score(C)``, which the code uses (an upper bound in any case).
* *row unit* — one row of one private table changes its values and all its relationships (sizes
  fixed). A row of ``C`` changes one row of ``J_e`` (its values and its parent; ``C`` has no
  private child). A row of ``P`` changes the parent attributes of its children before and after the
  change: at most ``τ`` kept or sent away plus ``τ`` taken, ``2τ`` rows of ``J_e``. Rows of other
  tables change nothing in ``J_e``. Each changed row moves one count between two cells: histograms
  ``√2 · d``, scores ``2 · d`` with ``d = max(1, 2τ)`` (``Multipliers.edges_changed``).
* *tuple unit* — a row changes its values and its own FKs: a row of ``C`` moves one row of ``J_e``,
  a row of ``P`` its ``≤ τ`` children's rows: ``d = max(1, τ)``, same formulas.

The group-size histogram has the degree baseline's sensitivity ``Multipliers.degree_histogram(e)``;
the public-parent counts ``Multipliers.parent_counts``. ``tests/privacy/test_neighbours.py``
replays every release on the neighbours of small databases and checks these bounds.

**Sizes**: under the entity unit the number of parents is the noisy histogram's total (projected
onto the non-negative counts with that sum) and the number of children the sum of the drawn sizes;
under row-level units table sizes are public (as for the synthesizer's ``public_sizes_``): the
drawn sizes are thinned or topped up (never above ``τ``) to the public number of children.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, Problem
from relviz.privacy.budget import Budget, to_fraction
from relviz.privacy.measure import Curator, PrivateForeignKey
from relviz.privacy.mechanisms import gaussian_sigma
from relviz.privacy.postprocessing import project_counts, project_counts_moment
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.degree import DegreeLink, DegreeLinker, degree_bin_edges, match_total
from relviz.relational.registry import register_database
from relviz.schema import ForeignKey, Schema, Table

__all__ = ["Denorm", "FittedDenorm", "Join", "joins", "joined_table", "joined_multipliers"]

SOURCE = ("Denorm baseline: join, single-relation synthesis, normalise by noisy group sizes "
          "(PrivLava, Cai, Xiao & Cormode, SIGMOD 2023, §7.1; docs/methods/denorm.md)")


@dataclass(frozen=True)
class Join:
    """One denormalised table: child ``fk.child`` joined with its private parent ``fk.parent``."""

    fk: ForeignKey

    @property
    def child(self) -> str:
        return self.fk.child

    @property
    def parent(self) -> str:
        return self.fk.parent


def _structure(schema: Schema) -> tuple[list[Join], list[str], list[ForeignKey], list[Problem]]:
    """Joins, private tables in no join, FKs to public parents, and why the schema is refused."""
    problems: list[Problem] = []
    private = set(schema.private_tables)
    out: list[Join] = []
    public_fks: list[ForeignKey] = []
    unit = schema.privacy_unit
    if unit is None:
        problems.append(Problem("no_privacy_unit", "denorm needs a privacy unit"))
    for fk in schema.private_foreign_keys:
        if fk.parent not in private:
            public_fks.append(fk)
            continue
        why = []
        if fk.self_referential:
            why.append("it is self-referential (a table cannot be joined with itself)")
        if fk.nullable:
            why.append("it is nullable (a child without a parent has no row in the join)")
        if unit is not None and fk.name not in unit.caps:
            why.append("it has no public degree cap τ (needed for the group-size histogram)")
        if why:
            problems.append(Problem("unsupported_fk", "denorm cannot join along this FK: "
                                    + "; ".join(why), fk.child, ", ".join(fk.columns)))
            continue
        out.append(Join(fk))
    roles: dict[str, list[str]] = {}
    for j in out:
        roles.setdefault(j.child, []).append(f"child of {j.fk.name}")
        roles.setdefault(j.parent, []).append(f"parent of {j.fk.name}")
    for table, rs in sorted(roles.items()):
        if len(rs) > 1:
            problems.append(Problem(
                "unsupported_schema", "denorm builds one denormalised table per private parent → "
                f"child pair and cannot put a table in two of them; {table} is " + " and ".join(rs)
                + " (chains and several private children or parents are not supported)", table))
    in_join = set(roles)
    alone = [t for t in schema.topological_order() if t in private and t not in in_join]
    return out, alone, public_fks, problems


def joins(schema: Schema) -> list[Join]:
    """The denormalised tables of ``schema`` (supported FKs only)."""
    return _structure(schema)[0]


def _parent_name(join: Join, attr: str) -> str:
    return f"{join.parent}.{attr}"


def _child_name(join: Join, attr: str) -> str:
    return f"{join.child}.{attr}"


def joined_table(schema: Schema, join: Join) -> Table:
    """The public description of ``C ⋈ P``: parent attributes (``P.a``) then child attributes
    (``C.a``), the order of the normalising sort."""
    parent, child = schema.table(join.parent), schema.table(join.child)
    attrs = [replace(a, name=_parent_name(join, a.name)) for a in parent.attributes] + \
        [replace(a, name=_child_name(join, a.name)) for a in child.attributes]
    return Table(f"{join.child} ⋈ {join.parent}", (), tuple(attrs))


def joined_multipliers(mult: Multipliers, join: Join) -> tuple[float, float]:
    """(histogram, score) multipliers of the joined table (module docstring)."""
    if mult.row_unit:
        d = mult.edges_changed(join.fk.name)
        return math.sqrt(2.0) * d, 2.0 * d
    return mult.table_histogram(join.child), mult.table_score(join.child)


class _JoinedData:
    """A :class:`~relviz.privacy.measure.PrivateTable`-like handle on ``C ⋈ P``: every marginal is
    the cross-table count of the FK handle (logged there)."""

    def __init__(self, rel: PrivateForeignKey, table: Table, schema: Schema, join: Join) -> None:
        self._rel = rel
        self.name = table.name
        self.attributes = tuple(a.name for a in table.attributes)
        self.sizes = tuple(a.size for a in table.attributes)
        self._origin = {}
        for a in schema.table(join.parent).attributes:
            self._origin[_parent_name(join, a.name)] = ("parent", a.name)
        for a in schema.table(join.child).attributes:
            self._origin[_child_name(join, a.name)] = ("child", a.name)

    def domain(self) -> dict[str, int]:
        return dict(zip(self.attributes, self.sizes))

    def marginal(self, attrs) -> np.ndarray:  # noqa: ANN001
        attrs = tuple(attrs)
        kids = [a for a in attrs if self._origin[a][0] == "child"]
        pars = [a for a in attrs if self._origin[a][0] == "parent"]
        x = self._rel.cross_marginal([self._origin[a][1] for a in kids],
                                     [self._origin[a][1] for a in pars])
        order = kids + pars
        if tuple(order) == attrs or len(attrs) <= 1:
            return x
        size = self.domain()
        x = x.reshape([size[a] for a in order])
        return np.ascontiguousarray(x.transpose([order.index(a) for a in attrs])).ravel()

    def total(self) -> int:
        return int(self._rel.cross_marginal([], [])[0])


def _rng(seed: int, stage: str, name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"denorm:{stage}:{name}".encode()).digest()
    return np.random.default_rng([int(seed) & 0xFFFFFFFF,
                                  *(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))])


@dataclass
class _FittedJoin:
    join: Join
    model: Any
    sizes: DegreeLink
    n_parent: float
    n_child: float | None  # public number of children (row-level units), else None


@dataclass
class FittedDenorm:
    """A fitted Denorm model (noisy summaries only; sampling reads no data).

    Attributes:
        totals: Noisy (entity unit) or public (row-level units) rows of every private table.
    """

    schema: Schema
    joins: list[_FittedJoin]
    alone: dict[str, tuple[Any, float]]
    links: dict[str, DegreeLink]
    totals: dict[str, float] = field(default_factory=dict)

    def sample(self, public: Mapping[str, EncodedTable], *, scale: float, seed: int,
               progress: Callable[[str], Reporter]) -> tuple[dict[str, EncodedTable],
                                                             dict[str, np.ndarray]]:
        out: dict[str, EncodedTable] = {}
        links: dict[str, np.ndarray] = {}
        for fj in self.joins:
            rep = progress(fj.join.child)
            rep(0.0, f"generating {fj.join.parent} and {fj.join.child}")
            parent, child, idx = self._normalise(fj, scale, seed, rep)
            out[fj.join.parent], out[fj.join.child] = parent, child
            links[fj.join.fk.name] = idx
            rep(1.0, f"{parent.n_rows:,} {fj.join.parent}, {child.n_rows:,} {fj.join.child}")
        for name, (model, n) in self.alone.items():
            rep = progress(name)
            rep(0.0, f"sampling {name}")
            table = self.schema.table(name)
            rows = max(1, int(round(n * scale)))
            out[name] = EncodedTable(name, table.attribute_names, tuple(a.size for a in table.attributes),
                                     model.sample(rows, _rng(seed, "sample", name)))
            rep(1.0, f"{rows:,} rows")
        codes = {**public, **out}
        for fk_name, link in self.links.items():
            fk = self.schema.foreign_key(fk_name)
            rep = progress(fk_name)
            rep(0.0, f"linking {fk.label()}")
            links[fk_name] = link.link(codes[fk.child], codes[fk.parent], _rng(seed, "link", fk_name), rep)
            rep(1.0, "linked")
        return out, links

    def _normalise(self, fj: _FittedJoin, scale: float, seed: int, rep: Reporter
                   ) -> tuple[EncodedTable, EncodedTable, np.ndarray]:
        join, schema = fj.join, self.schema
        rng = _rng(seed, "sample", join.child)
        ptab, ctab = schema.table(join.parent), schema.table(join.child)
        n_p = max(1, int(round(fj.n_parent * scale)))
        deg = fj.sizes.draw_degrees(n_p, rng)
        if fj.n_child is not None:
            deg = match_total(deg, int(round(fj.n_child * scale)), rng, cap=fj.sizes.cap, offset=1.0,
                                  strict_cap=True)
        n_c = int(deg.sum())
        n_zero = int((deg == 0).sum())
        rep(0.2, f"sampling {n_c + n_zero:,} joined rows")
        rows = fj.model.sample(n_c + n_zero, rng) if n_c + n_zero else \
            np.zeros((0, len(ptab.attributes) + len(ctab.attributes)), dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        k = len(ptab.attributes)
        grouped, extra = rows[:n_c], rows[n_c:]
        rep(0.7, "sorting and cutting into groups")
        # lexicographic: parent attributes first, then child attributes (lexsort: last key first)
        order = np.lexsort(grouped.T[::-1]) if n_c else np.zeros(0, dtype=np.int64)
        grouped = grouped[order]
        positive = deg[deg > 0]  # already in random order (draw_degrees permutes)
        starts = np.concatenate([[0], np.cumsum(positive)[:-1]]).astype(np.int64)
        chosen = starts + np.floor(rng.random(len(positive)) * positive).astype(np.int64)
        parent_codes = np.concatenate([grouped[chosen, :k], extra[:, :k]], axis=0)
        group_of = np.repeat(np.arange(len(positive), dtype=np.int64), positive)
        # shuffle parents and children (the sort order carries no meaning in the output)
        pperm = rng.permutation(len(parent_codes))
        new_pos = np.empty_like(pperm)
        new_pos[pperm] = np.arange(len(pperm))
        cperm = rng.permutation(n_c)
        parent_enc = EncodedTable(join.parent, ptab.attribute_names,
                                  tuple(a.size for a in ptab.attributes),
                                  np.ascontiguousarray(parent_codes[pperm]))
        child_enc = EncodedTable(join.child, ctab.attribute_names,
                                 tuple(a.size for a in ctab.attributes),
                                 np.ascontiguousarray(grouped[cperm, k:]))
        return parent_enc, child_enc, new_pos[group_of[cperm]].astype(np.int64)


@register_database
@dataclass(frozen=True)
class Denorm:
    """Join each private child with its private parent, synthesise the join, normalise by noisy
    group sizes (module docstring; docs/methods/denorm.md).

    Args:
        histogram_share: Share of the plan for the group-size releases in ``default_components``
            (``1/5``: the paper's 20 %), in (0, 1).
        bins: Group-size histogram bins: ``"auto"`` or ``"exact"`` (as the degree baseline's).
        zero: Public-parent post-processing of the degree baseline (``"auto"`` or a number).
    """

    name: ClassVar[str] = "denorm"
    label: ClassVar[str] = "Denorm (join, single-relation synthesis, normalise by noisy group sizes)"
    gaussian_only: ClassVar[bool] = True
    histogram_share: Fraction | float | str = Fraction(1, 5)
    bins: str = "auto"
    zero: str | float = "auto"

    def __post_init__(self) -> None:
        try:
            h = to_fraction(self.histogram_share)
        except (ValueError, TypeError, ZeroDivisionError):
            raise ParameterError("histogram_share", "histogram_share must be a number in (0, 1)") from None
        if not 0 < h < 1:
            raise ParameterError("histogram_share", "histogram_share must be in (0, 1)")
        object.__setattr__(self, "histogram_share", h)
        if self.bins not in ("auto", "exact"):
            raise ParameterError("bins", "bins must be 'auto' or 'exact'")
        DegreeLinker(zero=self.zero)  # validates ``zero``

    # -- plan ----------------------------------------------------------------------------------
    def default_components(self, schema: Schema, *, mechanism: str
                           ) -> list[tuple[str, str, str, Fraction]]:
        """One table component per join (named after the child) and per private table in no
        join, one edge component per private FK; ``(1 − h)`` split equally among the tables,
        ``h`` among the edges (module docstring)."""
        js, alone, _, _ = _structure(schema)
        tables = [j.child for j in js] + alone
        edges = [fk.name for fk in schema.private_foreign_keys]
        h = Fraction(self.histogram_share) if edges else Fraction(0)
        out = [(t, "table", mechanism, (1 - h) / len(tables)) for t in tables]
        out += [(e, "edge", self.name, h / len(edges)) for e in edges]
        return out

    def plan_problems(self, schema: Schema, components: tuple[Any, ...]) -> list[Problem]:
        from relviz.single import get as get_mechanism

        js, alone, _, out = _structure(schema)
        out = list(out)
        tables = {c.name: c for c in components if c.kind == "table"}
        edges = {c.name for c in components if c.kind == "edge"}
        for fk in schema.private_foreign_keys:
            if fk.name not in edges:
                out.append(Problem("missing_component", "private FK has no component in the "
                                   "denorm plan (its group sizes are released there)",
                                   column=fk.name))
        for e in sorted(edges - {fk.name for fk in schema.private_foreign_keys}):
            out.append(Problem("unknown_foreign_key", "plan names an FK that is not a private FK",
                               column=e))
        needed = {j.child for j in js} | set(alone)
        for j in js:
            if j.parent in tables:
                out.append(Problem("extra_component", f"denorm generates {j.parent} from the "
                                   f"synthetic join {j.child} ⋈ {j.parent} (component "
                                   f"{j.child}); remove this component", j.parent))
        for t in sorted(needed - set(tables)):
            out.append(Problem("missing_component", "denorm needs a table component for "
                               + (f"the join {t} ⋈ {next(j.parent for j in js if j.child == t)}"
                                  if t in {j.child for j in js} else "this private table"), t))
        for t in sorted(set(tables) - needed - {j.parent for j in js}):
            if t in schema.table_names and not schema.table(t).public:
                continue
            out.append(Problem("unknown_table", "plan names a table denorm does not synthesise", t))
        for j in js:
            c = tables.get(j.child)
            if c is None:
                continue
            try:
                mech = get_mechanism(c.method, **c.params)
            except (KeyError, TypeError, ValueError):
                continue  # reported by the plan's table check
            out += [replace(p, table=j.child) for p in mech.problems(joined_table(schema, j))]
        return out

    def noise_scales(self, schema: Schema, component: Any, rho: Fraction | float, *,
                     multipliers: Multipliers, components: tuple[Any, ...] = ()) -> dict[str, float]:
        """σ of one component's Gaussian releases (public: schema, caps and ρ only)."""
        from relviz.single import get as get_mechanism

        rho = Fraction(rho)
        js, _, _, _ = _structure(schema)
        by_child = {j.child: j for j in js}
        by_fk = {j.fk.name: j for j in js}
        if component.kind == "table":
            mech = get_mechanism(component.method, **component.params)
            if component.name in by_child:
                j = by_child[component.name]
                hist, score = joined_multipliers(multipliers, j)
                return dict(mech.noise_scales(joined_table(schema, j), rho,
                                              histogram_sensitivity=hist, score_sensitivity=score))
            return dict(mech.noise_scales(schema.table(component.name), rho,
                                          histogram_sensitivity=multipliers.table_histogram(component.name),
                                          score_sensitivity=multipliers.table_score(component.name)))
        if component.name in by_fk:
            j = by_fk[component.name]
            return {self._hist_label(schema, j): gaussian_sigma(
                multipliers.degree_histogram(j.fk.name), rho)}
        fk = schema.foreign_key(component.name)
        return dict(DegreeLinker(zero=self.zero).noise_scales(schema, fk, rho, multipliers=multipliers))

    @staticmethod
    def _hist_label(schema: Schema, j: Join) -> str:
        tau = int(schema.privacy_unit.caps[j.fk.name])  # type: ignore[union-attr]
        return f"group sizes 0…{tau} ({j.child} per {j.parent})"

    # -- fit -----------------------------------------------------------------------------------
    def fit(self, curator: Curator, budgets: Mapping[str, Budget], *, schema: Schema,
            components: tuple[Any, ...], multipliers: Multipliers,
            progress: Callable[[str], Reporter], seed: int) -> FittedDenorm:
        from relviz.single import get as get_mechanism

        js, alone, public_fks, problems = _structure(schema)
        if problems:  # the synthesizer validates the plan first; a guard for direct calls
            raise ValueError("; ".join(p.message for p in problems))
        comps = {(c.name, c.kind): c for c in components}
        mult = multipliers
        fitted: list[_FittedJoin] = []
        totals: dict[str, float] = {}
        for j in js:
            # 1. joint synthesis of C ⋈ P (the child's table component)
            comp = comps[(j.child, "table")]
            rep = progress(j.child)
            rep(0.0, f"{comp.method} on {j.child} ⋈ {j.parent}")
            table = joined_table(schema, j)
            hist, score = joined_multipliers(mult, j)
            rel = curator.foreign_key(j.fk)
            model = get_mechanism(comp.method, **comp.params).fit(
                _JoinedData(rel, table, schema, j), budgets[j.child],
                histogram_sensitivity=hist, score_sensitivity=score, progress=rep)
            # 2. group sizes (the FK's edge component)
            rep = progress(j.fk.name)
            rep(0.0, f"group sizes of {j.fk.label()}")
            sizes, n_parent, n_child = self._group_sizes(curator, rel, j, budgets[j.fk.name],
                                                         schema, mult)
            fitted.append(_FittedJoin(j, model, sizes, n_parent, n_child))
            totals[j.parent] = n_parent
            totals[j.child] = n_child if n_child is not None else n_parent * _mean_degree(sizes)
            rep(1.0, "fitted")
        lone: dict[str, tuple[Any, float]] = {}
        for name in alone:
            comp = comps[(name, "table")]
            rep = progress(name)
            rep(0.0, f"{comp.method} on {name}")
            data = curator.table(name)
            model = get_mechanism(comp.method, **comp.params).fit(
                data, budgets[name], histogram_sensitivity=mult.table_histogram(name),
                score_sensitivity=mult.table_score(name), progress=rep)
            n = float(data.total()) if mult.row_unit else float(model.total)  # public / noisy
            lone[name] = (model, n)
            totals[name] = n
        links: dict[str, DegreeLink] = {}
        for fk in public_fks:
            rep = progress(fk.name)
            rep(0.0, f"degree baseline on {fk.label()}")
            links[fk.name] = DegreeLinker(zero=self.zero, bins=self.bins).fit(
                curator.foreign_key(fk), budgets[fk.name], schema=schema, multipliers=mult,
                progress=rep)
        return FittedDenorm(schema, fitted, lone, links, totals)

    def _group_sizes(self, curator: Curator, rel: PrivateForeignKey, j: Join, budget: Budget,
                     schema: Schema, mult: Multipliers) -> tuple[DegreeLink, float, float | None]:
        """Release the group-size histogram; return the size distribution, the number of parents
        (noisy, or public under row-level units) and the public number of children (or None)."""
        tau = int(schema.privacy_unit.caps[j.fk.name])  # type: ignore[union-attr]
        edges = degree_bin_edges(tau, self.bins)
        sens = mult.degree_histogram(j.fk.name)
        noisy, sigma = budget.gaussian(
            rel.degree_histogram(tau, edges), rho=budget.rho, sensitivity=sens,
            label=self._hist_label(schema, j), module="denorm", source=SOURCE, integer=True)
        hi = np.append(edges[1:], tau + 1)
        mids = (edges + hi - 1) / 2.0
        n_child: float | None = None
        if mult.row_unit:  # table sizes are public facts (as the synthesizer's public_sizes_)
            n_parent = float(curator.table(j.parent).total())
            n_child = float(curator.table(j.child).total())
            if sigma * math.sqrt(len(edges)) < n_parent:  # public rule, as the degree baseline's
                counts = project_counts_moment(noisy, n_parent, mids, n_child)
            else:
                counts = np.clip(noisy, 0, None)
        else:
            counts = project_counts(noisy, max(float(noisy.sum()), 1.0))
            n_parent = max(float(counts.sum()), 1.0)
        if counts.sum() <= 0:
            counts = np.ones_like(counts)
        link = DegreeLink(False, counts / counts.sum(), 0.0, tau,
                          None if len(edges) == tau + 1 else edges)
        return link, n_parent, n_child


def _mean_degree(link: DegreeLink) -> float:
    edges = np.arange(link.cap + 1) if link.edges is None else link.edges
    hi = np.append(edges[1:], link.cap + 1)
    return float(np.dot(link.weights, (edges + hi - 1) / 2.0))
