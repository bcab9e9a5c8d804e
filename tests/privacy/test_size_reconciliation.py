"""Table sizes under private sizes (entity unit): the noisy totals reconciled with the degree
releases and the public caps (relviz.privacy.postprocessing.reconcile_sizes)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relviz.datasets import load
from relviz.plan import Plan
from relviz.privacy.postprocessing import SizeFact, reconcile_sizes
from relviz.synthesizer import RelationalSynthesizer


def test_estimates_alone_give_the_inverse_variance_mean() -> None:
    # two unbiased estimates of one size: GLS is the inverse-variance mean (exact algebra)
    sizes = reconcile_sizes([SizeFact({"t": 1.0}, 100.0, sd=10.0), SizeFact({"t": 1.0}, 200.0, sd=20.0)],
                            {"t": 100.0})
    w1, w2 = 1 / 100, 1 / 400
    assert sizes["t"] == pytest.approx((w1 * 100 + w2 * 200) / (w1 + w2), rel=1e-6)


def test_a_table_nothing_reaches_keeps_its_start() -> None:
    sizes = reconcile_sizes([SizeFact({"a": 1.0}, 50.0, sd=5.0)], {"a": 40.0, "b": 77.0})
    assert sizes == pytest.approx({"a": 50.0, "b": 77.0}, rel=1e-6)


def test_tie_is_met_and_sizes_move_by_precision() -> None:
    # children = 4·parents; the parents' estimate is 10× more precise, so the children move
    facts = [SizeFact({"p": 1.0}, 200.0, sd=10.0), SizeFact({"c": 1.0}, 500.0, sd=100.0),
             SizeFact({"c": 1.0, "p": -4.0}, 0.0, "tie")]
    s = reconcile_sizes(facts, {"p": 200.0, "c": 500.0})
    assert s["c"] == pytest.approx(4 * s["p"], rel=1e-4)
    # closed form of the one-variable GLS in p: (200/10² + 4·500/100²) / (1/10² + 16/100²)
    p = (200 / 100 + 4 * 500 / 1e4) / (1 / 100 + 16 / 1e4)
    assert s["p"] == pytest.approx(p, rel=1e-4)


def test_cap_bound_holds_and_is_slack_when_not_binding() -> None:
    bound = SizeFact({"p": 15.0, "c": -1.0}, 0.0, "at_least")
    tight = reconcile_sizes([SizeFact({"p": 1.0}, 23.0, sd=100.0), SizeFact({"c": 1.0}, 475.0, sd=500.0),
                             bound], {"p": 23.0, "c": 475.0})
    assert tight["c"] <= 15 * tight["p"] * (1 + 1e-6)
    loose = reconcile_sizes([SizeFact({"p": 1.0}, 205.0, sd=100.0), SizeFact({"c": 1.0}, 934.0, sd=500.0),
                             bound], {"p": 205.0, "c": 934.0})
    assert loose == pytest.approx({"p": 205.0, "c": 934.0}, rel=1e-6)


def test_sizes_stay_at_least_one() -> None:
    s = reconcile_sizes([SizeFact({"t": 1.0}, -40.0, sd=10.0)], {"t": 1.0})
    assert s["t"] == pytest.approx(1.0)


SEEDS = range(8)


@pytest.fixture(scope="module", params=["degree", "biadjacency"])
def galton_runs(request) -> list:
    db = load("galton")
    out = []
    for seed in SEEDS:
        plan = Plan.default(db.schema, 0.5, 1e-6, method=request.param)
        syn = RelationalSynthesizer(plan, random_state=seed).fit(db)
        out.append((syn, syn.sample()))
    return [db, out]


def test_galton_sizes_respect_the_cap_and_the_degree_release_over_seeds(galton_runs) -> None:
    """Galton (entity unit, families private, τ = 15) at ε = 0.5 over 8 seeds. Before the
    reconciliation the two sizes were separate noisy totals: seed 2 drew 23 families for 475
    children (every family above τ, degree similarity 0). Now: no family above τ, and the
    synthetic mean degree equals the released one (the tie) up to rounding of the sizes
    (bi-adjacency: of its degree start, reported before the tables are drawn)."""
    db, runs = galton_runs
    fk = db.schema.foreign_keys[0]
    tau = db.schema.privacy_unit.caps[fk.name]
    for syn, out in runs:
        idx = out.parent_index(fk)
        n_p = len(out[fk.parent])
        deg = np.bincount(idx[idx >= 0], minlength=n_p)
        assert deg.max() <= tau
        link = syn.links_[fk.name]
        link = getattr(link, "degree_init", link)  # bi-adjacency: its degree start
        mu = link.mean_degree()
        # rounding each size to an integer moves the ratio by at most (1 + μ)/n_p
        assert abs((idx >= 0).sum() / n_p - mu) <= (1 + mu) / n_p + 1e-9
        assert math.isfinite(syn.models_[fk.parent].total_variance)


def test_galton_degree_shape_over_seeds(galton_runs) -> None:
    """Degree similarity (SDMetrics CardinalityShapeSimilarity) over the 8 seeds. Measured with
    the reconciliation over 10 seeds: degree 0.67–0.85 (mean 0.77), bi-adjacency 0.67–0.84
    (mean 0.76; 0.62–0.82, mean 0.72 with the fixed 0.7 start share of stop 23); without it both
    0.00–0.88 (mean 0.57). The floors (0.55 each, 0.65 on the
    mean) sit below the measured minima by about the seed-to-seed spread (≈ 0.06), so they fail
    only on a regression of the kind fixed here."""
    from relviz.evaluate.degree import degree_similarity

    db, runs = galton_runs
    scores = [float(degree_similarity(db, out)["Score"].iloc[0]) for _, out in runs]
    assert min(scores) >= 0.55, scores
    assert float(np.mean(scores)) >= 0.65, scores


def test_the_ledger_notes_say_which_sizes_moved(galton_runs) -> None:
    """The reconciliation is post-processing, and the run says so: every run whose sizes moved by
    half a row or more lists them in the accountant's notes (shown with the ledger)."""
    db, runs = galton_runs
    for syn, _out in runs:
        moved = [n for n in ("families", "children")
                 if abs(syn.sizes_[n] - syn.models_[n].total) >= 0.5]
        notes = [n for n in syn.accountant_.notes if n.startswith("synthetic table sizes reconcile")]
        assert bool(notes) == bool(moved)
        for name in moved:
            assert name in notes[0]


def test_biadjacency_keeps_the_degree_methods_shape_on_galton() -> None:
    """Bi-adjacency's degree start gets ``init_share="auto"`` of the FK's ρ (0.95 here: 205
    families under the entity unit, a noisy histogram), so its degree shape stays within 0.01 of
    the degree method's (issue 11). Paired over seeds 0–7 at ε = 0.5: measured over seeds 0–9,
    gap −0.0065 ± 0.0021 (s.e.) with "auto" and −0.043 ± 0.007 with the fixed 0.7 share. The
    bound −0.02 sits about 6 s.e. below the measurement and 3 s.e. above the old share's gap."""
    from relviz.evaluate.degree import degree_similarity

    db = load("galton")
    gaps = []
    for seed in SEEDS:
        scores = []
        for method in ("degree", "biadjacency"):
            plan = Plan.default(db.schema, 0.5, 1e-6, method=method)
            out = RelationalSynthesizer(plan, random_state=seed).fit(db).sample()
            scores.append(float(degree_similarity(db, out)["Score"].iloc[0]))
        gaps.append(scores[1] - scores[0])
    assert float(np.mean(gaps)) >= -0.02, gaps
