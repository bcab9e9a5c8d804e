"""Tests of relviz.marginals (docs/methods/biadjacency.md §2, §7.1): the order of the cross-table workloads,
cell codes, the marginals of an edge list against the explicit query matrix of Lemma 1, and the error metric."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from relviz.marginals import (
    all_marginals,
    cross_marginal_error,
    enumerate_workloads,
    marginal_from_edges,
    mixed_radix_codes,
    workload_codes,
)

MOVIELENS_MOVIE_DOMAINS = [2] * 18  # 18 binary genre indicators
MOVIELENS_USER_DOMAINS = [2, 7, 21]  # gender, age, occupation
IPUMS_DOMAINS = [2, 6, 3, 2, 2, 2, 2, 2, 2]  # SEX, MARST, MARRINYR, six race indicators


def random_codes(rng: np.random.Generator, n: int, domains: list[int]) -> np.ndarray:
    return np.stack([rng.integers(0, d, n) for d in domains], axis=1)


def random_edges(rng: np.random.Generator, n1: int, n2: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    flat = rng.choice(n1 * n2, size=m, replace=False)
    return flat // n2, flat % n2


def explicit_q(codes1, codes2, workloads, rows=None, cols=None) -> sp.csr_matrix:
    """Stacked Q built straight from the definition q = vec(1_{S1,y1} 1_{S2,y2}^T), row-major vec
    (Alimohammadi et al. Lemma 1; docs/methods/biadjacency.md §2.2)."""
    t1 = codes1 if rows is None else codes1[rows]
    t2 = codes2 if cols is None else codes2[cols]
    n1, n2 = len(t1), len(t2)
    blocks = []
    for wl in workloads:
        data, ri, ci = [], [], []
        for c, (y1, y2) in enumerate(
            itertools.product(itertools.product(*map(range, wl.dims1)), itertools.product(*map(range, wl.dims2)))
        ):
            ind1 = np.all(t1[:, list(wl.S1)] == np.array(y1), axis=1)
            ind2 = np.all(t2[:, list(wl.S2)] == np.array(y2), axis=1)
            q = np.outer(ind1, ind2).reshape(-1)
            nz = np.flatnonzero(q)
            ri.extend([c] * nz.size)
            ci.extend(nz.tolist())
            data.extend([1.0] * nz.size)
        blocks.append(sp.csr_matrix((data, (ri, ci)), shape=(wl.size, n1 * n2)))
    return sp.vstack(blocks).tocsr()


# ---------------------------------------------------------------------------------------------- workloads (§9.10)


def test_workload_count_and_order_movielens():
    wls = enumerate_workloads(MOVIELENS_MOVIE_DOMAINS, MOVIELENS_USER_DOMAINS, k=3)
    assert len(wls) == 513  # 18*C(3,2) + C(18,2)*3
    assert (wls[0].S1, wls[0].S2) == ((0,), (0, 1))
    assert (wls[53].S1, wls[53].S2) == ((17,), (1, 2))  # last workload with |S1| = 1
    assert (wls[54].S1, wls[54].S2) == ((0, 1), (0,))
    assert (wls[-1].S1, wls[-1].S2) == ((16, 17), (2,))
    assert all(len(w.S1) + len(w.S2) == 3 and w.S1 and w.S2 for w in wls)
    assert wls[0].C1 == 2 and wls[0].C2 == 14 and wls[0].size == 28


def test_workload_count_ipums_self_relation():
    assert len(enumerate_workloads(IPUMS_DOMAINS, IPUMS_DOMAINS, k=3)) == 648  # 9*36 + 36*9
    assert len(enumerate_workloads([2, 2], [3], k=2)) == 2
    with pytest.raises(ValueError):
        enumerate_workloads([2], [2], k=1)


@pytest.mark.parametrize("schema", ["movielens", "ipums"])
def test_real_marginals_sum_to_one(schema):
    rng = np.random.default_rng(10)
    if schema == "movielens":
        d1, d2 = MOVIELENS_MOVIE_DOMAINS, MOVIELENS_USER_DOMAINS
        codes1, codes2 = random_codes(rng, 300, d1), random_codes(rng, 400, d2)
    else:
        d1 = d2 = IPUMS_DOMAINS
        codes1 = codes2 = random_codes(rng, 500, d1)  # same table on both sides
    e1, e2 = random_edges(rng, len(codes1), len(codes2), 2000)
    wls = enumerate_workloads(d1, d2, k=3)
    margs = all_marginals(codes1, codes2, e1, e2, wls)
    assert len(margs) == len(wls)
    for wl, p in zip(wls, margs, strict=True):
        assert p.shape == (wl.C1 * wl.C2,)
        assert abs(p.sum() - 1.0) <= 1e-12
        assert (p >= 0).all()
    for i in (0, 100, len(wls) - 1):
        np.testing.assert_array_equal(margs[i], marginal_from_edges(codes1, codes2, e1, e2, wls[i]))


def test_cell_codes_are_c_order_ravel():
    rng = np.random.default_rng(1)
    dims = [3, 4, 5, 2]
    codes = random_codes(rng, 50, dims)
    for cols in [(0,), (1, 3), (0, 2, 3)]:
        expect = np.ravel_multi_index(tuple(codes[:, c] for c in cols), [dims[c] for c in cols])
        np.testing.assert_array_equal(mixed_radix_codes(codes, cols, [dims[c] for c in cols]), expect)
    wl = enumerate_workloads(dims, dims, 3)[7]
    a, b = workload_codes(codes, codes, wl)
    p = marginal_from_edges(codes, codes, np.arange(10), np.arange(10, 20), wl, normalise_by=1)
    cells = a[np.arange(10)] * wl.C2 + b[np.arange(10, 20)]
    np.testing.assert_array_equal(p, np.bincount(cells, minlength=wl.size))
    bad = codes.copy()
    bad[0, 0] = 3
    with pytest.raises(ValueError):
        mixed_radix_codes(bad, (0,), (3,))


# ------------------------------------------------------------------------------------------------ Lemma 1


def small_instance(seed: int, n1: int = 9, n2: int = 7):
    rng = np.random.default_rng(seed)
    d1, d2 = [2, 3, 2], [3, 2]
    codes1, codes2 = random_codes(rng, n1, d1), random_codes(rng, n2, d2)
    return rng, d1, d2, codes1, codes2


@pytest.mark.parametrize("seed", range(5))
def test_lemma1_edge_marginals_equal_explicit_q(seed):
    rng, d1, d2, codes1, codes2 = small_instance(seed)
    wls = enumerate_workloads(d1, d2, 3)
    e1, e2 = random_edges(rng, len(codes1), len(codes2), int(rng.integers(1, 40)))
    b = np.zeros(len(codes1) * len(codes2))
    b[e1 * len(codes2) + e2] = 1.0
    q = explicit_q(codes1, codes2, wls)
    np.testing.assert_allclose(
        np.concatenate(all_marginals(codes1, codes2, e1, e2, wls)), q @ b / len(e1), rtol=0, atol=1e-12
    )


# -------------------------------------------------------------------------------------- metric (§9.25)


def test_cross_marginal_error_metric():
    rng = np.random.default_rng(3)
    d1, d2 = [2, 3, 2], [3, 2]
    codes1, codes2 = random_codes(rng, 40, d1), random_codes(rng, 30, d2)
    e1, e2 = random_edges(rng, 40, 30, 100)
    self_rep = cross_marginal_error(codes1, codes2, e1, e2, codes1, codes2, e1, e2, d1, d2, k=3)
    assert len(self_rep.per_workload) == len(enumerate_workloads(d1, d2, 3)) == len(self_rep.workloads)
    assert self_rep.average == 0.0 and self_rep.maximum == 0.0
    f1, f2 = random_edges(rng, 40, 30, 80)
    rep = cross_marginal_error(codes1, codes2, e1, e2, codes1, codes2, f1, f2, d1, d2, k=3)
    assert 0 < rep.average <= rep.maximum <= 2.0
    assert rep.average_pct == pytest.approx(100 * rep.average) and rep.maximum_pct == pytest.approx(100 * rep.maximum)
    # Hand-computed 2-way case: one binary attribute per side.
    c1 = np.array([[0], [1]])
    c2 = np.array([[0], [1]])
    real = cross_marginal_error(c1, c2, [0, 1], [0, 1], c1, c2, [0, 0], [0, 1], [2], [2], k=2)
    # real cells (00, 11) each 1/2; synthetic (00, 01) each 1/2 -> L1 = 1/2 + 1/2 = 1.
    assert real.per_workload.tolist() == [1.0] and real.average_pct == 100.0
