"""PrivPetal's sensitivities, budget split and noise calibration (public: no data read).

K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025 (arXiv 2503.22970), cited as [P]: §5 (Theorems 5.2–5.4, Eq. 7: the privacy cost of
one foreign key, the 1 : 1 : 8 split of R-scores : group sizes : model construction),
Appendix C (Lemmas C.1–C.3: sensitivities), Appendix D (Theorem D.1: the cost with the
initialisation, "C = ½·C_oneFK" split four ways, ``k/σ_h² : 1/σ_M² = 1 : 9``). Written out with
relviz's resolutions in docs/methods/privpetal.md §4.

**Composition.** Every release is a Gaussian mechanism. [P] Thm 5.2 composes them through the
analytic Gaussian mechanism: with cost ``c = Σ (Δ_i/σ_i)²`` the run is ``(ε, δ)``-DP iff
``δ(ε; √c) ≤ δ`` ([P] Eq. 4–5), i.e. it is ``√c``-GDP. relviz's accountant is in zCDP, where a
Gaussian release costs ``ρ = Δ²/(2σ²)``; under the Gaussian-DP conversion the plan's total
``ρ = μ²/2`` (:func:`relviz.privacy.accountant.gdp_mu`), so [P]'s budget ``B = γ*² = 2ρ`` and
every share of ``B`` is the same share of ``ρ``. :func:`gamma_star` and :func:`budget_B` give
[P]'s numbers for the worked examples.

**Sensitivities** (:func:`fk_sensitivities`). [P] bounds the change of every statistic by the
number ``τ`` of referenced tuples that can change (Lemma C.1: one NPM array, all sizes together;
Lemma C.2: an h-score; Lemma C.3: an R-score, ``2τ``). relviz derives that number from the privacy
unit and the caps *actually enforced* before anything is measured
(:func:`relviz.privacy.measure.enforce_caps`):

* entity unit: ``τ_r = g_rem(e)`` referenced tuples whose whole group disappears (the referenced
  relation is private: ``r(R_H)`` of :class:`~relviz.privacy.sensitivity.Multipliers`), and
  ``τ_m = x(e)`` referenced tuples that survive but lose children (the referenced relation is
  public, or the child has another FK into the entity: ``x(e)``). PrivPetal adds no column to any
  table, so no other change reaches a group;
* tuple unit (relviz's: one row of one private table changes its values and its own FK values):
  ``τ_r = 0``, ``τ_m = 2`` (a child leaves one group and joins another; a referenced row that
  changes its values changes one group).

A removed group removes mass 1 from one slice of an NPM (L1 = L2 ≤ 1); a modified group removes
mass 1 and adds mass 1 (L1 ≤ 2, L2 ≤ √2). Hence

=========================================  ==================  ================================
release                                    L2 sensitivity      [P]
=========================================  ==================  ================================
group-size vector, one NPM (all slices)    ``τ_r + √2·τ_m``    ``τ`` (Lemma C.1)
one h-score (scalar)                       ``τ_r + 2·τ_m``     ``τ`` (Lemma C.2)
one R-score (scalar)                       ``2(τ_r + 2·τ_m)``  ``2τ`` (Lemma C.3)
=========================================  ==================  ================================

``Δ* = τ_r + 2·τ_m`` is the combined multiplier; it equals ``τ`` where [P]'s analysis applies
(``τ_m = 0``). A vector of ``q`` scalar scores is released as one vector with L2 sensitivity
``√q·Δ``, which costs the same as ``q`` separate releases.

**Nullable FKs (relviz's addition, not in [P]).** A child with a null FK belongs to no group: it is
in no statistic above. One extra Gaussian release gives the number of such children, from a
:data:`NULL_SHARE` of the FK's ρ taken before the split (so the plan still sums to the FK's ρ);
its sensitivity ``Δ_null`` (:attr:`FKSensitivity.null`) is derived in :func:`fk_sensitivities`.

**Children's one-way marginals (relviz's addition, not in [P]; docs §5.8).** With
``child_margins`` the FK also releases, for each modelled child column, the histogram of the
children in groups over that column, from a :data:`MARGIN_SHARE` of the FK's ρ taken before the
split. Each child row adds 1 to one cell of each histogram, so its sensitivity is the child
table's histogram multiplier (:meth:`~relviz.privacy.sensitivity.Multipliers.table_histogram`:
``r + √2·m`` rows removed / changed under the entity unit, ``√2`` under the tuple unit), not the
NPMs' per-group one: an NPM gives a group mass 1 spread over its members, so its one-way
margins carry the noise of each slice times the group size.

**Children per parent value (relviz's addition, not in [P]; docs §5.9).** With
``parent_children`` the FK releases, for each household (parent) column, the number of children
in groups whose parent has each value, from a :data:`CHILDREN_SHARE` of the FK's ρ taken before
the split. Each child row adds 1 to the cell of its parent's value. Under the entity unit a
parent's values and a surviving child's FK never change, so only the child rows one entity
removes or changes move counts: the child table's histogram multiplier bounds it, as for the
one-way marginals. Under the tuple unit a child re-pointing moves one count (√2), and a parent
row that changes its values moves its ``≤ τ`` children together (√2·τ): ``√2·max(1, τ)``
(:meth:`~relviz.privacy.sensitivity.Multipliers.edges_changed`, ``τ + 1`` for a
self-referential FK).

**Parent–child pair margins (relviz's addition, not in [P]; docs §5.10).** With
``pair_margins = m`` the FK releases, for up to ``m`` pairs of a household (parent) column and a
child column, the two-way histogram of the children in groups over (their parent's value, their
own value), from a :data:`PAIR_SHARE` of the FK's ρ taken before the split. The pairs are chosen
first, the ``m`` best of one Gaussian release of every candidate pair's score that clear a
Bonferroni threshold (the single best when none does)
(:data:`PAIR_SELECT_SHARE` of that ρ; a Gaussian release keeps PrivPetal's plans Gaussian-only,
so [P] Thm 5.2's accounting still applies, where an exponential mechanism would not). A score is
the L1 distance of the pair's histogram ``N`` (children × (parent value, own value)) from
independence ``P(N) = r·cᵀ/n``, less a public penalty. Adding one child row moves ``N`` by 1 in
L1 and ``P(N)`` by ``‖ΔP‖₁ ≤ (3n + 1)/(n + 1) < 3``, so each score moves by less than 4 per child
row added or removed (:attr:`FKSensitivity.score`), and the vector of ``q`` scores by
``√q`` times that in L2. Each child row adds 1 to one cell: under the entity unit a parent's values and
a surviving child's FK never change, so a removed child moves one count and a changed one moves
within its parent's row (√2), the child table's histogram multiplier; under the tuple unit a
child re-pointing or changing moves one count (√2) and a parent row that changes its values moves
its ``≤ τ`` children together (√2·τ). Both are the children per parent value's sensitivity,
:attr:`FKSensitivity.children`.

A bare ``docs §N`` below is docs/methods/privpetal.md §N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from scipy.special import log_ndtr

from relviz.errors import Problem
from relviz.privacy.sensitivity import Multipliers
from relviz.schema import ForeignKey, Schema

__all__ = ["Preset", "PRESETS", "NULL_SHARE", "MARGIN_SHARE", "CHILDREN_SHARE",
           "PAIR_SHARE", "PAIR_SELECT_SHARE", "FKSensitivity", "fk_sensitivities", "unit_problems",
           "q_rscores", "FKPlan", "plan_fk", "sub_plan", "schedule", "gamma_star", "budget_B",
           "epsilon_star", "gaussian_delta", "MEAN_ABS", "usefulness_limit"]

MEAN_ABS = math.sqrt(2.0 / math.pi)
"""Mean absolute value of a standard normal."""

NULL_SHARE = Fraction(1, 50)
"""Share of a nullable FK's ρ spent on the number of children with a null FK (relviz's
addition, as relviz's PrivLava; docs/methods/privpetal.md §5.4); the rest is split as [P] §5."""

