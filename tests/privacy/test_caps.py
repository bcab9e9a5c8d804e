"""DP choice of a degree cap (relviz.privacy.caps) and how caps' provenance reaches the ledger."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relviz.database import Database
from relviz.plan import Plan
from relviz.privacy.accountant import Accountant
from relviz.privacy.caps import dp_degree_cap, quantile_sensitivity
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import tiny_frames, tiny_schema

FK = "persons.hid->households"


def test_quantile_sensitivity_per_unit() -> None:
    # entity parent: one household removed → one group gone (1) and q·n moves by q
    assert quantile_sensitivity(tiny_schema(), FK, 0.9, 10) == pytest.approx(1.9)
    # row unit: one row changes at most 2·hi + 1 groups
    assert quantile_sensitivity(tiny_schema(entity=None), FK, 0.9, 10) == 21


def test_dp_cap_near_the_quantile_over_seeds() -> None:
    """Household sizes are uniform on 1…4 (tiny_frames): the 0.75-quantile is 3. With ρ = 2
    (ε_EM = 4, Δ = 1.75) the utility gap of one parent moves the odds by e^{4/3.5} ≈ 3, and
    neighbouring τ differ by ~n/4 = 500 in utility: the mechanism picks 3 essentially always."""
    db = Database(tiny_schema(), tiny_frames(n_h=2000))
    picks = [dp_degree_cap(db, FK, quantile=0.75, rho=2.0, candidates=(1, 20),
                           rng=np.random.default_rng(s)).tau for s in range(10)]
    assert picks == [3] * 10
    acc = Accountant(Fraction(1, 10), delta=1e-6)
    r = dp_degree_cap(db, FK, quantile=0.75, rho=Fraction(1, 10), candidates=(1, 20),
                      rng=np.random.default_rng(0), accountant=acc)
    assert acc.spent() == Fraction(1, 10) and acc.ledger[0].mechanism == "exponential"
    assert 1 <= r.tau <= 20 and r.source()["how"] == "dp"


def test_dp_cap_is_charged_by_the_run_and_viewed_caps_are_noted() -> None:
    db = Database(tiny_schema(), tiny_frames(n_h=200))
    r = dp_degree_cap(db, FK, quantile=0.9, rho=Fraction(1, 100), candidates=(1, 10),
                      rng=np.random.default_rng(0))
    dp_db = db.with_schema(db.schema.with_cap(FK, r.tau, source=r.source()))
    plan = Plan.default(dp_db.schema, 1.0, 1e-6, mechanism="independent")
    s = RelationalSynthesizer(plan, random_state=0).fit(dp_db)
    first = s.accountant_.ledger[0]
    assert first.component == "caps" and first.rho == Fraction(1, 100)
    assert s.accountant_.spent() == Fraction(plan.rho_total) + Fraction(1, 100)
    assert s.accountant_.epsilon > 1.0  # the cap's cost is in the reported ε
    viewed = db.with_schema(db.schema.with_cap(FK, 3, source={"how": "curator view"}))
    notes = RelationalSynthesizer(Plan.default(viewed.schema, 1.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(viewed).accountant_.notes
    assert any("not differentially private" in n and FK in n for n in notes)
    plain = RelationalSynthesizer(Plan.default(db.schema, 1.0, 1e-6, mechanism="independent"),
                                  random_state=0).fit(db).accountant_.notes
    assert not any("curator view" in n for n in plain)


def test_schema_round_trips_cap_sources() -> None:
    s = tiny_schema().with_cap(FK, 3, source={"how": "curator view"})
    from relviz.schema import Schema

    assert Schema.from_dict(s.to_dict()).privacy_unit.cap_sources == {FK: {"how": "curator view"}}
    assert s.with_cap(FK, 4).privacy_unit.cap_sources == {}  # a declared cap replaces it


def _public_parent_db(n_parents: int, per_parent: int = 50) -> Database:
    import pandas as pd

    from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

    schema = Schema((Table("carriers", ("cid",), (Attribute.categorical("big", [0, 1]),), public=True),
                     Table("trips", ("tid",), (Attribute.categorical("late", [0, 1]),))),
                    (ForeignKey("trips", ("cid",), "carriers", ("cid",)),),
                    PrivacyUnit(entity=None))
    n = n_parents * per_parent
    return Database(schema, {"carriers": pd.DataFrame({"cid": range(n_parents), "big": [0] * n_parents}),
                             "trips": pd.DataFrame({"tid": range(n), "cid": np.arange(n) % n_parents,
                                                    "late": [0] * n})})


def test_noise_dominated_cap_of_a_small_public_parent_warns() -> None:
    """Public facts only: with n public parents the quantile utility spans at most q·n, so any
    candidate is at most e^{ε_EM·q·n/(2Δ)} times as likely as another. 16 parents, Δ = 2·32 + 1
    (row unit), ρ = 10⁻³ (ε_EM ≈ 0.089): e^{0.011} ≪ 32 candidates → a warning naming the fix;
    50,000 parents at ρ = 1 (ε_EM ≈ 2.8): e^{1083} → none, and the plateau above the largest
    degree (below) is e^{10.9} ≫ 32 below the quantile → none either."""
    import warnings

    with pytest.warns(UserWarning, match=r"DP cap of trips.cid->carriers: mostly noise .*privlava-degree"):
        dp_degree_cap(_public_parent_db(16), "trips.cid->carriers", quantile=0.99, rho=1e-3,
                      candidates=(1, 32), rng=np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        dp_degree_cap(_public_parent_db(50_000, 2), "trips.cid->carriers", quantile=0.99, rho=1.0,
                      candidates=(1, 32), rng=np.random.default_rng(0))


def test_cap_on_the_plateau_above_the_largest_degree_warns_and_overshoots() -> None:
    """Every parent has 2 children, so every τ ≥ 2 scores −(1−q)·n = −50 with 5,000 parents: the
    utility cannot prefer τ = 2, and at ρ = 1 (ε_EM ≈ 2.83, Δ = 65 under the row unit) τ = 1
    is e^{2.83·4,900/130} ≈ e^{107} less likely, so τ is uniform on 2…32 (mean 17, SD 9). The
    warning says so (plateau log-odds 2.83·50/130 ≈ 1.09 < ln 32), and 20 draws average
    17 ± 2·9/√20 (≈ 4)."""
    db = _public_parent_db(5000, 2)
    taus = []
    for seed in range(20):
        with pytest.warns(UserWarning, match=r"likely above the 0.99-quantile .*up to 32"):
            r = dp_degree_cap(db, "trips.cid->carriers", quantile=0.99, rho=1.0,
                              candidates=(1, 32), rng=np.random.default_rng(seed))
        taus.append(r.tau)
    assert min(taus) >= 2
    assert abs(np.mean(taus) - 17) < 4.5
