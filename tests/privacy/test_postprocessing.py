"""Iterative proportional fitting in relviz.privacy.postprocessing (free post-processing)."""

from __future__ import annotations

import numpy as np
import pytest

from relviz.privacy.postprocessing import fit_group_margins, fit_margins


def test_fit_group_margins_meets_margins_that_a_table_has() -> None:
    """Margins read off a positive table ``T`` (two overlapping groupings of 300 rows × 5
    columns, and ``T``'s row sums) are feasible, so IPF from another positive table converges
    to them (Csiszár 1975, Ann. Probab. 3, Thm. 3.2): within 1e-8 of the total after enough
    rounds; the result has the starting table's cross-ratios within a group cell (IPF only
    rescales). The seeds' worst margin error is checked, not one lucky draw."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n, k = 300, 5
        truth = rng.gamma(2.0, size=(n, k))
        start = rng.gamma(2.0, size=(n, k))
        g1, g2 = rng.integers(0, 7, n), rng.integers(0, 4, n)
        margins = [(g, np.stack([np.bincount(g, weights=truth[:, j], minlength=g.max() + 1)
                                 for j in range(k)], axis=1)) for g in (g1, g2)]
        out = fit_group_margins(start, truth.sum(axis=1), margins, iters=2000, tol=1e-12)
        assert np.abs(out.sum(axis=1) - truth.sum(axis=1)).max() < 1e-8 * truth.sum()
        for g, target in margins:
            cur = np.stack([np.bincount(g, weights=out[:, j], minlength=target.shape[0])
                            for j in range(k)], axis=1)
            assert np.abs(cur - target).max() < 1e-6 * truth.sum()
        assert start.sum() != pytest.approx(out.sum())  # it did move
        assert not np.shares_memory(out, start)


def test_fit_group_margins_with_one_group_is_fit_margins() -> None:
    """One group holding every row is the 2-D problem of :func:`fit_margins` (row and column
    sums): both reach the same table."""
    rng = np.random.default_rng(5)
    start = rng.gamma(2.0, size=(40, 6))
    rows = rng.gamma(2.0, size=40)
    cols = rng.dirichlet(np.ones(6)) * rows.sum()
    a = fit_margins(start, rows, cols, iters=500)
    b = fit_group_margins(start, rows, [(np.zeros(40, dtype=int), cols[None, :])], iters=500)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
