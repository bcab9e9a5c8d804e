"""RelationalSynthesizer: ledger equals plan, validity, reproducibility, cancel, private reads."""

from __future__ import annotations

from fractions import Fraction

import pytest

from relviz.database import Database
from relviz.errors import CancelledError, DataError, NotFittedError, PlanError, RelvizError
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


def test_inferred_domains_are_refused_unless_allowed(tiny_db: Database) -> None:
    from relviz.errors import SchemaError
    from relviz.schema import infer_schema

    schema = infer_schema(tiny_frames()).with_public("regions")
    inferred = Database(schema, tiny_frames(), validate=False)
    private_attrs = {f"{t}.{a}" for t, a in inferred.schema.inferred_attributes()}
    assert private_attrs == {"households.tenure", "households.income", "persons.sex", "persons.age"}
    assert {fk.name for fk in inferred.schema.inferred_foreign_keys()} == {
        "persons.hid->households", "households.region->regions"}
    plan = _plan(inferred)
    s = RelationalSynthesizer(plan, random_state=0)
    with pytest.raises(SchemaError) as e:
        s.fit(inferred)
    assert not hasattr(s, "accountant_")  # refused before anything is read
    listed = {f"{p.table}.{p.column}" for p in e.value.problems if p.kind == "inferred_domain"}
    assert listed >= private_attrs  # every private inferred domain, in one error
    assert "regions.climate" not in listed  # a public table's domain is released anyway
    assert any(p.kind == "inferred_nullability" and p.table == "persons" and p.column == "hid"
               for p in e.value.problems)
    msg = str(e.value)
    assert "Declare each domain" in msg and "allow_inferred=True" in msg and "NOT differentially" in msg
    # the schema records it in JSON, so a schema.json read back is refused the same way
    from relviz.schema import Schema

    back = Schema.from_json(inferred.schema.to_json())
    assert back.inferred_problems() == inferred.schema.inferred_problems()
    # allowed: the ledger says in plain words that the release is not DP
    ok = RelationalSynthesizer(plan, random_state=0, allow_inferred=True).fit(inferred)
    notes = ok.accountant_.notes
    not_dp = [n for n in notes if n.startswith("NOT DIFFERENTIALLY PRIVATE")]
    assert len(not_dp) == 1
    assert "not differentially private because its domains came from the data" in not_dp[0]
    assert "persons.sex" in not_dp[0] and "FK nullability of households.region, persons.hid" in not_dp[0]
    assert ok.sample().problems() == []
    # a declared schema gets no such note
    declared = RelationalSynthesizer(_plan(tiny_db), random_state=0).fit(tiny_db)
    assert not [n for n in declared.accountant_.notes if "NOT DIFFERENTIALLY" in n]


def test_run_shows_the_inferred_refusal_and_passes_allow_inferred() -> None:
    from relviz.run import Run
    from relviz.schema import infer_schema

    db = Database(infer_schema(tiny_frames()).with_public("regions"), tiny_frames(), validate=False)
    run = Run(db, _plan(db), random_state=0).start()
    assert run.wait(60)
    assert run.status == "failed" and run.error_type == "SchemaError"  # shown by the run panel
    assert "persons.sex" in run.error and "allow_inferred=True" in run.error
    run = Run(db, _plan(db), random_state=0, allow_inferred=True).start()
    assert run.wait(120) and run.status == "done", run.error
    assert any(n.startswith("NOT DIFFERENTIALLY PRIVATE") for n in run.ledger.notes)


def test_plan_problems_are_plan_errors(tiny_db: Database) -> None:
    """Valid data with an inconsistent plan: a PlanError (not "the database does not satisfy its
    schema"), before anything is read; with data problems too, one DataError lists both."""
    bad_plan = _plan(tiny_db).with_method("persons", "no-such-mechanism")
    s = RelationalSynthesizer(bad_plan)
    with pytest.raises(PlanError) as e:
        s.fit(tiny_db)
    assert e.value.kinds() == {"unknown_mechanism"} and not hasattr(s, "accountant_")
    f = tiny_frames()
    f["persons"].loc[0, "hid"] = 12345
    with pytest.raises(DataError) as e:
        s.fit(Database(tiny_db.schema, f, validate=False))
    assert {"orphan", "unknown_mechanism"} <= e.value.kinds()


def test_sample_before_fit_is_not_fitted(tiny_db: Database) -> None:
    s = RelationalSynthesizer(_plan(tiny_db))
    for kind in (NotFittedError, ValueError, AttributeError, RelvizError):
        with pytest.raises(kind, match="fit"):
            s.sample()

