"""A single self-contained ``report.html`` (opens offline; plotly.js embedded once).

Layout: header (title, ε / δ / ρ from the ledger), a table of contents (a link to every section
and sub-section, each an ``id`` of the page), the privacy ledger, the
:class:`~relviz.evaluate.report.RelationalReport` summary tables and validity, optional extra
facts, then figures — degree distributions per FK (log count axis with round ticks 1, 10, 100 from
``relviz.plots``), cross-table errors per private FK, 1-way marginals of the private tables,
association heatmaps of the private tables and of the private FK joins. Every figure reads real
data and is labelled "curator view (not private)".

Numbers in tables: counts (integers, and whole-valued floats) with thousands separators
(``60,175``); every other number rounded to 3 significant digits (``0.988``, ``12.3``, ``1.23e-05``
below 10⁻⁴) — see :func:`format_number`.

Memory (docs/evaluation.md, "Memory"): the statistics behind the page are sparse above
:data:`relviz.marginals.DENSE_CELL_BUDGET` cells; the page says when a relation's 3-way workloads
were counted sparsely, and draws only the :data:`MAX_WORKLOAD_BARS` worst workloads of a relation
with more (saying so).
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import report_progress
from relviz.evaluate.correlation import associations
from relviz.evaluate.marginals import frequencies
from relviz.evaluate.report import RelationalReport
from relviz.marginals import DENSE_CELL_BUDGET
from relviz.progress import Progress

__all__ = ["MAX_WORKLOAD_BARS", "format_number", "render_report", "write_report"]

MAX_WORKLOAD_BARS = 200
"""Most workloads drawn in one cross-table error figure (the worst ones; the average and maximum
in its title are over all workloads)."""

_CSS = """
body{font-family:Inter,Helvetica,Arial,sans-serif;margin:0;color:#1f2937;background:#f8fafc}
main{max-width:1200px;margin:0 auto;padding:24px}
header{background:#1f2937;color:#f8fafc;padding:24px}
header h1{margin:0 0 8px 0;font-size:26px}
.badge{display:inline-block;background:#0ea5a4;color:#fff;border-radius:4px;padding:2px 8px;margin-right:8px}
.curator{background:#fef3c7;color:#92400e;border:1px solid #f59e0b;padding:8px 12px;border-radius:4px}
h2{border-bottom:2px solid #0ea5a4;padding-bottom:4px;margin-top:36px}
table{border-collapse:collapse;font-size:13px;margin:8px 0 16px 0;background:#fff}
th,td{border:1px solid #e2e8f0;padding:4px 8px;text-align:right}
th{background:#f1f5f9}
td.l,th.l{text-align:left}
.fig{background:#fff;border:1px solid #e2e8f0;margin:12px 0;padding:4px}
.kv td:first-child{text-align:left;font-weight:600}
.notdp{background:#fee2e2;color:#991b1b;border:2px solid #dc2626;padding:10px 12px;border-radius:4px;font-size:15px}
nav.toc{background:#fff;border:1px solid #e2e8f0;padding:8px 16px;margin:12px 0;font-size:14px}
nav.toc ul{margin:4px 0;padding-left:20px}
.note{color:#475569;font-size:13px}
"""


def format_number(v: float | int, digits: int = 3) -> str:
    """A number for a report table: counts with thousands separators, others to ``digits``
    significant digits.

    Integers and whole-valued floats are counts (``60175`` → ``60,175``, ``7.0`` → ``7``); other
    floats keep at most ``digits`` significant digits (trailing zeros dropped), with separators
    above 1,000 (``0.98765`` → ``0.988``, ``12.345`` → ``12.3``, ``0.5`` → ``0.5``, ``12345.6`` →
    ``12,300``) and in scientific notation below 10⁻⁴ (``1.23e-05``). NaN → ``–``.

    Args:
        v: The number.
        digits: Significant digits of a non-count (≥ 1).

    Returns:
        The text.
    """
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    v = float(v)
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) < 1e-4:
        return f"{v:.{digits - 1}e}"
    places = digits - 1 - math.floor(math.log10(abs(v)))
    r = round(v, places)
    if r != 0 and math.floor(math.log10(abs(r))) != math.floor(math.log10(abs(v))):
        places -= 1  # rounding carried into the next decade (0.9996 → 1.00 → 1)
        r = round(v, places)
    text = f"{r:,.{max(places, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
        return format_number(v)
    return str(v)


def _table(frame: pd.DataFrame) -> str:
    """An HTML table (values escaped; text columns left-aligned)."""
    cols = list(frame.columns)
    text = {c for c in cols if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])}
    head = "".join(f'<th class="{"l" if c in text else ""}">{html.escape(str(c))}</th>' for c in cols)
    body = []
    for rec in frame.to_dict(orient="records"):
        cells = "".join(f'<td class="{"l" if c in text else ""}">{html.escape(_fmt(rec[c]))}</td>' for c in cols)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _kv(pairs: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td class='l'>{html.escape(_fmt(v))}</td></tr>"
                   for k, v in pairs.items())
    return f"<table class='kv'>{rows}</table>"


def _ledger_section(ledger: Mapping[str, Any] | None) -> tuple[str, str]:
    """(header line, ledger section) from ``Accountant.to_dict()``."""
    if not ledger:
        return ("<span class='badge'>no ledger given</span>",
                "<h2 id='ledger'>Privacy ledger</h2><p>No ledger was given to this report.</p>")
    eps, delta = ledger.get("epsilon"), ledger.get("delta")
    rho_total, rho_spent = ledger.get("rho_total"), ledger.get("rho_spent")
    head = (f"<span class='badge'>ε = {_fmt(eps)}</span><span class='badge'>δ = {_fmt(delta)}</span>"
            f"<span class='badge'>ρ = {_fmt(rho_spent)} of {_fmt(rho_total)}</span>"
            f"<span class='badge'>ε spent = {_fmt(ledger.get('epsilon_spent'))}</span>"
            f"<span class='badge'>{html.escape(str(ledger.get('conversion', '')))} conversion</span>")
    entries = pd.DataFrame(ledger.get("entries", []))
    cols = {"component": "Component", "label": "Label", "mechanism": "Mechanism", "rho": "ρ",
            "epsilon_equivalent": "ε-equivalent", "sensitivity": "Sensitivity", "sigma": "σ"}
    for c in cols:
        if c not in entries:
            entries[c] = None
    entries = entries[list(cols)].rename(columns=cols)
    comps = pd.DataFrame([{"Component": k, "Planned ρ": v.get("planned"), "Spent ρ": v.get("spent")}
                          for k, v in (ledger.get("components") or {}).items()])
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in ledger.get("notes", []))
    body = (f"<h2 id='ledger'>Privacy ledger</h2><p>Privacy unit: {html.escape(str(ledger.get('unit', '')))}</p>"
            + _table(entries) + ("<h3 id='ledger-components'>Per component</h3>" + _table(comps) if len(comps) else "")
            + (f"<ul>{notes}</ul>" if notes else ""))
    return head, body


_HEADING = re.compile(r"<h([23]) id='([^']+)'>(.*?)</h\1>", re.S)


def _toc(body: str) -> str:
    """Table of contents: a link to every ``<h2>``/``<h3>`` with an ``id`` in ``body``, nested."""
    items: list[str] = []
    open_sub = False
    for level, anchor, text in _HEADING.findall(body):
        link = f"<a href='#{anchor}'>{text}</a>"
        if level == "2":
            if open_sub:
                items.append("</ul></li>")
                open_sub = False
            elif items:
                items.append("</li>")
            items.append(f"<li>{link}")
        else:
            if not open_sub:
                items.append("<ul>")
                open_sub = True
            items.append(f"<li>{link}</li>")
    if items:
        items.append("</ul></li>" if open_sub else "</li>")
    return f"<nav class='toc' id='contents'><b>Contents</b><ul>{''.join(items)}</ul></nav>"


def _figure(build: Callable[[], Any], what: str) -> str:
    """One figure as an HTML fragment, or a line saying why it could not be drawn (never raises)."""
    try:
        fig = build()
    except Exception as e:  # noqa: BLE001 - one failed figure must not lose the report
        return f"<p class='curator'>{html.escape(what)}: figure not drawn ({html.escape(type(e).__name__)}: " \
               f"{html.escape(str(e))})</p>"
    return "<div class='fig'>" + fig.to_html(full_html=False, include_plotlyjs=False,
                                             config={"displaylogo": False, "responsive": True}) + "</div>"


def render_report(real: Database, synthetic: Database, *, ledger: Mapping[str, Any] | None = None,
                  title: str = "relviz report", extra: Mapping[str, Any] | None = None,
                  report: RelationalReport | None = None, progress: Progress | None = None) -> str:
    """The HTML text of :func:`write_report` (same arguments, no file)."""
    from plotly.offline import get_plotlyjs

    from relviz import plots

    t0 = time.perf_counter()
    s = real.schema
    if report is None:
        def sub(f: float, m: str) -> None:
            report_progress(progress, 0.6 * f, m)
        report = RelationalReport().generate(real, synthetic, progress=sub)
    assert report.tables is not None and report.foreign_keys is not None and report.validity is not None
    head, ledger_html = _ledger_section(ledger)
    # the synthesizer's note on a run allowed on domains read from the data (allow_inferred=True)
    not_dp = [str(n) for n in (ledger or {}).get("notes", [])
              if str(n).startswith("NOT DIFFERENTIALLY PRIVATE")]
    not_dp_html = "".join(f"<p class='notdp'><b>Not differentially private.</b> {html.escape(n)}</p>"
                          for n in not_dp)
    ids: set[str] = set()

    def h(level: int, text: str, key: str | None = None) -> str:
        """A heading with a unique ``id`` (the table of contents links to it)."""
        base = re.sub(r"[^a-z0-9]+", "-", (key or text).lower()).strip("-") or "section"
        anchor, i = base, 2
        while anchor in ids:
            anchor, i = f"{base}-{i}", i + 1
        ids.add(anchor)
        return f"<h{level} id='{anchor}'>{html.escape(text)}</h{level}>"

    parts = [h(2, "Summary") + h(3, "Tables") + _table(report.tables),
             h(3, "Foreign keys") + _table(report.foreign_keys),
             h(3, "Validity") + f"<p>{html.escape(report.validity.summary().splitlines()[0])}</p>"
             + (("<p><b>Failed checks</b></p>" + _table(report.validity.failures())) if not report.validity.valid
                else "")
             + f"<details><summary>All {len(report.validity.checks)} checks</summary>"
             + _table(report.validity.checks) + "</details>"]
    if report.errors:
        parts.append(h(3, "Errors") + _kv(report.errors))
    if extra:
        parts.append(h(2, "Run") + _kv(extra))

    report_progress(progress, 0.6, "figures: degrees")
    parts.append(h(2, "Degree distributions", "degrees"))
    parts += [_figure(lambda d=d: plots.degree_figure(d, log_y=True), d.label) for d in report.degrees.values()]
    parts.append(h(2, f"{report.k}-way cross-table marginal error", "cross-table"))
    budget = format_number(DENSE_CELL_BUDGET)
    for e in report.cross_table.values():
        if e.reason:
            parts.append(f"<p>{html.escape(e.name)}: not computed ({html.escape(e.reason)}).</p>")
            continue
        notes = []
        if e.n_sparse:
            notes.append(f"{e.n_sparse:,} of {e.n_workloads:,} workloads of {e.name} have more cells than a dense "
                         f"count may hold ({budget} cells, or far more cells than links): they were counted "
                         "sparsely, over the occupied cells only (same numbers, bounded memory).")
        top = MAX_WORKLOAD_BARS if e.n_workloads > MAX_WORKLOAD_BARS else None
        if top is not None:
            notes.append(f"The figure shows the {top} worst of the {e.n_workloads:,} workloads (a page with "
                         "every bar would be slow to open); the average and maximum are over all of them.")
        parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
        parts.append(_figure(lambda e=e, top=top: plots.cross_table_figure(e, top=top), e.name))
    report_progress(progress, 0.7, "figures: 1-way marginals")
    parts.append(h(2, "1-way marginals (private tables)", "marginals"))
    for t in s.tables:
        if t.public or not t.attributes:
            continue
        parts.append(h(3, t.name, f"marginals-{t.name}"))
        for a in t.attributes:
            label = f"{t.name}.{a.name}"
            parts.append(_figure(lambda t=t, a=a, label=label: plots.frequency_figure(
                frequencies(real, synthetic, t.name, a.name), title=label), label))
    report_progress(progress, 0.8, "figures: associations")
    parts.append(h(2, "Associations (Pearson r, Cramér's V, correlation ratio η)", "associations"))
    for t in s.tables:
        if not t.public and len(t.attributes) >= 2:
            parts.append(h(3, t.name, f"associations-{t.name}"))
            parts.append(_figure(lambda t=t: plots.association_figure(associations(real, synthetic, table=t.name)),
                                 f"associations of {t.name}"))
    for fk in s.private_foreign_keys:
        if s.table(fk.child).attributes and s.table(fk.parent).attributes:
            parts.append(h(3, f"across {fk.label()}", f"associations-{fk.name}"))
            parts.append(_figure(lambda fk=fk: plots.association_figure(associations(real, synthetic, fk=fk)),
                                 f"associations of {fk.label()}"))
    body = ledger_html + "".join(parts)
    report_progress(progress, 0.95, "writing HTML")
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style>
<script type="text/javascript" id="plotly-js">{get_plotlyjs()}</script>
</head><body>
<header><h1>{html.escape(title)}</h1><div>{head}</div>
<div style="margin-top:8px;font-size:13px">{html.escape(s.name or '')} · generated {now} ·
built in {{BUILD_SECONDS}} s</div></header>
<main>
{not_dp_html}
<p class="curator"><b>Curator view (not private).</b> Everything below except the ledger compares
the synthetic database with the <b>real</b> data: it is outside the differential-privacy guarantee and
is for the data curator only. The guarantee is the ledger's (ε, δ) and privacy unit.</p>
{_toc(body)}
{body}
</main></body></html>
"""
    report_progress(progress, 1.0, "report done")
    return doc.replace("{BUILD_SECONDS}", f"{time.perf_counter() - t0:.1f}", 1)


def write_report(path: str | Path, real: Database, synthetic: Database, *,
                 ledger: Mapping[str, Any] | None = None, title: str = "relviz report",
                 extra: Mapping[str, Any] | None = None, report: RelationalReport | None = None,
                 progress: Progress | None = None) -> Path:
    """Write a self-contained ``report.html`` comparing a synthetic database with the real one.

    Args:
        path: Output file (parent folders are created).
        real: Real database.
        synthetic: Synthetic database with the same schema.
        ledger: The run's ``Accountant.to_dict()`` (ε, δ, ρ, entries); ``None`` says so.
        title: Page title.
        extra: More facts for a "Run" table (e.g. timings, versions, seed).
        report: A :class:`RelationalReport` already generated (computed when ``None``).
        progress: Optional ``progress(fraction, message)`` callback.

    Returns:
        The path written. The file embeds plotly.js once (about 4.8 MB) and opens offline.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render_report(real, synthetic, ledger=ledger, title=title, extra=extra, report=report,
                         progress=progress)
    path.write_text(text, encoding="utf-8")
    return path
