"""Workload error of a *perfect independent link*: the floor a linker that ignores attributes reaches.

Curator view (not private): this script reads the real tables and releases nothing. It answers
"how much of a query's error is a method's fault?" for the papers' workloads (TPC-H with
revisions: K. Cai, X. Xiao and G. Cormode, "PrivLava: Synthesizing Relational Data with Foreign
Keys under Differential Privacy", SIGMOD 2023, §7; the census stand-in: :mod:`relviz.datasets.census`).

What it measures
----------------
For each chosen foreign key ``child.fk → parent`` (then for all of them at once) it builds the
**relinked** real database: the child's FK column(s) are permuted among the child's rows (a
composite key moves as one), so

* every table, every attribute and every parent's degree (group size) stay exactly the real ones;
* the association between a child's attributes and its parent's attributes is broken, as it is
  for a linker that draws the link independently of the attributes (the degree baseline, or
  PrivLava and PrivPetal on an FK they do not model).

The workload error of that database against the real one (the same
:func:`relviz.evaluate.tpch_errors` / :func:`relviz.evaluate.census_error_summary` as
``benchmarks/fidelity.py``) is printed per query, mean ± standard error over ``--reps`` random
permutations. Two readings:

* where the real link *is* independent of the attributes (TPC-H's ``lineitem → partsupp`` with
  ``revisions=False``: dbgen draws a line item's part uniformly), this is the **noise floor** of
  a query over that link (Q14, Q17, Q19): a synthesizer that reproduces every table and degree
  exactly still misses by this much on average, because the real database is one random draw of
  the link. With the revisions (the default) it is not: revision (a) scales each line item's
  quantity by its part's type and brand weights, so those rows are what a blind link costs
  (docs/evaluation.md §7.2);
* where the real link carries a correlation (census persons → households, TPC-H
  ``lineitem → orders``), it is what a method gains by modelling the FK: compare a method's error
  with this row.

Usage (from a clone after ``make test`` or ``make demo``)::

    .venv/bin/python benchmarks/link_floor.py --dataset tpch --tpch-sf 1 --reps 10
    .venv/bin/python benchmarks/link_floor.py --dataset tpch --fks lineitem.l_partkey --reps 20
    .venv/bin/python benchmarks/link_floor.py --dataset census --households 50000

Cost: one workload evaluation per FK and repetition (TPC-H sf 1: about 10 s each; sf 0.1: 1 s).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relviz  # noqa: E402
from relviz.database import Database  # noqa: E402
from relviz.evaluate import tpch_query_answers  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import workload_measures  # noqa: E402


def relinked(db: Database, fk_names: str | list[str], rng: np.random.Generator) -> Database:
    """``db`` with each named FK's column(s) permuted among its child's rows (new frames).

    Args:
        db: The real database (not modified).
        fk_names: One or several foreign keys' names as in ``db.schema``
            (``Schema.foreign_keys[i].name``); each gets its own permutation.
        rng: Source of the permutations.

    Returns:
        A database whose child tables differ from ``db``'s only in the named FK column(s), which
        hold the same multiset of values (every parent keeps its degree) in a uniformly random
        order.

    Raises:
        KeyError: a name is not a foreign key of ``db.schema`` (all unknown names are listed).
    """
    names = [fk_names] if isinstance(fk_names, str) else list(fk_names)
    fks = {fk.name: fk for fk in db.schema.foreign_keys}
    unknown = [n for n in names if n not in fks]
    if unknown:
        raise KeyError(f"unknown foreign key(s) {', '.join(map(repr, unknown))}; "
                       f"known: {', '.join(fks)}")
    frames: dict[str, pd.DataFrame] = {}
    for n in names:
        fk = fks[n]
        child = frames.get(fk.child)
        if child is None:
            child = frames[fk.child] = db[fk.child].copy()
        cols = list(fk.columns)
        child[cols] = child[cols].to_numpy()[rng.permutation(len(child))]
    for t, f in frames.items():
        db = db.with_table(t, f, validate=False)
    return db


def workload_errors(name: str, real: Database, other: Database, *, real_answers=None,  # noqa: ANN001
                    census_queries: int = 2000) -> dict[str, float]:
    """Per-query (TPC-H) or per-panel (census) error of ``other`` against ``real``, as
    ``benchmarks/fidelity.py`` measures it (:func:`fidelity.workload_measures`)."""
    rows = workload_measures(name, real, other, real_answers=real_answers,
                             census_queries=census_queries)
    return {item: v for m, item, v in rows if m in ("tpch_error", "census_error")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", choices=("tpch", "census"), default="tpch")
    ap.add_argument("--tpch-sf", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    ap.add_argument("--households", type=int, default=5000, help="census households (default 5000)")
    ap.add_argument("--census-queries", type=int, default=2000, help="queries per census panel")
    ap.add_argument("--fks", help="comma list of FK names to relink one at a time, then all at "
                    "once (default: every FK whose child is private)")
    ap.add_argument("--reps", type=int, default=10, help="random permutations per FK (default 10)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the permutations (default 0)")
    args = ap.parse_args(argv)

    if args.dataset == "tpch":
        real = relviz.datasets.load("tpch", sf=args.tpch_sf)
        answers = tpch_query_answers(real)
    else:
        real = relviz.datasets.load("census", n_households=args.households)
        answers = None
    private = set(real.schema.private_tables)
    names = (args.fks.split(",") if args.fks else
             [fk.name for fk in real.schema.foreign_keys if fk.child in private])
    rng = np.random.default_rng(args.seed)
    print(f"# {args.dataset}: {', '.join(f'{t} {n:,}' for t, n in real.row_counts().items())}; "
          f"{args.reps} permutations per FK, seed {args.seed}")
    rows = []
    for fk in [*names, names] if len(names) > 1 else names:
        t = time.perf_counter()
        errs = pd.DataFrame([workload_errors(args.dataset, real, relinked(real, fk, rng),
                                             real_answers=answers,
                                             census_queries=args.census_queries)
                             for _ in range(args.reps)])
        se = errs.std(ddof=1) / math.sqrt(len(errs)) if len(errs) > 1 else errs.mean() * np.nan
        label = fk if isinstance(fk, str) else "every FK above, at once"
        rows.append({"relinked FK": label, **{q: f"{errs[q].mean():.3f} ± {se[q]:.3f}" for q in errs},
                     "s per rep": f"{(time.perf_counter() - t) / args.reps:.1f}"})
        print(f"{label}: " + ", ".join(f"{q} {errs[q].mean():.3f} ± {se[q]:.3f}" for q in errs),
              flush=True)
    print()
    cols = list(rows[0]) if rows else []
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
