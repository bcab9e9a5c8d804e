"""Plain-Python state behind the budget panel; works without Jupyter (no widget imports).

:class:`BudgetDraft` edits a :class:`~relviz.plan.Plan`: total (ε, δ), one share and method per
private table and private FK, locks, rebalance, presets. Shares stay exact fractions whose sum is
exactly 1. :meth:`BudgetDraft.rows` gives, per component, what its share buys, as the plan
computes it (:meth:`~relviz.plan.Plan.noise_preview`: the noise σ of each method's
``noise_scales`` and the expected error of a typical cell relative to the table size,
``σ·√(2/π)/n``). Every edit returns an :class:`~relviz.ui.schema_state.EditResult` (kept in
``history``; the panel shows the last one); a refused edit changes nothing; :meth:`BudgetDraft.undo`
steps back through the applied ones.

:meth:`BudgetDraft.set_approach` picks how the whole database is synthesised (:func:`approaches`):
per-FK linkers (``Plan.default``), a database method that owns the plan (PrivLava, Denorm:
``Plan.default(method=…)``) or a named plan (:data:`relviz.plan.PRESETS`, e.g. the papers'
80/20 baseline). Under a database method the FK rows name the method (no linker can be chosen)
and the table rows offer only the mechanisms the method accepts (:meth:`BudgetDraft.method_choices`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from relviz.database import Database
from relviz.errors import PlanError
from relviz.plan import SMALL_SHARE_ERROR, NoisePreview, Plan
from relviz.privacy.accountant import epsilon_from_rho
from relviz.privacy.budget import to_fraction
from relviz.schema import Schema
from relviz.ui.schema_state import EditHistory, EditResult, error_reason

__all__ = [
    "APPROACH_TEXT",
    "BudgetDraft",
    "EPSILON_WARN",
    "LINKERS",
    "PRESETS",
    "approaches",
]

EPSILON_WARN = 5.0
"""Above this total ε the panel warns (OpenDP's ``loss_of`` warns above 5)."""

PRESETS: dict[str, str] = {
    "equal": "equal split — Plan.default: private tables share 2/3 of ρ equally, private FKs "
             "share 1/3 equally",
    "papers": "papers' defaults — bi-adjacency FKs get ε_rel = 2 against ε = 1 per table "
              "(Alimohammadi et al. §8), i.e. 4× a table's ρ since ρ grows as ε²; every "
              "other component an equal share (PrivLava, Cai, Xiao & Cormode §6, leaves the split "
              "across components open)",
}


LINKERS = "linkers"
"""The approach key of per-FK linkers (``Plan.default`` with a linker on every private FK)."""

APPROACH_TEXT: dict[str, str] = {
    LINKERS: "each private table is synthesised on its own (its mechanism, MST by default) and each "
             "private FK is linked afterwards by its own method (degree baseline by default: a noisy "
             "group-size histogram, children linked at random to follow it)",
    "privlava": "generates every table with a private FK as groups of its parent: each group gets a "
                "latent type learnt by private EM (Alg. 1), children are drawn given the type, and the "
                "parent's model learns which types go with which parent attributes (Cai, Xiao & "
                "Cormode, SIGMOD 2023; docs/methods/privlava.md)",
    "privpetal": "generates every table with a private FK as groups of its parent, one group member "
                 "slot at a time: each slot's attribute is drawn from a model learnt on noisy "
                 "normalised marginals of permutation relations (every ordered pair or triple of "
                 "co-members), which also carry the parent-child correlations; each FK spends its "
                 "share on group sizes, R-scores and those marginals (Cai, Xiao & Yang, SIGMOD 2025; "
                 "docs/methods/privpetal.md)",
    "denorm": "joins each private child with its private parent, synthesises the join as one table "
              "(80 % of ρ) and normalises it back into two tables by noisy group sizes (20 %): the "
              "papers' Denorm baseline (docs/methods/denorm.md)",
    "baseline-80-20": "the papers' per-relation baseline: 80 % of ρ synthesises each private table "
                      "independently, 20 % releases one noisy group-size histogram per private FK, and "
                      "children are linked at random to follow it (degree linker)",
}
"""One line per approach, in plain words (from the methods' docs); others use their label."""


def approaches() -> dict[str, str]:
    """``{key: label}`` of the approaches :meth:`BudgetDraft.set_approach` offers: per-FK
    linkers, every registered database method, then the named plans of
    :data:`relviz.plan.PRESETS` that are neither (``"baseline-80-20"``)."""
    from relviz.plan import PRESETS as PLAN_PRESETS
    from relviz.relational import available_databases

    out = {LINKERS: "per-FK linkers"}
    for name, label in available_databases().items():
        out[name] = label.split(" (")[0]
    for name in PLAN_PRESETS:
        if name not in out and name != "default":
            out[name] = {"baseline-80-20": "80/20 baseline",
                         "privlava-degree": "PrivLava + degree"}.get(name, name)
    return out


class BudgetDraft(EditHistory):
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
            self._db: Database | None = source
            counts = source.row_counts()
        elif isinstance(source, Schema):
            self.schema = source
            self._db = None
            counts = {}
        else:
            raise TypeError(f"expected a Database or a Schema, got {type(source).__name__}")
        self._public_counts = dict(row_counts or {})
        self.row_counts: dict[str, int] = {**counts, **self._public_counts}
        self._plan = plan if plan is not None else Plan.default(self.schema, epsilon, delta)
        self.history: list[EditResult] = []
        self._undo: list[tuple[Plan, EditResult]] = []  # (plan before, the edit that replaced it)

    # -- state ---------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self._plan

    _subject = "plan"

    def _done(self, op: str, message: str, plan: Plan) -> EditResult:
        before = self._plan
        self._plan = plan
        result = self._record(True, op, message)
        self._undo.append((before, result))
        return result

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    def undo(self) -> EditResult:
        """Restore the plan as it was before the last applied edit (refused edits changed nothing
        and are skipped)."""
        if not self._undo:
            return self._refuse("undo", "nothing to undo")
        before, edit = self._undo.pop()
        self._plan = before
        return self._record(True, "undo", f"undone: {edit.message}")

    # -- approach ------------------------------------------------------------------------------
    def approach(self) -> str:
        """The approach of the current plan: a named plan while the plan has exactly its
        components, methods and shares (e.g. ``"baseline-80-20"``), else the database method that
        owns it, else ``"linkers"``."""
        plan = self._plan
        owner = plan.database_method
        if owner is not None:  # its own default plan first (a preset may coincide with it)
            try:
                if _same_split(Plan.default(self.schema, plan.epsilon, plan.delta, method=owner), plan):
                    return owner
            except (PlanError, KeyError, ValueError, TypeError):
                pass
        if plan.edges:
            for name in approaches():
                if name == LINKERS or _is_database(name):
                    continue
                try:
                    ref = Plan.preset(self.schema, name, plan.epsilon, plan.delta)
                except (PlanError, KeyError, ValueError, TypeError):
                    continue
                if _same_split(ref, plan):
                    return name
        return owner or LINKERS

    def approach_text(self, name: str | None = None) -> str:
        """One line in plain words about an approach (default: the current one)."""
        name = self.approach() if name is None else name
        label = approaches().get(name, name)
        from relviz.plan import PRESETS as PLAN_PRESETS

        text = APPROACH_TEXT.get(name) or PLAN_PRESETS.get(name) or _method_label(name)
        return f"{label}: {text}"

    def set_approach(self, name: str) -> EditResult:
        """Rebuild the plan's components for an approach of :func:`approaches` (ε, δ, conversion
        and noise sampler are kept; shares and locks start afresh).

        Per-FK linkers use the linker the plan has now (degree if none); a database method is
        refused, with its reasons, when it reports problems for the schema (PrivLava: FKs
        without a cap τ, an unsupported privacy unit, …).
        """
        known = approaches()
        if name not in known:
            return self._refuse("set_approach", f"unknown approach {name!r}; choose from "
                                + ", ".join(known))
        old = self._plan
        mechanism = self._table_mechanism()
        try:
            if name == LINKERS:
                linker = self._current_linker()
                plan = Plan.default(self.schema, old.epsilon, old.delta, mechanism=mechanism,
                                    method=linker, conversion=old.conversion)
                what = f"per-FK linkers ({linker})"
            elif _is_database(name):
                plan = Plan.default(self.schema, old.epsilon, old.delta, mechanism=mechanism,
                                    method=name, conversion=old.conversion)
                what = known[name]
            else:
                plan = Plan.preset(self.schema, name, old.epsilon, old.delta, mechanism=mechanism,
                                   conversion=old.conversion)
                what = known[name]
        except (PlanError, KeyError, ValueError, TypeError) as e:
            return self._refuse("set_approach", error_reason(e))
        if not plan.components:
            return self._refuse("set_approach", f"{what} has nothing to synthesise: the schema has no "
                                "private table or FK")
        if plan.database_method is not None:
            problems = plan.problems(self.schema)
            if problems:
                return self._refuse("set_approach", _approach_problems(
                    approaches().get(plan.database_method, plan.database_method), problems))
        plan = replace(plan, noise=old.noise)
        note = ""
        if _is_database(name):  # mixed mode: FKs the method links instead (PrivLava, PrivPetal)
            subs = plan.substitutions(self.schema, name)
            if subs and plan.database_method is None:
                note = f"; {what} models no FK of this schema, every FK is linked: " + "; ".join(subs)
            elif subs:
                note = "; linked instead: " + "; ".join(subs)
        return self._done("set_approach", f"approach: {what} — {len(plan.components)} components, "
                          f"shares reset{note}", plan)

    def method_choices(self, name: str) -> dict[str, str]:
        """``{method: label}`` a component's drop-down may offer: the mechanisms of the registry;
        on an FK the linkers that can link it (fk-attribute only to a public parent, every linker
        that needs a cap only where there is one); under a database method, only the method
        itself on an FK and only the mechanisms the method accepts on a table (PrivLava: MST)."""
        from relviz.relational import available as edge_methods
        from relviz.single import available as table_methods

        comp = self._plan.component(name)
        owner = self._plan.database_method
        registry = table_methods() if comp.kind == "table" else edge_methods()
        if owner is None and comp.kind != "edge":
            return dict(registry)
        if owner is None:  # a per-FK linker: those that can link this FK (their own problems)
            from relviz.relational import get_class as edge_class

            fk = self.schema.foreign_key(name)
            return {m: label for m, label in registry.items()
                    if m == comp.method or not edge_class(m)().problems(self.schema, fk)}
        if comp.method == owner:
            return {owner: approaches().get(owner, owner)}
        base = {str(p) for p in self._plan.problems(self.schema) if _about(p, name)}
        out = {}
        for method, label in registry.items():
            if method == comp.method:
                out[method] = label
                continue
            extra = {str(p) for p in self._plan.with_method(name, method).problems(self.schema)
                     if _about(p, name)} - base
            if not extra:
                out[method] = label
        return out

    def method_locked(self, name: str) -> bool:
        """Whether a component's method is fixed (an FK of a plan owned by a database method)."""
        owner = self._plan.database_method
        return owner is not None and self._plan.component(name).method == owner

    def _table_mechanism(self) -> str:
        from relviz.single import available as table_methods

        mechs = {c.method for c in self._plan.tables}
        return next(iter(mechs)) if len(mechs) == 1 and mechs <= set(table_methods()) else "mst"

    def _current_linker(self) -> str:
        from relviz.relational import available as edge_methods

        linkers = edge_methods()
        for c in self._plan.edges:
            if c.method in linkers:
                return c.method
        return "degree"

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
            return self._refuse("set_share", error_reason(e))
        return self._done("set_share", f"{name}: share {_fmt_share(value)}", plan)

    def set_lock(self, name: str, locked: bool = True) -> EditResult:
        try:
            self._plan.component(name)
        except KeyError as e:
            return self._refuse("set_lock", error_reason(e))
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
            return self._refuse("set_method", error_reason(e))
        owner = self._plan.database_method
        if owner is not None and method != comp.method:
            label = approaches().get(owner, owner)
            if comp.method == owner:
                return self._refuse("set_method", f"{label} models this FK; choose another approach "
                                    "(the Approach menu) to use a per-FK linker")
            allowed = self.method_choices(name)
            known = table_methods() if comp.kind == "table" else edge_methods()
            if method in known and method not in allowed:
                why = "; ".join(p.message for p in self._plan.with_method(name, method)
                                .problems(self.schema) if _about(p, name))
                return self._refuse("set_method", f"{label} accepts only {', '.join(allowed)} for "
                                    f"{name}" + (f": {why}" if why else ""))
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
            return self._refuse("set_budget", error_reason(e))
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
        ``set_lock``, ``rebalance``, ``set_method``, ``set_budget``, ``preset``, ``set_approach``,
        ``undo``)."""
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
            if op == "set_approach":
                return self.set_approach(str(request["name"]))
            if op == "undo":
                return self.undo()
        except (KeyError, TypeError, ValueError) as e:
            return self._refuse(op or "request", f"malformed request ({error_reason(e)})")
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

    def rows(self) -> list[NoisePreview]:
        """Per component: share, ρ, σ bought, expected error of a typical cell
        (:meth:`~relviz.plan.Plan.noise_preview`; sizes from the public row counts, else from the
        data, labelled as a curator view)."""
        return self._plan.noise_preview(self.schema, self._db, row_counts=self._public_counts)

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
        advice = self.advice()
        if advice:
            out.append(advice)
        for p in plan.problems(self.schema):
            out.append(str(p))
        return out

    def advice(self, rows: list[NoisePreview] | None = None) -> str:
        """One piece of advice for every component whose share is too small to be useful (a
        typical cell or bin off by more than :data:`~relviz.plan.SMALL_SHARE_ERROR` of its size),
        instead of one warning per row: how many, which, and the ε that makes them all useful
        (σ ∝ 1/√ρ, so a component needs (error / limit)² times its ρ; checked on the plan at that
        ε). Empty when every share is useful."""
        rows = self.rows() if rows is None else rows
        bad = [r for r in rows if r.warning and r.relative_error]
        if not bad:
            return ""
        plan = self._plan
        lo, hi = min(r.relative_error for r in bad), max(r.relative_error for r in bad)  # type: ignore[type-var]
        names = ", ".join(r.name for r in bad[:4]) + (f" and {len(bad) - 4} more" if len(bad) > 4 else "")
        spread = f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}–{hi:.0%}"
        text = (f"share too small to be useful for {len(bad)} of {len(plan.components)} components at "
                f"ε = {plan.epsilon:g} ({names}): a typical cell or bin is off by {spread} of its size "
                f"(more than {SMALL_SHARE_ERROR:.0%})")
        eps = self._useful_epsilon(bad)
        if eps is not None:
            text += (f". Raise ε to about {eps:.2g} to make every share useful"
                     + (", or give these components a larger share of ρ" if len(bad) < len(plan.components)
                        else ""))
        else:
            text += ". Raise ε, or give these components a larger share of ρ"
        return text

    def _useful_epsilon(self, bad: list[NoisePreview]) -> float | None:
        plan = self._plan
        try:
            conv = plan.resolved_conversion()
            rho = float(plan.rho_total)
            eps = plan.epsilon
            for _ in range(6):
                factor = max((r.relative_error / SMALL_SHARE_ERROR) ** 2 for r in bad)  # type: ignore[operator]
                rho *= factor * 1.01
                eps = _round_up(epsilon_from_rho(rho, plan.delta, conv))
                trial = plan.with_budget(epsilon=eps).noise_preview(self.schema, self._db,
                                                                    row_counts=self._public_counts)
                bad = [r for r in trial if r.warning and r.relative_error]
                if not bad:
                    return eps
                rho = float(plan.with_budget(epsilon=eps).rho_total)
        except (ValueError, ArithmeticError, TypeError, PlanError):
            return None
        return None

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


def _is_database(name: str) -> bool:
    from relviz.relational import is_database_method

    return is_database_method(name)


def _method_label(name: str) -> str:
    from relviz.relational import available_databases

    return available_databases().get(name, name)


def _same_split(a: Plan, b: Plan) -> bool:
    """Same components, methods and shares (parameters and locks aside)."""
    key = lambda p: sorted((c.name, c.kind, c.method, c.share) for c in p.components)  # noqa: E731
    return key(a) == key(b)


def _about(p: Any, name: str) -> bool:
    return name in (p.table, p.column)


def _approach_problems(label: str, problems: list[Any]) -> str:
    """Why a database method cannot take this schema, in words (the method's own messages;
    missing caps grouped, with where to set them)."""
    caps = [p.column for p in problems if p.kind == "missing_cap"]
    parts = []
    if caps:
        parts.append(f"{label} needs a public group-size cap τ on every private FK, and "
                     f"{', '.join(caps)} {'has' if len(caps) == 1 else 'have'} none — set one in the "
                     "Schema panel (select the FK; under “Degree cap τ”, “DP cap” releases a DP "
                     "cap and charges it to the run's ledger, or type a public τ)")
    seen = set()
    for p in problems:
        if p.kind == "missing_cap":
            continue
        where = p.column or p.table
        text = f"{p.message}" + (f" ({where})" if where and p.kind not in ("no_unit", "unsupported_unit") else "")
        if text not in seen:
            seen.add(text)
            parts.append(text)
    if not caps and any("cap τ" in p.message for p in problems):
        parts.append("set a cap τ in the Schema panel (select the FK; under “Degree cap τ”, “DP "
                     "cap” releases a DP cap and charges it to the run's ledger)")
    return "; ".join(parts)


def _fmt_share(x: Fraction) -> str:
    exact = f" (= {x})" if 1 < x.denominator <= 10_000 else ""
    return f"{float(x):.4g}{exact}"


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _round_up(x: float) -> float:
    """``x`` rounded up to two significant digits (0.471 → 0.48)."""
    m = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / m - 1e-9) * m:.2g}")


def _nice_delta(n: int) -> float:
    """A round δ at most 1/(100·n)."""
    return 10.0 ** math.floor(math.log10(1 / (100 * n)))
