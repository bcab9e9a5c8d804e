"""The demo's output checker: post-run checks of a ``relviz synth`` output folder (``make demo``).

``python -m relviz.demo_checks OUT`` verifies the split of ``OUT`` into ``release/`` (exactly the files
that are safe to share) and ``curator/`` (the report that reads the real data), that the release's
SQLite file passes ``PRAGMA foreign_key_check`` with zero rows, that the ledger's total ρ equals
the plan's exactly and never exceeds it, and that the ledger does not mark the release as not
differentially private; exit status 1 when any fails.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

from relviz.cli import CURATOR, MODEL_FILE, RELEASE, RELEASE_FILES
from relviz.synthesizer import NOT_DP  # prefix of the ledger note of a run on inferred facts

__all__ = ["check_output", "main"]


def check_output(out: str | Path, *, report: bool = True) -> list[str]:
    """Problems found in a ``relviz synth`` output folder (empty when all is well).

    Args:
        out: The ``--out`` folder.
        report: Require ``curator/report.html`` (off for a ``--no-report`` run).
    """
    out = Path(out)
    release, curator = out / RELEASE, out / CURATOR
    if not release.is_dir():
        return [f"no {RELEASE}/ folder in {out}"]
    problems = []
    present = {p.name for p in release.iterdir()} - {MODEL_FILE}  # optional (--save-model)
    if present != set(RELEASE_FILES):
        extra, missing = sorted(present - set(RELEASE_FILES)), sorted(set(RELEASE_FILES) - present)
        problems.append(f"{RELEASE}/ must hold exactly {', '.join(RELEASE_FILES)}"
                        + (f"; unexpected: {', '.join(extra)}" if extra else "")
                        + (f"; missing: {', '.join(missing)}" if missing else ""))
    for name in ("cap_report.txt",) + (("report.html",) if report else ()):
        if not (curator / name).is_file():
            problems.append(f"no {CURATOR}/{name}")
    if not (release / "synthetic.sqlite").is_file() or not (release / "ledger.json").is_file():
        return problems + [f"{RELEASE}/ lacks synthetic.sqlite or ledger.json"]
    con = sqlite3.connect(release / "synthetic.sqlite")
    try:
        con.execute("PRAGMA foreign_keys = ON")
        bad = con.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        con.close()
    if bad:
        problems.append(f"PRAGMA foreign_key_check returned {len(bad)} rows, e.g. {bad[:3]}")
    ledger = json.loads((release / "ledger.json").read_text())
    spent = sum((Fraction(e["rho_exact"]) for e in ledger["entries"]), Fraction(0))
    total = Fraction(ledger["rho_total_exact"])
    if spent > total:
        problems.append(f"ledger overspends: ρ {float(spent)!r} > {float(total)!r}")
    if spent != total:
        problems.append(f"ledger total ρ {float(spent)!r} differs from the plan's {float(total)!r}")
    if Fraction(ledger["rho_spent_exact"]) != spent:
        problems.append("ledger entries do not add up to its recorded total")
    problems += [f"the ledger says: {n}" for n in ledger.get("notes", []) if str(n).startswith(NOT_DP)]
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "demo-out")
    problems = check_output(out)
    if problems:
        for p in problems:
            print(f"check FAILED: {p}")
        return 1
    ledger = json.loads((out / RELEASE / "ledger.json").read_text())
    print(f"checks: {RELEASE}/ holds exactly the shareable files, {CURATOR}/ the report; "
          f"PRAGMA foreign_key_check → 0 rows; ledger ρ = plan ρ = {ledger['rho_total']:.6g} "
          f"(exact {ledger['rho_total_exact']}), {len(ledger['entries'])} releases")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
