"""PrivPetal as a relviz database method: Algorithm 4 over a foreign-key DAG, sampling,
decomposition and the merge of a child with several FKs.

K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
SIGMOD 2025 ([P]), documented in docs/methods/privpetal.md:

* **Algorithm 4** ([P] §4.4): private relations in topological order (referenced relations
  first); for every FK ``R → R′`` of a private relation ``R``, Algorithm 1
  (:mod:`~relviz.relational.privpetal.algorithms`) with ``R_I = R`` and ``R_H = R′``. A referenced
  relation that is public, or private and synthesised earlier, is *existing*: its ``size`` is drawn
  from the household model's ``p(size | A_H)``; otherwise the first FK that references it creates
  it from the household model. Every Algorithm 1 call runs and charges its own PrivMRF-sub on
  ``A_{R′} ∪ {size}`` (``size`` is private, also for a public ``R′``: docs §8 D11).
* **Sampling and decomposition** ([P] §4.4; docs §3.9): the flattened relation is sampled column
  by column, slot by slot, each column from its model's conditional given the columns already
  drawn, for the rows whose size reaches the slot; the rows are shuffled and each row of size
  ``s`` becomes one referenced tuple and ``s`` children.
* **MERGE** (docs §3.10, a relation with several FKs, TPC-H ``lineitem``): the copies made by
  the FKs are matched on their attribute columns (every possible exact match on the first column,
  recursively on the others, leftovers pooled); the first copy is kept whole and takes the other
  FKs from its partners; unmatched rows draw a referenced tuple ∝ its synthesised group size among
  those still below the cap (so no group exceeds its cap, [P] §4.4 output integrity).

**Nullable FKs** (relviz's addition, not in [P]; docs §5.4, as relviz's PrivLava): children
with a null FK belong to no group, so they are left out of the flattened relation and of every
statistic of Algorithms 1–5; one extra Gaussian release (``NULL_SHARE`` of the FK's ρ,
:mod:`~relviz.relational.privpetal.accounting`) gives their noisy number, and sampling adds that
many child rows with a null FK, their attributes drawn from Algorithm 5 (2)'s model of one
individual tilted by ``size`` (a random child rather than a member of a random group; no new
private read). In MERGE these rows are ordinary rows of their copy: a row of the first copy takes
another FK from its partner (a parent, or null when the partner is one of that FK's null rows).

relviz's choices (docs §5): attributes with more than ``split_above`` codes are modelled as
``(v div 10, v mod 10)`` with the public quotient domain and clipped on recombination (docs §3.1,
§8 D13), but a categorical attribute of a public table is kept whole (a digit of its code groups
unrelated categories), unless ``splits`` names the attribute's own divisor or keeps it whole
(docs §3.1: the authors' TPC-H encoding keeps ``P_BRAND`` whole and splits ``P_TYPE`` by 25); a public referenced relation's attributes include those of its public parents up to
``public_context`` hops (public, so free: TPC-H ``partsupp`` carries its part's brand, type and
container, as in the authors' TPC-H encoding); a private table in no FK is synthesised on its own
with the plan's single-table mechanism.

A bare ``docs §N`` below is docs/methods/privpetal.md §N.
"""

from __future__ import annotations

import math
import numbers
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, Problem
from relviz.marginals import mixed_radix_codes
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.privacy.postprocessing import fit_group_margins, fit_margins, project_counts
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.parent_attributes import public_parent_linker
from relviz.relational.privpetal.accounting import (
    PRESETS,
    fk_sensitivities,
    plan_fk,
    unit_problems,
)
from relviz.relational.privpetal.algorithms import FKFit, Params, fit_fk, target_pairs
from relviz.relational.privpetal.mrf import Model, draw_from_table, logits_to_probs
from relviz.relational.privpetal.npm import SIZE, PrivateFK
from relviz.relational.registry import (
    LINKERS,
    fit_mixed_mode_linkers,
    mixed_mode_linker_problems,
    mixed_mode_shares,
    register_database,
)
from relviz.schema import ForeignKey, Schema
from relviz.single import get as get_mechanism

__all__ = ["PrivPetal", "FittedPrivPetal", "Encoding", "fk_order", "relations", "match"]

SOURCE = "PrivPetal (Cai, Xiao & Yang, SIGMOD 2025)"
MAX_CAP = 64


# -- encodings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Encoding:
    """How a table's attributes are modelled: one column per small attribute, two
    ``(v div d, v mod d)`` columns per attribute with more than ``split_above`` codes (``d = 10``,
    public quotient domain ``⌈|X|/d⌉``; never a public table's categorical attribute) or named in
    ``splits`` (its own ``d``, or kept whole),
    and, for a public referenced table, its public parents' columns (``"parent.attr"``).

    Attributes:
        names: Modelled column names. dom: Their domain sizes.
        source: Per column ``(table, attribute, part)`` with part ``"whole"``, ``"hi"``, ``"lo"``.
        via: Per column the FK names followed from the table (empty for its own attributes).
        div: Per column the divisor ``d`` of a split attribute (0 for a whole one).
    """

    names: tuple[str, ...]
    dom: tuple[int, ...]
    source: tuple[tuple[str, str, str], ...]
    via: tuple[tuple[str, ...], ...]
    div: tuple[int, ...]


def _divisor(table: str, attribute: str, size: int, split_above: int | None,
             splits: Mapping[str, int] | None, public_categorical: bool = False) -> int:
    """The divisor ``d`` of an attribute's two-column factorisation, 0 to keep it whole:
    ``splits["table.attribute"]`` when given (0: whole), else 0 for a categorical attribute of a
    public table (docs §3.1), else 10 above ``split_above``."""
    key = f"{table}.{attribute}"
    if splits and key in splits:
        d = int(splits[key])
        return d if 0 < d < size else 0
    if public_categorical:
        return 0
    return 10 if split_above is not None and size > split_above else 0


def _own_columns(schema: Schema, table: str, split_above: int | None, prefix: str = "",
                 splits: Mapping[str, int] | None = None
                 ) -> list[tuple[str, int, tuple[str, str, str], int]]:
    out = []
    public = schema.table(table).public
    for a in schema.table(table).attributes:
        size = int(a.size)
        d = _divisor(table, a.name, size, split_above, splits,
                     public and a.kind == "categorical")
        if d:
            out.append((f"{prefix}{a.name}#hi", int(math.ceil(size / d)), (table, a.name, "hi"), d))
            out.append((f"{prefix}{a.name}#lo", d, (table, a.name, "lo"), d))
        else:
            out.append((f"{prefix}{a.name}", size, (table, a.name, "whole"), 0))
    return out


def encoding(schema: Schema, table: str, *, split_above: int | None, public_context: int = 0,
             splits: Mapping[str, int] | None = None) -> Encoding:
    """The modelled columns of ``table`` (see :class:`Encoding`); ``public_context`` hops of public
    parents are joined only when ``table`` is public; ``splits`` overrides the factorisation of
    named attributes (``{"table.attribute": d}``, ``d = 0`` keeps it whole)."""
    cols = [(n, d, s, (), k) for n, d, s, k in _own_columns(schema, table, split_above, splits=splits)]
    if schema.table(table).public and public_context > 0:
        frontier = [(table, ())]
        for _ in range(public_context):
            nxt = []
            for t, via in frontier:
                for fk in schema.fks_from(t):
                    if fk.self_referential or fk.nullable or not schema.table(fk.parent).public:
                        continue
                    path = via + (fk.name,)
                    cols += [(n, d, s, path, k) for n, d, s, k in
                             _own_columns(schema, fk.parent, split_above, f"{fk.parent}.", splits)]
                    nxt.append((fk.parent, path))
            frontier = nxt
    return Encoding(tuple(c[0] for c in cols), tuple(c[1] for c in cols),
                    tuple(c[2] for c in cols), tuple(c[3] for c in cols), tuple(c[4] for c in cols))


