"""Bi-adjacency as relviz relational methods: one-to-many per FK, many-to-many per link table.

§ numbers below refer to docs/methods/biadjacency.md; [J] and [R] as defined there.

``BiadjacencyLinker`` (edge method ``"biadjacency"``) learns the FK column of a child table:
the child's rows are the rows of the bi-adjacency matrix and each gets exactly one parent
(§4.5, [J] App. C). A self-referential FK (e.g. a person's mother)
masks the diagonal (§1.3) and uses ``d = d_child + d_parent`` (§1.5).

``BiadjacencyRelation`` (relation method ``"biadjacency"``, ``Plan.with_relation``) learns the
distinct pairs of a link table between its two parents (§3, M:N; [J] §3). The link table's own
attributes are synthesised by its single-table mechanism and attached to the learned pairs at
random: their association with the parents' attributes is not modelled (documented limitation,
§6.6).

Counts. [J] §2.2 works under bounded DP, where the number of links ``m`` and the tables' sizes
are public. In relviz they are public only under the row unit for a non-null 1:N FK (``m`` is then
the child table's size); everywhere else (entity unit, nullable FK, many-to-many distinct pairs)
``m`` changes between neighbours, so only an estimate ``m̂`` is used: for a one-to-many FK with the
degree start, the start's number of linked synthetic children (released table sizes and null
share: post-processing, no charge); otherwise ``m`` is released with the Gaussian mechanism
(``count_share`` of the budget, sensitivity ``d``). The real link-count marginals
are divided by ``m̂`` (a public number, so the sensitivities ``d/m̂`` of the TV scores and ``√2·d/m̂``
of the measurements hold), and the synthetic many-to-many relation gets ``round(m̂)`` pairs for the
fit-time synthetic tables (whose sizes are themselves noisy releases). No exact private count is
written into the ledger or the fitted model. The sensitivity constant ``d`` (links one neighbour
can add, remove or re-point) comes from the privacy unit's one neighbour definition
(``Multipliers.edges_changed`` / ``Multipliers.pairs_changed``): see :func:`sensitivity_constant`.

relviz extension (1:N, on by default): the relation starts from the DP degree baseline's
assignment (``init="degree"``, costing ``init_share`` of the FK's budget, by default a public rule
that gives a noisy start more (:meth:`BiadjacencyLinker.degree_start_share`): per-parent counts for a
public parent, the degree histogram (tuple unit: cumulative counts) for a private one, and the
null share of a nullable FK) instead of a uniformly random parent per child ([R]).
``init="random"`` is the paper's start (not allowed for a nullable FK, whose null share must be
measured).

``sample()`` calls ``link`` with the synthetic tables: when they are the ones the relation was
learned on (the default sample), the learned relation is returned; otherwise it is re-optimised
for the new tables against the stored noisy measurements (post-processing, no budget).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import ClassVar, Literal

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, Problem
from relviz.privacy.budget import Budget, to_fraction
from relviz.privacy.measure import PrivateForeignKey, PrivateLink
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.biadjacency.algorithm import (
    Measurements,
    RelationResult,
    Settings,
    learn_relation,
    refit_relation,
)
from relviz.relational.biadjacency.slicing import m_syn_rule
from relviz.relational.degree import DegreeLink, DegreeLinker
from relviz.relational.registry import register, register_relation
from relviz.schema import ForeignKey, Schema

__all__ = ["BiadjacencyLink", "BiadjacencyLinker", "BiadjacencyRelation", "BiadjacencyRelationModel",
           "sensitivity_constant"]


def _fingerprint(*arrays: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def sensitivity_constant(schema: Schema, multipliers: Multipliers, fk: ForeignKey,
                         other: ForeignKey | None = None) -> int:
    """``d``: the most links of a relation one neighbouring database can add, remove or re-point.

    Derived from the privacy unit's neighbour definition (``relviz.privacy.sensitivity``):

    * Entity unit: link rows of the (link) child table removed or modified by one entity's
      closure, ``r + m`` of the child.
    * Row unit, 1:N FK: a child row re-points its own link (1); a private parent row sends its
      ≤ τ children elsewhere and takes ≤ τ others (2τ); self-referential: ``2τ + 1``.
    * Row unit, M:N link table: a link row moves 1 pair, a parent row ``2τ_i``; both FKs to the
      same table: ``2τ1 + 2τ2``.

    Raises:
        SchemaError: a private parent without a degree cap under the row unit.
    """
    if schema.privacy_unit is None:
        raise ValueError("the schema has no privacy unit")
    if other is None:
        return multipliers.edges_changed(fk.name)
    return multipliers.pairs_changed(fk.name, other.name)


def release_link_count(m: int, d: int, budget: Budget, rho: Fraction, what: str) -> float:
    """Noisy number of links ``m̂ = m + N(0, σ²)`` (sensitivity ``d``), at least 1.

    Used wherever ``m`` is not a public fact (see the module docstring); the clamp is
    post-processing.
    """
    noisy, _ = budget.gaussian(np.array([float(m)]), rho=rho, sensitivity=float(d),
                               label=f"number of {what}", module="biadjacency",
                               source="Gaussian mechanism on the link count (Bun & Steinke 2016)", integer=True)
    return max(float(noisy[0]), 1.0)


def _settings(obj: Settings) -> Settings:
    """The plain :class:`Settings` part of a method's hyper-parameters."""
    return Settings(**{f.name: getattr(obj, f.name) for f in fields(Settings)})


