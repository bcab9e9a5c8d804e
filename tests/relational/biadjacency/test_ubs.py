"""Tests (docs/methods/biadjacency.md §5, §4.5, §9) for UBS and categorical rounding.

Statistical tolerances. Draws are independent, so the selection frequency ``f_i`` of index ``i`` over ``n`` draws
is Binomial(n, x_i)/n with standard deviation ``sqrt(x_i (1 - x_i) / n)``. The spec's bound ``4.5`` standard
deviations has a two-sided normal tail of ~7e-6 per index (a few 1e-4 family-wise over the ~30 indices checked
per test); all seeds are fixed, so the tests are deterministic.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from scipy import stats

from relviz.relational.biadjacency.projection import project_capped_simplex
from relviz.relational.biadjacency.ubs import categorical_rounding, merge_groups, ubs, ubs_many

FIG1 = np.array([0.1, 0.2, 0.5, 0.7, 0.6, 0.9])
X2 = np.array([0.6, 0.6, 0.6, 0.6, 0.3, 0.4, 0.5, 0.4])
N_DRAWS = 100_000


def frequencies(draws: np.ndarray, n_items: int) -> np.ndarray:
    return np.bincount(draws.ravel(), minlength=n_items) / draws.shape[0]


def indicators(draws: np.ndarray, n_items: int) -> np.ndarray:
    ind = np.zeros((draws.shape[0], n_items), dtype=bool)
    np.put_along_axis(ind, draws, True, axis=1)
    return ind


def binomial_ok(freq: np.ndarray, x: np.ndarray, n: int, z: float = 4.5) -> bool:
    return bool((np.abs(freq - x) <= z * np.sqrt(x * (1 - x) / n)).all())


def test_figure1_groups_and_structure():
    """[J] Figure 1 without shuffle: groups [0,3,4,5], complement [0.2,0.3,0.4,0.1], one pick per group."""
    starts, sums = merge_groups(FIG1)
    assert starts.tolist() == [0, 3, 4, 5]
    np.testing.assert_allclose(1 - sums, [0.2, 0.3, 0.4, 0.1], rtol=0, atol=1e-12)
    rng = np.random.default_rng(0)
    draws = ubs_many(FIG1, 3, N_DRAWS, rng, shuffle=False)
    ind = indicators(draws, 6)
    groups = [[0, 1, 2], [3], [4], [5]]
    per_group = np.stack([ind[:, g].sum(axis=1) for g in groups], axis=1)
    assert per_group.max() == 1  # indices of one group are never co-selected
    assert (per_group.sum(axis=1) == 3).all()  # exactly L - m = 1 group excluded per draw
    # Exclusion frequency of each group equals its complement probability (binomial bound as above).
    excluded = (per_group == 0).mean(axis=0)
    assert binomial_ok(excluded, np.array([0.2, 0.3, 0.4, 0.1]), N_DRAWS)
    single = ubs(FIG1, 3, np.random.default_rng(1), shuffle=False)
    assert single.size == 3 and np.isin(single, [0, 1, 2]).sum() <= 1


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize(("x", "m"), [(FIG1, 3), (X2, 4)])
def test_marginal_frequencies(x, m, shuffle):
    draws = ubs_many(x, m, N_DRAWS, np.random.default_rng(42), shuffle=shuffle)
    assert draws.shape == (N_DRAWS, m)
    assert (np.diff(draws, axis=1) > 0).all()  # sorted, distinct
    assert binomial_ok(frequencies(draws, x.size), x, N_DRAWS)


def test_chi_square_aggregate_large_case():
    """N = 2000, m = 50: sum_i (f_i - x_i)^2 n / (x_i (1 - x_i)) below the 0.999 quantile of chi2(N).

    Each term is a squared standardised binomial frequency: its mean is exactly 1 whatever the dependence
    between indices (the marginal variance of f_i is x_i (1 - x_i) / n), and by the normal approximation
    (n x_i >= 100 here) it is ~chi2(1). The fixed count makes the terms (weakly, negatively) dependent, which
    changes only the spread of the sum; chi2(N) is the spec's reference distribution. n = 10^4 draws keeps
    the test fast.
    """
    rng = np.random.default_rng(7)
    n_items, m, n = 2000, 50, 10_000
    x = rng.uniform(0.5, 1.5, n_items)
    x = project_capped_simplex(x * m / x.sum(), m)
    draws = ubs_many(x, m, n, rng)
    f = frequencies(draws, n_items)
    stat = float(np.sum((f - x) ** 2 * n / (x * (1 - x))))
    assert stat < stats.chi2.ppf(0.999, n_items)
    assert stat > stats.chi2.ppf(0.001, n_items) * 0.5  # not degenerate (e.g. frequencies copied from x)


def _random_case(rng: np.random.Generator, case: int) -> tuple[np.ndarray, int]:
    n = int(rng.integers(1, 80))
    kind = case % 6
    m = int(rng.integers(0, n + 1)) if kind < 4 else [0, 1, n - 1, n][(case // 6) % 4]
    m = min(max(m, 0), n)
    v = rng.normal(size=n) * 10 ** rng.uniform(-2, 1)
    if kind == 1:  # many exact 0s and 1s
        v[rng.random(n) < 0.3] = 50.0
        v[rng.random(n) < 0.3] = -50.0
    x = project_capped_simplex(v, m)
    if kind == 2 and m == 1 and n > 1:  # one entry holding almost all mass
        x = np.full(n, 1e-9 / (n - 1))
        x[rng.integers(n)] = 1 - 1e-9
    if kind == 3:  # float32 inputs: float64 sum off by ~1e-7 * N
        x = x.astype(np.float32)
    if kind == 5 and m not in (0, n):  # sum off by +-1e-6 on a fractional entry
        frac = np.flatnonzero((x > 0) & (x < 1))
        if frac.size:
            x = x.copy()
            x[frac[0]] += rng.choice([-1e-6, 1e-6])
    return x, m


def test_exact_count_zeros_ones_on_many_random_cases():
    """10^4 random cases: exactly m distinct indices; x_i == 1 always selected; x_i == 0 never (§9.16-17)."""
    rng = np.random.default_rng(123)
    for case in range(10_000):
        x, m = _random_case(rng, case)
        out = ubs(x, m, rng, shuffle=bool(case % 2))
        assert out.size == m and np.unique(out).size == m, (case, x, m)
        assert out.size == 0 or (out.min() >= 0 and out.max() < x.size)
        assert np.isin(np.flatnonzero(x == 1), out).all(), (case, x, out)
        assert not np.isin(np.flatnonzero(x == 0), out).any(), (case, x, out)


def test_negative_association_sanity():
    """§9.18: empirical pairwise covariances of selection indicators <= 3 standard errors above 0.

    The standard error of a sample covariance is estimated by the sample std of (I_i - f_i)(I_j - f_j) / sqrt(n).
    """
    for x, m in [(FIG1, 3), (X2, 4)]:
        ind = indicators(ubs_many(x, m, N_DRAWS, np.random.default_rng(5)), x.size).astype(np.float64)
        centred = ind - ind.mean(axis=0)
        for i in range(x.size):
            for j in range(i + 1, x.size):
                prod = centred[:, i] * centred[:, j]
                se = prod.std() / np.sqrt(N_DRAWS)
                assert prod.mean() <= 3 * se, (x, i, j, prod.mean(), se)


def test_upper_bounds_inputs_and_errors():
    rng = np.random.default_rng(8)
    x = np.full(10, 0.5)
    upper = np.ones(10)
    upper[[2, 5]] = 0.0  # masked cells: clamped to 0, never selected (the sum is repaired)
    for _ in range(200):
        out = ubs(x, 5, rng, upper=upper)
        assert not np.isin([2, 5], out).any() and out.size == 5
    out_t = ubs(torch.tensor(x, dtype=torch.float32), 5, rng)
    assert out_t.size == 5
    mat = np.full((4, 5), 0.25)
    assert ubs(mat, 5, rng).max() < 20  # matrices are flattened row-major
    with pytest.raises(ValueError):
        ubs(np.array([0.5, np.nan]), 1, rng)
    with pytest.raises(ValueError):
        ubs(x, 11, rng)
    with pytest.raises(TypeError):
        ubs(x, 2.5, rng)
    with pytest.raises(ValueError):
        ubs(x, 9, rng, upper=upper)


def test_deterministic_per_seed():
    x = project_capped_simplex(np.random.default_rng(0).random(5000), 40.0)
    a = ubs(x, 40, np.random.default_rng(99))
    b = ubs(x, 40, np.random.default_rng(99))
    c = ubs(x, 40, np.random.default_rng(100))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_scale_one_million():
    """§9.19 functional part (the < 0.2 s timing is reported by benchmarks/biadjacency_kernels.py)."""
    rng = np.random.default_rng(3)
    x = rng.random(10**6).astype(np.float32)
    x = x / x.sum(dtype=np.float64) * 1000  # float32 input, float64 sum off by rounding
    t0 = time.perf_counter()
    out = ubs(x, 1000, rng)
    elapsed = time.perf_counter() - t0
    assert out.size == 1000 and np.unique(out).size == 1000 and (x[out] > 0).all()
    assert elapsed < 5.0  # generous sanity bound only


def test_categorical_rounding_frequencies_and_one_parent():
    """§9.21: every row gets exactly one column; frequencies match the row probabilities (binomial bound)."""
    p = np.array(
        [
            [0.1, 0.2, 0.0, 0.3, 0.4],
            [0.0, 0.0, 1.0, 0.0, 0.0],
            [0.25, 0.25, 0.25, 0.25, 0.0],
        ]
    )
    n = N_DRAWS
    rng = np.random.default_rng(17)
    picks = categorical_rounding(np.repeat(p, n, axis=0), rng).reshape(3, n)
    for i in range(3):
        f = np.bincount(picks[i], minlength=5) / n
        assert binomial_ok(f, p[i], n)
        assert (f[p[i] == 0] == 0).all()
    forbidden = np.zeros_like(p, dtype=bool)
    forbidden[0, 4] = True
    picks_f = categorical_rounding(np.repeat(p[:1], 1000, axis=0), rng, np.repeat(forbidden[:1], 1000, axis=0))
    assert (picks_f != 4).all() and picks_f.shape == (1000,)
    torch_picks = categorical_rounding(torch.from_numpy(p), rng)
    assert torch_picks.shape == (3,) and torch_picks[1] == 2
    with pytest.raises(ValueError):
        categorical_rounding(np.zeros((2, 3)), rng)
    with pytest.raises(ValueError):
        categorical_rounding(np.array([[0.5, -0.5, 1.0]]), rng)


def test_degree_preserving_rounding_keeps_column_counts() -> None:
    """Exact column counts on random instances (also with a forbidden diagonal), and the moved
    rows go where they are likely: with a planted preference the assignment agrees with it."""
    from relviz.relational.biadjacency.ubs import degree_preserving_rounding

    rng = np.random.default_rng(0)
    for trial in range(30):
        n, k = int(rng.integers(5, 300)), int(rng.integers(2, 12))
        p = rng.random((n, k)) ** 3
        p /= p.sum(1, keepdims=True)
        targets = np.bincount(rng.integers(0, k, n), minlength=k)
        forbidden = None
        if trial % 3 == 0 and n >= k:
            forbidden = np.zeros((n, k), dtype=bool)
            forbidden[np.arange(k), np.arange(k)] = True
        picks = degree_preserving_rounding(p, targets, rng, forbidden, exact_limit=200)
        np.testing.assert_array_equal(np.bincount(picks, minlength=k), targets)
        if forbidden is not None:
            assert not forbidden[np.arange(n), picks].any()
    # planted: rows 0…49 belong to column 0, 50…99 to column 1; targets 50/50
    p = np.full((100, 2), 0.05)
    p[:50, 0] = p[50:, 1] = 0.95
    picks = degree_preserving_rounding(p, np.array([50, 50]), np.random.default_rng(1))
    assert (picks[:50] == 0).mean() > 0.9 and (picks[50:] == 1).mean() > 0.9
    with pytest.raises(ValueError):
        degree_preserving_rounding(p, np.array([10, 10]), rng)