def encode(enc: Encoding, codes: Mapping[str, EncodedTable], paths: Mapping[tuple[str, ...], np.ndarray]
           ) -> np.ndarray:
    """Codes ``(n, len(enc.names))`` of a table in ``enc``: ``codes[table]`` are the tables'
    attribute codes, ``paths[via]`` the row of the reached parent for every row of the table."""
    out = []
    for (table, attr, part), via, d in zip(enc.source, enc.via, enc.div):
        col = codes[table].column(attr)
        if via:
            col = col[paths[via]]
        out.append(col // d if part == "hi" else (col % d if part == "lo" else col))
    n = len(next(iter(paths.values()))) if paths else (len(out[0]) if out else 0)
    return np.stack(out, axis=1).astype(np.int64) if out else np.zeros((n, 0), np.int64)


def decode(enc: Encoding, schema: Schema, table: str, codes: np.ndarray) -> EncodedTable:
    """Schema attribute codes of a table modelled in ``enc`` (split columns recombined
    ``d·hi + lo`` and clipped to the domain, docs §3.1)."""
    t = schema.table(table)
    cols = []
    for a in t.attributes:
        if f"{a.name}#hi" in enc.names:
            hi = codes[:, enc.names.index(f"{a.name}#hi")]
            j = enc.names.index(f"{a.name}#lo")
            cols.append(np.minimum(enc.div[j] * hi + codes[:, j], int(a.size) - 1))
        else:
            cols.append(codes[:, enc.names.index(a.name)])
    arr = np.stack(cols, axis=1).astype(np.int64) if cols else np.zeros((len(codes), 0), np.int64)
    return EncodedTable(table, tuple(t.attribute_names), tuple(int(a.size) for a in t.attributes), arr)


# -- order -----------------------------------------------------------------------------------------

def relations(schema: Schema, linked: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Private tables with a modelled private FK (``linked`` FKs are left to a linker),
    referenced relations first ([P] Alg. 4)."""
    return [t for t in schema.topological_order()
            if not schema.table(t).public and any(f.name not in linked for f in schema.fks_from(t))]


def fk_order(schema: Schema, table: str, linked: frozenset[str] | set[str] = frozenset()
             ) -> list[ForeignKey]:
    """The modelled FKs of ``table`` in MERGE order: to private parents first, then by name."""
    return sorted((f for f in schema.fks_from(table) if f.name not in linked),
                  key=lambda f: (schema.table(f.parent).public, f.name))


def standalone(schema: Schema, linked: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Private tables in no modelled private FK (neither child nor parent of one): their own
    single-table model (a ``linked`` FK then joins two such tables, or one and a public parent)."""
    modelled = [fk for fk in schema.private_foreign_keys if fk.name not in linked]
    parents = {fk.parent for fk in modelled}
    children = {fk.child for fk in modelled}
    return [t for t in schema.private_tables if t not in children and t not in parents]


# -- the method ------------------------------------------------------------------------------------

@register_database
@dataclass(frozen=True)
class PrivPetal(Params):
    """PrivPetal on relviz's accountant (see the module docstring and docs/methods/privpetal.md).

    Args:
        preset: Budget split inside an FK (``relviz``, ``paper``, ``ri-default``, ``ri-census``,
            ``ri-instacart``, ``ri-tpch``; :data:`~relviz.relational.privpetal.accounting.PRESETS`).
        order: ``o``, the most individuals in one NPM (1–3).
        member_cap: ``M``, members of a group used for statistics (None: ``min(N, 10)``).
        lam: λ of λ-usefulness; ``None`` (default): ``6·√(ñ/616,115)`` clipped to ``[1, 6]``
            from the noisy number of groups ñ (``algorithms.auto_lambda``), lowered (not below
            0.15) until every ``{size, A}`` of the PrivMRF-sub runs is λ-useful
            (``algorithms.admitting_lambda``). max_cells: ``L_max``.
            k_max: most attributes (``size`` included)
            in a candidate NPM. n_mrf: context attributes per target model.
        t1_picks, t1_iters: Phase A picks and iterations. k: candidates h-scored per round.
        clique_cells, model_cells: Caps of a target model's cliques / sum of cliques.
        sub_clique_cells, sub_model_cells: The same for PrivMRF-sub.
        fit_iters, refit_iters: Mirror-descent iterations of a first fit / a warm refit.
        merge_from: Sizes ``merge_from…N`` are merged in NPM queries (None: no merging).
        rscore_mode: ``"per_size"`` ([P] Eq. 3) or ``"pooled"`` (the authors' code).
        sampling: ``"rounded"`` (variance-reduced) or ``"iid"``.
        slice_weights: ``"noise"`` (default, relviz): each NPM slice's residual weighted by
            ``min(1, 1/c)``, ``c`` the factor its rescaling to ``ñ_s`` multiplied its noise by
            (docs §8 D25); ``"none"``: the spec's unweighted loss.
        device: Where the MRF fits run (``Model.fit``, about nine tenths of the fit time):
            ``"auto"`` (torch on CUDA when present, else numpy, faster on a CPU), ``"numpy"``,
            ``"cpu"`` or ``"cuda[:n]"`` (torch there, float64).
        inter_z: The noise-aware gate of Algorithm 5 step (3) (relviz's addition, docs §5.7): a
            CFS-picked inter-relational NPM is queried only if one of its parent–child pairs
            has a noisy R-score at least ``inter_z`` σ_R above what independence gives, else
            only the best-supported pick is (none with ``inter_keep_best=False``); the step's
            whole ρ goes to what is kept. ``None``: every pick at the planned ρ (the paper).
        inter_keep_best: With ``inter_z``, whether Algorithm 5 (3) still measures its single
            best-supported pick when none passes the gate (relviz's addition, docs §5.7);
            ``False`` measures none and passes the step's ρ to Algorithm 2's refining targets
            (docs §4.4).
        refine_z: The same evidence test on Algorithm 2 Phase B (relviz's addition, docs §5.7):
            a new refining candidate that holds both parent and child columns is considered only
            if one of its parent–child pairs has a noisy R-score at least ``refine_z`` σ_R above
            what independence gives; a target left with fewer candidates passes its unspent ρ
            on to the next targets (docs §4.4). ``None``: every λ-useful candidate (the paper).
        size_z: The size gate (relviz's addition, docs §5.11): in Algorithm 5 (1)'s household
            model, a released block of ``size`` with household columns whose profile over those
            columns is consistent with their own distribution (chi-square z below ``size_z``)
            is replaced by that distribution, so noise alone gives no size dependence.
            ``None``: the spec (every block as released). Post-processing.
        split_above: Attributes with more codes are modelled as two digits (None: never),
            except the categorical attributes of public tables, kept whole: their codes have no
            order, so a digit would group unrelated categories and cut their association with
            the children's columns into pieces that two-way statistics see only in part (docs
            §3.1; TPC-H: ``P_BRAND`` ↔ quantity).
        splits: Per-attribute factorisation (``{"table.attribute": d}``, public): ``d ≥ 2``
            models the attribute as ``(v div d, v mod d)``, ``d = 0`` keeps it whole whatever
            ``split_above`` (as does a divisor not below the domain size); unnamed attributes
            follow ``split_above``. The authors' TPC-H encoding keeps ``P_BRAND`` whole and
            splits ``P_TYPE`` by 25, its first syllable, the one Q14's ``PROMO`` selects (docs
            §3.1). A name that is no attribute of the schema is a plan problem.
        public_context: Hops of public parents whose attributes join a public referenced table.
        size_raking: When the referenced rows already exist (a public parent, or a private one
            generated by an earlier FK), rake their size distributions ``p(size | R_H)`` by one
            factor per size so that the drawn sizes' expected histogram is the released ``ñ_s``
            scaled to those rows (iterative proportional fitting; post-processing, relviz's
            addition, docs §6.10). Default False: Algorithm 4's conditionals as fitted.
        debias_stored_h: Phase A of Algorithm 2 ranks stored NPMs by h-scores on their noisy
            arrays; with True the L1 norm their noise alone gives (``√(2/π)·√var`` per cell)
            is subtracted, so large noisy NPMs are not preferred for their noise
            (``algorithms.stored_h_score``; post-processing, relviz's addition, docs §6.11).
            Default False: the paper's raw h-score.
        public_margins: For an FK to a public parent, fit the model of ``A_H ∪ {size}``
            (Algorithm 5 (1), whose ``p(size | A_H)`` Algorithm 4 draws the parent rows' sizes
            from) with the parent's exact attribute marginals on every clique as well
            (weight ``algorithms.PUBLIC_WEIGHT``), so the noisy NPMs inform ``p(size | A_H)``
            and not the public ``p(A_H)`` (public data; relviz's addition, docs §6.11).
            Default False.
        slice_lam: λ-usefulness per independently noised block of an NPM release (relviz's
            addition, docs §6.11): a slice, or the merged block of ``merge_from``, whose noisy
            groups per cell are below ``slice_lam·σ·√(2/π)`` is masked (left out of the model
            losses). None (default): only blocks with a non-positive noisy total are masked.
        public_usefulness: For an FK to a public parent, judge λ-usefulness (docs §2.8) on the
            NPM's rarest public slice: its cells are counted as ``cells · r``, ``r`` the
            scarcity of the rarest public value combination of the candidate's household
            variables, the smaller of the joint one and the product of each variable's
            (public data; ``_Run.cells_useful``; relviz's addition, docs §6.12). Default
            False: the spec's cell count.
        size_calibration: When the referenced rows already exist, rake their size distributions
            so that, over those rows, the expected ``(size, A_C)`` histogram of every clique
            ``C`` of the household model's fit tree is the model's own ``p(size | A_C)`` times
            the rows with each ``A_C`` (:func:`calibrated_size_probs`; post-processing of the
            fitted model, relviz's addition, docs §6.12). Drawing from ``p(size | R_H)``, a
            product over every clique holding ``size``, compounds their noisy tilts on the
            rows' full attribute vectors; this undoes that. ``"variables"``: after the
            clique margins, also each household variable's own ``p(size | v)`` times the rows
            with each ``v`` (for a parent generated by another FK's model, whose attribute mix
            differs from the one the household model was fitted on; docs §6.16). Default False.
        column_calibration: Rake each flattened-relation column's drawn distributions so that,
            over the rows, its relation with each context variable alone is its own model's
            ``p(target | v)`` times the rows with each ``v`` (:func:`calibrated_column_probs`;
            post-processing of the fitted model, relviz's addition, docs §6.17). The columns
            are drawn in turn, each from its own model given the columns before it, whose drawn
            mix is not the one that model was fitted on. Default False.
        child_margins: Release, for each child column, the histogram of the children in groups
            over it (one Gaussian release per column from ``MARGIN_SHARE`` of the FK's ρ, taken
            before the split; sensitivity: the child table's histogram multiplier), and rake
            every flattened-relation column of the children to it: each group size's
            ``p(column | size)`` of Algorithm 5 (2)'s model of one individual is raked to the
            released histogram over the drawn sizes' children, and each slot's column is raked
            to what those give its rows (:func:`slot_margin_targets`; relviz's addition, docs
            §5.8). An NPM gives each group mass 1 spread over its members, so its one-way
            margins carry each slice's noise times the group size, where a count of the
            children themselves changes by the child rows one unit holds. Pays where groups are
            large and that number small (TPC-H's ``orders → customer``: 1 order per entity,
            ~15 per customer). Default False.
        parent_children: Release, for each parent (household) column, the number of children in
            groups whose parent has each value (one Gaussian release per column from
            ``CHILDREN_SHARE`` of the FK's ρ, taken before the split; sensitivity: the child
            table's histogram multiplier under the entity unit, ``√2·max(1, τ)`` under the
            tuple unit), and, when the referenced rows already exist, tilt their size
            distributions ``p(size | R_H)`` by ``e^{λ·size}`` per value so that the rows with
            each value expect the released number of children (:func:`tilted_size_probs`;
            relviz's addition, docs §5.9). The household model's ``p(size | v)`` comes from
            noisy NPMs of several household columns at once (TPC-H: order year with two other
            order columns), which a count of the children per year alone measures more
            precisely. Default False.
        pair_margins: Release at most this many two-way histograms of the children over (a
            parent column, a child column), together ``PAIR_SHARE`` of the FK's ρ taken before
            the split: the pairs with the largest scores in one Gaussian release of every
            candidate's (``PAIR_SELECT_SHARE`` of that ρ; how far the children's own pair
            histogram is from independence) among those clearing a Bonferroni threshold
            (``PAIR_LEVEL``; the single best if none does), the histograms measured with the children per
            parent value's sensitivity; and rake every slot's column of
            that child column so that its relation with the parent column is the released one
            (:func:`calibrated_column_probs`; relviz's addition, docs §5.10). An NPM that holds a
            large public parent attribute with a child column is rarely λ-useful (TPC-H's
            150 part types with a line item's quantity), where a count of the children
            themselves is measured with the child table's sensitivity. 0 (default): none.
        pool_totals: Estimate the number of children in groups from every release that holds
            it, not from the noisy group sizes alone: the inverse-variance mean of the sizes'
            own estimate (conditioned on a public parent's exact number of groups) and the sums
            of the ``child_margins`` and ``parent_children`` histograms, which the noisy sizes
            are then made consistent with (:func:`algorithms.pooled_children_total`;
            post-processing, relviz's addition, docs §5.12). Default True; False: the sizes'
            own total (docs §8 D18).

    Every parameter but ``split_above``, ``splits`` and ``public_context`` may differ per FK: an edge's own
    parameters (``Plan.with_params(fk, …)``) configure its Algorithm 1 run, and an edge without
    any runs on the defaults (:meth:`for_component`); the three encoding parameters come from the
    plan's first edge.
    """

    name: ClassVar[str] = "privpetal"
    label: ClassVar[str] = "PrivPetal (permutation relations per FK)"
    shared_params: ClassVar[tuple[str, ...]] = ("split_above", "splits", "public_context")
    """The table encodings, taken from the plan's first PrivPetal edge (:meth:`for_component`);
    the other parameters are per FK. ``Plan.problems`` refuses differing encodings elsewhere."""
    gaussian_only: ClassVar[bool] = True
    linkable: ClassVar[str] = "an FK to a public parent, or one whose cap is above what it models"
    preset: str = "relviz"
    split_above: int | None = 20
    splits: Mapping[str, int] | None = None
    public_context: int = 1

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ParameterError("preset", f"preset must be one of {', '.join(PRESETS)}")
        if self.order not in (1, 2, 3):
            raise ParameterError("order", "order must be 1, 2 or 3")
        for name, low in (("k_max", 2), ("n_mrf", 1), ("t1_picks", 0), ("t1_iters", 1), ("k", 1),
                          ("fit_iters", 1), ("refit_iters", 1), ("public_context", 0)):
            v = getattr(self, name)
            if int(v) != v or v < low:
                raise ParameterError(name, f"{name} must be an integer ≥ {low}")
        if self.member_cap is not None and (int(self.member_cap) != self.member_cap
                                            or self.member_cap < self.order):
            raise ParameterError("member_cap", "member_cap must be None or an integer ≥ order")
        if self.merge_from is not None and (int(self.merge_from) != self.merge_from or self.merge_from < 1):
            raise ParameterError("merge_from", "merge_from must be None or an integer ≥ 1")
        if self.rscore_mode not in ("per_size", "pooled"):
            raise ParameterError("rscore_mode", "rscore_mode must be 'per_size' or 'pooled'")
        if self.sampling not in ("rounded", "iid"):
            raise ParameterError("sampling", "sampling must be 'rounded' or 'iid'")
        if self.slice_weights not in ("noise", "none"):
            raise ParameterError("slice_weights", "slice_weights must be 'noise' or 'none'")
        if (self.lam is not None and not self.lam > 0) or not self.max_cells > 0:
            raise ParameterError("lam", "lam and max_cells must be positive")
        if not (self.device in ("auto", "numpy", "cpu") or str(self.device).startswith("cuda")):
            raise ParameterError("device", "device must be 'auto', 'numpy', 'cpu' or 'cuda[:n]'")
        for name in ("inter_keep_best", "size_raking", "debias_stored_h", "public_margins", "public_usefulness",
                     "column_calibration", "child_margins", "parent_children", "pool_totals"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(name, f"{name} must be True or False")
        if isinstance(self.pair_margins, bool) or not isinstance(self.pair_margins, int) \
                or self.pair_margins < 0:
            raise ParameterError("pair_margins", "pair_margins must be an integer ≥ 0")
        if not (isinstance(self.size_calibration, bool) or self.size_calibration == "variables"):
            raise ParameterError("size_calibration",
                                 "size_calibration must be True, False or 'variables'")
        if self.slice_lam is not None and not (math.isfinite(self.slice_lam) and self.slice_lam > 0):
            raise ParameterError("slice_lam", "slice_lam must be None or a finite number > 0")
        for name in ("inter_z", "refine_z", "size_z"):
            z = getattr(self, name)
            if z is not None and not (isinstance(z, numbers.Real) and math.isfinite(z) and z >= 0):
                raise ParameterError(name, f"{name} must be None or a finite number ≥ 0")
        if self.split_above is not None and (int(self.split_above) != self.split_above
                                             or self.split_above < 10):
            raise ParameterError("split_above", "split_above must be None or an integer ≥ 10")
        if self.splits is not None:
            bad = [f"{k}: {v!r}" for k, v in dict(self.splits).items()
                   if not isinstance(k, str) or "." not in k or isinstance(v, bool)
                   or not isinstance(v, (int, float)) or int(v) != v or v < 0 or v == 1]
            if bad:
                raise ParameterError("splits", "splits maps 'table.attribute' to a divisor ≥ 2, "
                                     "or 0 to keep the attribute whole; got " + ", ".join(bad))
            object.__setattr__(self, "splits", dict(self.splits))

    def for_component(self, component: Any) -> PrivPetal:
        """The configuration of one FK: that edge's own parameters (``Plan.with_params``; an edge
        without any runs on the defaults), with the table encodings (``split_above``, ``splits``,
        ``public_context``), which every FK of a table must share, taken from this (the plan's
        first edge's) configuration. ``component`` None: this configuration.

        An edge never inherits another edge's Algorithm 1 parameters: until stop 47 an edge
        without parameters ran on the first edge's (docs/methods/privpetal.md §6.14)."""
        if component is None:
            return self
        params = dict(getattr(component, "params", {}) or {})
        params.update({k: getattr(self, k) for k in self.shared_params})
        return type(self)(**params)

    def params(self) -> Params:
        """The Algorithm 1 hyper-parameters of this configuration."""
        return Params(**{f.name: getattr(self, f.name) for f in fields(Params)})

    # -- plan ----------------------------------------------------------------------------------
    def default_components(self, schema: Schema, *, mechanism: str = "mst", public: str = "auto"
                           ) -> list[tuple[str, str, str, Fraction]]:
        """One edge component per modelled private FK and one table component per private table
        in no modelled FK. Shares (a public rule, [P] §5 "more FKs means less per FK"): equal per
        private relation (and per stand-alone table), split equally among the relation's FKs; a
        linked FK gets what ``Plan.default`` gives an FK, first
        (:func:`relviz.relational.registry.mixed_mode_shares`). TPC-H with caps on its FKs:
        ``orders → customer`` 1/2, the two ``lineitem`` FKs 1/4 each ([P] §6.1's 50/25/25).

        Mixed mode (relviz's, as PrivLava's; docs/methods/privpetal.md §5.5): an FK that PrivPetal
        cannot model — a public parent with no declared cap ``N``, or a cap above
        :data:`MAX_CAP` (one model per slot) — is linked instead (:meth:`linked_reason`;
        ``Plan.substitutions`` lists it with the reason). An FK from a stand-alone table (one in
        no modelled FK, fitted by ``mechanism``) to a public parent gets parent-attributes where
        the parent (or a public table one FK up) has attributes to copy, so that the table's
        model learns how a child goes with its parent's public attributes
        (:func:`relviz.relational.parent_attributes.public_parent_linker`); every other linked FK gets the
        degree method — a child PrivPetal generates too: its flattened relation may carry copied
        attributes (``Plan.with_method(fk, "parent-attributes")``), but at the measured budgets
        it learned them less well than it loses (docs/methods/privpetal.md §6.25). ``public``:
        ``"auto"`` (default) as said; ``"privpetal"`` links nothing (every FK must then be
        modellable, else ``plan_problems`` says why); a linker name (``"degree"``) links every
        FK to a public parent with it, and the over-cap ones too."""
        linked = {fk.name for fk in schema.private_foreign_keys
                  if self.linked_reason(schema, fk, public=public) is not None}
        rels = relations(schema, linked)
        alone = standalone(schema, linked)
        if not rels and not alone and not linked:
            return []

        def linker(fk_name: str) -> str:
            if public not in ("auto", self.name):
                return public
            fk = schema.foreign_key(fk_name)
            if schema.table(fk.parent).public and fk.child in alone:
                return public_parent_linker(schema, fk_name)
            return "degree"

        each_linked, share = mixed_mode_shares(len(schema.private_foreign_keys), len(linked),
                                               len(rels) + len(alone))
        out: list[tuple[str, str, str, Fraction]] = []
        for r in rels:
            fks = fk_order(schema, r, linked)
            out += [(f.name, "edge", self.name, share / len(fks)) for f in fks]
        out += [(f, "edge", linker(f), each_linked) for f in sorted(linked)]
        out += [(t, "table", mechanism, share) for t in alone]
        return out

    def linked_reason(self, schema: Schema, fk: ForeignKey, *, public: str = "auto") -> str | None:
        """Why :meth:`default_components` links ``fk`` with a linker instead of modelling it
        (``None``: modelled; see :meth:`default_components` for ``public``)."""
        if public == self.name:
            return None
        unit = schema.privacy_unit
        cap = unit.caps.get(fk.name) if unit is not None else None
        if cap is not None and int(cap) > MAX_CAP:
            return (f"its cap N = {int(cap)} is above {MAX_CAP}: {self.name} models one slot per "
                    f"group member (N × child attributes models); lower the cap to model it")
        if not schema.table(fk.parent).public:
            return None
        if public != "auto":
            return f"FKs to public parents are linked with {public}"
        if cap is None:
            return (f"a public parent with no declared cap N: {self.name} models only capped FKs; "
                    "declare N (or use --dp-caps) to model it")
        return None

    @classmethod
    def may_link(cls, schema: Schema, fk: ForeignKey) -> bool:
        """Whether a plan may give ``fk`` a linker in place of PrivPetal: an FK to a public
        parent, or one whose cap is above :data:`MAX_CAP` (its parent then gets its own model
        when no modelled FK generates it)."""
        unit = schema.privacy_unit
        cap = unit.caps.get(fk.name) if unit is not None else None
        return schema.table(fk.parent).public or (cap is not None and int(cap) > MAX_CAP)

    def _linked(self, components: tuple[Any, ...]) -> set[str]:
        return {c.name for c in components if c.kind == "edge" and c.method != self.name}

    def plan_problems(self, schema: Schema, components: tuple[Any, ...]) -> list[Problem]:
        out = list(unit_problems(schema))
        linked = self._linked(components)
        for c in components:
            if c.kind == "edge" and c.method == self.name:
                try:
                    self.for_component(c)
                except (TypeError, ValueError) as e:
                    out.append(Problem("bad_parameter", f"privpetal: {e}", column=c.name))
        out += mixed_mode_linker_problems("PrivPetal", components, linked, schema,
                                          generated_key_attributes=True)
        for key in sorted(self.splits or {}):
            table, _, attr = key.partition(".")
            if table not in schema.table_names or attr not in schema.table(table).attribute_names:
                out.append(Problem("bad_parameter", f"privpetal: splits names {key!r}, which is no "
                                   "attribute of the schema ('table.attribute')", column=key))
        names = {(c.name, c.kind) for c in components}
        unit = schema.privacy_unit
        for fk in schema.private_foreign_keys:
            if (fk.name, "edge") not in names:
                out.append(Problem("missing_component", "PrivPetal models every private FK: add "
                                   "this FK to the plan", column=fk.name))
            if fk.name in linked:
                continue
            if fk.self_referential:
                out.append(Problem("unsupported_fk", "PrivPetal needs an acyclic FK graph; a "
                                   "self-referential FK is a cycle", column=fk.name))
            cap = unit.caps.get(fk.name) if unit is not None else None
            if unit is not None and cap is None:
                out.append(Problem("missing_cap", "PrivPetal needs a public group-size cap N on "
                                   "every FK it models (e.g. --dp-caps)", column=fk.name))
            elif cap is not None and int(cap) > MAX_CAP:
                out.append(Problem("cap_too_large", f"PrivPetal models one slot per group member: "
                                   f"N = {cap} needs {cap} × (child attributes) models; caps up to "
                                   f"{MAX_CAP} are supported (lower the cap, or link this FK with "
                                   "the degree method)", column=fk.name))
        alone = set(standalone(schema, linked))
        for c in components:
            if c.kind == "table" and c.name not in alone:
                out.append(Problem("generated_table", "PrivPetal generates this table from its "
                                   "FKs (it gets no model of its own): remove the component", c.name))
        for t in sorted(alone - {c.name for c in components if c.kind == "table"}):
            out.append(Problem("missing_component", "PrivPetal needs a single-table model of this "
                               "private table (it is in no FK it models)", t))
        return out

    def _encoding(self, schema: Schema, table: str, public_context: int = 0) -> Encoding:
        """:func:`encoding` of ``table`` with this configuration's ``split_above`` and ``splits``."""
        return encoding(schema, table, split_above=self.split_above, splits=self.splits,
                        public_context=public_context)

    def _fk_plan(self, schema: Schema, fk: ForeignKey, rho: Fraction, mult: Multipliers):  # noqa: ANN202
        henc = self._encoding(schema, fk.parent, self.public_context)
        ienc = self._encoding(schema, fk.child)
        cap = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        sens = fk_sensitivities(schema, mult, fk)
        return plan_fk(Fraction(rho), h=len(henc.names) + 1, a=len(ienc.names), N=cap,
                       o=self.order, sens=sens, preset=self.preset,
                       nullable=fk.nullable, child_margins=self.child_margins,
                       parent_children=self.parent_children,
                       pair_margins=self.pair_margins), henc, ienc

    def noise_scales(self, schema: Schema, component: Any, rho: Fraction | float, *,
                     multipliers: Multipliers, components: tuple[Any, ...] = ()) -> dict[str, float]:
        """σ of every planned release of one component (public: schema, caps, ρ): for an FK,
        Algorithm 1's ``σ_n``, ``σ_R``, the two PrivMRF-sub ``σ``, ``σ_inter``, ``σ_intra``,
        ``σ_M`` and ``σ_h`` (with ``k`` candidates) of docs §4.3, and for a nullable FK the σ of
        the null-children count, with ``child_margins`` the σ of each child column's
        one-way histogram and with ``parent_children`` that of each parent column's histogram
        of children, with ``pair_margins`` that of the candidate pairs' scores and of each pair
        margin (relviz's additions); for a
        stand-alone table, its mechanism's. The
        PrivMRF-sub, intra-group and refining σ's (and the inter-relational one with
        ``inter_z``) are upper bounds: a step that makes fewer queries than planned spreads its ρ
        over those it makes, and a refining target passes what it did not release to the
        targets after it (docs §4.4, §5.7)."""
        rho = Fraction(rho)
        if component.kind == "edge" and component.method != self.name:  # a linker (mixed mode)
            return dict(LINKERS.get(component.method, **component.params).noise_scales(
                schema, schema.foreign_key(component.name), rho, multipliers=multipliers))
        if component.kind == "table":
            return dict(get_mechanism(component.method, **component.params).noise_scales(
                schema.table(component.name), rho,
                histogram_sensitivity=multipliers.table_histogram(component.name),
                score_sensitivity=multipliers.table_score(component.name)))
        fk = schema.foreign_key(component.name)
        me = self.for_component(component)
        plan, _, _ = me._fk_plan(schema, fk, rho, multipliers)
        out = {"Alg. 1 line 1 group sizes σ_n": plan.sigma_n,
               "Alg. 1 line 2 R-scores σ_R": plan.sigma_R,
               "Alg. 5 (1) PrivMRF-sub on A_H σ (at most: the run's ρ over the queries it makes)":
                   plan.hsub.sigma_mar,
               "Alg. 5 (2) PrivMRF-sub on {size} ∪ A_I σ (at most: the run's ρ over the queries "
               "it makes)": plan.isub.sigma_mar,
               ("Alg. 5 (3) inter-relational NPMs σ_inter" + (" (at most: the gate's kept picks share "
                "the step's ρ)" if me.inter_z is not None else "")): plan.sigma_inter,
               "Alg. 5 (4) intra-group NPMs σ_intra (at most: the step's ρ over the keys it "
               "picks)": plan.sigma_intra,
               "Alg. 2 line 10 new NPMs σ_M (at most: earlier targets' unreleased ρ is passed on)":
                   plan.sigma_M,
               f"Alg. 2 line 8 h-scores σ_h (k = {me.k}; at most, as σ_M)": plan.sigma_h(me.k),
               "relviz: children with a null FK σ": plan.sigma_null,
               f"relviz: children's one-way marginals σ (each of {plan.a})": plan.sigma_margins,
               f"relviz: children per parent value σ (each of {plan.h - 1})": plan.sigma_children,
               f"relviz: parent–child pair scores σ (each of {(plan.h - 1) * plan.a} candidates, "
               f"one vector; at most {plan.n_pairs} above the threshold are measured)":
                   plan.sigma_pair_scores,
               f"relviz: parent–child pair margins σ (each of at most {plan.n_pairs}; fewer kept "
               "share the same ρ)": plan.sigma_pairs}
        return {k: v for k, v in out.items() if math.isfinite(v)}

    # -- fit: Algorithm 4 ----------------------------------------------------------------------
    def fit(self, curator: Curator, budgets: Mapping[str, Budget], *, schema: Schema,
            components: tuple[Any, ...], multipliers: Multipliers,
            progress: Callable[[str], Reporter], seed: int) -> FittedPrivPetal:
        codes: dict[str, EncodedTable] = {}

        def table(name: str) -> EncodedTable:
            if name not in codes:
                codes[name] = curator.rows(name, "PrivPetal")
            return codes[name]

        encodings: dict[str, Encoding] = {}
        public_rows: dict[str, np.ndarray] = {}
        fits: dict[str, FKFit] = {}
        comps = {c.name: c for c in components if c.kind == "edge"}
        linked = frozenset(self._linked(components))
        for rel in relations(schema, linked):
            for fk in fk_order(schema, rel, linked):
                rep = progress(fk.name)
                rep(0.0, f"Algorithm 1 on {fk.label()}")
                me = self.for_component(comps.get(fk.name))
                params = me.params()
                plan, henc, ienc = me._fk_plan(schema, fk, budgets[fk.name].rho, multipliers)
                encodings.setdefault(fk.child, ienc)
                if schema.table(fk.parent).public:
                    encodings.setdefault(fk.parent, henc)
                else:
                    encodings.setdefault(fk.parent, self._encoding(schema, fk.parent))
                paths = _paths(curator, schema, fk.parent, henc)
                hcodes = encode(henc, {t: table(t) for t in {s[0] for s in henc.source} | {fk.parent}},
                                paths or {(): np.arange(table(fk.parent).n_rows)})
                if schema.table(fk.parent).public:
                    public_rows[fk.parent] = hcodes
                icodes = encode(ienc, {fk.child: table(fk.child)},
                                {(): np.arange(table(fk.child).n_rows)})
                child_rows, parent_rows = curator.foreign_key(fk).edges()
                parent_of = np.full(len(icodes), -1, dtype=np.int64)
                parent_of[child_rows] = parent_rows
                member_key = curator.row_keys(fk.child, seed ^ 0x9E7A1)
                N = plan.N  # noqa: N806
                M = me.member_cap if me.member_cap is not None else min(N, 10)  # noqa: N806
                priv = PrivateFK(hcodes, icodes, parent_of, henc.dom, ienc.dom, N,
                                 max(M, min(N, me.order)), member_key)
                # a public referenced table's number of groups is public: used exactly
                # (algorithms.consistent_sizes)
                public_groups = len(hcodes) if schema.table(fk.parent).public else None
                fits[fk.name] = fit_fk(fk.name, priv, budgets[fk.name], plan, params, henc.names,
                                       ienc.names, rep, seed, public_groups,
                                       hcodes if schema.table(fk.parent).public else None)
                del priv
        singles: dict[str, Any] = {}
        for c in components:
            if c.kind != "table":
                continue
            rep = progress(c.name)
            rep(0.0, f"{c.method} on {c.name} (in no FK)")
            mech = get_mechanism(c.method, **dict(c.params))
            singles[c.name] = mech.fit(curator.table(c.name), budgets[c.name],
                                       histogram_sensitivity=multipliers.table_histogram(c.name),
                                       score_sensitivity=multipliers.table_score(c.name), progress=rep)
            rep(1.0, "fitted")
        sizes = {t: (float(table(t).n_rows) if multipliers.row_unit else float(singles[t].total))
                 for t in singles}
        linkers = fit_mixed_mode_linkers(curator, budgets, schema=schema, components=components,
                                         linked=linked, multipliers=multipliers, progress=progress)
        return FittedPrivPetal(schema, fits, encodings, public_rows, singles, sizes, self,
                               linkers=linkers)


def _paths(curator: Curator, schema: Schema, table: str, enc: Encoding) -> dict[tuple[str, ...], np.ndarray]:
    """Row of the reached public parent for every row of ``table``, per FK path of ``enc``."""
    out: dict[tuple[str, ...], np.ndarray] = {}
    for via in sorted(set(enc.via), key=len):
        if not via or via in out:
            continue
        prev = out.get(via[:-1])
        fk = schema.foreign_key(via[-1])
        child_rows, parent_rows = curator.foreign_key(fk).edges()
        idx = np.zeros(curator.rows(fk.child, "PrivPetal (public parents)").n_rows, dtype=np.int64)
        idx[child_rows] = parent_rows
        out[via] = idx if prev is None else idx[prev]
    if out:
        out[()] = np.arange(len(next(iter(out.values()))))
    return out


# -- the fitted model ------------------------------------------------------------------------------

@dataclass
class FittedPrivPetal:
    """A fitted PrivPetal model of a database (every part differentially private, public rows
    of public referenced tables aside)."""

    schema: Schema
    fits: dict[str, FKFit]
    encodings: dict[str, Encoding]
    public_rows: dict[str, np.ndarray]
    singles: dict[str, Any]
    sizes: dict[str, float]
    method: PrivPetal
    linkers: dict[str, Any] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tot = dict(self.sizes)
        for rel in relations(self.schema, self.linkers.keys()):
            fk = fk_order(self.schema, rel, self.linkers.keys())[0]
            f = self.fits[fk.name]
            tot[rel] = float((np.arange(f.N + 1) * f.n_noisy).sum()) + f.n_null
            if not self.schema.table(fk.parent).public and fk.parent not in tot:
                tot[fk.parent] = float(f.n_noisy.sum())
        self.totals = tot

    def sample(self, public: Mapping[str, EncodedTable], *, scale: float, seed: int,
               progress: Callable[[str], Reporter]) -> tuple[dict[str, EncodedTable],
                                                             dict[str, np.ndarray]]:
        schema = self.schema
        rows: dict[str, np.ndarray] = {}
        links: dict[str, np.ndarray] = {}
        linkers = getattr(self, "linkers", None) or {}  # (a model pickled before mixed mode)
        linked = frozenset(linkers)
        for rel in relations(schema, linked):
            copies = []
            for fk in fk_order(schema, rel, linked):
                rep = progress(fk.name)
                f = self.fits[fk.name]
                rounded = f.sampling == "rounded"
                rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(fk.name.encode())])
                hvars = f.hvars[1:]
                if schema.table(fk.parent).public or fk.parent in rows:
                    pcodes = self.public_rows[fk.parent] if schema.table(fk.parent).public \
                        else rows[fk.parent]
                    rep(0.0, f"sizes of {fk.parent} given its attributes (Alg. 4, existing R_H)")
                    cond = {v: pcodes[:, k] for k, v in enumerate(hvars)}
                    logits = f.hmodel.conditional_logits(SIZE, cond) if cond else \
                        np.log(np.maximum(f.n_noisy, 1e-300))[None, :].repeat(len(pcodes), 0)
                    calib = f.size_calibration and bool(cond)
                    size = _draw_logits(logits, cond, hvars, f.hmodel.dom, rng, rounded,
                                        f.n_noisy if f.size_raking else None,
                                        f.hmodel if calib else None,
                                        f.size_calibration == "variables",
                                        _children_targets(f, hvars, len(pcodes)))
                    new = False
                else:
                    n = max(1, int(round(float(f.n_noisy.sum()) * scale)))
                    rep(0.0, f"{n:,} rows of {fk.parent} from the household model (Alg. 1 line 3)")
                    draw = f.hmodel.sample_all(n, rng, rounded=rounded)
                    pcodes = np.stack([draw[v] for v in hvars], axis=1) if hvars else \
                        np.zeros((n, 0), np.int64)
                    size = draw[SIZE]
                    new = True
                if f.idom:  # sizes whose slots have no model (noisy mass 0 from there on): capped
                    size = np.minimum(size, max((c.lo for c in f.conditionals), default=0))
                rep(0.2, f"flattened relation of {fk.child}: {len(f.conditionals)} columns "
                         "(Alg. 1 line 5)")
                cols = self._flattened(f, pcodes, size, rng, rounded, rep)
                rep(0.9, f"decomposing into {fk.parent} and {fk.child} (§3.9)")
                perm = rng.permutation(len(size)) if new else np.arange(len(size))
                if new:
                    rows[fk.parent] = pcodes[perm]
                child, parent = _decompose(cols, size, perm, f)
                if fk.nullable:  # relviz's addition (docs §5.4): children with a null FK
                    n_null = int(round(f.n_null * scale))
                    child = np.concatenate([child, _null_children(f, n_null, rng, rounded)])
                    parent = np.concatenate([parent, np.full(n_null, -1, dtype=np.int64)])
                    rep(0.95, f"{n_null:,} {fk.child} rows with a null {fk.name}")
                copies.append((fk, child, parent, len(size)))
                rep(1.0, f"{len(child):,} {fk.child} rows in {len(size):,} groups")
            rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(rel.encode()), 7])
            child, fk_links = _merge(copies, self.fits, rng)
            rows[rel] = child
            links.update(fk_links)
        out: dict[str, EncodedTable] = {}
        for name in schema.private_tables:
            if name in self.singles:
                rep = progress(name)
                n = max(1, int(round(self.sizes[name] * scale)))
                rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode()), 11])
                t = schema.table(name)
                codes = self.singles[name].sample(n, rng)
                out[name] = EncodedTable(name, tuple(t.attribute_names),
                                         tuple(int(a.size) for a in t.attributes), codes.astype(np.int64))
                rep(1.0, f"{n:,} rows")
                continue
            out[name] = decode(self.encodings[name], schema, name, rows[name])
        for fk in schema.private_foreign_keys:  # mixed mode, parents first (a private parent's
            if fk.name not in linkers:          # rows exist by now: generated or stand-alone)
                continue
            rep = progress(fk.name)
            rep(0.0, f"linking {fk.label()} (mixed mode)")
            parent = public[fk.parent] if schema.table(fk.parent).public else out[fk.parent]
            links[fk.name] = linkers[fk.name].link(
                out[fk.child], parent,
                np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(fk.name.encode()), 13]), rep)
            rep(1.0, "linked")
        return out, links

    def _flattened(self, f: FKFit, pcodes: np.ndarray, size: np.ndarray, rng: np.random.Generator,
                   rounded: bool, rep: Reporter) -> dict:
        cols: dict = {SIZE: size}
        for k, v in enumerate(f.hvars[1:]):
            cols[v] = pcodes[:, k]
        n_cond = max(len(f.conditionals), 1)
        calibrate = getattr(f, "column_calibration", False)  # (a fit pickled before the option)
        by_size = _margin_by_size(f, size)  # child_margins: {column k: (N + 1, dom k)} or {}
        n_sizes = np.bincount(size, minlength=f.N + 1) if by_size else None
        released = _pair_targets(f)  # pair_margins: {child column k: {("H", j): p(k | j)}} or {}
        for q, cond in enumerate(f.conditionals):
            if q % 16 == 0:
                rep(0.2 + 0.7 * q / n_cond, f"sampling column {q + 1} of {len(f.conditionals)}")
            rows = np.flatnonzero(size >= cond.lo)
            col = np.full(len(size), -1, dtype=np.int64)
            if len(rows):
                ctx = [v for v in cond.vars if v != cond.target]
                pairs = cond.pairs if calibrate else None
                dom = cond.dom
                extra = released.get(cond.target[2], {}) if cond.target[0] == "I" else {}
                if extra:  # the released pair margins rake this column too (docs §5.10)
                    ctx = ctx + [v for v in extra if v not in ctx]
                    dom = {**cond.dom, **{v: f.hdom[v[1]] for v in extra}}
                    pairs = {**(pairs or {}), **extra}
                codes = {v: (cols[v][rows] - cond.lo if v == SIZE else cols[v][rows]) for v in ctx}
                total = None
                if cond.target[0] == "I" and cond.target[2] in by_size:
                    total = slot_margin_targets(by_size[cond.target[2]], n_sizes, cond.lo)
                col[rows] = _draw_logits_fn(cond.logits, codes, ctx, dom,
                                            cond.dom[cond.target], rng, rounded, pairs, total)
            cols[cond.target] = col
        return cols


