"""``Run``: one synthesis (fit, then sample) in a background thread, observable and cancellable.

A :class:`Run` is the plain object behind the Studio's run panel (widgets never compute). It works
without Jupyter: start it, watch it through :meth:`Run.observe` or :meth:`Run.snapshot`, cancel it,
wait for it, read :attr:`Run.result` and :attr:`Run.ledger`.

* Progress comes from the engine's callbacks (:class:`~relviz.progress.ProgressEvent`): each plan
  component (private table, FK, relation) has a fit stage and a sample stage; its fraction is the
  mean of the two, its stage text the engine's last message, its elapsed time the seconds spent in
  its own steps.
* The live ledger is the run's :class:`~relviz.privacy.accountant.Accountant`: ρ spent per
  component against the plan's exact share, updated on every charge (``Accountant.on_charge``).
* :meth:`Run.cancel` takes effect at the next step of the engine (never inside a release), so the
  ledger stays true: it lists what the cancelled attempt spent. The run can then be started again
  (a fresh synthesizer and a fresh accountant); so can a failed run.

Observers are called from the worker thread (and from the caller's thread for ``start`` and
``cancel``); they must be quick and must not block. No thread polls: the worker runs the engine
and the engine's callbacks drive every update.

Example:
    >>> import relviz
    >>> from relviz.run import Run
    >>> db = relviz.datasets.load("nycflights13")                       # doctest: +SKIP
    >>> run = Run(db, relviz.Plan.default(db.schema)).start()             # doctest: +SKIP
    >>> run.wait(); run.status, run.result                               # doctest: +SKIP
    ('done', Database(nycflights13; ...))
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from relviz.errors import CancelledError
from relviz.plan import Plan
from relviz.progress import Observers, ProgressEvent

if TYPE_CHECKING:  # pragma: no cover
    from relviz.database import Database
    from relviz.privacy.accountant import Accountant, LedgerEntry
    from relviz.privacy.backends import CountBackend
    from relviz.privacy.session import SessionLedger
    from relviz.synthesizer import RelationalSynthesizer

__all__ = ["Run", "RunSnapshot", "ComponentProgress", "Attempt", "Status", "STATUSES"]

Status = Literal["idle", "running", "cancelling", "cancelled", "failed", "done"]
STATUSES: tuple[str, ...] = ("idle", "running", "cancelling", "cancelled", "failed", "done")
"""Every status a run can be in; ``running`` and ``cancelling`` are the active ones."""

_ACTIVE = ("running", "cancelling")
_STAGES = ("fit", "sample")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ComponentProgress:
    """Progress of one plan component (a frozen copy, safe to hand to a view).

    Attributes:
        name: Component name (table, FK or relation name, as in the plan).
        kind: ``"table"``, ``"edge"`` or ``"relation"``.
        label: What to show (an FK's ``child.col → parent``).
        method: The component's mechanism or relational method.
        fraction: Progress in [0, 1]: mean of the fit and the sample stage.
        stage: ``"waiting"``, ``"fit"``, ``"sample"`` or ``"done"``.
        message: The engine's last message for this component.
        elapsed: Seconds spent in this component's steps so far.
        planned: ρ planned for it (exact).
        spent: ρ it has spent (exact; from the accountant).
    """

    name: str
    kind: str
    label: str
    method: str
    fraction: float = 0.0
    stage: str = "waiting"
    message: str = ""
    elapsed: float = 0.0
    planned: Fraction = Fraction(0)
    spent: Fraction = Fraction(0)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "label": self.label, "method": self.method,
                "fraction": self.fraction, "stage": self.stage, "message": self.message,
                "elapsed": self.elapsed, "planned": float(self.planned), "spent": float(self.spent)}


@dataclass(frozen=True)
class Attempt:
    """One finished start of a run (the history a view can show).

    Attributes:
        number: 1 for the first start.
        status: ``"done"``, ``"cancelled"`` or ``"failed"``.
        seconds: Wall time of the attempt.
        rho_spent: ρ the attempt's accountant recorded (exact; 0 if it never reached the fit).
        rho_total: ρ of the plan it ran.
        error: The message of a failure or cancellation (empty when done).
    """

    number: int
    status: str
    seconds: float
    rho_spent: Fraction
    rho_total: Fraction
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "status": self.status, "seconds": self.seconds,
                "rho_spent": float(self.rho_spent), "rho_total": float(self.rho_total), "error": self.error}


@dataclass(frozen=True)
class RunSnapshot:
    """A consistent copy of a run's state at one moment.

    Attributes:
        status: See :data:`STATUSES`.
        stage: The engine's current stage (``"validate"``, ``"fit"``, ``"sample"``, …; ``""`` idle).
        message: The last message of the run as a whole (or of its current component).
        elapsed: Seconds since the start (frozen when the attempt ended).
        fraction: Overall progress (mean over the components).
        components: Per component progress, in plan order.
        rho_total: ρ of the plan (exact).
        rho_spent: ρ the current attempt has spent (exact).
        epsilon: The plan's ε; ``delta``: its δ.
        epsilon_spent: ε at δ of what was spent (``None`` before the fit starts).
        error: Message of a failure or cancellation (empty otherwise).
        error_type: Exception class name of a failure.
        attempt: Number of the current (or last) attempt (0 before the first start).
        attempts: Finished attempts, oldest first.
        result_rows: Rows per table of the result (empty until done).
        ledger_entries: Number of releases in the ledger.
    """

    status: str
    stage: str
    message: str
    elapsed: float
    fraction: float
    components: tuple[ComponentProgress, ...]
    rho_total: Fraction
    rho_spent: Fraction
    epsilon: float
    delta: float
    epsilon_spent: float | None
    error: str
    error_type: str
    attempt: int
    attempts: tuple[Attempt, ...]
    result_rows: dict[str, int] = field(default_factory=dict)
    ledger_entries: int = 0

    @property
    def active(self) -> bool:
        """Whether the run is running or cancelling."""
        return self.status in _ACTIVE

    def to_dict(self) -> dict[str, Any]:
        """JSON-able copy (exact ρ values as ``"p/q"`` strings beside the floats)."""
        return {"status": self.status, "stage": self.stage, "message": self.message,
                "elapsed": self.elapsed, "fraction": self.fraction,
                "components": [c.to_dict() for c in self.components],
                "rho_total": float(self.rho_total), "rho_spent": float(self.rho_spent),
                "rho_total_exact": f"{self.rho_total.numerator}/{self.rho_total.denominator}",
                "rho_spent_exact": f"{self.rho_spent.numerator}/{self.rho_spent.denominator}",
                "epsilon": self.epsilon, "delta": self.delta, "epsilon_spent": self.epsilon_spent,
                "error": self.error, "error_type": self.error_type, "attempt": self.attempt,
                "attempts": [a.to_dict() for a in self.attempts], "result_rows": dict(self.result_rows),
                "ledger_entries": self.ledger_entries}


@dataclass
class _Comp:
    """Mutable per-component state (guarded by the run's lock)."""

    name: str
    kind: str
    label: str
    method: str
    planned: Fraction
    fractions: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_STAGES, 0.0))
    stage: str = "waiting"
    message: str = ""
    seconds: float = 0.0
    since: float | None = None  # perf_counter when its current step began

    def close(self, now: float) -> None:
        if self.since is not None:
            self.seconds += now - self.since
            self.since = None


