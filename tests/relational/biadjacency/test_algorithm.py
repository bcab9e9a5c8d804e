"""The iterative bi-adjacency algorithm: accounting, schedule, invariants, determinism, and the
noiseless end-to-end improvement over a random relation (docs/methods/biadjacency.md §9)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.marginals import all_marginals, cross_marginal_error, enumerate_workloads
from relviz.plan import Plan
from relviz.privacy.accountant import Accountant, epsilon_from_rho, rho_closed_form
from relviz.privacy.budget import Budget
from relviz.privacy.sensitivity import multipliers
from relviz.progress import silent
from relviz.relational.biadjacency.algorithm import (
    Settings,
    calibrate,
    learn_relation,
    schedule,
    useful_workloads,
)
from relviz.relational.biadjacency.linker import sensitivity_constant
from relviz.schema import Attribute, ForeignKey, PrivacyUnit, Schema, Table
from relviz.synthesizer import RelationalSynthesizer
from tests.conftest import tiny_frames, tiny_schema
from tests.relational.biadjacency.oracles import check_edge_list

# -- §9.2 calibration (closed-form ρ at ε_rel = 2, δ = 1e-5) ---------------------------------------


@pytest.mark.parametrize("K,eps0,beta,sigma", [(3, 0.0596454, 26.8743, 0.0263117),
                                               (15, 0.0266743, 12.0185, 0.0588346)])
def test_calibration_golden_values(K: int, eps0: float, beta: float, sigma: float) -> None:
    c = calibrate(rho_closed_form(2.0, 1e-5), K, 15, 0.2, 10075, 10)
    assert c.epsilon0 == pytest.approx(eps0, rel=1e-5)
    assert c.beta_em == pytest.approx(beta, rel=1e-5)
    assert c.sigma == pytest.approx(sigma, rel=1e-5)
    # EM with ε_em = 2√α·ε0 costs ε_em²/8 = α·ε0²/2; the GM call (1−α)·ε0²/2 (§3.2)
    assert float(c.rho_em) == pytest.approx(0.2 * c.epsilon0**2 / 2, rel=1e-12)
    assert float(c.rho_gm) == pytest.approx(0.8 * c.epsilon0**2 / 2, rel=1e-12)


# -- a planted-correlation toy relation ------------------------------------------------------------

D1, D2 = [3, 4, 2], [3, 4, 2]


def planted(n1: int = 600, n2: int = 400, d_max: int = 5, seed: int = 0):
    """Rows relate when attribute 0 matches (probability 0.9), degrees ≤ d_max on both sides."""
    rng = np.random.default_rng(seed)
    x1 = np.stack([rng.integers(0, d, n1) for d in D1], 1)
    x2 = np.stack([rng.integers(0, d, n2) for d in D2], 1)
    e1, e2 = [], []
    for i in range(n1):
        match = np.flatnonzero(x2[:, 0] == x1[i, 0])
        pool = match if rng.random() < 0.9 else np.arange(n2)
        k = rng.integers(1, d_max + 1)
        js = rng.choice(pool, size=min(k, pool.size), replace=False)
        e1 += [i] * len(js)
        e2 += list(js)
    e1, e2 = np.array(e1), np.array(e2)
    deg2 = pd.Series(e2).groupby(e2).cumcount().to_numpy()  # clip the column side to d_max
    keep = deg2 < d_max
    return x1, x2, e1[keep], e2[keep]


def _run_mn(x1, x2, e1, e2, rho, settings, seed=0, acc=None):  # noqa: ANN001, ANN202
    m = len(e1)
    wls_all = enumerate_workloads(D1, D2, settings.k)
    acc = acc or Accountant(rho, delta=1e-5)
    budget = Budget(acc, "rel", Fraction(rho), np.random.default_rng(seed))

    def real(wls):  # noqa: ANN001, ANN202
        return all_marginals(x1, x2, e1, e2, wls, normalise_by=float(m))

    res = learn_relation(kind="mn", syn1=x1, syn2=x2, dims1=D1, dims2=D2, real_marginals=real, m=m, d=5,
                         m_syn=m, budget=budget, settings=settings, rng=np.random.default_rng(seed),
                         progress=silent())
    return res, acc, wls_all


SMALL = Settings(n_iters=6, slice_cells=60_000, pgd_iters=60, slices_per_iter=3, device="cpu")


def test_ledger_split_and_total_are_exact() -> None:
    x1, x2, e1, e2 = planted()
    rho = rho_closed_form(1.0, 1e-5)
    res, acc, wls = _run_mn(x1, x2, e1, e2, rho, SMALL)
    K, T = schedule(len(wls), SMALL)
    _, K, T = useful_workloads(wls, Fraction(rho), K, T, SMALL, float(len(e1)), 5)  # the λ gate
    assert T >= 1
    em = sum((e.rho for e in acc.ledger if e.mechanism == "exponential"), Fraction(0))
    gm = sum((e.rho for e in acc.ledger if e.mechanism == "gaussian"), Fraction(0))
    alpha = Fraction("0.2")
    assert em == Fraction(rho) * alpha and gm == Fraction(rho) * (1 - alpha)  # K·T·α·ε0²/2, …
    assert acc.spent() == Fraction(rho)
    assert len(acc.ledger) == 2 * K * T and len(res.measurements.workloads) == K * T
    # converting the spent ρ back gives ε_rel (closed form, §9.3)
    assert epsilon_from_rho(float(acc.spent()), 1e-5, "closed_form") == pytest.approx(1.0, abs=1e-12)


def test_schedule_clips_and_t0_spends_nothing() -> None:
    s = Settings(n_iters=15, workloads_per_iter=3)
    assert schedule(18, s) == (3, 6) and schedule(2, s) == (2, 1) and schedule(0, s) == (0, 0)
    x1, x2, e1, e2 = planted()
    res, acc, _ = _run_mn(x1, x2, e1, e2, 0.5, Settings(n_iters=0, device="cpu"))
    assert acc.ledger == () and res.measurements.workloads == []


def test_invariants_and_determinism() -> None:
    x1, x2, e1, e2 = planted()
    a, _, _ = _run_mn(x1, x2, e1, e2, 0.5, SMALL, seed=3)
    b, _, _ = _run_mn(x1, x2, e1, e2, 0.5, SMALL, seed=3)
    check_edge_list(*a.edges, len(x1), len(x2), m_syn=len(e1))  # §9.20
    assert np.array_equal(a.edges[0], b.edges[0]) and np.array_equal(a.edges[1], b.edges[1])  # §9.22
    c, _, _ = _run_mn(x1, x2, e1, e2, 0.5, SMALL, seed=4)
    assert not (np.array_equal(a.edges[0], c.edges[0]) and np.array_equal(a.edges[1], c.edges[1]))


def test_noiseless_end_to_end_beats_random_relation() -> None:
    """§9.23: synthetic tables = real tables, ε_rel huge: error below half of the T = 0 baseline."""
    x1, x2, e1, e2 = planted()
    res, _, _ = _run_mn(x1, x2, e1, e2, 1e8, Settings(n_iters=15, slice_cells=60_000, pgd_iters=100,
                                                       slices_per_iter=3, device="cpu"))
    rng = np.random.default_rng(9)
    flat = rng.choice(len(x1) * len(x2), size=len(e1), replace=False)
    base = cross_marginal_error(x1, x2, e1, e2, x1, x2, flat // len(x2), flat % len(x2), D1, D2)
    got = cross_marginal_error(x1, x2, e1, e2, x1, x2, *res.edges, D1, D2)
    assert got.average < 0.5 * base.average, (got.average_pct, base.average_pct)


def test_one_to_many_every_child_has_one_parent() -> None:
    x1, x2, e1, e2 = planted()
    parent = np.full(len(x1), -1)
    parent[e1] = e2  # one parent per child (the last edge wins)
    keep = parent >= 0
    c1, p = x1[keep], parent[keep]
    acc = Accountant(1e6, delta=1e-5)
    real = lambda wls: all_marginals(c1, x2, np.arange(len(c1)), p, wls, normalise_by=float(len(c1)))  # noqa: E731
    res = learn_relation(kind="otm", syn1=c1, syn2=x2, dims1=D1, dims2=D2, real_marginals=real,
                         m=len(c1), d=5, m_syn=len(c1), budget=Budget(acc, "r", Fraction(10**6),
                         np.random.default_rng(0)),
                         settings=Settings(n_iters=5, slice_cells=40_000, device="cpu"),
                         rng=np.random.default_rng(0), progress=silent())
    assert res.parent.shape == (len(c1),) and res.parent.min() >= 0 and res.parent.max() < len(x2)  # §9.21
    rand = np.random.default_rng(1).integers(0, len(x2), len(c1))
    idx = np.arange(len(c1))
    base = cross_marginal_error(c1, x2, idx, p, c1, x2, idx, rand, D1, D2)
    got = cross_marginal_error(c1, x2, idx, p, c1, x2, idx, res.parent, D1, D2)
    assert got.average < base.average


def test_self_referential_sensitivity_constant() -> None:
    """A row that is both child and parent: under the row neighbour (one row and every
    relationship attached to it) it re-points its own link, sends its τ children away and takes τ
    others: d = 2τ + 1 links."""
    people = Table("people", ("pid",), (Attribute.categorical("a", [0, 1, 2]),
                                        Attribute.categorical("b", [0, 1])))
    fk = ForeignKey("people", ("mother",), "people", ("pid",), nullable=True)
    s = Schema((people,), (fk,), PrivacyUnit(None, {fk.name: 4}))
    d = sensitivity_constant(s, multipliers(s), fk)
    assert d == 2 * 4 + 1
    # empirical worst case: the row moves, its 4 children leave, 4 other rows become its children;
    # TV moves ≤ d/m
    rng = np.random.default_rng(0)
    n = 200
    codes = np.stack([rng.integers(0, 3, n), rng.integers(0, 2, n)], 1)
    mother = rng.integers(0, n, n)
    mother[:4] = 10  # row 10 is the mother of rows 0–3 (a parent) and has a mother itself (a child)
    mother[4:] = np.where(mother[4:] == 10, 11, mother[4:])
    wls = enumerate_workloads([3, 2], [3, 2], 3)
    m = n
    before = all_marginals(codes, codes, np.arange(n), mother, wls, normalise_by=float(m))
    changed, codes2 = mother.copy(), codes.copy()
    changed[[0, 1, 2, 3, 10]] = [50, 51, 52, 53, 54]  # the row's children move away and it moves too
    changed[[20, 21, 22, 23]] = 10  # and it takes four other rows as children
    codes2[10] = [2, 1]
    after = all_marginals(codes2, codes2, np.arange(n), changed, wls, normalise_by=float(m))
    tv = max(0.5 * np.abs(p - q).sum() for p, q in zip(before, after))
    assert tv <= d / m + 1e-12
    assert tv > (d - 4) / m  # the old d = τ + 1 would have been exceeded


def test_synthesizer_with_biadjacency_edges() -> None:
    db = Database(tiny_schema(), tiny_frames(n_h=300))
    plan = Plan.default(db.schema, 2.0, 1e-6, mechanism="independent", method="biadjacency")
    for fk in db.schema.private_foreign_keys:  # small slices and few iterations keep the test fast
        plan = plan.with_params(fk.name, n_iters=4, slice_cells=20_000)
    s = RelationalSynthesizer(plan, random_state=0).fit(db)
    assert s.accountant_.spent() == Fraction(plan.rho_total)
    assert s.accountant_.conversion == "zcdp"  # exponential-mechanism selection ⇒ zCDP conversion
    syn = s.sample()
    assert syn.problems() == []
    again = s.sample()
    assert again["persons"].equals(syn["persons"])  # the learned relation is reused
    other = s.sample(random_state=7, scale=1.5)  # new tables: re-optimised from stored answers
    assert other.problems() == [] and len(other["persons"]) > len(syn["persons"])


def test_many_to_many_relation_component() -> None:
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"aid": np.arange(120), "x": rng.integers(0, 3, 120), "y": rng.integers(0, 2, 120)})
    b = pd.DataFrame({"bid": np.arange(80), "z": rng.integers(0, 3, 80)})
    pairs = {(int(i), int(j)) for i, j in zip(rng.integers(0, 120, 400), rng.integers(0, 80, 400))}
    link = pd.DataFrame(sorted(pairs), columns=["aid", "bid"])
    s = Schema((Table("a", ("aid",), (Attribute.categorical("x", [0, 1, 2]),
                                      Attribute.categorical("y", [0, 1]))),
                Table("b", ("bid",), (Attribute.categorical("z", [0, 1, 2]),), public=True),
                Table("ab", ("aid", "bid"), ())),
               (ForeignKey("ab", ("aid",), "a"), ForeignKey("ab", ("bid",), "b")),
               PrivacyUnit("a", {"ab.aid->a": 10}))
    db = Database(s, {"a": a, "b": b, "ab": link})
    plan = Plan.default(s, 2.0, 1e-6, mechanism="independent").with_relation(s, "ab", n_iters=5,
                                                                            slice_cells=5000)
    assert plan.problems(s) == [] and {c.kind for c in plan.components} == {"table", "relation"}
    synth = RelationalSynthesizer(plan, random_state=1).fit(db)
    assert synth.accountant_.spent() == Fraction(plan.rho_total)
    syn = synth.sample()
    assert syn.problems() == []
    assert not syn["ab"].duplicated(["aid", "bid"]).any()  # distinct pairs by construction


def test_self_referential_fk_end_to_end() -> None:
    """people.mother → people (nullable) learned by bi-adjacency: valid, no one is their own mother."""
    rng = np.random.default_rng(0)
    n = 400
    people = pd.DataFrame({"pid": np.arange(n), "a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n)})
    mother = pd.Series(rng.integers(0, n, n), dtype="Int64")
    mother[rng.random(n) < 0.3] = pd.NA
    mother[mother == people["pid"]] = pd.NA
    people["mother"] = mother
    t = Table("people", ("pid",), (Attribute.categorical("a", [0, 1, 2]), Attribute.categorical("b", [0, 1])))
    fk = ForeignKey("people", ("mother",), "people", ("pid",), nullable=True)
    s = Schema((t,), (fk,), PrivacyUnit(None, {fk.name: 6}))
    db = Database(s, {"people": people})
    plan = Plan.default(s, 4.0, 1e-6, mechanism="independent", method="biadjacency")
    plan = plan.with_params(fk.name, n_iters=4, slice_cells=20_000)
    synth = RelationalSynthesizer(plan, random_state=0).fit(db)
    assert synth.accountant_.spent() == Fraction(plan.rho_total)
    assert any("d = 13" in note for note in synth.accountant_.notes)  # 2τ + 1 with τ = 6
    out = synth.sample()
    assert out.problems() == []
    m = out["people"]["mother"]
    assert not (m == out["people"]["pid"]).fillna(False).any()  # diagonal masked
    assert 0.1 < m.isna().mean() < 0.5  # the measured null share (30 %) survives


def test_one_to_many_keeps_the_degrees_of_its_start() -> None:
    """otm_keep_degrees (default): learning changes which children a parent has, not how many."""
    db = Database(tiny_schema(), tiny_frames(n_h=300))
    fk = "persons.hid->households"
    plan = Plan.default(db.schema, 4.0, 1e-6, mechanism="independent", method="biadjacency")
    plan = plan.with_params(fk, n_iters=4, slice_cells=20_000)
    s = RelationalSynthesizer(plan, random_state=0).fit(db)
    link = s.links_[fk]
    child, parent = s._fit_synthetic("persons"), s._fit_synthetic("households")
    from relviz.progress import silent
    from relviz.relational.biadjacency.linker import _initial_parents

    start = _initial_parents(link.degree_init, child, parent, np.random.default_rng(0), silent(), False)
    learned = link.parent
    assert not np.array_equal(start, learned)  # the relation did change
    # the same multiset of degrees as a start drawn from the same degree model
    deg = np.bincount(learned[learned >= 0], minlength=parent.n_rows)
    assert deg.sum() == (learned >= 0).sum() and deg.max() <= 4 + 1
    with_keep = np.sort(deg)
    plan2 = plan.with_params(fk, otm_keep_degrees=False)
    s2 = RelationalSynthesizer(plan2, random_state=0).fit(db)
    free = s2.links_[fk].parent
    assert np.sort(np.bincount(free[free >= 0], minlength=parent.n_rows)).tolist() != with_keep.tolist()


def test_usefulness_gate_reduces_iterations_at_small_budgets() -> None:
    """The λ gate (Settings.min_signal): every candidate has C_w ≤ 1/(λ·σ(T')·√(2/π)) for the σ
    of the chosen split; a large ρ keeps the full schedule, a small one fewer iterations, a tiny
    one a single measurement among the smallest workloads."""
    wls = enumerate_workloads(D1, D2, 3)
    K, T = schedule(len(wls), SMALL)
    m, d = 2000.0, 5
    for rho, expect in ((Fraction(1000), "full"), (Fraction(1, 100), "fewer"), (Fraction(1, 10**9), "one")):
        cand, k, t = useful_workloads(wls, rho, K, T, SMALL, m, d)
        sigma = calibrate(rho, k, t, SMALL.alpha, m, d).sigma
        if expect == "one":
            assert (k, t) == (1, 1) and {w.size for w in cand} == {min(w.size for w in wls)}
            continue
        assert all(w.size <= 1 / (sigma * math.sqrt(2 / math.pi)) for w in cand)
        assert len(cand) >= k * t
        assert (k, t) == (K, T) if expect == "full" else t < T