def _null_children(f: FKFit, n: int, rng: np.random.Generator, rounded: bool) -> np.ndarray:
    """Attributes ``(n, a)`` of ``n`` children with a null FK (relviz's addition, docs §5.4):
    ancestral draws from Algorithm 5 (2)'s model of one individual (PrivMRF-sub on
    ``{size} ∪ A_{I_1}``, sizes ``1…N``) tilted by the size, i.e. the attributes of a random child
    of the groups (a slice of an NPM gives each group mass 1, so ``s·M_{S,s}`` counts the children
    of size-``s`` groups), ``size`` then dropped. Post-processing of the fit: no private read."""
    a = len(f.idom)
    if n <= 0 or not a:
        return np.zeros((max(n, 0), a), dtype=np.int64)
    if f.imodel is None:  # no individual model was fitted (no budget for it): uniform
        return np.stack([rng.integers(0, d, size=n) for d in f.idom], axis=1).astype(np.int64)
    draw = f.imodel.tilted(SIZE, np.arange(1, f.imodel.dom[SIZE] + 1)).sample_all(
        n, rng, rounded=rounded)
    return np.stack([np.asarray(draw[("I", 1, k)]) for k in range(a)], axis=1).astype(np.int64)


def _group_ids(codes: Mapping, vars_: list, dom: Mapping) -> np.ndarray:
    """Id of each row's combination of ``vars_`` values (identical rows share it)."""
    n = len(next(iter(codes.values())))
    if not vars_:
        return np.zeros(n, dtype=np.int64)
    flat = np.zeros(n, dtype=np.int64)
    total = 1
    for v in vars_:
        total *= int(dom[v])
        if total > 2 ** 62:
            stacked = np.stack([np.asarray(codes[u]) for u in vars_], axis=1)
            return np.unique(stacked, axis=0, return_inverse=True)[1].ravel()
        flat = flat * int(dom[v]) + np.asarray(codes[v])
    return np.unique(flat, return_inverse=True)[1].ravel()