MARGIN_SHARE = Fraction(1, 50)
"""Share of an FK's ρ spent on the children's one-way marginals when ``child_margins`` is on
(relviz's addition, docs/methods/privpetal.md §5.8), taken before [P] §5's split."""

CHILDREN_SHARE = Fraction(1, 50)
"""Share of an FK's ρ spent on the children per parent value when ``parent_children`` is on
(relviz's addition, docs/methods/privpetal.md §5.9), taken before [P] §5's split."""

PAIR_SHARE = Fraction(1, 25)
"""Share of an FK's ρ spent on the parent–child pair margins when ``pair_margins`` is on
(relviz's addition, docs/methods/privpetal.md §5.10), taken before [P] §5's split."""

PAIR_SELECT_SHARE = Fraction(1, 4)
"""Share of the pair margins' ρ (:data:`PAIR_SHARE`) spent on choosing the pairs: one Gaussian
release of every candidate pair's score (docs/methods/privpetal.md §5.10); none when every
candidate pair is planned."""


@dataclass(frozen=True)
class Preset:
    """One budget preset of docs/methods/privpetal.md §4 (fractions of one FK's budget).

    Attributes:
        f_R, f_n, f_init, f_refine: Shares of R-scores, group sizes, the initial NPM store
            (Algorithm 5) and the per-attribute refinement (Algorithm 2, Phase B); sum 1.
        f_M: Share of a refining target's budget spent on new NPMs (the rest on h-scores).
        t2: New NPMs per refining target (``T2``).
        refine_targets: ``"first_o"`` (the first ``o·a`` targets query new NPMs, the authors'
            census run) or ``"all"`` (every one of the ``N·a`` targets, [P] Eq. 7).
    """

    f_R: Fraction  # noqa: N815 - the paper's symbols
    f_n: Fraction
    f_init: Fraction
    f_refine: Fraction
    f_M: Fraction  # noqa: N815
    t2: int
    refine_targets: str

    def __post_init__(self) -> None:
        if self.f_R + self.f_n + self.f_init + self.f_refine != 1:
            raise ValueError("f_R + f_n + f_init + f_refine must be 1")
        if self.refine_targets not in ("first_o", "all"):
            raise ValueError("refine_targets must be 'first_o' or 'all'")


