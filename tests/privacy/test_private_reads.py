"""Every read of a private table happens in the measurement module (``relviz.privacy.measure``).

The test wraps the ``Database`` accessors so that reading a private table's rows from anywhere
else fails, then fits and samples with every relational method; validation
(``Database.problems``), which only raises errors to the curator, is the one other reader.
"""

from __future__ import annotations

import sys

import pytest

from relviz.database import Database
from relviz.plan import Plan
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import tiny_frames, tiny_schema

ALLOWED_MODULES = {"relviz.privacy.measure"}
ALLOWED_FUNCTIONS = {("relviz.database", "problems"), ("relviz.database", "_fk_problems"),
                     ("relviz.database", "validate"), ("relviz.database", "__init__")}


def _reader() -> str | None:
    """The first relviz caller outside relviz.database, or None when the read is allowed."""
    f = sys._getframe(2)
    while f is not None:
        mod, fn = f.f_globals.get("__name__", ""), f.f_code.co_name
        if mod in ALLOWED_MODULES or (mod, fn) in ALLOWED_FUNCTIONS:
            return None
        if mod.startswith("relviz.") and mod != "relviz.database":
            return f"{mod}.{fn}"
        f = f.f_back
    return None


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    violations: list[str] = []
    getitem, parent_index, tables = Database.__getitem__, Database.parent_index, Database.tables

    def guarded_getitem(self: Database, name: str):  # noqa: ANN202
        if name in self.schema.table_names and not self.schema.table(name).public:
            who = _reader()
            if who:
                violations.append(f"{who} read {name}")
        return getitem(self, name)

    def guarded_parent_index(self: Database, fk):  # noqa: ANN001, ANN202
        who = _reader()
        if who:
            violations.append(f"{who} read the links of {fk}")
        return parent_index(self, fk)

    def guarded_tables(self: Database):  # noqa: ANN202
        who = _reader()
        if who:
            violations.append(f"{who} read every table")
        return tables.fget(self)

    monkeypatch.setattr(Database, "__getitem__", guarded_getitem)
    monkeypatch.setattr(Database, "parent_index", guarded_parent_index)
    monkeypatch.setattr(Database, "tables", property(guarded_tables))
    return violations


@pytest.mark.parametrize("method", ["degree", "biadjacency"])
@pytest.mark.parametrize("entity", ["households", None])
def test_private_rows_are_read_only_by_the_measurement_module(guarded: list[str], method: str,
                                                               entity: str | None) -> None:
    db = Database(tiny_schema(entity=entity, caps={"persons.hid->households": 3}),
                  tiny_frames(n_h=120))
    plan = Plan.default(db.schema, 2.0, 1e-6, mechanism="independent", method=method)
    if method == "biadjacency":
        for fk in db.schema.private_foreign_keys:
            plan = plan.with_params(fk.name, n_iters=2, slice_cells=5_000)
    guarded.clear()  # reads while building the fixture database do not count
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    synth.sample()
    assert guarded == []


def test_the_guard_catches_a_read(guarded: list[str]) -> None:
    """The guard itself works: a read from a relviz module outside measure is recorded."""
    from relviz.evaluate import degree as evaluate_degree  # a curator-view module

    db = Database(tiny_schema(), tiny_frames())
    guarded.clear()
    exec("def _probe2(d):\n    return d['persons']", evaluate_degree.__dict__)
    evaluate_degree.__dict__["_probe2"](db)
    assert guarded and "persons" in guarded[0]
