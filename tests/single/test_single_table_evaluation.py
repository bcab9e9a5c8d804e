"""relviz.evaluate.single_table: the benchmark's binning and fidelity error, query error, ML
efficacy (TSTR vs TRTR), holdout and exact matches, on frames small enough to check by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.evaluate.single_table import (
    benchmark_codes,
    exact_match_rate,
    fidelity_error,
    holdout_split,
    ml_efficacy,
    query_error,
)
from relviz.schema import Attribute, Table

T = Table("t", ("id",), (Attribute.categorical("c", ["a", "b"]), Attribute.numeric("x", 0, 10),
                         Attribute.categorical("y", [0, 1])))


def test_binning_rounds_to_100_points_on_the_joint_range() -> None:
    r, s, n = benchmark_codes(pd.Series([0.0, 5.0, 10.0]), pd.Series([2.5, np.nan]), numeric=True)
    assert n == 101 and list(r) == [0, 50, 99] and list(s) == [25, 100]  # round(99·x/10); null last
    r, s, n = benchmark_codes(pd.Series(["a", "b"]), pd.Series(["b", None]), numeric=False)
    assert n == 3 and list(r) == [0, 1] and list(s) == [1, 2]


def test_fidelity_error_by_hand() -> None:
    real = pd.DataFrame({"c": ["a", "a", "b", "b"], "x": [0.0, 0.0, 10.0, 10.0], "y": [0, 0, 1, 1]})
    assert fidelity_error(real, real, T).error == 0
    syn = pd.DataFrame({"c": ["a", "b", "a", "b"], "x": [0.0, 0.0, 10.0, 10.0], "y": [0, 0, 1, 1]})
    res = fidelity_error(real, syn, T)
    # (c, x) and (c, y): half the mass moves: TVD ½; (x, y) identical: 0 → mean 1/3
    assert res.error == pytest.approx(1 / 3)
    assert res.mean_1way == 0
    assert set(map(tuple, res.worst(2)[["a", "b"]].to_numpy())) == {("c", "x"), ("c", "y")}


def test_query_error_by_hand() -> None:
    real = pd.DataFrame({"c": ["a"] * 4, "x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    assert query_error(real, real, T, n_queries=50) == 0
    syn = real.assign(c="b")  # every point predicate on c answers 1 on real, 0 on syn
    # each query has 3 of the 3 attributes: c = 'a' always, so |q_real − q_syn| = q_real
    err = query_error(real, syn, T, n_queries=200, seed=1)
    assert 0 < err <= 1
    full = query_error(real, syn, T, n_queries=200, seed=1)
    prefix = query_error(real, syn, T, n_queries=200, seed=1, benchmark_mode=True)
    assert full == err and prefix != full


def test_ml_efficacy_tstr_against_trtr() -> None:
    """A target that is a function of c: TRTR is perfect; a synthetic table whose target is
    independent of the features trains a model near chance (macro-F1 ≤ 0.7)."""
    rng = np.random.default_rng(0)
    n = 2000
    c = rng.choice(["a", "b"], n)
    real = pd.DataFrame({"c": c, "x": rng.uniform(0, 10, n), "y": (c == "b").astype(int)})
    train, test = holdout_split(real, 0.25, seed=0)
    assert abs(len(test) / n - 0.25) < 0.05
    syn = train.assign(y=rng.permutation(train["y"].to_numpy()))
    out = ml_efficacy(train, test, syn, T, "y")
    f1 = out[out.metric == "macro_f1"].set_index(["model", "setting"])["value"]
    assert (f1.xs("TRTR", level="setting") == 1.0).all()
    assert (f1.xs("TSTR", level="setting") <= 0.7).all()
    assert set(out.metric) == {"macro_f1", "accuracy", "roc_auc"}
    reg = ml_efficacy(train, test, train, T, "x")
    assert set(reg.metric) == {"r2", "rmse"}


def test_exact_match_rate() -> None:
    train = pd.DataFrame({"c": ["a", "b"], "y": [0, 1]})
    syn = pd.DataFrame({"c": ["a", "a", "b", "b"], "y": [0, 1, 1, 0]})
    assert exact_match_rate(train, syn, ["c", "y"]) == 0.5
