"""A single self-contained ``report.html`` (opens offline; plotly.js embedded once).

Layout: header (title, ε / δ / ρ from the ledger), the privacy ledger, the
:class:`~relviz.evaluate.report.RelationalReport` summary tables and validity, optional extra
facts, then figures — degree distributions per FK, cross-table errors per private FK, 1-way
marginals of the private tables, association heatmaps of the private tables and of the private
FK joins. Every figure reads real data and is labelled "curator view (not private)".
"""

from __future__ import annotations

import datetime as _dt
import html
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import report_progress
from relviz.evaluate.correlation import associations
from relviz.evaluate.marginals import frequencies
from relviz.evaluate.report import RelationalReport
from relviz.progress import Progress

__all__ = ["render_report", "write_report"]

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
"""


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e6):
            return f"{v:.4g}"
        return f"{v:,.4f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
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
                "<h2>Privacy ledger</h2><p>No ledger was given to this report.</p>")
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
    body = (f"<h2>Privacy ledger</h2><p>Privacy unit: {html.escape(str(ledger.get('unit', '')))}</p>"
            + _table(entries) + ("<h3>Per component</h3>" + _table(comps) if len(comps) else "")
            + (f"<ul>{notes}</ul>" if notes else ""))
    return head, body


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
    parts = [f"<h2>Summary</h2><h3>Tables</h3>{_table(report.tables)}",
             f"<h3>Foreign keys</h3>{_table(report.foreign_keys)}",
             f"<h3>Validity</h3><p>{html.escape(report.validity.summary().splitlines()[0])}</p>"
             + (("<p><b>Failed checks</b></p>" + _table(report.validity.failures())) if not report.validity.valid
                else "")
             + f"<details><summary>All {len(report.validity.checks)} checks</summary>"
             + _table(report.validity.checks) + "</details>"]
    if report.errors:
        parts.append("<h3>Errors</h3>" + _kv(report.errors))
    if extra:
        parts.append("<h2>Run</h2>" + _kv(extra))

    report_progress(progress, 0.6, "figures: degrees")
    parts.append("<h2>Degree distributions</h2>")
    parts += [_figure(lambda d=d: plots.degree_figure(d, log_y=True), d.label) for d in report.degrees.values()]
    parts.append(f"<h2>{report.k}-way cross-table marginal error</h2>")
    for e in report.cross_table.values():
        if e.reason:
            parts.append(f"<p>{html.escape(e.name)}: not computed ({html.escape(e.reason)}).</p>")
        else:
            parts.append(_figure(lambda e=e: plots.cross_table_figure(e), e.name))
    report_progress(progress, 0.7, "figures: 1-way marginals")
    parts.append("<h2>1-way marginals (private tables)</h2>")
    for t in s.tables:
        if t.public:
            continue
        for a in t.attributes:
            label = f"{t.name}.{a.name}"
            parts.append(_figure(lambda t=t, a=a, label=label: plots.frequency_figure(
                frequencies(real, synthetic, t.name, a.name), title=label), label))
    report_progress(progress, 0.8, "figures: associations")
    parts.append("<h2>Associations (Pearson r, Cramér's V, correlation ratio η)</h2>")
    for t in s.tables:
        if not t.public and len(t.attributes) >= 2:
            parts.append(_figure(lambda t=t: plots.association_figure(associations(real, synthetic, table=t.name)),
                                 f"associations of {t.name}"))
    for fk in s.private_foreign_keys:
        if s.table(fk.child).attributes and s.table(fk.parent).attributes:
            parts.append(_figure(lambda fk=fk: plots.association_figure(associations(real, synthetic, fk=fk)),
                                 f"associations of {fk.label()}"))
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
{ledger_html}
{''.join(parts)}
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