def _f(x: str) -> Fraction:
    return Fraction(x)


PRESETS: dict[str, Preset] = {
    # [P] §5: R-scores : group sizes : model construction = 1 : 1 : 8; App. D: the initialisation
    # is half of the one-FK cost; k/σ_h² : 1/σ_M² = 1 : 9; T2 = 1. J as in the authors' census run.
    "relviz": Preset(_f("0.05"), _f("0.05"), _f("0.5"), _f("0.4"), _f("0.9"), 1, "first_o"),
    # the same fractions with every one of the N·a targets refining ([P] Eq. 7)
    "paper": Preset(_f("0.05"), _f("0.05"), _f("0.5"), _f("0.4"), _f("0.9"), 1, "all"),
    # the authors' configurations (for reproduction; docs/methods/privpetal.md §4)
    "ri-default": Preset(_f("0.05"), _f("0.05"), _f("0.45"), _f("0.45"), _f("0.8"), 2, "all"),
    "ri-census": Preset(_f("0.05"), _f("0.05"), _f("0.6"), _f("0.3"), _f("0.8"), 2, "first_o"),
    "ri-instacart": Preset(_f("0.05"), _f("0.05"), _f("0.7"), _f("0.2"), _f("0.8"), 1, "first_o"),
    "ri-tpch": Preset(_f("0.05"), _f("0.05"), _f("0.45"), _f("0.45"), _f("0.8"), 1, "all"),
}
"""The budget presets ([P] §5 and App. D; the authors' scripts)."""


# -- sensitivities -------------------------------------------------------------------------------

@dataclass(frozen=True)
class FKSensitivity:
    """Sensitivities of one FK's releases (see the module docstring).

    Attributes:
        tau_r: Referenced tuples whose group disappears.
        tau_m: Referenced tuples whose group changes but stays.
        vec: L2 sensitivity of the group-size vector and of one NPM array, ``τ_r + √2·τ_m``.
        h: Sensitivity of one h-score, ``Δ* = τ_r + 2·τ_m``.
        r: Sensitivity of one R-score, ``2·Δ*``.
        null: Sensitivity of the number of children with a null FK (a nullable FK only;
            relviz's addition, derived in :func:`fk_sensitivities`).
        hist: L2 sensitivity of one histogram of the children over one column
            (``child_margins``; relviz's addition): the child table's histogram multiplier.
        children: L2 sensitivity of one histogram of the children over one parent column
            (``parent_children``; relviz's addition): ``hist`` under the entity unit,
            ``√2·max(1, τ)`` under the tuple unit.
        score: Sensitivity of one pair-choice score (``pair_margins``; relviz's addition): the
            L1 distance of a parent–child pair histogram from independence moves by less than
            4 per child row added or removed, so ``4·(r + 2m)`` (the child table's score
            multiplier) under the entity unit, ``8·max(1, τ)`` under the tuple unit.
    """

    tau_r: int
    tau_m: int
    null: float = 1.0
    hist: float = math.sqrt(2.0)
    children: float = math.sqrt(2.0)
    score: float = 8.0

    @property
    def star(self) -> int:
        return self.tau_r + 2 * self.tau_m

    @property
    def vec(self) -> float:
        return self.tau_r + math.sqrt(2.0) * self.tau_m if self.tau_m else float(self.tau_r)

    @property
    def h(self) -> float:
        return float(self.star)

    @property
    def r(self) -> float:
        return 2.0 * self.star


