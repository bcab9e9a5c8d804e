"""relviz.sweep's cache: the stakeholder page's ε sweep read from a file keyed by what decides it
(issue 14, item 5), and ``relviz demo-cache``."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path

import numpy as np
import pytest

import relviz
from relviz import sweep as sw
from relviz.cli import main
from relviz.database import Database
from relviz.plan import Plan


@pytest.fixture(scope="module")
def small_sweep(tiny_pair: tuple[Database, Database]) -> sw.EpsilonSweep:
    real, _ = tiny_pair
    plan = Plan.default(real.schema, 1.0, 1e-6, mechanism="independent")
    return sw.epsilon_sweep(real, [4.0, 0.5], plan=plan)


@pytest.fixture()
def fast_sweeps(monkeypatch: pytest.MonkeyPatch, tiny_pair: tuple[Database, Database]) -> list[tuple]:
    """``cached_epsilon_sweep`` computes on the tiny database with independent marginals (seconds, not
    minutes); returns the list of computations made."""
    real, _ = tiny_pair
    calls: list[tuple] = []
    original = sw.epsilon_sweep

    def fake(db, epsilons, **kw):  # noqa: ANN001, ANN202
        calls.append((tuple(epsilons), kw.get("delta"), kw.get("random_state")))
        plan = Plan.default(real.schema, 1.0, 1e-6, mechanism="independent")
        return original(real, epsilons, plan=plan, **kw)

    monkeypatch.setattr(sw, "epsilon_sweep", fake)
    monkeypatch.setattr(relviz.datasets, "load", lambda name, **params: real)
    return calls


def _same(a: sw.EpsilonSweep, b: sw.EpsilonSweep) -> None:
    assert a.epsilons == b.epsilons and a.delta == b.delta and a.rho == b.rho
    assert a.frame().equals(b.frame()) and a.timings().equals(b.timings())
    assert a.foreign_keys == b.foreign_keys
    for e in a.epsilons:
        for name, d in a.summaries[e]["degrees"].items():
            d2 = b.summaries[e]["degrees"][name]
            assert d2.fk == d.fk and np.array_equal(d2.real, d.real) and np.array_equal(d2.synthetic, d.synthetic)
            assert d2.score == d.score or (math.isnan(d.score) and math.isnan(d2.score))
        for k in ("two_way_tvd", "mean_two_way_tvd", "mean_cross_table_error"):
            x, y = a.summaries[e][k], b.summaries[e][k]
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))


def test_round_trip_through_json(small_sweep: sw.EpsilonSweep) -> None:
    text = json.dumps(small_sweep.to_dict())
    back = sw.EpsilonSweep.from_dict(json.loads(text))
    _same(small_sweep, back)
    assert back.meta["plan"] == small_sweep.meta["plan"]
    assert {m for _, kind, m in back.meta["plan"] if kind == "table"} == {"independent"}
    # the real degrees are stored once, not per ε
    assert text.count('"real_degrees"') == 1 and '"synthetic_degrees"' in text


def test_save_and_load_with_the_key(small_sweep: sw.EpsilonSweep, tmp_path: Path) -> None:
    key = sw.cache_key("tiny", [0.5, 4], delta=1e-6, seed=0)
    path = sw.save_sweep(small_sweep, key, sw.cache_path(key, tmp_path))
    assert path.parent == tmp_path and path.name.startswith("tiny-") and path.suffix == ".json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # real degrees inside: owner only
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    back = sw.load_cached_sweep(key, tmp_path)
    assert back is not None
    _same(small_sweep, back)
    assert back.meta["key"] == key and back.meta["path"] == str(path) and back.meta["created"]
    # the grid's order does not matter; anything else in the key does
    assert sw.load_cached_sweep(sw.cache_key("tiny", [4, 0.5], delta=1e-6, seed=0), tmp_path) is not None
    for other in (sw.cache_key("tiny", [0.5, 1, 4], delta=1e-6, seed=0),
                  sw.cache_key("tiny", [0.5, 4], delta=1e-5, seed=0),
                  sw.cache_key("tiny", [0.5, 4], delta=1e-6, seed=1),
                  sw.cache_key("tiny", [0.5, 4], delta=1e-6, seed=0, k=2),
                  sw.cache_key("tiny", [0.5, 4], delta=1e-6, seed=None),
                  sw.cache_key("galton", [0.5, 4], delta=1e-6, seed=0)):
        assert sw.load_cached_sweep(other, tmp_path) is None


def test_a_stale_file_is_never_read(small_sweep: sw.EpsilonSweep, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    key = sw.cache_key("tiny", [0.5, 4])
    path = sw.save_sweep(small_sweep, key, sw.cache_path(key, tmp_path))
    # another relviz version, other relviz sources, another numpy: other keys
    monkeypatch.setattr(relviz, "__version__", "9.9.9")
    assert sw.load_cached_sweep(sw.cache_key("tiny", [0.5, 4]), tmp_path) is None
    monkeypatch.undo()
    monkeypatch.setattr(sw, "_SOURCE_DIGEST", "0" * 64)
    assert sw.load_cached_sweep(sw.cache_key("tiny", [0.5, 4]), tmp_path) is None
    monkeypatch.undo()
    monkeypatch.setattr(sw, "_versions", lambda: {"numpy": "0.0"})
    assert sw.load_cached_sweep(sw.cache_key("tiny", [0.5, 4]), tmp_path) is None
    monkeypatch.undo()
    assert sw.load_cached_sweep(key, tmp_path) is not None
    # a file under the right name whose stored key differs (edited, or a hash collision) is a miss
    stored = json.loads(path.read_text())
    stored["key"]["seed"] = 7
    path.write_text(json.dumps(stored))
    assert sw.load_cached_sweep(key, tmp_path) is None
    path.write_text("{not json")
    assert sw.load_cached_sweep(key, tmp_path) is None


def test_source_digest_covers_the_computation_not_the_widgets() -> None:
    root = Path(sw.__file__).resolve().parent
    files = {f.relative_to(root).as_posix() for f in root.rglob("*.py")}
    assert {"synthesizer.py", "sweep.py", "single/mst.py", "evaluate/degree.py"} <= files
    assert not any(f.startswith(sw._NOT_IN_DIGEST) for f in
                   ("synthesizer.py", "sweep.py", "single/mst.py", "evaluate/degree.py", "comparison.py"))
    assert all(f.startswith(sw._NOT_IN_DIGEST) for f in ("ui/studio.py", "cli.py", "plots.py", "pages.py"))
    assert len(sw._source_digest()) == 64


def test_cached_sweep_computes_once(fast_sweeps: list[tuple], tmp_path: Path) -> None:
    steps: list[float] = []
    first, hit = sw.cached_epsilon_sweep("nycflights13", [4, 0.5], cache_dir=tmp_path,
                                         progress=lambda f, m: steps.append(f))
    assert not hit and fast_sweeps == [((0.5, 4.0), 1e-6, 0)] and steps[-1] == 1.0
    assert Path(first.meta["path"]).exists()
    again, hit = sw.cached_epsilon_sweep("nycflights13", [0.5, 4], cache_dir=tmp_path)
    assert hit and len(fast_sweeps) == 1  # read, not recomputed
    _same(first, again)
    _, hit = sw.cached_epsilon_sweep("nycflights13", [0.5, 4], cache_dir=tmp_path, refresh=True)
    assert not hit and len(fast_sweeps) == 2
    _, hit = sw.cached_epsilon_sweep("nycflights13", [0.5, 4], delta=1e-5, cache_dir=tmp_path)
    assert not hit and len(fast_sweeps) == 3 and len(list(tmp_path.glob("*.json"))) == 2


def test_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RELVIZ_CACHE_DIR", str(tmp_path / "rc"))
    assert sw.cache_root() == tmp_path / "rc" / "sweeps"
    monkeypatch.delenv("RELVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sw.cache_root() == tmp_path / "xdg" / "relviz" / "sweeps"
    assert sw.cache_root(tmp_path / "x") == tmp_path / "x"


def test_demo_grid_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELVIZ_DEMO_EPSILONS", raising=False)
    assert sw.demo_epsilons() == sw.DEMO_EPSILONS
    monkeypatch.setenv("RELVIZ_DEMO_EPSILONS", "4, 0.5")
    assert sw.demo_epsilons() == (0.5, 4.0)


def test_cli_demo_cache(fast_sweeps: list[tuple], tmp_path: Path, capsys: pytest.CaptureFixture,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELVIZ_DEMO_EPSILONS", "0.5,4")
    assert main(["demo-cache", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "nycflights13, ε ∈ {0.5, 4}, δ = 1e-06, seed 0: computed 2 runs" in out.out
    assert "curator view" in out.out and "ε = 4: fitting (2/2)" in out.err
    path = Path(out.out.splitlines()[1])
    assert path.parent == tmp_path and path.exists()
    assert fast_sweeps == [((0.5, 4.0), 1e-6, 0)]
    assert main(["demo-cache", "--cache-dir", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr()
    assert "already cached" in out.out and out.out.splitlines()[1] == str(path) and out.err == ""
    assert main(["demo-cache", "--cache-dir", str(tmp_path), "--epsilons", "1,2", "--seed", "3",
                 "--quiet"]) == 0
    assert fast_sweeps[-1] == ((1.0, 2.0), 1e-6, 3)
