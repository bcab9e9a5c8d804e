"""RelationalSynthesizer: ledger equals plan, validity, reproducibility, cancel, private reads."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relviz.database import Database
from relviz.errors import CancelledError, DataError
from relviz.plan import Plan
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import tiny_frames


def _plan(db: Database, mechanism: str = "independent") -> Plan:
    return Plan.default(db.schema, 1.0, 1e-6, mechanism=mechanism)


def test_ledger_total_equals_plan_and_output_is_valid(tiny_db: Database) -> None:
    plan = _plan(tiny_db)
    s = RelationalSynthesizer(plan, random_state=0).fit(tiny_db)
    assert s.accountant_.spent() == Fraction(plan.rho_total)  # exact, never more
    for c in plan.components:
        assert s.accountant_.spent(c.name) == plan.rho_of(c.name)
    syn = s.sample()
    assert syn.problems() == []
    assert syn["regions"].equals(tiny_db["regions"])  # public: verbatim
    assert set(syn["persons"]["hid"]) <= set(syn["households"]["hid"])


def test_mst_plan_end_to_end(tiny_db: Database) -> None:
    plan = _plan(tiny_db, "mst")
    s = RelationalSynthesizer(plan, random_state=3).fit(tiny_db)
    assert s.accountant_.spent() == Fraction(plan.rho_total)
    assert s.accountant_.conversion == "zcdp"
    assert s.sample().problems() == []


def test_reproducible_and_sampling_reads_nothing(tiny_db: Database) -> None:
    a = RelationalSynthesizer(_plan(tiny_db), random_state=11).fit(tiny_db)
    b = RelationalSynthesizer(_plan(tiny_db), random_state=11).fit(tiny_db)
    reads = len(a.curator_log_)
    assert reads > 0
    da, db_ = a.sample(), b.sample()
    for t in da.table_names:
        assert da[t].equals(db_[t])
    a.sample(scale=2.0)
    assert len(a.curator_log_) == reads  # sampling touched no private data
    assert not a.sample(random_state=5)["persons"].equals(da["persons"])  # another seed differs


def test_scale(tiny_db: Database) -> None:
    s = RelationalSynthesizer(_plan(tiny_db), random_state=0).fit(tiny_db)
    one, two = s.sample(), s.sample(scale=2.0)
    assert len(two["persons"]) == pytest.approx(2 * len(one["persons"]), rel=0.01)
    assert len(two["regions"]) == len(one["regions"])


def test_cancel_leaves_session_usable(tiny_db: Database) -> None:
    events = []
    s = RelationalSynthesizer(_plan(tiny_db), random_state=0)

    def progress(ev):  # noqa: ANN001
        events.append(ev)
        if ev.stage == "fit" and ev.component == "persons":
            s.cancel()

    s.progress = progress
    with pytest.raises(CancelledError):
        s.fit(tiny_db)
    spent = s.accountant_.spent()
    assert 0 < spent < Fraction(_plan(tiny_db).rho_total)  # households was paid for, persons not
    assert {e.component for e in s.accountant_.ledger} == {"households"}
    s.progress = None
    s.fit(tiny_db)  # usable again
    assert s.sample().problems() == []


def test_invalid_input_reports_everything_before_reading(tiny_db: Database) -> None:
    f = tiny_frames()
    f["persons"].loc[0, "hid"] = 12345
    f["persons"].loc[1, "sex"] = "?"
    bad = Database(tiny_db.schema, f, validate=False)
    s = RelationalSynthesizer(_plan(tiny_db))
    with pytest.raises(DataError) as e:
        s.fit(bad)
    assert {"orphan", "unknown_category"} <= e.value.kinds()
    assert not hasattr(s, "accountant_")