class Run:
    """Fit and sample a synthetic database in a background thread.

    Args:
        db: The real :class:`~relviz.database.Database`.
        plan: The :class:`~relviz.plan.Plan` (default: ``Plan.default(db.schema)``).
        random_state: Seed of every draw (a seeded run is for study, not for release); each start
            uses it again.
        scale: Passed to :meth:`~relviz.synthesizer.RelationalSynthesizer.sample`.
        allow_inferred: Passed to :class:`~relviz.synthesizer.RelationalSynthesizer`: accept a
            schema whose domains were read from the data (the release is then **not**
            differentially private). Off by default: such a run fails with the list of them.
        session: A :class:`~relviz.privacy.session.SessionLedger` of the database: every attempt's
            spending is charged to it, and a start that does not fit its session cap is refused
            (:class:`~relviz.errors.BudgetError`, in words) before anything is read.
        backend: Where the exact counts are computed (``"pandas"``, ``"duckdb"``, ``"spark"`` or a
            :class:`~relviz.privacy.backends.CountBackend`), passed to the synthesizer; every
            backend gives the same counts (docs/privacy.md).

    Attributes:
        db: The real database of the next start.
        plan: The plan of the next start.
        random_state: See above.
        scale: See above.
    """

    def __init__(self, db: Database, plan: Plan | None = None, *, random_state: int | None = None,
                 scale: float = 1.0, allow_inferred: bool = False,
                 session: SessionLedger | None = None, backend: str | CountBackend = "pandas") -> None:
        self.db = db
        self.backend = backend
        self.session = session
        self._reservation: int | None = None
        self.plan = plan if plan is not None else Plan.default(db.schema)
        self.random_state = random_state
        self.scale = scale
        self.allow_inferred = allow_inferred
        self._lock = threading.RLock()
        self._observers = Observers(_log)
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._status: str = "idle"
        self._stage = ""
        self._message = ""
        self._error = ""
        self._error_type = ""
        self._started: float | None = None
        self._ended: float | None = None
        self._attempt = 0
        self._attempts: list[Attempt] = []
        self._synth: RelationalSynthesizer | None = None
        self._accountant: Accountant | None = None
        self._result: Database | None = None
        self._ledger: Accountant | None = None
        self._comps: dict[str, _Comp] = self._components(self.plan)

    # -- configuration ---------------------------------------------------------------------------
    def _components(self, plan: Plan) -> dict[str, _Comp]:
        try:
            budgets = plan.budgets()
        except (ValueError, ArithmeticError, KeyError):
            budgets = {}
        out = {}
        for c in plan.components:
            label = c.name
            if c.kind == "edge":
                try:
                    label = self.db.schema.foreign_key(c.name).label()
                except KeyError:
                    pass
            out[c.name] = _Comp(c.name, c.kind, label, c.method, Fraction(budgets.get(c.name, 0)))
        return out

    def configure(self, *, db: Database | None = None, plan: Plan | None = None,
                  random_state: int | None | Literal["keep"] = "keep") -> None:
        """Change what the next :meth:`start` runs; the status becomes ``"idle"``.

        The result and ledger of the last successful attempt stay readable until the next start.

        Raises:
            RuntimeError: while the run is active.
        """
        with self._lock:
            if self._status in _ACTIVE:
                raise RuntimeError("the run is active: cancel it or wait for it before changing it")
            if db is not None:
                self.db = db
            if plan is not None:
                self.plan = plan
            if random_state != "keep":
                self.random_state = random_state  # type: ignore[assignment]
            self._comps = self._components(self.plan)
            self._status, self._stage, self._message = "idle", "", ""
            self._error = self._error_type = ""
            self._started = self._ended = None
            self._accountant = None
        self._notify()

    # -- observation -----------------------------------------------------------------------------
    def observe(self, callback: Callable[[Run], None]) -> Callable[[], None]:
        """Call ``callback(run)`` after every change; returns a function that unsubscribes.

        Callbacks run in the worker thread during a run: keep them short and non-blocking.
        """
        return self._observers.add(callback)

    def _notify(self) -> None:
        self._observers.notify(self)

    # -- state -----------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """``"idle"``, ``"running"``, ``"cancelling"``, ``"cancelled"``, ``"failed"`` or ``"done"``."""
        return self._status

    @property
    def active(self) -> bool:
        return self._status in _ACTIVE

    @property
    def error(self) -> str | None:
        """The message of the last failure or cancellation (``None`` otherwise)."""
        return self._error or None

    @property
    def error_type(self) -> str | None:
        return self._error_type or None

    @property
    def result(self) -> Database | None:
        """The synthetic database of the last successful attempt (``None`` before one)."""
        return self._result

    @property
    def ledger(self) -> Accountant | None:
        """The accountant of the latest attempt that reached the fit — live while it runs, the
        full ledger after success, what was spent after a cancel or a failure."""
        return self._accountant if self._accountant is not None else self._ledger

    @property
    def synthesizer(self) -> RelationalSynthesizer | None:
        """The fitted synthesizer of the latest attempt."""
        return self._synth

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        return tuple(self._attempts)

    @property
    def elapsed(self) -> float:
        """Seconds since the start (frozen when the attempt ended; 0 before a start)."""
        if self._started is None:
            return 0.0
        return (self._ended or time.perf_counter()) - self._started

    def snapshot(self) -> RunSnapshot:
        """A consistent copy of the state (for views; safe from any thread)."""
        with self._lock:
            acc = self._accountant
            try:
                total = Fraction(self.plan.rho_total)
            except (ValueError, ArithmeticError):
                total = Fraction(0)
            now = time.perf_counter()
            comps = []
            for c in self._comps.values():
                spent = acc.spent(c.name) if acc is not None else Fraction(0)
                running = c.since is not None and self._status in _ACTIVE
                frac = 1.0 if c.stage == "done" else sum(c.fractions.values()) / len(_STAGES)
                comps.append(ComponentProgress(c.name, c.kind, c.label, c.method, frac, c.stage, c.message,
                                               c.seconds + (now - c.since if running else 0.0),  # type: ignore[operator]
                                               c.planned, spent))
            fraction = sum(c.fraction for c in comps) / len(comps) if comps else float(self._status == "done")
            spent_total = acc.spent() if acc is not None else Fraction(0)
            eps_spent = None
            if acc is not None:
                try:
                    eps_spent = acc.epsilon_spent() if spent_total > 0 else 0.0
                except (ValueError, ArithmeticError):
                    eps_spent = None
            rows = self._result.row_counts() if (self._result is not None and self._status == "done") else {}
            return RunSnapshot(self._status, self._stage, self._message, self.elapsed, fraction, tuple(comps),
                               total, spent_total, self.plan.epsilon, self.plan.delta, eps_spent, self._error,
                               self._error_type, self._attempt, tuple(self._attempts), rows,
                               len(acc.ledger) if acc is not None else 0)

    # -- control ---------------------------------------------------------------------------------
    def start(self) -> Run:
        """Launch fit + sample in a background thread; returns ``self`` at once.

        Raises:
            RuntimeError: if the run is already active.
            BudgetError: if the plan does not fit in what the session cap leaves (nothing starts).
        """
        with self._lock:
            if self._status in _ACTIVE:
                raise RuntimeError("the run is already running")
            if self.session is not None:
                self._reservation = self.session.reserve(self.plan, self.db.schema)
            self._cancel.clear()
            self._attempt += 1
            self._comps = self._components(self.plan)
            self._status, self._stage, self._message = "running", "validate", "starting"
            self._error = self._error_type = ""
            self._started, self._ended = time.perf_counter(), None
            self._synth = None
            self._accountant = None
            self._result = None
            self._ledger = None
            number = self._attempt
            db, plan = self.db, self.plan
            thread = threading.Thread(target=self._work, args=(number, db, plan),
                                      name=f"relviz-run-{number}", daemon=True)
            self._thread = thread
        self._notify()
        thread.start()
        return self

    def cancel(self) -> bool:
        """Ask the run to stop at the engine's next step.

        Returns:
            ``True`` if a run was active (it becomes ``"cancelling"``, then ``"cancelled"``).
        """
        with self._lock:
            if self._status not in _ACTIVE:
                return False
            self._cancel.set()
            self._status = "cancelling"
            self._message = "cancelling at the next step…"
            synth = self._synth
        if synth is not None:
            synth.cancel()
        self._notify()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the current attempt ends (or ``timeout`` seconds pass).

        Returns:
            ``True`` if no attempt is active any more.
        """
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.active

    # -- the worker ------------------------------------------------------------------------------
    def _work(self, number: int, db: Database, plan: Plan) -> None:
        from relviz.synthesizer import RelationalSynthesizer

        status, error, etype, result = "failed", "", "", None
        try:
            synth = RelationalSynthesizer(plan, random_state=self.random_state, progress=self._on_event,
                                          allow_inferred=self.allow_inferred, backend=self.backend)
            with self._lock:
                self._synth = synth
            if self._cancel.is_set():
                raise CancelledError("cancelled before the fit started")
            synth.fit(db)
            if self._cancel.is_set():
                raise CancelledError("cancelled after the fit, before sampling")
            result = synth.sample(self.scale)
            status = "done"
        except CancelledError as e:
            status, error, etype = "cancelled", str(e) or "cancelled", "CancelledError"
        except Exception as e:  # noqa: BLE001 - shown in the panel; the session stays usable
            status, error, etype = "failed", str(e) or repr(e), type(e).__name__
            _log.debug("run %d failed", number, exc_info=True)
        self._finish(number, status, error, etype, result)

    def _finish(self, number: int, status: str, error: str, etype: str, result: Database | None) -> None:
        with self._lock:
            now = time.perf_counter()
            for c in self._comps.values():
                c.close(now)
                if status == "done":
                    c.fractions = dict.fromkeys(_STAGES, 1.0)
                    c.stage = "done"
            acc = self._accountant
            self._ended = now
            self._status = status
            self._error, self._error_type = error, etype
            if status == "done":
                self._result = result
                self._ledger = acc
                self._stage, self._message = "done", f"done in {now - (self._started or now):.1f} s"
            elif status == "cancelled":
                self._message = "cancelled: " + error
            else:
                self._message = f"failed: {etype}"
            try:
                total = Fraction(self.plan.rho_total)
            except (ValueError, ArithmeticError):
                total = Fraction(0)
            self._attempts.append(Attempt(number, status, now - (self._started or now),
                                          acc.spent() if acc is not None else Fraction(0), total, error))
            key, self._reservation = self._reservation, None
            plan = self.plan
        if self.session is not None:  # what this attempt spent counts for the whole session
            self.session.record(acc, plan=plan, status=status, key=key)
        self._notify()

    def _on_event(self, ev: ProgressEvent) -> None:
        """Progress callback of the engine (worker thread)."""
        if self._cancel.is_set():  # the engine is at a step boundary: stop here (the ledger is true)
            raise CancelledError(f"cancelled during {ev.stage} of {ev.component or 'the run'}")
        hook = None
        with self._lock:
            synth = self._synth
            acc = getattr(synth, "accountant_", None) if synth is not None else None
            if acc is not None and acc is not self._accountant:
                self._accountant = acc
                hook = acc
            now = time.perf_counter()
            self._stage = ev.stage
            c = self._comps.get(ev.component)
            if c is None:
                self._message = ev.message
            else:
                stage = ev.stage if ev.stage in _STAGES else "fit"
                for other in self._comps.values():  # one step at a time: close the previous one
                    if other is not c:
                        other.close(now)
                if c.since is None:
                    c.since = now
                c.stage = stage
                c.fractions[stage] = max(c.fractions[stage], float(ev.fraction))
                c.message = ev.message
                self._message = f"{c.label}: {ev.message}" if ev.message else c.label
                if c.fractions[stage] >= 1.0:
                    c.close(now)
        if hook is not None:
            hook.on_charge(self._on_charge)
        self._notify()

    def _on_charge(self, entry: LedgerEntry) -> None:
        self._notify()

    def __repr__(self) -> str:
        return f"Run(status={self._status!r}, attempt={self._attempt}, plan ε={self.plan.epsilon:g})"