def _draw_logits_fn(logits_fn: Callable, codes: Mapping, ctx: list, dom: Mapping, k: int,
                    rng: np.random.Generator, rounded: bool, pairs: Mapping | None = None,
                    total: np.ndarray | None = None) -> np.ndarray:
    """Draw the target for every row: logits computed once per distinct context; ``pairs``
    (``Conditional.pairs``): the model's ``p(target | v)`` the drawn distributions are raked to
    (:func:`calibrated_column_probs`); ``total`` (``(k,)``, ``child_margins``): the expected
    histogram of the target over the rows they are raked to as well."""
    gid, first, ctx_codes, counts = _contexts(codes, ctx, dom,
                                              len(next(iter(codes.values()))) if codes else 0)
    probs = logits_to_probs(logits_fn(ctx_codes))
    if pairs or total is not None:
        probs = calibrated_column_probs(probs, ctx_codes, counts, pairs or {}, total=total)
    return draw_from_table(gid, probs, rng, rounded=rounded)


def _contexts(codes: Mapping, ctx: list, dom: Mapping, n: int
              ) -> tuple[np.ndarray, np.ndarray, dict, np.ndarray]:
    """The ``n`` rows grouped by their ``ctx`` values: ``(gid, first, ctx_codes, counts)``, each
    row's context id, each context's first row, each context's codes and its rows."""
    gid = _group_ids(codes, ctx, dom) if codes else np.zeros(n, dtype=np.int64)
    first = np.zeros(gid.max() + 1 if len(gid) else 0, dtype=np.int64)
    first[gid[::-1]] = np.arange(len(gid))[::-1]
    return gid, first, {v: np.asarray(codes[v])[first] for v in ctx}, \
        np.bincount(gid, minlength=len(first))


