"""Time of each evaluation step on nycflights13 (real vs a synthetic copy, random_state=0).

Run from the repository root::

    python benchmarks/evaluate_speed.py [--cache DIR] [--html PATH] [--embed-n N]
    python benchmarks/evaluate_speed.py --tsne [--embed-n N] [--repeat R]   # t-SNE settings only
    python benchmarks/evaluate_speed.py --warmup                           # first fit, cold vs warmed

The synthetic copy is made by ``RelationalSynthesizer(Plan.default(schema, 1.0, 1e-6),
random_state=0)`` (≈ 25 s the first time, JAX compile included) and cached as Parquet in ``--cache``
(default ``/tmp/relviz-bench/nycflights13``) with its ledger. Each step runs on a fresh pair of
databases (no cached codes) and prints wall and CPU seconds (CPU time is the steadier number on a
shared machine). Steps: encoding to public codes, validity, 1-way/2-way TVD, degrees, Column Shapes,
Column Pair Trends, Cardinality, Intertable Trends, the 3-way cross-table errors, association
matrices, a t-SNE embedding of ``--embed-n`` rows per side (0 to skip), the full QualityReport,
the RelationalReport and report.html (with its file size).

``--tsne`` times only the t-SNE map of ``flights`` (``--embed-n`` rows per side), ``--repeat``
times each: openTSNE's own defaults as relviz used them before issue 14 (Annoy neighbours,
Barnes–Hut with θ = 0.5, 250 + 500 iterations) against relviz's settings now (exact neighbours,
θ = 0.8, 125 + 250 iterations; docs in ``relviz.evaluate.embedding``), with wall and CPU seconds,
the time to the preview (the map after early exaggeration), the share of each row's 10 nearest
neighbours (in the encoded features) that stay among its 10 nearest on the map, and the detection
score.

``--warmup`` runs, each in a fresh interpreter: the first nycflights13 fit cold, and the first fit
after :func:`relviz.single.warmup.warmup` (the Studio's background warm-up), and a second fit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relviz  # noqa: E402
from relviz import evaluate as ev  # noqa: E402
from relviz.database import Database  # noqa: E402
from relviz.evaluate._common import codes  # noqa: E402


def synthetic_copy(db: Database, cache: Path) -> tuple[Database, dict | None]:
    """The cached synthetic nycflights13 (made with random_state=0 when absent)."""
    tables = cache / "tables"
    if not (tables / "flights.parquet").exists():
        from relviz.plan import Plan
        from relviz.synthesizer import RelationalSynthesizer

        t = time.perf_counter()
        synth = RelationalSynthesizer(Plan.default(db.schema, 1.0, 1e-6), random_state=0).fit(db)
        syn = synth.sample()
        print(f"synthesizer fit + sample: {time.perf_counter() - t:.1f} s (cached in {cache})")
        tables.mkdir(parents=True, exist_ok=True)
        for name in db.schema.table_names:
            syn[name].to_parquet(tables / f"{name}.parquet")
        (cache / "ledger.json").write_text(json.dumps(synth.accountant_.to_dict(), default=str))
    frames = {n: pd.read_parquet(tables / f"{n}.parquet") for n in db.schema.table_names}
    ledger_path = cache / "ledger.json"
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else None
    return Database(db.schema, frames), ledger


def knn_kept(x: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    """Mean share of each row's ``k`` nearest neighbours in ``x`` that are among its ``k`` nearest in ``y``."""
    from sklearn.neighbors import NearestNeighbors

    hi = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(return_distance=False)[:, 1:]
    lo = NearestNeighbors(n_neighbors=k + 1).fit(y).kneighbors(return_distance=False)[:, 1:]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(hi, lo)]))


TSNE_SETTINGS = {
    "before (openTSNE defaults: annoy, θ .5, 250+500)": {"neighbors": "annoy", "theta": 0.5,
                                                        "early_exaggeration_iter": 250, "n_iter": 500},
    "now (relviz defaults: exact, θ .8, 125+250)": {},
}


