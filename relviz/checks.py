"""Post-run checks of a ``relviz synth`` output folder (used by ``make demo``).

``python -m relviz.checks OUT`` verifies that the SQLite file passes ``PRAGMA foreign_key_check``
with zero rows and that the ledger's total ρ equals the plan's exactly and never exceeds it;
exit status 1 when either fails.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

__all__ = ["check_output", "main"]


def check_output(out: str | Path) -> list[str]:
    """Problems found in a ``relviz synth`` output folder (empty when all is well)."""
    out = Path(out)
    problems = []
    con = sqlite3.connect(out / "synthetic.sqlite")
    try:
        con.execute("PRAGMA foreign_keys = ON")
        bad = con.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        con.close()
    if bad:
        problems.append(f"PRAGMA foreign_key_check returned {len(bad)} rows, e.g. {bad[:3]}")
    ledger = json.loads((out / "ledger.json").read_text())
    spent = sum((Fraction(e["rho_exact"]) for e in ledger["entries"]), Fraction(0))
    total = Fraction(ledger["rho_total_exact"])
    if spent > total:
        problems.append(f"ledger overspends: ρ {float(spent)!r} > {float(total)!r}")
    if spent != total:
        problems.append(f"ledger total ρ {float(spent)!r} differs from the plan's {float(total)!r}")
    if Fraction(ledger["rho_spent_exact"]) != spent:
        problems.append("ledger entries do not add up to its recorded total")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "demo-out")
    problems = check_output(out)
    ledger = json.loads((out / "ledger.json").read_text())
    if problems:
        for p in problems:
            print(f"check FAILED: {p}")
        return 1
    print(f"checks: PRAGMA foreign_key_check → 0 rows; ledger ρ = plan ρ = {ledger['rho_total']:.6g} "
          f"(exact {ledger['rho_total_exact']}), {len(ledger['entries'])} releases")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
