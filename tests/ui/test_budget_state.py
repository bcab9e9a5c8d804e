"""relviz.ui.budget_state: the budget panel's plain-Python state (BudgetDraft), without a browser.

What a share buys is the plan's computation (``Plan.noise_preview``, tests/test_plan.py); here it is
checked as the panel shows it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from relviz import Database, Plan
from relviz.plan import MEAN_ABS_NORMAL
from relviz.privacy.measure import CURATOR_VIEW
from relviz.ui.budget_state import BudgetDraft

VP = "visits.patient_id->patients"


def test_share_edits_keep_the_sum_exactly_one(clinic_ready_db: Database) -> None:
    b = BudgetDraft(clinic_ready_db)
    names = [c.name for c in b.plan.components]
    assert b.total_share() == 1
    assert b.set_share("patients", 0.3).ok
    assert b.plan.component("patients").share == Fraction(3, 10) and b.total_share() == 1
    assert b.set_lock("patients").ok
    assert b.set_share("visits", 0.2).ok
    assert b.plan.component("patients").share == Fraction(3, 10)  # locked: kept
    assert b.total_share() == 1
    r = b.set_share("visits", 0.8)  # 0.3 locked leaves 0.7 < 0.8: refused, plan unchanged
    before = b.plan
    assert not r.ok and "locked" in r.message and b.plan is before
    for x in (0.1, 1 / 3, 0.123456789, 0.05):
        assert b.set_share(names[-1], x).ok and b.total_share() == 1
    assert b.rebalance().ok
    free = [c.share for c in b.plan.components if not c.locked]
    assert len(set(free)) == 1 and free[0] == Fraction(7, 10) / (len(names) - 1)
    assert b.total_share() == 1
    for n in names:
        b.set_lock(n)
    assert not b.rebalance().ok


def test_method_change_updates_the_plan(clinic_ready_db: Database) -> None:
    b = BudgetDraft(clinic_ready_db)
    assert b.set_method("visits", "independent").ok
    assert b.plan.component("visits").method == "independent"
    assert not b.set_method("visits", "no-such-mechanism").ok
    assert not b.set_method(VP, "mst").ok  # a table mechanism is not a relational method
    assert b.set_method(VP, "degree").ok


def test_sigma_and_expected_error(clinic_ready_db: Database) -> None:
    from relviz.privacy.mechanisms import gaussian_sigma
    from relviz.privacy.sensitivity import multipliers

    ready = clinic_ready_db
    b = BudgetDraft(ready)
    mult = multipliers(ready.schema)
    rows = {r.name: r for r in b.rows()}
    v = rows["visits"]
    rho = b.plan.rho_of("visits")
    d = len(ready.schema.table("visits").attributes)
    expected = gaussian_sigma(mult.table_histogram("visits") * math.sqrt(d), rho / 3)
    assert v.sigma == expected
    assert v.relative_error == pytest.approx(expected * MEAN_ABS_NORMAL / 119)
    assert CURATOR_VIEW in v.n_label and "119 rows" in v.n_label
    # more budget, less noise
    b.set_share("visits", 0.9)
    assert {r.name: r for r in b.rows()}["visits"].sigma < expected
    # public row counts are not labelled curator views
    pub = BudgetDraft(ready.schema, row_counts={"visits": 119})
    assert CURATOR_VIEW not in {r.name: r for r in pub.rows()}["visits"].n_label


def test_warnings(clinic_ready_db: Database) -> None:
    b = BudgetDraft(clinic_ready_db)
    assert b.set_budget(epsilon=8).ok
    assert any("ε = 8" in w and "above 5" in w for w in b.warnings())
    assert b.set_budget(epsilon=1, delta=0.05).ok  # ≥ 1/40 patients
    assert any("δ = 0.05" in w and "1/n" in w for w in b.warnings())
    assert not b.set_budget(delta="abc").ok and not b.set_budget(delta=2).ok
    b.set_budget(epsilon=0.1, delta=1e-6)
    small = [w for w in b.warnings() if "share too small" in w]
    assert small  # at ε = 0.1 the clinic tables are far too small
    big = BudgetDraft(clinic_ready_db, Plan.default(clinic_ready_db.schema, 500.0, 1e-6))
    assert not [w for w in big.warnings() if "share too small" in w]


def test_presets(clinic_ready_db: Database) -> None:
    ready = clinic_ready_db
    b = BudgetDraft(ready)
    b.set_share("visits", 0.5, lock=True)
    assert b.preset("papers").ok
    assert all(c.share == Fraction(1, 6) and not c.locked for c in b.plan.components)
    assert b.preset("equal").ok
    assert b.plan.components == Plan.default(ready.schema, b.plan.epsilon, b.plan.delta).components
    assert not b.preset("nope").ok
    comps = tuple(c if c.kind == "table" else c.__class__(c.name, c.kind, "biadjacency", c.share)
                  for c in b.plan.components)
    b.set_plan(Plan(1.0, 1e-6, comps))
    b.preset("papers")
    shares = {c.kind: c.share for c in b.plan.components}
    assert shares["edge"] == 4 * shares["table"] and b.total_share() == 1
