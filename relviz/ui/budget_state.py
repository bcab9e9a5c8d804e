"""Plain-Python state behind the budget panel; works without Jupyter (no widget imports).

:class:`BudgetDraft` edits a :class:`~relviz.plan.Plan`: total (ε, δ), one share and method per
private table and private FK, locks, rebalance, presets. Shares stay exact fractions whose sum is
exactly 1. :meth:`BudgetDraft.rows` gives, per component, what its share buys, as the plan
computes it (:meth:`~relviz.plan.Plan.noise_preview`: the noise σ of each method's
``noise_scales`` and the expected error of a typical cell relative to the table size,
``σ·√(2/π)/n``). Every edit returns an :class:`~relviz.ui.schema_state.EditResult` (kept in
``history``; the panel shows the last one); a refused edit changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from relviz.database import Database
from relviz.errors import PlanError
from relviz.plan import NoisePreview, Plan
from relviz.privacy.budget import to_fraction
from relviz.schema import Schema
from relviz.ui.schema_state import EditHistory, EditResult, error_reason

__all__ = [
    "BudgetDraft",
    "EPSILON_WARN",
    "PRESETS",
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

    # -- state ---------------------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self._plan

    _subject = "plan"

    def _done(self, op: str, message: str, plan: Plan) -> EditResult:
        self._plan = plan
        return self._record(True, op, message)

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
        ``set_lock``, ``rebalance``, ``set_method``, ``set_budget``, ``preset``)."""
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
        for r in self.rows():
            if r.warning:
                out.append(f"{r.name}: {r.warning}")
        for p in plan.problems(self.schema):
            out.append(str(p))
        return out

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


def _fmt_share(x: Fraction) -> str:
    exact = f" (= {x})" if 1 < x.denominator <= 10_000 else ""
    return f"{float(x):.4g}{exact}"


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _nice_delta(n: int) -> float:
    """A round δ at most 1/(100·n)."""
    return 10.0 ** math.floor(math.log10(1 / (100 * n)))
