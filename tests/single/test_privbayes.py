"""PrivBayes: the R score's add/remove sensitivity, the pure-ε ledger, the sampler, determinism,
and that the network captures dependencies the independent baseline misses."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from relviz.errors import ParameterError
from relviz.privacy.accountant import Accountant
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.progress import silent
from relviz.single import available, get
from relviz.single.privbayes import PrivBayesModel, r_score
from tests.single.smoke import SMALL_SIZES, smoke_db, tvd2


@pytest.fixture(scope="module")
def chain():
    db = smoke_db(20_000, sizes=SMALL_SIZES)
    return Curator(db).table("t")


def _fit(pt, rho, seed=0, score=1.0, hist=1.0, **params):
    rho = Fraction(rho)
    acc = Accountant(rho, delta=1e-6)
    m = get("privbayes", **params).fit(pt, Budget(acc, "t", rho, np.random.default_rng(seed)),
                                       histogram_sensitivity=hist, score_sensitivity=score, progress=silent())
    return m, acc


def test_registered_and_parameters_checked() -> None:
    assert "privbayes" in available()
    for params, name in [({"beta": 1.0}, "beta"), ({"k_max": 4}, "k_max"), ({"noise": "x"}, "noise"),
                         ({"count_share": 0}, "count_share"), ({"theta": 0}, "theta")]:
        with pytest.raises(ParameterError) as e:
            get("privbayes", **params)
        assert e.value.parameter == name


def test_r_score_add_remove_sensitivity_is_at_most_two() -> None:
    """Adding one row anywhere changes R by ≤ 2 (the module docstring's bound), for every cell of
    random tables, sparse and dense, including the empty table."""
    rng = np.random.default_rng(0)
    worst = 0.0
    for shape in [(2, 2), (3, 5), (4, 1), (6, 6)]:
        for scale in [0, 1, 3, 50]:
            for _ in range(5):
                c = rng.poisson(scale, size=shape).astype(float)
                base = r_score(c)
                for idx in np.ndindex(shape):
                    c2 = c.copy()
                    c2[idx] += 1
                    worst = max(worst, abs(r_score(c2) - base))
    assert worst <= 2.0
    assert worst > 0.5  # the bound is not vacuous


def test_pure_epsilon_ledger_spends_exactly(chain) -> None:
    m, acc = _fit(chain, "1/2", score=2.0)
    d = len(SMALL_SIZES)
    assert acc.spent() == Fraction(1, 2)
    kinds = [e.mechanism for e in acc.ledger]
    assert kinds[0] == "laplace" and kinds[-1] == "laplace"
    assert kinds.count("exponential") == d - 1
    assert all(e.sensitivity == 4.0 for e in acc.ledger if e.mechanism == "exponential")  # 2 × S
    marg = acc.ledger[-1]
    n_marg = int(marg.label.split("(")[1].rstrip(")"))
    assert marg.sensitivity == 2.0 * n_marg  # L1: one count per released marginal × S
    for e in acc.ledger:
        if e.mechanism == "laplace":  # ε = √2·Δ₁/σ (σ = √2·b) and ε²/2 ≤ ρ: pure ε in zCDP
            eps = math.sqrt(2) * e.sensitivity / e.sigma
            assert eps ** 2 / 2 <= float(e.rho) * (1 + 1e-12)
            assert eps ** 2 / 2 >= float(e.rho) * (1 - 1e-9)
    # the network: every attribute once, parents chosen before their child
    assert sorted(m.order) == list(range(d))
    for i, pa in enumerate(m.parents):
        assert set(pa) <= set(m.order[:i]) and len(pa) <= 3


def test_noise_scales_match_the_ledger(chain) -> None:
    """The count's std is known before the run and equals the ledger's."""
    from relviz.schema import Attribute, Table

    t = Table("t", ("id",), tuple(Attribute.categorical(f"a{i}", list(range(s))) for i, s in enumerate(SMALL_SIZES)))
    scales = get("privbayes").noise_scales(t, Fraction(1, 2), histogram_sensitivity=1.0, score_sensitivity=2.0)
    _, acc = _fit(chain, "1/2", score=2.0)
    assert math.isclose(scales["row count (Laplace, std)"], acc.ledger[0].sigma, rel_tol=1e-12)


def test_deterministic_per_seed(chain) -> None:
    m1, a1 = _fit(chain, "1/5", seed=3)
    m2, a2 = _fit(chain, "1/5", seed=3)
    assert m1.order == m2.order and m1.parents == m2.parents
    assert [e.label for e in a1.ledger] == [e.label for e in a2.ledger]
    s1, s2 = m1.sample(500, np.random.default_rng(1)), m2.sample(500, np.random.default_rng(1))
    assert np.array_equal(s1, s2)


def test_sampler_draws_the_conditional_probabilities() -> None:
    """Ancestral sampling through the offset-CDF ``searchsorted``: with n draws each frequency is
    within 5 binomial standard deviations √(p(1−p)/n) of its probability (zero stays zero)."""
    p0 = np.array([0.3, 0.7])
    p1 = np.array([[0.0, 0.5, 0.5, 0.0], [0.1, 0.0, 0.2, 0.7]])
    model = PrivBayesModel(("a", "b"), (0, 1), ((), (0,)), (np.cumsum(p0)[None, :], np.cumsum(p1, axis=1)),
                           (2, 4), 100.0)
    n = 200_000
    s = model.sample(n, np.random.default_rng(0))
    joint = np.bincount(s[:, 0] * 4 + s[:, 1], minlength=8) / n
    expect = (p0[:, None] * p1).ravel()
    assert np.all(np.abs(joint - expect) <= 5 * np.sqrt(expect * (1 - expect) / n) + 1e-12)
    assert joint[expect == 0].sum() == 0


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_network_beats_independence_on_a_chain(chain, noise: str) -> None:
    """At ρ = 1 the 2-way TVD of PrivBayes is at most half the independent baseline's: on the
    chain the independence error is the dependence itself (≈ 0.2 mean TVD), far above both
    mechanisms' noise (PrivBayes' θ-useful marginals have cell noise ≤ 1/θ of the mean count)."""
    real = chain._enc.codes
    n = len(real)
    m, _ = _fit(chain, 1, noise=noise)
    tvd_pb = tvd2(real, m.sample(n, np.random.default_rng(5)), SMALL_SIZES).mean()
    acc = Accountant(1, delta=1e-6)
    ind = get("independent").fit(chain, Budget(acc, "t", Fraction(1), np.random.default_rng(0)),
                                 histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    tvd_ind = tvd2(real, ind.sample(n, np.random.default_rng(5)), SMALL_SIZES).mean()
    assert tvd_pb <= 0.5 * tvd_ind, (tvd_pb, tvd_ind)


def test_tiny_budget_gives_k_zero_and_still_spends_exactly() -> None:
    """With n̂ far too small for any θ-useful 2-way marginal, k = 0: no structure steps, the
    structure's share measures the 1-way marginals, and the ledger still ends at exactly ρ."""
    db = smoke_db(300, sizes=SMALL_SIZES)
    pt = Curator(db).table("t")
    m, acc = _fit(pt, "1/1000")
    assert acc.spent() == Fraction(1, 1000)
    assert [e.mechanism for e in acc.ledger] == ["laplace", "laplace"]
    assert all(p == () for p in m.parents)


