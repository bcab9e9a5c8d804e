"""report.html: table of contents, round numbers in tables, clean log-axis ticks (issue 14 item 6)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from relviz.evaluate import RelationalReport
from relviz.evaluate.html import format_number, render_report
from relviz.privacy.accountant import Accountant


class _Page(HTMLParser):
    """Ids, TOC links and the text of every table cell of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.toc_links: list[str] = []
        self.cells: list[str] = []
        self._in_toc = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "nav" and "toc" in (a.get("class") or ""):
            self._in_toc += 1
        if tag == "a" and self._in_toc and a.get("href", "").startswith("#"):
            self.toc_links.append(str(a["href"])[1:])
        if tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._in_toc:
            self._in_toc -= 1
        if tag == "td" and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _layouts(doc: str) -> list[dict]:
    """The layout JSON of every plotly figure of the page."""
    dec, out = json.JSONDecoder(), []
    for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", doc):
        _, end = dec.raw_decode(doc, m.end())  # data
        rest = re.match(r"\s*,\s*", doc[end:])
        layout, _ = dec.raw_decode(doc, end + rest.end())
        out.append(layout)
    return out


@pytest.fixture(scope="module")
def page() -> tuple[str, _Page]:
    from tests.conftest import random_shop

    real, syn = random_shop(seed=0), random_shop(seed=1, shift=1.0)
    acc = Accountant(0.5, delta=1e-6, epsilon=1.0, unit="one sale")
    acc.charge("1-way marginals (2 attributes)", 0.123456789, component="sales", module="measure",
               mechanism="gaussian", sensitivity=1.0, sigma=2.2360679)
    doc = render_report(real, syn, ledger=acc.to_dict(), extra={"seed": 0, "fit seconds": 12.3456789},
                        report=RelationalReport().generate(real, syn))
    parser = _Page()
    parser.feed(doc)
    return doc, parser


def test_toc_is_at_the_top_and_every_link_resolves(page) -> None:
    doc, p = page
    assert doc.index("<nav class='toc'") < doc.index("id='ledger'")  # before the first section
    assert len(set(p.ids)) == len(p.ids)  # ids are unique
    assert p.toc_links and set(p.toc_links) <= set(p.ids)
    headings = re.findall(r"<h[23] id='([^']+)'", doc)
    assert headings == p.toc_links  # every section and sub-section is listed, in page order
    for key in ("ledger", "summary", "tables", "foreign-keys", "validity", "run", "degrees", "cross-table",
                "marginals", "associations"):
        assert key in p.toc_links


def _significant(text: str) -> int:
    mantissa = re.sub(r"e[+-]?\d+$", "", text.replace(",", "").lstrip("-−"))
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits)


def test_numbers_in_tables_are_rounded(page) -> None:
    _, p = page
    numeric = [c for c in p.cells if re.fullmatch(r"[-−]?[\d,]*\.?\d+(e[+-]\d+)?", c)]
    assert len(numeric) > 20
    for c in numeric:
        if "." in c or "e" in c:  # a measured value: at most 4 significant digits (3 by the rule)
            assert _significant(c) <= 4, c
        else:  # a count: thousands separators
            assert int(c.replace(",", "")) < 1000 or "," in c, c
    assert "2.24" in p.cells and "0.123" in p.cells and "12.3" in p.cells  # σ, ρ, extra facts


@pytest.mark.parametrize(("value", "text"), [
    (60175, "60,175"), (7.0, "7"), (0.98765, "0.988"), (12.345, "12.3"), (12345.6, "12,300"),
    (1.234e-5, "1.23e-05"), (0.9996, "1"), (99.96, "100"), (0.5, "0.5"), (-0.12345, "-0.123"),
    (float("nan"), "–"), (0.0, "0"), (True, "yes"),
])
def test_format_number(value, text) -> None:
    assert format_number(value) == text


def test_log_axes_have_round_ticks(page) -> None:
    doc, _ = page
    layouts = _layouts(doc)
    assert len(layouts) >= 5
    log_axes = [ax for lay in layouts for k, ax in lay.items() if k.startswith(("xaxis", "yaxis"))
                and isinstance(ax, dict) and ax.get("type") == "log"]
    assert log_axes  # the degree plots have a log count axis
    for ax in log_axes:
        ticks = ax["tickvals"]
        assert ticks and all(re.fullmatch(r"[125]0*(\.0+)?|0\.0*[125]", format(t, "g")) or
                             float(t) == round(float(t)) for t in ticks)
        assert ax["ticktext"] and all("·" not in t and "e" not in t for t in ax["ticktext"])
        assert "1" in ax["ticktext"]
