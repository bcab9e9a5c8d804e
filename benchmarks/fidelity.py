"""Fidelity benchmark: every single-table mechanism × relational method × built-in database.

One command from a fresh clone (``make test`` or ``make demo`` creates ``.venv``)::

    .venv/bin/python benchmarks/fidelity.py            # the default grid (a subset, see Cost)
    .venv/bin/python benchmarks/fidelity.py --quick    # smoke test: every cell once, small sizes
    .venv/bin/python benchmarks/fidelity.py --paper    # the papers' grid (paper_workloads mode)
    .venv/bin/python benchmarks/fidelity.py --datasets all --methods all --mechanisms all  # full

What it runs
------------
A run is one ``RelationalSynthesizer(plan, random_state=seed).fit(real).sample()`` with ``plan =
Plan.default(schema, ε, δ = 1e-6, mechanism=…, method=…)`` (tables share 2/3 of ρ, private FKs 1/3),
for every cell of

* **mechanism** — every registered single-table mechanism (``relviz.single.available()``: ``mst``,
  ``independent``);
* **method** — every registered 1:N linker (``relviz.relational.available()``: ``degree``,
  ``biadjacency``), and ``<name>-mn`` for every registered many-to-many method
  (``relviz.relational.available_relations()``: ``biadjacency-mn``): the per-FK plan of ``<name>``
  with every link table (a private table with exactly two FKs: baseball ``college_playing``,
  movielens ``ratings``, TPC-H ``lineitem``) turned into one M:N relation by
  ``Plan.with_relation``. An FK the method cannot model falls back to ``degree``
  (``Plan.default``'s fallback, e.g. bi-adjacency on ``flights.carrier → airlines``, whose parent
  has no attribute); the substitutions are listed in ``runs.csv``, and a method whose every FK
  falls back is skipped as a duplicate of ``degree``; every registered **database method**
  (``relviz.relational.available_databases()``: ``privlava``, ``privpetal``, ``denorm``, each with its own
  ``Plan.default`` components) and the ``baseline-80-20`` preset (``Plan.preset``: the degree
  baseline with 20 % of ρ on the FKs, the papers' per-relation baseline). PrivLava and PrivPetal
  need a cap τ on every private FK: where the dataset declares none (FKs to public parents), a
  DP 0.99-quantile cap (candidates 1…32, 5 % of the run's ρ, charged to its ledger) is released
  first and listed in ``runs.csv``;
* **database** — ``nycflights13`` as shipped (planes public); ``nycflights13-tuple``,
  ``-plane``, ``-row`` and ``-row30``: planes private
  (``relviz.datasets.nycflights13.planes_private``) under the tuple unit, the plane (entity) unit
  and the row unit with the default cap τ = 1,500 flights per plane and with τ = 30. Under the row
  unit one plane row may take its whole set of flights with it, so the sensitivity of every
  release on ``flights.tailnum → planes`` grows linearly with τ (docs/privacy.md: 2τ + 1 parents
  change degree, 2τ links move): τ = 1,500 buys ~50× the noise of τ = 30, while τ = 30 drops the
  flights beyond the 30th of each plane before anything is measured (66 % of the planes fly more:
  203,543 of the 336,776 flights go; scores are always against the *uncapped* real data, so that
  loss shows). Both are run because neither is free. Then ``movielens``,
  ``schools``, ``baseball``, ``galton``, ``tpch`` (``load("tpch", sf=0.1)``; sf 0.01 with
  ``--quick``) and ``census`` (``load("census", n_households=5000)``; 1,000 with ``--quick``);
* **ε** — {0.5, 1, 4} (``--paper``: {0.2, 0.4, 0.8, 1.6, 3.2}); **seed** — 0, 1, 2 (``--paper``:
  10 seeds). Seeded runs draw numpy's seedable noise (``Plan.noise = "auto"``): study runs, never
  a release. Methods share each seed's table noise (per-component generators), so at one seed
  the relational methods link the same synthetic tables and their differences are the relation's.

A combination the plan rejects (``Plan.problems``, ``Plan.with_relation``, or no link table) is
skipped and listed with its reason; a run that raises is recorded as failed with the error, and
the grid goes on.

What it measures (curator view, not private: every score reads the real data; docs/evaluation.md)
--------------------------------------------------------------------------------------------------
* ``quality``: the SDMetrics-compatible Quality score (``QualityReport(sdmetrics_compatible=True)``,
  SDMetrics 0.32's multi-table QualityReport) and its four properties ``column_shapes``,
  ``column_pair_trends``, ``cardinality``, ``intertable_trends``; ``quality_relviz`` and
  ``*_relviz``: relviz's variant of the same report, averaged over **all** pairs (no strength
  threshold, bins over the real range, nulls as a category; docs/evaluation.md §1–§5);
* ``degree_similarity`` per private FK (CardinalityShapeSimilarity, 1 − KS of the degrees);
* ``xt3_avg_pct``, ``xt3_max_pct``: the 3-way cross-table marginal error per private FK (average
  and maximum over all workloads, in %; the bi-adjacency paper's metric,
  ``relviz.evaluate.cross_table_errors``), and per link table read as an M:N relation
  (``link_table_error``); FKs whose child or parent has no attribute have none. Per run also their
  means over the private FKs (``*_mean``) and ``degree_similarity_mean``;
* TPC-H: ``tpch_error`` per query (Q4, Q5, Q7, Q9, Q12, Q14, Q17, Q19: PrivLava's average relative
  error, ``tpch_errors``) and ``tpch_mean_error``, their mean over the queries the real data
  answers (Q17 returns NULL at sf 0.01 and is left out there);
* census: ``census_error`` per panel (c, a) ∈ {(1,1), (1,2), (2,1), (2,2)} (PrivLava's counting
  queries, ``census_error_summary``; 2,000 queries per panel, 10,000 with ``--paper``, the papers'
  number) and ``census_mean_error``;
* ``validity`` (share of the schema checks the synthetic database passes; must be 1),
  ``synthetic_rows`` per private table, ``fit_s``, ``sample_s``, ``eval_s`` (wall seconds; the
  first fit of a shape in a process includes JAX's compilation of MST's estimator), and
  ``peak_rss_mib`` / ``eval_peak_rss_mib``: the process's peak resident memory (VmHWM of
  ``/proc/self/status``, reset through ``/proc/self/clear_refs`` before the fit and before the
  evaluation, as benchmarks/spine.py; not tracemalloc, which misses numpy's, torch's and JAX's
  native buffers and slows the run) during fit + sample, and during the evaluation. The peak also
  holds whatever the process kept from earlier runs (relviz's dataset cache, JAX's compiled
  code), so it grows along a grid; ``peak_rss_added_mib`` is the peak minus the resident memory
  at the start of the fit, what the run itself added (a lower bound: memory freed by an earlier
  run is reused first). NaN where ``/proc`` is not available.

Output (``--out``, default ``benchmarks/results/fidelity/``, gitignored)
------------------------------------------------------------------------
* ``fidelity.csv`` — tidy: one row per run × measure × item (``dataset, mechanism, method,
  epsilon, seed, measure, item, value``; ``item`` is an FK, relation, query, panel or table, empty
  for run-level measures); appended as each run finishes;
* ``runs.csv`` — one row per planned run: ``status`` (ok / skipped / failed), ``reason``, the
  plan's fallbacks, seconds;
* ``results.md`` — Markdown tables of means ± standard error over seeds per dataset × mechanism ×
  method × ε (headline, per FK and relation, paper workloads), the skipped and failed cells, the
  wall time; the headline table is also printed;
* ``figures.html`` — plotly figures of error against ε, one line per mechanism × method, one
  panel per dataset (or per query / panel), error bars ± SE, the papers' figure shape: 3-way
  cross-table error, 1 − Quality, 1 − degree similarity, TPC-H per query, census per panel;
* with ``--save-synthetic``, each run's synthetic database as one Parquet file per table in
  ``synthetic/<dataset>_<mechanism>_<method>_eps<ε>_seed<seed>/`` (read it back with
  ``Database.from_parquet_dir``), for diagnostics beside the real data.

Cost (2 shared cores; measured on the development machine, --jobs 1 unless said)
--------------------------------------------------------------------------------
Per run (fit + sample + evaluation) with ``mst``, the cores otherwise idle: the ``degree`` method
takes 2–10 s on galton, schools and movielens, 20–35 s on baseball, census and TPC-H (sf 0.01 or
0.1) and 35–55 s on nycflights13 (MST on 336,776 flights; evaluation ~8 s); ``independent`` saves
most of the table fit. Bi-adjacency costs 2–6 s on galton, ~20 s on schools, ~45 s on movielens,
~100 s on baseball and 150–210 s on census, TPC-H and nycflights13 (15 iterations of projected
gradient descent on 10⁶-cell slices per private FK, single-threaded in torch, whatever the
database's size); the M:N relation 115 s (TPC-H ``lineitem``) to 220 s (baseball) of fit. With
other jobs on the two cores (load 4), every number roughly doubles. The full grid (``--datasets all
--methods all --mechanisms all``: 11 databases, 594 cells, of which 432 run and 162 are skipped for
want of a usable link table) takes about 10 hours with one job, so the **default is a subset**:
mechanism ``mst``; methods ``degree`` and ``biadjacency``; databases ``galton``, ``schools``,
``movielens``, ``census`` and ``nycflights13-tuple`` (the papers' child-per-parent setting); ε ∈
{0.5, 1, 4}; 3 seeds: 90 runs, about 80 minutes by the per-run costs above (about 45 minutes with
``--jobs 2`` on two free cores). ``--jobs N`` runs N spawned processes (torch single-threaded in
each); seconds and peak memory are then per process but the cores are shared, so compare timings
only within one ``--jobs``. Measured: ``--datasets
galton,census,tpch,nycflights13-tuple,nycflights13-plane --mechanisms mst --methods
degree,biadjacency --eps 1 --seeds 3 --tpch-sf 0.01 --jobs 2`` (30 runs) took 39 minutes at load 4.
``--quick`` runs every database, mechanism and method once (ε = 1, seed 0; 66 cells, 48 runs) on
small sizes — nycflights13 with a uniform sample of 20,000 flights, TPC-H sf 0.01, census 1,000
households — with bi-adjacency cut to 3 iterations on 10⁵-cell slices (its numbers are a smoke
test, not the benchmark's): measured 4.9 minutes (6.9 at load 2–4). ``--paper`` (ε ∈ {0.2, 0.4,
0.8, 1.6, 3.2}, 10 seeds, 10,000 census queries per panel) defaults to the two databases with paper
workloads, ``tpch`` (sf 0.1) and ``census``, with ``mst`` and both 1:N methods: 2 × 2 × 5 × 10 =
200 runs, about 5 hours with one job (``--paper --methods degree``, 100 runs: about 45 minutes;
``--paper --mechanisms all --methods all`` adds ``independent`` and TPC-H's M:N relation).

Papers whose workloads it uses
------------------------------
* K. Cai, X. Xiao, G. Cormode, "PrivLava: Synthesizing Relational Data with Foreign Keys under
  Differential Privacy", SIGMOD 2023, §7 (census counting queries, §7.2; TPC-H queries, §7.1/§7.3);
* K. Cai, X. Xiao, Y. Yang, "PrivPetal: Relational Data Synthesis via Permutation Relations",
  SIGMOD 2025, §6 (the same two yardsticks);
* K. Alimohammadi, H. Wang, O. Gulati, A. Srivastava, N. Azizan, "Differentially Private
  Synthetic Data Generation for Relational Databases", §8 (average 3-way cross-table marginal
  error; the row-level unit);
* SDMetrics (the Synthetic Data Vault's evaluation library), the multi-table Quality report.

Definitions: docs/evaluation.md; privacy units and sensitivities: docs/privacy.md.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gc
import math
import os
import sys
import time
import traceback
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's relviz (not an editable install's)

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "fidelity"
DELTA = 1e-6

NYC_VARIANTS = {  # name → (unit, τ) of relviz.datasets.nycflights13.planes_private
    "nycflights13-tuple": ("tuple", None),
    "nycflights13-plane": ("plane", None),
    "nycflights13-row": ("row", None),
    "nycflights13-row30": ("row", 30),
}
DATASETS = ("nycflights13", *NYC_VARIANTS, "movielens", "schools", "baseball", "galton", "tpch",
            "census")
DEFAULT_DATASETS = ("galton", "schools", "movielens", "census", "nycflights13-tuple")
PAPER_DATASETS = ("tpch", "census")
TPCH_PUBLIC_FKS = ("orders.o_custkey->customer", "lineitem.l_partkey+l_suppkey->partsupp")
"""TPC-H's two FKs to public parents (``customer`` and ``partsupp`` are public in the papers' TPC-H
setting: Cai, Xiao & Cormode, "PrivLava", SIGMOD 2023, §7.1)."""
PAPER_MODELLED_FKS = {  # dataset → method → FKs the paper models although their parent is public
    "tpch": {"privpetal": TPCH_PUBLIC_FKS},
}
"""FKs to public parents that a paper's own setup models (so they get DP caps here) where the
method's default plan would link them: PrivPetal's TPC-H runs ([P] §6.1's 50/25/25 split models
``orders → customer`` and ``lineitem → partsupp``)."""
AUTHORS_SETUP = {  # dataset → method → component ("*": every one of the method's) → parameters
    "tpch": {"privpetal": {
        "*": {"splits": {"part.p_brand": 0, "part.p_type": 25}, "preset": "ri-tpch", "order": 2,
              "k_max": 3},
        "orders.o_custkey->customer": {"lam": 0.25, "merge_from": 1},
        "lineitem.l_orderkey->orders": {"lam": 5.0},
        "lineitem.l_partkey+l_suppkey->partsupp": {"lam": 0.2, "merge_from": 1},
    }},
}
"""``--setup authors``: the parameters of the authors' own runs on a dataset (their code's
per-dataset configuration, spec/privpetal.md §5.1 "RI TPC-H"; docs/methods/privpetal.md §6.10),
set on the method's components with ``Plan.with_params``. PrivPetal on TPC-H: its encoding keeps
``P_BRAND`` (25 codes) whole and factorises ``P_TYPE`` (150) by 25, its first syllable, where
relviz's default keeps both whole (categorical attributes of a public table,
docs/methods/privpetal.md §3.1 and §6.20; runs before stop 53 split both by 10); the
``ri-tpch`` budget split, order-2 permutation relations, ``k_max`` 3, and per-FK λ and merging
intervals (λ 0.25 / 5 / 0.2; sizes ≥ 1 merged on the FKs to public parents). The default setup
(``relviz``) runs every method with its own defaults."""
AUTHORS_MODELLED_FKS = {
    "tpch": {"privlava": TPCH_PUBLIC_FKS},
}
"""``--setup authors``: FKs to public parents the authors' runs model where the method's default
plan links them (PrivLava's TPC-H run models both; docs/methods/privlava.md §6)."""
SETUPS = ("relviz", "authors", "authors-public-fks", "authors-generic", "public-fks-guarded",
          "guarded-sizes", "guarded-margins", "guarded-children", "guarded-pairs")
"""``--setup``: ``relviz`` (every method with its defaults), ``authors`` (:data:`AUTHORS_SETUP` and
:data:`AUTHORS_MODELLED_FKS` whole), or one part of it, to tell what each part does
(docs/methods/privpetal.md §6.10): ``authors-public-fks``, the entries of the FKs to public
parents only (and the modelled FKs); ``authors-generic``, the rest (the ``"*"`` entry and the FKs
to private parents); ``public-fks-guarded``, ``authors-public-fks`` with :data:`PUBLIC_GUARDS` on
the FKs to public parents (docs/methods/privpetal.md §6.12); ``guarded-sizes``,
``public-fks-guarded`` with :data:`PRIVATE_PARENT_GUARDS` on PrivPetal's FKs to private parents
(docs/methods/privpetal.md §6.16); ``guarded-margins``, ``public-fks-guarded`` with
:data:`MARGIN_GUARDS` on every FK PrivPetal models (docs/methods/privpetal.md §5.8, §6.18);
``guarded-children``, ``guarded-margins`` with :data:`CHILDREN_GUARDS` on PrivPetal's FKs to
private parents (docs/methods/privpetal.md §5.9, §6.19); ``guarded-pairs``, ``guarded-children``
with :data:`PAIR_GUARDS` on every FK PrivPetal models (docs/methods/privpetal.md §5.10). Runs
of ``authors-public-fks`` and
``public-fks-guarded`` made before commit ``2911a04`` differ from later ones: PrivPetal then ran
``lineitem → orders`` (no entry of its own) on ``orders → customer``'s entry, not on the defaults
(docs/methods/privpetal.md §6.14)."""
PUBLIC_GUARDS = {"public_usefulness": True, "slice_lam": 1.0, "public_margins": True,
                 "size_calibration": True}
"""``--setup public-fks-guarded``: PrivPetal's options that keep a low λ on an FK to a public
parent from fitting noise (docs/methods/privpetal.md §6.11–§6.12), set where
:data:`AUTHORS_SETUP` sets that FK's own entry."""
GUARDED_SETUPS = ("public-fks-guarded", "guarded-sizes", "guarded-margins", "guarded-children",
                  "guarded-pairs")
"""The setups that set :data:`PUBLIC_GUARDS`."""
PRIVATE_PARENT_GUARDS = {"size_calibration": "variables"}
"""``--setup guarded-sizes``: on PrivPetal's FKs to private parents, Algorithm 4's sizes for
the parent rows another FK's model generated keep the household model's ``p(size | v)`` for each
parent attribute ``v`` (docs/methods/privpetal.md §6.16)."""
MARGIN_GUARDS = {"child_margins": True}
"""``--setup guarded-margins``: on every FK PrivPetal models, the children's one-way marginals
counted per child and every flattened-relation column raked to them (docs/methods/privpetal.md
§5.8)."""
CHILDREN_GUARDS = {"parent_children": True}
"""``--setup guarded-children``: on PrivPetal's FKs to private parents (whose rows an earlier FK
generates), the children per parent value released and Algorithm 4's sizes tilted to them
(docs/methods/privpetal.md §5.9)."""
PAIR_GUARDS = {"pair_margins": 3}
"""``--setup guarded-pairs``: on every FK PrivPetal models, up to three parent–child pair
margins counted per child, the best of one noisy release of every candidate pair's per-child
score above a Bonferroni threshold, and every slot's column raked to them
(docs/methods/privpetal.md §5.10)."""
DEFAULT_EPS = (0.5, 1.0, 4.0)
PAPER_EPS = (0.2, 0.4, 0.8, 1.6, 3.2)
DEFAULT_MECHANISMS = ("mst",)
DEFAULT_METHODS = ("degree", "biadjacency")
MN_SUFFIX = "-mn"
KEYED_SUFFIX = "+keyed"
"""``<method>+keyed``: the method's plan with fk-attribute on every linked FK to a public parent
(``Plan.with_public_links``; docs/methods/keyed.md)."""
PARENTS_SUFFIX = "+parents"
"""``<method>+parents``: the method's plan with parent-attributes on every linked FK to a public
parent (``Plan.with_public_links``; docs/methods/keyed.md §6): for a database method, its mixed
mode's FKs (PrivLava's default already links those with parent-attributes where the parent has an
attribute to copy; ``+parents`` also gives it to the others, which then fail the plan check); for
``degree`` and the presets, every FK to a public parent."""

QUICK_FLIGHTS = 20_000
QUICK_BIADJACENCY = {"n_iters": 3, "slice_cells": 100_000}
"""Bi-adjacency hyper-parameters of ``--quick`` (a smoke test; defaults: 15 and 10⁶)."""

HEADLINE = (  # (measure, column title, format)
    ("quality", "Quality", ".3f"),
    ("quality_relviz", "Quality (relviz, all pairs)", ".3f"),
    ("column_shapes", "Column Shapes", ".3f"),
    ("column_pair_trends", "Column Pair Trends", ".3f"),
    ("cardinality", "Cardinality", ".3f"),
    ("intertable_trends", "Intertable Trends", ".3f"),
    ("degree_similarity_mean", "degree sim. (mean FK)", ".3f"),
    ("xt3_avg_pct_mean", "3-way avg %", ".1f"),
    ("xt3_max_pct_mean", "3-way max %", ".1f"),
    ("workload_error", "workload rel. err.", ".3f"),
    ("fit_s", "fit s", ".1f"),
    ("sample_s", "sample s", ".1f"),
    ("peak_rss_mib", "peak MiB", ".0f"),
    ("peak_rss_added_mib", "added MiB", ".0f"),
)
PROPERTY_KEYS = {"Column Shapes": "column_shapes", "Column Pair Trends": "column_pair_trends",
                 "Cardinality": "cardinality", "Intertable Trends": "intertable_trends"}
KEY_COLUMNS = ("dataset", "mechanism", "method", "epsilon", "seed")
RUN_COLUMNS = (*KEY_COLUMNS, "status", "reason", "fallbacks", "seconds")
MEASURE_COLUMNS = (*KEY_COLUMNS, "measure", "item", "value")


# -- memory ------------------------------------------------------------------------------------

def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _status_mib(field: str = "VmHWM") -> float:
    """``VmHWM`` (peak resident memory since the last reset) or ``VmRSS`` of this process, MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


# -- databases and plans -----------------------------------------------------------------------

@functools.lru_cache(maxsize=1)  # one database at a time: the peak memory of a run is its own
def _database(name: str, quick: bool, tpch_sf: float, households: int):  # noqa: ANN202 - Database
    """The built-in database of a grid name (cached per process)."""
    import relviz
    from relviz.datasets import nycflights13

    if name == "tpch":
        return relviz.datasets.load("tpch", sf=tpch_sf)
    if name == "census":
        return relviz.datasets.load("census", n_households=households)
    if name in NYC_VARIANTS or name == "nycflights13":
        db = relviz.datasets.load("nycflights13")
        if quick:  # a uniform sample of flights; every parent kept, so no FK breaks
            flights = db["flights"].sample(QUICK_FLIGHTS, random_state=0).sort_index()
            db = relviz.Database(db.schema, {**{t: db[t] for t in db.schema.table_names},
                                             "flights": flights.reset_index(drop=True)})
        if name == "nycflights13":
            return db
        unit, tau = NYC_VARIANTS[name]
        return nycflights13.planes_private(db, unit, **({} if tau is None else {"tau": tau}))
    return relviz.datasets.load(name)


def _link_tables(schema) -> list[str]:  # noqa: ANN001
    """Private tables with exactly two FKs: the candidates of ``Plan.with_relation``."""
    return [t for t in schema.private_tables if len(schema.fks_from(t)) == 2]


def _plan(db, mechanism: str, method: str, epsilon: float, delta: float, quick: bool):  # noqa: ANN001, ANN202
    """``(plan, None, fallbacks)`` for a cell, or ``(None, reason, [])`` when it is skipped."""
    from relviz import RelvizError
    from relviz.plan import PRESETS, Plan
    from relviz.relational import available, is_database_method

    schema = db.schema
    keyed = method.endswith(KEYED_SUFFIX)  # every linked FK to a public parent: fk-attribute
    method = method[: -len(KEYED_SUFFIX)] if keyed else method
    parents = method.endswith(PARENTS_SUFFIX)  # … or parent-attributes
    method = method[: -len(PARENTS_SUFFIX)] if parents else method
    relation = method[: -len(MN_SUFFIX)] if method.endswith(MN_SUFFIX) else None
    base = (relation if relation in available() else "degree") if relation else method
    try:
        if method in PRESETS:
            plan = Plan.preset(schema, method, epsilon, delta, mechanism=mechanism)
            base = plan.database_method or "degree"
        else:
            plan = Plan.default(schema, epsilon, delta, mechanism=mechanism, method=base)
        if keyed:
            plan = plan.with_public_links(schema, "fk-attribute")
        if parents:
            plan = plan.with_public_links(schema, "parent-attributes")
        if is_database_method(base):
            problems = plan.problems(schema)
            # its mixed mode's linked FKs (PrivLava, PrivPetal) are listed like fallbacks
            return (plan, None, plan.substitutions(schema, base)) if not problems else \
                (None, "; ".join(str(p) for p in problems), [])
        if relation:
            links = _link_tables(schema)
            if not links:
                return None, "no link table (a private table with exactly two FKs)", []
            for t in links:
                plan = plan.with_relation(schema, t, relation)
    except (RelvizError, KeyError, ValueError) as e:
        return None, f"plan: {_reason(e)}", []
    problems = plan.problems(schema)
    if problems:
        return None, "; ".join(str(p) for p in problems), []
    fallbacks = plan.substitutions(schema, base)
    if base != "degree" and not plan.relations and all(c.method == "degree" for c in plan.edges):
        return None, f"every FK falls back to degree (same runs as degree): {'; '.join(fallbacks)}", []
    if quick:
        for c in plan.components:
            if c.kind != "table" and c.method == "biadjacency":
                plan = plan.with_params(c.name, **QUICK_BIADJACENCY)
    return plan, None, fallbacks


CAP_SHARE = 0.05
"""Share of the run's ρ spent on DP caps (0.99-quantile, candidates 1…32) for a method that needs
a cap on every private FK (PrivLava) where the dataset declares none (FKs to public parents)."""


def _caps_for(db, spec: dict, setup: str = "relviz"):  # noqa: ANN001, ANN202
    """``(database, note)``: PrivLava and PrivPetal need τ on every private FK they model; uncapped
    ones get a DP 0.99-quantile cap charged to the run's ledger (the papers' non-private 99 %
    quantile, made private: ``relviz.privacy.caps.with_dp_caps``). PrivLava's default plan links
    an uncapped FK to a public parent with the degree method (``PrivLava.linked_reason``), so it
    gets no cap there (a DP cap would make PrivLava model it, the paper's mode, and cost the
    budget its latent marginals need). PrivPetal's default plan likewise links an uncapped FK to
    a public parent (and any FK with a cap above 64) with the degree method
    (``PrivPetal.linked_reason``), except the FKs of :data:`PAPER_MODELLED_FKS`, which the paper
    models, so those get DP caps."""
    import numpy as np

    from relviz.privacy.accountant import rho_from_epsilon_delta
    from relviz.privacy.caps import with_dp_caps
    from relviz.relational import get_database

    spec = {**spec, "method": spec["method"].removesuffix(KEYED_SUFFIX).removesuffix(PARENTS_SUFFIX)}
    if spec["method"] not in ("privlava", "privpetal"):
        return db, ""
    unit = db.schema.privacy_unit
    missing = [fk.name for fk in db.schema.private_foreign_keys
               if unit is None or fk.name not in unit.caps]
    # the default plan links uncapped FKs to public parents, except where the paper models them
    method = get_database(spec["method"])
    paper = PAPER_MODELLED_FKS.get(spec["dataset"], {}).get(spec["method"], ())
    if setup in ("authors", "authors-public-fks", *GUARDED_SETUPS):
        paper = (*paper, *AUTHORS_MODELLED_FKS.get(spec["dataset"], {}).get(spec["method"], ()))
    missing = [n for n in missing
               if n in paper or method.linked_reason(db.schema, db.schema.foreign_key(n)) is None]
    if not missing:
        return db, ""
    rho = CAP_SHARE * rho_from_epsilon_delta(spec["epsilon"], DELTA)
    out, rel = with_dp_caps(db, rho=rho, quantile=0.99, candidates=(1, 32),
                            rng=np.random.default_rng([spec["seed"], 99]), fks=missing)
    return out, "DP caps " + ", ".join(f"{r.fk} τ={r.tau}" for r in rel)


def _authors_params(plan, spec: dict, setup: str = "authors", schema=None):  # noqa: ANN001, ANN202
    """``plan`` with :data:`AUTHORS_SETUP`'s parameters for the cell's dataset and method on that
    method's components (``"*"`` first, then the component's own; None stays None); ``setup``
    (:data:`SETUPS`) keeps all of them (``authors``), none (``relviz``) or one part, which needs
    the ``schema`` to tell the FKs to public parents (ValueError without it, or for an unknown
    setup)."""
    if setup not in SETUPS:
        raise ValueError(f"unknown setup {setup!r} (choose from {', '.join(SETUPS)})")
    if setup not in ("relviz", "authors") and schema is None:
        raise ValueError(f"setup {setup!r} needs the schema, to tell the FKs to public parents")
    params = AUTHORS_SETUP.get(spec["dataset"], {}).get(spec["method"])
    if plan is None or not params or setup == "relviz":
        return plan
    guarded = setup in GUARDED_SETUPS
    public_part = setup == "authors-public-fks" or guarded
    star = params.get("*", {}) if not public_part else {}
    for c in plan.components:
        if c.method != spec["method"]:
            continue
        to_public = c.kind == "edge" and setup != "authors" and \
            schema.table(schema.foreign_key(c.name).parent).public
        keep_own = setup == "authors" or public_part == to_public
        own = params.get(c.name, {}) if keep_own else {}
        if guarded and own and spec["method"] == "privpetal":
            own = {**own, **PUBLIC_GUARDS}
        if setup == "guarded-sizes" and spec["method"] == "privpetal" and c.kind == "edge" \
                and not to_public:
            own = {**own, **PRIVATE_PARENT_GUARDS}
        if setup in ("guarded-margins", "guarded-children", "guarded-pairs") \
                and spec["method"] == "privpetal" and c.kind == "edge":
            own = {**own, **MARGIN_GUARDS}
        if setup in ("guarded-children", "guarded-pairs") and spec["method"] == "privpetal" \
                and c.kind == "edge" and not to_public:
            own = {**own, **CHILDREN_GUARDS}
        if setup == "guarded-pairs" and spec["method"] == "privpetal" and c.kind == "edge":
            own = {**own, **PAIR_GUARDS}
        if star or own:
            plan = plan.with_params(c.name, **star, **own)
    return plan


def _reason(e: BaseException) -> str:
    problems = getattr(e, "problems", None)
    if problems:
        return "; ".join(str(p) for p in problems)
    return f"{type(e).__name__}: {e}"


# -- one run -----------------------------------------------------------------------------------

@functools.cache
def _tpch_real_answers(quick: bool, tpch_sf: float, households: int):  # noqa: ANN202
    from relviz.evaluate import tpch_query_answers

    return tpch_query_answers(_database("tpch", quick, tpch_sf, households))


def _nanmean(values: Iterable[float]) -> float:
    v = [x for x in values if x is not None and not math.isnan(x)]
    return sum(v) / len(v) if v else float("nan")


def workload_measures(name: str, real, syn, *, real_answers=None,  # noqa: ANN001
                      census_queries: int = 2000) -> list[tuple[str, str, float]]:
    """The papers' workload errors of ``syn`` against ``real`` (curator view) as ``(measure, item,
    value)``: ``tpch_error`` per query then ``tpch_mean_error`` (``name == "tpch"``), or
    ``census_error`` per panel then ``census_mean_error`` (``"census"``), and ``workload_error``
    (the mean). ``real_answers``: TPC-H answers of ``real`` already computed."""
    from relviz.evaluate import census_error_summary, tpch_errors

    if name == "tpch":
        errs = tpch_errors(real, syn, real_answers=real_answers)
        out = [("tpch_error", r["query"], float(r["error"])) for r in errs.to_dict(orient="records")]
        mean = _nanmean(float(x) for x in errs["error"])
        return out + [("tpch_mean_error", "", mean), ("workload_error", "", mean)]
    summ = census_error_summary(real, syn, n=census_queries, seed=0)
    out = [("census_error", f"c={int(r['c'])},a={int(r['a'])}", float(r["mean_error"]))
           for r in summ.to_dict(orient="records")]
    mean = _nanmean(float(x) for x in summ["mean_error"])
    return out + [("census_mean_error", "", mean), ("workload_error", "", mean)]


def _evaluate(name: str, real, syn, opts: dict) -> list[tuple[str, str, float]]:  # noqa: ANN001
    """``(measure, item, value)`` of one synthetic database against the real one (curator view)."""
    from relviz.evaluate import QualityReport, cross_table_errors, link_table_error, validity

    out: list[tuple[str, str, float]] = []
    schema = real.schema
    q = QualityReport(sdmetrics_compatible=True)
    q.generate(real, syn)
    props = q.get_properties()
    out.append(("quality", "", float(q.get_score())))
    out.append(("quality_relviz", "", _nanmean(float(x) for x in props["relviz Score"])))
    for r in props.to_dict(orient="records"):
        key = PROPERTY_KEYS[r["Property"]]
        out.append((key, "", float(r["SDMetrics Score"])))
        out.append((f"{key}_relviz", "", float(r["relviz Score"])))
    private = [fk.name for fk in schema.private_foreign_keys]
    card = q.get_details("Cardinality").set_index("Foreign Key")["Score"]
    degs = [(fk, float(card[fk])) for fk in private if fk in card.index]
    out += [("degree_similarity", fk, v) for fk, v in degs]
    out.append(("degree_similarity_mean", "", _nanmean(v for _, v in degs)))
    avgs, maxs = [], []
    for e in cross_table_errors(real, syn):
        if e.n_workloads and not math.isnan(e.average_pct):
            out += [("xt3_avg_pct", e.name, e.average_pct), ("xt3_max_pct", e.name, e.maximum_pct)]
            avgs.append(e.average_pct)
            maxs.append(e.maximum_pct)
    out += [("xt3_avg_pct_mean", "", _nanmean(avgs)), ("xt3_max_pct_mean", "", _nanmean(maxs))]
    for t in _link_tables(schema):
        e = link_table_error(real, syn, t)
        if e.n_workloads and not math.isnan(e.average_pct):
            out += [("xt3_avg_pct", e.name, e.average_pct), ("xt3_max_pct", e.name, e.maximum_pct)]
    if name == "tpch":
        out += workload_measures(name, real, syn, real_answers=_tpch_real_answers(
            opts["quick"], opts["tpch_sf"], opts["households"]))
    if name == "census":
        out += workload_measures(name, real, syn, census_queries=opts["census_queries"])
    out.append(("validity", "", float(validity(syn).score)))
    rows = syn.row_counts()
    out += [("synthetic_rows", t, float(rows[t])) for t in schema.private_tables]
    return out


def synthetic_dir(spec: dict) -> str:
    """Folder name of a run's synthetic database under ``--save-synthetic``:
    ``<dataset>_<mechanism>_<method>_eps<ε>_seed<seed>``."""
    return (f"{spec['dataset']}_{spec['mechanism']}_{spec['method']}_eps{spec['epsilon']:g}"
            f"_seed{spec['seed']}")


def run_one(spec: dict, opts: dict) -> dict:
    """Fit, sample and evaluate one cell; never raises (a failure is recorded)."""
    from relviz.synthesizer import RelationalSynthesizer

    t0 = time.perf_counter()
    key = {k: spec[k] for k in KEY_COLUMNS}
    try:
        db = _database(spec["dataset"], opts["quick"], opts["tpch_sf"], opts["households"])
        setup = opts.get("setup", "relviz")
        db, caps_note = _caps_for(db, spec, setup)
        plan, reason, fallbacks = _plan(db, spec["mechanism"], spec["method"], spec["epsilon"],
                                        opts["delta"], opts["quick"])
        if caps_note:
            fallbacks = [caps_note, *fallbacks]
        if setup != "relviz":
            plan = _authors_params(plan, spec, setup, db.schema)
        if plan is None:
            return {"run": {**key, "status": "skipped", "reason": reason, "fallbacks": "",
                            "seconds": 0.0}, "measures": []}
        synth = RelationalSynthesizer(plan, random_state=spec["seed"])
        gc.collect()
        _reset_peak()
        base = _status_mib("VmRSS")
        t = time.perf_counter()
        synth.fit(db)
        fit_s = time.perf_counter() - t
        t = time.perf_counter()
        syn = synth.sample()
        sample_s = time.perf_counter() - t
        peak = _status_mib()
        if opts.get("save_synthetic"):
            syn.to_parquet(Path(opts["save_synthetic"]) / synthetic_dir(spec))
        _reset_peak()
        t = time.perf_counter()
        measures = _evaluate(spec["dataset"], db, syn, opts)
        measures += [("fit_s", "", fit_s), ("sample_s", "", sample_s),
                     ("eval_s", "", time.perf_counter() - t), ("peak_rss_mib", "", peak),
                     ("peak_rss_added_mib", "", peak - base), ("eval_peak_rss_mib", "", _status_mib())]
        run = {**key, "status": "ok", "reason": "", "fallbacks": "; ".join(fallbacks),
               "seconds": time.perf_counter() - t0}
        return {"run": run, "measures": [{**key, "measure": m, "item": i, "value": v}
                                         for m, i, v in measures]}
    except Exception as e:  # noqa: BLE001 - a failed cell is recorded and the grid goes on
        tb = traceback.format_exc(limit=-3).strip().splitlines()
        return {"run": {**key, "status": "failed", "reason": f"{type(e).__name__}: {e} "
                        f"[{' | '.join(x.strip() for x in tb[-4:])}]", "fallbacks": "",
                        "seconds": time.perf_counter() - t0}, "measures": []}


def _init_worker(threads: int) -> None:
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass


# -- the grid ----------------------------------------------------------------------------------

def _names(value: str | None, default: Iterable[str], known: Iterable[str], what: str) -> list[str]:
    known = list(known)
    if value is None:
        return list(default)
    if value == "all":
        return known
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(known)}, or all)")
    return names


def _grid(args: argparse.Namespace) -> tuple[list[dict], dict]:
    from relviz.plan import PRESETS
    from relviz.relational import available, available_databases, available_relations
    from relviz.single import available as mechanisms

    methods_known = [*available(), *(m + MN_SUFFIX for m in available_relations()),
                     *(m + KEYED_SUFFIX for m in available_databases()),
                     *(m + PARENTS_SUFFIX for m in (*available_databases(), "degree", "baseline-80-20")),
                     *available_databases(), *(p for p in PRESETS if p not in ("default", "denorm"))]
    datasets = _names(args.datasets, DATASETS if args.quick else PAPER_DATASETS if args.paper
                      else DEFAULT_DATASETS, DATASETS, "datasets")
    mechs = _names(args.mechanisms, mechanisms() if args.quick else DEFAULT_MECHANISMS,
                   mechanisms(), "mechanisms")
    methods = _names(args.methods, methods_known if args.quick else DEFAULT_METHODS, methods_known,
                     "methods")
    eps = ([float(e) for e in args.eps.split(",")] if args.eps else
           [1.0] if args.quick else list(PAPER_EPS if args.paper else DEFAULT_EPS))
    seeds = args.seeds if args.seeds is not None else 1 if args.quick else 10 if args.paper else 3
    if args.first_seed < 0:
        raise SystemExit(f"--first-seed must be ≥ 0, got {args.first_seed}")
    opts = {"quick": args.quick, "delta": args.delta,
            "tpch_sf": args.tpch_sf or (0.01 if args.quick else 0.1),
            "households": args.households or (1000 if args.quick else 5000),
            "census_queries": args.census_queries or (10_000 if args.paper else 2_000),
            "setup": args.setup,
            "save_synthetic": str(args.out / "synthetic") if args.save_synthetic else None}
    specs = [{"dataset": d, "mechanism": m, "method": me, "epsilon": e, "seed": s}
             for d in datasets for m in mechs for me in methods for e in eps
             for s in range(args.first_seed, args.first_seed + seeds)]
    return specs, opts


def _fmt_key(r: dict) -> str:
    return f"{r['dataset']} {r['mechanism']} {r['method']} ε={r['epsilon']:g} seed {r['seed']}"


def _progress_line(i: int, n: int, res: dict) -> str:
    r = res["run"]
    head = f"[{i}/{n}] {_fmt_key(r)}"
    if r["status"] != "ok":
        return f"{head}: {r['status'].upper()} — {r['reason']}"
    m = {(x["measure"], x["item"]): x["value"] for x in res["measures"]}
    parts = [f"Q {m[('quality', '')]:.3f}", f"Q(relviz) {m[('quality_relviz', '')]:.3f}",
             f"deg {m[('degree_similarity_mean', '')]:.3f}",
             f"3-way {m[('xt3_avg_pct_mean', '')]:.1f}%"]
    if ("workload_error", "") in m:
        parts.append(f"workload {m[('workload_error', '')]:.3f}")
    parts.append(f"fit {m[('fit_s', '')]:.1f}s sample {m[('sample_s', '')]:.1f}s eval "
                 f"{m[('eval_s', '')]:.1f}s peak {m[('peak_rss_mib', '')]:.0f} MiB "
                 f"(+{m[('peak_rss_added_mib', '')]:.0f})")
    return f"{head}: " + ", ".join(parts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", help=f"comma list or 'all' of {', '.join(DATASETS)} "
                    f"(default {','.join(DEFAULT_DATASETS)}; --paper: {','.join(PAPER_DATASETS)})")
    ap.add_argument("--methods", help="comma list or 'all' of the registered relational methods, "
                    f"<relation method>{MN_SUFFIX} for M:N, <database method>{KEYED_SUFFIX} for fk-attribute on "
                    f"its linked FKs to public parents, <method>{PARENTS_SUFFIX} for parent-attributes "
                    f"on them (default {','.join(DEFAULT_METHODS)})")
    ap.add_argument("--mechanisms", help="comma list or 'all' of the registered single-table "
                    f"mechanisms (default {','.join(DEFAULT_MECHANISMS)})")
    ap.add_argument("--eps", help="comma list of ε (default 0.5,1,4; --paper 0.2,0.4,0.8,1.6,3.2)")
    ap.add_argument("--seeds", type=int, help="seeds per cell: n seeds from --first-seed (default 3; "
                    "--paper 10)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the first seed k: seeds k..k+n-1, to add seeds to a grid run before (default 0)")
    ap.add_argument("--delta", type=float, default=DELTA, help="δ of every run (default 1e-6)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: every dataset/mechanism/method, ε = 1, one seed, small sizes")
    ap.add_argument("--paper", action="store_true",
                    help="the papers' grid: ε 0.2..3.2, 10 seeds, 10,000 census queries; tpch, census")
    ap.add_argument("--setup", choices=SETUPS, default="relviz",
                    help="relviz: every method with its defaults; authors: the authors' own "
                         "per-dataset configuration where known (AUTHORS_SETUP, "
                         "AUTHORS_MODELLED_FKS: PrivPetal's and PrivLava's TPC-H runs); "
                         "authors-public-fks / authors-generic: one part of it; "
                         "public-fks-guarded: authors-public-fks with PUBLIC_GUARDS; "
                         "guarded-sizes: that with PRIVATE_PARENT_GUARDS; "
                         "guarded-margins: that with MARGIN_GUARDS; "
                         "guarded-children: that with CHILDREN_GUARDS; "
                         "guarded-pairs: that with PAIR_GUARDS (SETUPS)")
    ap.add_argument("--tpch-sf", type=float, help="TPC-H scale factor (default 0.1; --quick 0.01)")
    ap.add_argument("--households", type=int, help="census households (default 5000; --quick 1000)")
    ap.add_argument("--census-queries", type=int, help="queries per census panel (default 2000; "
                    "--paper 10000)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes (default 1)")
    ap.add_argument("--save-synthetic", action="store_true",
                    help="also write each run's synthetic database as Parquet under "
                         "OUT/synthetic/<dataset>_<mechanism>_<method>_eps<ε>_seed<seed>/")
    args = ap.parse_args(argv)
    if args.quick and args.paper:
        raise SystemExit("--quick and --paper exclude each other")

    start = time.perf_counter()
    specs, opts = _grid(args)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    print(f"fidelity benchmark: {len(specs)} runs "
          f"({'quick' if args.quick else 'paper' if args.paper else 'grid'}; jobs {args.jobs}) → {out}",
          flush=True)
    runs: list[dict] = []
    measures: list[dict] = []
    with open(out / "fidelity.csv", "w", newline="", encoding="utf-8") as fm, \
            open(out / "runs.csv", "w", newline="", encoding="utf-8") as fr:
        wm = csv.DictWriter(fm, MEASURE_COLUMNS)
        wr = csv.DictWriter(fr, RUN_COLUMNS)
        wm.writeheader()
        wr.writeheader()

        def record(i: int, res: dict) -> None:
            runs.append(res["run"])
            measures.extend(res["measures"])
            wr.writerow(res["run"])
            wm.writerows(res["measures"])
            fr.flush()
            fm.flush()
            print(_progress_line(i, len(specs), res), flush=True)

        if args.jobs <= 1:
            for i, spec in enumerate(specs, 1):
                record(i, run_one(spec, opts))
        else:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor, as_completed

            threads = max(1, (os.cpu_count() or 1) // args.jobs)
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                os.environ.setdefault(var, str(threads))
            with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn"),
                                     initializer=_init_worker, initargs=(threads,)) as pool:
                futures = {pool.submit(run_one, spec, opts): spec for spec in specs}
                for i, fut in enumerate(as_completed(futures), 1):
                    try:
                        res = fut.result()
                    except Exception as e:  # noqa: BLE001 - a worker died (e.g. killed for memory)
                        key = {k: futures[fut][k] for k in KEY_COLUMNS}
                        res = {"run": {**key, "status": "failed", "reason": f"worker: {_reason(e)}",
                                       "fallbacks": "", "seconds": float("nan")}, "measures": []}
                    record(i, res)
    wall = time.perf_counter() - start
    md = markdown(runs, measures, args, opts, wall)
    (out / "results.md").write_text(md, encoding="utf-8")
    try:
        write_figures(out / "figures.html", measures)
    except Exception as e:  # noqa: BLE001 - the tables are written; say why the figures are not
        print(f"figures not written: {type(e).__name__}: {e}", file=sys.stderr)
    print()
    print(headline_table(runs, measures))
    bad = [r for r in runs if r["status"] == "failed"]
    skipped = {(r["dataset"], r["mechanism"], r["method"]): r["reason"] for r in runs
               if r["status"] == "skipped"}
    if skipped:
        print(f"\nskipped {len(skipped)} cells (reasons in results.md and runs.csv)")
    if bad:
        print(f"\nFAILED {len(bad)} runs:")
        for r in bad:
            print(f"  {_fmt_key(r)}: {r['reason']}")
    print(f"\nwrote {out / 'fidelity.csv'}, runs.csv, results.md, figures.html")
    print(f"wall time of the whole grid: {wall:.0f} s ({wall / 60:.1f} min)")


# -- tables ------------------------------------------------------------------------------------

def _frame(measures: list[dict]):  # noqa: ANN202 - pandas.DataFrame
    import pandas as pd

    return pd.DataFrame(measures, columns=list(MEASURE_COLUMNS))


def _mean_se(values) -> tuple[float, float, int]:  # noqa: ANN001
    import numpy as np

    v = np.asarray([x for x in values if not math.isnan(x)], dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), 0
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se, int(v.size)


def _cell(values, fmt: str) -> str:  # noqa: ANN001
    mean, se, n = _mean_se(values)
    if n == 0:
        return "—"
    return f"{mean:{fmt}}" if n == 1 or math.isnan(se) else f"{mean:{fmt}} ± {se:{fmt}}"


def _group_order(runs: list[dict]) -> list[tuple]:
    return list(dict.fromkeys((r["dataset"], r["mechanism"], r["method"], r["epsilon"])
                              for r in runs if r["status"] == "ok"))


def headline_table(runs: list[dict], measures: list[dict]) -> str:
    """Markdown: mean ± SE over seeds of the headline measures per dataset × mechanism × method × ε."""
    df = _frame(measures)
    if df.empty:
        return "(no successful runs)"
    run_level = df[df["item"].fillna("") == ""]
    groups = {k: g for k, g in run_level.groupby(["dataset", "mechanism", "method", "epsilon"])}
    head = ["dataset", "mechanism", "method", "ε", "seeds", *(t for _, t, _ in HEADLINE)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in _group_order(runs):
        g = groups.get(key)
        if g is None:
            continue
        by = {m: gm["value"].tolist() for m, gm in g.groupby("measure")}
        n = g["seed"].nunique()
        cells = [key[0], key[1], key[2], f"{key[3]:g}", str(n)]
        cells += [_cell(by.get(m, []), fmt) for m, _, fmt in HEADLINE]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _item_table(runs: list[dict], measures: list[dict], columns: list[tuple[str, str, str]],
                item_title: str) -> str:
    """Markdown: rows dataset × item × mechanism × method × ε, one column per measure."""
    df = _frame(measures)
    names = [m for m, _, _ in columns]
    df = df[df["measure"].isin(names) & (df["item"].fillna("") != "")]
    if df.empty:
        return "(none)"
    groups = {k: g for k, g in df.groupby(["dataset", "item", "mechanism", "method", "epsilon"])}
    head = ["dataset", item_title, "mechanism", "method", "ε", *(t for _, t, _ in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    items = {d: list(dict.fromkeys(df[df["dataset"] == d]["item"])) for d in df["dataset"].unique()}
    order = _group_order(runs)
    for d in dict.fromkeys(k[0] for k in order):
        for item in items.get(d, []):
            for key in (k for k in order if k[0] == d):
                g = groups.get((d, item, key[1], key[2], key[3]))
                if g is None:
                    continue
                by = {m: gm["value"].tolist() for m, gm in g.groupby("measure")}
                cells = [d, item, key[1], key[2], f"{key[3]:g}"]
                cells += [_cell(by.get(m, []), fmt) for m, _, fmt in columns]
                lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(runs: list[dict], measures: list[dict], args: argparse.Namespace, opts: dict,
             wall: float) -> str:
    ok = [r for r in runs if r["status"] == "ok"]
    failed = [r for r in runs if r["status"] == "failed"]
    skipped: dict[tuple, str] = {}
    for r in runs:
        if r["status"] == "skipped":
            skipped.setdefault((r["dataset"], r["mechanism"], r["method"]), r["reason"])
    fallbacks: dict[tuple, str] = {}
    for r in ok:
        if r["fallbacks"]:
            fallbacks.setdefault((r["dataset"], r["method"]), r["fallbacks"])
    mode = "quick" if args.quick else "paper" if args.paper else "grid"
    out = [
        "# Fidelity benchmark (curator view, not private)",
        "",
        f"`{' '.join(['.venv/bin/python', 'benchmarks/fidelity.py', *sys.argv[1:]])}` — mode {mode}, "
        f"setup {opts['setup']}, δ = {opts['delta']:g}, TPC-H sf {opts['tpch_sf']:g}, census {opts['households']:,} households "
        f"and {opts['census_queries']:,} queries per panel. {len(ok)} runs ok, {len(failed)} failed, "
        f"{sum(r['status'] == 'skipped' for r in runs)} skipped; wall time {wall:.0f} s "
        f"({wall / 60:.1f} min), jobs {args.jobs}.",
        "",
        "Means ± standard error over seeds. Quality and its properties: SDMetrics-compatible "
        "(`QualityReport(sdmetrics_compatible=True)`); *Quality (relviz, all pairs)*: relviz's "
        "averages over all items. degree sim. and 3-way errors: means over the private FKs (3-way: "
        "those with attributes on both sides). Workload: TPC-H mean relative error over the queries, "
        "or census mean relative error over the four panels. Peak MiB: VmHWM during fit + sample; "
        "added MiB: that peak minus the resident memory at the start of the fit.",
        "",
        "## Headline",
        "",
        headline_table(runs, measures),
        "",
        "## Per foreign key and relation",
        "",
        _item_table(runs, measures, [("degree_similarity", "degree sim.", ".3f"),
                                     ("xt3_avg_pct", "3-way avg %", ".1f"),
                                     ("xt3_max_pct", "3-way max %", ".1f")], "FK / relation"),
        "",
        "## Paper workloads",
        "",
        "TPC-H: average relative error per query (PrivLava §7; a query whose real answer is NULL "
        "has none).",
        "",
        _item_table(runs, measures, [("tpch_error", "TPC-H rel. err.", ".3f")], "query"),
        "",
        "Census: mean relative error of the counting queries per panel (c persons, a attributes per "
        "predicate; PrivLava §7.2).",
        "",
        _item_table(runs, measures, [("census_error", "census rel. err.", ".3f")], "panel (c, a)"),
        "",
        "## Skipped cells",
        "",
    ]
    out += [f"* {d} · {m} · {me}: {why}" for (d, m, me), why in skipped.items()] or ["(none)"]
    out += ["", "## Plan fallbacks (FKs the method cannot model, run with degree)", ""]
    out += [f"* {d} · {me}: {why}" for (d, me), why in fallbacks.items()] or ["(none)"]
    out += ["", "## Failed runs", ""]
    out += [f"* {_fmt_key(r)}: {r['reason']}" for r in failed] or ["(none)"]
    return "\n".join(out) + "\n"


# -- figures -----------------------------------------------------------------------------------

FIGURES = (  # (measure, item filter, facet by, title, y title, transform)
    ("xt3_avg_pct_mean", "", "dataset", "3-way cross-table marginal error (average over workloads, "
     "mean over private FKs; Alimohammadi et al. §8)", "error (%)", None),
    ("quality", "", "dataset", "1 − Quality (SDMetrics-compatible QualityReport)", "1 − Quality",
     "1-"),
    ("degree_similarity_mean", "", "dataset", "1 − degree similarity (CardinalityShapeSimilarity, "
     "mean over private FKs)", "1 − similarity", "1-"),
    ("tpch_error", "*", "item", "TPC-H average relative error per query (PrivLava §7, PrivPetal §6)",
     "relative error", None),
    ("census_error", "*", "item", "census counting queries, mean relative error per panel (c, a) "
     "(PrivLava §7.2, PrivPetal §6.2)", "relative error", None),
)


def write_figures(path: Path, measures: list[dict]) -> None:
    """One HTML file: for each error, one panel per dataset (or query / panel), a line per
    mechanism × method against ε (log axis), error bars ± SE over seeds."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots

    df = _frame(measures)
    parts = []
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    dashes = ["solid", "dash", "dot", "dashdot"]
    for measure, item, facet, title, ytitle, transform in FIGURES:
        d = df[df["measure"] == measure]
        d = d[d["item"].fillna("") != ""] if item == "*" else d[d["item"].fillna("") == item]
        d = d.dropna(subset=["value"])
        if d.empty:
            continue
        if facet == "item":  # one dataset per figure, panels per query / panel
            blocks = [(f"{title} — {ds}", d[d["dataset"] == ds], "item") for ds in d["dataset"].unique()]
        else:
            blocks = [(title, d, "dataset")]
        for btitle, b, fcol in blocks:
            facets = list(dict.fromkeys(b[fcol]))
            cols = min(4, len(facets))
            rows = math.ceil(len(facets) / cols)
            fig = make_subplots(rows=rows, cols=cols, subplot_titles=facets,
                                horizontal_spacing=0.06, vertical_spacing=0.35 / rows)
            methods = list(dict.fromkeys(b["method"]))
            mechs = list(dict.fromkeys(b["mechanism"]))
            lines = list(dict.fromkeys(zip(b["mechanism"], b["method"], strict=True)))
            eps = sorted(set(b["epsilon"]))
            shown: set = set()
            for k, f in enumerate(facets):
                r, c = k // cols + 1, k % cols + 1
                for (mech, meth), g in b[b[fcol] == f].groupby(["mechanism", "method"], sort=False):
                    stats = [(e, *_mean_se(gg["value"])) for e, gg in g.groupby("epsilon")]
                    dodge = 1.04 ** (lines.index((mech, meth)) - (len(lines) - 1) / 2)  # bars apart
                    x = [s[0] * dodge for s in stats]
                    y = [(1 - s[1]) if transform == "1-" else s[1] for s in stats]
                    se = [0.0 if math.isnan(s[2]) else s[2] for s in stats]
                    label = f"{mech} · {meth}"
                    fig.add_trace(go.Scatter(
                        x=x, y=y, error_y={"type": "data", "array": se, "visible": True},
                        mode="lines+markers", name=label, legendgroup=label,
                        customdata=[[s[0], e] for s, e in zip(stats, se, strict=True)],
                        hovertemplate="ε = %{customdata[0]:g}<br>%{y:.4g} ± %{customdata[1]:.2g}",
                        showlegend=label not in shown,
                        line={"color": palette[methods.index(meth) % len(palette)],
                              "dash": dashes[mechs.index(mech) % len(dashes)]}), row=r, col=c)
                    shown.add(label)
                fig.update_xaxes(type="log", title_text="ε", tickvals=eps, ticktext=[f"{e:g}" for e in eps],
                                 range=[math.log10(min(eps) / 1.6), math.log10(max(eps) * 1.6)],
                                 row=r, col=c)
                fig.update_yaxes(title_text=ytitle if c == 1 else None, row=r, col=c)
            fig.update_layout(title=f"{btitle} — curator view (not private)", height=320 * rows + 120,
                              template="plotly_white")
            parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=not parts))
    html = ("<!doctype html><html><head><meta charset='utf-8'><title>relviz fidelity benchmark</title>"
            "</head><body><h1>relviz fidelity benchmark: error against ε</h1><p>Curator view (not "
            "private): every number reads the real data. Lines: mechanism (dash) × relational method "
            "(colour); error bars ± standard error over seeds. Written by benchmarks/fidelity.py."
            "</p>" + "\n".join(parts) + "</body></html>")
    path.write_text(html, encoding="utf-8")


if __name__ == "__main__":
    main()
