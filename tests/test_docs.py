"""Citations in the code point at things a user of relviz can follow.

* No docstring or comment in ``relviz/`` cites a file outside the repository (the project's
  internal specification and design notes): a citation is a paper (authors, title, section) or a
  page under ``docs/``.
* Every ``docs/….md`` page cited in ``relviz/``, ``tests/`` or ``benchmarks/`` exists, and every
  section number cited right after it (``docs/methods/biadjacency.md §3.4``) is a numbered heading of
  that page. Inside ``relviz.relational.biadjacency`` a bare ``§`` number refers to
  ``docs/methods/biadjacency.md`` (declared in each module's docstring) and is checked there too.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "relviz"

#: Citations of files that a user who installs relviz does not have.
OUTSIDE = re.compile(r"\bspec/|\bshared/|DESIGN\.md|\bUX\.md|\bspec §|\bspec relational")

#: Files exempt from the citation check (none: every module cites papers or docs/ pages).
PENDING: set[str] = set()

DOC_PATH = re.compile(r"docs/[\w./-]+?\.md")
#: A docs path followed by section numbers: "docs/x.md §3.4", "docs/x.md §1–§5", "docs/x.md §2, §7.1".
DOC_SECTIONS = re.compile(r"(docs/[\w./-]+?\.md)((?:\s*(?:,|and|–|-)?\s*§\s?\d+(?:\.\d+)*)+)")
NUMBER = re.compile(r"\d+(?:\.\d+)*")
#: A bare "§N" in relviz.relational.biadjacency, unless it follows a paper tag ("[J] §5"), a paper
#: ("Alimohammadi et al. §8", a quoted title) or a docs path (checked with the path).
BARE_SECTION = re.compile(r"(?<!\] )(?<!al\. )(?<!\", )(?<!\.md )§(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#+\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)


def _python_files(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs for p in d.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _outside_citations(files: list[Path]) -> list[str]:
    hits = []
    for path in files:
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{_rel(path)}:{no}: {line.strip()}")
    return hits


def _sections(page: Path) -> set[str]:
    return set(HEADING.findall(page.read_text(encoding="utf-8")))


def test_no_citation_of_files_outside_the_repository() -> None:
    files = [p for p in _python_files(PACKAGE) if _rel(p) not in PENDING]
    hits = _outside_citations(files)
    assert not hits, ("cite the paper (authors, title, §) or a docs/ page instead of:\n"
                      + "\n".join(hits))


def test_cited_docs_pages_and_sections_exist() -> None:
    problems = []
    sections: dict[str, set[str]] = {}
    for path in _python_files(PACKAGE, ROOT / "tests", ROOT / "benchmarks"):
        if path == Path(__file__).resolve():
            continue  # this file's docstring shows example citations
        text = path.read_text(encoding="utf-8")
        for cited in sorted(set(DOC_PATH.findall(text))):
            if not (ROOT / cited).is_file():
                problems.append(f"{_rel(path)}: cites {cited}, which does not exist")
        for cited, numbers in DOC_SECTIONS.findall(text):
            page = ROOT / cited
            if not page.is_file():
                continue
            have = sections.setdefault(cited, _sections(page))
            for n in NUMBER.findall(numbers):
                if n not in have:
                    problems.append(f"{_rel(path)}: cites {cited} §{n}, which has no such heading")
    assert not problems, "\n".join(problems)


def test_bare_sections_of_the_biadjacency_package_exist() -> None:
    page = "docs/methods/biadjacency.md"
    have = _sections(ROOT / page)
    problems = []
    for path in _python_files(PACKAGE / "relational" / "biadjacency"):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for n in BARE_SECTION.findall(line):
                if n not in have:
                    problems.append(f"{_rel(path)}:{no}: §{n} is not a heading of {page}")
    assert not problems, "\n".join(problems)


def test_docs_index_links_every_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    missing = [p for p in pages if p != "index.md" and f"({p})" not in index]
    assert not missing, f"docs/index.md does not link: {missing}"
