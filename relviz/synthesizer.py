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
import math
import pickle
import secrets
import time
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from relviz._version import __version__
from relviz.database import ARROW_CHUNK_ROWS, Database
from relviz.encoding import EncodedTable, code_dtype, decode_table, encode_table
from relviz.errors import DataError, NotFittedError, PlanError, Problem, SchemaError
from relviz.keys import format_synthetic_keys
from relviz.plan import Plan
from relviz.privacy.accountant import Accountant, epsilon_from_rho
from relviz.privacy.backends import CountBackend
from relviz.privacy.budget import Budget
from relviz.privacy.caps import cap_releases_rho, charge_cap_releases
from relviz.privacy.measure import CapReport, Curator, enforce_caps
from relviz.privacy.postprocessing import SizeFact, reconcile_sizes
from relviz.privacy.sensitivity import multipliers, truncation_stable
from relviz.progress import CancelToken, ProgressEvent, Reporter, silent
from relviz.relational import get as get_linker
from relviz.relational import get_database, get_relation
from relviz.relational.keyed import with_key_attributes
from relviz.relational.parent_attributes import with_parent_attributes
from relviz.single import get as get_mechanism
from relviz.stream import keyed_by_foreign_keys, repeats_note

if TYPE_CHECKING:
    from relviz.source import EncodedDatabase
    from relviz.stream import StreamedSample

__all__ = ["RelationalSynthesizer", "not_dp_note"]

INFERRED_HEADLINE = (
    "the schema holds facts read from the data, so the release would not be differentially "
    "private. Declare each domain (and FK nullability) in the schema, or pass allow_inferred=True "
    "(CLI: --allow-inferred-schema) to accept a release that is NOT differentially private")
NOT_DP = "NOT DIFFERENTIALLY PRIVATE"


