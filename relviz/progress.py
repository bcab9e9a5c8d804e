"""Progress events and cancellation, shared by algorithms and views (no UI imports here).

Algorithms call a :class:`Reporter` between steps: it forwards a :class:`ProgressEvent` to the
user's callback and raises :class:`~relviz.errors.CancelledError` when the run's
:class:`CancelToken` is set, so a cancel takes effect at the next step and never in the middle
of a release (the ledger stays true).

Steps that report without a run around them (the evaluation, the comparisons, an ε sweep) take a
plain :data:`Progress` callback, ``progress(fraction, message)``; a :class:`Reporter` is one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from relviz.errors import CancelledError

__all__ = ["Progress", "ProgressEvent", "CancelToken", "Reporter", "Observers"]

Progress = Callable[[float, str], None]
"""A plain progress callback: ``progress(fraction in [0, 1], message)``."""


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Attributes:
        stage: ``"validate"``, ``"fit"``, ``"sample"``, ``"evaluate"``, ``"done"``…
        component: Table or FK name ("" for the run as a whole).
        fraction: Progress of this component in [0, 1].
        message: Short text for a status line.
        rho_spent: ρ spent by the whole run so far (float).
        elapsed: Seconds since the run started.
    """

    stage: str
    component: str
    fraction: float
    message: str
    rho_spent: float
    elapsed: float


class CancelToken:
    """A thread-safe cancel flag."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def reset(self) -> None:
        self._event.clear()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __getstate__(self) -> dict:  # an Event holds a lock: a copy starts uncancelled
        return {}

    def __setstate__(self, state: dict) -> None:
        self._event = threading.Event()


class Reporter:
    """Bound progress callback for one stage and component.

    Args:
        callback: User callback receiving :class:`ProgressEvent` (may be ``None``).
        token: Cancel token checked on every call.
        stage, component: Fixed fields of the events.
        rho_spent: Zero-argument function returning the run's ρ spent so far.
        start: Run start time (``time.perf_counter()``).
    """

    def __init__(self, callback: Callable[[ProgressEvent], None] | None, token: CancelToken,
                 stage: str, component: str, rho_spent: Callable[[], float],
                 start: float | None = None) -> None:
        self._callback = callback
        self._token = token
        self.stage = stage
        self.component = component
        self._rho_spent = rho_spent
        self._start = time.perf_counter() if start is None else start

    def __call__(self, fraction: float, message: str = "") -> None:
        """Report progress; raise :class:`CancelledError` if the run was cancelled."""
        if self._token.cancelled:
            raise CancelledError(f"cancelled during {self.stage} of {self.component or 'the run'}")
        if self._callback is not None:
            self._callback(ProgressEvent(self.stage, self.component, float(min(max(fraction, 0), 1)),
                                         message, self._rho_spent(),
                                         time.perf_counter() - self._start))

    def child(self, stage: str, component: str) -> Reporter:
        return Reporter(self._callback, self._token, stage, component, self._rho_spent, self._start)


def silent() -> Reporter:
    """A reporter that reports nothing and is never cancelled (for direct use and tests)."""
    return Reporter(None, CancelToken(), "", "", lambda: 0.0)


class Observers:
    """Thread-safe list of view callbacks of one object (a :class:`~relviz.run.Run`, a
    :class:`~relviz.privacy.session.SessionLedger`): ``add`` returns the function that removes
    the callback; ``notify(obj)`` calls each with ``obj`` and logs (never raises) a callback's
    failure, so a broken view cannot break the run or the accounting it watches."""

    def __init__(self, logger: logging.Logger) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable] = []
        self._log = logger

    def add(self, callback: Callable) -> Callable[[], None]:
        with self._lock:
            self._callbacks.append(callback)

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)
        return remove

    def notify(self, obj: object) -> None:
        with self._lock:
            callbacks = list(self._callbacks)
        for cb in callbacks:
            try:
                cb(obj)
            except Exception:  # noqa: BLE001 - a broken view must not break what it watches
                self._log.exception("observer %r of %s failed", cb, type(obj).__name__)
