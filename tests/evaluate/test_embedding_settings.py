"""t-SNE settings for a room of laptops (issue 14, item 7): the faster defaults, the same map as
openTSNE's own ``TSNE.fit`` with those settings, and the early preview. (Timings are measured by
``benchmarks/evaluate_speed.py --tsne``, not here.)"""

from __future__ import annotations

import inspect

import numpy as np
import openTSNE
import pytest

from relviz.evaluate import embed, embedding
from relviz.evaluate.embedding import encode_rows, rows_to_embed


def test_fast_defaults() -> None:
    params = inspect.signature(embed).parameters
    assert params["early_exaggeration_iter"].default == 125 and params["n_iter"].default == 250
    assert params["theta"].default == 0.8
    assert params["neighbors"].default == "auto" and params["negative_gradient_method"].default == "auto"


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    seen: list[dict] = []

    class Spy(openTSNE.TSNE):
        def __init__(self, **kw):  # noqa: ANN003
            seen.append(kw)
            super().__init__(**kw)

    monkeypatch.setattr(openTSNE, "TSNE", Spy)
    return seen


def test_exact_neighbours_for_small_samples_only(kit, monkeypatch: pytest.MonkeyPatch) -> None:
    real = kit.random_shop(seed=0)
    seen = _spy(monkeypatch)
    embed(real, real, table="sales", n=100, n_iter=10, early_exaggeration_iter=10, detection=False)
    assert seen[-1]["neighbors"] == "exact" and seen[-1]["theta"] == 0.8
    monkeypatch.setattr(embedding, "EXACT_NEIGHBOURS_UP_TO", 150)  # 200 rows in all: above
    embed(real, real, table="sales", n=100, n_iter=10, early_exaggeration_iter=10, detection=False)
    assert seen[-1]["neighbors"] == "auto"
    embed(real, real, table="sales", n=100, n_iter=10, early_exaggeration_iter=10, detection=False,
          neighbors="annoy", negative_gradient_method="fft", theta=0.5)
    assert (seen[-1]["neighbors"], seen[-1]["negative_gradient_method"], seen[-1]["theta"]) == ("annoy", "fft", 0.5)


def test_same_map_as_opentsne_fit(kit) -> None:
    """embed() writes TSNE.fit's two phases out (for the preview): the map is TSNE.fit's."""
    real, syn = kit.random_shop(seed=0), kit.random_shop(seed=1, shift=1.0)
    emb = embed(real, syn, table="sales", n=150, n_iter=60, early_exaggeration_iter=40, detection=False)
    rdf, sdf, kinds, _ = rows_to_embed(real, syn, table="sales")
    picks = [df.iloc[np.sort(np.random.default_rng(0).choice(len(df), 150, replace=False))].reset_index(drop=True)
             for df in (rdf, sdf)]
    x = np.vstack(encode_rows(picks[0], picks[1], kinds)[:2])
    ref = openTSNE.TSNE(n_components=2, perplexity=30.0, initialization="pca", random_state=0, n_jobs=1,
                        n_iter=60, early_exaggeration_iter=40, neighbors="exact", theta=0.8,
                        negative_gradient_method="auto", verbose=False).fit(x)
    np.testing.assert_allclose(emb.frame[["x", "y"]].to_numpy(), np.asarray(ref), rtol=1e-7, atol=1e-9)


def test_preview_after_early_exaggeration(kit) -> None:
    real, syn = kit.random_shop(seed=0), kit.random_shop(seed=1, shift=3.0)
    events: list[tuple[str, object]] = []
    emb = embed(real, syn, table="sales", n=200, n_iter=50, early_exaggeration_iter=30,
                progress=lambda f, m: events.append(("progress", m)),
                preview=lambda e: events.append(("preview", e)))
    previews = [e for kind, e in events if kind == "preview"]
    assert len(previews) == 1
    first = previews[0]
    assert first.preview and not emb.preview and emb.to_dict()["preview"] is False
    # the preview is a whole map of the same rows, drawn before the main phase's iterations
    assert len(first.frame) == len(emb.frame) == 400
    assert (first.frame["Source"] == emb.frame["Source"]).all()
    assert np.isfinite(first.frame[["x", "y"]].to_numpy()).all()
    assert not np.allclose(first.frame[["x", "y"]].to_numpy(), emb.frame[["x", "y"]].to_numpy())
    assert first.detection_score == emb.detection_score and first.seconds <= emb.seconds
    # progress counts the iterations of both phases: 30 of early exaggeration (the preview), then 50
    at = next(i for i, (kind, _) in enumerate(events) if kind == "preview")
    before = [m for kind, m in events[:at] if kind == "progress"]
    after = [m for kind, m in events[at + 1:] if kind == "progress" and str(m).startswith("t-SNE iteration")]
    assert before[-1] == "t-SNE iteration 30/80 (early exaggeration done: a first map)"
    assert after[0].startswith("t-SNE iteration 80/80 (KL") and after[-1] == "t-SNE iteration 80/80 (done)"
    assert "x" not in emb.attributes  # the final frame was not touched by the preview's copy
    # no preview without early exaggeration
    seen: list[object] = []
    embed(real, syn, table="sales", n=100, n_iter=20, early_exaggeration_iter=0, detection=False,
          preview=seen.append)
    assert seen == []