def test_laplace_release_scale_matches_its_rho_and_sensitivity() -> None:
    """``Budget.laplace``: b = Δ₁/ε with ε = √(2ρ) (numpy), the ledger's σ is √2·b, and the empirical
    standard deviation of 200,000 draws is within 5 standard errors of √2·b (the sample variance of
    Laplace noise has relative standard error √(5/n): kurtosis 6)."""
    rho, delta1 = Fraction(1, 8), 3.0
    acc = Accountant(rho, delta=1e-6)
    n = 200_000
    noisy, b = Budget(acc, "t", rho, np.random.default_rng(0)).laplace(
        np.zeros(n, dtype=np.int64), rho=rho, sensitivity=delta1, label="x")
    assert math.isclose(b, delta1 / math.sqrt(2 * float(rho)), rel_tol=1e-12)
    e = acc.ledger[0]
    assert e.mechanism == "laplace" and math.isclose(e.sigma, math.sqrt(2) * b) and acc.spent() == rho
    assert abs(noisy.var() / (2 * b * b) - 1) <= 5 * math.sqrt(5 / n)


def test_opendp_laplace_map_is_within_the_charged_rho() -> None:
    """With OpenDP's exact sampler, the scale is raised until OpenDP's own pure-DP map ε at Δ₁
    satisfies ε²/2 ≤ ρ exactly (integer and float queries)."""
    from relviz.privacy.noise import calibrate_laplace, opendp_laplace_epsilon

    rho = Fraction(1, 10)
    for integer in (True, False):
        cal = calibrate_laplace("opendp", 2.0, rho, integer=integer, size=4)
        eps = opendp_laplace_epsilon(2.0, cal.scale, integer=integer, size=4, k=cal.k)
        assert Fraction(eps) ** 2 / 2 <= rho
        assert eps > 0.99 * math.sqrt(2 * float(rho))  # not needlessly noisy
