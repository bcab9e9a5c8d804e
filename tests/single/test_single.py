"""Single-table mechanisms: MST accuracy within a tolerance derived from its noise, accounting."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from relviz.database import Database
from relviz.privacy.accountant import Accountant
from relviz.privacy.budget import Budget
from relviz.privacy.measure import Curator
from relviz.progress import silent
from relviz.schema import Attribute, PrivacyUnit, Schema, Table
from relviz.single import available, get
from tests.single.smoke import SMALL_SIZES, smoke_db

SIZES = SMALL_SIZES


def chain_table(n: int = 20_000, seed: int = 0, sizes: list[int] = SIZES) -> Database:
    """A noisy Markov chain over categorical columns (each column a noisy function of the previous
    one): the smoke recipe of tests/single/smoke.py, smaller."""
    return smoke_db(n, seed, sizes)


def tvd2(real: np.ndarray, syn: np.ndarray, sizes: list[int], pairs) -> np.ndarray:
    out = []
    for i, j in pairs:
        a = np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=sizes[i] * sizes[j]) / len(real)
        b = np.bincount(syn[:, i] * sizes[j] + syn[:, j], minlength=sizes[i] * sizes[j]) / len(syn)
        out.append(0.5 * np.abs(a - b).sum())
    return np.array(out)


@pytest.fixture(scope="module")
def chain():
    db = chain_table()
    return db, Curator(db).table("t")


def test_registry() -> None:
    assert {"mst", "independent"} <= set(available())


@pytest.mark.parametrize(("params", "name"), [({"iters": 5}, "iters"), ({"compress_above": 1}, "compress_above"),
                                               ({"max_cells": 1}, "max_cells"), ({"max_domain": 0}, "max_domain")])
def test_bad_hyper_parameters_are_named(params: dict, name: str) -> None:
    from relviz.errors import ParameterError

    with pytest.raises(ParameterError) as e:
        get("mst", **params)
    assert e.value.parameter == name and name in str(e.value) and isinstance(e.value, ValueError)


def test_mst_two_way_tvd_within_noise_derived_tolerance(chain) -> None:
    db, pt = chain
    rho = Fraction(1, 2)
    acc = Accountant(rho, delta=1e-6)
    model = get("mst").fit(pt, Budget(acc, "t", rho, np.random.default_rng(1)), histogram_sensitivity=1.0,
                           score_sensitivity=1.0, progress=silent())
    assert acc.spent() == rho  # exactly the table's budget
    assert [e.mechanism for e in acc.ledger].count("exponential") == len(SIZES) - 1
    n = pt._enc.n_rows
    syn = model.sample(n, np.random.default_rng(2))
    assert syn.shape == (n, len(SIZES)) and (syn < np.array(SIZES)).all()
    real = pt._enc.codes
    idx = {f"a{i}": i for i in range(len(SIZES))}
    measured = [(idx[a], idx[b]) for a, b in model.cliques]
    # Tolerance per measured pair with C cells: noise term E|N(0,σ2)|·C/(2n) = σ2·√(2/π)·C/(2n)
    # plus the sampling term of n draws ½·√(2/π)·√(C/n); a factor 3 of slack for estimation.
    sigma2 = [e.sigma for e in acc.ledger if e.label.startswith("2-way")][0]
    cells = np.array([SIZES[i] * SIZES[j] for i, j in measured])
    bound = 3 * (sigma2 * math.sqrt(2 / math.pi) * cells / (2 * n) + 0.5 * math.sqrt(2 / math.pi)
                 * np.sqrt(cells / n))
    got = tvd2(real, syn, SIZES, measured)
    assert got.mean() <= bound.mean(), (got, bound)
    # the chain is a tree: the selected tree is the chain and every pair stays close
    assert set(model.cliques) == {(f"a{i}", f"a{i + 1}") for i in range(len(SIZES) - 1)} or \
        tvd2(real, syn, SIZES, itertools.combinations(range(len(SIZES)), 2)).mean() < 0.05


def test_independent_is_gaussian_only_and_spends_exactly(chain) -> None:
    _, pt = chain
    rho = Fraction(1, 10)
    acc = Accountant(rho, delta=1e-6)
    m = get("independent").fit(pt, Budget(acc, "t", rho, np.random.default_rng(0)),
                               histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    assert acc.spent() == rho and all(e.mechanism == "gaussian" for e in acc.ledger)
    assert abs(m.total - pt._enc.n_rows) < 5 * acc.ledger[0].sigma  # noisy total near n
    s = m.sample(5000, np.random.default_rng(0))
    assert s.shape == (5000, len(SIZES))


def test_mst_compresses_large_sparse_domains() -> None:
    rng = np.random.default_rng(0)
    n = 5000
    df = pd.DataFrame({"id": np.arange(n), "big": rng.choice([3, 50, 77, 90], n),
                       "b": rng.integers(0, 3, n)})
    t = Table("t", ("id",), (Attribute.categorical("big", list(range(200))),
                             Attribute.categorical("b", [0, 1, 2])))
    db = Database(Schema((t,), (), PrivacyUnit("t")), {"t": df})
    acc = Accountant(1.0, delta=1e-6)
    m = get("mst").fit(Curator(db).table("t"), Budget(acc, "t", Fraction(1), np.random.default_rng(0)),
                       histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    assert "big" in m.mapping and m.mapping["big"].max() < 200
    s = m.sample(4000, np.random.default_rng(3))
    vals, counts = np.unique(s[:, 0], return_counts=True)
    # the four real values carry (almost) all the mass after decompression
    assert counts[np.isin(vals, [3, 50, 77, 90])].sum() / 4000 > 0.9


def test_mst_samples_large_tables_in_chunks_with_the_model_s_marginals(chain) -> None:
    """``sample_mbi`` draws ``chunk_rows`` rows per mbi call (issue 15: memory). Up to one chunk it
    is the single call it was; in chunks, every pair's distribution matches the one-call sample's
    within the sampling error of two samples of n rows (each ½·√(2/π)·√(C/n) in expected TVD),
    three times over."""
    from relviz.encoding import code_dtype
    from relviz.single.mst import sample_mbi

    _, pt = chain
    rho = Fraction(1, 2)
    model = get("mst").fit(pt, Budget(Accountant(rho, delta=1e-6), "t", rho, np.random.default_rng(1)),
                           histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    n = 20_000
    one = sample_mbi(model.model, n, model.attributes, np.random.default_rng(5), model.mapping)
    same = sample_mbi(model.model, n, model.attributes, np.random.default_rng(5), model.mapping,
                      chunk_rows=n)
    assert np.array_equal(one, model.sample(n, np.random.default_rng(5)))
    assert np.array_equal(one, same)
    chunked = sample_mbi(model.model, n, model.attributes, np.random.default_rng(5), model.mapping,
                         chunk_rows=3_000)  # six full chunks and one of 2,000 rows
    assert chunked.shape == (n, len(SIZES)) and chunked.dtype == code_dtype(SIZES) == np.uint8
    assert (chunked >= 0).all() and (chunked < np.array(SIZES)).all()
    assert not np.array_equal(chunked, one)
    pairs = list(itertools.combinations(range(len(SIZES)), 2))
    cells = np.array([SIZES[i] * SIZES[j] for i, j in pairs])
    bound = 3 * 2 * 0.5 * math.sqrt(2 / math.pi) * np.sqrt(cells / n)
    got = tvd2(one, chunked, SIZES, pairs)
    assert (got <= bound).all(), (got, bound)
    assert sample_mbi(model.model, 0, model.attributes, np.random.default_rng(5)).shape == (0, len(SIZES))


def test_mst_joint_group_is_one_node_of_the_tree() -> None:
    """``joint``: the two digits of a split attribute are one node, so a tree edge to it measures
    the three-way marginal and the model keeps a relation that no pair of digits shows. Data:
    ``x = (hi + lo) mod 3`` (pairwise independent of each digit). With the group the synthetic
    rows satisfy it at a rate near 1 (at ρ = 1 and n = 20,000 the clique's noise is σ ≈ 1.8
    counts per cell against about 2,200 rows per cell: the rate is ≥ 0.95 with a wide margin);
    without, the digit tree can only give 1/3 (the relation is not in any measured pair; 0.45
    bounds 1/3 plus five binomial SEs of 20,000 draws, plus slack for the estimation). The
    ledger releases one 1-way marginal per node (d = 3 nodes) and σ equals ``noise_scales``'."""
    from relviz.encoding import EncodedTable
    from relviz.errors import ParameterError
    from relviz.privacy.measure import PrivateTable, ReadLog
    from relviz.single.mst import MST

    rng = np.random.default_rng(0)
    n = 20_000
    hi, lo, y = rng.integers(0, 3, n), rng.integers(0, 3, n), rng.integers(0, 2, n)
    attrs = ("w#hi", "w#lo", "x", "y")
    enc = EncodedTable("t", attrs, (3, 3, 3, 2), np.column_stack([hi, lo, (hi + lo) % 3, y]))
    table = Table("t", ("id",), tuple(Attribute.categorical(a, list(range(k)))
                                      for a, k in zip(attrs, (3, 3, 3, 2))))
    rho = Fraction(1)
    rates = {}
    for joint in ((("w#hi", "w#lo"),), ()):
        mst = MST(iters=300, joint=joint)
        acc = Accountant(rho, delta=1e-6)
        model = mst.fit(PrivateTable(enc, ReadLog()), Budget(acc, "t", rho, np.random.default_rng(1)),
                        histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
        assert acc.spent() == rho
        s = model.sample(n, np.random.default_rng(2))
        rates[bool(joint)] = float(np.mean(s[:, 2] == (s[:, 0] + s[:, 1]) % 3))
        gauss = {e.label: e.sigma for e in acc.ledger if e.sigma is not None}
        assert gauss == pytest.approx(mst.noise_scales(table, rho, histogram_sensitivity=1.0,
                                                       score_sensitivity=1.0), rel=1e-12)
        if joint:
            assert set(gauss) == {"1-way marginals (3 attributes)", "2-way marginals (2 tree edges)"}
            assert [e.mechanism for e in acc.ledger].count("exponential") == 2
            assert all({"w#hi", "w#lo"} <= set(c) or "w#hi" not in c and "w#lo" not in c
                       for c in model.cliques)
            assert any({"w#hi", "w#lo", "x"} <= set(c) for c in model.cliques)
    assert rates[True] >= 0.95 and rates[False] <= 0.45, rates
    # every attribute in one group: all of ρ on the joint marginal, σ as noise_scales says
    one = MST(iters=100, joint=(attrs,))
    acc = Accountant(rho, delta=1e-6)
    model = one.fit(PrivateTable(enc, ReadLog()), Budget(acc, "t", rho, np.random.default_rng(1)),
                    histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
    assert acc.spent() == rho and len(acc.ledger) == 1 and model.cliques == ()
    assert {e.label: e.sigma for e in acc.ledger} == pytest.approx(
        one.noise_scales(table, rho, histogram_sensitivity=1.0, score_sensitivity=1.0), rel=1e-12)
    with pytest.raises(ParameterError):
        MST(joint=(("a", "b"), ("b", "c")))
    with pytest.raises(ParameterError):
        MST(joint=(("a",),))


def test_mst_excess_score_prefers_dependence_to_a_large_domain() -> None:
    """``score="excess"``: x, y binary with P(x = y) = 0.55 (L1 dependence 0.1·n = 2,000 at
    n = 20,000) and B uniform on 400 codes, independent of both. An independent pair's L1 is
    about √(2/π)·√(n·cells) = 3,200 for (x, B) or (y, B), so MST's L1 score builds the tree
    (x, B), (y, B) and never measures (x, y); the excess (L1 minus that expectation: about
    1,770 for (x, y), 0 ± ~100 for the pairs with B) measures (x, y). ρ = 10 makes each selection
    step near the argmax (score sensitivity 1)."""
    from relviz.encoding import EncodedTable
    from relviz.errors import ParameterError
    from relviz.privacy.measure import PrivateTable, ReadLog
    from relviz.single.mst import MST

    rng = np.random.default_rng(0)
    n = 20_000
    x = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.55, x, 1 - x)
    enc = EncodedTable("t", ("x", "y", "B"), (2, 2, 400), np.column_stack([x, y, rng.integers(0, 400, n)]))
    picked = {}
    for score in ("l1", "excess"):
        model = MST(iters=100, score=score).fit(
            PrivateTable(enc, ReadLog()), Budget(Accountant(10, delta=1e-6), "t", Fraction(10),
                                                 np.random.default_rng(1)),
            histogram_sensitivity=1.0, score_sensitivity=1.0, progress=silent())
        picked[score] = {frozenset(c) for c in model.cliques}
    assert frozenset(("x", "y")) in picked["excess"]
    assert frozenset(("x", "y")) not in picked["l1"]
    with pytest.raises(ParameterError):
        MST(score="l2")