def calibrated_column_probs(p: np.ndarray, codes: Mapping, counts: np.ndarray, pairs: Mapping,
                            iters: int = 100, tol: float = 1e-6, *,
                            total: np.ndarray | None = None) -> np.ndarray:
    """An FR column's ``p(target | context)`` raked so that, over the rows, the expected
    ``(v, target)`` histogram of each context variable ``v`` is its model's ``p(target | v)``
    times the rows with each value of ``v`` (PrivPetal's ``column_calibration``,
    docs/methods/privpetal.md §6.17; post-processing of the fitted model and of the rows'
    context, no release).

    Each FR column is drawn from its own model's conditional given the columns drawn before it
    (§3.9). Those columns come from other models, so their mix is not the one the target's model
    was fitted on, and the model's conditional averaged over the drawn mix need not give back
    the model's own relation of the target with any context variable (the same drift
    ``size_calibration="variables"`` undoes for the sizes, §6.16). Iterative proportional
    fitting of the ``(contexts, k)`` table ``counts·p`` to those single-variable margins and to
    the row sums ``counts`` (:func:`relviz.privacy.postprocessing.fit_group_margins`), stopped
    after ``iters`` rounds or once every margin is within ``tol × rows``; the targets need not
    be mutually consistent on another mix, and the fit then ends as close to them as it gets.

    Args:
        p: ``(contexts, k)`` distributions of the target, rows summing to 1.
        codes: ``{variable: (contexts,) int codes}`` of the context variables.
        counts: ``(contexts,)`` rows with each context.
        pairs: ``{v: (dom[v], k)}`` the model's ``p(target | v)``; variables not in ``codes``
            are ignored.
        total: ``(k,)`` the target's expected histogram over all the rows (``child_margins``,
            docs §5.8; rescaled to ``counts.sum()``), one more margin; None: none.

    Returns:
        ``(contexts, k)`` float64, rows summing to 1 (rows with no mass keep ``p``).
    """
    p = np.asarray(p, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    margins = []
    for v, cond in pairs.items():
        if v not in codes:
            continue
        g = np.asarray(codes[v], dtype=np.int64)
        margins.append((g, cond * np.bincount(g, weights=counts, minlength=cond.shape[0])[:, None]))
    if total is not None and np.sum(total) > 0:
        t = np.asarray(total, dtype=np.float64)
        margins.append((np.zeros(len(counts), dtype=np.int64), (t * (counts.sum() / t.sum()))[None, :]))
    if not margins or counts.sum() <= 0:
        return p
    return _conditional_rows(fit_group_margins(p * counts[:, None], counts, margins, iters, tol), p)


PAIR_BLOCK_Z = 2.0
"""``pair_margins`` at sampling (docs §5.10): a released pair margin's parent values are pooled
into blocks of consecutive codes until a block's mean cell holds at least ``PAIR_BLOCK_Z`` times
its noise (:func:`pair_block_size`)."""


def pair_block_size(total: float, rows: int, cols: int, sigma: float,
                    z: float = PAIR_BLOCK_Z) -> int:
    """How many consecutive parent values a released ``(rows, cols)`` pair margin pools into one
    block (relviz's addition, docs/methods/privpetal.md §5.10): the smallest ``g`` with
    ``g·n̄/cols ≥ z·σ·√g``, i.e. ``g = ⌈(z·σ·cols/n̄)²⌉`` clipped to ``1…rows``, where
    ``n̄ = total/rows`` is the released children per parent value. A block of ``g`` rows sums
    ``g`` cells per child value, so its mean cell grows as ``g`` and its noise as ``√g``. Reads
    the released total and the plan's σ only (post-processing).

    Args:
        total: The released margin's sum (children, noisy); ``≤ 0`` pools every row (``rows``).
        rows, cols: The margin's shape (parent values, child values).
        sigma: Its noise scale (children per cell); 0 or not finite: no pooling (1).
        z: The mean cell to noise ratio a block must reach.

    Returns:
        ``g``, an int in ``1…rows``.
    """
    if not (sigma > 0 and math.isfinite(sigma)) or rows <= 1:
        return 1
    if total <= 0:
        return int(rows)
    return int(min(rows, max(1, math.ceil((z * sigma * cols * rows / total) ** 2 - 1e-9))))


def _pair_targets(f: FKFit) -> dict[int, dict]:
    """``pair_margins`` (docs §5.10): ``{child column k: {("H", j): (hdom[j], idom[k])}}``, each
    released pair margin as ``p(k | parent value)``, the targets every slot's column ``k`` is
    raked to (:func:`calibrated_column_probs`): the children of a group are exchangeable, so
    each slot's child with parent value ``x`` follows the released ``p(k | x)``, whatever the
    slot. Where the rows are too noisy for that, consecutive parent values are pooled first
    (:func:`pair_block_size`: a block's cells summed, noise and all), and every value of a block
    gets the block's ``p(k | block)``: the block's noisy cells projected onto the non-negative
    counts with the same sum (``project_counts``), the blocks then raked (``fit_margins``) to
    the column totals of ``k`` (:func:`_pooled_columns`, every margin of ``k`` pooled) projected
    the same way, and normalised (docs §5.10: no clamping at 0, whose positive noise on
    near-empty cells pulls every row toward uniform); a block without mass gets the margin's
    overall distribution of ``k``. {} without released
    pair margins (or a fit pickled before the option; one pickled before ``pair_sigma`` is not
    pooled). Post-processing of released values and the plan's σ."""
    out: dict[int, dict] = {}
    sigmas = getattr(f, "pair_sigma", None) or {}
    margins = {key: np.asarray(m, dtype=np.float64)
               for key, m in (getattr(f, "pair_margins", None) or {}).items()}
    columns = _pooled_columns(margins, sigmas)
    for (j, k), m in margins.items():
        if np.maximum(m.sum(axis=0), 0.0).sum() <= 0:
            continue
        g = pair_block_size(float(m.sum()), m.shape[0], m.shape[1], sigmas.get((j, k), 0.0))
        block = np.arange(m.shape[0]) // g
        pooled = np.zeros((int(block[-1]) + 1, m.shape[1]))
        np.add.at(pooled, block, m)
        rows = np.stack([project_counts(r, float(r.sum())) for r in pooled])
        col = project_counts(columns[k], float(columns[k].sum()))  # k's distribution …
        col *= float(rows.sum()) / max(float(col.sum()), 1e-300)   # … over this margin's total
        if col.sum() <= 0:
            col = np.maximum(m.sum(axis=0), 0.0)
        else:  # raked to the column totals: rows summed, so less noise per child
            rows = fit_margins(rows, rows.sum(axis=1), col)
        rows = rows[block]
        tot = rows.sum(axis=1, keepdims=True)
        out.setdefault(k, {})[("H", j)] = np.where(tot > 0, rows / np.where(tot > 0, tot, 1.0),
                                                   col / col.sum())
    return out


def _pooled_columns(margins: Mapping[tuple[int, int], np.ndarray],
                    sigmas: Mapping[tuple[int, int], float]) -> dict[int, np.ndarray]:
    """``pair_margins`` (docs §5.10): for each child column ``k``, one estimate of its histogram
    over the children, ``(dom k,)`` float64 (noisy, not projected): every released pair margin
    of ``k`` counts the same children over ``k``, so its column sums ``Σ_x m[x, k]`` (``H``
    cells of noise ``σ`` each: variance ``H·σ²``) are pooled with inverse-variance weights; a
    margin without a σ (a fit pickled before ``pair_sigma``) is taken as it is. Post-processing
    of released values and the plan's σ."""
    out: dict[int, np.ndarray] = {}
    for k in sorted({k for _, k in margins}):
        ms = [(m, float(sigmas.get((j, kk), 0.0))) for (j, kk), m in margins.items() if kk == k]
        exact = [m for m, s in ms if not (s > 0 and math.isfinite(s))]
        if exact:
            out[k] = exact[0].sum(axis=0)
            continue
        w = np.array([1.0 / (m.shape[0] * s * s) for m, s in ms])
        out[k] = sum(wi * m.sum(axis=0) for wi, (m, _) in zip(w, ms)) / w.sum()
    return out


def _margin_by_size(f: FKFit, size: np.ndarray) -> dict[int, np.ndarray]:
    """``child_margins`` (docs §5.8): for each child column ``k`` with a released histogram,
    ``(N + 1, dom k)`` the distribution of a child's value in a group of each size, the model's
    ``p(column | size)`` raked so that over the drawn groups' children (``s·n_s`` children of
    size ``s``) the expected histogram is the released one (:func:`raked_size_probs` with the
    sizes as contexts); {} without released margins. The model is Algorithm 5 (2)'s of one individual (``{size} ∪ A_{I_1}``,
    size codes ``0…N−1`` for sizes ``1…N``); a column it does not pair with ``size`` (or no
    model) gets the same distribution for every size. Post-processing: no private read."""
    margins = getattr(f, "margins", None)  # (a fit pickled before the option)
    if not margins:
        return {}
    n_s = np.bincount(np.asarray(size, dtype=np.int64), minlength=f.N + 1)[: f.N + 1].astype(np.float64)
    kids = np.arange(f.N + 1) * n_s
    out = {}
    for k, target in enumerate(margins):
        target = np.asarray(target, dtype=np.float64)
        p = np.full((f.N + 1, len(target)), 1.0 / len(target))
        if f.imodel is not None:
            m = _size_column_marginal(f.imodel, ("I", 1, k), f.N)
            if m is not None and m.shape == p[1:].shape:
                tot = m.sum(axis=1, keepdims=True)
                p[1:] = np.where(tot > 0, m / np.where(tot > 0, tot, 1.0), p[1:])
        if target.sum() > 0 and kids.sum() > 0:
            p = raked_size_probs(p, kids, target)
        out[k] = p
    return out


def _size_column_marginal(model: Model, var: Any, N: int) -> np.ndarray | None:  # noqa: N803
    """``(N, dom var)`` the model's joint of ``size`` and ``var``; where no clique pairs them, its
    ``p(var)`` for every size; None where ``var`` is in no clique (the caller keeps uniform)."""
    for vars_ in ([SIZE, var], [var]):
        try:
            m = np.asarray(model.marginal(vars_), dtype=np.float64)
        except ValueError:
            continue
        return m if len(vars_) == 2 else m[None, :].repeat(N, 0)
    return None


def slot_margin_targets(by_size: np.ndarray, n_sizes: np.ndarray, lo: int) -> np.ndarray:
    """``(dom k,)`` the expected histogram of slot ``lo``'s column over its rows, the groups of
    size ``≥ lo`` (``child_margins``, docs §5.8): ``Σ_{s ≥ lo} n_s·by_size[s]``, ``n_s`` the drawn
    groups of size ``s`` (``n_sizes``, ``(≥ N + 1,)``, counted once for every slot). A group's
    children are exchangeable in the flattened relation (its slots are a random order of its
    members), so each slot of a group of size ``s`` holds a child distributed as ``by_size[s]``
    (:func:`_margin_by_size`), and the slots' histograms add up to the raked histogram over all
    the children."""
    n = np.asarray(n_sizes, dtype=np.float64)[: by_size.shape[0]].copy()
    n[:lo] = 0.0
    return n @ by_size


def raked_size_probs(p: np.ndarray, counts: np.ndarray, n_sizes: np.ndarray, iters: int = 200,
                     tol: float = 1e-9) -> np.ndarray:
    """``p(size | context)`` raked so that the expected size histogram of the rows is the
    released ``ñ_s`` (PrivPetal's ``size_raking``, docs §6.10; post-processing of released values).

    The joint ``counts(context)·p(s | context)`` is fitted to row sums ``counts`` and column sums
    ``ñ_s`` rescaled to the number of rows by iterative proportional fitting
    (:func:`relviz.privacy.postprocessing.fit_margins`, stopped once every context's mass is
    within ``tol`` × rows of its count): each context's distribution is multiplied by one
    factor per size and renormalised. A size whose target is 0 gets probability 0; a context
    whose mass lies only on such sizes keeps ``p`` (the fit is then as close as it allows).

    Args:
        p: ``(contexts, N+1)`` size distributions, rows summing to 1.
        counts: ``(contexts,)`` rows with each context.
        n_sizes: ``(N+1,)`` non-negative released group-size histogram.

    Returns:
        ``(contexts, N+1)`` float64, rows summing to 1.
    """
    p = np.asarray(p, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    target = np.clip(np.asarray(n_sizes, dtype=np.float64), 0.0, None)
    n = float(counts.sum())
    if n <= 0 or target.sum() <= 0:
        return p
    return _conditional_rows(
        fit_margins(p * counts[:, None], counts, target * (n / target.sum()), iters, tol), p)


def tilted_size_probs(p: np.ndarray, codes: Mapping, counts: np.ndarray, children: Mapping,
                      rake: np.ndarray | None = None, rounds: int = 30, steps: int = 4,
                      tol: float = 1e-4) -> np.ndarray:
    """``p(size | context)`` tilted so that, for each household variable ``v`` with a released
    histogram, the expected number of children of the rows with each value of ``v`` is the
    released one (``parent_children``; relviz's addition, docs/methods/privpetal.md §5.9;
    post-processing of released values and of the rows' attributes).

    A mean constraint per value, so the closest distributions (least Kullback–Leibler
    divergence) are exponential tilts: the rows with ``v = x`` get ``p(s | ctx)·e^{λ_{v,x}·s}``
    renormalised (calibration to an auxiliary total: Deville & Särndal, "Calibration estimators
    in survey sampling", JASA 1992, §3, the raking distance). Each ``λ_{v,x}`` takes a few
    Newton steps on ``Σ_rows counts·E[s] = target`` (its derivative is the rows' summed
    ``Var[s]``), one variable after another, for ``rounds`` rounds; with ``rake`` every round
    ends with the size histogram raked to it (:func:`raked_size_probs`), as ``size_raking``
    does. The targets are first scaled to one total of children: the size histogram's
    (``Σ s·rake_s`` per row) with ``rake``, else the mean of their totals (each is a noisy
    count of the same children). A target outside what the sizes allow is clipped into the
    range. Stops once every value's expected children are within ``tol`` children per row of
    its target.

    Args:
        p: ``(contexts, N+1)`` size distributions, rows summing to 1.
        codes: ``{variable: (contexts,) int codes}`` of the household variables.
        counts: ``(contexts,)`` rows with each context.
        children: ``{variable: (dom[v],)}`` non-negative children per value, already scaled to
            these rows; variables not in ``codes`` are ignored.
        rake: ``(N+1,)`` released size histogram, or None.

    Returns:
        ``(contexts, N+1)`` float64, rows summing to 1.
    """
    p = np.asarray(p, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    parts = [(np.asarray(codes[v], dtype=np.int64), np.asarray(t, dtype=np.float64))
             for v, t in children.items() if v in codes]
    if not parts or counts.sum() <= 0:
        return p
    s = np.arange(p.shape[1], dtype=np.float64)
    rk = None if rake is None else np.clip(np.asarray(rake, dtype=np.float64), 0.0, None)
    total = float(rk @ s / rk.sum() * counts.sum()) if rk is not None and rk.sum() > 0 else \
        float(np.mean([t.sum() for _, t in parts]))
    parts = [(g, t * (total / t.sum()) if t.sum() > 0 else t) for g, t in parts]
    with np.errstate(divide="ignore"):
        logp = np.log(p)
    lam = np.zeros(len(p))  # Σ_v λ_{v, x_v(ctx)} of every context
    lams = [np.zeros(len(t)) for _, t in parts]
    support = p > 0
    lo = np.where(support.any(1), np.argmax(support, axis=1), 0).astype(np.float64)
    hi = np.where(support.any(1), p.shape[1] - 1 - np.argmax(support[:, ::-1], axis=1), 0)
    goals = []  # per column: its rows per value and its targets clipped into the sizes' range
    for g, t in parts:
        n_x = np.bincount(g, weights=counts, minlength=len(t))
        goals.append((n_x, np.clip(t, np.bincount(g, weights=counts * lo, minlength=len(t)) + 1e-6 * n_x,
                                   np.bincount(g, weights=counts * hi, minlength=len(t)) - 1e-6 * n_x)))
    for _ in range(rounds):
        worst = 0.0
        for (g, t), lv, (n_x, tgt) in zip(parts, lams, goals):
            for _ in range(steps):
                q = logits_to_probs(logp + lam[:, None] * s)
                m = q @ s
                var = np.maximum(q @ (s * s) - m * m, 0.0)
                f = np.bincount(g, weights=counts * m, minlength=len(t))
                d = np.bincount(g, weights=counts * var, minlength=len(t))
                gap = tgt - f
                worst = max(worst, float(np.max(np.abs(gap) / np.maximum(n_x, 1.0))))
                step = np.clip(np.divide(gap, d, out=np.zeros_like(gap), where=d > 1e-12), -1.0, 1.0)
                lv += step
                lam += step[g]
        if rake is not None:
            q = raked_size_probs(logits_to_probs(logp + lam[:, None] * s), counts, rake)
            with np.errstate(divide="ignore"):
                logp = np.log(q) - lam[:, None] * s
        if worst < tol:
            break
    return logits_to_probs(logp + lam[:, None] * s)


def _conditional_rows(joint: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Each row of the ``(contexts, N+1)`` table ``joint`` divided by its sum; a row with no
    mass is ``fallback``'s."""
    mass = joint.sum(axis=1, keepdims=True)
    ok = mass[:, 0] > 0
    out = np.array(fallback, dtype=np.float64)
    out[ok] = joint[ok] / mass[ok]
    return out


def calibrated_size_probs(p: np.ndarray, codes: Mapping, counts: np.ndarray, model: Model,
                          iters: int = 100, tol: float = 1e-6, variables: bool = False
                          ) -> np.ndarray:
    """``p(size | context)`` raked so that, over the rows, the expected ``(size, A_C)``
    histogram of every clique ``C`` of ``model``'s fit tree that holds ``size`` and a household
    variable is ``model``'s ``p(size | A_C)`` times the rows with each value of ``A_C``
    (PrivPetal's ``size_calibration``, docs/methods/privpetal.md §6.12; post-processing of the
    fitted model and of the referenced rows' attributes); with ``variables``, then also so that
    the ``(size, v)`` histogram of each household variable ``v`` alone is ``model``'s
    ``p(size | v)`` times the rows with each ``v`` (docs §6.16).

    Algorithm 4 draws an existing row's size from ``p(size | R_H) ∝ Π_C exp θ_C(size, R_C)``
    over every clique holding ``size``; a noisy tilt shared by several cliques for a value
    (e.g. a rare public one) multiplies on the rows' full attribute vectors, so the drawn sizes
    need not follow the model's own ``p(size | A_C)`` for any clique. Iterative proportional
    fitting of the ``(contexts, N+1)`` table ``counts·p`` to those clique margins and to the row
    sums ``counts`` (:func:`relviz.privacy.postprocessing.fit_group_margins`; one factor per
    clique cell and size per round), stopped after ``iters`` rounds or once every clique margin
    is within ``tol × rows``.

    When the rows' attribute mix is not the one the model was fitted on (rows generated by
    another FK's model), a clique's ``p(size | A_C)`` averaged over the rows' mix of ``A_C``
    gives another ``p(size | v)`` for each of its variables than the model's own; ``variables``
    rakes those single-variable margins last, in a second fit started from the clique-calibrated
    table. Their targets need not share one size histogram (each is the model's ``p(size | v)``
    averaged over the rows' own ``v``), so that fit ends where ``iters`` or ``tol`` stops it,
    as close to all of them as iterative proportional fitting gets.

    Args:
        p: ``(contexts, N+1)`` size distributions, rows summing to 1.
        codes: ``{variable: (contexts,) int codes}`` for the household variables.
        counts: ``(contexts,)`` rows with each context.
        model: The household model (``size`` and the variables of ``codes``).
        iters, tol: Each fit's most rounds and tolerance (:func:`fit_group_margins`).
        variables: Also rake each household variable's own ``p(size | v)`` (second fit).

    Returns:
        ``(contexts, N+1)`` float64, rows summing to 1 (rows with no mass keep ``p``).
    """
    p = np.asarray(p, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.sum() <= 0:
        return p
    cliques = [[v for v in c if v != SIZE and v in codes]
               for c in (model.fit_tree.cliques if model.fit_tree is not None else []) if SIZE in c]
    margins = [_size_margin(hv, codes, counts, model, p.shape[1]) for hv in cliques if hv]
    out = p
    if margins:
        out = _conditional_rows(
            fit_group_margins(out * counts[:, None], counts, margins, iters, tol), out)
    if variables:  # the single-variable margins: a column calibration with size as the target
        pairs = target_pairs(model, SIZE, [v for v in codes if v != SIZE])
        out = calibrated_column_probs(out, codes, counts, pairs, iters, tol)
    return out


def _size_margin(hv: list, codes: Mapping, counts: np.ndarray, model: Model, n_sizes: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(group, target)`` for :func:`fit_group_margins`: the rows' group by their ``hv``
    values and ``model``'s ``p(size | A_hv)`` times the rows in each group."""
    dims = [int(model.dom[v]) for v in hv]
    gid = mixed_radix_codes(np.stack([np.asarray(codes[v]) for v in hv], axis=1),
                            range(len(hv)), dims)
    m = np.asarray(model.marginal([SIZE] + hv), dtype=np.float64).reshape(n_sizes, -1).T
    tot = m.sum(axis=1, keepdims=True)
    cond = np.divide(m, tot, out=np.zeros_like(m), where=tot > 0)
    return gid, cond * np.bincount(gid, weights=counts, minlength=m.shape[0])[:, None]


def _draw_logits(logits: np.ndarray, codes: Mapping, ctx: list, dom: Mapping, rng: np.random.Generator,
                 rounded: bool, rake: np.ndarray | None = None, calibrate: Model | None = None,
                 variables: bool = False, children: Mapping | None = None) -> np.ndarray:
    """One draw per row from ``softmax(logits)``, the rows grouped by their ``ctx`` values
    (identical contexts share one distribution); ``rake``: the released size histogram to rake
    the distributions to (:func:`raked_size_probs`); ``calibrate``: the household model whose
    clique margins they are raked to first (:func:`calibrated_size_probs`); ``children``:
    ``{variable: (dom,)}`` children per value the sizes are tilted to, with ``rake`` in the same
    loop (:func:`tilted_size_probs`, ``parent_children``)."""
    gid, first, ctx_codes, counts = _contexts(codes, ctx, dom, len(logits))
    probs = logits_to_probs(logits[first])
    if calibrate is not None:
        probs = calibrated_size_probs(probs, ctx_codes, counts, calibrate, variables=variables)
    if children:
        probs = tilted_size_probs(probs, ctx_codes, counts, children, rake)
    elif rake is not None:
        probs = raked_size_probs(probs, counts, rake)
    return draw_from_table(gid, probs, rng, rounded=rounded)


def _children_targets(f: FKFit, hvars: list, rows: int) -> dict:
    """``parent_children`` (docs §5.9): ``{household variable: (dom,)}`` the released children
    per value, clamped at 0 and scaled from the noisy number of parents ``Σ ñ_s`` to ``rows``
    (the referenced rows being drawn sizes for); {} without the release."""
    released = getattr(f, "children", None)  # (a fit pickled before the option)
    parents = float(np.sum(f.n_noisy))
    if not released or parents <= 0:
        return {}
    return {v: np.maximum(np.asarray(t, dtype=np.float64), 0.0) * (rows / parents)
            for v, t in zip(hvars, released)}


def _decompose(cols: Mapping, size: np.ndarray, perm: np.ndarray, f: FKFit
               ) -> tuple[np.ndarray, np.ndarray]:
    """DECOMPOSE (docs §3.9): row ``perm[r]`` of the flattened relation becomes referenced row
    ``r``; its first ``size`` slots become children with FK ``r``."""
    a = len(f.idom)
    s = size[perm]
    parent = np.repeat(np.arange(len(perm)), s)
    start = np.cumsum(s) - s  # (also for no group at all)
    slot = np.arange(len(parent)) - np.repeat(start, s) + 1
    src = perm[parent]
    child = np.zeros((len(parent), a), dtype=np.int64)
    for i in range(1, f.N + 1):
        sel = np.flatnonzero(slot == i)
        if not len(sel) or not a:
            continue
        rows = src[sel]
        child[sel] = np.stack([cols[("I", i, k)][rows] for k in range(a)], axis=1)
    return child, parent.astype(np.int64)


def _merge(copies: list, fits: Mapping[str, FKFit], rng: np.random.Generator
           ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """MERGE (docs §3.10) of the copies of one relation, the first kept whole. A copy of a
    nullable FK holds its null rows (link ``-1``) like any other: a row of the first copy keeps
    its own null, and takes a null in another FK when its partner is one of that FK's null rows
    (relviz's nullable-FK addition, docs §5.4); unmatched rows draw a parent with room, and a
    row no parent of a non-nullable FK has room for (more rows than ``N`` × parents) is dropped,
    so no synthetic group exceeds its cap."""
    fk1, base, link1, _ = copies[0]
    order = rng.permutation(len(base))
    base, link1 = base[order], link1[order]
    out = {fk1.name: link1}
    keep = np.ones(len(base), dtype=bool)
    unmatched = -2
    for fk, other, link, n_par in copies[1:]:
        perm = rng.permutation(len(other))
        other, link = other[perm], link[perm]
        sizes_syn = np.bincount(link[link >= 0], minlength=n_par).astype(np.float64)
        if len(other) > len(base):
            other, link = other[: len(base)], link[: len(base)]
        ix, iy = match(base, other, rng)
        fk2 = np.full(len(base), unmatched, dtype=np.int64)
        fk2[ix] = link[iy]
        cap = fits[fk.name].N
        todo = np.flatnonzero(fk2 == unmatched)
        if len(todo):
            count = np.bincount(fk2[fk2 >= 0], minlength=n_par)
            room = np.maximum(cap - count, 0)
            slots = np.repeat(np.arange(n_par), room)
            w = np.repeat(sizes_syn, room)
            w = np.where(w > 0, w, 1e-9)
            keys = np.log(w) + rng.gumbel(size=len(slots))
            take = np.argsort(-keys, kind="stable")[: len(todo)]
            fk2[todo[: len(take)]] = slots[take]
            if len(take) < len(todo):  # more rows than capacity (ñ + the first FK's nulls > N·parents)
                rest = todo[len(take):]
                if fk.nullable:
                    fk2[rest] = -1
                else:  # no parent has room under N: the row is dropped (never a cap overrun)
                    fk2[rest] = -1
                    keep[rest] = False
        out[fk.name] = fk2
    if not keep.all():
        base = base[keep]
        out = {k: v[keep] for k, v in out.items()}
    return base, out


def match(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """MATCH (docs §3.10): pair rows of ``x`` and ``y`` one to one, longest agreeing prefix of the
    columns first — every possible exact match on all columns, then on the first ``d − 1``, …,
    then on the first column alone (so every possible exact match on the first column is made,
    and among those on the first two, …); the rows left (they disagree on the first column) are
    matched the same way on the columns after the first, and so on; the last leftovers are paired
    at random. Vectorised per level: ``O(d²)`` sorts. Returns ``(rows of x, rows of y)``."""
    d = x.shape[1]
    fx, fy = np.arange(len(x)), np.arange(len(y))
    out_x, out_y = [], []
    for start in range(d + 1):
        levels = range(d - start, 0, -1) if start < d else [0]
        for level in levels:
            if len(fx) == 0 or len(fy) == 0:
                break
            if level:
                key = _prefix_keys(np.concatenate([x[fx, start:start + level],
                                                   y[fy, start:start + level]]))
            else:
                key = np.zeros(len(fx) + len(fy), dtype=np.int64)
            kx, ky = key[: len(fx)], key[len(fx):]
            rx, ry = _rank_in_block(kx, rng), _rank_in_block(ky, rng)
            width = int(max(rx.max(initial=0), ry.max(initial=0))) + 1
            _, ia, ib = np.intersect1d(kx * width + rx, ky * width + ry, assume_unique=True,
                                       return_indices=True)
            out_x.append(fx[ia])
            out_y.append(fy[ib])
            keep_x = np.ones(len(fx), dtype=bool)
            keep_x[ia] = False
            keep_y = np.ones(len(fy), dtype=bool)
            keep_y[ib] = False
            fx, fy = fx[keep_x], fy[keep_y]
    if not out_x:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_x), np.concatenate(out_y)


def _prefix_keys(rows: np.ndarray) -> np.ndarray:
    """Compact ids ``0…`` of the distinct rows (mixed radix over the columns' ranges, then a 1-d
    ``unique``; a lexicographic ``unique`` when the radix would overflow)."""
    lo, hi = rows.min(axis=0), rows.max(axis=0)
    span = (hi - lo + 1).astype(np.float64)
    if float(np.prod(span)) < 2.0 ** 62:
        flat = np.zeros(len(rows), dtype=np.int64)
        for j in range(rows.shape[1]):
            flat = flat * int(span[j]) + (rows[:, j] - lo[j])
        return np.unique(flat, return_inverse=True)[1].ravel().astype(np.int64)
    return np.unique(rows, axis=0, return_inverse=True)[1].ravel().astype(np.int64)


def _rank_in_block(block: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random rank of each element among the elements of its block."""
    perm = rng.permutation(len(block))
    order = perm[np.argsort(block[perm], kind="stable")]
    b = block[order]
    start = np.r_[0, np.flatnonzero(np.diff(b)) + 1] if len(b) else np.zeros(0, np.int64)
    counts = np.diff(np.r_[start, len(b)])
    ranks = np.arange(len(b)) - np.repeat(start, counts)
    out = np.empty(len(block), dtype=np.int64)
    out[order] = ranks
    return out
