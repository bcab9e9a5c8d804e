"""PrivSyn: InDif sensitivity, DenseMarg's greedy rule, consistency, GUM convergence, the ledger,
determinism, and quality against the independent baseline."""

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
from relviz.schema import Attribute, Table
from relviz.single import available, get
from relviz.single.privsyn import gum, in_dif, make_consistent, select_dense_marginals
from tests.single.smoke import SMALL_SIZES, smoke_db, tvd2


@pytest.fixture(scope="module")
def chain():
    return Curator(smoke_db(20_000, sizes=SMALL_SIZES)).table("t")


def _fit(pt, rho, seed=0, score=1.0, hist=1.0, **params):
    rho = Fraction(rho)
    acc = Accountant(rho, delta=1e-6)
    m = get("privsyn", **params).fit(pt, Budget(acc, "t", rho, np.random.default_rng(seed)),
                                     histogram_sensitivity=hist, score_sensitivity=score, progress=silent())
    return m, acc


def test_registered_and_parameters_checked() -> None:
    assert "privsyn" in available()
    for params, name in [({"select_share": 0.0}, "select_share"), ({"update_iters": 0}, "update_iters"),
                         ({"alpha0": 2.0}, "alpha0"), ({"select_share": 0.5, "oneway_share": 0.5}, "select_share")]:
        with pytest.raises(ParameterError) as e:
            get("privsyn", **params)
        assert e.value.parameter == name


