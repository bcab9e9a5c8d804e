"""Bi-adjacency as relviz relational methods: one-to-many per FK, many-to-many per link table.

``BiadjacencyLinker`` (edge method ``"biadjacency"``) learns the FK column of a child table:
the child's rows are the rows of the bi-adjacency matrix and each gets exactly one parent
(spec/relational-biadjacency.md §4.5, [J] App. C). A self-referential FK (e.g. a person's mother)
masks the diagonal (§1.3) and uses ``d = d_child + d_parent`` (§1.5).

``BiadjacencyRelation`` (relation method ``"biadjacency"``, ``Plan.with_relation``) learns the
distinct pairs of a link table between its two parents (§3, M:N). The link table's own
attributes are synthesised by its single-table mechanism and attached to the learned pairs at
random: their association with the parents' attributes is not modelled (documented limitation,
§6.6).

Public facts this method uses, as in [J]'s bounded setting (§1.4): the real number of links ``m``
and the parents' real row counts (for ``m_syn``); they are recorded in the ledger notes. The
sensitivity constant ``d`` (edges one neighbour can change) comes from the privacy unit: under an
entity unit it is the number of link rows that one entity's closure can remove or modify
(``Multipliers.edges_changed``); under the row unit it is the FK's cap τ for a private parent
(1 for a public one), ``τ1 + τ2`` … see :func:`sensitivity_constant`.

relviz extension (1:N, on by default): the relation starts from the DP degree baseline's
assignment (``init="degree"``, costing ``init_share`` of the FK's budget: per-parent counts for a
public parent, the degree histogram for a private one, and the null share of a nullable FK)
instead of a uniformly random parent per child ([R]). ``init="random"`` is the paper's start
(not allowed for a nullable FK, whose null share must be measured).

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
from relviz.errors import Problem
from relviz.plan import to_fraction
from relviz.privacy.budget import Budget
from relviz.privacy.measure import PrivateForeignKey, PrivateLink
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational import register, register_relation
from relviz.relational.biadjacency.algorithm import (
    Measurements,
    RelationResult,
    Settings,
    learn_relation,
    refit_relation,
)
from relviz.relational.biadjacency.slicing import m_syn_rule
from relviz.relational.degree import DegreeLink, DegreeLinker
from relviz.schema import ForeignKey, Schema

__all__ = ["BiadjacencyLinker", "BiadjacencyRelation", "sensitivity_constant"]


def _fingerprint(*arrays: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def sensitivity_constant(schema: Schema, multipliers: Multipliers, fk: ForeignKey,
                         other: ForeignKey | None = None) -> int:
    """``d``: the most links of a relation one neighbouring database can change (§1.4–1.5).

    * Entity unit: link rows of the (link) child table removed or modified by one entity's
      closure, ``r + m`` of the child (``Multipliers.edges_changed``).
    * Row unit, 1:N FK: a child row changes 1 link; a private parent row up to its cap τ;
      self-referential: ``1 + τ`` (a row is a child and a parent).
    * Row unit, M:N link table: a link row changes 1 link, a parent row up to its FK's cap:
      ``max(τ1, τ2)``; both FKs to the same table: ``τ1 + τ2``.
    """
    unit = schema.privacy_unit
    if unit is None:
        raise ValueError("the schema has no privacy unit")
    if unit.entity is not None:
        return max(1, multipliers.edges_changed(fk.name))

    def cap(f: ForeignKey) -> int:
        return int(unit.caps.get(f.name, 1)) if not schema.table(f.parent).public else 1

    if other is None:
        return 1 + cap(fk) if fk.self_referential else max(1, cap(fk))
    if fk.parent == other.parent:
        return cap(fk) + cap(other)
    return max(1, cap(fk), cap(other))


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
    """One-to-many bi-adjacency for one FK (spec §4.5 with §3's selection and measurement).

    Hyper-parameters: every field of :class:`~relviz.relational.biadjacency.algorithm.Settings`
    (range-checked there), plus:

    Args:
        init: ``"degree"`` (default; relviz extension) or ``"random"`` ([R]).
        init_share: Share of the FK's budget spent on the degree start (0 < share < 1).
    """

    name: ClassVar[str] = "biadjacency"
    label: ClassVar[str] = "Bi-adjacency (PGD + unbiased sampling, Alimohammadi et al.)"
    gaussian_only: ClassVar[bool] = False
    needs_synthetic_tables: ClassVar[bool] = True
    init: Literal["degree", "random"] = "degree"
    init_share: float = 0.2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.init not in ("degree", "random"):
            raise ValueError("init must be 'degree' or 'random'")
        if not 0 < self.init_share < 1:
            raise ValueError("init_share must be in (0, 1)")

    def settings(self) -> Settings:
        return _settings(self)

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
        child, parent = synthetic(fk.child), synthetic(fk.parent)
        settings = self.settings()
        rho_init = Fraction(0)
        degree_init = None
        if self.init == "degree":
            rho_init = budget.rho * to_fraction(self.init_share)
            degree_init = DegreeLinker().fit(
                rel, Budget(budget.accountant, budget.component, rho_init, budget.rng), schema=schema,
                multipliers=multipliers, progress=progress)
        start = _initial_parents(degree_init, child, parent, budget.rng, progress, fk.self_referential)
        linked = np.flatnonzero(start >= 0)
        out = np.full(child.n_rows, -1, dtype=np.int64)
        m = rel.link_count()
        d = sensitivity_constant(schema, multipliers, fk)
        res: RelationResult | None = None
        if linked.size and parent.n_rows:
            res = learn_relation(
                kind="otm", syn1=child.codes[linked], syn2=parent.codes, dims1=child.sizes,
                dims2=parent.sizes, real_marginals=rel.workload_marginals, m=m, d=d,
                m_syn=int(linked.size), budget=budget, settings=settings, rng=budget.rng,
                progress=progress, initial=start[linked], rho=budget.rho - rho_init,
                row_ids=linked if fk.self_referential else None)
            out[linked] = res.parent
        budget.accountant.notes.append(
            f"{fk.name}: bi-adjacency treats the number of links m = {m:,} as public ([J] §2.2); "
            f"sensitivity constant d = {d}")
        meas = res.measurements if res is not None else Measurements(m=m, d=d)
        return BiadjacencyLink(settings, meas, _fingerprint(child.codes, parent.codes), out, degree_init,
                               fk.self_referential, res.history if res is not None else [])


@dataclass
class BiadjacencyM2N:
    """A fitted many-to-many bi-adjacency model."""

    settings: Settings
    measurements: Measurements
    fingerprint: str
    edges: tuple[np.ndarray, np.ndarray]
    m: int
    n1: int
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


def _m_syn(m: int, n1: int, n2: int, n1s: int, n2s: int, self_rel: bool) -> int:
    m_syn = m_syn_rule(m, n1, n2, n1s, n2s, "mn")
    cells = n1s * n2s - (min(n1s, n2s) if self_rel else 0)
    return int(max(0, min(m_syn, cells - 1)))


@register_relation
@dataclass(frozen=True)
class BiadjacencyRelation(Settings):
    """Many-to-many bi-adjacency through a link table (spec §3, Algorithm R1).

    Hyper-parameters: the fields of :class:`~relviz.relational.biadjacency.algorithm.Settings`
    (the ``otm_*`` ones do not apply).
    """

    name: ClassVar[str] = "biadjacency"
    label: ClassVar[str] = "Bi-adjacency (many-to-many, PGD + unbiased sampling)"
    gaussian_only: ClassVar[bool] = False
    needs_synthetic_tables: ClassVar[bool] = True

    def settings(self) -> Settings:
        return _settings(self)

    def problems(self, schema: Schema, fk1: ForeignKey, fk2: ForeignKey) -> list[Problem]:
        out = _workload_problems(schema, fk1.parent, fk2.parent, self.k, fk1.child)
        if fk1.nullable or fk2.nullable:
            out.append(Problem("bad_relation", "a many-to-many link table needs two non-null FKs",
                               fk1.child))
        return out

    def fit(self, link: PrivateLink, budget: Budget, *, schema: Schema, multipliers: Multipliers,
            progress: Reporter, synthetic: Callable[[str], EncodedTable] | None = None
            ) -> BiadjacencyM2N:
        if synthetic is None:
            raise ValueError("bi-adjacency needs the synthetic tables while fitting")
        fk1, fk2 = link.fk1, link.fk2
        t1, t2 = synthetic(fk1.parent), synthetic(fk2.parent)
        self_rel = fk1.parent == fk2.parent
        m = link.link_count()
        d = sensitivity_constant(schema, multipliers, fk1, fk2)
        m_syn = _m_syn(m, link.n1, link.n2, t1.n_rows, t2.n_rows, self_rel)
        res = learn_relation(kind="mn", syn1=t1.codes, syn2=t2.codes, dims1=t1.sizes, dims2=t2.sizes,
                             real_marginals=link.workload_marginals, m=m, d=d, m_syn=m_syn,
                             budget=budget, settings=self.settings(), rng=budget.rng,
                             progress=progress, mask_diagonal=self_rel)
        budget.accountant.notes.append(
            f"{fk1.child}: bi-adjacency treats the number of distinct links m = {m:,} and the parents' "
            f"row counts ({link.n1:,}, {link.n2:,}) as public ([J] §2.2); sensitivity constant d = {d}")
        return BiadjacencyM2N(self.settings(), res.measurements, _fingerprint(t1.codes, t2.codes),
                              res.edge_arrays(), m, link.n1, link.n2, self_rel, res.history)

