"""The ``relviz`` command: the same engine as the Python API, headless.

Commands:

* ``relviz datasets`` — list the built-in databases.
* ``relviz schema --dataset NAME`` / ``--data PATH`` — print a schema as JSON (a written one for
  built-ins; an inferred proposal for a user's data, to edit and pass back with ``--schema``).
  For a user's data the JSON's ``"proposals"`` list says what was proposed and why (keys and
  near-keys with their duplicates, small public tables, datetimes, excluded identifier / personal
  / free-text columns, integer numerics, key formats), and the same notes go to stderr; they are
  read from the data, so the release's ``schema.json`` never carries them.
* ``relviz validate --data PATH --schema schema.json`` — report every problem at once.
  ``--drop-undeclared`` (also on ``synth``) adds every data column the schema does not describe
  to its table's ``exclude`` list instead of reporting it; excluded columns are listed, and
  synthetic tables omit them.
* ``relviz synth (--dataset NAME | --data PATH --schema schema.json) --epsilon E --delta D
  --out DIR`` — fit, sample and write two folders, and print a summary (``--preset NAME``
  picks a named plan of ``relviz.plan.PRESETS``, e.g. ``baseline-80-20``, the papers'
  per-relation baseline):

  - ``DIR/release/`` — the differentially private release, safe to share: ``tables/*.parquet``,
    ``synthetic.sqlite`` (with PRIMARY/FOREIGN KEY constraints), ``ledger.json``, ``plan.json``,
    ``schema.json`` and, with ``--save-model``, ``synthesizer.pkl`` (the fitted models,
    ``RelationalSynthesizer.save(release=True)``: ``RelationalSynthesizer.load`` it to sample
    more);
  - ``DIR/curator/`` — for the data curator only (reads the real data, outside the guarantee):
    ``report.html`` (self-contained: real-vs-synthetic comparisons), ``cap_report.txt`` (exactly
    what the degree caps removed), ``timings.json``.

  ``--method privlava`` / ``--method privpetal`` / ``--method denorm`` (or ``--preset denorm``)
  use a database method, which owns the whole plan and needs a public cap τ on every private
  FK; ``--dp-caps RHO`` releases a DP cap (the 0.99-quantile of the group sizes, among 1…64,
  exponential mechanism) for every private FK without one before the run, with ρ = RHO in all,
  charged to the ledger on top of the plan's budget. The summary lists the ledger per component
  (every release is in ``release/ledger.json``).

  ``--backend duckdb`` / ``--backend spark`` compute the exact counts (marginals, degrees,
  per-parent and cross-table counts) as group-by queries in DuckDB or Spark instead of numpy;
  the answers, the ledger and, for a given ``--seed``, the output are the same.

  A schema whose domains (or FK nullability) were read from the data is refused unless
  ``--allow-inferred-schema`` is given; the release is then not differentially private and the
  ledger, the summary and ``report.html`` say so.

* ``relviz demo-cache [--dataset NAME] [--epsilons 0.25,0.5,…] [--delta D] [--seed S]`` —
  precompute the ε sweep of the stakeholder page (``notebooks/stakeholder-demo.ipynb``) into the
  sweep cache (``relviz.sweep.cached_epsilon_sweep``), so that the page opens at once; prints the
  file. Its defaults are the page's (``$RELVIZ_DEMO_EPSILONS`` included); ``--refresh``
  recomputes. The file compares with the real data: curator view (not private).

``--data`` takes a folder of CSV or Parquet files (one per table; Parquet when the folder holds no
CSV file), a SQLite file (``.sqlite``, ``.db``) or a DuckDB file (``.duckdb``). Exit status: 0 on
success, 2 on invalid input (every problem listed), 130 when interrupted (the ledger written so
far is true).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from relviz.release import MODEL_FILE, RELEASE_FILES, write_release, write_release_metadata

__all__ = ["main", "RELEASE", "CURATOR", "RELEASE_FILES", "MODEL_FILE"]

RELEASE = "release"
"""Sub-folder of ``--out`` holding the differentially private release (safe to share)."""
CURATOR = "curator"
"""Sub-folder of ``--out`` holding what reads the real data (for the curator only)."""


def _load_data(args: argparse.Namespace):  # noqa: ANN202 - Database
    from relviz import datasets
    from relviz.database import Database
    from relviz.schema import Schema

    if args.dataset:
        return datasets.load(args.dataset)
    path = Path(args.data)
    schema = Schema.from_json(args.schema) if getattr(args, "schema", None) else None
    if schema is None and not getattr(args, "allow_inferred_schema", False) and args.command == "synth":
        raise SystemExit("relviz synth: --data needs --schema schema.json (public domains). "
                         "Get a starting point with `relviz schema --data PATH > schema.json`, review "
                         "it, or pass --allow-inferred-schema to use domains read from the data "
                         "(not differentially private).")
    parquet_dir = path.is_dir() and any(path.glob("*.parquet")) and not any(path.glob("*.csv"))
    out_of_core = getattr(args, "out_of_core", False) or (args.command == "synth"
                                                          and getattr(args, "no_report", False))
    readable = parquet_dir or path.suffix.lower() in (".duckdb", ".sqlite", ".sqlite3", ".db")
    if getattr(args, "out_of_core", False) and (schema is None or not readable):
        raise SystemExit("relviz: --out-of-core reads a .duckdb/.sqlite file or a Parquet folder "
                         "with --schema")
    if out_of_core and schema is not None and readable:
        # nothing reads the real values themselves (no report; or validate --out-of-core): read
        # the source out of core (relviz.source), keeping codes, parent rows and key hashes
        from relviz.source import EncodedDatabase

        print(f"note: {path} is read out of core (codes, parent rows and key hashes "
              "in memory; relviz.source)", file=sys.stderr)
        read = (EncodedDatabase.from_parquet_dir if parquet_dir else EncodedDatabase.from_duckdb
                if path.suffix.lower() == ".duckdb" else EncodedDatabase.from_sqlite)
        db = read(path, schema)
    elif parquet_dir:
        db = Database.from_parquet_dir(path, schema, validate=False)
    elif path.is_dir():
        db = Database.from_csv_dir(path, schema, validate=False)
    elif path.suffix.lower() == ".duckdb":
        db = Database.from_duckdb(path, schema, validate=False)
    elif path.suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        db = Database.from_sqlite(path, schema, validate=False)
    else:
        raise SystemExit(f"relviz: cannot read {path} (expected a folder of CSV or Parquet files, .sqlite/.db or .duckdb)")
    if getattr(args, "drop_undeclared", False):
        db, dropped = db.drop_undeclared()
        for table, cols in dropped.items():
            print(f"note: --drop-undeclared: excluded {table}: {', '.join(cols)}", file=sys.stderr)
    return db


def _excluded_lines(db) -> list[str]:  # noqa: ANN001 - Database
    """One line per table with excluded columns (``Table.exclude``)."""
    return [f"{t}: {', '.join(cols)}" for t, cols in db.excluded_columns().items()]


def _proposal_notes(schema) -> str:  # noqa: ANN001 - Schema
    """The proposals of an inferred schema, grouped by table, for a curator to review."""
    props = schema.proposals
    if not props:
        return ""
    lines = [f"relviz schema: {len(props)} proposals read from the data (curator view, not private) "
             "— review each; the JSON's \"proposals\" list holds them too:"]
    table = None
    for p in props:
        if p.table != table:
            table = p.table
            t = schema.table(table) if table in schema.table_names else None
            tag = "" if t is None else (" (public)" if t.public else " (private)")
            lines.append(f"  {table}{tag}")
        where = p.column or "(table)"
        ex = (" e.g. " + ", ".join(repr(v) for v in p.examples)) if p.examples else ""
        lines.append(f"    {where:<18} {p.kind:<12} {p.proposal}: {p.reason}{ex}")
    inferred = len(schema.inferred_problems())
    if inferred:
        lines.append(f"  {inferred} domain(s), key format(s) or FK nullabilities are marked \"inferred\": "
                     "confirm each (declare public bounds and lists, then delete its provenance) — "
                     "relviz synth refuses them otherwise (or use --allow-inferred-schema, NOT "
                     "differentially private)")
    return "\n".join(lines)


def _cmd_datasets(args: argparse.Namespace) -> int:
    from relviz import datasets

    for name in datasets.available():
        info = datasets.describe(name)
        mark = " (default)" if name == datasets.DEFAULT else ""
        print(f"{name}{mark}: {info.title}\n    source: {info.source}; licence: {info.licence}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    db = _load_data(args)
    print(db.schema.to_json(proposals=True))
    notes = _proposal_notes(db.schema)
    if notes:
        print(notes, file=sys.stderr)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    db = _load_data(args)
    problems = db.problems()
    if problems:
        from relviz.errors import DataError

        print(DataError(problems), file=sys.stderr)
        return 2
    for w in db.warnings():
        print(f"warning: {w}", file=sys.stderr)
    print(f"valid: {db}")
    for line in _excluded_lines(db):
        print(f"  excluded (not modelled): {line}")
    return 0


class _Bar:
    """A tqdm progress bar per component, fed by ProgressEvent."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.key: tuple[str, str] | None = None

    def __call__(self, ev) -> None:  # noqa: ANN001 - ProgressEvent
        if not self.enabled:
            return
        key = (ev.stage, ev.component)
        if not sys.stderr.isatty():  # logs: one line per finished step, no carriage returns
            if ev.fraction >= 1.0 and ev.component:
                print(f"  {ev.stage} {ev.component}: {ev.message} ({ev.elapsed:.1f} s, "
                      f"ρ spent {ev.rho_spent:.4g})", file=sys.stderr)
            return
        from tqdm import tqdm

        if key != self.key:
            if self.bar is not None:
                self.bar.close()
            label = f"{ev.stage} {ev.component}".strip()
            self.bar = tqdm(total=100, desc=label[:48].ljust(48), unit="%", leave=False,
                            bar_format="{desc} {bar} {n_fmt}% [{elapsed}] {postfix}")
            self.key = key
        self.bar.n = int(round(ev.fraction * 100))
        self.bar.set_postfix_str(f"ρ={ev.rho_spent:.4g} {ev.message}"[:50], refresh=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _cmd_synth(args: argparse.Namespace) -> int:
    from relviz import datasets
    from relviz.database import release_freed_memory
    from relviz.errors import RelvizError
    from relviz.plan import Plan
    from relviz.synthesizer import RelationalSynthesizer

    t_start = time.perf_counter()
    out = Path(args.out)
    release, curator = out / RELEASE, out / CURATOR
    db = _load_data(args)
    if args.plan and args.preset:
        print("relviz synth: give --plan or --preset, not both", file=sys.stderr)
        return 2
    if args.plan:  # the plan's own budget unless --epsilon / --delta are given
        plan = Plan.from_json(args.plan).with_budget(epsilon=args.epsilon, delta=args.delta)
    elif args.preset:
        plan = Plan.preset(db.schema, args.preset, args.epsilon or 1.0, args.delta or 1e-6,
                           mechanism=args.mechanism)
    else:
        plan = Plan.default(db.schema, args.epsilon or 1.0, args.delta or 1e-6,
                            mechanism=args.mechanism, method=args.method)
        for line in plan.substitution_summary(db.schema, args.method):
            print(f"note: {line}", file=sys.stderr)
    if args.noise:  # else the plan's sampler ("auto": OpenDP's exact noise unless --seed is given)
        plan = plan.with_noise(args.noise)
    try:
        plan.resolved_noise(seeded=args.seed is not None)
    except RelvizError as e:
        print(f"relviz synth: {e}", file=sys.stderr)
        return 2
    for table in args.relation or ():
        plan = plan.with_relation(db.schema, table, args.method if args.method != "degree"
                                  else "biadjacency")
    if args.public_link:
        plan = plan.with_public_links(db.schema, args.public_link)
    for spec in args.link or ():  # one FK's linker (after the plan, before its problems)
        fk, sep, method = spec.rpartition("=")
        try:
            if not sep or not fk or not method:
                raise ValueError(f"--link wants FK=METHOD, got {spec!r}")
            name = db.schema.foreign_key(fk).name
            if not any(c.kind == "edge" and c.name == name for c in plan.components):
                raise ValueError(f"{name} is not a linked FK of this plan (its own component)")
            plan = plan.with_method(name, method)
        except (RelvizError, KeyError, ValueError) as e:
            print(f"relviz synth: --link {spec}: {e}", file=sys.stderr)
            return 2
    if args.dp_caps is not None:
        db = _with_dp_caps(db, args)
        if db is None:
            return 2
    data_problems, plan_problems = db.problems(), plan.problems(db.schema)
    if data_problems or plan_problems:  # as RelationalSynthesizer.fit: data first, then the plan
        from relviz.errors import DataError, PlanError

        error = DataError(data_problems + plan_problems) if data_problems else PlanError(plan_problems)
        print(error, file=sys.stderr)
        unit = db.schema.privacy_unit
        uncapped = [fk.name for fk in db.schema.private_foreign_keys
                    if unit is None or fk.name not in unit.caps]
        if uncapped and any(p.kind == "missing_cap" for p in data_problems + plan_problems):
            print(f"relviz synth: {plan.database_method or 'this schema'} needs a public cap τ on "
                  f"every private FK ({', '.join(uncapped)} {'has' if len(uncapped) == 1 else 'have'} "
                  "none): set privacy_unit.caps in the schema JSON, or pass --dp-caps RHO to "
                  "release DP caps before the run (RHO is charged to the ledger, e.g. --dp-caps 0.01)",
                  file=sys.stderr)
        return 2
    inferred = db.schema.inferred_problems()
    if inferred and not args.allow_inferred_schema:
        from relviz.errors import SchemaError
        from relviz.synthesizer import INFERRED_HEADLINE

        print(SchemaError(inferred, headline=INFERRED_HEADLINE), file=sys.stderr)
        return 2
    for w in db.warnings():
        print(f"warning: {w}", file=sys.stderr)
    release.mkdir(parents=True, exist_ok=True)
    curator.mkdir(parents=True, exist_ok=True)
    bar = _Bar(not args.quiet)
    synth = RelationalSynthesizer(plan, random_state=args.seed, progress=bar,
                                  allow_inferred=args.allow_inferred_schema,
                                  backend=args.backend)
    timings: dict[str, float] = {}
    schema, real_rows, excluded = db.schema, db.row_counts(), _excluded_lines(db)
    try:
        t0 = time.perf_counter()
        synth.fit(db)
        timings["fit"] = time.perf_counter() - t0
        if args.no_report:  # sampling reads no private data and no report needs it: let it go
            db = None
            if args.dataset:  # the built-in loader's cache holds it too
                datasets.forget(args.dataset)
            release_freed_memory()
        t0 = time.perf_counter()
        if args.no_report:  # no report reads the synthetic tables: stream them to Parquet
            streamed = synth.sample_to(release / "tables", scale=args.scale)
            syn, syn_rows = None, streamed.rows
        else:
            streamed, syn = None, synth.sample(scale=args.scale)
            syn_rows = {t: len(syn[t]) for t in schema.table_names}
        timings["sample"] = time.perf_counter() - t0
    except KeyboardInterrupt:
        synth.cancel()
        bar.close()
        if hasattr(synth, "accountant_"):
            synth.accountant_.to_json(release / "ledger.json")
        print(f"interrupted: the ledger of what was spent is in {release / 'ledger.json'}",
              file=sys.stderr)
        return 130
    except RelvizError as e:
        bar.close()
        if hasattr(synth, "accountant_"):
            synth.accountant_.to_json(release / "ledger.json")
        print(f"relviz synth failed: {e}", file=sys.stderr)
        return 2
    bar.close()
    t0 = time.perf_counter()
    if streamed is not None:
        from relviz.stream import parquet_to_sqlite

        parquet_to_sqlite(schema, streamed.paths, release / "synthetic.sqlite")
        write_release_metadata(release, synth, model=args.save_model)
    else:
        write_release(release, synth, syn, model=args.save_model)
    (curator / "cap_report.txt").write_text(str(synth.cap_report_) + "\n", encoding="utf-8")
    timings["write"] = time.perf_counter() - t0
    summary = None
    if not args.no_report:
        t0 = time.perf_counter()
        summary = _report(db, syn, synth, curator, args)
        timings["report"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    _print_summary(schema, real_rows, excluded, syn_rows, synth, summary, timings, out)
    (curator / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    return 0


def _with_dp_caps(db, args: argparse.Namespace):  # noqa: ANN001, ANN202 - Database | None
    """Release DP caps for the private FKs without one (``--dp-caps RHO``); ``None`` on bad input."""
    from fractions import Fraction

    import numpy as np

    from relviz.privacy.caps import with_dp_caps

    try:
        rho = Fraction(str(args.dp_caps))
    except (ValueError, ZeroDivisionError):
        rho = Fraction(-1)
    if rho <= 0:
        print(f"relviz synth: --dp-caps needs a positive ρ (got {args.dp_caps})", file=sys.stderr)
        return None
    if [p for p in db.problems() if p.kind != "missing_cap"]:
        return db  # reported with the plan's problems
    rng = np.random.default_rng(None if args.seed is None else [args.seed, 0xCA9])
    out, releases = with_dp_caps(db, rho=rho, quantile=0.99, candidates=(1, 64), rng=rng)
    if not releases:
        print("note: --dp-caps: every private FK already has a cap τ; nothing released",
              file=sys.stderr)
    for r in releases:
        print(f"note: --dp-caps: τ = {r.tau} for {r.fk} (DP {r.quantile:g}-quantile among 1…64, "
              f"ρ = {float(r.rho):.4g}, charged to the ledger as component 'caps')", file=sys.stderr)
    return out


def _report(db, syn, synth, curator: Path, args: argparse.Namespace):  # noqa: ANN001, ANN202
    """Write ``curator/report.html`` (reads the real data: curator only)."""
    from relviz.evaluate import RelationalReport
    from relviz.evaluate.html import write_report

    report = RelationalReport().generate(db, syn)
    extra = {"cap enforcement (curator view)": str(synth.cap_report_),
             "sampling": "; ".join(synth.sample_report_) or "no rows dropped"}
    write_report(curator / "report.html", db, syn, ledger=synth.accountant_.to_dict(),
                 title=f"relviz — {db.schema.name or 'database'} at ε = {synth.plan_.epsilon_effective:g}",
                 extra=extra, report=report)
    return report


def _print_summary(schema, real_rows: dict[str, int], excluded: list[str], syn_rows: dict[str, int], synth,  # noqa: ANN001
                   report, timings: dict[str, float], out: Path) -> None:  # noqa: ANN001
    from relviz.synthesizer import NOT_DP

    acc = synth.accountant_
    not_dp = [n for n in acc.notes if n.startswith(NOT_DP)]
    print(f"relviz synth: {schema.name or 'database'} → {out}")
    for note in not_dp:
        print(f"  WARNING — {note}")
    print(f"  privacy: ρ spent {float(acc.spent()):.6g} of {float(acc.rho_total):.6g} "
          f"(ε = {acc.epsilon_spent():.4g}, δ = {acc.delta:g}, {acc.conversion} conversion); "
          f"unit: {acc.unit}")
    by: dict[str, list] = {}
    for e in acc.ledger:
        by.setdefault(e.component, []).append(e)
    print(f"  ledger ({len(acc.ledger)} entries; every release in {RELEASE}/ledger.json):")
    for comp in [*acc.budgets, *(k for k in by if k not in acc.budgets)]:
        entries = by.get(comp, [])
        spent = sum((e.rho for e in entries), 0)
        planned = acc.budgets.get(comp)
        of = f" of {float(planned):.4g}" if planned is not None else ""
        mechs = sorted({e.mechanism for e in entries})
        n = sum(e.count for e in entries)
        print(f"    {comp:<40} ρ {float(spent):.4g}{of}  ({n} release{'' if n == 1 else 's'}"
              + (f", {'/'.join(mechs)}" if mechs else "") + ")")
    print("  rows (real → synthetic):")
    for t in schema.table_names:
        tag = " (public, copied)" if schema.table(t).public else ""
        print(f"    {t:<24} {real_rows.get(t, 0):>10,} → {syn_rows[t]:>10,}{tag}")
    if excluded:
        print("  excluded columns (schema \"exclude\": not modelled, not in the synthetic tables):")
        for line in excluded:
            print(f"    {line}")
    if report is not None:
        print(report.summary(indent="  "))
    print("  time: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    safe = ("NOT differentially private (domains read from the data, see the warning above): share "
            "it only knowing that" if not_dp else "the differentially private release, safe to share")
    print(f"  wrote {out / RELEASE}/ — {safe}:\n"
          "    tables/*.parquet, synthetic.sqlite, ledger.json, plan.json, schema.json")
    print(f"  wrote {out / CURATOR}/ — for the curator only, do NOT share (reads the real data):\n"
          "    " + ("report.html, " if report is not None else "") + "cap_report.txt, timings.json")


def _cmd_demo_cache(args: argparse.Namespace) -> int:
    from relviz import sweep as sw

    grid = sw.demo_epsilons() if args.epsilons is None else tuple(float(e) for e in args.epsilons.split(","))
    dataset = args.dataset or sw.DEMO_DATASET
    delta = sw.DEMO_DELTA if args.delta is None else args.delta
    seed = sw.DEMO_SEED if args.seed is None else args.seed
    quiet = args.quiet

    def progress(fraction: float, message: str) -> None:
        if not quiet:
            print(f"  {100 * fraction:3.0f}%  {message}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    result, hit = sw.cached_epsilon_sweep(dataset, grid, delta=delta, seed=seed, cache_dir=args.cache_dir,
                                          refresh=args.refresh, progress=progress)
    what = "already cached" if hit else f"computed {len(result.epsilons)} runs in {time.perf_counter() - t0:.0f} s"
    print(f"{dataset}, ε ∈ {{{', '.join(f'{e:g}' for e in result.epsilons)}}}, δ = {delta:g}, "
          f"seed {seed}: {what}\n{result.meta['path']}\n(curator view, not private: it compares the "
          "synthetic copies with the real data)")
    return 0


def _parser() -> argparse.ArgumentParser:
    from relviz.plan import PRESETS

    p = argparse.ArgumentParser(prog="relviz", description="Differentially private synthetic "
                                "relational databases.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("datasets", help="list the built-in databases")

    def source(sp: argparse.ArgumentParser, need_schema: bool = False) -> None:
        g = sp.add_mutually_exclusive_group(required=True)
        g.add_argument("--dataset", help="a built-in database (see `relviz datasets`)")
        g.add_argument("--data", help="folder of CSV or Parquet files, SQLite file or DuckDB file")
        sp.add_argument("--schema", help="schema JSON (public domains, keys, privacy unit)")

    def drop_undeclared(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--drop-undeclared", action="store_true",
                        help="exclude every data column the schema does not describe (added to "
                             "its table's exclude list and reported) instead of refusing it")

    s = sub.add_parser("schema", help="print a schema as JSON (inferred for --data, with the "
                       "proposals and their reasons)")
    source(s)
    v = sub.add_parser("validate", help="report every problem of a database")
    source(v)
    drop_undeclared(v)
    v.add_argument("--out-of-core", action="store_true",
                   help="read a .duckdb/.sqlite file or Parquet folder chunk by chunk, keys checked "
                        "by DuckDB (relviz.source.EncodedDatabase; needs --schema), for a database "
                        "larger than memory")
    y = sub.add_parser("synth", help="fit, sample and write a synthetic database")
    source(y)
    drop_undeclared(y)
    y.add_argument("--epsilon", type=float, default=None,
                   help="ε of the whole database (default 1, or the --plan's)")
    y.add_argument("--delta", type=float, default=None, help="δ (default 1e-6, or the --plan's)")
    y.add_argument("--plan", help="plan JSON (shares and methods); ε/δ flags override its budget")
    y.add_argument("--preset", choices=list(PRESETS), default=None,
                   help="a named plan (relviz.plan.PRESETS; replaces --method): baseline-80-20 "
                        "is the papers' per-relation baseline (80%% tables, 20%% group sizes, "
                        "degree linking), denorm the papers' Denorm baseline")
    y.add_argument("--mechanism", default="mst", help="single-table mechanism (default mst)")
    y.add_argument("--method", default="degree",
                   help="relational method: a per-FK linker, degree (default) or biadjacency, or a "
                        "database method that owns the whole plan: privlava, privpetal or denorm "
                        "(they model FKs with a cap τ, see --dp-caps; an FK to a public parent "
                        "without one, or with a PrivPetal cap above 64, is linked with degree and "
                        "listed)")
    y.add_argument("--public-link", metavar="METHOD", default=None,
                   help="the linker of every linked FK to a public parent, after --method/--preset/"
                        "--plan: fk-attribute models which parent as an attribute of the child's "
                        "mechanism (kept: child-parent correlations; docs/methods/keyed.md)")
    y.add_argument("--link", action="append", metavar="FK=METHOD",
                   help="the linker of one FK, after --method/--preset/--plan (repeatable), e.g. "
                        "flights.dest->airports=fk-attribute: the FK to a public parent as an "
                        "attribute of the child's mechanism (docs/methods/keyed.md); with a "
                        "database method, only for a child it does not generate")
    y.add_argument("--dp-caps", type=float, default=None, metavar="RHO",
                   help="before the run, release a DP cap τ (0.99-quantile of the group sizes, "
                        "among 1…64) for every private FK without one, with ρ = RHO in all, "
                        "charged to the ledger on top of the plan's budget")
    y.add_argument("--relation", action="append", metavar="TABLE",
                   help="model link TABLE (two FKs) as one many-to-many relation (bi-adjacency); "
                        "repeatable")
    y.add_argument("--seed", type=int, default=None, help="seed (study/teaching only, not release)")
    y.add_argument("--noise", choices=["numpy", "opendp"], default=None,
                   help="noise sampler: opendp (exact, not seedable) or numpy (floating-point, "
                        "seedable); default: opendp, or numpy with --seed")
    y.add_argument("--scale", type=float, default=1.0, help="row-count multiplier")
    y.add_argument("--backend", choices=["pandas", "duckdb", "spark"], default="pandas",
                   help="where the exact counts are computed before the noise (same answers from "
                        "each): pandas in memory (default), duckdb, or spark (pyspark, local[2])")
    y.add_argument("--out", required=True, help="output folder")
    y.add_argument("--no-report", action="store_true",
                   help="skip curator/report.html; the synthetic tables are then streamed to "
                        "Parquet in chunks and never held whole (RelationalSynthesizer.sample_to), "
                        "and a .duckdb/.sqlite file or Parquet folder given with --schema is read "
                        "out of core (relviz.source.EncodedDatabase)")
    y.add_argument("--quiet", action="store_true", help="no progress bar")
    y.add_argument("--save-model", action="store_true",
                   help=f"also write {RELEASE}/{MODEL_FILE}: the fitted models without the noise "
                        "seed (RelationalSynthesizer.load(path).sample() draws more)")
    y.add_argument("--allow-inferred-schema", action="store_true",
                   help="accept domains (or FK nullability) read from the data, with or without "
                        "--schema: the release is NOT differentially private")
    d = sub.add_parser("demo-cache", help="precompute the stakeholder page's ε sweep (a cache file)")
    d.add_argument("--dataset", default=None, help="a built-in database (default: the page's, nycflights13)")
    d.add_argument("--epsilons", default=None,
                   help="comma-separated ε grid (default: $RELVIZ_DEMO_EPSILONS, else the page's grid)")
    d.add_argument("--delta", type=float, default=None, help="δ (default: the page's, 1e-6)")
    d.add_argument("--seed", type=int, default=None, help="seed of every run (default: the page's, 0)")
    d.add_argument("--cache-dir", default=None,
                   help="cache folder (default $RELVIZ_CACHE_DIR/sweeps or ~/.cache/relviz/sweeps)")
    d.add_argument("--refresh", action="store_true", help="recompute even when cached")
    d.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``relviz`` command."""
    args = _parser().parse_args(argv)
    handlers = {"datasets": _cmd_datasets, "schema": _cmd_schema, "validate": _cmd_validate,
                "synth": _cmd_synth, "demo-cache": _cmd_demo_cache}
    return handlers[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
