"""Load time of the stakeholder page under Voila with its ε sweep cached (issue 14, item 5: ≤ 5 s).

The goal is a wall time, so it is checked here and not in ``make test`` (a shared 2-core CI
machine once loaded the page in 5.1 s). This script runs the browser test
``tests/ui/test_stakeholder_ui.py::test_three_loads_render_both_figures_fast`` (Voila with a
pre-heated kernel, three fresh loads in headless Chromium, both figures drawn with a non-zero size
that fits the page) with ``RELVIZ_PAGE_SECONDS`` set, which turns the wall-time check on, and
prints the three load times and the load average the test reports.

Run from a clone after ``make test`` (it needs the venv's Voila, Playwright and Debian's
``chromium``; the sweep for ε ∈ {0.5, 4} is built first, a minute or two)::

    .venv/bin/python benchmarks/stakeholder_page.py [--seconds 5]

Exit status: 0 when every load took at most ``--seconds``, 1 otherwise. Run it on an otherwise
idle machine: the time is wall time, and a busy machine slows the browser and the kernel alike.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST = "tests/ui/test_stakeholder_ui.py::test_three_loads_render_both_figures_fast"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="the goal per load (default 5)")
    args = ap.parse_args(argv)
    env = dict(os.environ, RELVIZ_PAGE_SECONDS=f"{args.seconds:g}")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", TEST],
                         cwd=REPO, env=env, capture_output=True, text=True)
    said = re.findall(r"^(?:relviz demo-cache|stakeholder page).*$", out.stdout, flags=re.M)
    print("\n".join(said) if said else out.stdout[-3000:] + out.stderr[-3000:])
    ok = out.returncode == 0
    print(f"goal: every load ≤ {args.seconds:g} s: {'met' if ok else 'NOT met (or the test failed)'}")
    if not ok and said:
        print(out.stdout[-2000:])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
