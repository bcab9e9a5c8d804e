"""relviz.single.warmup: the Studio warms JAX in the background on made-up data (issue 14, item 7)."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from relviz.single import warmup as wu


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not warmed up yet (the module's once-per-process state reset)."""
    monkeypatch.setattr(wu, "_thread", None)
    monkeypatch.setattr(wu, "_status", {"state": "idle", "seconds": None, "error": None})
    monkeypatch.delenv("RELVIZ_WARMUP", raising=False)


def test_tiny_public_database_is_made_up_and_declared() -> None:
    db = wu.tiny_public_database()
    assert db.schema.table_names == ("groups", "items")
    assert len(db["groups"]) == 40 and len(db["items"]) == 300
    assert db.schema.inferred_problems() == []  # every domain declared: fit() accepts it as is
    again = wu.tiny_public_database()
    assert all(db[t].equals(again[t]) for t in db.schema.table_names)  # a fixed seed


@pytest.mark.slow
def test_warmup_fits_without_sampling() -> None:
    """One fit of the default plan (MST + degree); numpy's global generator is left alone, so a
    run sampling at the same time (mbi samples with it) is not disturbed. (Importing JAX draws
    from it once, jax/_src/clusters/k8s_cluster.py — as any first run's import does.)"""
    from relviz.mbi_runtime import import_mbi

    import_mbi()
    state = np.random.get_state()
    seconds = wu.warmup()
    assert seconds > 0
    after = np.random.get_state()
    assert state[0] == after[0] and np.array_equal(state[1], after[1]) and state[2:] == after[2:]


def test_started_once_in_the_background(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    release, calls = threading.Event(), []

    def slow() -> float:
        calls.append(threading.current_thread().name)
        release.wait(10)
        return 1.5

    monkeypatch.setattr(wu, "warmup", slow)
    t = wu.start_background_warmup()  # returns while the warm-up still runs
    assert t is not None and t.daemon and t.is_alive()
    assert wu.warmup_status()["state"] == "running"
    assert wu.start_background_warmup() is t  # once per process
    release.set()
    t.join(10)
    assert calls == ["relviz-warmup"]
    assert wu.warmup_status() == {"state": "done", "seconds": 1.5, "error": None}
    assert wu.start_background_warmup() is t


def test_a_failed_warmup_is_logged_not_raised(fresh: None, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> float:
        raise RuntimeError("no backend")

    monkeypatch.setattr(wu, "warmup", broken)
    with caplog.at_level(logging.WARNING, logger="relviz.single.warmup"):
        t = wu.start_background_warmup()
        t.join(10)
    assert wu.warmup_status()["state"] == "failed"
    assert "RuntimeError: no backend" in wu.warmup_status()["error"]
    assert "warm-up failed" in caplog.text and "no backend" in caplog.text


def test_switched_off_by_the_environment(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELVIZ_WARMUP", "0")
    monkeypatch.setattr(wu, "warmup", lambda: pytest.fail("the warm-up ran"))
    assert wu.start_background_warmup() is None
    assert wu.warmup_status()["state"] == "idle"


def test_the_studio_starts_it(tiny_db, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipywidgets")
    import relviz
    from relviz.plan import Plan
    from relviz.ui import studio as st

    calls: list[int] = []
    monkeypatch.setattr(st, "start_background_warmup", lambda: calls.append(1))
    relviz.Studio(tiny_db, plan=Plan.default(tiny_db.schema, 1.0, 1e-6, mechanism="independent"), propose=False)
    assert calls == [1]