def unit_problems(schema: Schema) -> list[Problem]:
    """Privacy units PrivPetal's analysis does not cover (all at once)."""
    unit = schema.privacy_unit
    if unit is None:
        return [Problem("no_unit", "PrivPetal needs a privacy unit (entity or tuple)")]
    if unit.entity is None and unit.neighbour != "tuple":
        return [Problem("unsupported_unit",
                        "PrivPetal's sensitivity analysis covers the entity unit (the paper's: one "
                        "entity and everything depending on it) and the tuple unit (one row of one "
                        "table); under the row unit one row re-points up to 2τ children, a whole "
                        "group change the analysis does not bound. Choose the entity or the tuple "
                        "unit, or another method")]
    return []


def fk_sensitivities(schema: Schema, mult: Multipliers, fk: ForeignKey) -> FKSensitivity:
    """``τ_r``, ``τ_m`` of ``fk`` under the schema's unit, from the enforced caps (public).

    Raises:
        ValueError: the unit is not covered (:func:`unit_problems`).
    """
    probs = unit_problems(schema)
    if probs:
        raise ValueError("; ".join(p.message for p in probs))
    if mult.tuple_unit:
        # null count: one row of the child changes its own FK between null and a parent (±1); a
        # row of the parent changes its values only, which no child's FK follows
        # children per parent value: a child re-points (one count moves) or a parent row changes
        # its values (its ≤ τ children move together): √2 times the links one row moves
        # pair-choice score: a child that re-points or changes is one row removed and one
        # added (< 4 each); a parent row that changes its values moves its ≤ τ children so
        return FKSensitivity(0, 2, 1.0, mult.table_histogram(fk.child),
                             math.sqrt(2.0) * mult.edges_changed(fk.name),
                             8.0 * mult.edges_changed(fk.name))
    tau_r, tau_m = int(mult.g_rem[fk.name]), int(mult.x[fk.name])
    # null count, Δ_null = max(1, τ_m): under the entity unit a surviving child never changes its
    # FK, so the count changes only by removed children whose FK is null. Such a child is not
    # removed with its FK parent (it has none): it is the entity row itself (1), or it is removed
    # through another FK of the child, and x(e) = τ_m bounds exactly the children removed other
    # than with their e-parent (like the groups that survive but lose children, Δ*'s τ_m term;
    # for a public parent x(e) = r(child) bounds every removed child). Never below 1, so the
    # release always has noise (a valid bound: when x(e) = 0 and the child is not the entity, the
    # count never changes).
    # children's one-way histograms: each child row is in one cell of each, so the child table's
    # histogram multiplier (rows removed, rows whose values change) bounds them; so it does the
    # children per parent value, since a parent's values and a surviving child's FK never change
    # pair-choice score: < 4 per child row removed, < 8 per child row changed (the child table's
    # score multiplier r + 2m counts a changed row twice)
    hist = mult.table_histogram(fk.child)
    return FKSensitivity(tau_r, tau_m, float(max(1, tau_m)), hist, hist,
                         4.0 * mult.table_score(fk.child))


# -- planning ------------------------------------------------------------------------------------

def q_rscores(h: int, a: int) -> int:
    """Number of base R-scores ``Q_R = C(h + a, 2) + a(a + 1)/2`` (``h`` counts ``size``;
    [P] Eq. 7 and App. C with unordered pairs)."""
    return (h + a) * (h + a - 1) // 2 + a * (a + 1) // 2


def schedule(picks: int, iterations: int) -> list[int]:
    """Picks per iteration: ``[1]*picks`` if ``picks < iterations``, else ``picks`` spread as
    evenly as possible over ``iterations`` (docs/methods/privpetal.md §3.5)."""
    if picks <= 0:
        return []
    if picks < iterations:
        return [1] * picks
    base, extra = divmod(picks, iterations)
    return [base + (1 if j < extra else 0) for j in range(iterations)]


