"""Row encoding, detection score and the t-SNE embedding (docs/evaluation.md §8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relviz.evaluate import detection_score, embed, encode_rows


def test_encode_rows_by_hand() -> None:
    real = pd.DataFrame({"v": [1.0, 3.0, np.nan], "c": ["a", "a", "b"]})
    syn = pd.DataFrame({"v": [5.0, 1.0], "c": ["z", "a"]})
    xr, xs, names = encode_rows(real, syn, {"v": "numeric", "c": "categorical"})
    assert names == ["v", "v=null", "c=a", "c=b", "c=other"]
    # real mean 2, std 1 (population, non-null values) → z = (x − 2) / 1; nulls → 0 plus indicator
    assert xr[:, 0].tolist() == [-1.0, 1.0, 0.0] and xr[:, 1].tolist() == [0, 0, 1]
    assert xs[:, 0].tolist() == [3.0, -1.0]
    assert xs[0, 4] == 1.0 and xs[1, 2] == 1.0  # unseen category → other
    assert real["v"].isna().sum() == 1  # caller frame untouched


def test_rare_categories_merge_into_other() -> None:
    real = pd.DataFrame({"c": ["a"] * 199 + ["rare"]})  # "rare" = 0.5% < 1%
    xr, xs, names = encode_rows(real, real.iloc[:5], {"c": "categorical"})
    assert names == ["c=a", "c=other"]
    assert xr[-1].tolist() == [0.0, 1.0]


def test_detection_score_extremes() -> None:
    rng = np.random.default_rng(0)
    same = detection_score(rng.normal(size=(400, 3)), rng.normal(size=(400, 3)))
    apart = detection_score(rng.normal(size=(400, 3)), rng.normal(size=(400, 3)) + 6)
    assert same[0] > 0.8 and 0.35 < same[1] < 0.65
    assert apart[0] < 0.05 and apart[1] > 0.95


def test_embed_table_small(kit) -> None:
    real, syn = kit.random_shop(seed=0), kit.random_shop(seed=1, shift=3.0)
    seen: list[tuple[float, str]] = []
    emb = embed(real, syn, table="sales", n=500, n_iter=100, early_exaggeration_iter=50,
                progress=lambda f, m: seen.append((f, m)))
    assert emb.n_real == 500 and emb.n_synthetic == 500
    assert list(emb.frame.columns[:3]) == ["x", "y", "Source"]
    assert set(emb.attributes) == {"kind", "amount"} and "kind" in emb.frame
    assert (emb.frame["Source"] == "Real").sum() == 500
    assert np.isfinite(emb.frame[["x", "y"]].to_numpy()).all()
    assert emb.detection_score < 0.5  # a shift of 2 standard deviations is easy to detect
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(m.startswith("t-SNE iteration") for _, m in seen)


def test_embed_join_and_same_seed(kit) -> None:
    real = kit.random_shop(seed=0)
    a = embed(real, real, fk=kit.FK, n=120, n_iter=50, early_exaggeration_iter=25, detection=False)
    b = embed(real, real, fk=kit.FK, n=120, n_iter=50, early_exaggeration_iter=25, detection=False)
    assert a.title == "sales.store_id → stores"
    assert {"sales.kind", "stores.region"} <= set(a.frame.columns)
    np.testing.assert_allclose(a.frame[["x", "y"]], b.frame[["x", "y"]])  # fixed seed
    # same seed on both sides: the real and synthetic samples are the same rows here
    half = len(a.frame) // 2
    pd.testing.assert_series_equal(a.frame["sales.amount"].iloc[:half].reset_index(drop=True),
                                   a.frame["sales.amount"].iloc[half:].reset_index(drop=True))
    with pytest.raises(ValueError):
        embed(real, real, n=10)
