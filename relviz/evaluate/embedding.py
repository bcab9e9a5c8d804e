"""t-SNE embeddings of real and synthetic rows, and the detection score (docs/evaluation.md §8).

* Rows: one table, or one FK join (child ⋈ parent, inner join; docs/evaluation.md §4). ``n`` rows are sampled
  from each side (default 2,000; all rows when fewer), with the same seed; the sizes are returned
  and shown.
* Encoding (:func:`encode_rows`): numerics and datetimes (as numbers) standardised with the real
  sample's mean and standard deviation, nulls set to 0 with a ``<column>=null`` indicator;
  categoricals one-hot, categories under 1% of the real sample merged into ``other`` (nulls are
  the category ``(null)``).
* Map: openTSNE (perplexity 30, PCA initialisation, fixed seed) on the union of both samples, so
  both share one map; progress is reported from openTSNE's per-iteration callbacks. Settings for
  a room of 2-core laptops (``python benchmarks/evaluate_speed.py --tsne``): exact nearest
  neighbours up to 20,000 rows (scikit-learn; building Annoy's index costs more than it saves at
  that size), Barnes–Hut gradients below 10,000 rows and FFT above (openTSNE's own rule) with
  θ = 0.8 instead of 0.5, and 125 + 250 iterations (early exaggeration, then the main phase)
  instead of openTSNE's 250 + 500: with the PCA initialisation and openTSNE's automatic learning
  rate the map has settled by then. On 2,000 + 2,000 flights (16 features, one thread, a shared
  2-core machine) this takes 6–7 s of CPU instead of 18–23 s (8.5 s wall instead of 27–33 s), and
  the map keeps the same share of each row's 10 nearest neighbours (0.43) and the same mixing of
  real and synthetic rows. A ``preview`` callback receives the map after the early-exaggeration
  phase, a third of the way through (3 s).
* Number: **detection score** = 1 − (2·max(AUC, 0.5) − 1) per fold, averaged over a 5-fold
  stratified cross-validation of a logistic regression telling real from synthetic on the same
  encoding (SDMetrics' ``LogisticDetection`` formula; 1 = indistinguishable).

Curator view (not private): everything here reads real data.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from relviz.database import Database
from relviz.evaluate._common import (
    REAL,
    SYNTHETIC,
    as_fk,
    join_rows,
    numeric_values,
    report_progress,
)
from relviz.progress import Progress
from relviz.schema import ForeignKey

__all__ = ["EXACT_NEIGHBOURS_UP_TO", "Embedding", "detection_score", "embed", "encode_rows", "rows_to_embed"]

OTHER = "other"
NULL = "(null)"


@dataclass(frozen=True)
class Embedding:
    """A shared 2-D map of sampled real and synthetic rows.

    Attributes:
        frame: Tidy frame ``x, y, Source`` (``"Real"``/``"Synthetic"``) plus the original value of
            every attribute (for colouring; an attribute named ``x``, ``y`` or ``Source`` becomes
            ``"x (value)"`` …), real rows first.
        title: Table name or FK label.
        n_real: Real rows embedded.
        n_synthetic: Synthetic rows embedded.
        detection_score: 1 − (2·max(AUC, 0.5) − 1), fold average (NaN if it could not be fitted).
        auc: Mean cross-validated ROC AUC of the logistic regression.
        features: Names of the encoded features.
        attributes: Attribute columns of ``frame``.
        seconds: Wall time.
        preview: ``True`` for the early-exaggeration layout given to ``embed``'s ``preview``
            callback (clusters still compressed), ``False`` for the finished map.
    """

    frame: pd.DataFrame
    title: str
    n_real: int
    n_synthetic: int
    detection_score: float
    auc: float
    features: tuple[str, ...]
    attributes: tuple[str, ...]
    seconds: float = 0.0
    preview: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "n_real": self.n_real, "n_synthetic": self.n_synthetic,
                "detection_score": self.detection_score, "auc": self.auc,
                "features": len(self.features), "seconds": self.seconds, "preview": self.preview}


def rows_to_embed(real: Database, synthetic: Database, *, table: str | None = None,
                  fk: ForeignKey | str | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str], str]:
    """The rows to embed: one table's attributes, or the attributes of one FK join.

    Returns:
        ``(real_rows, synthetic_rows, kinds, title)``; ``kinds`` maps each column to its attribute
        kind. Join columns are labelled ``table.attribute`` (``parent.attribute`` for the parent
        side of a self-referential FK).

    Raises:
        ValueError: unless exactly one of ``table``/``fk`` is given, or without attributes.
    """
    if (table is None) == (fk is None):
        raise ValueError("give exactly one of table= or fk=")
    s = real.schema
    if table is not None:
        attrs = s.table(table).attributes
        kinds = {a.name: a.kind for a in attrs}
        names = list(kinds)
        out = (real[table][names], synthetic[table][names], kinds, table)
    else:
        fk = as_fk(s, fk)  # type: ignore[arg-type]
        pprefix = "parent." if fk.self_referential else f"{fk.parent}."
        cattrs, pattrs = s.table(fk.child).attributes, s.table(fk.parent).attributes
        kinds = {**{f"{fk.child}.{a.name}": a.kind for a in cattrs}, **{pprefix + a.name: a.kind for a in pattrs}}
        frames = []
        for db in (real, synthetic):
            crow, prow = join_rows(db, fk)
            c = db[fk.child][[a.name for a in cattrs]].iloc[crow].reset_index(drop=True)
            p = db[fk.parent][[a.name for a in pattrs]].iloc[prow].reset_index(drop=True)
            frames.append(pd.concat([c.add_prefix(f"{fk.child}."), p.add_prefix(pprefix)], axis=1))
        out = (frames[0], frames[1], kinds, fk.label())
    if not out[2]:
        raise ValueError(f"{out[3]}: no attributes to embed")
    return out


def encode_rows(real: pd.DataFrame, synthetic: pd.DataFrame, kinds: Mapping[str, str], *,
                min_share: float = 0.01) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Encode real and synthetic rows on one feature space (docs/evaluation.md §8).

    Args:
        real: Real rows (columns named in ``kinds``; never modified).
        synthetic: Synthetic rows.
        kinds: ``{column: "numeric" | "datetime" | "categorical"}``.
        min_share: Categories below this share of the real rows are merged into ``other``.

    Returns:
        ``(X_real, X_synthetic, feature_names)``: float64 arrays ``(n_real, f)`` and
        ``(n_syn, f)``.
    """
    xr: list[np.ndarray] = []
    xs: list[np.ndarray] = []
    names: list[str] = []
    for col, kind in kinds.items():
        if kind in ("numeric", "datetime"):
            r, s = numeric_values(real[col], kind), numeric_values(synthetic[col], kind)
            mean = float(np.nanmean(r)) if np.isfinite(r).any() else 0.0
            std = float(np.nanstd(r)) if np.isfinite(r).sum() > 1 else 1.0
            std = std if std > 0 and math.isfinite(std) else 1.0
            zr, zs = (r - mean) / std, (s - mean) / std
            nr, ns = np.isnan(zr), np.isnan(zs)
            xr.append(np.where(nr, 0.0, zr))
            xs.append(np.where(ns, 0.0, zs))
            names.append(col)
            if nr.any() or ns.any():
                xr.append(nr.astype(np.float64))
                xs.append(ns.astype(np.float64))
                names.append(f"{col}=null")
        else:
            r = real[col].astype(object).where(real[col].notna(), NULL).astype(str)
            s = synthetic[col].astype(object).where(synthetic[col].notna(), NULL).astype(str)
            share = r.value_counts(normalize=True)
            kept = [c for c in share.index if share[c] >= min_share]
            index = pd.Index(kept, dtype=object)
            cr, cs = index.get_indexer(r.astype(object)), index.get_indexer(s.astype(object))
            for j, cat in enumerate(kept):
                xr.append((cr == j).astype(np.float64))
                xs.append((cs == j).astype(np.float64))
                names.append(f"{col}={cat}")
            if (cr < 0).any() or (cs < 0).any():
                xr.append((cr < 0).astype(np.float64))
                xs.append((cs < 0).astype(np.float64))
                names.append(f"{col}={OTHER}")
    stack = lambda cols, n: np.column_stack(cols) if cols else np.zeros((n, 0))  # noqa: E731
    return stack(xr, len(real)), stack(xs, len(synthetic)), names


