"""Peak memory and time of the curator report (``relviz synth``'s report stage) on TPC-H.

Run from the repository root::

    python benchmarks/report_memory.py [--sf 0.01] [--coarse] [--before] [--html PATH]

The real database is TPC-H at scale factor ``--sf`` (``relviz.datasets.tpch.raw_tables``: the
generator's unrevised tables, free text dropped) with the schema ``relviz schema`` proposes for
it (``relviz.schema.infer_schema``: ids excluded as keys, dates as datetimes), and then — unless
``--coarse`` — every date at **day resolution** (one bin per day, ``date=True``) and the money
columns in 1-cent-ish bins (4,096 bins): the fine public domains a curator may well declare, and
the setting in which the report stage was OOM-killed (> 19 GB) before issue 15. One 3-way
cross-table workload of ``lineitem → orders`` (``l_shipdate × l_commitdate × o_orderdate``) then
has about 1.5·10¹⁰ cells.

The "synthetic" database is a **shuffled copy** of the real one (every attribute of every private
table permuted independently; keys and FKs kept): a fit (degree method + MST) with day-resolution
domains takes far longer than the report and is beside the point here — the report's cost depends
on the domains and the row counts, not on the synthesizer.

Printed: the total number of cells the pre-issue-15 cross-table code held as dense float64 arrays
at once (all workloads of a relation, real and synthetic), then, per report section (the progress
messages of ``relviz.evaluate.html.render_report``), the wall time and the peak resident memory
of the process during that section (Linux ``VmHWM``, reset per section through
``/proc/self/clear_refs``; a sampling thread where that is not allowed). ``--before`` also runs the
old dense path (``relviz.marginals.all_marginals`` for every workload of the heaviest relation, as
``cross_marginal_error`` did) in a child process limited to 8 GB of address space, to show what
it does. Target: the report stage's peak ≤ 2 GB at sf 0.01 (docs/evaluation.md, "Memory").
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from relviz.database import Database  # noqa: E402
from relviz.schema import Attribute, Schema, Table, infer_schema  # noqa: E402

MONEY_BINS = 4096


def _status(field: str) -> float:
    """A ``/proc/self/status`` field in MB (NaN when unavailable)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


class PeakMeter:
    """Peak RSS since the last :meth:`reset` (VmHWM reset via clear_refs, else a 10 ms sampler)."""

    def __init__(self) -> None:
        self.exact = self._clear()
        self._peak = _status("VmRSS")
        if not self.exact:
            threading.Thread(target=self._sample, daemon=True).start()

    @staticmethod
    def _clear() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def _sample(self) -> None:
        while True:
            self._peak = max(self._peak, _status("VmRSS"))
            time.sleep(0.01)

    def reset(self) -> None:
        if self.exact:
            self._clear()
        self._peak = _status("VmRSS")

    def peak(self) -> float:
        return _status("VmHWM") if self.exact else max(self._peak, _status("VmRSS"))


def fine_schema(schema: Schema, frames: dict[str, pd.DataFrame], coarse: bool) -> Schema:
    """The proposed schema, with dates at day resolution and money in fine bins (unless coarse)."""
    if coarse:
        return schema
    for t in schema.tables:
        attrs = []
        for a in t.attributes:
            if a.kind == "datetime":
                lo, hi = pd.Timestamp(a.lower), pd.Timestamp(a.upper)
                days = int((hi - lo) / pd.Timedelta(days=1)) + 1
                a = Attribute.datetime(a.name, lo, hi, bins=days, date=True, nullable=a.nullable)
            elif a.kind == "numeric" and not a.integer and a.name.endswith(("price", "bal", "cost")):
                a = Attribute.numeric(a.name, a.lower, a.upper, bins=MONEY_BINS, nullable=a.nullable)
            attrs.append(a)
        schema = schema.with_table(Table(t.name, t.primary_key, tuple(attrs), public=t.public,
                                         exclude=t.exclude))
    return schema


def shuffled_copy(db: Database, seed: int = 0) -> Database:
    """Every attribute of every private table permuted independently (keys, FKs kept)."""
    rng = np.random.default_rng(seed)
    frames = {}
    for t in db.schema.tables:
        df = db[t.name].copy()
        if not t.public:
            for a in t.attributes:
                df[a.name] = df[a.name].to_numpy()[rng.permutation(len(df))]
        frames[t.name] = df
    return Database(db.schema, frames, validate=False)