def _workload_problems(schema: Schema, t1: str, t2: str, k: int, where: str) -> list[Problem]:
    d1, d2 = len(schema.table(t1).attributes), len(schema.table(t2).attributes)
    if d1 < 1 or d2 < 1 or d1 + d2 < k:
        return [Problem("no_workloads",
                        f"bi-adjacency needs cross-table {k}-way workloads, but {t1} has {d1} and {t2} "
                        f"has {d2} attribute(s); use the degree method here", where)]
    return []


@dataclass
class BiadjacencyLink:
    """A fitted 1:N bi-adjacency model (see the module docstring)."""

    settings: Settings
    measurements: Measurements
    fingerprint: str
    parent: np.ndarray  # learned parent per child (−1 null), on the fit-time tables
    degree_init: DegreeLink | None
    self_referential: bool
    history: list[dict] = field(default_factory=list)

    def link(self, child: EncodedTable, parent: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> np.ndarray:
        if _fingerprint(child.codes, parent.codes) == self.fingerprint:
            progress(1.0, "learned relation reused")
            return self.parent.copy()
        start = _initial_parents(self.degree_init, child, parent, rng, progress, self.self_referential)
        linked = np.flatnonzero(start >= 0)
        out = np.full(child.n_rows, -1, dtype=np.int64)
        if linked.size == 0 or parent.n_rows == 0:
            return out
        s = self.settings
        res = refit_relation(kind="otm", syn1=child.codes[linked], syn2=parent.codes,
                             measurements=self.measurements, m_syn=int(linked.size), settings=s, rng=rng,
                             progress=progress, n_slices=s.n_iters * s.slices_per_iter,
                             initial=start[linked],
                             row_ids=linked if self.self_referential else None)
        out[linked] = res.parent
        return out


def _initial_parents(degree_init: DegreeLink | None, child: EncodedTable, parent: EncodedTable,
                     rng: np.random.Generator, progress: Reporter, self_ref: bool) -> np.ndarray:
    """Start relation: the degree baseline's assignment, or a uniformly random parent per child."""
    if degree_init is not None:
        idx = degree_init.link(child, parent, rng, progress)
    else:
        idx = rng.integers(0, max(parent.n_rows, 1), size=child.n_rows).astype(np.int64)
    if self_ref:  # no row is its own parent: re-draw the few self-links
        rows = np.arange(child.n_rows)
        bad = np.flatnonzero(idx == rows)
        while bad.size and parent.n_rows > 1:
            idx[bad] = rng.integers(0, parent.n_rows, size=bad.size)
            bad = bad[idx[bad] == rows[bad]]
    return idx


@register
@dataclass(frozen=True)
class BiadjacencyLinker(Settings):
    """One-to-many bi-adjacency for one FK (§4.5 with §3's selection and measurement).

    Hyper-parameters: every field of :class:`~relviz.relational.biadjacency.algorithm.Settings`
    (range-checked there), plus:

    Args:
        init: ``"degree"`` (default; relviz extension) or ``"random"`` ([R]).
        init_share: Share of the FK's budget spent on the degree start: a number in (0, 1), or
            ``"auto"`` (default, :meth:`degree_start_share`). With ``otm_keep_degrees`` the start's
            degree distribution is the relation's, so the degree shape is the degree baseline's
            at ``init_share · ρ`` (docs/methods/biadjacency.md §3.6).
        count_share: Share spent on the noisy number of links ``m̂`` where ``m`` is not public
            and there is no degree start (``init="random"``); with the degree start, ``m̂`` is
            the start's number of linked synthetic children (post-processing, no charge).
    """

    name: ClassVar[str] = "biadjacency"
    label: ClassVar[str] = "Bi-adjacency (PGD + unbiased sampling, Alimohammadi et al.)"
    gaussian_only: ClassVar[bool] = False
    needs_synthetic_tables: ClassVar[bool] = True
    init: Literal["degree", "random"] = "degree"
    init_share: float | Literal["auto"] = "auto"
    count_share: float = 0.05

    #: ``init_share="auto"``: the KS loss the smaller start budget may add (half the 0.01 the
    #: degree method is held to), and the share's bounds (0.7: the measured default of stop 20;
    #: 0.95 keeps a twentieth for the cross-table measurements).
    AUTO_KS_LOSS: ClassVar[float] = 0.005
    AUTO_SHARE_MIN: ClassVar[Fraction] = Fraction(7, 10)
    AUTO_SHARE_MAX: ClassVar[Fraction] = Fraction(19, 20)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init not in ("degree", "random"):
            raise ParameterError("init", "init must be 'degree' or 'random'")
        if self.init_share != "auto" and (isinstance(self.init_share, str) or not 0 < self.init_share < 1):
            raise ParameterError("init_share", "init_share must be 'auto' or in (0, 1)")
        if not 0 < self.count_share < 1:
            raise ParameterError("count_share", "count_share must be in (0, 1)")

    def degree_start_share(self, schema: Schema, fk: ForeignKey, rho: Fraction | float, *,
                           multipliers: Multipliers, parents: float | None,
                           children: float | None = None) -> Fraction:
        """Share of the FK's ρ the degree start gets (public rule: reads no private data).

        A number given as ``init_share`` is used as is. ``"auto"``: the start's release at
        share ``s`` has σ larger by ``1/√s`` than the degree method's at the whole ρ, so the
        Kolmogorov–Smirnov error its noise costs grows from about ``r`` to ``r/√s``. For a
        private parent ``r`` = :meth:`DegreeLinker.cdf_noise` ÷ ``parents`` (the CDF's noise
        scale in parents over the number of parents). For a public parent (noisy children per
        parent, σ each) a count moves by about σ, which moves the CDF by σ times the density of
        the counts, about ``1/μ`` with ``μ = children/parents`` the mean count: ``r = σ/μ``.
        The share is the smallest that keeps the added loss ``r·(1/√s − 1)`` at
        :attr:`AUTO_KS_LOSS`, i.e. ``s = (1 + loss/r)^−2``, clipped to [:attr:`AUTO_SHARE_MIN`,
        :attr:`AUTO_SHARE_MAX`] and rounded up to a hundredth. Where the start is mostly noise
        (galton, 205 families, entity unit, ε ≤ 1: ``r`` ≈ 0.15–0.29) the cross-table
        measurements are too, and the degree start takes up to 95 %; on large tables (census
        5,000 households: ``r`` ≈ 0.01) it stays at 70 %. Measured in
        docs/methods/biadjacency.md §3.6.

        Args:
            parents: The number of parents as a public or already released number (under the
                entity unit the parent table's noisy total), or ``None`` when none is at hand
                (then the minimum share).
            children: The same for the child table (public parents only).
        """
        if self.init_share != "auto":
            return to_fraction(self.init_share)
        if parents is None or not np.isfinite(parents):
            return self.AUTO_SHARE_MIN
        if schema.table(fk.parent).public:
            if children is None or not np.isfinite(children) or children <= 0:
                return self.AUTO_SHARE_MIN
            (sigma,) = DegreeLinker().noise_scales(schema, fk, rho, multipliers=multipliers).values()
            r = float(sigma) * max(float(parents), 1.0) / float(children)
        else:
            noise = DegreeLinker().cdf_noise(schema, fk, rho, multipliers=multipliers)
            if noise is None:
                return self.AUTO_SHARE_MIN
            r = noise / max(float(parents), 1.0)
        share = Fraction(int(np.ceil(100.0 / (1.0 + self.AUTO_KS_LOSS / r) ** 2)), 100)
        return min(max(share, self.AUTO_SHARE_MIN), self.AUTO_SHARE_MAX)

    def settings(self) -> Settings:
        return _settings(self)

    def noise_scales(self, schema: Schema, fk: ForeignKey, rho: Fraction | float, *,
                     multipliers: Multipliers) -> dict[str, float]:
        """No σ is known before the run: the measurements' σ depends on the number of links ``m``
        (released at fit time unless public) and the selection rounds (§3.2), so this is empty."""
        return {}

    def problems(self, schema: Schema, fk: ForeignKey) -> list[Problem]:
        out = _workload_problems(schema, fk.child, fk.parent, self.k, fk.child)
        if self.init == "random" and fk.nullable:
            out.append(Problem("bad_parameter", "a nullable FK needs init='degree' (the share of "
                               "null links is measured there)", fk.child, ", ".join(fk.columns)))
        if self.init == "degree" or fk.nullable:
            out += DegreeLinker().problems(schema, fk)
        return out

    def fit(self, rel: PrivateForeignKey, budget: Budget, *, schema: Schema,
            multipliers: Multipliers, progress: Reporter,
            synthetic: Callable[[str], EncodedTable] | None = None) -> BiadjacencyLink:
        if synthetic is None:
            raise ValueError("bi-adjacency needs the synthetic tables while fitting")
        fk = rel.fk
        settings = self.settings()
        rho_init = Fraction(0)
        degree_init = None
        if self.init == "degree":
            noisy_total = getattr(synthetic, "noisy_total", None)
            parents: float | None = None
            children: float | None = None
            if multipliers.row_unit:  # table sizes are public under row-level units
                parents, children = float(rel.n_parent), float(rel.child_rows())
            elif noisy_total is not None:  # the table mechanisms' noisy totals (released)
                parents = float(rel.n_parent) if schema.table(fk.parent).public else noisy_total(fk.parent)
                children = noisy_total(fk.child)
            rho_init = budget.rho * self.degree_start_share(schema, fk, budget.rho, multipliers=multipliers,
                                                            parents=parents, children=children)
            degree_init = DegreeLinker().fit(
                rel, Budget(budget.accountant, budget.component, rho_init, budget.rng), schema=schema,
                multipliers=multipliers, progress=progress)
            report = getattr(synthetic, "report_sizes", None)
            if report is not None:  # before the first table is drawn (private sizes: entity unit)
                report(degree_init.size_facts)
        child, parent = synthetic(fk.child), synthetic(fk.parent)
        start = _initial_parents(degree_init, child, parent, budget.rng, progress, fk.self_referential)
        linked = np.flatnonzero(start >= 0)
        out = np.full(child.n_rows, -1, dtype=np.int64)
        d = sensitivity_constant(schema, multipliers, fk)
        rho_count = Fraction(0)
        if multipliers.link_count_public(fk.name):
            m = float(rel.link_count())  # = the child table's size, public under the row unit
            how = "public (row unit: the child table's size)"
        elif degree_init is not None:  # the start's linked children: released sizes × released null share
            m = float(max(linked.size, 1))
            how = "the degree start's number of linked synthetic children (post-processing)"
        else:
            rho_count = budget.rho * to_fraction(self.count_share)
            m = release_link_count(rel.link_count(), d, budget, rho_count, f"links of {fk.name}")
            how = "released with noise"

        def real_marginals(wls: list) -> list[np.ndarray]:
            return [a / m for a in rel.workload_marginals(wls, normalise=False)]

        res: RelationResult | None = None
        if linked.size and parent.n_rows:
            res = learn_relation(
                kind="otm", syn1=child.codes[linked], syn2=parent.codes, dims1=child.sizes,
                dims2=parent.sizes, real_marginals=real_marginals, m=m, d=d,
                m_syn=int(linked.size), budget=budget, settings=settings, rng=budget.rng,
                progress=progress, initial=start[linked], rho=budget.rho - rho_init - rho_count,
                row_ids=linked if fk.self_referential else None)
            out[linked] = res.parent
        budget.accountant.notes.append(
            f"{fk.name}: bi-adjacency normalises by the number of links, {how}; "
            f"sensitivity constant d = {d}"
            + (f"; degree start {float(rho_init / budget.rho):.0%} of the FK's ρ" if rho_init else ""))
        meas = res.measurements if res is not None else Measurements(m=m, d=d)
        return BiadjacencyLink(settings, meas, _fingerprint(child.codes, parent.codes), out, degree_init,
                               fk.self_referential, res.history if res is not None else [])


@dataclass
class BiadjacencyRelationModel:
    """A fitted many-to-many bi-adjacency model."""

    settings: Settings
    measurements: Measurements
    fingerprint: str
    edges: tuple[np.ndarray, np.ndarray]
    m: float  # noisy number of distinct pairs
    n1: int  # fit-time synthetic table sizes (noisy releases), the reference for m_syn
    n2: int
    self_relation: bool
    history: list[dict] = field(default_factory=list)

    def link(self, table1: EncodedTable, table2: EncodedTable, rng: np.random.Generator,
             progress: Reporter) -> tuple[np.ndarray, np.ndarray]:
        if _fingerprint(table1.codes, table2.codes) == self.fingerprint:
            progress(1.0, "learned relation reused")
            return self.edges[0].copy(), self.edges[1].copy()
        m_syn = _m_syn(self.m, self.n1, self.n2, table1.n_rows, table2.n_rows, self.self_relation)
        s = self.settings
        res = refit_relation(kind="mn", syn1=table1.codes, syn2=table2.codes,
                             measurements=self.measurements, m_syn=m_syn, settings=s, rng=rng,
                             progress=progress, n_slices=s.n_iters * s.slices_per_iter,
                             mask_diagonal=self.self_relation)
        return res.edge_arrays()


def _m_syn(m: float, n1: int, n2: int, n1s: int, n2s: int, self_rel: bool) -> int:
    m_syn = m_syn_rule(int(round(m)), max(n1, 1), max(n2, 1), n1s, n2s, "mn")
    cells = n1s * n2s - (min(n1s, n2s) if self_rel else 0)
    return int(max(0, min(m_syn, cells - 1)))


@register_relation
@dataclass(frozen=True)
class BiadjacencyRelation(Settings):
    """Many-to-many bi-adjacency through a link table (§3; [J] Alg. 1 and 4).

    Hyper-parameters: the fields of :class:`~relviz.relational.biadjacency.algorithm.Settings`
    (the ``otm_*`` ones do not apply), plus:

    Args:
        count_share: Share of the budget spent on the noisy number of distinct pairs.
    """

    name: ClassVar[str] = "biadjacency"
    label: ClassVar[str] = "Bi-adjacency (many-to-many, PGD + unbiased sampling)"
    gaussian_only: ClassVar[bool] = False
    needs_synthetic_tables: ClassVar[bool] = True
    count_share: float = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.count_share < 1:
            raise ParameterError("count_share", "count_share must be in (0, 1)")

    def settings(self) -> Settings:
        return _settings(self)

    def noise_scales(self, schema: Schema, fk1: ForeignKey, fk2: ForeignKey, rho: Fraction | float, *,
                     multipliers: Multipliers) -> dict[str, float]:
        """No σ is known before the run (as :meth:`BiadjacencyLinker.noise_scales`): empty."""
        return {}

    def problems(self, schema: Schema, fk1: ForeignKey, fk2: ForeignKey) -> list[Problem]:
        out = _workload_problems(schema, fk1.parent, fk2.parent, self.k, fk1.child)
        if fk1.nullable or fk2.nullable:
            out.append(Problem("bad_relation", "a many-to-many link table needs two non-null FKs",
                               fk1.child))
        return out

    def fit(self, link: PrivateLink, budget: Budget, *, schema: Schema, multipliers: Multipliers,
            progress: Reporter, synthetic: Callable[[str], EncodedTable] | None = None
            ) -> BiadjacencyRelationModel:
        if synthetic is None:
            raise ValueError("bi-adjacency needs the synthetic tables while fitting")
        fk1, fk2 = link.fk1, link.fk2
        t1, t2 = synthetic(fk1.parent), synthetic(fk2.parent)
        self_rel = fk1.parent == fk2.parent
        d = sensitivity_constant(schema, multipliers, fk1, fk2)
        rho_count = budget.rho * to_fraction(self.count_share)
        m = release_link_count(link.link_count(), d, budget, rho_count,
                               f"distinct pairs of {fk1.child}")
        # the fit-time tables' sizes are the released estimates of the parents' sizes: m̂ pairs
        m_syn = _m_syn(m, t1.n_rows, t2.n_rows, t1.n_rows, t2.n_rows, self_rel)

        def real_marginals(wls: list) -> list[np.ndarray]:
            return [a / m for a in link.workload_marginals(wls, normalise=False)]

        res = learn_relation(kind="mn", syn1=t1.codes, syn2=t2.codes, dims1=t1.sizes, dims2=t2.sizes,
                             real_marginals=real_marginals, m=m, d=d, m_syn=m_syn,
                             budget=budget, settings=self.settings(), rng=budget.rng,
                             progress=progress, mask_diagonal=self_rel, rho=budget.rho - rho_count)
        budget.accountant.notes.append(
            f"{fk1.child}: bi-adjacency normalises by the number of distinct pairs, released with "
            f"noise; sensitivity constant d = {d}")
        return BiadjacencyRelationModel(self.settings(), res.measurements, _fingerprint(t1.codes, t2.codes),
                              res.edge_arrays(), m, t1.n_rows, t2.n_rows, self_rel, res.history)

