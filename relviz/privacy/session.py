"""The session ledger: what every run on one database has spent, across attempts.

Each run has its own :class:`~relviz.privacy.accountant.Accountant` (its plan's budget, checked
release by release). Launching again on the same data spends again: privacy losses compose.
:class:`SessionLedger` keeps that total for one database in one Python session (a kernel):
every attempt's ledger entries are charged, once, to one session accountant — the same zCDP
:class:`~relviz.privacy.accountant.Accountant`, so ρ adds up exactly (``Fraction``) and converts
to (ε, δ) the same way. A DP degree cap released before the runs (component ``"caps"``) was drawn
once: it is counted once however many runs use it.

A user may set a **session cap** (ε, δ): a launch whose plan does not fit in what the cap leaves
is refused, in words, before anything is read (:meth:`SessionLedger.refusal`,
:meth:`SessionLedger.reserve`). Without a cap nothing is refused, but the total is still kept
and shown: every run costs privacy.

Composition: zCDP ρ adds up (Bun & Steinke 2016, Lemma 2.3). When every attempt used the exact
Gaussian-DP conversion (all releases Gaussian), the session keeps it (μ² adds up, ρ = μ²/2);
otherwise it converts with the optimal zCDP conversion, which is valid for every release (a
Gaussian release of ρ = Δ²/(2σ²) is ρ-zCDP). The cap's ρ is what its (ε, δ) buys under that
conversion.

>>> from relviz.privacy.session import SessionLedger
>>> s = SessionLedger("demo")
>>> s.set_cap(2.0, 1e-6)
'session cap: ε = 2, δ = 1e-06'
>>> s.spent()
Fraction(0, 1)
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from relviz.errors import BudgetError
from relviz.privacy.accountant import Accountant, epsilon_from_rho, rho_from_epsilon_delta
from relviz.progress import Observers

if TYPE_CHECKING:  # pragma: no cover
    from relviz.database import Database
    from relviz.plan import Plan
    from relviz.schema import Schema

__all__ = ["SessionAttempt", "SessionLedger", "session_ledger"]

_CAPS = "caps"


def _fmt(x: Fraction | float) -> str:
    return f"{float(x):.4g}"


def _cap_label(fk: str, src: dict[str, Any], tau: Any) -> str:
    """The ledger label of a DP cap release (as :func:`relviz.privacy.caps.charge_cap_releases`
    writes it): the same release is counted once in a session."""
    return f"degree cap of {fk}: DP {src['quantile']:g}-quantile (released before the run: τ = {tau})"


def _conversion_text(conversion: str) -> str:
    return ("exact Gaussian-DP conversion" if conversion == "gdp"
            else "optimal zCDP conversion")


@dataclass(frozen=True)
class SessionAttempt:
    """One run attempt charged to the session.

    Attributes:
        number: 1 for the session's first attempt.
        status: ``"done"``, ``"cancelled"`` or ``"failed"``.
        rho: ρ the attempt spent (exact; its ledger's total, DP caps counted at their first use).
        epsilon, delta: The (ε, δ) of the attempt's plan.
        methods: ``{component: method}`` of the plan.
        conversion: The attempt's (ε, δ) ↔ ρ conversion.
        at: Wall-clock time it ended (seconds since the epoch).
    """

    number: int
    status: str
    rho: Fraction
    epsilon: float
    delta: float
    methods: tuple[tuple[str, str], ...]
    conversion: str
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "status": self.status, "rho": float(self.rho),
                "epsilon": self.epsilon, "delta": self.delta, "methods": dict(self.methods),
                "conversion": self.conversion, "at": self.at}


class SessionLedger:
    """Privacy spent on one database across run attempts, with an optional session cap.

    Args:
        database: Name of the database (for the messages).
        epsilon, delta: The session cap (both, or neither for no cap).

    Thread-safe: runs record from their worker threads while a view reads.
    """

    def __init__(self, database: str = "database", *, epsilon: float | None = None,
                 delta: float | None = None) -> None:
        self.database = database
        self._lock = threading.RLock()
        self._cap: tuple[float, float] | None = None
        self._attempts: list[SessionAttempt] = []
        self._entries: list[tuple[int, Any]] = []  # (attempt number, LedgerEntry)
        self._cap_labels: set[str] = set()
        self._reserved: dict[int, tuple[Fraction, str]] = {}
        self._next_key = 0
        self._observers = Observers(logging.getLogger(__name__))
        self._acc: Accountant | None = None
        if epsilon is not None or delta is not None:
            self.set_cap(epsilon, delta)  # type: ignore[arg-type]

    # -- the cap ---------------------------------------------------------------------------------
    @property
    def cap(self) -> tuple[float, float] | None:
        """The session cap ``(ε, δ)``, or ``None``."""
        return self._cap

    def set_cap(self, epsilon: float | str | None, delta: float | str | None = None) -> str:
        """Set the session cap (ε, δ); ``delta`` defaults to the current cap's δ, else 1e-6.

        ``epsilon=None`` (or an empty string) removes the cap.

        Returns:
            A sentence saying what the cap is now.

        Raises:
            ValueError: with the reason, when ε is not a positive finite number or δ not in
                (0, 1); the cap is then unchanged.
        """
        if epsilon is None or (isinstance(epsilon, str) and not epsilon.strip()):
            with self._lock:
                self._cap = None
                self._acc = None
            self._notify()
            return "no session cap: nothing is refused, but every run still adds to the total"
        try:
            eps = float(epsilon)
        except (TypeError, ValueError):
            raise ValueError(f"the session cap ε must be a number (got {epsilon!r})") from None
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"the session cap ε must be a positive finite number (got {epsilon!r})")
        if delta is None or (isinstance(delta, str) and not delta.strip()):
            dlt = self._cap[1] if self._cap is not None else 1e-6
        else:
            try:
                dlt = float(delta)
            except (TypeError, ValueError):
                raise ValueError(f"the session cap δ must be a number (got {delta!r})") from None
        if not 0 < dlt < 1:
            raise ValueError(f"the session cap δ must be in (0, 1) (got {delta!r})")
        with self._lock:
            self._cap = (eps, dlt)
            self._acc = None
            known = any(a.rho > 0 for a in self._attempts)
            conv = self._conversion()
            rho = self._cap_rho(conv)
        self._notify()
        if not known:  # its ρ depends on the conversion of the runs to come
            return f"session cap: ε = {eps:g}, δ = {dlt:g}"
        return (f"session cap: ε = {eps:g}, δ = {dlt:g} (ρ = {_fmt(rho)} under the "  # type: ignore[arg-type]
                f"{_conversion_text(conv)} of this session's runs)")

    def _cap_rho(self, conversion: str) -> Fraction | None:
        if self._cap is None:
            return None
        return Fraction(rho_from_epsilon_delta(self._cap[0], self._cap[1], conversion))  # type: ignore[arg-type]

    # -- what was spent --------------------------------------------------------------------------
    @property
    def attempts(self) -> tuple[SessionAttempt, ...]:
        with self._lock:
            return tuple(self._attempts)

    def _conversion(self, extra: str | None = None) -> str:
        convs = [a.conversion for a in self._attempts if a.rho > 0] + ([extra] if extra else [])
        return "gdp" if convs and all(c == "gdp" for c in convs) else "zcdp"

    @property
    def conversion(self) -> str:
        """How the session converts its total ρ to (ε, δ) (``"gdp"`` or ``"zcdp"``)."""
        with self._lock:
            return self._conversion()

    @property
    def delta(self) -> float:
        """The δ the session's ε is reported at: the cap's, else the first attempt's (1e-6 before)."""
        with self._lock:
            if self._cap is not None:
                return self._cap[1]
            return self._attempts[0].delta if self._attempts else 1e-6

    @property
    def accountant(self) -> Accountant:
        """The session's accountant: every release of every attempt, in order (exact ρ)."""
        with self._lock:
            if self._acc is None:
                spent = sum((e.rho for _, e in self._entries), Fraction(0))
                conv = self._conversion()
                cap = self._cap_rho(conv)
                total = spent if cap is None or cap < spent else cap
                acc = Accountant(total, delta=self.delta, epsilon=None if self._cap is None else self._cap[0],
                                 conversion=conv,  # type: ignore[arg-type]
                                 unit=f"session ledger of {self.database}")
                for number, e in self._entries:
                    acc.charge(e.label, e.rho, component=f"run #{number} · {e.component}", module=e.module,
                               mechanism=e.mechanism, sensitivity=e.sensitivity, sigma=e.sigma,
                               epsilon_em=e.epsilon_em, count=e.count, source=e.source, sampler=e.sampler)
                self._acc = acc
            return self._acc

    def spent(self) -> Fraction:
        """Exact ρ spent by every attempt so far."""
        with self._lock:
            return sum((e.rho for _, e in self._entries), Fraction(0))

    def epsilon_spent(self, delta: float | None = None) -> float:
        """ε at ``delta`` (default :attr:`delta`) of everything spent so far."""
        with self._lock:
            spent = self.spent()
            return 0.0 if spent == 0 else epsilon_from_rho(float(spent), delta or self.delta,
                                                           self._conversion())  # type: ignore[arg-type]

    def reserved(self) -> Fraction:
        """ρ held for the attempts running now (their plans' full budgets)."""
        with self._lock:
            return sum((r for r, _ in self._reserved.values()), Fraction(0))

    def remaining(self) -> Fraction | None:
        """ρ the cap leaves (after the running attempts' reservations); ``None`` without a cap."""
        with self._lock:
            cap = self._cap_rho(self._conversion())
            if cap is None:
                return None
            return max(cap - self.spent() - self.reserved(), Fraction(0))

    # -- fitting a plan --------------------------------------------------------------------------
    def need(self, plan: Plan, schema: Schema | None = None) -> tuple[Fraction, str]:
        """``(ρ, conversion)`` a run of ``plan`` on ``schema`` may spend: its plan's ρ plus the DP
        caps of the schema not charged to the session yet; and the run's conversion."""
        from relviz.privacy.caps import cap_releases_rho

        try:
            need = Fraction(plan.rho_total)
        except (ValueError, ArithmeticError, TypeError):  # an unusable plan: its run fails unread
            need = Fraction(0)
        conv = plan.resolved_conversion()
        unit = schema.privacy_unit if schema is not None else None
        if unit is not None and cap_releases_rho(schema):
            conv = "zcdp" if conv == "gdp" else conv  # a cap release is an exponential mechanism
            for fk, src in unit.cap_sources.items():
                if src.get("how") == "dp" and _cap_label(fk, src, unit.caps.get(fk)) not in self._cap_labels:
                    need += Fraction(src["rho"])
        return need, conv

    def cap_for(self, plan: Plan, schema: Schema | None = None) -> tuple[Fraction, Fraction] | None:
        """``(cap ρ, ρ left)`` as a run of ``plan`` would be checked: the cap converted under the
        session's conversion once that run joins it (``None`` without a cap)."""
        with self._lock:
            if self._cap is None:
                return None
            _, conv = self.need(plan, schema)
            cap = self._cap_rho(self._conversion("gdp" if conv == "gdp" else "zcdp"))
            assert cap is not None
            return cap, max(cap - self.spent() - self.reserved(), Fraction(0))

    def refusal(self, plan: Plan, schema: Schema | None = None) -> str | None:
        """Why a run of ``plan`` may not start under the session cap (``None`` when it fits)."""
        with self._lock:
            if self._cap is None:
                return None
            need, conv = self.need(plan, schema)
            session_conv = self._conversion("gdp" if conv == "gdp" else "zcdp")
            cap = self._cap_rho(session_conv)
            assert cap is not None
            spent, held = self.spent(), self.reserved()
            if spent + held + need <= cap:
                return None
            left = max(cap - spent - held, Fraction(0))
            eps_cap, delta_cap = self._cap
            runs = len(self._attempts)
            done = (f"{runs} earlier run{'s' if runs != 1 else ''} on {self.database} spent ρ = {_fmt(spent)}"
                    if runs else f"nothing was spent on {self.database} yet")
            if held:
                done += f" and a running attempt holds ρ = {_fmt(held)}"
            try:
                eps_left = epsilon_from_rho(float(left), plan.delta, conv) if left > 0 else 0.0  # type: ignore[arg-type]
            except (ValueError, ArithmeticError):
                eps_left = 0.0
            advice = (f"lower ε in the Budget tab to at most about {eps_left:.3g} (at δ = {plan.delta:g}), "
                      "or raise the session cap" if eps_left > 0 else
                      "the session cap is used up: raise it (knowing that the data have already been "
                      "used this much) or stop here")
            return (f"this run needs ρ = {_fmt(need)} (ε = {plan.epsilon:g}, δ = {plan.delta:g}), but the "
                    f"session cap ε = {eps_cap:g}, δ = {delta_cap:g} allows ρ = {_fmt(cap)} in all and "
                    f"{done}: only ρ = {_fmt(left)} is left. Every run on the same data spends privacy "
                    f"again; {advice}")

    def reserve(self, plan: Plan, schema: Schema | None = None) -> int:
        """Hold a running attempt's budget (call before it reads any data).

        Returns:
            A key for :meth:`record` (or :meth:`release`).

        Raises:
            BudgetError: with :meth:`refusal`'s reason when the plan does not fit.
        """
        with self._lock:
            reason = self.refusal(plan, schema)
            if reason is not None:
                raise BudgetError(f"refused by the session ledger: {reason}")
            self._next_key += 1
            key = self._next_key
            self._reserved[key] = self.need(plan, schema)
        self._notify()
        return key

    def release(self, key: int) -> None:
        """Drop a reservation without recording anything (an attempt that never started)."""
        with self._lock:
            self._reserved.pop(key, None)
        self._notify()

    def record(self, accountant: Accountant | None, *, plan: Plan, status: str,
               key: int | None = None) -> SessionAttempt:
        """Charge a finished attempt's ledger to the session (and drop its reservation).

        Args:
            accountant: The attempt's accountant (``None``: it spent nothing).
            plan: The attempt's plan (for the (ε, δ) and methods shown).
            status: ``"done"``, ``"cancelled"`` or ``"failed"``.
            key: The reservation from :meth:`reserve`, if any.
        """
        entries = list(accountant.ledger) if accountant is not None else []
        with self._lock:
            if key is not None:
                self._reserved.pop(key, None)
            number = len(self._attempts) + 1
            rho = Fraction(0)
            for e in entries:
                if e.component == _CAPS:
                    if e.label in self._cap_labels:
                        continue  # released once, before the runs: counted once
                    self._cap_labels.add(e.label)
                self._entries.append((number, e))
                rho += e.rho
            conv = accountant.conversion if accountant is not None else plan.resolved_conversion()
            attempt = SessionAttempt(number, status, rho, plan.epsilon, plan.delta,
                                     tuple((c.name, c.method) for c in plan.components), conv, time.time())
            self._attempts.append(attempt)
            self._acc = None
        self._notify()
        return attempt

    # -- views -----------------------------------------------------------------------------------
    def observe(self, callback: Callable[[SessionLedger], None]) -> Callable[[], None]:
        """Call ``callback(ledger)`` after every change; returns a function that unsubscribes."""
        return self._observers.add(callback)

    def _notify(self) -> None:
        self._observers.notify(self)

    def summary(self) -> dict[str, Any]:
        """JSON-able totals for a view."""
        with self._lock:
            conv = self._conversion()
            cap = self._cap_rho(conv)
            spent = self.spent()
            return {"database": self.database, "attempts": [a.to_dict() for a in self._attempts],
                    "rho_spent": float(spent), "epsilon_spent": self.epsilon_spent(), "delta": self.delta,
                    "conversion": conv,
                    "cap": None if self._cap is None else {"epsilon": self._cap[0], "delta": self._cap[1],
                                                           "rho": float(cap)},  # type: ignore[arg-type]
                    "reserved": float(self.reserved()),
                    "remaining": None if cap is None else float(max(cap - spent - self.reserved(), 0))}

    def __str__(self) -> str:
        s = self.summary()
        cap = ("no session cap" if s["cap"] is None else
               f"cap ε = {s['cap']['epsilon']:g}, δ = {s['cap']['delta']:g} (ρ = {_fmt(s['cap']['rho'])}), "
               f"ρ = {_fmt(s['remaining'])} left")
        return (f"session ledger of {self.database}: {len(s['attempts'])} run(s) spent ρ = "
                f"{_fmt(s['rho_spent'])} (ε ≈ {s['epsilon_spent']:.3g} at δ = {s['delta']:g}); {cap}")

    def __repr__(self) -> str:
        return f"SessionLedger({self.database!r}, attempts={len(self._attempts)}, rho={float(self.spent()):.4g})"


_REGISTRY: dict[str, SessionLedger] = {}
_REGISTRY_LOCK = threading.Lock()


def session_ledger(db: Database | str) -> SessionLedger:
    """The session ledger of a database in this Python session (one per database name).

    A new Studio or run panel on the same data continues the same ledger: re-creating the view
    does not give the budget back.
    """
    name = db if isinstance(db, str) else (db.schema.name or "database")
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            _REGISTRY[name] = SessionLedger(name)
        return _REGISTRY[name]
