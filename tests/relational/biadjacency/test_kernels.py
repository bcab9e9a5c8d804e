"""Tests (docs/methods/biadjacency.md §2, §4, §9) of the bi-adjacency kernels: the factorised slice operator,
the projections and PGD (the workloads and marginals are tested in tests/test_marginals.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from relviz.marginals import enumerate_workloads
from relviz.relational.biadjacency.device import resolve_device
from relviz.relational.biadjacency.pgd import pgd_mn, pgd_otm, random_start_mn, random_start_otm
from relviz.relational.biadjacency.projection import project_capped_simplex, project_rows_simplex
from relviz.relational.biadjacency.workloads import SliceOperator, slice_codes
from tests.relational.biadjacency.oracles import project_capped_simplex_exact, slice_objective
from tests.test_marginals import explicit_q, random_codes, small_instance

# -------------------------------------------------------------------------------- Lemma 1 and products (§9.7, §9.8)


@pytest.mark.parametrize("seed", range(5))
def test_factorised_products_equal_explicit_q(seed):
    rng, d1, d2, codes1, codes2 = small_instance(seed, 14, 11)
    all_wls = enumerate_workloads(d1, d2, 3) + enumerate_workloads(d1, d2, 2)
    wls = [all_wls[i] for i in rng.choice(len(all_wls), size=4, replace=False)]
    rows = rng.choice(len(codes1), size=10, replace=False)
    cols = rng.choice(len(codes2), size=8, replace=False)
    op = SliceOperator.from_tables(codes1, codes2, rows, cols, wls, device="cpu", dtype=torch.float64)
    q = explicit_q(codes1, codes2, wls, rows, cols)
    assert q.shape == (op.n_queries, 80)
    x = rng.normal(size=(10, 8))
    r = rng.normal(size=op.n_queries)
    np.testing.assert_allclose(op.forward(x).numpy(), q @ x.reshape(-1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(op.transpose(r).numpy().reshape(-1), q.T @ r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(op.normal(x).numpy().reshape(-1), q.T @ (q @ x.reshape(-1)), rtol=0, atol=1e-12)
    # Each Q_w Q_w^T is diagonal with the cell sizes n1_w(c1) n2_w(c2) (docs/methods/biadjacency.md §2.2).
    a_list, b_list = slice_codes(codes1, codes2, rows, cols, wls)
    for w, (a, b, wl) in enumerate(zip(a_list, b_list, wls, strict=True)):
        qw = q[op.offsets[w] : op.offsets[w + 1]]
        qqt = (qw @ qw.T).toarray()
        sizes = np.outer(np.bincount(a, minlength=wl.C1), np.bincount(b, minlength=wl.C2)).reshape(-1)
        np.testing.assert_array_equal(qqt, np.diag(sizes))


def test_operator_validation_and_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in {"cpu", "cuda"}
    with pytest.raises(ValueError):
        SliceOperator([np.array([0, 2])], [np.array([0])], [2], [1], device="cpu")
    with pytest.raises(ValueError):
        SliceOperator([], [], [], [], device="cpu")


# --------------------------------------------------------------------------------- spectral bounds (§9.9)


def test_spectral_bounds_bracket_svd_and_power_iteration():
    """Analytic bounds bracket sigma_max^2; a converged power iteration is within 1e-3 of the SVD value.

    Convergence is certified (Collatz-Wielandt upper bound within rtol = 1e-4 of the Rayleigh quotient), so a
    converged estimate is within 1e-4; 1e-3 is the spec's acceptance tolerance. Instances whose two top
    eigenvalues nearly coincide may not converge in 50 steps; they must still return a safe (upper) value.
    """
    rng = np.random.default_rng(0)
    d1, d2 = [2, 3, 4, 2], [3, 2, 5]
    converged = 0
    n_cases = 40
    for _ in range(n_cases):
        s1, s2 = int(rng.integers(5, 16)), int(rng.integers(5, 16))
        codes1, codes2 = random_codes(rng, s1, d1), random_codes(rng, s2, d2)
        wls = enumerate_workloads(d1, d2, 3)
        sel = [wls[i] for i in rng.choice(len(wls), size=int(rng.integers(1, 9)), replace=False)]
        op = SliceOperator.from_tables(codes1, codes2, np.arange(s1), np.arange(s2), sel, "cpu", torch.float64)
        q = explicit_q(codes1, codes2, sel).toarray()
        sigma_sq = np.linalg.svd(q, compute_uv=False)[0] ** 2
        lo, hi = op.spectral_bounds()
        assert lo <= sigma_sq * (1 + 1e-12) and sigma_sq <= hi * (1 + 1e-12)
        if len(sel) == 1:
            assert lo == hi and abs(hi - sigma_sq) <= 1e-9 * sigma_sq
        res = op.power_iteration(rng)
        assert res.sigma_sq <= sigma_sq * (1 + 1e-12) and res.upper >= sigma_sq * (1 - 1e-12)
        if res.converged:
            converged += 1
            assert abs(res.sigma_sq - sigma_sq) <= 1e-3 * sigma_sq
        safe = op.sigma_max_sq(rng)
        assert sigma_sq * (1 - 1e-12) <= safe <= hi * (1 + 1e-12)
    assert converged >= 0.8 * n_cases
    # No randomness: analytic upper bound.
    assert op.sigma_max_sq(None) == op.spectral_bounds()[1]


# ------------------------------------------------------------------------------------ projection (§9.11)


@pytest.mark.parametrize("n", [10, 1000, 10**6])
def test_capped_simplex_projection_random(n):
    rng = np.random.default_rng(n)
    cases = 3 if n == 10**6 else 60
    for _ in range(cases):
        scale = 10 ** rng.uniform(-3, 1)
        v = rng.normal(size=n) * scale + rng.uniform(-1, 1) * scale
        m = float(rng.uniform(0, n)) if rng.random() < 0.5 else float(rng.integers(0, n + 1))
        x, n_eval = project_capped_simplex(v, m, return_evaluations=True)
        assert x.min() >= 0.0 and x.max() <= 1.0
        assert abs(x.sum() - m) <= 1e-9 * max(1.0, m)
        assert n_eval <= 40  # safeguarded Newton, typically 3-12 evaluations


def test_capped_simplex_projection_matches_breakpoint_solver():
    rng = np.random.default_rng(11)
    for case in range(200):
        n = int(rng.integers(1, 31))
        v = rng.normal(size=n) * 10 ** rng.uniform(-3, 1)
        u = None if case % 2 else np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.1, 1.0, n))
        usum = n if u is None else u.sum()
        m = float(rng.uniform(0, usum))
        x = project_capped_simplex(v, m, u)
        np.testing.assert_allclose(x, project_capped_simplex_exact(v, m, u), rtol=0, atol=1e-9)
        uu = np.ones(n) if u is None else u
        assert (x >= 0).all() and (x <= uu).all() and abs(x.sum() - m) <= 1e-9 * max(1, m)
        assert (x[uu == 0] == 0).all()


def test_capped_simplex_projection_special_cases():
    rng = np.random.default_rng(5)
    x_feas = project_capped_simplex(rng.normal(size=500), 120.0)
    np.testing.assert_allclose(project_capped_simplex(x_feas, 120.0), x_feas, rtol=0, atol=1e-12)  # fixed point
    v = rng.normal(size=50)
    u = np.where(np.arange(50) % 7 == 0, 0.0, 1.0)
    np.testing.assert_array_equal(project_capped_simplex(v, 0.0, u), np.zeros(50))
    np.testing.assert_array_equal(project_capped_simplex(v, u.sum(), u), u)
    x = project_capped_simplex(v, 10.0, u)
    assert (x[u == 0] == 0).all()
    xt = project_capped_simplex(torch.tensor(v, dtype=torch.float32), 10.0)
    assert isinstance(xt, torch.Tensor) and xt.dtype == torch.float64
    # The torch backend (used on accelerators) agrees with the numpy backend, masks included.
    for m in (0.0, 3.5, 10.0, u.sum()):
        x_np = project_capped_simplex(v, m, u)
        x_t = project_capped_simplex(torch.from_numpy(v), m, torch.from_numpy(u), backend="torch")
        np.testing.assert_allclose(x_t.numpy(), x_np, rtol=0, atol=1e-12)
    big = rng.normal(size=10**5)
    np.testing.assert_allclose(
        project_capped_simplex(big, 777.0, backend="torch"), project_capped_simplex(big, 777.0), rtol=0, atol=1e-12
    )
    with pytest.raises(ValueError):
        project_capped_simplex(v, 1.0, backend="jax")
    with pytest.raises(ValueError):
        project_capped_simplex(v, 51.0)
    with pytest.raises(ValueError):
        project_capped_simplex(v, -1.0)
    with pytest.raises(ValueError):
        project_capped_simplex(np.array([0.1, np.nan]), 1.0)


def test_rows_simplex_projection():
    """Spec §9.13: rows sum to 1 within 1e-9, entries in [0, 1], equal to the exact per-row projection."""
    rng = np.random.default_rng(2)
    v = rng.normal(size=(300, 40)) * 10 ** rng.uniform(-3, 1, size=(300, 1))
    x = project_rows_simplex(v)
    assert np.abs(x.sum(axis=1) - 1).max() <= 1e-9
    assert x.min() >= 0 and x.max() <= 1
    for i in range(0, 300, 7):
        np.testing.assert_allclose(x[i], project_capped_simplex_exact(v[i], 1.0), rtol=0, atol=1e-9)
    forbidden = rng.random((300, 40)) < 0.3
    forbidden[:, 0] = False
    xf = project_rows_simplex(v, forbidden)
    assert (xf[forbidden] == 0).all() and np.abs(xf.sum(axis=1) - 1).max() <= 1e-9
    for i in range(0, 300, 11):
        np.testing.assert_allclose(
            xf[i], project_capped_simplex_exact(v[i], 1.0, (~forbidden[i]).astype(float)), rtol=0, atol=1e-9
        )
    xt = project_rows_simplex(torch.from_numpy(v))
    assert isinstance(xt, torch.Tensor)
    np.testing.assert_allclose(xt.numpy(), x, rtol=0, atol=1e-12)
    # The torch backend (used on accelerators) agrees with the numpy backend.
    xtt = project_rows_simplex(torch.from_numpy(v), torch.from_numpy(forbidden), backend="torch")
    np.testing.assert_allclose(xtt.numpy(), xf, rtol=0, atol=1e-12)
    with pytest.raises(ValueError):
        project_rows_simplex(v, np.ones_like(v, dtype=bool))


# ----------------------------------------------------------------------------------------- PGD (§9.12)


def planted_instance(seed: int, s1: int = 20, s2: int = 15, q: int = 8, m_s: int = 30, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    d1, d2 = [2, 3, 4, 2, 3], [3, 2, 5, 2]
    codes1, codes2 = random_codes(rng, s1, d1), random_codes(rng, s2, d2)
    wls = enumerate_workloads(d1, d2, 3)
    sel = [wls[i] for i in rng.choice(len(wls), size=q, replace=False)]
    op = SliceOperator.from_tables(codes1, codes2, np.arange(s1), np.arange(s2), sel, "cpu", dtype)
    x_star = random_start_mn(s1, s2, m_s, rng)
    target = op.forward(torch.from_numpy(x_star)).to(torch.float64).numpy() / m_s
    return rng, op, x_star, target, m_s


def test_pgd_planted_monotone_and_theorem3_bound():
    rng, op, x_star, target, m_s = planted_instance(0)
    assert slice_objective(op, x_star, target, m_s) <= 1e-28  # f* = 0
    x0 = random_start_mn(*op.shape, m_s, rng)
    res = pgd_mn(op, target, m_s, rng=rng, iters=1000, x0=x0)
    f = res.objective
    assert f.shape == (1001,) and res.iterations == 1000
    assert res.lipschitz == pytest.approx(2 * res.sigma_max_sq / m_s**2) and res.eta == pytest.approx(1 / res.lipschitz)
    # eta = 1/L with L >= the true smoothness constant => f non-increasing (float64 rounding slack only).
    assert (np.diff(f) <= 1e-12 * f[0]).all()
    # [J] Thm 3 with f* = 0 and the L actually used.
    bound = (3 * res.lipschitz * np.sum((x0 - x_star) ** 2) + f[0]) / 100
    assert f[100] <= bound
    assert f[1000] < f[100] < f[0]
    x = res.x
    assert x.min() >= 0 and x.max() <= 1 and abs(x.sum() - m_s) <= 1e-9 * m_s
    assert f[-1] == pytest.approx(slice_objective(op, x, target, m_s), rel=1e-12)


def test_pgd_step_size_is_safe_against_explicit_svd():
    _, op, _, target, m_s = planted_instance(1)
    rng = np.random.default_rng(9)
    res = pgd_mn(op, target, m_s, rng=rng, iters=5)
    a_list, b_list = op.a, op.b
    q = sp.vstack(
        [sp.csr_matrix((np.ones(op.s1 * op.s2), (
            (a.numpy()[:, None] * c2 + b.numpy()[None, :]).reshape(-1), np.arange(op.s1 * op.s2))),
            shape=(c1 * c2, op.s1 * op.s2))
         for a, b, c1, c2 in zip(a_list, b_list, op.c1s, op.c2s, strict=True)]
    ).toarray()
    true_l = 2 * np.linalg.svd(q, compute_uv=False)[0] ** 2 / m_s**2
    # Safe (L >= true smoothness constant) and never looser than the analytic bound.
    assert true_l * (1 - 1e-12) <= res.lipschitz <= 2 * op.spectral_bounds()[1] / m_s**2 * (1 + 1e-12)
    # With a converged power iteration the safety factor keeps L within ~2% of the true value.
    assert res.lipschitz <= 1.03 * true_l


def test_pgd_float32_products_forbidden_cells_and_warm_start():
    rng, op, x_star, target, m_s = planted_instance(2, dtype=torch.float32)
    forbidden = np.zeros(op.shape, dtype=bool)
    forbidden[np.arange(10), np.arange(10)] = True
    res = pgd_mn(op, target, m_s, rng=rng, iters=60, forbidden=forbidden)
    f = res.objective
    # float32 products: f is non-increasing up to float32 rounding of the residuals (~1e-6 relative).
    assert (np.diff(f) <= 1e-5 * f[0]).all()
    assert f[-1] < f[0]
    assert (res.x[forbidden] == 0).all() and res.x.min() >= 0 and res.x.max() <= 1
    assert abs(res.x.sum() - m_s) <= 1e-9 * m_s
    warm = pgd_mn(op, target, m_s, rng=rng, iters=3, x0=x_star)
    assert warm.objective[0] <= 1e-10  # warm start at the planted optimum
    with pytest.raises(ValueError):
        pgd_mn(op, target[:-1], m_s, rng=rng, iters=1)
    with pytest.raises(ValueError):
        pgd_mn(op, target, 0, rng=rng, iters=1)


def test_pgd_deterministic_per_seed_and_early_stop():
    _, op, _, target, m_s = planted_instance(3)
    a = pgd_mn(op, target, m_s, rng=np.random.default_rng(4), iters=20)
    b = pgd_mn(op, target, m_s, rng=np.random.default_rng(4), iters=20)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.objective, b.objective)
    # Early stop needs f to plateau: use an unreachable (noisy) target so that f* > 0.
    _, small, _, planted_target, small_m = planted_instance(4, s1=10, s2=8, q=3, m_s=10)
    noisy = planted_target + np.random.default_rng(0).normal(size=planted_target.size) * 0.2
    es = pgd_mn(small, noisy, small_m, rng=np.random.default_rng(4), iters=5000, early_stop=True)
    assert es.stopped_early and es.iterations < 5000 and es.objective.size == es.iterations + 1
    f = es.objective
    assert f[-11] - f[-1] < 1e-6 * f[-11]


def test_pgd_torch_float64_path_matches_numpy_path(monkeypatch):
    """The accelerator code path (float64 step in torch) gives the same iterates as the CPU/numpy path."""
    from relviz.relational.biadjacency import pgd as pgd_module

    _, op, _, target, m_s = planted_instance(7)
    ref = pgd_mn(op, target, m_s, rng=np.random.default_rng(1), iters=30)
    monkeypatch.setattr(pgd_module, "_numpy_float64_side", lambda device: False)
    alt = pgd_mn(op, target, m_s, rng=np.random.default_rng(1), iters=30)
    np.testing.assert_allclose(alt.x, ref.x, rtol=0, atol=1e-9)
    np.testing.assert_allclose(alt.objective, ref.objective, rtol=1e-9, atol=1e-15)


def test_pgd_one_to_many():
    rng = np.random.default_rng(6)
    s1, s2 = 12, 20
    d1, d2 = [2, 3, 2], [3, 2, 4]
    codes1, codes2 = random_codes(rng, s1, d1), random_codes(rng, s2, d2)
    wls = enumerate_workloads(d1, d2, 3)
    sel = [wls[i] for i in rng.choice(len(wls), size=6, replace=False)]
    op = SliceOperator.from_tables(codes1, codes2, np.arange(s1), np.arange(s2), sel, "cpu", torch.float64)
    planted = random_start_otm(s1, s2, rng)
    target = op.forward(planted).numpy() / s1
    forbidden = np.zeros((s1, s2), dtype=bool)
    forbidden[np.arange(s1), np.arange(s1)] = True  # a child may not be its own parent
    res = pgd_otm(op, target, rng=rng, iters=200, forbidden=forbidden)
    assert np.abs(res.x.sum(axis=1) - 1).max() <= 1e-9
    assert res.x.min() >= 0 and res.x.max() <= 1 and (res.x[forbidden] == 0).all()
    assert (np.diff(res.objective) <= 1e-12 * res.objective[0]).all()
    assert res.objective[-1] < res.objective[0]
    assert res.lipschitz == pytest.approx(2 * res.sigma_max_sq / s1**2)
    start = random_start_otm(s1, s2, rng, forbidden)
    assert (start.sum(axis=1) == 1).all() and (start[forbidden] == 0).all()
    assert math.isfinite(res.eta)
