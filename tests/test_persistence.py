"""A fitted synthesizer pickles, saves and loads (``RelationalSynthesizer.save`` / ``load``),
and a release file keeps no noise seed and no curator view."""

from __future__ import annotations

import pickle
from fractions import Fraction
from pathlib import Path

import pytest

from relviz.database import Database
from relviz.errors import BudgetError, NotFittedError
from relviz.plan import Plan
from relviz.synthesizer import RelationalSynthesizer
from tests.privacy.neighbours import (
    database_methods,
    fixed_household_db,
    household_person_schema,
    make_database_plan,
)

#: What only the curator may hold: the noise seed and the curator views (not a release).
SECRET = ("seed_", "random_state", "cap_report_", "curator_log_", "fit_seconds_")


def _equal(a: Database, b: Database) -> bool:
    return a.table_names == b.table_names and all(a[t].equals(b[t]) for t in a.table_names)


def _fits() -> list[tuple[str, Database, Plan]]:
    """The tiny database on a table mechanism + the degree linker, and the household-person
    database on every database method that accepts it."""
    from tests.conftest import tiny_frames, tiny_schema
    tiny = Database(tiny_schema(), tiny_frames())
    out = [("degree", tiny, Plan.default(tiny.schema, 1.0, 1e-6, mechanism="independent"))]
    full = fixed_household_db(7, seed=3, persons=(1, 3))
    schema = household_person_schema()
    db = Database(schema, {"households": full["households"].drop(columns="region"),
                           "persons": full["persons"]})
    for method in database_methods():
        plan = make_database_plan(schema, method)
        if plan is not None:
            out.append((method, db, plan))
    return out


FITS = _fits()


@pytest.mark.parametrize(("method", "db", "plan"), FITS, ids=[f[0] for f in FITS])
def test_pickled_synthesizer_samples_the_same_and_keeps_its_budget(method: str, db: Database,
                                                                   plan: Plan) -> None:
    """A pickle round trip (what ``joblib`` and ``save()`` do) keeps the fitted state: the
    default draw and a seeded draw are the same databases, the ledger is the same, and the
    loaded accountant still refuses a charge past its total (its lock is a fresh one)."""
    events = []
    synth = RelationalSynthesizer(plan, random_state=4, progress=lambda e: events.append(e))
    synth.fit(db)
    copy = pickle.loads(pickle.dumps(synth))
    assert copy.progress is None  # a live view's callback is not saved
    assert _equal(copy.sample(), synth.sample())
    assert _equal(copy.sample(random_state=9), synth.sample(random_state=9))
    assert copy.accountant_.to_dict() == synth.accountant_.to_dict()
    spent = synth.accountant_.spent()
    assert copy.accountant_.spent() == spent > 0
    with pytest.raises(BudgetError):  # more than is left, whatever the method left unspent
        copy.accountant_.charge("more", copy.accountant_.remaining() + Fraction(1, 10**9),
                                component=plan.components[0].name,
                                module="test", mechanism="gaussian", sensitivity=1.0, sigma=1.0)
    assert copy.accountant_.spent() == spent  # the refused charge left no trace
    copy.cancel()  # a fresh token: cancel, then a later sample resets it and runs
    assert copy.sample().problems() == []


def test_save_and_load_the_curator_file(tmp_path: Path) -> None:
    """The curator's file keeps everything (the seed, the read log); a count backend object
    (DuckDB: a connection) is kept by its name."""
    from relviz.privacy.backends import DuckDBBackend

    method, db, plan = FITS[0]
    synth = RelationalSynthesizer(plan, random_state=2, backend=DuckDBBackend()).fit(db)
    path = synth.save(tmp_path / "synth.pkl")
    loaded = RelationalSynthesizer.load(path)
    assert loaded.seed_ == synth.seed_ and len(loaded.curator_log_) == len(synth.curator_log_)
    assert loaded.backend == "duckdb"
    assert _equal(loaded.sample(), synth.sample())


@pytest.mark.parametrize(("method", "db", "plan"), FITS, ids=[f[0] for f in FITS])
def test_release_file_holds_no_seed_and_no_curator_view(tmp_path: Path, method: str,
                                                         db: Database, plan: Plan) -> None:
    """``save(release=True)`` keeps only ``RELEASE_STATE``: the noise seed (from which every noise
    draw could be recomputed and removed) and the curator views are gone, the models and ledger
    are kept, and the loaded synthesizer samples valid databases: a fresh seed per default draw,
    the same database for the same ``random_state``."""
    seed = 918_273_645
    synth = RelationalSynthesizer(plan, random_state=seed).fit(db)
    path = synth.save(tmp_path / "release.pkl", release=True)
    assert seed.to_bytes(4, "little") not in path.read_bytes()  # how pickle writes the int
    assert seed.to_bytes(4, "little") in synth.save(tmp_path / "curator.pkl").read_bytes()
    loaded = RelationalSynthesizer.load(path)
    assert set(vars(loaded)) - {"_token", "progress", "_fit_codes", "_reported_sizes"} \
        <= set(RelationalSynthesizer.RELEASE_STATE) | {"seed_", "random_state"}
    assert loaded.seed_ is None and loaded.random_state is None
    for name in SECRET[2:]:
        assert not hasattr(loaded, name)
    assert loaded.accountant_.to_dict() == synth.accountant_.to_dict()
    a, b = loaded.sample(random_state=1), loaded.sample(random_state=1)
    assert _equal(a, b) and a.problems() == []
    assert set(a.table_names) == set(db.table_names)
    # the fitted models are kept: the same seed gives what the curator's synthesizer gives
    # where sampling reads no fit-time draw (every method here samples from its models only)
    assert _equal(a, synth.sample(random_state=1))


def test_save_before_fit_and_load_of_other_files(tmp_path: Path) -> None:
    with pytest.raises(NotFittedError):
        RelationalSynthesizer().save(tmp_path / "x.pkl")
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"relviz": "0", "synthesizer": 3}))
    with pytest.raises(TypeError, match="holds no RelationalSynthesizer"):
        RelationalSynthesizer.load(other)
    method, db, plan = FITS[0]
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    old = tmp_path / "old.pkl"
    old.write_bytes(pickle.dumps({"relviz": "0.0.0", "release": False, "synthesizer": synth}))
    with pytest.warns(UserWarning, match="written by relviz 0.0.0"):
        assert RelationalSynthesizer.load(old).fitted_


def test_release_folder_drops_an_earlier_release_s_other_tables(tmp_path: Path) -> None:
    """``write_release`` into a folder holding an earlier release: a ``tables/<t>.parquet`` of a
    table this database does not have is removed (the folder holds one release), while a
    non-Parquet file under ``tables/`` is refused with nothing written."""
    import pandas as pd

    from relviz.release import write_release

    _, db, plan = FITS[0]
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    syn = synth.sample()
    out = tmp_path / "release"
    (out / "tables").mkdir(parents=True)
    pd.DataFrame({"x": [1, 2]}).to_parquet(out / "tables" / "gone.parquet")
    write_release(out, synth, syn)
    assert sorted(p.name for p in (out / "tables").iterdir()) == sorted(
        f"{t}.parquet" for t in syn.table_names)
    other = tmp_path / "other"
    (other / "tables").mkdir(parents=True)
    (other / "tables" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="tables/notes.txt"):
        write_release(other, synth, syn)
    assert sorted(p.name for p in other.rglob("*")) == ["notes.txt", "tables"]
