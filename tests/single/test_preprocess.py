"""DP preprocessing: the rare-category merge (dual threshold, full declared list, ledger), the
merged view's marginals, decoding, the fast bins preset, and the mechanisms' ``rare_merge``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.privacy.accountant import Accountant
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.progress import silent
from relviz.schema import Attribute, PrivacyUnit, Schema, Table
from relviz.single import get
from relviz.single.preprocess import (
    FAST_BINS,
    MergedModel,
    MergedTable,
    rare_merge,
    rare_merge_columns,
    with_uniform_bins,
)

N = 20_000
COMMON = [3, 17, 40, 99, 150]  # 5 of 200 declared categories carry ~99.5 % of the rows


def _db() -> Database:
    rng = np.random.default_rng(0)
    big = np.where(rng.random(N) < 0.995, rng.choice(COMMON, N), rng.integers(0, 200, N))
    small = (big % 3 + rng.integers(0, 2, N)) % 3
    t = Table("t", ("id",), (Attribute.categorical("big", list(range(200))), Attribute.categorical("s", [0, 1, 2]),
                             Attribute.numeric("x", 0, 10)))
    df = pd.DataFrame({"id": np.arange(N), "big": big, "s": small, "x": rng.uniform(0, 10, N)})
    return Database(Schema((t,), (), PrivacyUnit("t")), {"t": df})


@pytest.fixture(scope="module")
def table():
    db = _db()
    return db.schema.table("t"), Curator(db).table("t")


def test_columns_are_chosen_from_the_declared_schema_only(table) -> None:
    t, _ = table
    assert rare_merge_columns(t) == ("big",)  # 200 declared categories; x has 100 bins but is numeric
    assert rare_merge_columns(t, beta=3) == ("big", "s")
    fast = with_uniform_bins(t)
    assert next(a for a in fast.attributes if a.name == "x").size == FAST_BINS


def test_dual_threshold_merges_the_rare_categories_over_the_full_list(table) -> None:
    """At ρ = 1 (σ ≈ 0.7) the θ·n̂ term (0.2 % of 20,000 = 40 rows) decides: the five common
    categories (≈ 4,000 rows each) stay, the 195 others (≈ 0.5 row each) merge into one code. The
    release covers all 200 declared categories."""
    _, pt = table
    acc = Accountant(1, delta=1e-6)
    mapping = rare_merge(pt, Budget(acc, "t", Fraction(1), np.random.default_rng(0)), Fraction(1),
                         attributes=("big",), histogram_sensitivity=1.0)
    m = mapping["big"]
    kept = np.flatnonzero(m < m.max())
    assert list(kept) == COMMON and m.max() == 5
    e = acc.ledger[0]
    assert e.module == "preprocess" and acc.spent() == 1 and e.sensitivity == 1.0
    # the merged view sums the original marginal over the code map
    view = MergedTable(pt, mapping)
    assert view.sizes == (6, 3, 100)
    full = pt.marginal(("big", "s")).reshape(200, 3)
    merged = view.marginal(("big", "s")).reshape(6, 3)
    for code in range(6):
        assert np.allclose(merged[code], full[m == code].sum(axis=0))


def test_decoding_draws_uniformly_inside_the_rare_group() -> None:
    """A model that always emits the rare code: decoded values are spread uniformly over the
    merged categories (each frequency within 5 binomial standard deviations of 1/k)."""
    m = np.array([0, 2, 1, 2, 2, 2])  # categories 1, 3, 4, 5 are rare (code 2)

    class Rare:
        total = 1.0

        def sample(self, n, rng):  # noqa: ANN001, ANN202
            return np.full((n, 1), 2)

    n = 40_000
    out = MergedModel(Rare(), ("a",), {"a": m}).sample(n, np.random.default_rng(0))[:, 0]
    freq = np.bincount(out, minlength=6) / n
    assert set(np.flatnonzero(freq)) == {1, 3, 4, 5}
    assert np.all(np.abs(freq[[1, 3, 4, 5]] - 0.25) <= 5 * math.sqrt(0.25 * 0.75 / n))


@pytest.mark.parametrize("mechanism", ["privbayes", "privsyn"])
def test_mechanisms_with_rare_merge_spend_exactly_and_decode(table, mechanism: str) -> None:
    t, pt = table
    rho = Fraction(1, 2)
    acc = Accountant(rho, delta=1e-6)
    mech = get(mechanism, rare_merge=rare_merge_columns(t))
    assert mech.problems(t) == []
    model = mech.fit(pt, Budget(acc, "t", rho, np.random.default_rng(0)), histogram_sensitivity=1.0,
                     score_sensitivity=1.0, progress=silent())
    assert acc.spent() == rho
    pre = [e for e in acc.ledger if e.module == "preprocess"]
    assert len(pre) == 1 and pre[0].rho == rho / 10
    scales = mech.noise_scales(t, rho, histogram_sensitivity=1.0, score_sensitivity=1.0)
    assert math.isclose(scales[pre[0].label], pre[0].sigma, rel_tol=1e-12)
    s = model.sample(5000, np.random.default_rng(1))
    assert s.shape == (5000, 3) and s[:, 0].max() < 200
    assert np.isin(s[:, 0], COMMON).mean() > 0.95  # the common categories keep their mass


def test_unknown_or_numeric_merge_attributes_are_problems(table) -> None:
    t, _ = table
    kinds = [p.column for p in get("aim", rare_merge=("x", "nope")).problems(t)]
    assert kinds == ["x", "nope"]
