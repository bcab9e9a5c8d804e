"""Warm a fresh kernel's first fit in the background (JAX's start-up and first compiles).

The first :class:`~relviz.synthesizer.RelationalSynthesizer` fit in a fresh process pays for
importing JAX and mbi, starting XLA's CPU backend and compiling mbi's estimation code. The Studio
calls :func:`start_background_warmup` when it opens, so that this happens while the user reads the
schema, not after Launch.

What runs: one fit, and no sample, of the default plan (MST per table, degree histograms per
foreign key) on a tiny **public synthetic** database drawn here from a fixed seed — two tables of
at most a few hundred rows with made-up values. No user data is read, nothing is released and
nothing is kept: the fit is seeded (numpy noise), its result is dropped. Sampling is left out on
purpose: mbi samples with numpy's global generator, which a run launched at the same time seeds
for its own sampling.

JAX compiles per array shape, and the shapes of a real run (its domains and the tree MST picks)
differ from the tiny one's, so the warm-up removes the shape-independent part of the first fit's
extra cost (imports, backend start, the tracing machinery), not all of it. Measured on
nycflights13 (default plan, one thread, a shared 2-core machine; ``python
benchmarks/evaluate_speed.py --warmup``), twice: a cold first fit took 28 s and 19 s of CPU, the
first fit after the warm-up 20 s and 16 s, a second fit 2 s; the warm-up itself 11–20 s of wall
time in the background. Warming on a 500-flight sample of the real data instead (the same
domains) saved little more (16 s against 20 s in the first measurement) and would read private
rows, so it is not done.

>>> from relviz.single.warmup import start_background_warmup, warmup_status
>>> thread = start_background_warmup()   # at once; a second call gives the same thread  # doctest: +SKIP
>>> # RELVIZ_WARMUP=0 in the environment turns it off
>>> warmup_status()["state"] in ("running", "done")                           # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

__all__ = ["start_background_warmup", "tiny_public_database", "warmup", "warmup_status"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_thread: threading.Thread | None = None
_status: dict[str, Any] = {"state": "idle", "seconds": None, "error": None}


def tiny_public_database(n_parents: int = 40, n_children: int = 300, seed: int = 0):  # noqa: ANN201 - Database
    """A made-up two-table database (``groups`` 1:N ``items``) from a fixed seed: no user data.

    Returns:
        A validated :class:`~relviz.database.Database` with a row-unit privacy schema.
    """
    import numpy as np
    import pandas as pd

    from relviz.database import Database
    from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

    rng = np.random.default_rng(seed)
    groups = Table("groups", ("gid",), (Attribute.categorical("kind", ["a", "b", "c"]),
                                        Attribute.numeric("size", 0, 100, bins=8)))
    items = Table("items", ("iid",), (Attribute.categorical("colour", ["red", "green", "blue", "grey"]),
                                      Attribute.numeric("weight", 0, 10, bins=10),
                                      Attribute.categorical("flag", ["yes", "no"])))
    fk = ForeignKey("items", ("gid",), "groups")
    schema = Schema((groups, items), (fk,), PrivacyUnit(None, {fk.name: 20}), name="warm-up")
    frames = {
        "groups": pd.DataFrame({"gid": np.arange(n_parents), "kind": rng.choice(["a", "b", "c"], n_parents),
                                "size": rng.uniform(0, 100, n_parents).round(1)}),
        "items": pd.DataFrame({"iid": np.arange(n_children), "gid": rng.integers(0, n_parents, n_children),
                               "colour": rng.choice(["red", "green", "blue", "grey"], n_children),
                               "weight": rng.uniform(0, 10, n_children).round(2),
                               "flag": rng.choice(["yes", "no"], n_children)}),
    }
    return Database(schema, frames)


def warmup() -> float:
    """Fit the default plan on :func:`tiny_public_database` once (no sample); return the seconds."""
    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer

    t0 = time.perf_counter()
    db = tiny_public_database()
    RelationalSynthesizer(Plan.default(db.schema, 1.0, 1e-6), random_state=0).fit(db)
    return time.perf_counter() - t0


def _run() -> None:
    try:
        seconds = warmup()
    except Exception as e:  # noqa: BLE001 - a failed warm-up only means a slower first fit: say so, go on
        with _lock:
            _status.update(state="failed", error=f"{type(e).__name__}: {e}")
        log.warning("relviz warm-up failed (the first fit will only be slower): %s: %s", type(e).__name__, e)
        return
    with _lock:
        _status.update(state="done", seconds=seconds)
    log.debug("relviz warm-up done in %.1f s", seconds)


def start_background_warmup() -> threading.Thread | None:
    """Start :func:`warmup` in a daemon thread, once per process; never blocks.

    ``RELVIZ_WARMUP=0`` in the environment turns it off (``None`` is returned).

    Returns:
        The warm-up thread (the same one on every call; ``join()`` it to wait), or ``None``.
    """
    global _thread
    if os.environ.get("RELVIZ_WARMUP", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    with _lock:
        if _thread is None:
            _status["state"] = "running"
            _thread = threading.Thread(target=_run, name="relviz-warmup", daemon=True)
            _thread.start()
        return _thread


def warmup_status() -> dict[str, Any]:
    """``{"state": "idle" | "running" | "done" | "failed", "seconds", "error"}`` (a copy)."""
    with _lock:
        return dict(_status)