def dense_cells(db: Database) -> tuple[int, str]:
    """Cells the old cross-table code held at once for the heaviest private FK (real + synthetic)."""
    from relviz.marginals import enumerate_workloads

    s, best = db.schema, (0, "")
    for fk in s.private_foreign_keys:
        c, p = s.table(fk.child), s.table(fk.parent)
        if c.attributes and p.attributes:
            wls = enumerate_workloads([a.size for a in c.attributes], [a.size for a in p.attributes], 3)
            best = max(best, (2 * sum(w.size for w in wls), fk.name))
    return best


def _before(args: argparse.Namespace) -> None:
    """Child process: the pre-issue-15 dense path on the heaviest FK, under an 8 GB limit."""
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    db = load(args)
    syn = shuffled_copy(db)
    _, name = dense_cells(db)
    from relviz.evaluate._common import codes, join_rows
    from relviz.marginals import all_marginals, enumerate_workloads

    fk = db.schema.foreign_key(name)
    rc, rp, sc, sp = codes(db, fk.child), codes(db, fk.parent), codes(syn, fk.child), codes(syn, fk.parent)
    wls = enumerate_workloads(rc.sizes, rp.sizes, 3)
    t = time.perf_counter()
    try:
        real = all_marginals(rc.codes, rp.codes, *join_rows(db, fk), wls)
        syn_m = all_marginals(sc.codes, sp.codes, *join_rows(syn, fk), wls)
        print(f"  old dense path on {name}: finished in {time.perf_counter() - t:.1f} s "
              f"({len(real) + len(syn_m)} arrays)")
    except MemoryError as e:
        print(f"  old dense path on {name}: MemoryError after {time.perf_counter() - t:.1f} s under an 8 GB "
              f"address-space limit ({e})")
    print(f"  peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


def load(args: argparse.Namespace) -> Database:
    from relviz.datasets import tpch

    frames = tpch.raw_tables(args.sf)
    schema = fine_schema(infer_schema(frames), frames, args.coarse)
    return Database(schema, frames, validate=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=0.01)
    ap.add_argument("--coarse", action="store_true", help="keep the proposed 32-bin domains")
    ap.add_argument("--before", action="store_true", help="also run the old dense path (child process)")
    ap.add_argument("--html", type=Path, default=None, help="write the report here")
    ap.add_argument("--_before-child", dest="before_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.before_child:
        _before(args)
        return

    meter = PeakMeter()
    t = time.perf_counter()
    real = load(args)
    syn = shuffled_copy(real)
    print(f"TPC-H sf {args.sf:g}, {'proposed 32-bin' if args.coarse else 'day-resolution dates, fine money'} "
          f"domains; synthetic = shuffled copy; loaded in {time.perf_counter() - t:.1f} s, "
          f"RSS {_status('VmRSS'):,.0f} MB (peak meter: {'VmHWM' if meter.exact else 'sampling'})")
    for tab in real.schema.tables:
        if tab.attributes:
            print(f"  {tab.name:<9} {len(real[tab.name]):>7,} rows  domains "
                  + ", ".join(f"{a.name}={a.size:,}" for a in tab.attributes))
    cells, name = dense_cells(real)
    print(f"old cross-table path held {cells:,} float64 cells at once on {name} "
          f"(= {cells * 8 / 2**30:,.1f} GiB)")
    if args.before:
        cmd = [sys.executable, __file__, "--sf", str(args.sf), "--_before-child"] + (["--coarse"] if args.coarse else [])
        subprocess.run(cmd, check=False)

    from relviz.evaluate.html import render_report

    rows: list[tuple[str, float, float]] = []
    state = {"t": time.perf_counter(), "msg": "start"}
    meter.reset()
    base = _status("VmRSS")

    def progress(fraction: float, message: str) -> None:
        now = time.perf_counter()
        rows.append((state["msg"], now - state["t"], meter.peak()))
        meter.reset()
        state["t"], state["msg"] = now, message

    t0 = time.perf_counter()
    doc = render_report(real, syn, progress=progress)
    progress(1.0, "end")
    total = time.perf_counter() - t0
    print(f"\nreport stage (RelationalReport + report.html), RSS before {base:,.0f} MB:")
    print(f"  {'section':<55} {'seconds':>8} {'peak RSS MB':>12}")
    for msg, sec, pk in rows:
        if sec >= 0.005 or pk > base + 50:
            print(f"  {msg[:55]:<55} {sec:>8.2f} {pk:>12,.0f}")
    peak = max(pk for _, _, pk in rows)
    print(f"  {'TOTAL':<55} {total:>8.2f} {peak:>12,.0f}   (target ≤ 2,048 MB)")
    print(f"report.html: {len(doc.encode()) / 1e6:.1f} MB")
    if args.html:
        args.html.write_text(doc, encoding="utf-8")
        print(f"wrote {args.html}")


if __name__ == "__main__":
    main()