def tsne_bench(real: Database, syn: Database, n: int, repeat: int) -> None:
    """Time ``embed`` on flights with the settings of :data:`TSNE_SETTINGS` (wall, CPU, quality)."""
    from relviz.evaluate.embedding import encode_rows, rows_to_embed

    rdf, sdf, kinds, _ = rows_to_embed(real, syn, table="flights")
    picks = []
    for df in (rdf, sdf):  # the rows embed() samples (same seed)
        idx = np.sort(np.random.default_rng(0).choice(len(df), size=min(n, len(df)), replace=False))
        picks.append(df.iloc[idx].reset_index(drop=True))
    x = np.vstack(encode_rows(picks[0], picks[1], kinds)[:2])
    print(f"t-SNE of flights, {n:,} real + {n:,} synthetic rows, {x.shape[1]} features, n_jobs=1, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    for label, kw in TSNE_SETTINGS.items():
        for r in range(repeat):
            first: list[float] = []
            w, c = time.perf_counter(), time.process_time()
            emb = ev.embed(real, syn, table="flights", n=n, preview=lambda e, f=first: f.append(time.perf_counter()),
                           **kw)
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            xy = emb.frame[["x", "y"]].to_numpy()
            print(f"  {label:<50} run {r + 1}: {wall:6.1f} s wall {cpu:6.1f} s cpu, preview at "
                  f"{first[0] - w:5.1f} s; 10-NN kept {knn_kept(x, xy):.3f}, detection {emb.detection_score:.3f}",
                  flush=True)


def warmup_bench() -> None:
    """First fit in a fresh interpreter: cold, and after the Studio's warm-up."""
    code = """
import time, relviz
from relviz import Plan, RelationalSynthesizer
db = relviz.datasets.load("nycflights13")
if {warm}:
    from relviz.single.warmup import warmup
    print(f"  warm-up (tiny made-up database): {{warmup():.1f}} s wall", flush=True)
for what in ("first fit", "second fit"):
    w, c = time.perf_counter(), time.process_time()
    RelationalSynthesizer(Plan.default(db.schema, 1.0, 1e-6), random_state=0).fit(db)
    print(f"  {{what}}: {{time.perf_counter() - w:.1f}} s wall, {{time.process_time() - c:.1f}} s cpu", flush=True)
"""
    root = str(Path(__file__).resolve().parents[1])
    for warm in (False, True):
        print(("after the warm-up" if warm else "cold") + f" (load average {os.getloadavg()[0]:.1f}):", flush=True)
        subprocess.run([sys.executable, "-W", "ignore", "-c", code.format(warm=warm)], check=True, cwd=root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/relviz-bench/nycflights13")
    ap.add_argument("--html", default="/tmp/relviz-bench/nycflights13/report.html")
    ap.add_argument("--embed-n", type=int, default=2000)
    ap.add_argument("--tsne", action="store_true", help="time the t-SNE settings only")
    ap.add_argument("--repeat", type=int, default=2, help="runs per t-SNE setting (--tsne)")
    ap.add_argument("--warmup", action="store_true", help="first fit, cold vs after the warm-up")
    args = ap.parse_args()
    if args.warmup:
        warmup_bench()
        return

    t = time.perf_counter()
    real = relviz.datasets.load("nycflights13")
    print(f"load nycflights13: {time.perf_counter() - t:.1f} s")
    syn, ledger = synthetic_copy(real, Path(args.cache))
    if args.tsne:
        tsne_bench(real, syn, args.embed_n, args.repeat)
        return

    def fresh() -> tuple[Database, Database]:  # new objects: per-database caches start empty
        return Database(real.schema, real.tables, validate=False), Database(syn.schema, syn.tables, validate=False)

    rows: list[tuple[str, float, float, str]] = []

    def step(name: str, fn: Callable[[Database, Database], object], note: Callable[[object], str] = str) -> object:
        r, s = fresh()
        w, c = time.perf_counter(), time.process_time()
        out = fn(r, s)
        rows.append((name, time.perf_counter() - w, time.process_time() - c, note(out)))
        print(f"{name:<28} {rows[-1][1]:7.2f} s wall {rows[-1][2]:7.2f} s cpu  {rows[-1][3]}", flush=True)
        return out

    def prop(p: object) -> str:
        return f"score {p.score:.4f} (SDMetrics {p.score_sdmetrics:.4f}), {len(p.details)} items"

    step("encode (public codes)", lambda r, s: [codes(d, t) for d in (r, s) for t in r.schema.table_names],
         lambda o: f"{len(o)} tables")
    step("validity (synthetic)", lambda r, s: ev.validity(s), lambda o: f"score {o.score:.3f}")
    step("1-way TVD", lambda r, s: ev.tvd_one_way(r, s), lambda o: f"mean {o['TVD'].mean():.4f}")
    step("2-way TVD", lambda r, s: ev.tvd_two_way(r, s), lambda o: f"mean {o['TVD'].mean():.4f}, {len(o)} pairs")
    step("degrees (all FKs)", lambda r, s: ev.degree_similarity(r, s),
         lambda o: ", ".join(f"{x:.3f}" for x in o["Score"]))
    step("Column Shapes", lambda r, s: ev.column_shapes(r, s), prop)
    step("Column Pair Trends", lambda r, s: ev.column_pair_trends(r, s), prop)
    step("Cardinality", lambda r, s: ev.cardinality(r, s), prop)
    step("Intertable Trends", lambda r, s: ev.intertable_trends(r, s), prop)
    step("3-way cross-table (3 FKs)", lambda r, s: ev.cross_table_errors(r, s),
         lambda o: "; ".join(f"{e.name}: {e.average_pct:.1f}%/{e.maximum_pct:.1f}%" for e in o if not e.reason))
    step("associations (table+joins)",
         lambda r, s: [ev.associations(r, s, table="flights")]
         + [ev.associations(r, s, fk=fk) for fk in r.schema.private_foreign_keys[1:]],
         lambda o: f"{len(o)} matrices")
    if args.embed_n:
        step(f"t-SNE flights n={args.embed_n}", lambda r, s: ev.embed(r, s, table="flights", n=args.embed_n),
             lambda o: f"detection score {o.detection_score:.3f} (AUC {o.auc:.3f})")
    step("QualityReport", lambda r, s: ev.QualityReport().generate(r, s), lambda o: "")
    step("RelationalReport", lambda r, s: ev.RelationalReport().generate(r, s), lambda o: "")
    path = Path(args.html)
    step("report.html", lambda r, s: ev.write_report(path, r, s, ledger=ledger, title="nycflights13 at ε = 1"),
         lambda o: f"{Path(o).stat().st_size / 1e6:.2f} MB → {o}")


if __name__ == "__main__":
    main()