def not_dp_note(inferred: list[Problem]) -> str:
    """The ledger note of a run allowed on inferred facts (``Schema.inferred_problems``)."""
    domains = [f"{p.table}.{p.column}" for p in inferred if p.kind == "inferred_domain"]
    fks = [f"{p.table}.{p.column}" for p in inferred if p.kind == "inferred_nullability"]
    what = "; ".join(part for part in (
        "attribute domains " + ", ".join(domains) if domains else "",
        "FK nullability of " + ", ".join(fks) if fks else "") if part)
    return (f"{NOT_DP}: this release is not differentially private because its domains came from "
            f"the data, not from a public declaration ({what}); explicitly allowed "
            "(allow_inferred=True, CLI --allow-inferred-schema)")


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
        allow_inferred: Accept a schema with facts read from the data (attribute domains or FK
            nullability marked ``"inferred"`` by :func:`~relviz.schema.infer_schema`). Off by
            default: ``fit`` then refuses such a schema, because domains observed in the data are
            not public and the release would **not** be differentially private. When on, the
            ledger's notes say so.
        backend: Where the exact counts are computed: ``"pandas"`` (default), ``"duckdb"``,
            ``"spark"`` or a :class:`~relviz.privacy.backends.CountBackend`. Every backend gives
            the same counts, hence the same output for the same ``random_state``.

    Attributes (after ``fit``):
        plan_: The plan used.
        accountant_: The run's accountant (``ledger_`` is its ledger).
        models_: ``{table: TableModel}``.
        links_: ``{fk name: FittedLink}``.
        sizes_: ``{table: rows}`` (float) of the private tables when sizes are private (entity
            unit): the reconciled sizes ``sample()`` draws (times ``scale``), see
            ``relviz.privacy.postprocessing.reconcile_sizes``; empty under row-level units.
        cap_report_: What the cap enforcement removed (curator view).
        key_attributes_: ``{fk name: attribute}``: the FKs to public parents whose child
            mechanism models the parent row as an attribute (fk-attribute,
            ``relviz.relational.keyed``), and ``{fk name: (attribute, …)}`` for those whose
            child mechanism models the parent's copied public attributes (parent-attributes,
            ``relviz.relational.parent_attributes``); ``model_schema_`` is the schema with
            those attributes.
        fit_seconds_: ``{component: seconds}``.

    A fitted synthesizer pickles (``pickle``, ``joblib``, :meth:`save`); the ``progress``
    callback and the cancel state are not kept (set ``progress`` again after loading), and a
    ``backend`` object is kept by its name (sampling reads no counts).
    """

    def __init__(self, plan: Plan | None = None, *, random_state: int | None = None,
                 progress: Callable[[ProgressEvent], None] | None = None,
                 allow_inferred: bool = False, backend: str | CountBackend = "pandas") -> None:
        self.plan = plan
        self.random_state = random_state
        self.progress = progress
        self.allow_inferred = allow_inferred
        self.backend = backend
        self._token = CancelToken()

    # -- persistence ------------------------------------------------------------------------
    #: What ``save(release=True)`` keeps: the fitted models that ``sample`` reads (certified a
    #: function of the releases and public facts by tests/privacy/test_neighbours.py), the
    #: ledger, the plan, the schema, the public tables and the reconciled noisy sizes.
    RELEASE_STATE = ("plan", "allow_inferred", "backend", "plan_", "schema_", "model_schema_",
                     "fitted_", "multipliers_", "accountant_", "key_attributes_", "public_",
                     "public_codes_", "public_sizes_", "models_", "links_", "relations_",
                     "database_", "sizes_")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_token", None)  # a lock: a loaded synthesizer starts uncancelled
        state["progress"] = None  # a live view's callback (a widget, a lambda) is not saved
        if not isinstance(self.backend, str):  # a backend object may hold a connection: its name
            state["backend"] = getattr(self.backend, "name", "pandas")
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._token = CancelToken()

    def save(self, path: str | Path, *, release: bool = False) -> Path:
        """Write this fitted synthesizer to ``path`` (a pickle tagged with relviz's version)
        for :meth:`load`.

        Args:
            path: The file (overwritten).
            release: ``False`` (default), the curator's file: everything, including the seed of
                every noise draw (``seed_``; whoever holds it can recompute the noise and remove
                it) and the curator views (``cap_report_``, ``curator_log_``, ``fit_seconds_``).
                Keep it with the private data: it is **not** a release. ``True``: only
                :attr:`RELEASE_STATE`, what the privacy analysis covers (docs/privacy.md); the
                loaded synthesizer samples and shows its ledger, and each ``sample()`` without
                a ``random_state`` then draws a fresh seed.

        Returns:
            ``path`` as a :class:`~pathlib.Path`.

        Raises:
            NotFittedError: before :meth:`fit`.
        """
        if not getattr(self, "fitted_", False):
            raise NotFittedError("this RelationalSynthesizer is not fitted yet: call fit() before save()")
        state = self.__getstate__()
        if release:
            self._sizes()  # fixed before the facts they came from are left out
            state = {k: state[k] for k in self.RELEASE_STATE if k in state}
            state.update(random_state=None, seed_=None, progress=None, _fit_codes={},
                         _reported_sizes=[])
        synth = object.__new__(type(self))
        synth.__dict__.update(state)
        path = Path(path)
        with path.open("wb") as f:
            pickle.dump({"relviz": __version__, "release": release, "synthesizer": synth}, f,
                        protocol=pickle.HIGHEST_PROTOCOL)
        return path

    @classmethod
    def load(cls, path: str | Path) -> RelationalSynthesizer:
        """Read a synthesizer written by :meth:`save`. Unpickling runs code from the file: load
        only files you trust.

        Warns:
            UserWarning: the file was written by another relviz version (it may not sample).

        Raises:
            TypeError: the file holds no relviz synthesizer.
        """
        with Path(path).open("rb") as f:
            data = pickle.load(f)  # noqa: S301 - documented: only trusted files
        if not (isinstance(data, dict) and isinstance(data.get("synthesizer"), cls)):
            raise TypeError(f"{path} holds no {cls.__name__} written by save()")
        if data.get("relviz") != __version__:
            warnings.warn(f"{path} was written by relviz {data.get('relviz')}, this is "
                          f"{__version__}: it may not load or sample correctly", UserWarning,
                          stacklevel=2)
        return data["synthesizer"]

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
    def fit(self, db: Database | EncodedDatabase, plan: Plan | None = None) -> RelationalSynthesizer:
        """Spend the plan's budget on ``db`` and keep the fitted models.

        ``db`` is a :class:`~relviz.database.Database`, or an
        :class:`~relviz.source.EncodedDatabase` read out of core (a DuckDB file or Parquet folder;
        the same models and samples for a seed).

        Raises:
            SchemaError: the schema has domains or FK nullability read from the data and
                ``allow_inferred`` is off (every such fact listed; nothing is read).
            DataError: the schema or the data have problems (``Database.problems``); the plan's
                problems, if any, are listed after them, so everything is fixed in one pass.
                Nothing is read.
            PlanError: the schema and the data are fine but the plan is not (``Plan.problems``:
                shares, unknown methods, bad parameters, what a method cannot model), or an
                fk-attribute FK's public parent has more rows than its ``max_parents``. Nothing is
                released.
            BudgetError: never in a valid plan (a bug guard: nothing is released beyond it).
            CancelledError: if :meth:`cancel` was called; the ledger records what was spent.
        """
        self._token.reset()
        start = time.perf_counter()
        plan = plan or self.plan or Plan.default(db.schema)
        inferred = db.schema.inferred_problems()
        if inferred and not self.allow_inferred:
            raise SchemaError(inferred, headline=INFERRED_HEADLINE)
        if hasattr(db, "read"):  # an out-of-core source: read it now, with progress and cancel
            db.read(self._reporter("validate", "", start))
        data_problems, plan_problems = db.problems(), plan.problems(db.schema)
        if data_problems:
            raise DataError(data_problems + plan_problems)
        if plan_problems:
            raise PlanError(plan_problems)
        schema = db.schema
        self.plan_ = plan
        self.schema_ = schema
        self.fitted_ = False
        # one seed per fitted synthesizer: the default sample() is reproducible from it, and
        # relational methods that learn on the synthetic tables see exactly those tables
        self.seed_ = self.random_state if self.random_state is not None else secrets.randbits(63)
        rep = self._reporter("validate", "", start)
        rep(0.0, "enforcing degree caps")
        truncated, caps = enforce_caps(db)
        self.cap_report_: CapReport = caps
        # FKs to public parents that the child's mechanism models as an attribute (fk-attribute)
        truncated, self.key_attributes_, classes = self._with_key_attributes(truncated, plan)
        self.model_schema_ = truncated.schema
        mult = multipliers(schema)
        self.multipliers_ = mult
        # caps released by a DP quantile before the run are charged first (relviz.privacy.caps)
        rho_caps = cap_releases_rho(schema)
        conversion = plan.resolved_conversion()
        rho_total, epsilon, budgets = plan.rho_total, plan.epsilon_effective, plan.budgets()
        if rho_caps:
            conversion = "zcdp" if conversion == "gdp" else conversion  # an exponential release
            rho_total = Fraction(plan.rho_total) + rho_caps
            epsilon = epsilon_from_rho(float(rho_total), plan.delta, conversion)
            budgets = {**budgets, "caps": rho_caps}
        self.accountant_ = Accountant(rho_total, delta=plan.delta, epsilon=epsilon,
                                      conversion=conversion,
                                      budgets=budgets, unit=schema.privacy_unit.describe(),  # type: ignore[union-attr]
                                      notes=self._notes(schema, caps),
                                      noise=plan.resolved_noise(seeded=self.random_state is not None))
        charge_cap_releases(self.accountant_, schema)
        curator = Curator(truncated, backend=self.backend, parent_attributes=classes)
        try:
            return self._fit_components(db, curator, plan, mult, start)
        finally:  # no private array outlives the fit in a count engine
            curator.close()

    def _fit_components(self, db: Database, curator: Curator, plan: Plan, mult, start: float,  # noqa: ANN001
                        ) -> RelationalSynthesizer:
        """:meth:`fit` once the data and the plan are checked: every component's model."""
        schema = db.schema
        self.curator_log_ = curator.log
        self.models_: dict[str, Any] = {}
        self.public_sizes_: dict[str, int] = {}
        self.sizes_: dict[str, float] | None = None  # reconciled when first needed
        self._reported_sizes: list[SizeFact] = []
        self.links_: dict[str, Any] = {}
        self.relations_: dict[str, Any] = {}
        self.fit_seconds_: dict[str, float] = {}
        self.public_ = {t.name: db[t.name] for t in schema.tables if t.public}
        self.public_codes_ = {n: encode_table(schema.table(n), df) for n, df in self.public_.items()}
        self._fit_codes: dict[str, EncodedTable] = {}
        budgets = plan.budgets()

        def budget(name: str) -> Budget:
            return Budget(self.accountant_, name, budgets[name],
                          _component_rng(self.random_state, "fit", name))

        if plan.database_method is not None:  # the method owns every private table and FK
            self._fit_database(plan, curator, budget, mult, start)
            self.sizes_ = {}  # the database method draws its own sizes
            self.fitted_ = True
            self._reporter("fit", "", start)(1.0, "fitted")
            return self
        for name in schema.topological_order():
            if schema.table(name).public:
                continue
            comp = plan.component_of(name, "table")
            t0 = time.perf_counter()
            rep = self._reporter("fit", name, start)
            rep(0.0, f"{comp.method} on {name}")
            mech = get_mechanism(comp.method, **comp.params)
            self.models_[name] = mech.fit(
                curator.table(name), budget(name), histogram_sensitivity=mult.table_histogram(name),
                score_sensitivity=mult.table_score(name), progress=rep)
            if mult.row_unit:  # table sizes are public facts under row-level units
                self.public_sizes_[name] = curator.table(name).total()
            self.fit_seconds_[name] = time.perf_counter() - t0
        # links that need no synthetic table first: what they release about the table sizes is
        # reconciled with the tables' noisy totals when the first synthetic table is drawn
        edges = [(c, get_linker(c.method, **c.params)) for c in plan.edges]
        for comp, linker in edges:
            if not linker.needs_synthetic_tables:
                self._fit_edge(comp, linker, curator, budget, mult, start)
        for comp in plan.relations:
            fk1, fk2 = schema.fks_from(comp.table)
            t0 = time.perf_counter()
            rep = self._reporter("fit", comp.name, start)
            rep(0.0, f"{comp.method} on {fk1.parent} × {fk2.parent} through {comp.table}")
            method = get_relation(comp.method, **comp.params)
            self.relations_[comp.table] = method.fit(
                curator.link(fk1, fk2), budget(comp.name), schema=schema, multipliers=mult,
                progress=rep, synthetic=_FitTables(self) if method.needs_synthetic_tables else None)
            self.fit_seconds_[comp.name] = time.perf_counter() - t0
        for comp, linker in edges:
            if linker.needs_synthetic_tables:
                self._fit_edge(comp, linker, curator, budget, mult, start)
        self._sizes()
        self.fitted_ = True
        self._reporter("fit", "", start)(1.0, "fitted")
        return self

    @staticmethod
    def _with_key_attributes(db: Database, plan: Plan) -> tuple[Database, dict[str, Any], dict[str, Any]]:
        """``db`` with the parent-row attribute of every FK whose linker models it in the child
        (``models_key_attribute``: fk-attribute, ``relviz.relational.keyed``) and the copied
        parent attributes of every FK whose linker models those (``models_parent_attributes``:
        parent-attributes, ``relviz.relational.parent_attributes``); ``{fk name: attribute name
        or names}``; and ``{fk name: codes of the copied attributes on the parent rows}``
        (public). Raises ``PlanError`` (nothing read) for a parent above fk-attribute's
        ``max_parents``, or a parent attribute that does not exist."""
        fks, most, copied = [], {}, {}  # (database methods: only for their stand-alone tables)
        for comp in plan.edges:
            if comp.method == plan.database_method:  # the database method's own FKs
                continue
            linker = get_linker(comp.method, **comp.params)
            fk = db.schema.foreign_key(comp.name)
            if getattr(linker, "models_parent_attributes", False):
                copied[comp.name] = linker.sources(db.schema, fk)
            elif getattr(linker, "models_key_attribute", False):
                fks.append(fk)
                most[comp.name] = int(linker.max_parents)
        names: dict[str, Any] = {}
        if fks:
            db, names = with_key_attributes(db, fks, max_parents=most)
        classes: dict[str, Any] = {}
        if copied:
            db, classes = with_parent_attributes(db, copied)
            names.update({n: tuple(pa.name for pa in s) for n, s in copied.items()})
        return db, names, classes

    def _strip(self, name: str, enc: EncodedTable) -> EncodedTable:
        """``enc`` without the parent-row attributes of :meth:`_with_key_attributes` (appended
        last), i.e. the codes of the schema's own attributes of table ``name``."""
        table = self.schema_.table(name)
        k = len(table.attributes)
        if len(enc.attributes) == k:
            return enc
        return EncodedTable(name, table.attribute_names, enc.sizes[:k], enc.codes[:, :k])

    def _fit_edge(self, comp, linker, curator: Curator, budget, mult, start: float) -> None:  # noqa: ANN001
        """Fit one FK's linker (its budget, progress and fit time recorded under the FK)."""
        fk = self.schema_.foreign_key(comp.name)
        t0 = time.perf_counter()
        rep = self._reporter("fit", fk.name, start)
        rep(0.0, f"{comp.method} on {fk.label()}")
        self.links_[fk.name] = linker.fit(
            curator.foreign_key(fk), budget(fk.name), schema=self.schema_, multipliers=mult,
            progress=rep, synthetic=_FitTables(self) if linker.needs_synthetic_tables else None)
        self.fit_seconds_[fk.name] = time.perf_counter() - t0

    def _sizes(self) -> dict[str, float]:
        """Synthetic sizes of the private tables when sizes are private (entity unit), fixed when
        the first synthetic table is drawn (at fit time for methods that learn on the synthetic
        tables, else at the end of fit): the tables' noisy totals reconciled with what the links
        fitted so far (and :meth:`_FitTables.report_sizes`) released about them, and with the
        public degree caps (``relviz.privacy.postprocessing.reconcile_sizes``; free
        post-processing). Empty under row-level units, where sizes are public."""
        if getattr(self, "sizes_", None) is None:  # (a synthesizer pickled before sizes_ existed)
            self.sizes_ = self._reconciled_sizes(self.schema_, self.multipliers_)
        return self.sizes_

    def _reconciled_sizes(self, schema, mult) -> dict[str, float]:  # noqa: ANN001
        if mult.row_unit:
            return {}
        start = {n: float(m.total) for n, m in self.models_.items()}
        facts = [SizeFact({n: 1.0}, float(m.total), sd=math.sqrt(v), label=f"{n}: the mechanism's total")
                 for n, m in self.models_.items()
                 if math.isfinite(v := float(getattr(m, "total_variance", math.inf))) and v > 0]
        facts += getattr(self, "_reported_sizes", [])
        for link in self.links_.values():
            facts += list(getattr(link, "size_facts", ()))
        tied = {frozenset(f.coef) for f in facts if f.kind == "tie"}
        caps = schema.privacy_unit.caps if schema.privacy_unit is not None else {}
        for fk in schema.foreign_keys:  # the public cap where no tie already keeps it
            if (fk.name in caps and frozenset((fk.child, fk.parent)) not in tied and not fk.nullable
                    and fk.child != fk.parent
                    and fk.child in start and fk.parent in start):
                facts.append(SizeFact({fk.parent: float(caps[fk.name]), fk.child: -1.0}, 0.0, "at_least",
                                      label=f"{fk.name}: children ≤ τ × parents"))
        sizes = reconcile_sizes(facts, start)
        moved = {n: (start[n], sizes[n]) for n in start if abs(sizes[n] - start[n]) >= 0.5}
        if moved:
            self.accountant_.notes.append(
                "synthetic table sizes reconcile the noisy totals with the degree releases and caps "
                "(post-processing): " + ", ".join(f"{n} {a:,.0f} → {b:,.0f}" for n, (a, b) in moved.items()))
        return sizes

    def _fit_database(self, plan: Plan, curator: Curator, budget, mult, start: float) -> None:  # noqa: ANN001
        """Fit the plan's database method (PrivLava, Denorm) with one budget per component."""
        name = plan.database_method
        method = get_database(name, **plan.component_of_method(name).params)
        t0 = time.perf_counter()
        self.database_ = method.fit(
            curator, {c.name: budget(c.name) for c in plan.components}, schema=self.model_schema_,
            components=plan.components, multipliers=mult,
            progress=lambda comp: self._reporter("fit", comp, start), seed=int(self.seed_))
        self.fit_seconds_[name] = time.perf_counter() - t0

    def _notes(self, schema, caps: CapReport) -> list[str]:  # noqa: ANN001
        unit = schema.privacy_unit
        notes = [f"privacy unit: {unit.describe()}"]
        inferred = schema.inferred_problems()
        if inferred:
            notes.append(not_dp_note(inferred))
        if unit.rationale:
            notes.append(f"why: {unit.rationale}")
        public = [t.name for t in schema.tables if t.public]
        if public:
            notes.append("public tables released verbatim (no budget): " + ", ".join(public))
        notes.append("public facts: schema, attribute domains, degree caps, public tables"
                     + (" (except what was read from the data, see above)" if inferred else ""))
        unstable = [fk for fk, ok in truncation_stable(schema).items() if not ok]
        if unstable:  # decided from the unit and caps, never from whether rows were dropped
            notes.append("degree caps are enforced by dropping surplus children; on "
                         + ", ".join(unstable) + " that is not a stable transformation, so the "
                         "guarantee holds for the database after cap enforcement")
        viewed = [fk for fk, src in unit.cap_sources.items() if src.get("how") == "curator view"]
        if viewed:
            notes.append("the degree cap of " + ", ".join(viewed) + " was chosen while looking at "
                         "the real degrees (curator view): that choice is not differentially "
                         "private; a DP quantile (relviz.privacy.caps.dp_degree_cap) avoids it")
        if self.random_state is not None:
            notes.append(f"seeded run (random_state={self.random_state}): for study, not for release")
        return notes

    def _relation_tables(self) -> set[str]:
        return {c.table for c in self.plan_.relations}

    def _draw(self, name: str, n: int, seed: int) -> tuple[EncodedTable, np.random.Generator]:
        """Codes of ``n`` synthetic rows of private table ``name`` (and the generator, which goes
        on to decode them); the same seed gives the same codes."""
        table = getattr(self, "model_schema_", self.schema_).table(name)  # with key attributes
        rng = _component_rng(seed, "sample", name)
        sizes = tuple(a.size for a in table.attributes)
        codes = np.asarray(self.models_[name].sample(n, rng)).astype(code_dtype(sizes), copy=False)
        return EncodedTable(name, table.attribute_names, sizes, codes), rng

    def _rows(self, name: str, scale: float) -> int:
        """Synthetic rows of ``name``: the public size under row-level units, else the reconciled
        noisy size (:meth:`_sizes`); times ``scale``."""
        n = self.public_sizes_.get(name, self._sizes().get(name, self.models_[name].total))
        return max(1, int(round(n * scale)))

    def _fit_synthetic(self, name: str) -> EncodedTable:
        """The codes of table ``name`` that the default ``sample()`` returns (fit-time view)."""
        if name in self.public_codes_:
            return self.public_codes_[name]
        if name not in self._fit_codes:
            if name in self._relation_tables():
                n = len(self._relation_pairs(name, self._fit_synthetic, silent(), self.seed_)[0])
            else:
                n = self._rows(name, 1.0)
            self._fit_codes[name] = self._strip(name, self._draw(name, n, self.seed_)[0])
        return self._fit_codes[name]

    def _relation_pairs(self, table: str, codes, progress: Reporter, seed: int | None):  # noqa: ANN001, ANN202
        fk1, fk2 = self.schema_.fks_from(table)
        rel = self.relations_[table]
        return rel.link(codes(fk1.parent), codes(fk2.parent), _component_rng(seed, "link", table),
                        progress)

    # -- sample -------------------------------------------------------------------------------
    def sample(self, scale: float = 1.0, *, random_state: int | None = None) -> Database:
        """Sample a synthetic database (reads no private data).

        Args:
            scale: Multiplies every private table's row count (public tables are copied; a link
                table of a many-to-many relation gets the relation's number of pairs).
            random_state: Seed of this draw. The default repeats the fitted synthesizer's draw
                (the same database every call); pass another seed for another sample. Relations
                learned on the default draw's tables are re-optimised for other tables against
                their stored noisy measurements (free post-processing).

        Returns:
            A validated :class:`Database` with the fitted schema.

        Raises:
            NotFittedError: before :meth:`fit` (also a ``ValueError`` and an ``AttributeError``).
        """
        codes, rngs, links, start = self._sample_codes(scale, random_state)
        schema = self.schema_
        frames: dict[str, pd.DataFrame] = dict(self.public_)
        for name in [n for n in codes if n not in self.public_]:
            enc = codes.pop(name)  # decoded: the codes are not needed any more (memory at scale)
            frames[name] = _with_keys(schema, name, decode_table(schema.table(name), enc, rngs[name]),
                                      enc.n_rows)
            del enc
        return self._finish_sample(schema, frames, links, start)

    def sample_to(self, directory: str | Path, scale: float = 1.0, *, random_state: int | None = None,
                  chunk_rows: int = ARROW_CHUNK_ROWS, check: bool = True) -> StreamedSample:
        """Sample a synthetic database straight to Parquet files, one chunk of rows at a time.

        The files hold exactly the database :meth:`sample` returns with the same arguments
        (the same rows, values and keys, whatever ``chunk_rows``), but no table is ever decoded
        whole: memory holds the integer codes of every table (their smallest unsigned type),
        the parent row of every child row, and one decoded chunk (``relviz.stream``;
        ``benchmarks/scale.py`` measures the difference). Reads no private data.

        Args:
            directory: Folder for ``<table>.parquet`` (created; files of the same names replaced
                once every table is written and checked; a cancelled or failed call leaves
                none of its files behind).
            scale, random_state: As for :meth:`sample`.
            chunk_rows: Rows decoded and written at a time (one Parquet row group each).
            check: Count null and duplicate primary keys and orphan foreign keys in the written
                files with DuckDB, out of core (:func:`relviz.stream.check_files`).

        Returns:
            A :class:`~relviz.stream.StreamedSample`: the path and row count of every table and
            the sampling notes (also in ``sample_report_``).

        Raises:
            NotFittedError: before :meth:`fit`.
            ValueError: ``chunk_rows < 1`` or ``scale ≤ 0``.
            DataError: the written database fails a key check (a bug in relviz, not a user error).
        """
        from relviz.database import _write_parquet
        from relviz.stream import KeyValues, StreamedSample, check_files, write_table

        if int(chunk_rows) != chunk_rows or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, not {chunk_rows!r}")
        codes, rngs, links, start = self._sample_codes(scale, random_state)
        schema = self.schema_
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        keys = KeyValues(schema, self.public_, links,
                         {n: enc.n_rows for n, enc in codes.items() if n not in self.public_})
        paths: dict[str, Path] = {}  # written as <table>.parquet.partial, renamed at the end
        written: dict[str, int] = {}
        try:
            for name in schema.table_names:
                path = paths[name] = out / f"{name}.parquet.partial"
                if name in self.public_:
                    _write_parquet(self.public_[name], list(schema.columns(name)), path)
                    written[name] = len(self.public_[name])
                    continue
                written[name], dropped = write_table(
                    path, schema, name, codes.pop(name), rngs[name].bit_generator.state, keys,
                    int(chunk_rows), self._reporter("sample", name, start))
                if dropped:
                    self.sample_report_.append(repeats_note(name, schema.table(name).primary_key, dropped))
            if check:
                problems = check_files(schema, paths)
                if problems:  # a bug, not a user error: synthetic output must always be valid
                    raise DataError(problems, headline="internal error: the synthetic database is invalid")
        except BaseException:  # cancelled or failed: no partial table is left behind
            for p in paths.values():
                p.unlink(missing_ok=True)
            raise
        for name, p in list(paths.items()):
            paths[name] = p.replace(out / f"{name}.parquet")
        self._reporter("sample", "", start)(1.0, "sampled")
        return StreamedSample(paths, written, list(self.sample_report_))

    def _sample_codes(self, scale: float, random_state: int | None):  # noqa: ANN202
        """The sampling stage that works on codes: every private table drawn and every private
        FK linked. Returns ``(codes, decode generators, links, start time)``; ``codes`` also
        holds the public tables' codes, ``links`` maps each private FK to the parent row of every
        child row (``-1`` for null)."""
        if not getattr(self, "fitted_", False):
            raise NotFittedError("this RelationalSynthesizer is not fitted yet: call fit() before sample()")
        if not scale > 0:
            raise ValueError("scale must be positive")
        self._token.reset()
        start = time.perf_counter()
        seed = self.seed_ if random_state is None else random_state
        if seed is None:  # a release file keeps no seed (save(release=True)): a fresh draw
            seed = secrets.randbits(63)
        schema = self.schema_
        codes: dict[str, EncodedTable] = dict(self.public_codes_)
        rngs: dict[str, np.random.Generator] = {}
        self.sample_report_: list[str] = []
        relation_tables = self._relation_tables()
        full: dict[str, EncodedTable] = {}  # drawn codes with the parent-row attributes
        database = getattr(self, "database_", None) if self.plan_.database_method else None
        db_links: dict[str, np.ndarray] = {}
        if database is not None:
            generated, db_links = database.sample(
                self.public_codes_, scale=scale, seed=int(seed),
                progress=lambda comp: self._reporter("sample", comp, start))
            for name, enc in generated.items():
                codes[name] = self._strip(name, enc)  # its linkers have used the key attributes
                rngs[name] = _component_rng(seed, "sample", name)
        for name in schema.topological_order():
            if schema.table(name).public or name in relation_tables or name in codes:
                continue
            rep = self._reporter("sample", name, start)
            rep(0.0, f"sampling {name}")
            full[name], rngs[name] = self._draw(name, self._rows(name, scale), seed)
            codes[name] = self._strip(name, full[name])
            rep(1.0, f"{codes[name].n_rows:,} rows")
        pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for comp in self.plan_.relations:
            rep = self._reporter("sample", comp.name, start)
            rep(0.0, f"linking {comp.name}")
            e1, e2 = self._relation_pairs(comp.table, codes.__getitem__, rep, seed)
            pairs[comp.table] = (e1, e2)
            codes[comp.table], rngs[comp.table] = self._draw(comp.table, len(e1), seed)
            rep(1.0, f"{len(e1):,} pairs")
        links: dict[str, np.ndarray] = dict(db_links)
        for table, (e1, e2) in pairs.items():
            fk1, fk2 = schema.fks_from(table)
            links[fk1.name], links[fk2.name] = e1, e2
        for comp in self.plan_.edges:  # links read codes only (each FK its own random stream)
            if comp.name in db_links:
                continue
            fk = schema.foreign_key(comp.name)
            rep = self._reporter("sample", fk.name, start)
            rep(0.0, f"linking {fk.label()}")
            child = full[fk.child] if fk.name in getattr(self, "key_attributes_", {}) else codes[fk.child]
            links[fk.name] = self.links_[fk.name].link(child, codes[fk.parent],
                                                       _component_rng(seed, "link", fk.name), rep)
            rep(1.0, "linked")
        full.clear()
        return codes, rngs, links, start

    def _finish_sample(self, schema, frames, links, start):  # noqa: ANN001, ANN202
        for fk in schema.private_foreign_keys:
            frames[fk.child] = _set_fk(frames[fk.child], fk, links[fk.name], frames[fk.parent])
        for name in schema.topological_order():
            t = schema.table(name)
            if t.public or not keyed_by_foreign_keys(schema, name):
                continue
            dup = frames[name].duplicated(list(t.primary_key))
            if dup.any():
                self.sample_report_.append(repeats_note(name, t.primary_key, int(dup.sum())))
                frames[name] = frames[name][~dup.to_numpy()].reset_index(drop=True)
        frames = format_synthetic_keys(schema, frames)  # the schema's public key formats, last
        ordered = {n: frames[n][list(schema.columns(n))] for n in schema.table_names}
        db = Database._adopt(schema, ordered)  # frames built here: no defensive copy
        problems = db.problems()
        if problems:  # a bug, not a user error: synthetic output must always be valid
            raise DataError(problems, headline="internal error: the synthetic database is invalid")
        self._reporter("sample", "", start)(1.0, "sampled")
        return db

    def fit_sample(self, db: Database, plan: Plan | None = None, scale: float = 1.0) -> Database:
        return self.fit(db, plan).sample(scale)


def _set_fk(child: pd.DataFrame, fk, idx: np.ndarray, parent: pd.DataFrame) -> pd.DataFrame:  # noqa: ANN001
    """Write the FK columns of ``child`` from parent rows ``idx`` (``-1`` → null) into a
    (copy-on-write, shallow) copy."""
    child = child.copy(deep=False)
    null = idx < 0
    for cc, pc in zip(fk.columns, fk.parent_columns):
        src = parent[pc].to_numpy()
        if not len(src):  # an empty parent table: every link is null (masked below)
            src = np.zeros(1, dtype=src.dtype) if src.dtype != object else np.array([None], dtype=object)
        vals = src[np.where(null, 0, idx)]
        col = pd.Series(vals, index=child.index)
        if null.any():
            col = col.astype("Int64") if parent[pc].dtype.kind in "iu" else col.astype(parent[pc].dtype)
            col = col.mask(null)
        child[cc] = col
    return child


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


class _FitTables:
    """The fit-time synthetic tables, by name, for a method that learns on them
    (``RelationalSynthesizer._fit_synthetic``). A method that releases something about the table
    sizes before it asks for a table (bi-adjacency's degree start) passes it to
    :meth:`report_sizes` first, so that the sizes, fixed when the first table is drawn, use it."""

    def __init__(self, synth: RelationalSynthesizer) -> None:
        self._synth = synth

    def __call__(self, name: str) -> EncodedTable:
        return self._synth._fit_synthetic(name)

    def noisy_total(self, name: str) -> float | None:
        """The table mechanism's released (noisy) total of ``name`` before reconciliation, or
        ``None`` for a table without a fitted model (a public one)."""
        model = self._synth.models_.get(name)
        return float(model.total) if model is not None else None

    def report_sizes(self, facts) -> None:  # noqa: ANN001 - Sequence[SizeFact]
        """Add size facts (ignored once the sizes are fixed: a table was drawn already)."""
        if self._synth.sizes_ is None:
            self._synth._reported_sizes.extend(facts)

