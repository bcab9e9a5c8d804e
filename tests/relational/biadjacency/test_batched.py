"""Batched M:N slices (docs/methods/biadjacency.md §8): the batched operator equals per-slice operators, and a batched
run keeps every invariant and still improves on a random relation."""

from __future__ import annotations

import numpy as np
import torch

from relviz.marginals import cross_marginal_error, enumerate_workloads
from relviz.relational.biadjacency.algorithm import Settings
from relviz.relational.biadjacency.batched import BatchedSliceOperator, choose_batch_mn
from relviz.relational.biadjacency.workloads import SliceOperator
from tests.relational.biadjacency.oracles import check_edge_list
from tests.relational.biadjacency.test_algorithm import D1, D2, _run_mn, planted


def test_batched_products_equal_single_slice_products() -> None:
    rng = np.random.default_rng(0)
    x1, x2, e1, e2 = planted()
    wls = enumerate_workloads(D1, D2, 3)[:5]
    batch = choose_batch_mn(e1, e2, len(x1), len(x2), 50, 40, 3, rng)
    op = BatchedSliceOperator(x1, x2, batch.rows, batch.cols, wls, "cpu", torch.float64)
    X = torch.as_tensor(rng.random((3, 50, 40)))
    R = torch.as_tensor(rng.random((3, op.n_queries)))
    fwd, tr = op.forward(X), op.transpose(R)
    for s in range(3):
        single = SliceOperator.from_tables(x1, x2, batch.rows[s], batch.cols[s], wls, "cpu", torch.float64)
        assert torch.allclose(fwd[s], single.forward(X[s]), atol=1e-12)
        assert torch.allclose(tr[s], single.transpose(R[s]), atol=1e-12)
    assert len(set(batch.rows.ravel())) == batch.rows.size  # disjoint rows and columns
    assert len(set(batch.cols.ravel())) == batch.cols.size


def test_batched_run_keeps_invariants_and_beats_random() -> None:
    x1, x2, e1, e2 = planted()
    res, acc, _ = _run_mn(x1, x2, e1, e2, 1e8, Settings(n_iters=6, slice_cells=20_000, pgd_iters=60,
                                                         slices_per_iter=4, batch_slices=4, device="cpu"))
    check_edge_list(*res.edges, len(x1), len(x2), m_syn=len(e1))
    assert any("batch" in sl for it in res.history for sl in it["slices"])
    rng = np.random.default_rng(9)
    flat = rng.choice(len(x1) * len(x2), size=len(e1), replace=False)
    base = cross_marginal_error(x1, x2, e1, e2, x1, x2, flat // len(x2), flat % len(x2), D1, D2)
    got = cross_marginal_error(x1, x2, e1, e2, x1, x2, *res.edges, D1, D2)
    assert got.average < base.average
