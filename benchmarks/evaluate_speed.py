"""Time of each evaluation step on nycflights13 (real vs a synthetic copy, random_state=0).

Run from the repository root::

    python benchmarks/evaluate_speed.py [--cache DIR] [--html PATH] [--embed-n N]

The synthetic copy is made by ``RelationalSynthesizer(Plan.default(schema, 1.0, 1e-6),
random_state=0)`` (≈ 25 s the first time, JAX compile included) and cached as Parquet in ``--cache``
(default ``/tmp/relviz-bench/nycflights13``) with its ledger. Each step runs on a fresh pair of
databases (no cached codes) and prints wall and CPU seconds (CPU time is the steadier number on a
shared machine). Steps: encoding to public codes, validity, 1-way/2-way TVD, degrees, Column Shapes,
Column Pair Trends, Cardinality, Intertable Trends, the 3-way cross-table errors, association
matrices, a t-SNE embedding of ``--embed-n`` rows per side (0 to skip), the full QualityReport,
the RelationalReport and report.html (with its file size).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/relviz-bench/nycflights13")
    ap.add_argument("--html", default="/tmp/relviz-bench/nycflights13/report.html")
    ap.add_argument("--embed-n", type=int, default=2000)
    args = ap.parse_args()

    t = time.perf_counter()
    real = relviz.datasets.load("nycflights13")
    print(f"load nycflights13: {time.perf_counter() - t:.1f} s")
    syn, ledger = synthetic_copy(real, Path(args.cache))

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