def _sigma(delta: float, q: int | float, rho: Fraction) -> float:
    """σ of each of ``q`` releases of sensitivity ``delta`` sharing ``rho`` (``B``-share
    ``b = 2ρ``: ``σ = Δ·√(q/b)``)."""
    return delta * math.sqrt(q / (2.0 * float(rho))) if rho > 0 else math.inf


@dataclass(frozen=True)
class SubPlan:
    """ρ and σ of one PrivMRF-sub run ([P] §4.1 with the authors' constants, docs §3.3).

    Attributes:
        rho: The run's ρ.
        n_vars: ``|V|`` (``size`` included).
        q: Planned NPM queries ``|V| + ⌊|V|/2⌋``.
        rho_query: ρ of one NPM query (90 % of the run over ``q``).
        rho_hround: ρ of one h-score round (10 % of the run over the rounds).
        rounds: Picks per round (``schedule(⌊|V|/2⌋, 10)``).
        sigma_mar: σ of an NPM query.
    """

    rho: Fraction
    n_vars: int
    q: int
    rho_query: Fraction
    rho_hround: Fraction
    rounds: tuple[int, ...]
    sigma_mar: float


def sub_plan(rho: Fraction, n_vars: int, delta_vec: float) -> SubPlan:
    """The split of a PrivMRF-sub run over ``n_vars`` variables (``size`` included) with ρ
    ``rho``: 90 % for ``q = |V| + ⌊|V|/2⌋`` NPM queries, 10 % for the h-score rounds (equal
    shares per round)."""
    rho = Fraction(rho)
    q = n_vars + n_vars // 2
    rounds = tuple(schedule(n_vars // 2, 10))
    rq = rho * Fraction(9, 10) / q if q else Fraction(0)
    rh = rho * Fraction(1, 10) / len(rounds) if rounds else Fraction(0)
    return SubPlan(rho, n_vars, q, rq, rh, rounds, _sigma(delta_vec, 1, rq) if rq else math.inf)


@dataclass(frozen=True)
class FKPlan:
    """Every ρ and σ of one FK's Algorithm 1 run, fixed before any data are read ([P] §5,
    App. D; docs/methods/privpetal.md §4.3–4.4).

    Shares of the FK's budget ``B_FK = 2ρ`` (the same shares of ρ): ``f_n`` for the group sizes,
    ``f_R`` for the ``Q_R`` R-scores, ``f_init`` in four equal quarters (PrivMRF-sub on ``A_H``,
    PrivMRF-sub on ``{size} ∪ A_{I_a}``, inter-relational NPMs, intra-group NPMs; an empty quarter
    is redistributed: ``o = 1`` gives the intra quarter to the inter one, ``A_H = {size}`` splits
    the household quarter equally among the others), ``f_refine`` equally over the ``J`` refining
    targets, each spending ``f_M`` on ``T2`` new NPMs and the rest on ``T2`` h-score rounds. A
    stage with nothing to release (no refining target when the child has no attributes) passes
    its share to the stages that remain, in proportion to theirs (relviz's rule, docs §4.4).

    Attributes:
        rho: The FK's ρ. h: ``|A_H|`` with ``size``. a: ``|A_I|``. N: group-size cap. o: order.
        J: Refining targets. t2: ``T2``. f_M: NPM share inside a target.
        sens: The FK's sensitivities.
        rho_n, rho_R: ρ of the group-size vector and of the R-score vector.
        rho_hsub, rho_isub, rho_inter, rho_intra: ρ of the four initialisation parts.
        rho_target: ρ of one refining target (``b_j/2``).
        q_R: Number of base R-scores.
        rho_null: ρ of the null-children count (a nullable FK: ``NULL_SHARE·ρ``, taken before
            the split above; relviz's addition), else 0.
        rho_margins: ρ of the children's ``a`` one-way marginals together (``child_margins``:
            ``MARGIN_SHARE·ρ``, taken before the split above; relviz's addition), else 0.
        rho_children: ρ of the ``h − 1`` histograms of children per parent value together
            (``parent_children``: ``CHILDREN_SHARE·ρ``, taken before the split; relviz's
            addition), else 0.
        rho_pairs: ρ of the parent–child pair margins together (``pair_margins``:
            ``PAIR_SHARE·ρ``, taken before the split; relviz's addition), else 0.
        n_pairs: The pair margins released (``pair_margins``, at most the ``(h − 1)·a``
            candidates): ``rho_pair_select`` chooses them (one release of every candidate's
            score), the rest of ``rho_pairs`` measures them (docs §5.10).
    """

    rho: Fraction
    h: int
    a: int
    N: int  # noqa: N815
    o: int
    J: int  # noqa: N815
    t2: int
    f_M: Fraction  # noqa: N815
    sens: FKSensitivity
    rho_n: Fraction
    rho_R: Fraction  # noqa: N815
    rho_hsub: Fraction
    rho_isub: Fraction
    rho_inter: Fraction
    rho_intra: Fraction
    rho_target: Fraction
    q_R: int  # noqa: N815
    rho_null: Fraction = Fraction(0)
    rho_margins: Fraction = Fraction(0)
    rho_children: Fraction = Fraction(0)
    rho_pairs: Fraction = Fraction(0)
    n_pairs: int = 0
    hsub: SubPlan = field(repr=False, default=None)  # type: ignore[assignment]
    isub: SubPlan = field(repr=False, default=None)  # type: ignore[assignment]

    @property
    def B(self) -> float:  # noqa: N802 - the paper's symbol
        """This FK's budget in [P]'s units, ``B_FK = 2ρ``."""
        return 2.0 * float(self.rho)

    @property
    def sigma_n(self) -> float:
        return _sigma(self.sens.vec, 1, self.rho_n)

    @property
    def sigma_R(self) -> float:  # noqa: N802
        return _sigma(self.sens.r, self.q_R, self.rho_R)

    @property
    def sigma_inter(self) -> float:
        return _sigma(self.sens.vec, self.h + self.a, self.rho_inter) if self.a else math.inf

    @property
    def sigma_intra(self) -> float:
        q = (self.o - 1) * self.a
        return _sigma(self.sens.vec, q, self.rho_intra) if q else math.inf

    @property
    def sigma_M(self) -> float:  # noqa: N802
        """σ of a refining target's new NPM."""
        if not self.J:
            return math.inf
        return _sigma(self.sens.vec, self.t2, self.rho_target * self.f_M)

    @property
    def sigma_null(self) -> float:
        """σ of the null-children count (∞ for a non-nullable FK)."""
        return _sigma(self.sens.null, 1, self.rho_null) if self.rho_null else math.inf

    @property
    def sigma_margins(self) -> float:
        """σ of each of the ``a`` one-way histograms of the children (∞ without them)."""
        return _sigma(self.sens.hist, self.a, self.rho_margins) if self.rho_margins else math.inf

    def rho_margin_each(self) -> Fraction:
        """ρ of one child column's one-way histogram."""
        return self.rho_margins / self.a if self.rho_margins else Fraction(0)

    @property
    def sigma_children(self) -> float:
        """σ of each of the ``h − 1`` histograms of children per parent value (∞ without)."""
        return _sigma(self.sens.children, self.h - 1, self.rho_children) if self.rho_children \
            else math.inf

    def rho_children_each(self) -> Fraction:
        """ρ of one parent column's histogram of children."""
        return self.rho_children / (self.h - 1) if self.rho_children else Fraction(0)

    @property
    def rho_pair_select(self) -> Fraction:
        """ρ of choosing the pairs (:data:`PAIR_SELECT_SHARE` of ``rho_pairs``; 0 when every
        candidate pair is planned, so there is nothing to choose)."""
        if not self.n_pairs or self.n_pairs >= (self.h - 1) * self.a:
            return Fraction(0)
        return self.rho_pairs * PAIR_SELECT_SHARE

    @property
    def sigma_pair_scores(self) -> float:
        """σ of each of the ``(h − 1)·a`` candidate pairs' scores, released as one vector
        (∞ without a choice)."""
        return _sigma(self.sens.score, (self.h - 1) * self.a, self.rho_pair_select) \
            if self.rho_pair_select else math.inf

    @property
    def sigma_pairs(self) -> float:
        """σ of each pair margin when all ``n_pairs`` are kept (∞ without them; fewer kept
        share the same ρ, so less noise, docs §5.10)."""
        return self.sigma_pair_each(self.n_pairs)

    def rho_pair_each(self, kept: int) -> Fraction:
        """ρ of one pair margin when ``kept`` (1…``n_pairs``) are released: what the choice
        leaves of ``rho_pairs``, shared."""
        return (self.rho_pairs - self.rho_pair_select) / kept if (self.rho_pairs and kept) \
            else Fraction(0)

    def sigma_pair_each(self, kept: int) -> float:
        """σ of one pair margin when ``kept`` (1…``n_pairs``) are released (∞ without them)."""
        return _sigma(self.sens.children, 1, self.rho_pair_each(kept))

    def sigma_h(self, k: int) -> float:
        """σ of each of ``k`` h-scores of one refining round (T2 rounds per target)."""
        if not self.J:
            return math.inf
        return _sigma(self.sens.h, k * self.t2, self.rho_target * (1 - self.f_M))

    # ρ of single releases, as the run charges them
    def rho_npm_target(self) -> Fraction:
        return self.rho_target * self.f_M / self.t2

    def rho_hround_target(self) -> Fraction:
        return self.rho_target * (1 - self.f_M) / self.t2

    def rho_inter_query(self) -> Fraction:
        return self.rho_inter / (self.h + self.a) if self.a else Fraction(0)

    def rho_intra_query(self) -> Fraction:
        q = (self.o - 1) * self.a
        return self.rho_intra / q if q else Fraction(0)

    def planned(self) -> Fraction:
        """Planned ρ of the whole run (equals ``rho`` exactly; docs §4, test C2)."""
        return (self.rho_null + self.rho_margins + self.rho_children + self.rho_pairs + self.rho_n + self.rho_R + self.rho_hsub + self.rho_isub
                + self.rho_inter + self.rho_intra + self.rho_target * self.J)


def plan_fk(rho: Fraction, *, h: int, a: int, N: int, o: int, sens: FKSensitivity,  # noqa: N803
            preset: Preset | str = "relviz", nullable: bool = False,
            child_margins: bool = False, parent_children: bool = False,
            pair_margins: int = 0) -> FKPlan:
    """Split one FK's ρ (docs/methods/privpetal.md §4.4; [P] §5, App. D).

    A nullable FK first sets aside ``NULL_SHARE·ρ`` for the number of children with a null FK,
    and ``child_margins`` (with ``a > 0``) ``MARGIN_SHARE·ρ`` for the children's one-way
    marginals, and ``parent_children`` (with ``h > 1``) ``CHILDREN_SHARE·ρ`` for the children
    per parent value, and ``pair_margins`` (with ``h > 1`` and ``a > 0``) ``PAIR_SHARE·ρ`` for
    up to that many parent–child pair margins (relviz's additions, docs §5.4, §5.8, §5.9 and
    §5.10); the shares below split the rest.

    Args:
        rho: The FK's ρ (``B_FK = 2ρ``).
        h: Household attributes including ``size`` (``|A_H|`` of [P]).
        a: Individual attributes.
        N: Group-size cap; o: order of the permutation relations (``min(o, N)`` is used).
        sens: The FK's sensitivities.
        preset: A :data:`PRESETS` name or a :class:`Preset`.
        nullable: The FK is nullable (a null-children count is planned).
        child_margins: The children's one-way marginals are planned (one per child column).
        parent_children: The children per parent value are planned (one per parent column).
        pair_margins: The most parent–child pair margins planned (0: none).

    Raises:
        ValueError: ``pair_margins`` is negative.
    """
    p = PRESETS[preset] if isinstance(preset, str) else preset
    full = Fraction(rho)
    rho_null = full * NULL_SHARE if nullable else Fraction(0)
    rho_margins = full * MARGIN_SHARE if (child_margins and a) else Fraction(0)
    rho_children = full * CHILDREN_SHARE if (parent_children and h > 1) else Fraction(0)
    if int(pair_margins) != pair_margins or pair_margins < 0:
        raise ValueError(f"pair_margins must be a non-negative integer, got {pair_margins!r}")
    n_pairs = min(int(pair_margins), (h - 1) * a) if (h > 1 and a) else 0
    rho_pairs = full * PAIR_SHARE if n_pairs else Fraction(0)
    rho = full - rho_null - rho_margins - rho_children - rho_pairs
    o = max(1, min(o, N))
    J = (o * a if p.refine_targets == "first_o" else N * a) if a else 0  # noqa: N806
    w = {"h": Fraction(1) if h > 1 else Fraction(0), "i": Fraction(1) if a else Fraction(0),
         "inter": Fraction(1) if a else Fraction(0), "intra": Fraction(1) if (a and o > 1) else Fraction(0)}
    if a and o == 1:
        w["inter"] += 1  # o = 1: the intra quarter goes to the inter quarter
    if h <= 1 and a:  # A_H = {size}: the household quarter is split among the other quarters
        others = [k for k in ("i", "inter", "intra") if w[k] > 0]
        for k in others:
            w[k] += Fraction(1, len(others))
    total_w = sum(w.values())
    # A stage with nothing to release (no R-scores when h + a ≤ 1, no initial NPMs when
    # total_w = 0, no refining targets when a = 0) passes its share to the stages that remain,
    # in proportion to theirs, so that the plan spends the FK's ρ exactly (relviz's rule,
    # docs §4.4; f_n always remains: the group sizes are always released).
    shares = {"n": p.f_n, "R": p.f_R if (h + a) > 1 else Fraction(0),
              "init": p.f_init if total_w else Fraction(0), "refine": p.f_refine if J else Fraction(0)}
    kept = sum(shares.values())
    shares = {k: v / kept for k, v in shares.items()}
    init = rho * shares["init"]
    parts = {k: (init * v / total_w if total_w else Fraction(0)) for k, v in w.items()}
    rho_target = rho * shares["refine"] / J if J else Fraction(0)
    plan = FKPlan(full, h, a, N, o, J, p.t2, p.f_M, sens, rho * shares["n"], rho * shares["R"],
                  parts["h"], parts["i"], parts["inter"], parts["intra"], rho_target,
                  q_rscores(h, a), rho_null, rho_margins, rho_children, rho_pairs, n_pairs)
    object.__setattr__(plan, "hsub", sub_plan(parts["h"], h, sens.vec))
    object.__setattr__(plan, "isub", sub_plan(parts["i"], a + 1, sens.vec))
    return plan


def usefulness_limit(n_noisy: float, sigma: float, lam: float, max_cells: int) -> float:
    """``L(σ) = min(ñ / (λ·σ·√(2/π)), L_max)``: a candidate marginal is admissible when its
    cells (the whole size domain included) are fewer ([P] App. D, λ-usefulness)."""
    if not math.isfinite(sigma) or sigma <= 0:
        return 0.0 if not math.isfinite(sigma) else float(max_cells)
    return min(max(n_noisy, 0.0) / (lam * sigma * MEAN_ABS), float(max_cells))


# -- [P]'s calibration (Eq. 4–5) -------------------------------------------------------------------

def gaussian_delta(epsilon: float, gamma: float) -> float:
    """``δ(ε; γ) = Φ(γ/2 − ε/γ) − e^ε·Φ(−γ/2 − ε/γ)`` ([P] Eq. 4–5), in log space."""
    if gamma <= 0:
        return 0.0
    a = float(log_ndtr(gamma / 2 - epsilon / gamma))
    b = epsilon + float(log_ndtr(-gamma / 2 - epsilon / gamma))
    if b >= a:
        return 0.0
    return math.exp(a) * -math.expm1(b - a)


def gamma_star(epsilon: float, delta: float, tol: float = 1e-12) -> float:
    """The largest ``γ`` with ``δ(ε; γ) ≤ δ`` ([P] Thm 5.2): bracket by doubling from 1, then
    bisection to ``tol``."""
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon, hi) <= delta:
        lo, hi = hi, 2 * hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if gaussian_delta(epsilon, mid) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def budget_B(epsilon: float, delta: float) -> float:  # noqa: N802 - the paper's symbol
    """[P]'s total budget ``B = γ*²`` (relviz's ρ under the Gaussian-DP conversion is ``B/2``)."""
    return gamma_star(epsilon, delta) ** 2


def epsilon_star(cost: float, delta: float, tol: float = 1e-12) -> float:
    """The smallest ``ε ≥ 0`` with ``δ(ε; √cost) ≤ δ`` (reporting the realised cost)."""
    g = math.sqrt(max(cost, 0.0))
    if g == 0 or gaussian_delta(0.0, g) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, g) > delta:
        lo, hi = hi, 2 * hi
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mid, g) > delta:
            lo = mid
        else:
            hi = mid
    return hi