def detection_score(x_real: np.ndarray, x_synthetic: np.ndarray, *, folds: int = 5,
                    random_state: int = 0) -> tuple[float, float]:
    """Logistic-regression detection: ``1 − mean_f(2·max(AUC_f, 0.5) − 1)`` over stratified folds.

    Args:
        x_real: ``(n_real, f)`` encoded real rows.
        x_synthetic: ``(n_syn, f)`` encoded synthetic rows.
        folds: Cross-validation folds (5, docs/evaluation.md §8; SDMetrics uses 3).
        random_state: Seed of the fold split.

    Returns:
        ``(score, mean AUC)``; 1.0 = indistinguishable.

    Raises:
        ValueError: with fewer rows per side than folds.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    x = np.vstack([x_real, x_synthetic])
    y = np.r_[np.ones(len(x_real)), np.zeros(len(x_synthetic))]
    aucs, parts = [], []
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=random_state).split(x, y):
        model = LogisticRegression(max_iter=1000).fit(x[train], y[train])
        auc = float(roc_auc_score(y[test], model.predict_proba(x[test])[:, 1]))
        aucs.append(auc)
        parts.append(max(0.5, auc) * 2 - 1)
    return 1.0 - float(np.mean(parts)), float(np.mean(aucs))


class _TSNEProgress:
    """openTSNE callback: ``callback(iteration, error, embedding)`` → ``progress(fraction, message)``.

    openTSNE numbers the iterations of each phase from 1; ``offset`` is the iterations of the
    phases before (set by :func:`embed` between them).
    """

    def __init__(self, progress: Progress | None, total: int, every: int, start: float, span: float) -> None:
        self.progress, self.total, self.every = progress, total, every
        self.start, self.span, self.offset = start, span, 0

    def report(self, done: int, note: str) -> None:
        done = min(done, self.total)
        report_progress(self.progress, self.start + self.span * done / max(self.total, 1),
                        f"t-SNE iteration {done}/{self.total} ({note})")

    def __call__(self, iteration: int, error: float, embedding: Any) -> bool:
        self.report(self.offset + iteration, f"KL {error:.3f}")
        return False


EXACT_NEIGHBOURS_UP_TO = 20_000  # rows (both sides): exact kNN below, openTSNE's Annoy index above


def embed(real: Database, synthetic: Database, *, table: str | None = None, fk: ForeignKey | str | None = None,
          n: int = 2000, random_state: int = 0, perplexity: float = 30.0, n_jobs: int = 1,
          n_iter: int = 250, early_exaggeration_iter: int = 125, min_share: float = 0.01,
          detection: bool = True, neighbors: str = "auto", negative_gradient_method: str = "auto",
          theta: float = 0.8, progress: Progress | None = None,
          preview: Callable[[Embedding], None] | None = None) -> Embedding:
    """t-SNE map of sampled real and synthetic rows of a table or an FK join, with detection.

    Args:
        real: Real database.
        synthetic: Synthetic database with the same schema.
        table: Table to embed (or give ``fk``).
        fk: FK whose inner join to embed.
        n: Rows sampled per side (all rows when fewer).
        random_state: Seed of the row samples (same for both sides), the t-SNE and the folds.
        perplexity: t-SNE perplexity (lowered to ``(N − 1) / 3`` for tiny samples).
        n_jobs: Threads for openTSNE (1–2 on shared machines).
        n_iter: Iterations after early exaggeration (250; openTSNE's default is 500).
        early_exaggeration_iter: Early-exaggeration iterations (125; openTSNE's default is 250).
        min_share: Rare-category threshold of the one-hot encoding.
        detection: Compute the detection score (skip for speed).
        neighbors: openTSNE's nearest-neighbour method; ``"auto"``: ``"exact"`` up to
            :data:`EXACT_NEIGHBOURS_UP_TO` rows in all, else openTSNE's ``"auto"`` (Annoy).
        negative_gradient_method: ``"auto"`` (Barnes–Hut below 10,000 rows, FFT above; openTSNE's
            rule), ``"bh"`` or ``"fft"``.
        theta: Barnes–Hut accuracy: larger is faster and coarser (0.8; openTSNE's default is 0.5).
        progress: Optional ``progress(fraction, message)`` callback.
        preview: Optional ``preview(embedding)`` callback, called once with the layout after the
            early-exaggeration phase (``embedding.preview`` is ``True``) so that a map can be
            shown before the main phase ends; it runs in the computing thread.

    Returns:
        :class:`Embedding`.

    Raises:
        ValueError: on a bad ``table``/``fk`` choice or when a side has no rows.
    """
    import openTSNE

    t0 = time.perf_counter()
    report_progress(progress, 0.0, "sampling rows")
    rdf, sdf, kinds, title = rows_to_embed(real, synthetic, table=table, fk=fk)
    if len(rdf) == 0 or len(sdf) == 0:
        raise ValueError(f"{title}: no rows to embed on the {'real' if len(rdf) == 0 else 'synthetic'} side")
    picks = []
    for df in (rdf, sdf):
        rng = np.random.default_rng(random_state)
        idx = np.sort(rng.choice(len(df), size=min(n, len(df)), replace=False))
        picks.append(df.iloc[idx].reset_index(drop=True))
    rdf, sdf = picks
    xr, xs, names = encode_rows(rdf, sdf, kinds, min_share=min_share)
    score = auc = math.nan
    if detection:
        report_progress(progress, 0.03, "detection (logistic regression, 5 folds)")
        try:
            score, auc = detection_score(xr, xs, random_state=random_state)
        except ValueError:
            score = auc = math.nan
    x = np.vstack([xr, xs])
    if x.shape[1] < 2:  # PCA initialisation needs two features
        x = np.column_stack([x, np.zeros((len(x), 2 - x.shape[1]))])
    report_progress(progress, 0.1, f"t-SNE affinities ({len(x):,} rows)")
    frame = pd.concat([rdf, sdf], ignore_index=True)
    clash = {c: f"{c} (value)" for c in frame.columns if c in ("x", "y", "Source")}
    frame = frame.rename(columns=clash)
    attributes = tuple(clash.get(c, c) for c in kinds)
    frame.insert(0, "Source", [REAL] * len(rdf) + [SYNTHETIC] * len(sdf))

    def result(xy: np.ndarray, is_preview: bool) -> Embedding:
        f = frame.copy() if is_preview else frame
        f.insert(0, "y", xy[:, 1])
        f.insert(0, "x", xy[:, 0])
        return Embedding(f, title, len(rdf), len(sdf), score, auc, tuple(names), attributes,
                         time.perf_counter() - t0, is_preview)

    every = 50  # each callback makes openTSNE evaluate the KL divergence (~2% of an iteration's cost)
    total = n_iter + early_exaggeration_iter
    cb = _TSNEProgress(progress, total, every, 0.15, 0.85)
    if neighbors == "auto":
        neighbors = "exact" if len(x) <= EXACT_NEIGHBOURS_UP_TO else "auto"
    tsne = openTSNE.TSNE(n_components=2, perplexity=min(perplexity, max((len(x) - 1) / 3, 1.0)),
                         initialization="pca", random_state=random_state, n_jobs=n_jobs, n_iter=n_iter,
                         early_exaggeration_iter=early_exaggeration_iter, neighbors=neighbors,
                         negative_gradient_method=negative_gradient_method, theta=theta, callbacks=cb,
                         callbacks_every_iters=every, verbose=False)
    # TSNE.fit's two phases, written out so that the layout between them can be previewed
    emb = tsne.prepare_initial(x)
    if early_exaggeration_iter > 0:
        emb.optimize(n_iter=early_exaggeration_iter, exaggeration=tsne.early_exaggeration,
                     momentum=tsne.initial_momentum, inplace=True, propagate_exception=True)
        cb.offset = early_exaggeration_iter
        cb.report(cb.offset, "early exaggeration done: a first map")
        if preview is not None:
            preview(result(np.asarray(emb), True))
    if n_iter > 0:
        emb.optimize(n_iter=n_iter, exaggeration=tsne.exaggeration, momentum=tsne.final_momentum,
                     inplace=True, propagate_exception=True)
        cb.report(total, "done")
    out = result(np.asarray(emb), False)
    report_progress(progress, 1.0, "embedding done")
    return out
