"""``RelationalSynthesizer``: a DP synthetic copy of a relational database.

``fit(db, plan)`` validates the database against its schema and the plan (every problem at
once), enforces the privacy unit's caps, opens one accountant with the plan's component budgets,
and then, in topological order (parents first), fits each private table's single-table mechanism
and each private FK's relational method; every private read goes through
:class:`~relviz.privacy.measure.Curator`. ``sample(scale)`` draws every private table from its
model, links every private FK, copies public tables verbatim, and returns a validated
:class:`~relviz.database.Database` with the same schema (referential integrity holds).

scikit-learn conventions: ``__init__`` stores, ``fit`` returns ``self``, fitted state ends in
``_``; progress goes to a callback; :meth:`cancel` stops a run at the next step, leaving the
synthesizer usable and its ledger true.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.encoding import EncodedTable, decode_table, encode_table
from relviz.errors import DataError, RelvizError
from relviz.plan import Plan
from relviz.privacy.accountant import Accountant
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.privacy.sensitivity import CapReport, enforce_caps, multipliers
from relviz.progress import CancelToken, ProgressEvent, Reporter
from relviz.relational import get as get_linker
from relviz.single import get as get_mechanism

__all__ = ["RelationalSynthesizer"]


def _component_rng(seed: int | None, stage: str, name: str) -> np.random.Generator:
    """An independent generator per (stage, component), stable across plan orderings."""
    digest = hashlib.sha256(f"{stage}:{name}".encode()).digest()
    key = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, *key])


class RelationalSynthesizer:
    """Fit a DP model of a relational database and sample synthetic copies.

    Args:
        plan: The :class:`~relviz.plan.Plan` (default: ``Plan.default(schema)`` at fit time).
        random_state: Seed for every random draw (noise, selection, sampling). A seeded run is
            reproducible for study and teaching; do not release seeded noise.
        progress: Callback receiving :class:`~relviz.progress.ProgressEvent`.

    Attributes (after ``fit``):
        plan_: The plan used.
        accountant_: The run's accountant (``ledger_`` is its ledger).
        models_: ``{table: TableModel}``.
        links_: ``{fk name: FittedLink}``.
        cap_report_: What the cap enforcement removed (curator view).
        fit_seconds_: ``{component: seconds}``.
    """

    def __init__(self, plan: Plan | None = None, *, random_state: int | None = None,
                 progress: Callable[[ProgressEvent], None] | None = None) -> None:
        self.plan = plan
        self.random_state = random_state
        self.progress = progress
        self._token = CancelToken()

    # -- control ----------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop a running ``fit``/``sample`` at its next step (raises ``CancelledError`` there)."""
        self._token.cancel()

    @property
    def ledger_(self):  # noqa: ANN201 - tuple[LedgerEntry, ...]
        return self.accountant_.ledger

    def _reporter(self, stage: str, component: str, start: float) -> Reporter:
        acc = getattr(self, "accountant_", None)
        return Reporter(self.progress, self._token, stage, component,
                        (lambda: float(acc.spent())) if acc is not None else (lambda: 0.0), start)

    # -- fit --------------------------------------------------------------------------------
    def fit(self, db: Database, plan: Plan | None = None) -> RelationalSynthesizer:
        """Spend the plan's budget on ``db`` and keep the fitted models.

        Raises:
            DataError / SchemaError / PlanError: listing every problem, before anything is read.
            BudgetError: never in a valid plan (a bug guard: nothing is released beyond it).
            CancelledError: if :meth:`cancel` was called; the ledger records what was spent.
        """
        self._token.reset()
        start = time.perf_counter()
        plan = plan or self.plan or Plan.default(db.schema)
        problems = db.problems(plan)
        if problems:
            raise DataError(problems)
        schema = db.schema
        self.plan_ = plan
        self.schema_ = schema
        self.fitted_ = False
        rep = self._reporter("validate", "", start)
        rep(0.0, "enforcing degree caps")
        truncated, caps = enforce_caps(db)
        self.cap_report_: CapReport = caps
        mult = multipliers(schema)
        self.multipliers_ = mult
        notes = [f"privacy unit: {schema.privacy_unit.describe()}"]  # type: ignore[union-attr]
        if schema.privacy_unit.rationale:  # type: ignore[union-attr]
            notes.append(f"why: {schema.privacy_unit.rationale}")  # type: ignore[union-attr]
        public = [t.name for t in schema.tables if t.public]
        if public:
            notes.append("public tables released verbatim (no budget): " + ", ".join(public))
        notes.append("public facts: schema, attribute domains, degree caps, public tables")
        if not caps.stable:
            notes.append("caps dropped surplus children (not a stable transformation): the guarantee "
                         "holds for the truncated database")
        if self.random_state is not None:
            notes.append(f"seeded run (random_state={self.random_state}): for study, not for release")
        self.accountant_ = Accountant(plan.rho_total, delta=plan.delta,
                                      epsilon=plan.epsilon_effective,
                                      conversion=plan.resolved_conversion(),
                                      budgets=plan.budgets(), unit=schema.privacy_unit.describe(),  # type: ignore[union-attr]
                                      notes=notes)
        curator = Curator(truncated)
        self.curator_log_ = curator.log
        self.models_: dict[str, Any] = {}
        self.links_: dict[str, Any] = {}
        self.fit_seconds_: dict[str, float] = {}
        budgets = plan.budgets()
        for name in schema.topological_order():
            if schema.table(name).public:
                continue
            comp = plan.component(name)
            t0 = time.perf_counter()
            rep = self._reporter("fit", name, start)
            rep(0.0, f"{comp.method} on {name}")
            mech = get_mechanism(comp.method, **comp.params)
            self.models_[name] = mech.fit(
                curator.table(name),
                Budget(self.accountant_, name, budgets[name], _component_rng(self.random_state, "fit", name)),
                histogram_sensitivity=mult.table_histogram(name),
                score_sensitivity=mult.table_score(name), progress=rep)
            self.fit_seconds_[name] = time.perf_counter() - t0
        for fk in schema.private_foreign_keys:
            comp = plan.component(fk.name)
            t0 = time.perf_counter()
            rep = self._reporter("fit", fk.name, start)
            rep(0.0, f"{comp.method} on {fk.label()}")
            linker = get_linker(comp.method, **comp.params)
            self.links_[fk.name] = linker.fit(
                curator.foreign_key(fk),
                Budget(self.accountant_, fk.name, budgets[fk.name],
                       _component_rng(self.random_state, "fit", fk.name)),
                schema=schema, multipliers=mult, progress=rep)
            self.fit_seconds_[fk.name] = time.perf_counter() - t0
        # public tables are released verbatim: keep them for sampling
        self.public_ = {t.name: db[t.name] for t in schema.tables if t.public}
        self.public_codes_ = {n: encode_table(schema.table(n), df) for n, df in self.public_.items()}
        self.fitted_ = True
        self._reporter("fit", "", start)(1.0, "fitted")
        return self

    # -- sample -------------------------------------------------------------------------------
    def sample(self, scale: float = 1.0, *, random_state: int | None = None) -> Database:
        """Sample a synthetic database (reads no private data).

        Args:
            scale: Multiplies every private table's row count (public tables are copied).
            random_state: Seed for this sample (default: derived from the synthesizer's).

        Returns:
            A validated :class:`Database` with the fitted schema.
        """
        if not getattr(self, "fitted_", False):
            raise RelvizError("call fit() before sample()")
        if not scale > 0:
            raise ValueError("scale must be positive")
        self._token.reset()
        start = time.perf_counter()
        seed = self.random_state if random_state is None else random_state
        schema = self.schema_
        frames: dict[str, pd.DataFrame] = dict(self.public_)
        codes: dict[str, EncodedTable] = dict(self.public_codes_)
        self.sample_report_: list[str] = []
        for name in schema.topological_order():
            if schema.table(name).public:
                continue
            rep = self._reporter("sample", name, start)
            rep(0.0, f"sampling {name}")
            table = schema.table(name)
            rng = _component_rng(seed, "sample", name)
            n = max(1, int(round(self.models_[name].total * scale)))
            c = self.models_[name].sample(n, rng)
            enc = EncodedTable(name, table.attribute_names, tuple(a.size for a in table.attributes), c)
            codes[name] = enc
            df = decode_table(table, enc, rng)
            frames[name] = _with_keys(schema, name, df, n)
            rep(1.0, f"{n:,} rows")
        for fk in schema.private_foreign_keys:
            rep = self._reporter("sample", fk.name, start)
            rep(0.0, f"linking {fk.label()}")
            rng = _component_rng(seed, "link", fk.name)
            idx = self.links_[fk.name].link(codes[fk.child], codes[fk.parent], rng, rep)
            parent = frames[fk.parent]
            child = frames[fk.child].copy()
            for cc, pc in zip(fk.columns, fk.parent_columns):
                vals = parent[pc].to_numpy()[np.where(idx >= 0, idx, 0)]
                col = pd.Series(vals, index=child.index)
                if (idx < 0).any():
                    col = col.astype(object).where(idx >= 0, None)
                    col = col.astype(parent[pc].dtype) if parent[pc].dtype.kind not in "iub" \
                        else col.astype("Int64")
                child[cc] = col
            frames[fk.child] = child
            rep(1.0, "linked")
        for name in schema.topological_order():
            t = schema.table(name)
            if t.public or not t.primary_key:
                continue
            fk_cols = {c for fk in schema.fks_from(name) for c in fk.columns}
            if set(t.primary_key) <= fk_cols:
                dup = frames[name].duplicated(list(t.primary_key))
                if dup.any():
                    self.sample_report_.append(
                        f"{name}: dropped {int(dup.sum()):,} rows whose key {t.primary_key} repeated "
                        "an earlier row (independent links drew the same pair twice)")
                    frames[name] = frames[name][~dup.to_numpy()].reset_index(drop=True)
        ordered = {n: frames[n][list(schema.columns(n))] for n in schema.table_names}
        db = Database(schema, ordered, validate=False)
        problems = db.problems()
        if problems:  # a bug, not a user error: synthetic output must always be valid
            raise DataError(problems, headline="internal error: the synthetic database is invalid")
        self._reporter("sample", "", start)(1.0, "sampled")
        return db

    def fit_sample(self, db: Database, plan: Plan | None = None, scale: float = 1.0) -> Database:
        return self.fit(db, plan).sample(scale)


def _with_keys(schema, name: str, df: pd.DataFrame, n: int) -> pd.DataFrame:  # noqa: ANN001
    """Attach surrogate primary keys (1…n) and empty FK columns to a sampled table."""
    t = schema.table(name)
    fk_cols = [c for fk in schema.fks_from(name) for c in fk.columns]
    out = {}
    for c in t.primary_key:
        if c not in fk_cols:
            out[c] = np.arange(1, n + 1, dtype=np.int64)
    for c in fk_cols:
        out.setdefault(c, np.full(n, None, dtype=object))
    keys = pd.DataFrame(out)
    return pd.concat([keys, df.reset_index(drop=True)], axis=1)

