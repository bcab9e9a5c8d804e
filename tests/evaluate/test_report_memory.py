"""The report stays within memory on large public domains (issue 15 item 4; docs/evaluation.md,
"Memory"), and its sparse counts give the dense counts' numbers."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest

import relviz.evaluate._common as common
import relviz.marginals as marginals
from relviz.database import Database
from relviz.evaluate import RelationalReport, associations, column_pair_trends, intertable_trends
from relviz.evaluate.html import render_report
from relviz.marginals import (
    DENSE_CELL_BUDGET,
    cross_marginal_error,
    distribution_l1,
    enumerate_workloads,
    mixed_radix_codes,
    pair_cells,
)
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table

N_PARENTS, N_CHILDREN = 1_500, 6_000
N_CATS, N_DAYS, N_BINS = 4_000, 3_000, 5_000


def wide_db(seed: int) -> Database:
    """Two tables whose attributes have large declared domains: a dense 3-way workload such as
    ``kind × amount × brand`` needs 4,000 · 5,000 · 4,000 = 8·10¹⁰ cells (640 GB as float64)."""
    rng = np.random.default_rng(seed)
    cats = [f"c{i:04d}" for i in range(N_CATS)]
    start = pd.Timestamp("2000-01-01")
    days = pd.Timedelta(days=1) * rng.integers(0, N_DAYS, N_PARENTS)
    parents = pd.DataFrame({"pid": np.arange(N_PARENTS), "brand": rng.choice(cats, N_PARENTS),
                            "opened": start + days, "size": rng.uniform(0, 100, N_PARENTS)})
    children = pd.DataFrame({"cid": np.arange(N_CHILDREN), "pid": rng.integers(0, N_PARENTS, N_CHILDREN),
                             "kind": rng.choice(cats, N_CHILDREN),
                             "amount": np.round(rng.uniform(0, 1000, N_CHILDREN), 1),
                             "day": start + pd.Timedelta(days=1) * rng.integers(0, N_DAYS, N_CHILDREN)})
    end = start + pd.Timedelta(days=N_DAYS - 1)
    schema = Schema((
        Table("parents", ("pid",), (Attribute.categorical("brand", cats),
                                    Attribute.datetime("opened", start, end, bins=N_DAYS, date=True),
                                    Attribute.numeric("size", 0, 100, bins=N_BINS))),
        Table("children", ("cid",), (Attribute.categorical("kind", cats),
                                     Attribute.numeric("amount", 0, 1000, bins=N_BINS),
                                     Attribute.datetime("day", start, end, bins=N_DAYS, date=True))),
    ), (ForeignKey("children", ("pid",), "parents", ("pid",)),),
        privacy_unit=PrivacyUnit("parents", caps={"children.pid->parents": 50}), name="wide")
    return Database(schema, {"parents": parents, "children": children})


def test_the_fixture_is_beyond_any_dense_budget() -> None:
    db = wide_db(0)
    sizes = [[a.size for a in db.schema.table(t).attributes] for t in ("children", "parents")]
    largest = max(w.size for w in enumerate_workloads(*sizes, k=3))
    assert largest > 10**9 > DENSE_CELL_BUDGET


def test_report_on_large_domains_completes_within_bounded_memory() -> None:
    real, syn = wide_db(0), wide_db(1)
    tracemalloc.start()
    try:
        report = RelationalReport().generate(real, syn)
        doc = render_report(real, syn, report=report)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not report.errors
    (err,) = report.cross_table.values()
    assert err.n_workloads == 18 and err.n_sparse == 18 and not err.reason  # 3·3 + 3·3
    assert 0 < err.average <= 2 + 1e-12 and bool(err.per_workload["Sparse"].all())
    assert "counted sparsely" in doc and "figure not drawn" not in doc
    # Bound: one dense 3-way workload here is ≥ 8·10¹⁰ float64 cells (640 GB); the sparse path
    # holds O(rows) arrays — the cached side codes (6 subsets per side × 12,000 links × 8 B ≈ 1 MB),
    # per workload a few arrays of 12,000 int64/float64, dense 2-way tables of at most
    # max(8 · rows, 2¹⁶) cells (≈ 0.6 MB) — plus the plotly figures (1-way bar charts of 4,000 and
    # 5,000 codes: a few MB of JSON each) and the page itself (~5 MB of plotly.js). 256 MB is
    # generous for that and 2,500× below one dense workload.
    print(f"peak traced memory {peak / 2**20:.0f} MB")
    assert peak < 256 * 2**20, f"peak traced memory {peak / 2**20:.0f} MB"


@pytest.fixture()
def force_sparse(monkeypatch):  # noqa: ANN201
    """Every count sparse: a dense budget of 0 cells."""
    monkeypatch.setattr(marginals, "DENSE_CELL_BUDGET", 0)
    monkeypatch.setattr(common, "DENSE_CELL_BUDGET", 0)


def _numbers(real: Database, syn: Database) -> dict[str, np.ndarray]:
    rep = RelationalReport().generate(real, syn)
    out = {"two_way": rep.two_way["TVD"].to_numpy(float),
           "cross": np.concatenate([e.per_workload["Error"].to_numpy(float) for e in rep.cross_table.values()]),
           "pairs": column_pair_trends(real, syn).details[["Score", "SDMetrics Score", "Real Association"]]
           .to_numpy(float),
           "intertable": intertable_trends(real, syn).details[["Score", "Real Association"]].to_numpy(float)}
    for side in ("real", "synthetic"):
        out[f"assoc_{side}"] = getattr(associations(real, syn, table="sales"), side).to_numpy(float)
    out["sparse"] = np.array([e.n_sparse for e in rep.cross_table.values()])
    return out


def test_sparse_path_gives_the_dense_numbers(kit, request) -> None:
    real, syn = kit.random_shop(seed=0), kit.random_shop(seed=1, shift=1.0)
    dense = _numbers(real, syn)
    assert dense["sparse"].sum() == 0  # small domains: everything dense by default
    request.getfixturevalue("force_sparse")
    sparse = _numbers(kit.random_shop(seed=0), kit.random_shop(seed=1, shift=1.0))  # fresh code caches
    assert sparse["sparse"].sum() > 0
    for key in ("two_way", "cross", "pairs", "intertable", "assoc_real", "assoc_synthetic"):
        np.testing.assert_allclose(sparse[key], dense[key], rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=key)


def test_distribution_l1_and_cross_error_paths_agree() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 50, 400), rng.integers(0, 50, 300)
    dense, was_sparse = distribution_l1(a, b, 60)
    assert not was_sparse
    sparse, was_sparse = distribution_l1(a, b, 60, dense_budget=0)
    assert was_sparse and sparse == pytest.approx(dense, rel=1e-12)
    with pytest.raises(ValueError):
        distribution_l1(a[:0], b, 60)
    c1, c2 = rng.integers(0, [3, 4, 5], (80, 3)), rng.integers(0, [6, 2], (30, 2))
    e = (rng.integers(0, 80, 200), rng.integers(0, 30, 200))
    s1, s2 = rng.integers(0, [3, 4, 5], (70, 3)), rng.integers(0, [6, 2], (25, 2))
    f = (rng.integers(0, 70, 150), rng.integers(0, 25, 150))
    d = cross_marginal_error(c1, c2, *e, s1, s2, *f, [3, 4, 5], [6, 2], 3)
    s = cross_marginal_error(c1, c2, *e, s1, s2, *f, [3, 4, 5], [6, 2], 3, dense_budget=0)
    assert not d.sparse.any() and s.sparse.all()
    np.testing.assert_allclose(s.per_workload, d.per_workload, rtol=1e-12)
    # the old all-marginals definition, by hand
    wl = d.workloads[-1]
    cells = lambda c1_, c2_, e_: (mixed_radix_codes(c1_[e_[0]], wl.S1, wl.dims1) * wl.C2  # noqa: E731
                                  + mixed_radix_codes(c2_[e_[1]], wl.S2, wl.dims2))
    pr = np.bincount(cells(c1, c2, e), minlength=wl.size) / 200
    ps = np.bincount(cells(s1, s2, f), minlength=wl.size) / 150
    assert d.per_workload[-1] == pytest.approx(np.abs(pr - ps).sum(), rel=1e-12)


def test_pair_cells_never_overflow() -> None:
    big = 2**40  # 2⁸⁰ cells: codes are re-coded over the occurring values first
    a, b = np.array([0, big - 1, 5], dtype=np.int64), np.array([big - 1, 0, 7], dtype=np.int64)
    ca, cb, n = pair_cells(a, b, b, a, big, big)
    assert n == 16 and ca.max() < n and cb.max() < n  # 4 occurring values per factor
    assert distribution_l1(ca, cb, n)[0] == pytest.approx(2 / 3)  # two of three cells in common


def test_cramers_v_sparse_matches_scipy() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 30, 2_000), (rng.integers(0, 40, 2_000) + rng.integers(0, 30, 2_000)) % 40
    dense = common.cramers_v(a, b, 30, 40)
    assert dense == pytest.approx(common.cramers_v_table(common.contingency_counts(a, b, 30, 40)), rel=1e-15)
    assert common.cramers_v(a, b, 30, 40, dense_budget=0) == pytest.approx(dense, rel=1e-12)
    assert math.isnan(common.cramers_v(np.zeros(5, np.int64), b[:5], 1, 40, dense_budget=0))
