"""Tests (docs/methods/biadjacency.md §3.6, §3.7, §9) for slicing, reinsertion, initial relations and degree clipping."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import torch

from relviz.marginals import all_marginals, enumerate_workloads
from relviz.privacy.ranking import rank_within_groups
from relviz.relational.biadjacency.clipping import clip_degrees, degree_clip_mask
from relviz.relational.biadjacency.pgd import pgd_mn, pgd_otm
from relviz.relational.biadjacency.slicing import (
    choose_slice_mn,
    choose_slice_otm,
    initial_edges_mn,
    initial_parents_otm,
    m_syn_rule,
    reinsert,
    reinsert_otm,
    slice_shape_mn,
    slice_shape_otm,
)
from relviz.relational.biadjacency.ubs import categorical_rounding, ubs
from relviz.relational.biadjacency.workloads import SliceOperator
from tests.relational.biadjacency.oracles import check_edge_list

# -------------------------------------------------------------------------------------------- sizes (§3.6, §3.7)


def test_m_syn_rule_and_slice_shapes():
    assert m_syn_rule(10075, 3883, 6040, 3880, 6040) == 10071  # MovieLens, docs/methods/biadjacency.md §3.6
    assert m_syn_rule(500, 100, 100, 100, 100) == 500  # perfect square: no float round-down
    assert m_syn_rule(999, 40, 90, 20, 20) == 333  # 999 * sqrt(400 / 3600) = 333 exactly (isqrt of a square)
    assert m_syn_rule(1000, 40, 90, 20, 20) == 333  # floor(333.33)
    assert m_syn_rule(10, 5, 5, 7, 9, relation="otm") == 7
    with pytest.raises(ValueError):
        m_syn_rule(100, 10, 10, 10, 10)  # m_syn must be < n1s * n2s
    assert slice_shape_mn(3880, 6040, 10**6) == (801, 1247)
    assert slice_shape_mn(10_000, 10_000, 10**6) == (1000, 1000)
    assert slice_shape_mn(50, 40, 10**6) == (50, 40)
    assert slice_shape_otm(10**5, 10**5, 10**6, 2.0) == (707, 1414)
    with pytest.raises(ValueError):
        slice_shape_otm(10, 10, 100, 0.5)


# -------------------------------------------------------------------------------------- initial relation (§3.6)


def test_initial_edges_distinct_uniform_and_masked():
    rng = np.random.default_rng(0)
    e1, e2 = initial_edges_mn(50, 70, 900, rng)
    check_edge_list(e1, e2, 50, 70, m_syn=900)
    d1, d2 = initial_edges_mn(40, 40, 700, rng, mask_diagonal=True)
    check_edge_list(d1, d2, 40, 40, m_syn=700, mask_diagonal=True)
    # Uniformity over allowed cells: 4 x 4 self-relation, 5 of the 12 off-diagonal cells per draw;
    # each cell is included with probability 5/12 (binomial bound, 4.5 sd).
    n = 20_000
    counts = np.zeros((4, 4))
    for _ in range(n):
        a, b = initial_edges_mn(4, 4, 5, rng, mask_diagonal=True)
        counts[a, b] += 1
    assert (np.diag(counts) == 0).all()
    off = counts[~np.eye(4, dtype=bool)] / n
    p = 5 / 12
    assert (np.abs(off - p) <= 4.5 * np.sqrt(p * (1 - p) / n)).all()
    with pytest.raises(ValueError):
        initial_edges_mn(3, 3, 7, rng, mask_diagonal=True)


def test_initial_edges_memory_is_o_m():
    """10^10 cells, 10^4 edges: no n1s*n2s allocation (peak traced memory far below 80 GB; a few MB)."""
    tracemalloc.start()
    e1, e2 = initial_edges_mn(100_000, 100_000, 10_000, np.random.default_rng(1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert e1.size == 10_000 and np.unique(e1 * 100_000 + e2).size == 10_000
    assert peak < 50 * 2**20


def test_initial_parents():
    rng = np.random.default_rng(2)
    parent = initial_parents_otm(500, 30, rng)
    assert parent.shape == (500,) and parent.min() >= 0 and parent.max() < 30
    own = initial_parents_otm(200, 200, rng, mask_diagonal=True)
    assert (own != np.arange(200)).all() and own.max() < 200


# ------------------------------------------------------------------------------------ slice selection (§3.7)


def test_choose_slice_mn_guaranteed_edges():
    rng = np.random.default_rng(3)
    n1s, n2s = 300, 400
    e1, e2 = initial_edges_mn(n1s, n2s, 600, rng)
    sl = choose_slice_mn(e1, e2, n1s, n2s, 50, 60, rng, guaranteed_frac=0.2)
    assert sl.rows.size == 50 and np.unique(sl.rows).size == 50
    assert sl.cols.size == 60 and np.unique(sl.cols).size == 60
    assert sl.m_s >= 10  # the n_g = floor(0.2 * 50) sampled edges lie inside the slice
    inside = np.isin(e1, sl.rows) & np.isin(e2, sl.cols)
    np.testing.assert_array_equal(inside, sl.inside)
    np.testing.assert_array_equal(sl.current_matrix().sum(), sl.m_s)
    rows_local = {r: i for i, r in enumerate(sl.rows)}
    cols_local = {c: j for j, c in enumerate(sl.cols)}
    expect = sorted(rows_local[a] * 60 + cols_local[b] for a, b in zip(e1[inside], e2[inside], strict=True))
    assert sorted(sl.current_local.tolist()) == expect
    with pytest.raises(ValueError):
        choose_slice_mn(e1, e2, n1s, n2s, 50, 60, rng, guaranteed_frac=1.0)


def _mini_tables(rng, n1, n2):
    d1, d2 = [2, 3, 2], [3, 2, 4]
    c1 = np.stack([rng.integers(0, d, n1) for d in d1], 1)
    c2 = np.stack([rng.integers(0, d, n2) for d in d2], 1)
    return d1, d2, c1, c2


def run_mn_pipeline(seed: int, self_relation: bool, n_updates: int = 6):
    """Slice updates as in docs/methods/biadjacency.md §3.10 (PGD on noisy targets, UBS, reinsertion); invariants after each."""
    rng = np.random.default_rng(seed)
    n1 = 120
    n2 = n1 if self_relation else 90
    d1, d2, c1, c2 = _mini_tables(rng, n1, n2)
    if self_relation:
        d2, c2 = d1, c1
    m_syn = 400
    wls = enumerate_workloads(d1, d2, 3)
    real_e1, real_e2 = initial_edges_mn(n1, n2, m_syn, rng, mask_diagonal=self_relation)
    targets = all_marginals(c1, c2, real_e1, real_e2, wls)
    e1, e2 = initial_edges_mn(n1, n2, m_syn, rng, mask_diagonal=self_relation)
    for _ in range(n_updates):
        sl = choose_slice_mn(e1, e2, n1, n2, 40, 30, rng, guaranteed_frac=0.2, mask_diagonal=self_relation)
        if sl.m_s == 0:
            continue
        chosen = rng.choice(len(wls), size=4, replace=False)
        op = SliceOperator.from_tables(c1, c2, sl.rows, sl.cols, [wls[i] for i in chosen], "cpu")
        target = np.concatenate([targets[i] + rng.normal(0, 0.01, targets[i].size) for i in chosen])
        forbidden = sl.forbidden_mask()
        res = pgd_mn(op, target, sl.m_s, rng=rng, iters=15, forbidden=forbidden)
        upper = None if forbidden is None else (~forbidden).astype(float)
        picked = ubs(res.x, sl.m_s, rng, upper=upper)
        e1, e2 = reinsert(e1, e2, sl, picked)
        check_edge_list(e1, e2, n1, n2, m_syn=m_syn, mask_diagonal=self_relation)  # §9.20
    return e1, e2


@pytest.mark.parametrize("self_relation", [False, True])
def test_mn_slice_updates_keep_invariants(self_relation):
    e1, e2 = run_mn_pipeline(0, self_relation)
    assert e1.size == 400


def test_determinism_per_seed():
    """§9.22: same seed => identical edge list (same device and dtype); a different seed differs."""
    a1, a2 = run_mn_pipeline(5, False, 3)
    b1, b2 = run_mn_pipeline(5, False, 3)
    c1, c2 = run_mn_pipeline(6, False, 3)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not (np.array_equal(a1, c1) and np.array_equal(a2, c2))


def test_reinsert_rejects_bad_picks():
    rng = np.random.default_rng(4)
    e1, e2 = initial_edges_mn(30, 30, 100, rng, mask_diagonal=True)
    sl = choose_slice_mn(e1, e2, 30, 30, 12, 12, rng, mask_diagonal=True)
    assert sl.m_s >= 2
    good = np.setdiff1d(np.arange(144), sl.forbidden_local)[: sl.m_s]
    n1, n2 = reinsert(e1, e2, sl, good)
    check_edge_list(n1, n2, 30, 30, m_syn=100, mask_diagonal=True)
    dup = good.copy()
    dup[1] = dup[0]
    with pytest.raises(ValueError):
        reinsert(e1, e2, sl, dup)
    with pytest.raises(ValueError):
        reinsert(e1, e2, sl, good[:-1])
    if sl.forbidden_local.size:
        masked = good.copy()
        masked[0] = sl.forbidden_local[0]
        if np.unique(masked).size == masked.size:
            with pytest.raises(ValueError):
                reinsert(e1, e2, sl, masked)
    with pytest.raises(ValueError):
        reinsert(e1[:-1], e2[:-1], sl, good)
    with pytest.raises(AssertionError):
        check_edge_list(np.array([0, 0]), np.array([1, 1]), 3, 3)


@pytest.mark.parametrize("self_relation", [False, True])
def test_one_to_many_updates_keep_one_parent(self_relation):
    """§9.21: after every 1:N update each synthetic child has exactly one parent (and never itself)."""
    rng = np.random.default_rng(7)
    n1 = 150
    n2 = n1 if self_relation else 60
    d1, d2, c1, c2 = _mini_tables(rng, n1, n2)
    if self_relation:
        d2, c2 = d1, c1
    wls = enumerate_workloads(d1, d2, 3)
    real_parent = initial_parents_otm(n1, n2, rng, mask_diagonal=self_relation)
    targets = all_marginals(c1, c2, np.arange(n1), real_parent, wls)
    parent = initial_parents_otm(n1, n2, rng, mask_diagonal=self_relation)
    s1, s2 = 20, 40
    for _ in range(5):
        sl = choose_slice_otm(parent, n2, s1, s2, rng, mask_diagonal=self_relation)
        assert sl.m_s == s1 and np.isin(parent[sl.rows], sl.cols).all()
        assert sl.current_matrix().sum(axis=1).tolist() == [1.0] * s1
        chosen = rng.choice(len(wls), size=3, replace=False)
        op = SliceOperator.from_tables(c1, c2, sl.rows, sl.cols, [wls[i] for i in chosen], "cpu", torch.float64)
        target = np.concatenate([targets[i] for i in chosen])
        forbidden = sl.forbidden_mask()
        res = pgd_otm(op, target, rng=rng, iters=10, forbidden=forbidden)
        choice = categorical_rounding(res.x, rng, forbidden)
        parent = reinsert_otm(parent, sl, choice)
        assert parent.shape == (n1,) and parent.min() >= 0 and parent.max() < n2
        if self_relation:
            assert (parent != np.arange(n1)).all()
    with pytest.raises(ValueError):
        reinsert_otm(parent, sl, np.zeros(s1 - 1, dtype=int))


# -------------------------------------------------------------------------------------------- clipping (§9.24)


def naive_clip(e1, e2, d1, d2):
    deg: dict = {}
    keep1 = []
    for a, b in zip(e1, e2, strict=True):
        if deg.get(a, 0) < d1:
            keep1.append((a, b))
        deg[a] = deg.get(a, 0) + 1
    deg = {}
    out = []
    for a, b in keep1:
        if deg.get(b, 0) < d2:
            out.append((a, b))
        deg[b] = deg.get(b, 0) + 1
    return out


def test_clip_degrees_bound_idempotent_and_reference():
    rng = np.random.default_rng(8)
    # Heavy-tailed degrees: a few ids carry many edges.
    n = 5000
    e1 = np.minimum(rng.zipf(1.6, n) - 1, 299)
    e2 = np.minimum(rng.zipf(1.4, n) - 1, 499)
    flat = np.unique(e1 * 500 + e2, return_index=True)[1]
    e1, e2 = e1[np.sort(flat)], e2[np.sort(flat)]  # link table without duplicate pairs, stored order kept
    c1, c2 = clip_degrees(e1, e2, 10)
    assert np.bincount(c1).max() <= 10 and np.bincount(c2).max() <= 10
    assert c1.size < e1.size  # clipping dropped something on this input
    r1, r2 = clip_degrees(c1, c2, 10)
    np.testing.assert_array_equal(r1, c1)
    np.testing.assert_array_equal(r2, c2)
    assert list(zip(c1.tolist(), c2.tolist(), strict=True)) == naive_clip(e1.tolist(), e2.tolist(), 10, 10)
    a1, a2 = clip_degrees(e1, e2, (1, 4))
    assert np.bincount(a1).max() <= 1 and np.bincount(a2).max() <= 4
    s1, s2 = clip_degrees(e1, e2, 3, order="sorted")
    assert np.bincount(s1).max() <= 3 and np.bincount(s2).max() <= 3
    p1, _ = clip_degrees(e1, e2, 3, seed=0)
    q1, _ = clip_degrees(e1, e2, 3, seed=0)
    np.testing.assert_array_equal(p1, q1)


def test_clip_order_semantics_hand_example():
    # id_1 = 0 has three edges; with d_max = 2 pass 1 keeps the first two in stored order, then pass 2 caps
    # column 5 (edges from rows 0, 1, 2 survive pass 1) to its first two.
    e1 = np.array([0, 0, 0, 1, 2])
    e2 = np.array([5, 6, 7, 5, 5])
    mask = degree_clip_mask(e1, e2, 2)
    assert mask.tolist() == [True, True, False, True, False]
    np.testing.assert_array_equal(rank_within_groups(np.array([3, 1, 3, 3, 1])), [0, 0, 1, 2, 1])
    with pytest.raises(ValueError):
        clip_degrees(e1, e2[:-1], 2)