def test_in_dif_add_remove_sensitivity_is_at_most_four() -> None:
    """Adding one row anywhere changes InDif by ≤ 4 (1 in the count table, < 3 in the
    independence table; module docstring), on random sparse and dense tables and the empty one."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for shape in [(2, 2), (3, 5), (6, 6), (1, 4)]:
        for scale in [0, 1, 4, 40]:
            for _ in range(5):
                c = rng.poisson(scale, size=shape).astype(float)
                base = in_dif(c)
                for idx in np.ndindex(shape):
                    c2 = c.copy()
                    c2[idx] += 1
                    worst = max(worst, abs(in_dif(c2) - base))
    assert 1.0 < worst <= 4.0


def test_dense_marg_selects_by_score_against_noise() -> None:
    """A pair is worth measuring when its InDif exceeds the noise error it adds: scores far
    below the per-marginal noise √(2/π)·c·σ select nothing, a huge score is selected first, and
    the selection stops before adding a pair whose gain is negative."""
    cells = np.array([100, 100, 100])
    rho2 = 0.1  # σ = 1/√0.2 ≈ 2.24 per cell: one marginal's noise error ≈ 0.8·100·2.24 ≈ 178
    assert select_dense_marginals(np.array([1.0, 2.0, 3.0]), cells, rho2=rho2, sensitivity=1.0) == []
    chosen = select_dense_marginals(np.array([10.0, 1e5, 500.0]), cells, rho2=rho2, sensitivity=1.0)
    assert chosen[0] == 1 and 0 not in chosen


def test_consistency_agrees_on_shared_attributes_and_keeps_exact_inputs() -> None:
    rng = np.random.default_rng(0)
    sizes = (3, 4, 2)
    x = rng.integers(0, 50, size=(3, 4, 2)).astype(float)
    exact = [((0,), x.sum(axis=(1, 2)), 1.0), ((1,), x.sum(axis=(0, 2)), 1.0), ((2,), x.sum(axis=(0, 1)), 1.0),
             ((0, 1), x.sum(axis=2), 2.0), ((1, 2), x.sum(axis=0), 2.0)]
    same = make_consistent(exact, sizes)
    for (_, a, _), b in zip(exact, same):  # already consistent and non-negative: unchanged
        assert np.allclose(a, b)
    noisy = [(attrs, arr + rng.normal(0, s * 5, arr.shape), s) for attrs, arr, s in exact]
    out = make_consistent(noisy, sizes)
    tot = out[0].sum()
    assert all(np.all(o >= 0) and math.isclose(o.sum(), tot, rel_tol=1e-6) for o in out)
    assert np.allclose(out[3].sum(axis=1), out[0], atol=1e-6 * tot)  # a0 from (a0, a1) = 1-way a0
    assert np.allclose(out[3].sum(axis=0), out[4].sum(axis=1), atol=1e-6 * tot)  # a1 agrees
    assert np.allclose(out[4].sum(axis=0), out[2], atol=1e-6 * tot)


def test_gum_matches_exact_targets() -> None:
    """Noise-free targets of a chain: after 50 GUM iterations every targeted 2-way marginal is
    within 3× the TVD of n fresh draws, ½·√(2/π)·√(C/n) (C cells), of its target."""
    db = smoke_db(20_000, sizes=SMALL_SIZES, seed=2)
    real = Curator(db).table("t")._enc.codes
    sizes = tuple(SMALL_SIZES)
    pairs = [(i, i + 1) for i in range(len(sizes) - 1)]
    targets = [((i,), np.bincount(real[:, i], minlength=s).astype(float)) for i, s in enumerate(sizes)]
    targets += [((i, j), np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=sizes[i] * sizes[j])
                 .reshape(sizes[i], sizes[j]).astype(float)) for i, j in pairs]
    n = len(real)
    syn = gum(targets, sizes, n, np.random.default_rng(0))
    got = tvd2(real, syn, list(sizes), pairs)
    bound = np.array([3 * 0.5 * math.sqrt(2 / math.pi) * math.sqrt(sizes[i] * sizes[j] / n) for i, j in pairs])
    assert np.all(got <= bound), (got, bound)


def test_ledger_is_gaussian_and_exact(chain) -> None:
    m, acc = _fit(chain, "1/5", score=2.0, hist=math.sqrt(2))
    assert acc.spent() == Fraction(1, 5)
    assert all(e.mechanism == "gaussian" for e in acc.ledger)
    d = len(SMALL_SIZES)
    p = d * (d - 1) // 2
    score = next(e for e in acc.ledger if e.label.startswith("InDif"))
    assert score.sensitivity == 4 * 2.0 * math.sqrt(p) and score.module == "select"
    t = Table("t", ("id",), tuple(Attribute.categorical(f"a{i}", list(range(s))) for i, s in enumerate(SMALL_SIZES)))
    scales = get("privsyn").noise_scales(t, Fraction(1, 5), histogram_sensitivity=math.sqrt(2), score_sensitivity=2.0)
    assert math.isclose(scales[f"InDif scores ({p} pairs)"], score.sigma, rel_tol=1e-12)
    assert math.isclose(scales[f"1-way marginals ({d} attributes)"], acc.ledger[0].sigma, rel_tol=1e-12)
    assert len(m.pairs) == len(acc.ledger) - 2 >= 1


def test_deterministic_per_seed(chain) -> None:
    m1, _ = _fit(chain, "1/5", seed=4, update_iters=5)
    m2, _ = _fit(chain, "1/5", seed=4, update_iters=5)
    assert m1.pairs == m2.pairs
    assert np.array_equal(m1.sample(3000, np.random.default_rng(2)), m2.sample(3000, np.random.default_rng(2)))


def test_beats_independence_on_a_chain(chain) -> None:
    """At ρ = 1 PrivSyn's mean 2-way TVD is at most half the independent baseline's (the chain's
    dependence, ≈ 0.2 mean TVD, dominates both mechanisms' noise at this budget)."""
    real = chain._enc.codes
    n = len(real)
    m, _ = _fit(chain, 1)
    tvd_ps = tvd2(real, m.sample(n, np.random.default_rng(5)), SMALL_SIZES).mean()
    acc = Accountant(1, delta=1e-6)
    ind = get("independent").fit(chain, Budget(acc, "t", Fraction(1), np.random.default_rng(0)),
                                 histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    tvd_ind = tvd2(real, ind.sample(n, np.random.default_rng(5)), SMALL_SIZES).mean()
    assert tvd_ps <= 0.5 * tvd_ind, (tvd_ps, tvd_ind)
